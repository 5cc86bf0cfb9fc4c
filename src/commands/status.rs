//! `redlock status`: what every server holds, and who holds the lock.

use super::ctx::Ctx;
use crate::config::StatusJob;
use crate::error::Error;
use crate::lock::{LockKey, Redlock, Semaphore};
use crate::outcome::{Outcome, Slots};

/// `status NAME`, or with `--limit K` every slot of the semaphore NAME.
pub fn run(ctx: &Ctx<'_>, job: StatusJob) -> Result<Outcome, Error> {
    let redlock = &ctx.redlock;
    ctx.block_on(async {
        match job.semaphore {
            None => status(redlock, &job.key).await,
            Some(semaphore) => slots(redlock, semaphore).await,
        }
    })?
}

async fn status(redlock: &Redlock, key: &LockKey) -> Result<Outcome, Error> {
    // The done mark is read beside the lock, at the same time: no extra
    // round trip.
    let (mut inspection, done) = tokio::join!(redlock.inspect(key), redlock.done_mark(key));
    inspection.done = done;
    let verdict = inspection.verdict();
    Ok(Outcome::Status {
        inspection,
        verdict,
    })
}

/// `status NAME --limit K`: every slot, read one after another.
async fn slots(redlock: &Redlock, semaphore: Semaphore) -> Result<Outcome, Error> {
    let mut slots = Vec::with_capacity(semaphore.limit as usize);
    for key in semaphore.slot_keys() {
        let inspection = redlock.inspect(&key).await;
        let verdict = inspection.verdict();
        slots.push((inspection, verdict));
    }
    Ok(Outcome::Slots(Slots { semaphore, slots }))
}
