//! The line of waiters for a lock, so that waiters are served in the order
//! they arrived (see queue.lua and "Arrival order" in docs/safety.md).
//!
//! A waiter whose first attempt failed draws one ticket: the servers' clock
//! as that attempt saw it (the median of the clocks they answered with) and a
//! random suffix. Its own clock plays no part, so a host whose clock is off
//! cannot buy an earlier place. Every server orders the tickets it holds the
//! same way, so the earliest waiter still in line is first in line on every
//! server it reached; the acquire script lets only the first in line (or,
//! with nobody in line, anyone) take the lock. The line only ever keeps a
//! caller out, so it cannot weaken mutual exclusion; a waiter that stops
//! coming back lapses from the line after [`LINGER`], and the line never
//! keeps a free lock from callers for longer than that in a row.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::test_hooks;

/// How long a ticket stays in line after its waiter's last attempt, and the
/// longest the line may keep a free lock from callers in a row. A live
/// waiter comes back every 0.3s at most (the retry delay) plus an attempt;
/// a dead one delays the next by at most this, whatever the options.
pub const LINGER: Duration = Duration::from_secs(1);

/// [`LINGER`], unless a test set it ([`test_hooks::linger`]).
pub fn linger() -> Duration {
    test_hooks::linger().unwrap_or(LINGER)
}

/// One waiter's place in line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// Milliseconds since the Unix epoch when the waiter arrived, by the
    /// servers' clocks.
    pub score: u64,
    /// The score, zero-padded, and a random suffix: unique, and ordered
    /// like the score where scores tie.
    pub id: String,
    /// The waiter's last attempt found the servers' lines split: its next
    /// one takes a free lock wherever it is free (lock/line.rs).
    pub past_a_split_line: bool,
}

impl Ticket {
    /// A ticket for a waiter that arrived when the servers' clock read
    /// `servers_clock` (ms); by this host's clock when no server told it
    /// (an ACL without TIME). A reader's (`shared`) ends in
    /// [`super::shared::SHARED_TICKET`], which the line reads it by.
    pub fn draw(servers_clock: Option<u64>, shared: bool) -> Ticket {
        let score = servers_clock.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                })
        });
        let mut bytes = [0u8; 8];
        // Uniqueness only needs to hold among waiters of the same
        // millisecond; a failure of the OS generator leaves zeros.
        let _ = getrandom::fill(&mut bytes);
        let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ticket {
            score,
            past_a_split_line: false,
            id: format!(
                "{score:015}-{suffix}{}",
                if shared {
                    super::shared::SHARED_TICKET
                } else {
                    ""
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_order_by_the_servers_clock_then_text() {
        let a = Ticket::draw(Some(1_700_000_000_000), true);
        let b = Ticket::draw(Some(1_700_000_000_001), false);
        assert!(a.score < b.score);
        assert!(a.id < b.id, "{} {}", a.id, b.id);
        assert!(a.id.ends_with("-shared") && !b.id.ends_with("-shared"));
        assert_ne!(
            Ticket::draw(Some(5), false).id,
            Ticket::draw(Some(5), false).id
        );
        let local = Ticket::draw(None, false);
        assert!(local.score > 1_700_000_000_000, "{}", local.score);
    }
}
