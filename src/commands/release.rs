//! `redlock release`: delete the lock if the token still holds it, or with
//! `--force` whoever holds it.

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{LockKey, Redlock, Token};
use crate::output::{text, Reporter};

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

/// `release --force`: delete the lock whoever holds it, and say what was
/// broken. A key of another type is not a lock, and is left alone: that is
/// a usage error, since the name given is not a lock's.
pub async fn force(redlock: &Redlock, key: &LockKey, out: Reporter) -> Result<Exit, Error> {
    let forced = redlock.force_release(key).await;
    if let Err(err) = out.forced(&forced) {
        out.unwritten(&err);
    }
    if let Some(err) = forced.no_quorum() {
        return Err(err.into());
    }
    match text::not_a_lock(&forced) {
        Some(message) => Err(Error::Usage(message)),
        None => Ok(Exit::Success),
    }
}
