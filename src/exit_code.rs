//! Every exit status `redlock` can return, in one place.
//!
//! The numbers follow BSD `sysexits.h` where one fits, so that scripts can tell
//! "someone else holds the lock" (75, retry later) from "the servers are down"
//! (69) and from "you typed it wrong" (64). The README's exit-code table mirrors
//! this enum; `tests::codes_match_the_documented_table` keeps them in step.

use std::process::ExitCode;

use crate::config::{ConfigError, UsageError};
use crate::lock::LockError;

/// The outcome of one `redlock` invocation, as the shell sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what was asked (for `status`: the lock is held).
    Success,
    /// 1: `status` only: the lock is free (no token holds a majority).
    Free,
    /// 64 (EX_USAGE): a bad flag, duration, name or missing token.
    Usage,
    /// 69 (EX_UNAVAILABLE): fewer than N/2+1 servers answered in time, so
    /// nothing can be decided.
    NoQuorum,
    /// 70 (EX_SOFTWARE): an unexpected internal error, e.g. stdout closed.
    Internal,
    /// 75 (EX_TEMPFAIL): the lock is held by someone else (`-n`), or the
    /// `-w` wait ran out while it was.
    Busy,
    /// 78 (EX_CONFIG): a server URL or TLS setting that cannot be used.
    Config,
    /// 79: `release`/`extend` found that the token no longer holds a majority.
    Lost,
    /// 128+N: interrupted by signal N (after releasing what was taken), or
    /// for `exec`, the command died of signal N.
    Signal(i32),
    /// `exec`: the command's own exit status, `-E` when the lock was busy,
    /// 126/127 when the command could not be run / was not found.
    Code(u8),
}

impl Exit {
    /// The numeric status passed to the operating system.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Free => 1,
            Exit::Usage => 64,
            Exit::NoQuorum => 69,
            Exit::Internal => 70,
            Exit::Busy => 75,
            Exit::Config => 78,
            Exit::Lost => 79,
            Exit::Signal(signal) => u8::try_from(128 + signal.clamp(0, 127)).unwrap_or(u8::MAX),
            Exit::Code(code) => code,
        }
    }
}

impl From<&LockError> for Exit {
    fn from(error: &LockError) -> Self {
        match error {
            LockError::Busy { .. } => Exit::Busy,
            // A majority that agrees too slowly to leave any validity is, for
            // the caller, the same as servers that do not answer in time.
            LockError::NoQuorum { .. } | LockError::TooSlow { .. } => Exit::NoQuorum,
            LockError::NotHeld { .. } => Exit::Lost,
            LockError::Refused { .. } => Exit::Config,
        }
    }
}

impl Exit {
    /// The status for an error that ended the run; anything not typed is a bug
    /// or an environment failure (e.g. stdout closed).
    pub fn for_error(error: &anyhow::Error) -> Exit {
        if let Some(lock) = error.downcast_ref::<LockError>() {
            Exit::from(lock)
        } else if error.is::<UsageError>() {
            Exit::Usage
        } else if error.is::<ConfigError>() {
            Exit::Config
        } else {
            Exit::Internal
        }
    }

    /// Whether this is an outcome a script expects and `-q` silences, rather
    /// than an error someone has to look at.
    pub fn is_expected_outcome(self) -> bool {
        matches!(self, Exit::Free | Exit::Busy | Exit::Lost)
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn codes_match_the_documented_table() {
        let table = [
            (Exit::Success, 0),
            (Exit::Free, 1),
            (Exit::Usage, 64),
            (Exit::NoQuorum, 69),
            (Exit::Internal, 70),
            (Exit::Busy, 75),
            (Exit::Config, 78),
            (Exit::Lost, 79),
        ];
        for (exit, code) in table {
            assert_eq!(exit.code(), code, "{exit:?}");
        }
        assert_eq!(Exit::Signal(2).code(), 130);
        assert_eq!(Exit::Signal(15).code(), 143);
        assert_eq!(Exit::Signal(9).code(), 137);
        assert_eq!(Exit::Code(7).code(), 7);
        let readme = include_str!("../README.md");
        for (exit, code) in table {
            assert!(
                readme.contains(&format!("| {code} |")),
                "README's exit-code table lacks {code} ({exit:?})"
            );
        }
    }

    #[test]
    fn errors_map_to_their_codes() {
        use crate::config::{ConfigError, UsageError};
        use crate::lock::{Failures, LockError, LockKey};
        let key = LockKey::new(b"k".to_vec());
        let busy = LockError::Busy {
            key: key.clone(),
            held_elsewhere: 3,
            total: 3,
            failures: Failures::default(),
        };
        let not_held = LockError::NotHeld {
            key: key.clone(),
            held: 0,
            total: 3,
            quorum: 2,
            failures: Failures::default(),
        };
        let refused = LockError::Refused {
            key: key.clone(),
            refused: 2,
            total: 3,
            failures: Failures::default(),
        };
        let no_quorum = LockError::NoQuorum {
            key: key.clone(),
            failed: 2,
            total: 3,
            quorum: 2,
            failures: Failures::default(),
        };
        let too_slow = LockError::TooSlow {
            key,
            elapsed: std::time::Duration::from_secs(1),
            ttl: std::time::Duration::from_secs(1),
        };
        let cases: [(anyhow::Error, Exit); 7] = [
            (refused.into(), Exit::Config),
            (busy.into(), Exit::Busy),
            (not_held.into(), Exit::Lost),
            (no_quorum.into(), Exit::NoQuorum),
            (too_slow.into(), Exit::NoQuorum),
            (UsageError("x".into()).into(), Exit::Usage),
            (ConfigError("x".into()).into(), Exit::Config),
        ];
        for (error, exit) in cases {
            assert_eq!(Exit::for_error(&error), exit, "{error}");
        }
        assert_eq!(Exit::for_error(&anyhow::anyhow!("io")), Exit::Internal);
        let wrapped = anyhow::Error::from(UsageError("x".into())).context("while parsing");
        assert_eq!(Exit::for_error(&wrapped), Exit::Usage);
    }

    #[test]
    fn codes_are_distinct() {
        let codes = [
            Exit::Success,
            Exit::Free,
            Exit::Usage,
            Exit::NoQuorum,
            Exit::Internal,
            Exit::Busy,
            Exit::Config,
            Exit::Lost,
        ]
        .map(Exit::code);
        let mut sorted = codes.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), codes.len());
    }
}
