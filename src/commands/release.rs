//! `redlock release`: delete the lock if the token still holds it, or with
//! `--force` whoever holds it.

use super::ctx::Ctx;
use crate::config::{ForceJob, ReleaseJob};
use crate::error::Error;
use crate::keeper::rendezvous::{Stood, STOPPED_FOR};
use crate::lock::{Breaking, LockKey, Redlock, Semaphore, Token};
use crate::outcome::Outcome;

/// `release NAME TOKEN`, or with `--limit K` the slot TOKEN holds.
pub fn run(ctx: &Ctx<'_>, job: ReleaseJob) -> Result<Outcome, Error> {
    let redlock = &ctx.redlock;
    ctx.block_on(async {
        match &job.semaphore {
            None => release(redlock, &job.key, &job.token).await,
            Some(semaphore) => slot(redlock, semaphore, &job.token).await,
        }
    })?
}

/// `release --force`: delete the lock whoever holds it (with `--if-token`,
/// only while that token does). A key that is not a lock is left alone
/// (the outcome's status says so).
pub fn force(ctx: &Ctx<'_>, job: ForceJob) -> Result<Outcome, Error> {
    let breaking = Breaking {
        who: super::support::holder::who(),
        ..job.breaking
    };
    let redlock = &ctx.redlock;
    let forced = ctx.block_on(redlock.force_release(&job.key, &breaking))?;
    Ok(Outcome::forced(forced))
}

async fn release(redlock: &Redlock, key: &LockKey, token: &Token) -> Result<Outcome, Error> {
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
async fn slot(redlock: &Redlock, semaphore: &Semaphore, token: &Token) -> Result<Outcome, Error> {
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
    match crate::keeper::rendezvous::stop_keeper(key, token) {
        Stood::Down => Ok(()),
        Stood::Stopped { pid } => Err(Error::KeeperStopped {
            pid,
            waited: STOPPED_FOR,
        }),
    }
}

/// `release --force --done NAME`: the done mark of a run once goes, on
/// every server; the lock stays as it is.
pub fn clear_done(ctx: &Ctx<'_>, key: LockKey) -> Result<Outcome, Error> {
    let cleared_on = ctx.block_on(ctx.redlock.clear_done(&key))??;
    Ok(Outcome::ClearedDone {
        key,
        cleared_on,
        servers: ctx.redlock.len(),
    })
}
