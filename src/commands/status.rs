//! `redlock status`: what every server holds, and who holds the lock.

use crate::error::Error;
use crate::lock::{LockKey, Redlock};
use crate::outcome::Outcome;

pub async fn run(redlock: &Redlock, key: &LockKey) -> Result<Outcome, Error> {
    let inspection = redlock.inspect(key).await;
    let verdict = inspection.verdict();
    Ok(Outcome::Status {
        inspection,
        verdict,
    })
}
