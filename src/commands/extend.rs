//! `redlock extend`: push the lock's expiry out if the token still holds it.

use std::time::Duration;

use crate::error::Error;
use crate::lock::{LockKey, Redlock, Token};
use crate::outcome::Outcome;

pub async fn run(
    redlock: &Redlock,
    key: &LockKey,
    token: &Token,
    ttl: Duration,
) -> Result<Outcome, Error> {
    let lease = redlock.extend(key, token, ttl).await?;
    Ok(Outcome::Extended {
        lease,
        servers: redlock.len(),
    })
}
