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

use super::holder::Recorded;

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
    /// Who it is, from its holder record (the first server's that has a
    /// well-formed one); `None` for a reader that recorded nothing.
    pub recorded: Option<Box<Recorded>>,
}

/// One reader as one server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenReader {
    pub token: Vec<u8>,
    /// Ms until it lapses.
    pub left_ms: u64,
    /// Its holder record (reader_records.lua), as stored.
    pub record: Option<Vec<u8>>,
}

/// What one server says of a lock's readers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadersSeen {
    /// How many live readers it holds.
    pub count: u64,
    /// Up to 16 of them.
    pub holders: Vec<SeenReader>,
    /// The server's clock in ms when it answered, for the records' ages.
    pub clock: Option<u64>,
}

impl ReadersSeen {
    fn get(&self, token: &[u8]) -> Option<&SeenReader> {
        self.holders.iter().find(|r| r.token == token)
    }
}

/// The readers on at least `quorum` of `seen` (one entry per server that
/// counts), in token order.
pub fn on_majority(seen: &[&ReadersSeen], quorum: usize) -> Vec<SharedHolder> {
    let mut tokens: Vec<&Vec<u8>> = seen
        .iter()
        .flat_map(|s| s.holders.iter().map(|reader| &reader.token))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    tokens
        .into_iter()
        .filter_map(|token| {
            let mut left: Vec<u64> = seen
                .iter()
                .filter_map(|s| s.get(token).map(|reader| reader.left_ms))
                .collect();
            left.sort_unstable_by(|a, b| b.cmp(a));
            let nth = *left.get(quorum.checked_sub(1)?)?;
            let recorded = seen.iter().find_map(|s| {
                let raw = s.get(token)?.record.as_deref()?;
                Recorded::parse(raw, s.clock, token)
            });
            Some(SharedHolder {
                token: token.clone(),
                expires_in: Duration::from_millis(nth),
                on: left.len(),
                recorded: recorded.map(Box::new),
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
        let reader = |token: &[u8], left_ms| SeenReader {
            token: token.to_vec(),
            left_ms,
            record: None,
        };
        let a = ReadersSeen {
            count: 2,
            holders: vec![reader(b"r1", 900), reader(b"r2", 800)],
            clock: None,
        };
        let b = ReadersSeen {
            count: 1,
            holders: vec![reader(b"r1", 700)],
            clock: None,
        };
        let c = ReadersSeen::default();
        let held = on_majority(&[&a, &b, &c], 2);
        assert_eq!(
            held,
            vec![SharedHolder {
                token: b"r1".to_vec(),
                expires_in: Duration::from_millis(700),
                on: 2,
                recorded: None,
            }]
        );
        assert_eq!(count_on_majority(&[&a, &b, &c], 2), 1);
        assert_eq!(count_on_majority(&[&c], 2), 0);
    }
}
