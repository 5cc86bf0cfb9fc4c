//! `redlock extend`: push the lock's expiry out if the token still holds it.

use std::time::Duration;

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{LockKey, Redlock, Token};
use crate::output::Reporter;

pub async fn run(
    redlock: &Redlock,
    key: &LockKey,
    token: &Token,
    ttl: Duration,
    out: Reporter,
) -> Result<Exit, Error> {
    match redlock.extend(key, token, ttl).await {
        Ok(lease) => {
            if let Err(err) = out.extended(&lease, redlock.len()) {
                out.unwritten(&err);
            }
            Ok(Exit::Success)
        }
        Err(err) => out.failed(key, err),
    }
}
