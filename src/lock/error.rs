//! Why a lock operation did not succeed, with the servers that failed.

use std::fmt;
use std::time::Duration;

use super::holder::{held_sentence, HeldBy};
use super::key::LockKey;
use super::server_url::ServerSpec;
use super::servers::ServerError;

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
            LockError::NoQuorum {
                key: key.clone(),
                failed: self.0.len(),
                total,
                quorum,
                failures: self,
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

impl fmt::Display for Failures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (server, err)) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { " (" } else { "; " })?;
            write!(f, "{server}: {err}")?;
        }
        if !self.0.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Why a lock operation did not succeed. The messages describe the
/// situation; advice in terms of a command line is the caller's to add.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{}{failures}", busy(key, held_by.as_deref(), expires_in.as_ref(), (*held_elsewhere, *in_line, *waiters), *total))]
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
    },
    #[error("no quorum for lock {key}: {}{failures}", no_quorum(*failed, *total, *quorum))]
    NoQuorum {
        key: LockKey,
        /// Servers that failed or did not answer in time.
        failed: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
    #[error(
        "lock {key}: {refused} of {} cannot be used as configured, so no majority \
         is possible{failures}",
        servers(*total)
    )]
    Refused {
        key: LockKey,
        refused: usize,
        total: usize,
        failures: Failures,
    },
    #[error(
        "lock {key}: a majority agreed only after {}, which leaves none of the {} TTL valid",
        humantime::format_duration(*elapsed),
        humantime::format_duration(*ttl)
    )]
    TooSlow {
        key: LockKey,
        elapsed: Duration,
        ttl: Duration,
    },
    #[error(
        "lock {key}: {restarting} of {} may have lost locks less than {} ago (a restart, \
         a flush or an eviction; restart guard, counted again in {}){failures}",
        servers(*total),
        humantime::format_duration(*guard),
        humantime::format_duration(*again_in)
    )]
    Restarting {
        key: LockKey,
        /// Servers that started within the guard and so do not count.
        restarting: usize,
        total: usize,
        guard: Duration,
        /// When the first of them counts again.
        again_in: Duration,
        failures: Failures,
    },
    #[error(
        "lock {key} is not held by this token: {}{failures}",
        not_held(*held, *total, *quorum)
    )]
    NotHeld {
        key: LockKey,
        held: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
}

/// "NAME is held by WHO; expires in D".
fn busy(
    key: &LockKey,
    held_by: Option<&HeldBy>,
    expires_in: Option<&Duration>,
    (held_elsewhere, in_line, waiters): (usize, usize, u64),
    total: usize,
) -> String {
    match held_by {
        Some(held_by) => held_sentence(key, held_by, expires_in.copied()),
        None if in_line > held_elsewhere => format!(
            "{key} is free, but {} in line for it (on at least {in_line} of {})",
            match waiters {
                1 => "1 waiter is".to_string(),
                n => format!("{n} waiters are"),
            },
            servers(total)
        ),
        None => format!(
            "{key} is busy: at least {held_elsewhere} of {} hold it for others, no one holder on a \
             majority (leftovers, which keep it busy until they expire)",
            servers(total)
        ),
    }
}

/// Why too few servers answered, in words that fit one server as well as
/// five.
fn no_quorum(failed: usize, total: usize, quorum: usize) -> String {
    if total == 1 {
        return "its only server failed".to_owned();
    }
    format!(
        "{failed} of {} failed, and a majority is {quorum}",
        servers(total)
    )
}

/// How many servers still hold a token, against the quorum.
fn not_held(held: usize, total: usize, quorum: usize) -> String {
    format!("{held} of {} confirmed it, {quorum} needed", servers(total))
}

/// "1 server", "3 servers".
pub fn servers(count: usize) -> String {
    if count == 1 {
        "1 server".to_owned()
    } else {
        format!("{count} servers")
    }
}

impl LockError {
    /// Whether another attempt may succeed: the lock may be freed, the
    /// servers may come back.
    pub(super) fn is_transient(&self) -> bool {
        matches!(
            self,
            LockError::Busy { .. }
                | LockError::NoQuorum { .. }
                | LockError::TooSlow { .. }
                | LockError::Restarting { .. }
        )
    }
}
