//! The restart guard's word on one server, as guard.lua says it: how long
//! the server is kept out of quorums, and why. The why is what the marker
//! saw change in the dataset behind the address (see guard.lua and
//! docs/safety.md); each cause is a loss that may have happened now.

use std::time::Duration;

/// Why a server may have lost locks within the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GuardCause {
    /// No marker: never seen under this prefix, or its data was lost (a
    /// restart without persistence, a flush, the marker deleted).
    Unseen,
    /// A marker that does not parse.
    Unreadable,
    /// The marker of another db index: SWAPDB.
    AnotherDb,
    /// Another `run_id`: a restart, a failover to a replica, or another
    /// server behind the address.
    AnotherProcess,
    /// Another replication ID in the same process: it was a replica in
    /// between (REPLICAOF, then NO ONE).
    Replication,
    /// It evicted keys.
    Eviction,
    /// Its statistics went back (CONFIG RESETSTAT): evictions can no longer
    /// be counted.
    StatsReset,
    /// The marker is dated in the server's future: its clock went back.
    Clock,
}

impl GuardCause {
    const ALL: [(GuardCause, &'static str); 8] = [
        (GuardCause::Unseen, "unseen"),
        (GuardCause::Unreadable, "unreadable"),
        (GuardCause::AnotherDb, "another-db"),
        (GuardCause::AnotherProcess, "another-process"),
        (GuardCause::Replication, "replication"),
        (GuardCause::Eviction, "eviction"),
        (GuardCause::StatsReset, "stats-reset"),
        (GuardCause::Clock, "clock"),
    ];

    /// The cause as guard.lua spells it, or `None` for a word it never
    /// sends.
    pub fn parse(word: &[u8]) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(_, spelled)| spelled.as_bytes() == word)
            .map(|(cause, _)| *cause)
    }

    /// The word guard.lua uses, which JSON shows too.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(cause, _)| *cause == self)
            .map_or("unseen", |(_, spelled)| spelled)
    }
}

/// A server the guard keeps out: for how long yet, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guarded {
    pub left: Duration,
    pub cause: GuardCause,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_reads_back_from_its_word() {
        for (cause, word) in GuardCause::ALL {
            assert_eq!(GuardCause::parse(word.as_bytes()), Some(cause));
            assert_eq!(cause.as_str(), word);
        }
        assert_eq!(GuardCause::parse(b"restart"), None);
    }

    #[test]
    fn guard_lua_names_every_cause_and_no_other() {
        let lua = include_str!("scripts/guard.lua");
        for (_, word) in GuardCause::ALL {
            assert!(lua.contains(&format!("\"{word}\"")), "{word}");
        }
    }
}
