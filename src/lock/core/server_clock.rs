//! Each server's clock as this process sees it, so that a request can say
//! until when, on the server's own clock, its caller still counts on its
//! reply. acquire.lua does nothing for a request that arrives later: held
//! up in a partition, or behind a paused server, it would take the lock
//! for a caller that gave up on it long ago. The compare-and-delete the
//! caller wrote behind it cannot be relied on to follow it: when the
//! caller has exited meanwhile, the first reply that gets through meets a
//! closed socket, whose reset drops everything still unsent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::clock::BootInstant;

/// What one reply said of its server's clock: the offset from this host's
/// boot clock, and by how much it may be off (half the round trip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Estimate {
    offset_ms: i64,
    error_ms: i64,
}

/// One server's clock, learned from the latest reply that said it (a
/// server whose clock is stepped is followed from its next reply on).
#[derive(Debug, Default)]
pub struct ServerClock {
    estimate: Mutex<Option<Estimate>>,
    /// Whether its `TIME` was asked (once a process: a lock taken says no
    /// clock), and whether a bounded request went before.
    asked: AtomicBool,
    sent_one: AtomicBool,
}

impl ServerClock {
    /// Notes a reply that said `server_ms`, to a request sent at `sent`
    /// that arrived at `arrived`.
    pub fn learn(&self, sent: BootInstant, arrived: BootInstant, server_ms: u64) {
        let (sent, arrived) = (boot_ms(sent), boot_ms(arrived).max(boot_ms(sent)));
        let estimate = Estimate {
            offset_ms: i64::try_from(server_ms)
                .unwrap_or(i64::MAX)
                .saturating_sub(sent + (arrived - sent) / 2),
            // Half the round trip, and a whole ms of each clock's rounding.
            error_ms: (arrived - sent) / 2 + 2,
        };
        *self.estimate.lock().unwrap_or_else(|p| p.into_inner()) = Some(estimate);
    }

    /// The server's clock, in ms, `wait` from now, rounded up by how much
    /// the estimate may be off: the last moment the caller of a request
    /// sent now still waits for its reply.
    ///
    /// Before any reply said the clock, this host's wall clock stands in
    /// for it, [`FIRST_GUESS_SLACK`] later: hosts kept in time by NTP are
    /// bounded from their first request on. One whose clock is further
    /// behind the server's is told "late" and learns the clock from that
    /// reply, at the cost of one round trip to that server (servers.rs).
    /// `None` only for a wall clock before 1970.
    pub fn not_after(&self, wait: Duration) -> Option<u64> {
        let wait = i64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i64::MAX);
        let estimate = *self.estimate.lock().unwrap_or_else(|p| p.into_inner());
        let at = match estimate {
            Some(estimate) => boot_ms(BootInstant::now())
                .saturating_add(estimate.offset_ms)
                .saturating_add(estimate.error_ms),
            None => wall_ms()?.saturating_add(FIRST_GUESS_SLACK_MS),
        };
        u64::try_from(at.saturating_add(wait)).ok()
    }

    /// Whether to ask the server's `TIME` along with a bounded request
    /// about to go: true once, while no reply has said the clock, and not
    /// for a process's first request (`acquire -n` that takes the lock
    /// sends no second one, and should not pay for the question).
    pub fn wants_asking(&self) -> bool {
        let second = self.sent_one.swap(true, Ordering::Relaxed);
        second
            && self
                .estimate
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_none()
            && !self.asked.swap(true, Ordering::Relaxed)
    }
}

/// How much later than this host's wall clock a server's clock may be
/// before a request sent before any reply from it is told "late".
pub const FIRST_GUESS_SLACK: Duration = Duration::from_secs(1);
const FIRST_GUESS_SLACK_MS: i64 = FIRST_GUESS_SLACK.as_millis() as i64;

/// This host's wall clock in ms since 1970, or `None` before it.
fn wall_ms() -> Option<i64> {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// `at` in ms since boot: not stepped with the wall clock, and counting
/// a suspend, as the servers' clocks do.
fn boot_ms(at: BootInstant) -> i64 {
    i64::try_from(at.as_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_bounded_on_the_servers_clock_from_the_first_reply_on() {
        let clock = ServerClock::default();
        // Before: this host's wall clock, a second late.
        let guess = clock.not_after(Duration::from_millis(250)).unwrap() as i64;
        let wall = wall_ms().unwrap();
        assert!(
            (wall + 1250..=wall + 1300).contains(&guess),
            "{guess} vs {wall}"
        );
        let sent = BootInstant::now();
        let arrived = sent + Duration::from_millis(10);
        // The server is an hour ahead of this host.
        let server_ms = (boot_ms(sent) + 5 + 3_600_000) as u64;
        clock.learn(sent, arrived, server_ms);
        let bound = clock.not_after(Duration::from_millis(250)).unwrap() as i64;
        let now_there = boot_ms(BootInstant::now()) + 3_600_000;
        // 250ms of wait, the 5ms the estimate may be off and 2 of rounding,
        // from now on the server's clock.
        assert!(
            (now_there + 250 + 7..=now_there + 250 + 7 + 2).contains(&bound),
            "{bound} vs {now_there}"
        );
    }

    #[test]
    fn a_stepped_server_clock_is_followed_from_its_next_reply() {
        let clock = ServerClock::default();
        let now = BootInstant::now();
        clock.learn(now, now, boot_ms(now) as u64 + 1_000);
        clock.learn(now, now, boot_ms(now) as u64 + 9_000);
        let bound = clock.not_after(Duration::ZERO).unwrap() as i64;
        assert!(bound >= boot_ms(now) + 9_000, "{bound}");
    }

    #[test]
    fn the_clock_is_asked_once_and_only_while_unknown() {
        let clock = ServerClock::default();
        assert!(!clock.wants_asking(), "not with the first request");
        assert!(clock.wants_asking());
        assert!(!clock.wants_asking());
        let known = ServerClock::default();
        let now = BootInstant::now();
        known.learn(now, now, 5);
        assert!(!known.wants_asking());
        assert!(!known.wants_asking());
    }
}
