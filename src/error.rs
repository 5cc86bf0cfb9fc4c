//! The one error type of a run. Each variant knows its exit status, so the
//! status of a failed run is decided here and nowhere else.

use std::fmt;

use crate::exit_code::Exit;
use crate::lock::{LockError, LockKey};
use std::time::Duration;

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// Input that can never work: exit 64.
    Usage(String),
    /// A server or TLS setting that cannot be used: exit 78.
    Config(String),
    /// The lock protocol's answer: busy, no quorum, not held, refused.
    Lock(LockError),
    /// `acquire` took the lock, but its validity ran out before the token
    /// was written (a stalled stdout); the lock was released.
    Expired { key: LockKey, validity: Duration },
    /// Anything else: a bug or the environment (stdout closed, fork failed).
    Internal(anyhow::Error),
}

impl Error {
    /// The exit status of a run that ended with this error.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_) => Exit::Usage,
            Error::Config(_) => Exit::Config,
            Error::Lock(lock) => match lock {
                LockError::Busy { .. } => Exit::Busy,
                // A majority that agrees too slowly to leave any validity is,
                // for the caller, the same as servers that do not answer.
                LockError::NoQuorum { .. }
                | LockError::TooSlow { .. }
                | LockError::Restarting { .. } => Exit::NoQuorum,
                LockError::NotHeld { .. } => Exit::Lost,
                LockError::Refused { .. } => Exit::Config,
            },
            // As for a majority that agreed too late: no usable lock.
            Error::Expired { .. } => Exit::NoQuorum,
            Error::Internal(_) => Exit::Internal,
        }
    }

    /// An internal error with `context` in front of its cause.
    pub fn internal(context: &'static str, cause: impl Into<anyhow::Error>) -> Error {
        Error::Internal(cause.into().context(context))
    }
}

/// A lock error as the user reads it. The protocol describes the situation;
/// what to do about it is advice in terms of this command line.
pub fn describe(lock: &LockError) -> String {
    match lock {
        LockError::TooSlow { .. } => format!("{lock}; use a longer --ttl or faster servers"),
        LockError::Restarting { .. } => format!("{lock}; --restart-guard 0 turns the guard off"),
        _ => lock.to_string(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) | Error::Config(message) => f.write_str(message),
            Error::Lock(lock) => f.write_str(&describe(lock)),
            Error::Expired { key, validity } => write!(
                f,
                "lock {key} expired while its token was being written (it was valid for {}); \
                 the lock was released: the token printed is no lock",
                humantime::format_duration(*validity)
            ),
            Error::Internal(cause) => write!(f, "{cause:#}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<LockError> for Error {
    fn from(error: LockError) -> Self {
        Error::Lock(error)
    }
}

/// A failed write to stdout or a failed system call is never the user's input.
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Internal(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{Failures, LockKey};
    use std::time::Duration;

    #[test]
    fn each_error_knows_its_exit_status() {
        let key = LockKey::new(b"k".to_vec());
        let cases = [
            (
                LockError::Busy {
                    key: key.clone(),
                    held_elsewhere: 3,
                    total: 3,
                    in_line: 0,
                    waiters: 0,
                    held_by: None,
                    expires_in: None,
                    held_on: Vec::new(),
                    failures: Failures::default(),
                },
                Exit::Busy,
            ),
            (
                LockError::NotHeld {
                    key: key.clone(),
                    held: 0,
                    total: 3,
                    quorum: 2,
                    failures: Failures::default(),
                },
                Exit::Lost,
            ),
            (
                LockError::Refused {
                    key: key.clone(),
                    refused: 2,
                    total: 3,
                    failures: Failures::default(),
                },
                Exit::Config,
            ),
            (
                LockError::NoQuorum {
                    key: key.clone(),
                    failed: 2,
                    total: 3,
                    quorum: 2,
                    failures: Failures::default(),
                },
                Exit::NoQuorum,
            ),
            (
                LockError::TooSlow {
                    key,
                    elapsed: Duration::from_secs(1),
                    ttl: Duration::from_secs(1),
                },
                Exit::NoQuorum,
            ),
        ];
        for (lock, exit) in cases {
            assert_eq!(Error::from(lock).exit(), exit);
        }
        assert_eq!(Error::Usage("x".into()).exit(), Exit::Usage);
        assert_eq!(Error::Config("x".into()).exit(), Exit::Config);
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(Error::from(io).exit(), Exit::Internal);
    }

    #[test]
    fn advice_is_added_here_not_by_the_protocol() {
        let too_slow = LockError::TooSlow {
            key: LockKey::new(b"k".to_vec()),
            elapsed: Duration::from_secs(2),
            ttl: Duration::from_secs(1),
        };
        assert!(!too_slow.to_string().contains("--ttl"));
        assert!(describe(&too_slow).ends_with("; use a longer --ttl or faster servers"));
        assert!(Error::from(too_slow)
            .to_string()
            .ends_with("; use a longer --ttl or faster servers"));
        let internal = Error::internal("writing the token", std::io::Error::other("closed"));
        assert_eq!(internal.to_string(), "writing the token: closed");
    }
}
