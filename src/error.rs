//! The one error type of a run: data only. Its exit status is decided in
//! `outcome.rs`, beside the outcome's, and `output` renders it.

use std::time::Duration;

use crate::lock::{LockError, LockKey, Tried};

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// Input that can never work: exit 64.
    Usage(String),
    /// A server or TLS setting that cannot be used: exit 78.
    Config(String),
    /// The lock protocol's answer (busy, no quorum, not held, refused),
    /// after this many attempts.
    Lock { error: Box<LockError>, tried: Tried },
    /// `acquire` took the lock, but its validity ran out before the token
    /// was written (a stalled stdout); the lock was released.
    Expired { key: LockKey, validity: Duration },
    /// `release` found the keeper of `acquire --while` stopped for `waited`
    /// without answering, and so left the lock alone: exit 70.
    KeeperStopped { pid: i32, waited: Duration },
    /// Anything else: a bug or the environment (stdout closed, fork failed).
    Internal(anyhow::Error),
}

impl Error {
    /// An internal error with `context` in front of its cause.
    pub fn internal(context: &'static str, cause: impl Into<anyhow::Error>) -> Error {
        Error::Internal(cause.into().context(context))
    }

    /// The message of a usage or configuration error, for tests.
    #[cfg(test)]
    pub fn message(&self) -> String {
        match self {
            Error::Usage(message) | Error::Config(message) => message.clone(),
            other => format!("{other:?}"),
        }
    }

    /// A lock error after `tried`.
    pub fn lock(error: LockError, tried: Tried) -> Error {
        Error::Lock {
            error: Box::new(error),
            tried,
        }
    }
}

impl From<LockError> for Error {
    fn from(error: LockError) -> Self {
        Error::lock(error, Tried::once())
    }
}

/// A failed write to stdout or a failed system call is never the user's input.
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Internal(error.into())
    }
}
