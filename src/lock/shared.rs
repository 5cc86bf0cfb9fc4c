//! Shared holders (`--shared`, as `flock -s`): many readers at once, or one
//! writer, over N masters (see scripts/shared.lua and "Shared locks" in
//! docs/safety.md).
//!
//! On each server the writer is the lock key as ever, and each reader is
//! its token in a sorted set beside it (`NAME\0readers`), scored by when it
//! lapses in that server's clock. Release and extend need not be told which
//! kind a token is: the scripts look for it in both places, and a token is
//! 128 random bits, so it is never in both. `release NAME TOKEN` and exec's
//! keeper therefore work unchanged for either kind.
//!
//! A reader's ticket in the line ends in [`SHARED_TICKET`]: a writer in
//! line keeps new readers out, and a release whose line starts with readers
//! announces `shared<WRITER` so that every reader before the first writer
//! (`WRITER`, empty when there is none) tries at once.

use std::time::Duration;

/// What a reader's ticket ends in (shared.lua's `SHARED_TICKET`).
pub const SHARED_TICKET: &str = "-shared";

/// The prefix of a release announcement that lets a run of readers in.
const SHARED_TURN: &[u8] = b"shared<";

/// The type a server's answer gives when live readers hold the lock and
/// its key is absent: no Redis type (nor a module type, whose names are 9
/// letters, digits, `-` or `_`) is spelled so.
pub const READERS_KIND: &str = "(readers)";

/// Whether the release announcement `turn` (its message; empty: anyone
/// may try) lets the waiter whose ticket is `ticket` try now.
pub fn wakes(turn: &[u8], ticket: Option<&[u8]>) -> bool {
    if turn.is_empty() {
        return true;
    }
    let Some(ticket) = ticket else {
        return false;
    };
    match turn.strip_prefix(SHARED_TURN) {
        Some(writer) => {
            ticket.ends_with(SHARED_TICKET.as_bytes()) && (writer.is_empty() || ticket < writer)
        }
        None => turn == ticket,
    }
}

/// One reader that holds a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedHolder {
    pub token: Vec<u8>,
    /// When it lapses on the quorum-th server that has it.
    pub expires_in: Duration,
    /// How many of the servers that count have it.
    pub on: usize,
}

/// What one server says of a lock's readers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadersSeen {
    /// How many live readers it holds.
    pub count: u64,
    /// Up to 16 of them: token, ms until it lapses.
    pub holders: Vec<(Vec<u8>, u64)>,
}

/// The readers on at least `quorum` of `seen` (one entry per server that
/// counts), in token order.
pub fn on_majority(seen: &[&ReadersSeen], quorum: usize) -> Vec<SharedHolder> {
    let mut tokens: Vec<&Vec<u8>> = seen
        .iter()
        .flat_map(|s| s.holders.iter().map(|(token, _)| token))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    tokens
        .into_iter()
        .filter_map(|token| {
            let mut left: Vec<u64> = seen
                .iter()
                .filter_map(|s| s.holders.iter().find(|(t, _)| t == token).map(|h| h.1))
                .collect();
            left.sort_unstable_by(|a, b| b.cmp(a));
            let nth = *left.get(quorum.checked_sub(1)?)?;
            Some(SharedHolder {
                token: token.clone(),
                expires_in: Duration::from_millis(nth),
                on: left.len(),
            })
        })
        .collect()
}

/// How many readers a majority holds: the quorum-th largest count.
pub fn count_on_majority(seen: &[&ReadersSeen], quorum: usize) -> u64 {
    let mut counts: Vec<u64> = seen.iter().map(|s| s.count).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    quorum
        .checked_sub(1)
        .and_then(|i| counts.get(i).copied())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_turn_wakes_the_readers_before_the_first_writer() {
        let reader = b"000000000000005-aa-shared".as_slice();
        let late_reader = b"000000000000009-bb-shared".as_slice();
        let writer = b"000000000000007-cc".as_slice();
        let turn = [SHARED_TURN, writer].concat();
        assert!(wakes(&turn, Some(reader)));
        assert!(!wakes(&turn, Some(late_reader)), "behind the writer");
        assert!(!wakes(&turn, Some(writer)), "a writer is no reader");
        assert!(wakes(SHARED_TURN, Some(late_reader)), "no writer in line");
        assert!(!wakes(&turn, None));
        assert!(wakes(b"", None));
        assert!(wakes(writer, Some(writer)));
        assert!(!wakes(writer, Some(reader)));
    }

    #[test]
    fn only_readers_on_a_majority_count() {
        let a = ReadersSeen {
            count: 2,
            holders: vec![(b"r1".to_vec(), 900), (b"r2".to_vec(), 800)],
        };
        let b = ReadersSeen {
            count: 1,
            holders: vec![(b"r1".to_vec(), 700)],
        };
        let c = ReadersSeen::default();
        let held = on_majority(&[&a, &b, &c], 2);
        assert_eq!(
            held,
            vec![SharedHolder {
                token: b"r1".to_vec(),
                expires_in: Duration::from_millis(700),
                on: 2
            }]
        );
        assert_eq!(count_on_majority(&[&a, &b, &c], 2), 1);
        assert_eq!(count_on_majority(&[&c], 2), 0);
    }
}
