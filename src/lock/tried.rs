//! How hard an operation tried before it ended.

use std::time::Duration;

use super::core::take::Wait;
use super::error::LockError;

/// The attempts an operation made, and how long they took in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tried {
    pub attempts: u32,
    /// From the first attempt to the end of the last.
    pub waited: Duration,
    /// The wait (`-w`) that ran out, when the operation gave up because it
    /// did; `None` when it did not wait (`-n`) or failed for another reason.
    pub gave_up_after: Option<Duration>,
}

impl Tried {
    /// One attempt, no waiting: release, extend, status.
    pub fn once() -> Self {
        Tried {
            attempts: 1,
            waited: Duration::ZERO,
            gave_up_after: None,
        }
    }

    /// `attempts` over `waited` under `wait`, ended by `error`: given up
    /// after the wait when it was limited and the error is one another
    /// attempt could have cured.
    pub fn ended(attempts: u32, waited: Duration, wait: Wait, error: &LockError) -> Self {
        let gave_up_after = match wait {
            Wait::For(limit) if error.is_transient() => Some(limit),
            _ => None,
        };
        Tried {
            attempts,
            waited,
            gave_up_after,
        }
    }
}
