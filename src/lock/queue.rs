//! The line of waiters for a lock, so that waiters are served in the order
//! they started waiting (see queue.lua and the README's "Arrival order").
//!
//! Each waiter draws one ticket when it starts waiting: the time by its own
//! clock and a random suffix. Every server orders the tickets it holds the
//! same way, so the earliest waiter still in line is first in line on every
//! server it reached; the acquire script lets only the first in line (or,
//! with nobody in line, anyone) take the lock. The line only ever keeps a
//! caller out, so it cannot weaken mutual exclusion; a waiter that stops
//! coming back lapses from the line after [`linger`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::key::LockKey;

/// Appended to a lock's key to name its line (ordered by ticket) and the
/// tickets' lapse times; like the holder record's, no lock name can end so.
const LINE_SUFFIX: &[u8] = b"\0line";
const LAPSE_SUFFIX: &[u8] = b"\0lapse";

/// The keys of `key`'s line: the tickets in order, and when each lapses.
pub fn line_keys(key: &LockKey) -> [Vec<u8>; 2] {
    [
        [key.bytes(), LINE_SUFFIX].concat(),
        [key.bytes(), LAPSE_SUFFIX].concat(),
    ]
}

/// Whether `key` is one of a lock's line keys.
pub fn is_line_key(key: &[u8]) -> bool {
    key.ends_with(LINE_SUFFIX) || key.ends_with(LAPSE_SUFFIX)
}

/// One waiter's place in line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// Milliseconds since the Unix epoch when the waiter started waiting.
    pub score: u64,
    /// The score, zero-padded, and a random suffix: unique, and ordered
    /// like the score where scores tie.
    pub id: String,
}

impl Ticket {
    /// A ticket for a waiter that starts waiting now.
    pub fn draw() -> Ticket {
        let score = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        let mut bytes = [0u8; 8];
        // Uniqueness only needs to hold among waiters of the same
        // millisecond; a failure of the OS generator leaves zeros.
        let _ = getrandom::fill(&mut bytes);
        let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ticket {
            score,
            id: format!("{score:015}-{suffix}"),
        }
    }
}

/// How long a ticket stays in line after its waiter's last attempt: longer
/// than the longest pause between two attempts (the retry delay, at most
/// 300ms, plus an attempt and its clean-up, two server timeouts), three
/// times over, plus a second. A waiter that dies delays the next by at most
/// this (3.4s with the default server timeout of 250ms).
pub fn linger(server_timeout: Duration) -> Duration {
    Duration::from_secs(1) + (Duration::from_millis(300) + server_timeout * 2) * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_order_by_time_then_text() {
        let a = Ticket::draw();
        std::thread::sleep(Duration::from_millis(2));
        let b = Ticket::draw();
        assert!(a.score < b.score);
        assert!(a.id < b.id, "{} {}", a.id, b.id);
        assert_ne!(Ticket::draw().id, Ticket::draw().id);
    }

    #[test]
    fn a_dead_waiter_lapses_within_a_few_seconds_by_default() {
        assert_eq!(
            linger(Duration::from_millis(250)),
            Duration::from_millis(3400)
        );
    }

    #[test]
    fn line_keys_are_not_lock_names() {
        let [line, lapse] = line_keys(&LockKey::new(b"deploy".to_vec()));
        assert_eq!(line, b"deploy\0line");
        assert_eq!(lapse, b"deploy\0lapse");
    }
}
