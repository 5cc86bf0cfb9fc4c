//! Why a lock operation did not succeed, with the servers that failed.

use std::time::Duration;

use super::core::servers::ServerError;
use super::guard::GuardCause;
use super::holder::HeldBy;
use super::key::LockKey;
use super::server_url::ServerSpec;

/// The servers that failed in one round and why, in configuration order.
#[derive(Debug, Clone, Default)]
pub struct Failures(pub Vec<(ServerSpec, ServerError)>);

impl Failures {
    /// The error for a round that failed for lack of answers: `Refused` when
    /// enough servers refuse us that no majority is ever possible, else
    /// `NoQuorum`.
    pub(super) fn into_error(self, key: &LockKey, total: usize, quorum: usize) -> LockError {
        let refused = self.0.iter().filter(|(_, err)| err.is_refusal()).count();
        if refused > total - quorum {
            LockError::Refused {
                key: key.clone(),
                refused,
                total,
                failures: self,
            }
        } else {
            // A server that had not answered when the round ended did not
            // fail: it is listed, as such, but not counted.
            let failed = self
                .0
                .iter()
                .filter(|(_, err)| !matches!(err, ServerError::NoAnswerYet))
                .count();
            LockError::NoQuorum {
                key: key.clone(),
                failed,
                total,
                quorum,
                failures: self,
                token: None,
            }
        }
    }

    /// The `Refused` error [`Self::into_error`] gives, if it gives one.
    pub(super) fn refusal(self, key: &LockKey, total: usize, quorum: usize) -> Option<LockError> {
        match self.into_error(key, total, quorum) {
            refused @ LockError::Refused { .. } => Some(refused),
            _ => None,
        }
    }
}

/// A round on a token this process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenOp {
    Extend,
    Release,
    /// The fencing round of `acquire --fence` (lock/fence.rs).
    Fence,
    /// The done mark of a run once (lock/once.rs).
    MarkDone,
}

/// What one server said in a round on a token, or why it said nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// The key held the token, and the round's change was made.
    Holds,
    /// The key is gone: it expired, or the server restarted (empty) or was
    /// flushed.
    Gone,
    /// Another value (or a key of another type) holds it: another holder.
    Taken,
    /// It failed or did not answer.
    Failed(ServerError),
}

/// What every server said in a round on a token (extend, release), in
/// configuration order: why the token lost its majority, server by server.
#[derive(Debug, Clone)]
pub struct TokenRound {
    pub op: TokenOp,
    pub said: Vec<(ServerSpec, Said)>,
}

impl TokenRound {
    /// How many servers held the token.
    pub fn confirmed(&self) -> usize {
        self.said.iter().filter(|(_, s)| *s == Said::Holds).count()
    }
}

/// Why a lock operation did not succeed, as data: the words are the
/// caller's (`output/words.rs`).
#[derive(Debug, Clone)]
pub enum LockError {
    Busy {
        key: LockKey,
        /// Servers that said another value holds the key; the round stops
        /// as soon as the outcome is certain, so at least this many.
        held_elsewhere: usize,
        total: usize,
        /// Servers where the lock is free, but earlier waiters stand in line.
        in_line: usize,
        /// How many waiters stand in that line (the most any server saw).
        waiters: u64,
        /// Who holds it, when that many servers agree on it that it holds a
        /// majority (`None` for leftovers of several holders).
        held_by: Option<Box<HeldBy>>,
        /// When a majority will let it go (`None`: no expiry, or unknown).
        expires_in: Option<Duration>,
        /// What each server that said so holds, in configuration order.
        held_on: Vec<(ServerSpec, HeldBy)>,
        failures: Failures,
        /// `--limit`: every slot of this semaphore was busy, and `key` is
        /// the last slot tried.
        every_slot: Option<Box<super::slot::Semaphore>>,
    },
    NoQuorum {
        key: LockKey,
        /// Servers that failed or did not answer in time.
        failed: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
        /// In a round on a token (extend, release): what each server said.
        token: Option<Box<TokenRound>>,
    },
    Refused {
        key: LockKey,
        refused: usize,
        total: usize,
        failures: Failures,
    },
    TooSlow {
        key: LockKey,
        elapsed: Duration,
        ttl: Duration,
    },
    Restarting {
        key: LockKey,
        /// Servers that started within the guard and so do not count.
        restarting: usize,
        total: usize,
        guard: Duration,
        /// When the first of them counts again.
        again_in: Duration,
        /// Each of them, and why it is kept out.
        causes: Vec<(ServerSpec, GuardCause)>,
        failures: Failures,
    },
    /// `--fence`: the counter a locking server read is at the last fencing
    /// token redlock hands out (2^63 − 2), so no higher one can be given.
    NoFenceLeft {
        key: LockKey,
        /// The servers whose counter is there.
        on: Vec<ServerSpec>,
    },
    /// `--supersede`: a newer superseding waiter replaced this one while
    /// it waited (supersede.rs); `by` is who, when the servers said it in
    /// a form this build reads.
    Superseded {
        key: LockKey,
        by: Option<Box<super::supersede::Superseder>>,
    },
    NotHeld {
        key: LockKey,
        held: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
        /// What each server said.
        round: Box<TokenRound>,
    },
    /// A run once (`--once-per`, `--once`): a server's done mark says this
    /// run's period (or key) was done already; nothing was taken.
    Done {
        key: LockKey,
        mark: Box<super::done_mark::DoneMark>,
        /// How many servers that answered said so.
        on: usize,
    },
}

impl LockError {
    /// The lock the operation was on.
    pub fn key(&self) -> &LockKey {
        match self {
            LockError::Busy { key, .. }
            | LockError::NoQuorum { key, .. }
            | LockError::Refused { key, .. }
            | LockError::TooSlow { key, .. }
            | LockError::Restarting { key, .. }
            | LockError::NoFenceLeft { key, .. }
            | LockError::Superseded { key, .. }
            | LockError::NotHeld { key, .. }
            | LockError::Done { key, .. } => key,
        }
    }

    /// Whether another attempt may succeed: the lock may be freed, the
    /// servers may come back.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LockError::Busy { .. }
                | LockError::NoQuorum { .. }
                | LockError::TooSlow { .. }
                | LockError::Restarting { .. }
        )
    }
}
