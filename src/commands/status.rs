//! `redlock status`: what every server holds, and who holds the lock.

use crate::error::Error;
use crate::lock::{LockKey, Redlock, Semaphore};
use crate::outcome::{Outcome, Slots};

pub async fn run(redlock: &Redlock, key: &LockKey) -> Result<Outcome, Error> {
    let inspection = redlock.inspect(key).await;
    let verdict = inspection.verdict();
    Ok(Outcome::Status {
        inspection,
        verdict,
    })
}

/// `status NAME --limit K`: every slot, read one after another.
pub async fn slots(redlock: &Redlock, semaphore: Semaphore) -> Result<Outcome, Error> {
    let mut slots = Vec::with_capacity(semaphore.limit as usize);
    for key in semaphore.slot_keys() {
        let inspection = redlock.inspect(&key).await;
        let verdict = inspection.verdict();
        slots.push((inspection, verdict));
    }
    Ok(Outcome::Slots(Slots { semaphore, slots }))
}
