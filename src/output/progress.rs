//! What a waiting `acquire` or `exec` says while it waits: whom it waits
//! for, how long it has waited and may still wait, or that the servers are
//! out of reach. One line updated in place on a terminal; on a pipe, in CI
//! or under `-v`, a line every ten seconds. Nothing in the first second, so
//! that a lock that frees quickly says nothing.
//!
//! The commands drive it: [`Progress::saw`] after each failed attempt,
//! [`Progress::tick`] from a timer (an attempt may hang until the server
//! timeout), [`Progress::finish`] when the wait ends.

use std::io::{self, IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use super::words;
use crate::duration::{exact as human, rounded};
use crate::lock::{LockError, LockKey, Wait};
use crate::test_hooks;

/// How long a wait stays silent.
const FIRST_AFTER: Duration = Duration::from_secs(1);

/// How often a terminal's line is refreshed.
const REFRESH: Duration = Duration::from_secs(1);

/// How often a new line is written where lines cannot be replaced.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Not at all (`-q`, or no waiting).
    Off,
    /// One line rewritten in place; cut to the terminal's width if known.
    InPlace { width: Option<usize> },
    /// A line every `every`, with per-server detail under `-v`.
    Lines { every: Duration, detail: bool },
}

/// Where stderr goes and what was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub quiet: bool,
    pub verbose: bool,
    /// stderr is a terminal.
    pub terminal: bool,
    /// The environment says CI (`CI` set).
    pub ci: bool,
}

impl Style {
    /// The style for `setting`. A terminal in CI is a log, and `-v` writes
    /// a line per attempt that an in-place line would tear: both get lines.
    fn choose(setting: Setting, every: Duration) -> Style {
        if setting.quiet {
            Style::Off
        } else if setting.terminal && !setting.ci && !setting.verbose {
            Style::InPlace { width: None }
        } else {
            Style::Lines {
                every,
                detail: setting.verbose,
            }
        }
    }

    /// The style for this process's stderr and environment.
    pub fn for_stderr(quiet: bool, verbose: bool) -> Style {
        let terminal = io::stderr().is_terminal();
        let setting = Setting {
            quiet,
            verbose,
            terminal,
            ci: std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()),
        };
        match Style::choose(setting, line_every()) {
            Style::InPlace { .. } => Style::InPlace {
                width: terminal_size::terminal_size_of(io::stderr())
                    .map(|(width, _)| usize::from(width.0)),
            },
            style => style,
        }
    }
}

/// [`LINE_EVERY`]; tests may shorten it ([`test_hooks::progress_every`]).
fn line_every() -> Duration {
    test_hooks::progress_every().unwrap_or(LINE_EVERY)
}

/// Whether a line is due after `waited`, when the last one was shown at
/// `last` (after that much waiting) and lines come every `every`.
fn due(waited: Duration, last: Option<Duration>, every: Duration) -> bool {
    match last {
        None => waited >= FIRST_AFTER,
        Some(last) => waited.saturating_sub(last) >= every,
    }
}

/// The progress of one wait for a lock.
#[derive(Debug)]
pub struct Progress {
    key: LockKey,
    /// How long the wait may last (`-w`); `None` for ever.
    limit: Option<Duration>,
    style: Style,
    started: Instant,
    /// What the last attempt met, and the detail under `-v`.
    situation: Option<(String, Vec<String>)>,
    /// When the last line was shown, as time waited.
    last: Option<Duration>,
    /// A line is on the terminal that [`Self::finish`] must clear.
    on_screen: bool,
}

impl Progress {
    /// The progress of a wait for `key`: nothing shown without a wait.
    pub fn new(key: &LockKey, wait: Wait, style: Style) -> Progress {
        let (style, limit) = match wait {
            Wait::No => (Style::Off, None),
            Wait::For(limit) => (style, Some(limit)),
            Wait::Forever => (style, None),
        };
        Progress {
            key: key.clone(),
            limit,
            style,
            started: Instant::now(),
            situation: None,
            last: None,
            on_screen: false,
        }
    }

    /// What a failed attempt met.
    pub fn saw(&mut self, error: &LockError) {
        if self.style != Style::Off {
            self.situation = Some((words::waiting(error), detail(error)));
        }
    }

    /// Shows the progress if it is due.
    pub fn tick(&mut self) {
        if let Some(text) = self.due_text(self.started.elapsed()) {
            let _ = io::stderr().lock().write_all(text.as_bytes());
        }
    }

    /// The wait is over: a line left on the terminal is cleared, so that
    /// what comes next starts on a clean line.
    pub fn finish(&mut self) {
        if std::mem::take(&mut self.on_screen) {
            let _ = io::stderr().lock().write_all(CLEAR_LINE.as_bytes());
        }
    }

    /// What to write after `waited`, if anything is due.
    fn due_text(&mut self, waited: Duration) -> Option<String> {
        let every = match self.style {
            Style::Off => return None,
            Style::InPlace { .. } => REFRESH,
            Style::Lines { every, .. } => every,
        };
        if !due(waited, self.last, every) {
            return None;
        }
        self.last = Some(waited);
        let line = self.line(waited);
        Some(match self.style {
            Style::InPlace { width } => {
                self.on_screen = true;
                format!("{CLEAR_LINE}{}", cut_to(&line, width))
            }
            Style::Lines { detail: true, .. } => {
                let detail = self.situation.iter().flat_map(|(_, detail)| detail);
                let mut text = format!("{line}\n");
                for item in detail {
                    text.push_str(&format!("redlock:   {item}\n"));
                }
                text
            }
            _ => format!("{line}\n"),
        })
    }

    /// `redlock: waiting for "NAME", held by WHO; expires in D; waited W of L`.
    fn line(&self, waited: Duration) -> String {
        let situation = self.situation.as_ref().map_or(
            ": no attempt has been answered yet (the servers are slow to answer)",
            |(situation, _)| situation.as_str(),
        );
        let waited = match self.limit {
            Some(limit) => format!("waited {} of {}", rounded(waited), human(limit)),
            None => format!("waited {}", rounded(waited)),
        };
        format!("redlock: waiting for {}{situation}; {waited}", self.key)
    }
}

/// Back to the line's start, and clear to its end.
const CLEAR_LINE: &str = "\r\x1b[K";

/// `line` cut so that it fits a terminal `width` columns wide without
/// wrapping (a wrapped line could not be rewritten in place).
fn cut_to(line: &str, width: Option<usize>) -> &str {
    let Some(width) = width.filter(|w| *w > 1) else {
        return line;
    };
    match line.char_indices().nth(width - 1) {
        Some((end, _)) => &line[..end],
        None => line,
    }
}

/// Under `-v`: what each server holds, and why each failed one failed.
fn detail(error: &LockError) -> Vec<String> {
    let (held_on, failures) = match error {
        LockError::Busy {
            held_on, failures, ..
        } => (held_on.as_slice(), failures),
        LockError::NoQuorum { failures, .. } | LockError::Restarting { failures, .. } => {
            (&[][..], failures)
        }
        _ => return Vec::new(),
    };
    let held = held_on
        .iter()
        .map(|(server, held_by)| format!("{server}: held by {}", words::held_by(held_by)));
    let failed = failures
        .0
        .iter()
        .map(|(server, err)| format!("{server}: unreachable: {err}"));
    held.chain(failed).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::Failures;

    fn setting() -> Setting {
        Setting {
            quiet: false,
            verbose: false,
            terminal: false,
            ci: false,
        }
    }

    #[test]
    fn the_first_line_comes_after_a_second_then_every_ten_on_a_pipe() {
        let ms = Duration::from_millis;
        assert!(!due(ms(999), None, LINE_EVERY));
        assert!(due(ms(1000), None, LINE_EVERY));
        assert!(!due(ms(10_999), Some(ms(1000)), LINE_EVERY));
        assert!(due(ms(11_000), Some(ms(1000)), LINE_EVERY));
        assert_eq!(LINE_EVERY, Duration::from_secs(10));
    }

    #[test]
    fn a_terminal_gets_one_line_and_a_log_gets_lines() {
        let every = LINE_EVERY;
        let lines = Style::Lines {
            every,
            detail: false,
        };
        assert_eq!(Style::choose(setting(), every), lines);
        let terminal = Setting {
            terminal: true,
            ..setting()
        };
        assert_eq!(
            Style::choose(terminal, every),
            Style::InPlace { width: None }
        );
        let ci = Setting {
            ci: true,
            ..terminal
        };
        assert_eq!(Style::choose(ci, every), lines);
        let verbose = Setting {
            verbose: true,
            ..terminal
        };
        assert_eq!(
            Style::choose(verbose, every),
            Style::Lines {
                every,
                detail: true
            }
        );
        let quiet = Setting {
            quiet: true,
            ..terminal
        };
        assert_eq!(Style::choose(quiet, every), Style::Off);
    }

    #[test]
    fn a_line_names_the_situation_and_the_time_waited() {
        let key = LockKey::new(b"deploy".to_vec());
        let style = Style::Lines {
            every: LINE_EVERY,
            detail: false,
        };
        let mut progress = Progress::new(&key, Wait::For(Duration::from_secs(30)), style);
        assert_eq!(progress.due_text(Duration::from_millis(500)), None);
        progress.saw(&LockError::NoQuorum {
            key: key.clone(),
            failed: 3,
            total: 5,
            quorum: 3,
            failures: Failures::default(),
            token: None,
        });
        assert_eq!(
            progress.due_text(Duration::from_millis(3400)).as_deref(),
            Some(
                "redlock: waiting for \"deploy\": 3 of 5 servers unreachable, and a \
                 majority is 3; waited 3s of 30s\n"
            )
        );
        assert_eq!(progress.due_text(Duration::from_secs(5)), None);
    }

    #[test]
    fn a_terminal_line_is_rewritten_in_place_and_cut_to_fit() {
        let key = LockKey::new(b"deploy".to_vec());
        let mut progress = Progress::new(&key, Wait::Forever, Style::InPlace { width: Some(30) });
        let text = progress.due_text(Duration::from_secs(2)).unwrap();
        assert_eq!(text, "\r\x1b[Kredlock: waiting for \"deploy\"");
        assert!(progress.on_screen);
        assert_eq!(cut_to("ab", Some(30)), "ab");
        assert_eq!(cut_to("ééé", Some(3)), "éé");
    }
}
