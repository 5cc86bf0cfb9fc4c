//! What a command says while it runs, as data: the one narrow sink
//! ([`super::Events`]) takes these, and `text` words them.

use crate::config::Notice;
use crate::lock::{Lease, LockError, LockKey};

/// What a command says while it runs. Data: the words are in `text`.
#[derive(Debug)]
pub enum Event<'a> {
    /// Something about how the command was given (a secret where others
    /// can read it).
    Notice(&'a Notice),
    /// `exec` without NAME: the name it derived.
    DerivedName(&'a LockKey),
    /// An attempt to take the lock failed; another follows.
    Retrying { attempt: u32, error: &'a LockError },
    /// `exec` took the lock and is about to run the command.
    Holding { lease: &'a Lease, servers: usize },
    /// `exec` inside an `exec` of the same lock runs its command in place.
    Nested(&'a LockKey),
    /// The command runs, as process `pid`.
    CommandStarted { pid: u32 },
    /// The command exited; the lock is held until what it left ends.
    HoldingForLeftovers,
    /// A process left behind stopped on the terminal again and gets `signal`.
    LeftoverStoppedAgain { pid: i32, signal: &'static str },
    /// The watchdog process died.
    WatchdogGone,
    /// An extension failed; the keeper tries again.
    ExtendRetrying(&'a LockError),
    /// `exec` released its lock.
    Released(&'a LockKey),
}
