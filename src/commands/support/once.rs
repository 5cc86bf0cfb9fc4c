//! `--once-per`, `--once`: what `acquire` and `exec` add to their request.

use crate::lock::{Once, Redlock, Take};

/// `--once-per`, `--once`: the run's id, from the servers' clock now, goes
/// with every attempt and into the holder record, where `redlock done`
/// finds it.
pub async fn once_run(redlock: &Redlock, once: Option<&Once>, request: &mut Take) {
    let Some(once) = once else {
        return;
    };
    let run = redlock.once_run(once).await;
    if let Some(record) = &mut request.record {
        record.once = Some(run.id.clone());
    }
    request.once = Some(run);
}
