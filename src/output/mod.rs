//! Every byte `redlock` writes to stdout and stderr. A run ends with one
//! [`Output::render`] of its outcome or failure, through the format chosen
//! once from the options (text or `--json`); while it runs, a command says
//! what happens through [`Events`], the one narrow sink it is given.
//! Nothing here panics on a closed pipe: a failed write to stdout is
//! returned to the caller, who decides what it costs; a reader that went
//! away early (`| head`) costs nothing and is not mentioned.

mod closed;
mod doctor;
mod event;
mod format;
mod json;
mod progress;
mod text;
mod words;

use std::io::{self, Write};

use crate::config::OutputMode;
use crate::exit_code::Exit;
use crate::lock::{self, LockKey, Wait};
use crate::outcome::{Failed, Outcome};
use format::{Format, Level, Piece};

pub use closed::stdout_was_closed;
pub use event::Event;
pub use progress::Progress;

/// The sink for what happens while a command runs.
#[derive(Debug, Clone, Copy)]
pub struct Events {
    mode: OutputMode,
}

impl Events {
    pub fn say(&self, event: Event<'_>) {
        let (level, text) = text::event(&event);
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
        self.mode.verbose || self.mode.json
    }

    /// What a wait for `key` shows while it lasts (nothing without a wait).
    pub fn progress(&self, key: &LockKey, wait: Wait) -> Progress {
        let style = progress::Style::for_stderr(self.mode.quiet, self.mode.verbose);
        Progress::new(key, wait, style)
    }
}

/// The run's output, in the format chosen once.
pub struct Output {
    mode: OutputMode,
    format: Box<dyn Format>,
    /// How far `list`'s stdout has got while it is written in batches.
    listing: std::cell::RefCell<Listing>,
}

/// `list`'s stdout so far: whether its header (or the JSON object's
/// opening) and a lock are out, the table's column widths, and a write
/// that failed (nothing more is written after it).
#[derive(Default)]
struct Listing {
    opened: bool,
    any: bool,
    widths: [usize; 4],
    failed: Option<io::Error>,
}

impl Output {
    pub fn new(mode: OutputMode) -> Output {
        let format: Box<dyn Format> = if mode.json {
            Box::new(json::Json)
        } else {
            Box::new(text::Text { quiet: mode.quiet })
        };
        Output {
            mode,
            format,
            listing: Default::default(),
        }
    }

    /// One batch of `list`'s locks, written as soon as it is read, so that
    /// a listing of any size holds one batch in memory. `-q` writes no
    /// table; a failed write (a closed pipe) stops the writing, and the end
    /// of the listing says so.
    pub fn listed(&self, batch: &lock::Listing) {
        let mut state = self.listing.borrow_mut();
        if state.failed.is_some() || (self.mode.quiet && !self.mode.json) {
            return;
        }
        let entries = batch.entries();
        let written = if self.mode.json {
            let comma = if state.any { "," } else { "" };
            let opening = match state.opened {
                true => String::new(),
                false => json::list_opening(batch).unwrap_or_default(),
            };
            json::list_locks(&entries).and_then(|locks| raw(&format!("{opening}{comma}{locks}")))
        } else {
            let header = !state.opened;
            line(&text::list_rows(&entries, &mut state.widths, header))
        };
        state.opened = true;
        state.any |= !entries.is_empty();
        if let Err(err) = written {
            state.failed = Some(err);
        }
    }

    /// One batch of `list --names`: its names, one a line, and nothing
    /// else (nothing at all under `-q`).
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

    /// The end of `list --json`'s object (its opening too if no lock was
    /// written), after the batches.
    fn listing_end(&self, listing: &lock::Listing) -> io::Result<Option<String>> {
        let mut state = self.listing.borrow_mut();
        if let Some(err) = state.failed.take() {
            return Err(err);
        }
        if !self.mode.json {
            return Ok(None);
        }
        let opening = match state.opened {
            true => String::new(),
            false => json::list_opening(listing)?,
        };
        Ok(Some(format!("{opening}{}", json::list_closing(listing)?)))
    }

    pub fn events(&self) -> Events {
        Events { mode: self.mode }
    }

    /// Writes how the run ended; the error is a write to stdout that
    /// failed (a closed pipe), which the caller weighs.
    pub fn render(&self, result: Result<&Outcome, &Failed<'_>>, exit: Exit) -> io::Result<()> {
        let pieces = match result {
            Ok(outcome @ Outcome::Listed(listing)) => {
                text::pieces(outcome, self.listing_end(listing)?, self.mode.json)
            }
            Ok(outcome) => text::pieces(outcome, self.format.outcome(outcome)?, self.mode.json),
            Err(failed) => {
                let level = if exit.is_expected_outcome() {
                    Level::Expected
                } else {
                    Level::Warning
                };
                let stdout = self.format.failure(failed)?;
                let message = Piece::Stderr(level, text::failure(failed));
                stdout
                    .map(Piece::Stdout)
                    .into_iter()
                    .chain([message])
                    .collect()
            }
        };
        for piece in pieces {
            match piece {
                Piece::Stdout(text) => line(&text)?,
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

/// Writes `text` to stdout as it is, no newline: part of a line.
fn raw(text: &str) -> io::Result<()> {
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
