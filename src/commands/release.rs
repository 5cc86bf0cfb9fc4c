//! `redlock release`: delete the lock if the token still holds it, or with
//! `--force` whoever holds it.

use super::rendezvous::{Stood, STOPPED_FOR};
use crate::error::Error;
use crate::lock::{Breaking, LockKey, Redlock, Semaphore, Token};
use crate::outcome::Outcome;

pub async fn run(redlock: &Redlock, key: &LockKey, token: &Token) -> Result<Outcome, Error> {
    // A keeper left by `acquire --while` on this host stands down first, so
    // that it does not take the release for a loss.
    stand_down(key, token)?;
    let released = redlock.release(key, token).await?;
    Ok(Outcome::Released {
        key: key.clone(),
        released,
    })
}

/// `release --limit K NAME TOKEN`: the slot TOKEN holds, whichever it is.
pub async fn slot(
    redlock: &Redlock,
    semaphore: &Semaphore,
    token: &Token,
) -> Result<Outcome, Error> {
    for key in semaphore.slot_keys() {
        stand_down(&key, token)?;
    }
    let (key, released) = redlock.release_slot(semaphore, token).await?;
    Ok(Outcome::Released { key, released })
}

/// Asks the keeper of `key` and `token`, if there is one on this host, to
/// stand down. A keeper that is stopped cannot: the lock is left alone (it
/// may still cover what the script left running, which only the keeper and
/// its watchdog see), rather than wait for as long as it stays stopped.
fn stand_down(key: &LockKey, token: &Token) -> Result<(), Error> {
    match super::rendezvous::stop_keeper(key, token) {
        Stood::Down => Ok(()),
        Stood::Stopped { pid } => Err(Error::KeeperStopped {
            pid,
            waited: STOPPED_FOR,
        }),
    }
}

/// `release --force`: delete the lock whoever holds it (with `--if-token`,
/// only while that token does). A key that is not a lock is left alone
/// (the outcome's status says so).
pub async fn force(redlock: &Redlock, key: &LockKey, breaking: Breaking) -> Result<Outcome, Error> {
    let breaking = Breaking {
        who: super::holder::who(),
        ..breaking
    };
    Ok(Outcome::forced(redlock.force_release(key, &breaking).await))
}
