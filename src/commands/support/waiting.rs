//! Taking a lock while telling the user what the wait is for: each failed
//! attempt updates the progress, and a timer shows it, also while one
//! attempt hangs until the server timeout.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use crate::lock::{acquire_or_cancel, Lease, LockError, Redlock, Take};
use crate::output::{Event, Events, Progress};

/// How often the progress is looked at; it decides itself what is due.
const TICK: Duration = Duration::from_millis(250);

/// [`acquire_or_cancel`] with the progress shown on stderr while it waits;
/// `on_retry` hears of each failed attempt as well. The progress is cleared
/// from the terminal before this returns.
pub async fn acquire_showing_progress<C: Future>(
    redlock: &Redlock,
    take: &Take,
    cancel: C,
    events: Events,
    mut on_retry: impl FnMut(u32, &LockError),
) -> Result<Result<Lease, LockError>, C::Output> {
    let progress = RefCell::new(events.progress(take.name(), take.wait));
    let on_retry = |attempt, err: &LockError| {
        progress.borrow_mut().saw(err);
        on_retry(attempt, err);
    };
    let acquiring = acquire_or_cancel(redlock, take, cancel, on_retry);
    let outcome = showing(&progress, acquiring).await;
    progress.borrow_mut().finish();
    if let Ok(Ok(lease)) = &outcome {
        // Once per run: a lock is taken once.
        let others = events.verbose().then_some(VERBOSE_PATIENCE);
        for concern in redlock.concerns(&lease.held_on, others).await {
            events.say(Event::Concern(&concern));
        }
    }
    outcome
}

/// Under `-v`, how long the answer of a server that did not count is waited
/// for, so that `-v` reliably says what that server is (a read-only replica
/// that refused the lock answers behind its refusal, in microseconds); a
/// hung server costs a verbose run this much, a quiet run nothing.
const VERBOSE_PATIENCE: Duration = Duration::from_millis(100);

/// Runs `work`, ticking `progress` meanwhile.
async fn showing<F: Future>(progress: &RefCell<Progress>, work: F) -> F::Output {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            output = &mut work => return output,
            _ = ticks.tick() => progress.borrow_mut().tick(),
        }
    }
}
