//! An acquire request: everything one `acquire` or `exec` asks of the
//! servers, built once by the command and carried to the one loop that
//! takes it (retry.rs). `Redlock` holds the servers and the fleet's
//! settings; how this one lock is taken lives here.

use std::time::Duration;

use crate::clock::BootInstant;
use crate::lock::done_mark::OnceRun;
use crate::lock::holder::Holder;
use crate::lock::key::{LockKey, Token};
use crate::lock::slot::Semaphore;
use crate::lock::supersede::Supersede;

/// What a request takes: a lock, or any one slot of a semaphore
/// (`--limit K`, semaphore.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Lock(LockKey),
    Slot(Semaphore),
}

/// One acquire request.
#[derive(Debug, Clone)]
pub struct Take {
    pub target: Target,
    pub ttl: Duration,
    pub wait: Wait,
    /// Whether the lock gets a fencing token (`--fence`, fence.rs).
    pub fence: bool,
    /// Whether it is taken shared (`--shared`, shared.rs): one reader among
    /// many, beside other readers and never beside a writer.
    pub shared: bool,
    /// What is recorded beside the lock (`None`: nothing).
    pub record: Option<Holder>,
    /// `--supersede`: a newer superseding waiter replaces this one while
    /// it waits (supersede.rs).
    pub supersede: Option<Supersede>,
    /// A run once per period or key: its id, which a done mark that holds
    /// it makes the attempt skip (lock/once.rs).
    pub once: Option<OnceRun>,
}

impl Take {
    /// A plain request for `target`: exclusive, no fence, no record.
    pub fn new(target: Target, ttl: Duration, wait: Wait) -> Self {
        Take {
            target,
            ttl,
            wait,
            fence: false,
            shared: false,
            record: None,
            supersede: None,
            once: None,
        }
    }

    /// The name the user gave: the lock's, or the semaphore's.
    pub fn name(&self) -> &LockKey {
        match &self.target {
            Target::Lock(key) => key,
            Target::Slot(semaphore) => &semaphore.key,
        }
    }

    /// The keys whose lines a waiter stands in, and whose releases wake it:
    /// the lock's, or every slot's.
    pub(in crate::lock) fn keys(&self) -> Vec<LockKey> {
        match &self.target {
            Target::Lock(key) => vec![key.clone()],
            Target::Slot(semaphore) => semaphore.slot_keys(),
        }
    }

    /// The record written beside `token`'s lock: empty when none is kept.
    pub(in crate::lock) fn record_for(&self, token: &Token) -> Vec<u8> {
        self.record
            .as_ref()
            .map(|holder| holder.encode(token))
            .unwrap_or_default()
    }
}

/// How long `acquire` keeps trying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// One attempt only (`-n`, `-w 0`).
    No,
    /// Retry until this much time has passed.
    For(Duration),
    /// Retry until the lock is ours (the default, like `flock`).
    Forever,
}

impl Wait {
    /// When a wait that starts now gives up (`None`: never).
    pub(in crate::lock) fn gives_up_at(self) -> Option<BootInstant> {
        match self {
            Wait::No => Some(BootInstant::now()),
            Wait::For(limit) => Some(BootInstant::now() + limit),
            Wait::Forever => None,
        }
    }
}
