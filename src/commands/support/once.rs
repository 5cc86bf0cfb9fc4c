//! `--once-per`, `--once`: what `acquire` and `exec` add to their request.

use crate::lock::{LockError, LockKey, Once, Redlock, Take};

/// `--once-per`, `--once`: the run's id, from the servers' clock now, goes
/// with every attempt and into the holder record, where `redlock done`
/// finds it.
pub async fn once_run(
    redlock: &Redlock,
    (key, once): (&LockKey, Option<&Once>),
    request: &mut Take,
) -> Result<(), LockError> {
    let Some(once) = once else {
        return Ok(());
    };
    let run = redlock.once_run(key, once).await?;
    if let Some(record) = &mut request.record {
        record.once = Some(run.id.clone());
    }
    request.once = Some(run);
    Ok(())
}
