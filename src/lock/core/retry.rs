//! Taking a lock that may be busy: how long to keep trying, the random pause
//! between attempts, and giving up cleanly when the caller cancels. Nothing
//! here prints; the caller reports.

use std::future::Future;
use std::time::Duration;

use super::attempt::{Attempter, Failed, InFlight, Next};
use super::lease::Lease;
use super::redlock::Redlock;
use super::take::{Take, Target, Wait};
use crate::lock::error::LockError;
use crate::lock::key::Token;
use crate::lock::notify::{self, Wakeups};
use crate::lock::queue::Ticket;
use crate::test_hooks;

/// Takes what `take` asks for, retrying after a random delay while its
/// wait allows, unless `cancel` resolves first. Then whatever the attempt
/// in flight took is released, so that a cancelled acquire never leaves a
/// lock behind, and `cancel`'s output is returned. On failure the last
/// attempt's reason is returned; `on_retry` hears of each failed attempt
/// that is retried.
///
/// A caller that waits stands in line with one ticket from its second
/// attempt on (in every slot's line, for a semaphore), placed where the
/// servers' clocks say its first attempt came, and leaves the line however
/// it ends: with the lock (on the servers that did not confirm it), on
/// giving up, or when cancelled. A caller that does not wait (`-n`) never
/// stands in line.
pub async fn acquire_or_cancel<C: Future>(
    redlock: &Redlock,
    take: &Take,
    cancel: C,
    on_retry: impl FnMut(u32, &LockError),
) -> Result<Result<Lease, LockError>, C::Output> {
    let in_flight = InFlight::default();
    let acquiring = acquire(redlock, take, &in_flight, on_retry);
    let outcome = tokio::select! {
        outcome = acquiring => Ok(outcome),
        cancelled = cancel => {
            if let Some((key, token)) = in_flight.attempt() {
                let _ = redlock.release_own(&key, &token, take.shared).await;
            }
            Err(cancelled)
        }
    };
    if let Some(ticket) = &in_flight.ticket() {
        leave_every_line(redlock, take, ticket, &outcome).await;
    }
    outcome
}

/// Takes `ticket` out of every line it stood in. The attempt that took
/// the lock took it out of that key's line where it took the lock
/// (acquire.lua; a reader's ticket stays, shared.rs); every other line
/// is left everywhere, however the wait ended. Every line at once: each
/// leave waits for a majority, and with a majority slow or hung, K of
/// them one after another would cost K times that wait.
async fn leave_every_line<T>(
    redlock: &Redlock,
    take: &Take,
    ticket: &Ticket,
    outcome: &Result<Result<Lease, LockError>, T>,
) {
    let won = match outcome {
        Ok(Ok(lease)) if !take.shared => Some(lease),
        _ => None,
    };
    let keys = take.keys();
    join_all(keys.iter().map(|key| {
        let left_on = match won {
            Some(lease) if lease.key == *key => lease.held_on.as_slice(),
            _ => &[],
        };
        redlock.leave_line(key, ticket, left_on)
    }))
    .await;
}

/// Runs `futures` concurrently on this task, until every one is done.
async fn join_all<F: Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut pending: Vec<_> = futures.map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        pending.retain_mut(|future| future.as_mut().poll(cx).is_pending());
        match pending.is_empty() {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        }
    })
    .await;
}

/// Every attempt has a fresh token: a compare-and-delete of a failed attempt
/// that reaches a stalled server late must not match the next attempt's key.
/// `in_flight` always holds the current attempt's key and token, and the
/// ticket once the caller stands in line.
///
/// After the first failed attempt the waiter listens for releases on every
/// server (notify.rs) and tries again once the subscriptions have settled,
/// then at each release it hears of, and at the random poll in between. The
/// uncontended path never subscribes.
async fn acquire(
    redlock: &Redlock,
    take: &Take,
    in_flight: &InFlight,
    mut on_retry: impl FnMut(u32, &LockError),
) -> Result<Lease, LockError> {
    let give_up_at = take.wait.gives_up_at();
    let mut wakeups: Option<Wakeups> = None;
    let mut attempts = 0;
    let mut plain_text = true;
    loop {
        attempts += 1;
        let ticket = in_flight.ticket();
        if let Some(wakeups) = wakeups.as_mut() {
            wakeups.attempt_starts(ticket.as_ref().map(|t| t.id.as_str()));
        }
        let (error, servers_clock, next) = match attempt(redlock, take, in_flight, plain_text).await
        {
            Ok(lease) => return Ok(Lease { attempts, ..lease }),
            Err(Failed::Final(error)) => return Err(error),
            Err(Failed::Transient(error, clock, next)) => (error, clock, next),
        };
        in_flight.past_a_split_line(next == Next::PastASplitLine);
        if ticket.is_none() && take.wait != Wait::No {
            in_flight.stand_in_line(Ticket::draw(servers_clock, take.shared));
        }
        // The plain text left the lock to the whole one, which decides at
        // once, `-n` too: the same answer as if it had been sent first, one
        // round later, and only where a line or readers stand beside a free
        // lock (acquire_plain.lua).
        if next == Next::WholeText && plain_text {
            plain_text = false;
            attempts -= 1;
            continue;
        }
        // Past a split line the lock is free now: no pause (lock/line.rs).
        let mut pause = if next == Next::PastASplitLine {
            Duration::ZERO
        } else {
            retry_delay(take.ttl)
        };
        if let Some(give_up_at) = give_up_at {
            let left = give_up_at.remaining();
            if left.is_zero() {
                return Err(error);
            }
            pause = pause.min(left);
        }
        on_retry(attempts, &error);
        if wakeups.is_none() && redlock.wakeups {
            let ticket = in_flight.ticket();
            let ticket = ticket.as_ref().map(|t| t.id.as_str());
            let channels = take
                .keys()
                .iter()
                .flat_map(|key| notify::channels(key, ticket))
                .collect();
            wakeups = Some(Wakeups::subscribe(&redlock.servers, channels));
        }
        match wakeups.as_mut() {
            Some(wakeups) => {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = wakeups.woken() => {}
                }
            }
            None => tokio::time::sleep(pause).await,
        }
    }
}

/// One attempt at `take`'s target, by the waiter's ticket if it has one: a
/// round on the lock, or a pass over the semaphore's slots.
async fn attempt(
    redlock: &Redlock,
    take: &Take,
    in_flight: &InFlight,
    plain_text: bool,
) -> Result<Lease, Failed> {
    let ticket = in_flight.ticket();
    let key = match &take.target {
        Target::Slot(semaphore) => {
            return crate::lock::semaphore::pass(
                redlock,
                take,
                semaphore,
                ticket.as_ref(),
                in_flight,
            )
            .await
        }
        Target::Lock(key) => key,
    };
    let token = Token::generate();
    in_flight.set(key.clone(), token.clone());
    let (outcome, servers_clock, next) = redlock
        .attempt_in_line(
            key,
            &token,
            take,
            Attempter {
                ticket: ticket.as_ref(),
                limit: None,
                plain_text,
            },
        )
        .await;
    match outcome {
        Ok(lease) => Ok(lease),
        Err(error) if error.is_transient() => Err(Failed::Transient(error, servers_clock, next)),
        Err(error) => Err(Failed::Final(error)),
    }
}

/// A random pause between attempts, so that competing clients that failed
/// together do not retry in lockstep: uniform in [base/2, 3·base/2), with the
/// base a tenth of the TTL, between 10ms and 200ms. Tests may fix it
/// ([`test_hooks::poll_delay`]), to tell a wake-up from a poll.
pub(in crate::lock) fn retry_delay(ttl: Duration) -> Duration {
    if let Some(forced) = test_hooks::poll_delay() {
        return forced;
    }
    let base = (ttl / 10).clamp(Duration::from_millis(10), Duration::from_millis(200));
    let mut bytes = [0u8; 8];
    // Jitter needs no cryptographic quality; a failure just means no jitter.
    let _ = getrandom::fill(&mut bytes);
    let fraction = (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
    base / 2 + base.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delay_is_random_and_short_compared_with_the_ttl() {
        let ttl = Duration::from_secs(30);
        let delays: Vec<_> = (0..50).map(|_| retry_delay(ttl)).collect();
        assert!(delays
            .iter()
            .all(|d| *d >= Duration::from_millis(100) && *d < Duration::from_millis(300)));
        assert!(
            delays.iter().any(|d| *d != delays[0]),
            "no jitter: {delays:?}"
        );
        assert!(retry_delay(Duration::from_millis(100)) < Duration::from_millis(15));
    }
}
