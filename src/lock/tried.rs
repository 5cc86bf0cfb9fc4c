//! How hard an operation tried before it ended.

use std::time::Duration;

/// The attempts an operation made, and how long they took in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tried {
    pub attempts: u32,
    /// From the first attempt to the end of the last.
    pub waited: Duration,
}

impl Tried {
    /// One attempt, no waiting: release, extend, status.
    pub fn once() -> Self {
        Tried {
            attempts: 1,
            waited: Duration::ZERO,
        }
    }
}
