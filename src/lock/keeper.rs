//! Keeping a lock alive while it is used: extend it every TTL/3, publish each
//! new deadline, and resolve only when the lock is known to be lost.

use std::time::Duration;

use tokio::sync::watch;

use super::core::lease::Lease;
use super::core::redlock::Redlock;
use super::error::LockError;
use super::holder::Holder;
use crate::clock::BootInstant;

/// How often the lease is extended: three times per TTL, so that two
/// extensions in a row may fail before the validity runs out.
pub fn interval(ttl: Duration) -> Duration {
    ttl / 3
}

/// What the keeper did, told as it happens.
#[derive(Debug)]
pub enum Keeping<'a> {
    /// An extension succeeded; the lease as it now stands.
    Extended,
    /// An extension failed and will be retried after a short pause.
    Retrying(&'a LockError),
}

/// How long a new holder record waits for the next extension before one is
/// made for it: a command that ends sooner (a short job in a loop) costs
/// the servers no extra round, and one that runs longer is named in the
/// record a second after it started.
const RECORD_WITHIN: Duration = Duration::from_secs(1);

/// Extends `lease` every [`interval`] and publishes each new deadline on
/// `deadlines`; retries a failed extension after a short pause. `on_event`
/// hears of each extension and each failure. A new holder record on
/// `holder` is written with the next extension, made at most
/// [`RECORD_WITHIN`] later. Returns only when a majority says the token is
/// gone, or when the servers refuse the extension in a way no retry can
/// fix.
pub async fn keep(
    redlock: &Redlock,
    lease: &Lease,
    deadlines: watch::Sender<BootInstant>,
    mut holder: watch::Receiver<Option<Holder>>,
    mut on_event: impl FnMut(Keeping<'_>),
) -> LockError {
    let interval = interval(lease.ttl);
    let retry = (lease.ttl / 20).clamp(Duration::from_millis(10), Duration::from_millis(250));
    let mut next = tokio::time::Instant::now() + interval;
    let mut record = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            Ok(()) = holder.changed(), if record.is_none() => {
                record = holder.borrow_and_update().clone();
                next = next.min(tokio::time::Instant::now() + RECORD_WITHIN);
                continue;
            }
        }
        let extended = redlock
            .extend_as(
                &lease.key,
                &lease.token,
                lease.ttl,
                (record.as_ref(), lease.slot.as_ref()),
            )
            .await;
        match extended {
            Ok(extended) => {
                deadlines.send_replace(extended.deadline);
                on_event(Keeping::Extended);
                next = tokio::time::Instant::now() + interval;
                // Written: later extensions only follow the lock's expiry.
                record = None;
            }
            Err(err @ (LockError::NotHeld { .. } | LockError::Refused { .. })) => return err,
            Err(err) => {
                on_event(Keeping::Retrying(&err));
                next = tokio::time::Instant::now() + retry;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keeper's timing, without a server: three extensions per TTL, so
    /// that the lock outlives two failed ones in a row (tests/cli/exec.rs
    /// keeps one end-to-end run of a short TTL kept alive).
    #[test]
    fn an_extension_every_third_of_the_ttl_outlives_two_failures() {
        for ms in [30, 1_000, 3_000, 30_000] {
            let ttl = Duration::from_millis(ms);
            let every = interval(ttl);
            assert!(every * 3 <= ttl && every * 3 + Duration::from_nanos(3) > ttl);
            assert!(every * 2 < ttl, "{ms}: the third attempt comes in time");
        }
    }
}
