//! `redlock extend`: push the lock's expiry out if the token still holds it.

use std::time::Duration;

use crate::error::Error;
use crate::lock::{LockKey, Redlock, Semaphore, Token};
use crate::outcome::Outcome;

pub async fn run(
    redlock: &Redlock,
    (key, semaphore): (&LockKey, Option<&Semaphore>),
    token: &Token,
    ttl: Duration,
) -> Result<Outcome, Error> {
    let lease = match semaphore {
        // The slot TOKEN holds, whichever it is.
        Some(semaphore) => redlock.extend_slot(semaphore, token, ttl).await?,
        None => redlock.extend(key, token, ttl).await?,
    };
    Ok(Outcome::Extended {
        lease,
        servers: redlock.len(),
    })
}
