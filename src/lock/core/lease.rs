//! What a taken lock is, and what a release reached.

use std::time::Duration;

use crate::clock::BootInstant;
use crate::lock::key::{LockKey, Token};
use crate::lock::server_url::ServerSpec;
use crate::lock::slot::Slot;

/// A lock this process holds.
#[derive(Debug, Clone)]
pub struct Lease {
    pub key: LockKey,
    pub token: Token,
    pub ttl: Duration,
    /// The instant the validity runs out; comparable across processes.
    pub deadline: BootInstant,
    /// The servers that confirmed, in the order they answered.
    pub held_on: Vec<ServerSpec>,
    /// How many rounds `acquire` needed (1 for extend).
    pub attempts: u32,
    /// The semaphore slot this lease holds (`--limit`), if it is one.
    pub slot: Option<Slot>,
    /// The fencing token, when taken with `--fence` (lock/fence.rs).
    pub fence: Option<u64>,
}

impl Lease {
    /// How long the lock can still be relied upon: counted now, from the
    /// deadline, so that it is never more than what is left when the user
    /// reads it, whatever rounds ran since the lock was taken.
    pub fn validity(&self) -> Duration {
        self.deadline.remaining()
    }
}

/// The result of a release that reached a majority.
#[derive(Debug, Clone)]
pub struct Released {
    /// The servers where the key held the token and was deleted, in the
    /// order they answered.
    pub released_on: Vec<ServerSpec>,
    pub total: usize,
}
