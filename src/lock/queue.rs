//! The line of waiters for a lock, so that waiters are served in the order
//! they arrived (see queue.lua and the README's "Arrival order").
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

use super::holder::record_key;
use super::key::LockKey;

/// Appended to a lock's key to name its line (ordered by ticket), the
/// tickets' lapse times, and since when the line has kept the free lock
/// from callers; like the holder record's, no lock name can end so.
const LINE_SUFFIX: &[u8] = b"\0line";
const LAPSE_SUFFIX: &[u8] = b"\0lapse";
const FREE_SUFFIX: &[u8] = b"\0free";

/// Appended to the prefix to name the restart guard's marker (guard.lua):
/// no lock name is empty or holds NUL, so no lock is called so.
const GUARD_SUFFIX: &[u8] = b"\0guard";

/// How long a ticket stays in line after its waiter's last attempt, and the
/// longest the line may keep a free lock from callers in a row. A live
/// waiter comes back every 0.3s at most (the retry delay) plus an attempt;
/// a dead one delays the next by at most this, whatever the options.
pub const LINGER: Duration = Duration::from_secs(1);

/// The restart guard's marker for the locks under `prefix`.
pub fn guard_marker(prefix: &[u8]) -> Vec<u8> {
    [prefix, GUARD_SUFFIX].concat()
}

/// The keys every lock script gets, in this order: the lock, its holder
/// record, its line, the tickets' lapse times, since when the line has kept
/// the free lock, and the restart guard's marker: `marker`, or, for a name
/// with a Redis Cluster hash tag, one in the tag's slot (see
/// [`hash_tagged_marker`]).
pub fn lock_keys(key: &LockKey, marker: &[u8]) -> Vec<Vec<u8>> {
    vec![
        key.bytes().to_vec(),
        record_key(key),
        [key.bytes(), LINE_SUFFIX].concat(),
        [key.bytes(), LAPSE_SUFFIX].concat(),
        [key.bytes(), FREE_SUFFIX].concat(),
        hash_tagged_marker(key.bytes()).unwrap_or_else(|| marker.to_vec()),
    ]
}

/// For a key with a hash tag (the first `{…}` with something inside, as
/// Redis Cluster reads it), a marker that hashes to the same slot: the key
/// up to the tag's `}`, then the marker's suffix. A cluster node runs a
/// script only on keys of one slot; every name with that tag (and the same
/// text before it) shares the marker. `None` for a key without a tag.
fn hash_tagged_marker(key: &[u8]) -> Option<Vec<u8>> {
    let open = key.iter().position(|&b| b == b'{')?;
    let close = open + 1 + key[open + 1..].iter().position(|&b| b == b'}')?;
    (close > open + 1).then(|| [&key[..=close], GUARD_SUFFIX].concat())
}

/// Whether `key` is one redlock keeps for a lock's line or its restart
/// guard, not a lock.
pub fn is_line_key(key: &[u8]) -> bool {
    [LINE_SUFFIX, LAPSE_SUFFIX, FREE_SUFFIX, GUARD_SUFFIX]
        .iter()
        .any(|suffix| key.ends_with(suffix))
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
}

impl Ticket {
    /// A ticket for a waiter that arrived when the servers' clock read
    /// `servers_clock` (ms); by this host's clock when no server told it
    /// (an ACL without TIME).
    pub fn draw(servers_clock: Option<u64>) -> Ticket {
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
            id: format!("{score:015}-{suffix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_order_by_the_servers_clock_then_text() {
        let a = Ticket::draw(Some(1_700_000_000_000));
        let b = Ticket::draw(Some(1_700_000_000_001));
        assert!(a.score < b.score);
        assert!(a.id < b.id, "{} {}", a.id, b.id);
        assert_ne!(Ticket::draw(Some(5)).id, Ticket::draw(Some(5)).id);
        let local = Ticket::draw(None);
        assert!(local.score > 1_700_000_000_000, "{}", local.score);
    }

    #[test]
    fn line_keys_are_not_lock_names() {
        let keys = lock_keys(&LockKey::new(b"deploy".to_vec()), &guard_marker(b"app:"));
        assert_eq!(keys[2], b"deploy\0line");
        assert_eq!(keys[3], b"deploy\0lapse");
        assert_eq!(keys[4], b"deploy\0free");
        assert_eq!(keys[5], b"app:\0guard");
        assert!(keys[2..].iter().all(|key| is_line_key(key)));
        assert!(!is_line_key(b"deploy"));
    }

    #[test]
    fn a_hash_tagged_name_keeps_its_marker_in_its_slot() {
        let marker = |name: &[u8]| lock_keys(&LockKey::new(name.to_vec()), b"\0guard")[5].clone();
        assert_eq!(marker(b"app:{deploy}:web"), b"app:{deploy}\0guard");
        assert_eq!(marker(b"{a}{b}"), b"{a}\0guard");
        assert_eq!(
            marker(b"x{}y{z}"),
            b"\0guard",
            "an empty first tag is no tag"
        );
        assert_eq!(marker(b"x{y"), b"\0guard");
        assert_eq!(marker(b"plain"), b"\0guard");
    }
}
