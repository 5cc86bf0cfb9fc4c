//! The shared history file of a scenario: one event per line, each appended
//! with one `write` on an O_APPEND descriptor so that lines of concurrent
//! writers (the sections, the client threads, the witness, the faults) never
//! interleave. Every stamp is CLOCK_MONOTONIC in nanoseconds, one clock for
//! every process of the machine.
//!
//! ```text
//! start  CLIENT SEQ NANOS MODE     a client launched `exec` (or the bare section)
//! enter  CLIENT SEQ NANOS          the section's first act
//! fence  CLIENT SEQ N              its REDLOCK_FENCE, under `exec --fence`
//! exit   CLIENT SEQ NANOS          the section's last act, when it was not killed
//! gone   CLIENT SEQ NANOS          the witness saw the section's process end
//! return CLIENT SEQ NANOS STATUS   `exec` (or the bare section) returned
//! fault  NANOS WHAT...             a fault was injected
//! heal   NANOS WHAT...             it was undone
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use nix::time::{clock_gettime, ClockId};

/// CLOCK_MONOTONIC in nanoseconds, as `torture-section` stamps it.
pub fn now_ns() -> u64 {
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    now.tv_sec() as u64 * 1_000_000_000 + now.tv_nsec() as u64
}

/// How a client ran one section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Under `redlock exec`.
    Locked,
    /// The bare section, without any lock: the checker's self-test.
    Unlocked,
    /// Under a bash script that holds the lock with `acquire --while $$`:
    /// a loss ends it with the keeper's SIGTERM (143), not 79.
    Kept,
    /// A reader, under `redlock exec --shared`: may be inside beside other
    /// readers, never beside a `Locked` writer.
    Shared,
    /// A slot holder, under `redlock exec --limit K` (K is
    /// [`crate::clients::SLOTS`]): at most K inside at once.
    Slot,
    /// Under `redlock exec --cancel-in-progress --serial N`: exclusive, and
    /// exit 81 (superseded while waiting, or cancelled while holding by a
    /// newer serial) is an expected end.
    Cancellable,
}

impl Mode {
    pub fn word(self) -> &'static str {
        match self {
            Mode::Locked => "locked",
            Mode::Unlocked => "unlocked",
            Mode::Kept => "kept",
            Mode::Shared => "shared",
            Mode::Slot => "slot",
            Mode::Cancellable => "cancellable",
        }
    }

    /// Whether sections of this mode may be inside together (as readers
    /// are, or the holders of a semaphore's slots), though never beside a
    /// section of another mode.
    pub fn shares(self) -> bool {
        matches!(self, Mode::Shared | Mode::Slot)
    }

    pub fn from_word(word: &str) -> Option<Mode> {
        [
            Mode::Locked,
            Mode::Unlocked,
            Mode::Kept,
            Mode::Shared,
            Mode::Slot,
            Mode::Cancellable,
        ]
        .into_iter()
        .find(|mode| mode.word() == word)
    }
}

pub struct History {
    path: PathBuf,
    file: File,
}

impl History {
    pub fn create(path: &Path) -> History {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
            .unwrap_or_else(|e| panic!("cannot create the history {}: {e}", path.display()));
        History {
            path: path.to_owned(),
            file,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn start(&self, client: u32, seq: u32, mode: Mode) {
        self.append(&format!(
            "start {client} {seq} {} {}",
            now_ns(),
            mode.word()
        ));
    }

    pub fn returned(&self, client: u32, seq: u32, at: u64, status: i32) {
        self.append(&format!("return {client} {seq} {at} {status}"));
    }

    pub fn gone(&self, client: u32, seq: u32, at: u64) {
        self.append(&format!("gone {client} {seq} {at}"));
    }

    /// A fault injected now, e.g. `fault(&format!("kill server {i}"))`.
    pub fn fault(&self, what: &str) {
        self.append(&format!("fault {} {what}", now_ns()));
    }

    /// A fault undone now.
    pub fn heal(&self, what: &str) {
        self.append(&format!("heal {} {what}", now_ns()));
    }

    fn append(&self, line: &str) {
        let line = format!("{line}\n");
        match (&self.file).write(line.as_bytes()) {
            Ok(n) if n == line.len() => {}
            Ok(n) => panic!("short write to the history: {n} of {} bytes", line.len()),
            Err(e) => panic!("cannot write to the history {}: {e}", self.path.display()),
        }
    }
}
