//! `redlock release`: delete the lock if the token still holds it.

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{LockKey, Redlock, Token};
use crate::output::Reporter;

pub async fn run(
    redlock: &Redlock,
    key: &LockKey,
    token: &Token,
    out: Reporter,
) -> Result<Exit, Error> {
    match redlock.release(key, token).await {
        Ok(released) => {
            if let Err(err) = out.released(key, &released) {
                out.unwritten(&err);
            }
            Ok(Exit::Success)
        }
        Err(err) => out.failed(key, err),
    }
}
