//! Every byte `redlock` writes to stdout and stderr: plain text for people,
//! one JSON object for programs (`--json`), diagnostics on stderr. The
//! commands say what happened; this module decides what is shown under
//! `--json`, `-q` and `-v`. Nothing here panics on a closed pipe: every
//! write to stdout returns its error.

pub mod json;
mod notice;
pub mod progress;
pub mod text;

use std::io::{self, Write};

use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{
    count_servers, rounded, Forced, Inspection, Lease, Listing, LockError, LockKey, Released,
    Verdict, Wait,
};
use crate::supervise::Event;
use json::{FailureJson, ForcedJson, LeaseJson, ListJson, ReleaseJson, StatusJson};

pub use notice::Notice;
pub use progress::Progress;

use text::human;

/// How results and diagnostics are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputMode {
    pub json: bool,
    pub quiet: bool,
    pub verbose: bool,
}

/// What the commands call to report.
#[derive(Debug, Clone, Copy)]
pub struct Reporter {
    mode: OutputMode,
}

impl Reporter {
    pub fn new(mode: OutputMode) -> Self {
        Reporter { mode }
    }

    /// A step described under `-v` only.
    pub fn verbose(&self, message: impl FnOnce() -> String) {
        if self.mode.verbose {
            note(&message());
        }
    }

    /// An outcome a script expects (busy, a retry): silenced by `-q`.
    pub fn outcome(&self, message: &str) {
        if !self.mode.quiet {
            note(message);
        }
    }

    /// Something that went wrong: always said.
    pub fn warning(&self, message: &str) {
        note(message);
    }

    /// The error that ends the run, unless `-q` silences an expected one.
    pub fn error(&self, error: &Error) {
        if !(self.mode.quiet && error.exit().is_expected_outcome()) {
            note(&error.to_string());
        }
    }

    /// Warnings about secrets, unless `-q`.
    pub fn notice(&self, notice: &Notice) {
        self.outcome(&notice.text());
    }

    /// What the supervisor of `exec` tells.
    pub fn supervision(&self, event: &Event) {
        match event {
            Event::Started { .. } | Event::HoldingForLeftovers => {
                self.verbose(|| text::event(event))
            }
            Event::LeftoverStoppedAgain { .. } => self.outcome(&text::event(event)),
            Event::WatchdogGone => self.warning(&text::event(event)),
        }
    }

    /// `acquire`: the token (or the lease as JSON) on stdout.
    pub fn acquired(&self, lease: &Lease, servers: usize) -> io::Result<()> {
        self.verbose(|| text::acquired(lease, servers, true));
        if self.mode.json {
            line(&json::to_line(&LeaseJson::new(lease))?)
        } else {
            line(lease.token.as_str())
        }
    }

    /// `exec` took the lock and is about to run the command.
    pub fn holding(&self, lease: &Lease, servers: usize) {
        self.verbose(|| text::acquired(lease, servers, false));
    }

    pub fn released(&self, key: &LockKey, released: &Released) -> io::Result<()> {
        self.verbose(|| {
            format!(
                "released {key} on {} of {}",
                released.released_on.len(),
                count_servers(released.total)
            )
        });
        if !self.mode.json {
            return Ok(());
        }
        line(&json::to_line(&ReleaseJson {
            name: json::Bytes(key.bytes()),
            released: true,
            released_on: released
                .released_on
                .iter()
                .map(ToString::to_string)
                .collect(),
            released_count: released.released_on.len(),
            servers: released.total,
        })?)
    }

    pub fn extended(&self, lease: &Lease, servers: usize) -> io::Result<()> {
        self.verbose(|| {
            format!(
                "extended {} on {} of {}; valid for {}",
                lease.key,
                lease.held_on.len(),
                count_servers(servers),
                human(lease.validity())
            )
        });
        if !self.mode.json {
            return Ok(());
        }
        line(&json::to_line(&LeaseJson::new(lease))?)
    }

    /// `status`: the table, or the JSON object; nothing under `-q`.
    pub fn status(&self, inspection: &Inspection, verdict: &Verdict) -> io::Result<()> {
        if self.mode.json {
            let occupied = inspection.occupied();
            line(&json::to_line(&StatusJson::new(
                inspection,
                verdict,
                occupied.as_ref(),
            ))?)
        } else if !self.mode.quiet {
            line(&text::status(inspection, verdict))
        } else {
            Ok(())
        }
    }

    /// `list`: the servers that could not be read on stderr, always; then
    /// the table (nothing under `-q`), or the JSON object.
    pub fn listed(&self, listing: &Listing) -> io::Result<()> {
        for part in &listing.servers {
            if let Some(message) = text::list_server(part) {
                self.warning(&message);
            }
        }
        let entries = listing.entries();
        if self.mode.json {
            line(&json::to_line(&ListJson::new(listing, &entries))?)
        } else if entries.is_empty() {
            self.outcome(&text::list_empty(listing));
            Ok(())
        } else if !self.mode.quiet {
            line(&text::list(&entries))
        } else {
            Ok(())
        }
    }

    /// `release --force`: what was broken, on stderr (not under `-q`), and
    /// with `--json` the result on stdout.
    pub fn forced(&self, forced: &Forced) -> io::Result<()> {
        if let Some(message) = text::forced(forced) {
            self.outcome(&message);
        }
        if !self.mode.json {
            return Ok(());
        }
        let verdict = forced.before.verdict();
        let occupied = forced.before.occupied().or_else(|| forced.before.seen());
        line(&json::to_line(&ForcedJson::new(
            forced,
            &verdict,
            occupied.as_ref(),
        ))?)
    }

    /// A failed lock operation: under `--json` it is a result on stdout too.
    /// Returns it as the run's error.
    pub fn failed<T>(&self, key: &LockKey, error: impl Into<Error>) -> Result<T, Error> {
        self.failed_after(key, error, Tried::once())
    }

    /// [`Self::failed`], for an operation that tried `tried.attempts` times.
    pub fn failed_after<T>(
        &self,
        key: &LockKey,
        error: impl Into<Error>,
        tried: Tried,
    ) -> Result<T, Error> {
        let error = error.into();
        if let Err(err) = self.failure(key, &error, tried) {
            self.unwritten(&err);
        }
        Err(error)
    }

    /// stdout was closed (`| head`, `| true`) after the operation was done:
    /// the operation's own status stands, and this says what was lost.
    pub fn unwritten(&self, error: &io::Error) {
        note(&format!(
            "the result could not be written to stdout: {error}"
        ));
    }

    /// Under `-v`, what a failed attempt to take the lock met, before the
    /// next one.
    pub fn retrying(&self, attempt: u32, error: &crate::lock::LockError) {
        self.verbose(|| {
            format!(
                "attempt {attempt} failed, retrying: {}",
                crate::error::describe(error)
            )
        });
    }

    /// What a wait for `key` shows while it lasts (nothing without a wait).
    pub fn progress(&self, key: &LockKey, wait: Wait) -> Progress {
        let (style, limit) = match wait {
            Wait::No => (progress::Style::Off, None),
            Wait::For(limit) => (self.progress_style(), Some(limit)),
            Wait::Forever => (self.progress_style(), None),
        };
        Progress::new(key, limit, style)
    }

    fn progress_style(&self) -> progress::Style {
        progress::Style::for_stderr(self.mode.quiet, self.mode.verbose)
    }

    /// Under `-v`, as `exec` ends: how it got and held the lock.
    pub fn held(&self, held: &Held) {
        self.verbose(|| {
            let times = if held.extensions == 1 {
                "time"
            } else {
                "times"
            };
            let end = if held.lost {
                "lost it before the command ended"
            } else {
                "kept it to the end"
            };
            format!(
                "lock {}: waited {} for it, extended it {} {times}, {end}",
                held.key,
                rounded(held.waited),
                held.extensions
            )
        });
    }

    /// A signal ended the wait for the lock; whatever was taken has been
    /// released. The status of a process killed by that signal.
    pub fn interrupted(&self, key: &LockKey, signal: nix::sys::signal::Signal) -> Exit {
        self.verbose(|| format!("interrupted by {signal} while waiting for {key}; it is not held"));
        Exit::Signal(signal as i32)
    }

    /// With `--json`, a failed lock operation is a result too: one object on
    /// stdout naming it. The message on stderr follows as for any error.
    fn failure(&self, key: &LockKey, error: &Error, tried: Tried) -> io::Result<()> {
        let Error::Lock(lock) = error else {
            return Ok(());
        };
        if !self.mode.json {
            return Ok(());
        }
        let (held_by, expires_in) = match lock {
            LockError::Busy {
                held_by,
                expires_in,
                ..
            } => (held_by.as_deref(), *expires_in),
            _ => (None, None),
        };
        line(&json::to_line(&FailureJson {
            name: json::Bytes(key.bytes()),
            error: json::failure_kind(lock),
            message: error.to_string(),
            holder: held_by.map(json::HolderJson::new),
            expires_in_ms: expires_in.map(json::millis),
            attempts: tried.attempts,
            waited_ms: json::millis(tried.waited),
        })?)
    }
}

/// How `exec` got and held its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held<'a> {
    pub key: &'a LockKey,
    /// From the first attempt until the lock was taken.
    pub waited: std::time::Duration,
    /// Extensions that succeeded.
    pub extensions: u32,
    /// The lock was lost (or an extension refused) while the command ran.
    pub lost: bool,
}

/// How hard an operation tried before it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tried {
    pub attempts: u32,
    /// From the first attempt to the failure of the last.
    pub waited: std::time::Duration,
}

impl Tried {
    /// One attempt, no waiting: release, extend, status.
    pub fn once() -> Self {
        Tried {
            attempts: 1,
            waited: std::time::Duration::ZERO,
        }
    }
}

/// Writes one line to stdout.
fn line(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{text}")?;
    stdout.flush()
}

/// A diagnostic on stderr, prefixed with the program's name. Failing to write
/// it changes nothing about the outcome, so the error is dropped.
pub fn note(text: &str) {
    let _ = writeln!(io::stderr().lock(), "redlock: {text}");
}
