//! Why a lock operation did not succeed, with the servers that failed.

use std::fmt;
use std::time::Duration;

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
    #[error("lock {key} is busy: {held_elsewhere} of {total} servers said another owner holds it{failures}")]
    Busy {
        key: LockKey,
        held_elsewhere: usize,
        total: usize,
        failures: Failures,
    },
    #[error("no quorum for lock {key}: {failed} of {total} servers failed, and a majority needs {quorum}{failures}")]
    NoQuorum {
        key: LockKey,
        /// Servers that failed or did not answer in time.
        failed: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
    #[error(
        "lock {key}: {refused} of {total} servers cannot be used as configured, so no majority \
         is possible{failures}"
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
        "lock {key}: {restarting} of {total} servers restarted less than {} ago (restart guard; \
         counted again in {}){failures}",
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
        "lock {key} is not held by this token: {held} of {total} servers confirmed it, {quorum} needed{failures}"
    )]
    NotHeld {
        key: LockKey,
        held: usize,
        total: usize,
        quorum: usize,
        failures: Failures,
    },
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
