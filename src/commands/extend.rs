//! `redlock extend`: push the lock's expiry out if the token still holds it.

use std::time::Duration;

use super::ctx::Ctx;
use crate::config::ExtendJob;
use crate::error::Error;
use crate::lock::{LockKey, Redlock, Semaphore, Token};
use crate::outcome::Outcome;

pub fn run(ctx: &Ctx<'_>, job: ExtendJob) -> Result<Outcome, Error> {
    let target = (&job.key, job.semaphore.as_ref());
    ctx.block_on(extend(&ctx.redlock, target, &job.token, job.ttl))?
}

async fn extend(
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
