//! What a run came to, as data: each command returns `Result<Outcome,
//! Error>`, and this is the one place that decides the exit status of
//! either. `output` renders them; it reads [`Failed`], a view of an
//! [`Error`], and never `Error` itself.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{
    Broken, DoneMark, Forced, Inspection, Lease, Listing, LockError, LockKey, Marked, Released,
    Semaphore, Tried, Verdict,
};
use crate::repeats::Failing;
use crate::signals::QUIET_DEATHS;

pub mod forced;
pub mod report;

pub use forced::{Did, Forcing, NotALock};
pub use report::Report;

/// What a command did. Data only: the words are `output`'s.
#[derive(Debug)]
pub enum Outcome {
    /// `acquire`: the lock is held; the token goes to stdout.
    Acquired {
        lease: Lease,
        servers: usize,
    },
    /// The lock was busy and `-E CODE` asked for CODE instead of 75.
    BusyAs {
        error: LockError,
        tried: Tried,
        code: u8,
    },
    Released {
        key: LockKey,
        released: Released,
    },
    Extended {
        lease: Lease,
        servers: usize,
    },
    /// `release --force --done`: the done mark was on `cleared_on` servers
    /// of `servers`, and is gone from each that answered (a majority).
    ClearedDone {
        key: LockKey,
        cleared_on: usize,
        servers: usize,
    },
    /// `done`: the run's mark is on a majority.
    MarkedDone {
        key: LockKey,
        /// The run's id (`per:PERIOD_MS:OFFSET_MS:N` or `key:KEY`).
        id: String,
        marked: Marked,
    },
    Status {
        inspection: Inspection,
        verdict: Verdict,
    },
    /// `status --limit K`: every slot of a semaphore.
    Slots(Slots),
    Listed(Listing),
    /// `release --force`: what it did, classified once.
    Forced(Box<Forcing>),
    /// `exec`: how the command went under the lock.
    Ran(Ran),
    /// `--once-per`, `--once`: a server's done mark says this period (or
    /// key) was done already; nothing was taken, nothing run.
    Skipped {
        key: LockKey,
        mark: Box<DoneMark>,
        /// 0 for `exec` (the cron idiom), 80 for `acquire` (a script tells
        /// "done already" from "do it" by the status alone).
        exit: Exit,
    },
    /// A signal ended the wait for `key`; whatever was taken was released.
    Interrupted {
        key: LockKey,
        signal: Signal,
    },
    /// `acquire --while PID`: PID exited while the lock was still busy, so
    /// the wait ended; whatever was taken was released.
    Abandoned {
        key: LockKey,
        pid: i32,
    },
    /// `acquire --while PID`: an earlier `acquire --while` (its keeper
    /// `keeper`) keeps the lock for PID already; waiting would never end.
    KeptAlready {
        key: LockKey,
        pid: i32,
        keeper: u32,
    },
    /// `generate`: the files were written.
    Generated,
    /// `doctor`: what the servers' settings come to.
    Doctor(Report),
}

/// What a lock is, as `status` and `release --force` show it (in text and
/// as JSON's `state`), from a majority's verdict and its readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockState {
    /// A majority holds it (a lock, or a key of another type).
    Held,
    /// Readers (`--shared`) hold it on a majority.
    Shared,
    Free,
    /// Too few servers answered to tell.
    Unknown,
}

impl LockState {
    /// `readers`: how many readers a majority holds.
    pub fn of(verdict: &Verdict, readers: u64) -> LockState {
        match verdict {
            Verdict::Held { .. } | Verdict::Foreign { .. } => LockState::Held,
            Verdict::Free if readers > 0 => LockState::Shared,
            Verdict::Free => LockState::Free,
            Verdict::Unknown => LockState::Unknown,
        }
    }
}

/// What every slot of a semaphore is (`status --limit K`), in slot order.
#[derive(Debug)]
pub struct Slots {
    pub semaphore: Semaphore,
    pub slots: Vec<(Inspection, Verdict)>,
}

impl Slots {
    /// How many slots a majority holds (for anyone, Redlock or not).
    pub fn held(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Held { .. } | Verdict::Foreign { .. }))
    }

    /// How many slots are free.
    pub fn free(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Free))
    }

    fn count(&self, which: impl Fn(&Verdict) -> bool) -> usize {
        self.slots.iter().filter(|(_, v)| which(v)).count()
    }

    /// Why the first slot whose state is unknown is (too few answered).
    pub fn unknown(&self) -> Option<LockError> {
        self.slots
            .iter()
            .find(|(_, v)| matches!(v, Verdict::Unknown))
            .map(|(inspection, _)| inspection.no_quorum())
    }
}

/// How `exec` held its lock and how its command ended.
#[derive(Debug)]
pub struct Ran {
    pub key: LockKey,
    /// From the first attempt until the lock was taken; `None` when an
    /// enclosing `exec` holds it.
    pub waited: Option<Duration>,
    /// Extensions that succeeded.
    pub extensions: u32,
    pub end: RunEnd,
    /// A release that failed after a normal end: said, but the command's
    /// status stands.
    pub release_failed: Option<LockError>,
}

/// How the command under the lock ended.
#[derive(Debug)]
pub enum RunEnd {
    /// It exited (or died of a signal) on its own. `forwarded` is the
    /// signal it died of when redlock itself received that signal (and so
    /// passed it on).
    Exited {
        status: ExitStatus,
        forwarded: Option<Signal>,
    },
    /// It was stopped because the lock was lost or could have lapsed.
    Stopped(Stop),
    /// The servers refused an extension; it was stopped.
    Refused(LockError),
    /// It could not be run. `name_runs`: the lock's NAME, when it names a
    /// command itself (`exec ./deploy.sh staging`), spelled so that it
    /// runs: the two may have been swapped.
    NotStarted {
        argv: Vec<OsString>,
        error: io::Error,
        name_runs: Option<OsString>,
    },
}

/// Why `exec` stopped its command (the supervisor's reason, as data).
#[derive(Debug)]
pub enum Stop {
    /// No extension came in time while redlock ran: `last_error` is why the
    /// last attempt failed (`None`: none had been answered).
    NotExtended {
        left: Duration,
        last_error: Option<LockError>,
        /// The extensions that failed since the last that succeeded.
        failing: Option<Failing>,
    },
    /// The stop fell due while redlock itself was not running (frozen,
    /// suspended).
    Overdue,
    /// A majority said the token is gone; the protocol's error, and who
    /// broke the lock if it was broken with `release --force`.
    Lost {
        error: LockError,
        broken: Option<Broken>,
    },
    TooLateToStart,
    /// It ran past `exec --timeout` (this long).
    TimedOut {
        limit: Duration,
    },
    /// `--cancel-in-progress`: a newer waiter asked this run to stop.
    Cancelled {
        by: crate::lock::Superseder,
    },
}

/// A failed run, as `output` reads it.
#[derive(Debug)]
pub enum Failed<'a> {
    /// A lock operation failed: a message, and under `--json` an object.
    Lock { error: &'a LockError, tried: Tried },
    /// `acquire` took the lock, but it expired while the token was written.
    Expired {
        key: &'a LockKey,
        validity: Duration,
    },
    /// `release` left the lock alone: its keeper, process `pid`, was
    /// stopped for `waited`.
    KeeperStopped { pid: i32, waited: Duration },
    /// Usage, configuration or internal errors: one line.
    Said(String),
}

impl Outcome {
    /// `release --force`'s outcome, classified.
    pub fn forced(forced: Forced) -> Outcome {
        Outcome::Forced(Box::new(Forcing::new(forced)))
    }

    /// The status this outcome ends the process with.
    pub fn exit(&self) -> Exit {
        match self {
            Outcome::Acquired { .. }
            | Outcome::Released { .. }
            | Outcome::Extended { .. }
            | Outcome::MarkedDone { .. }
            | Outcome::ClearedDone { .. }
            | Outcome::Generated => Exit::Success,
            Outcome::Skipped { exit, .. } => *exit,
            Outcome::BusyAs { code, .. } => Exit::Code(*code),
            Outcome::Status {
                inspection,
                verdict,
            } => match LockState::of(verdict, inspection.readers()) {
                LockState::Held | LockState::Shared => Exit::Success,
                LockState::Free => Exit::Free,
                LockState::Unknown => lock_exit(&inspection.no_quorum()),
            },
            // As for one lock: 0 while any slot is held, 1 when all are free.
            Outcome::Slots(slots) => match slots.unknown() {
                Some(error) => lock_exit(&error),
                None if slots.held() > 0 => Exit::Success,
                None => Exit::Free,
            },
            Outcome::Listed(listing) => {
                listing.no_quorum().map_or(Exit::Success, |e| lock_exit(&e))
            }
            Outcome::Forced(forcing) => match forcing.forced.no_quorum() {
                Some(error) => lock_exit(&error),
                // The name given is not a lock's: a usage error.
                None if !forcing.left_alone.is_empty() => Exit::Usage,
                // `--if-token`: another holder has it now, and keeps it.
                None if forcing.did == Did::KeptByAnother => Exit::Lost,
                None => Exit::Success,
            },
            Outcome::Ran(ran) => ran.end.exit(),
            Outcome::Doctor(report) => report.exit(),
            Outcome::Interrupted { signal, .. } => Exit::Signal(*signal as i32),
            // Nobody is left to hold it for: as a wait that ran out.
            Outcome::Abandoned { .. } | Outcome::KeptAlready { .. } => Exit::Busy,
        }
    }

    /// The signal the process must die of, rather than exit: one that
    /// redlock itself received and that ended its wait, or the command it
    /// passed it on to, and whose default action ends a process quietly.
    /// A calling shell then stops its script as it would for any command
    /// that Ctrl-C ended. (SIGQUIT would dump core: that gives 128+N.)
    pub fn dies_of(&self) -> Option<Signal> {
        let signal = match self {
            Outcome::Interrupted { signal, .. } => *signal,
            Outcome::Ran(Ran {
                end: RunEnd::Exited { status, forwarded },
                ..
            }) => (*forwarded).filter(|sig| status.signal() == Some(*sig as i32))?,
            _ => return None,
        };
        QUIET_DEATHS.contains(&signal).then_some(signal)
    }
}

impl RunEnd {
    fn exit(&self) -> Exit {
        match self {
            RunEnd::Exited { status, .. } => child_exit(*status),
            RunEnd::Stopped(Stop::TimedOut { .. }) => Exit::TimedOut,
            RunEnd::Stopped(Stop::Cancelled { .. }) => Exit::Cancelled,
            RunEnd::Stopped(_) => Exit::Lost,
            RunEnd::Refused(error) => lock_exit(error),
            // As shells do: 127 when it does not exist, 126 when it cannot run.
            RunEnd::NotStarted { error, .. } if error.kind() == io::ErrorKind::NotFound => {
                Exit::Code(127)
            }
            RunEnd::NotStarted { .. } => Exit::Code(126),
        }
    }
}

/// The command's status as ours: its code unchanged, 128+N for signal N.
fn child_exit(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Internal,
    }
}

/// The status of a failed lock operation.
pub fn lock_exit(error: &LockError) -> Exit {
    match error {
        LockError::Busy { .. } => Exit::Busy,
        // A majority that agrees too slowly to leave any validity is, for
        // the caller, the same as servers that do not answer.
        LockError::NoQuorum { .. }
        | LockError::TooSlow { .. }
        | LockError::Restarting { .. }
        | LockError::NoFenceLeft { .. } => Exit::NoQuorum,
        LockError::NotHeld { .. } => Exit::Lost,
        LockError::Refused { .. } => Exit::Config,
        LockError::Superseded { .. } => Exit::Cancelled,
        // Done already (`--once-per`): an Outcome::Skipped is made of it
        // before any error is (exit 0 for `exec`, 80 for `acquire`).
        LockError::Done { .. } => Exit::Done,
    }
}

impl Error {
    /// The exit status of a run that ended with this error.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_) => Exit::Usage,
            Error::Config(_) => Exit::Config,
            Error::Lock { error, .. } => lock_exit(error),
            // As for a majority that agreed too late: no usable lock.
            Error::Expired { .. } => Exit::NoQuorum,
            Error::KeeperStopped { .. } | Error::Internal(_) => Exit::Internal,
        }
    }

    /// What `output` shows of it.
    pub fn failed(&self) -> Failed<'_> {
        match self {
            Error::Usage(message) | Error::Config(message) => Failed::Said(message.clone()),
            Error::Lock { error, tried } => Failed::Lock {
                error: error.as_ref(),
                tried: *tried,
            },
            Error::Expired { key, validity } => Failed::Expired {
                key,
                validity: *validity,
            },
            Error::KeeperStopped { pid, waited } => Failed::KeeperStopped {
                pid: *pid,
                waited: *waited,
            },
            Error::Internal(cause) => Failed::Said(format!("{cause:#}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::Failures;

    #[test]
    fn statuses_map_like_a_shell() {
        assert_eq!(child_exit(ExitStatus::from_raw(0)), Exit::Code(0));
        assert_eq!(child_exit(ExitStatus::from_raw(7 << 8)), Exit::Code(7));
        assert_eq!(child_exit(ExitStatus::from_raw(9)), Exit::Signal(9));
        assert_eq!(child_exit(ExitStatus::from_raw(9)).code(), 137);
    }

    #[test]
    fn a_command_dies_of_a_signal_only_when_redlock_was_sent_it() {
        let ran = |raw, forwarded| {
            Outcome::Ran(Ran {
                key: LockKey::new(b"k".to_vec()),
                waited: None,
                extensions: 0,
                end: RunEnd::Exited {
                    status: ExitStatus::from_raw(raw),
                    forwarded,
                },
                release_failed: None,
            })
        };
        assert_eq!(ran(2, Some(Signal::SIGINT)).dies_of(), Some(Signal::SIGINT));
        // Killed by someone else: 128+N, as a shell reports it.
        assert_eq!(ran(9, Some(Signal::SIGINT)).dies_of(), None);
        assert_eq!(ran(2, None).dies_of(), None);
        assert_eq!(ran(2, None).exit().code(), 130);
        // A core-dumping signal is never re-raised.
        assert_eq!(ran(3, Some(Signal::SIGQUIT)).dies_of(), None);
    }

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
                    every_slot: None,
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
                    round: Box::new(crate::lock::TokenRound {
                        op: crate::lock::TokenOp::Release,
                        said: Vec::new(),
                    }),
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
                    token: None,
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
}
