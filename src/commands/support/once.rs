//! `--once-per`, `--once`: what `acquire` and `exec` add to their request.

use std::time::Duration;

use crate::clock::BootInstant;
use crate::lock::{LockError, LockKey, Once, OnceRun, Redlock, Take, Wait};

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
    let started = BootInstant::now();
    let run = run_within(redlock, (key, once), request.wait).await?;
    // The lock's wait is what is left of -w: one wait for both.
    if let Wait::For(wait) = request.wait {
        request.wait = Wait::For(wait.saturating_sub(started.elapsed()));
    }
    if let Some(record) = &mut request.record {
        record.once = Some(run.id.clone());
    }
    request.once = Some(run);
    Ok(())
}

/// The first pause before the servers' clocks are asked again, doubled
/// after each try up to [`CLOCKS_PAUSE_MOST`].
const CLOCKS_PAUSE_FIRST: Duration = Duration::from_millis(100);
const CLOCKS_PAUSE_MOST: Duration = Duration::from_secs(1);

/// The run of `once` on `key`. Too few servers to read a period from is
/// waited out as the lock would be (`wait`: `-w DUR`, or forever without
/// `-n`), asking them again; once the wait is over, the last failure (69
/// with what each server said). `-n` asks once.
async fn run_within(
    redlock: &Redlock,
    (key, once): (&LockKey, &Once),
    wait: Wait,
) -> Result<OnceRun, LockError> {
    let until = match wait {
        Wait::No => Some(BootInstant::now()),
        Wait::For(wait) => Some(BootInstant::now() + wait),
        Wait::Forever => None,
    };
    let mut pause = CLOCKS_PAUSE_FIRST;
    loop {
        let failed = match redlock.once_run(key, once).await {
            Err(err @ LockError::NoQuorum { .. }) => err,
            done => return done,
        };
        let left = until.map(|until| until.saturating_since(BootInstant::now()));
        if left == Some(Duration::ZERO) {
            return Err(failed);
        }
        tokio::time::sleep(left.map_or(pause, |left| left.min(pause))).await;
        pause = pause.saturating_mul(2).min(CLOCKS_PAUSE_MOST);
    }
}
