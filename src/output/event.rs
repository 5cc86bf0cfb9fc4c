//! What a command says while it runs, as data: the one narrow sink
//! ([`super::Events`]) takes these, and `text` words them.

use std::time::Duration;

use crate::config::Notice;
use crate::lock::{Concern, Lease, LockError, LockKey};
use crate::repeats::Failing;

/// What a command says while it runs. Data: the words are in `text`.
#[derive(Debug)]
pub enum Event<'a> {
    /// Something about how the command was given (a secret where others
    /// can read it).
    Notice(&'a Notice),
    /// A server that can lose a lock it holds (a replica, an eviction
    /// policy), seen when the lock was taken.
    Concern(&'a Concern),
    /// `exec` without NAME: the name it derived, and whether with the
    /// config file's `name-key`.
    DerivedName { key: &'a LockKey, keyed: bool },
    /// An attempt to take the lock failed; another follows.
    Retrying { attempt: u32, error: &'a LockError },
    /// `exec` took the lock and is about to run the command.
    Holding { lease: &'a Lease, servers: usize },
    /// `exec` inside an `exec` of the same lock runs its command in place.
    Nested(&'a LockKey),
    /// The command runs, as process `pid`.
    CommandStarted { pid: u32 },
    /// The command exited; the lock is held until these processes it left
    /// (pid, command line as raw bytes) end. `terminal`: Ctrl-C reaches us.
    HoldingForLeftovers {
        key: &'a LockKey,
        processes: &'a [(i32, &'a [u8])],
        terminal: bool,
    },
    /// Asked to end, `exec` stops what the command left: `signal` now,
    /// SIGKILL `kill_in` later.
    StoppingLeftovers {
        signal: &'static str,
        kill_in: Duration,
        terminal: bool,
    },
    /// Asked again, `exec` kills what the command left.
    KillingLeftovers,
    /// `exec`'s job is stopped from the terminal (Ctrl-Z): nothing extends
    /// the lock until it is continued, which must come within `stop_in`.
    Suspended { key: &'a LockKey, stop_in: Duration },
    /// A process left behind stopped on the terminal again and gets `signal`.
    LeftoverStoppedAgain { pid: i32, signal: &'static str },
    /// The watchdog process died.
    WatchdogGone,
    /// An extension failed; the keeper tries again. Said for the first
    /// failure, then at growing intervals: `failing` counts them all.
    ExtendRetrying {
        error: &'a LockError,
        failing: Failing,
    },
    /// An extension succeeded after these failed.
    ExtendRecovered(Failing),
    /// `exec` released its lock.
    Released(&'a LockKey),
    /// `--once-per`, `--once`: the done mark is on `on` of `total` servers.
    MarkedDone {
        key: &'a LockKey,
        on: usize,
        total: usize,
    },
    /// The done mark reached no majority: the run does not count.
    NotMarkedDone(&'a LockError),
    /// A signal came while the done mark was tried again: the tries stop,
    /// and the run does not count.
    MarkInterrupted { key: &'a LockKey, signal: &'a str },
}
