//! Every byte `redlock` writes to stdout and stderr. A run ends with one
//! [`Output::render`] of its outcome or failure, through the format chosen
//! once from the options (text or `--json`); while it runs, a command says
//! what happens through [`Events`], the one narrow sink it is given.
//! Nothing here panics on a closed pipe: a failed write to stdout is
//! returned to the caller, who decides what it costs.

mod event;
mod format;
mod json;
mod progress;
mod text;
mod words;

use std::io::{self, Write};

use crate::config::OutputMode;
use crate::exit_code::Exit;
use crate::lock::{LockKey, Wait};
use crate::outcome::{Failed, Outcome};
use format::{Format, Level, Piece};

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
}

impl Output {
    pub fn new(mode: OutputMode) -> Output {
        let format: Box<dyn Format> = if mode.json {
            Box::new(json::Json)
        } else {
            Box::new(text::Text { quiet: mode.quiet })
        };
        Output { mode, format }
    }

    pub fn events(&self) -> Events {
        Events { mode: self.mode }
    }

    /// Writes how the run ended; the error is a write to stdout that
    /// failed (a closed pipe), which the caller weighs.
    pub fn render(&self, result: Result<&Outcome, &Failed<'_>>, exit: Exit) -> io::Result<()> {
        let pieces = match result {
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

/// stdout was closed (`| head`, `| true`) after the operation was done:
/// the operation's own status stands, and this says what was lost.
pub fn unwritten(error: &io::Error) {
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
