//! Every byte `redlock` writes to stdout and stderr. A run ends with one
//! [`Output::render`] of its outcome or failure, through the [`Format`]
//! (text or `--json`, one implementation each) chosen once from the
//! options, which alone decides what differs between the two; `list`
//! streams through the same format a batch at a time; while it runs, a
//! command says what happens through [`Events`], the one narrow sink it is
//! given.
//! Nothing here panics on a closed pipe: a failed write to stdout is
//! returned to the caller, who decides what it costs; a reader that went
//! away early (`| head`) costs nothing and is not mentioned.

mod closed;
mod doctor;
mod event;
mod format;
mod json;
mod progress;
mod said;
mod text;
mod words;

use std::io::{self, Write};

use crate::config::OutputMode;
use crate::exit_code::Exit;
use crate::lock::{self, LockKey, Wait};
use crate::outcome::{Failed, Outcome};
use format::{Format, Level, Piece, SoFar};

pub use closed::stdout_was_closed;
pub use event::Event;
pub use progress::Progress;

/// The sink for what happens while a command runs.
#[derive(Debug, Clone, Copy)]
pub struct Events {
    mode: OutputMode,
    /// What the format asks for: see [`Events::shows_every_answer`].
    every_answer: bool,
}

impl Events {
    pub fn say(&self, event: Event<'_>) {
        let (level, text) = said::event(&event);
        say(self.mode, level, &text);
    }

    /// Whether `-v` asked for the details (what a server that did not count
    /// said of itself, say), which may be worth a moment's wait.
    pub fn verbose(&self) -> bool {
        self.mode.verbose
    }

    /// Whether every server's answer is shown: under `-v`, and in JSON
    /// (`held_on`, `released_on` list each server that said yes).
    pub fn shows_every_answer(&self) -> bool {
        self.every_answer
    }

    /// What a wait for `key` shows while it lasts (nothing without a wait).
    pub fn progress(&self, key: &LockKey, wait: Wait) -> Progress {
        let style = progress::Style::for_stderr(self.mode.quiet, self.mode.verbose);
        Progress::new(key, wait, style)
    }
}

/// The run's output, in the format chosen once: the one writer of stdout
/// and stderr, of what the format gives it and of the words around it.
pub struct Output {
    mode: OutputMode,
    format: Box<dyn Format>,
    /// How far `list`'s stdout has got while it is written in batches.
    listing: std::cell::RefCell<Listing>,
}

/// `list`'s stdout so far, and a write that failed (nothing more is
/// written after it).
#[derive(Default)]
struct Listing {
    so_far: SoFar,
    failed: Option<io::Error>,
}

impl Output {
    pub fn new(mode: OutputMode) -> Output {
        // The one place the format is chosen.
        let format: Box<dyn Format> = match mode.json {
            true => Box::new(json::Json),
            false => Box::new(text::Text {
                quiet: mode.quiet,
                verbose: mode.verbose,
            }),
        };
        Output {
            mode,
            format,
            listing: Default::default(),
        }
    }

    /// One batch of `list`'s locks, written as soon as it is read, so that
    /// a listing of any size holds one batch in memory. A failed write (a
    /// closed pipe) stops the writing, and the end of the listing says so.
    pub fn listed(&self, batch: &lock::Listing) {
        let mut state = self.listing.borrow_mut();
        if state.failed.is_some() {
            return;
        }
        let written = self
            .format
            .list_batch(batch, &mut state.so_far)
            .and_then(|pieces| self.write(pieces));
        if let Err(err) = written {
            state.failed = Some(err);
        }
    }

    /// One batch of `list --names`: its names, one a line, and nothing
    /// else (nothing at all under `-q`), in either format.
    pub fn listed_names(&self, batch: &lock::Listing) {
        let mut state = self.listing.borrow_mut();
        let entries = batch.entries();
        if state.failed.is_some() || self.mode.quiet || entries.is_empty() {
            return;
        }
        if let Err(err) = line(&text::list_names(&entries)) {
            state.failed = Some(err);
        }
    }

    /// What the format writes at the end of `list`, after the batches; a
    /// write of a batch that failed, if one did.
    fn listing_end(&self, listing: &lock::Listing) -> io::Result<Option<Piece>> {
        let mut state = self.listing.borrow_mut();
        if let Some(err) = state.failed.take() {
            return Err(err);
        }
        self.format.list_end(listing, &state.so_far)
    }

    pub fn events(&self) -> Events {
        Events {
            mode: self.mode,
            every_answer: self.format.shows_every_answer(),
        }
    }

    /// Writes how the run ended; the error is a write to stdout that
    /// failed (a closed pipe), which the caller weighs.
    pub fn render(&self, result: Result<&Outcome, &Failed<'_>>, exit: Exit) -> io::Result<()> {
        let pieces = match result {
            Ok(outcome @ Outcome::Listed(listing)) => {
                said::pieces(outcome, self.listing_end(listing)?)
            }
            Ok(outcome) => {
                let stdout = self.format.outcome(outcome)?.map(Piece::Stdout);
                said::pieces(outcome, stdout)
            }
            Err(failed) => {
                let level = if exit.is_expected_outcome() {
                    Level::Expected
                } else {
                    Level::Warning
                };
                let stdout = self.format.failure(failed)?;
                let message = Piece::Stderr(level, said::failure(failed));
                stdout
                    .map(Piece::Stdout)
                    .into_iter()
                    .chain([message])
                    .collect()
            }
        };
        self.write(pieces)
    }

    /// Writes `pieces` in order; stops at a write to stdout that failed.
    fn write(&self, pieces: Vec<Piece>) -> io::Result<()> {
        for piece in pieces {
            match piece {
                Piece::Stdout(text) => line(&text)?,
                Piece::Partial(text) => raw(&text)?,
                Piece::Stderr(level, text) => say(self.mode, level, &text),
            }
        }
        Ok(())
    }
}

/// stdout could not take the result after the operation was done: the
/// operation's own status stands. A reader that went away (`| head`,
/// `| true`: EPIPE) is no error, as for coreutils, so nothing is said of
/// it; any other failure (a full disk) says what was lost.
pub fn unwritten(error: &io::Error) {
    if error.kind() == io::ErrorKind::BrokenPipe {
        return;
    }
    note(&format!(
        "the result could not be written to stdout: {error}"
    ));
}

fn say(mode: OutputMode, level: Level, text: &str) {
    let shown = match level {
        Level::Verbose => mode.verbose,
        Level::Expected => !mode.quiet,
        Level::Warning => true,
    };
    if shown {
        note(text);
    }
}

/// Writes `text` to stdout as it is, no newline: part of a line (or,
/// for `--version`, a line with its own newline).
pub fn raw(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
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
