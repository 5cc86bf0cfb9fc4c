//! Every exit status `redlock` can return, in one place: the enum, and the one
//! table from which `--help`, the man pages and the README's table derive or
//! are checked.
//!
//! The numbers follow BSD `sysexits.h` where one fits, so that scripts can tell
//! "someone else holds the lock" (75, retry later) from "the servers are down"
//! (69) and from "you typed it wrong" (64).
//!
//! A leaf: this module imports nothing of the crate.

use std::process::ExitCode;

/// The outcome of one `redlock` invocation, as the shell sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what was asked (for `status`: the lock is held).
    Success,
    /// 1: `status`: the lock is free (no token holds a majority);
    /// `doctor`: something Redlock's safety rests on is broken (with
    /// `--strict`, a warning too).
    Free,
    /// 2: `doctor`: degraded: a majority of the servers is usable now, so
    /// a lock can be taken, but not every server.
    Degraded,
    /// 64 (EX_USAGE): a bad flag, duration, name or missing token.
    Usage,
    /// 69 (EX_UNAVAILABLE): fewer than N/2+1 servers answered in time, so
    /// nothing can be decided; `doctor`: fewer than N/2+1 are usable now,
    /// and the restart guard is not why.
    NoQuorum,
    /// 70 (EX_SOFTWARE): an unexpected internal error, e.g. stdout closed.
    Internal,
    /// 75 (EX_TEMPFAIL): the lock is held by someone else (`-n`), or the
    /// `-w` wait ran out while it was; `doctor`: not ready yet, too few
    /// servers usable until the restart guard lets them count.
    Busy,
    /// 78 (EX_CONFIG): no servers configured, or a server URL, config file
    /// or TLS setting that cannot be used.
    Config,
    /// 79: `release`/`extend` found that the token no longer holds a majority.
    Lost,
    /// 80: `acquire --once-per`/`--once`: done already this period (or for
    /// this key); nothing was taken.
    Done,
    /// 81: cancelled, not failed: `--supersede`: a newer waiter replaced
    /// this one while it waited; `exec --cancel-in-progress`: a newer
    /// waiter stopped this run's command.
    Cancelled,
    /// 124: `exec`: the command ran past `--timeout` and was stopped, as
    /// `timeout(1)` exits.
    TimedOut,
    /// Signal N: interrupted by it (after releasing what was taken), or for
    /// `exec`, the command died of it. The process then dies of the signal
    /// if it received it itself and it ends a process without a core (see
    /// `Outcome::dies_of`), so that a shell sees a death, not an exit;
    /// otherwise, as a shell shows a death, the status is 128+N.
    Signal(i32),
    /// `exec`: the command's own exit status, `-E` when the lock was busy,
    /// 126/127 when the command could not be run / was not found.
    Code(u8),
}

/// One documented exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub exit: Exit,
    /// The short name the README's table starts its meaning with.
    pub name: &'static str,
    /// The line `--help` shows after the number.
    pub help: &'static str,
    /// The commands that can exit with it: each man page lists the rows of
    /// its command.
    pub commands: &'static [&'static str],
}

/// Every visible command; a test checks that it is the clap definition's list.
pub const EVERY: &[&str] = &[
    "acquire", "release", "done", "extend", "status", "list", "exec", "doctor",
];

/// Every fixed exit status, in ascending order. `128+N` and the command's own
/// status under `exec` are described where they apply.
pub const TABLE: [Row; 12] = [
    Row {
        exit: Exit::Success,
        name: "success",
        help: "success (status: the lock is held; doctor: ready, nothing unsafe)",
        commands: &[
            "acquire", "release", "done", "extend", "status", "list", "doctor",
        ],
    },
    Row {
        exit: Exit::Free,
        name: "free",
        help: "status: the lock is free; doctor: something is unsafe (--strict: or a warning)",
        commands: &["status", "doctor"],
    },
    Row {
        exit: Exit::Degraded,
        name: "degraded",
        help: "doctor: degraded: a majority is usable now (a lock can be taken), not every server",
        commands: &["doctor"],
    },
    Row {
        exit: Exit::Usage,
        name: "usage error",
        help: "usage error: bad flag, duration, name or missing token",
        commands: EVERY,
    },
    Row {
        exit: Exit::NoQuorum,
        name: "no quorum",
        help: "no quorum: fewer than N/2+1 servers answered (doctor: are usable now)",
        commands: EVERY,
    },
    Row {
        exit: Exit::Internal,
        name: "internal error",
        help: "internal error",
        commands: EVERY,
    },
    Row {
        exit: Exit::Busy,
        name: "busy",
        help: "busy: held by someone else (-n), or the -w wait ran out; doctor: not ready yet",
        commands: &["acquire", "exec", "doctor"],
    },
    Row {
        exit: Exit::Config,
        name: "configuration error",
        help: "configuration error: no servers, bad server URL, config file, TLS setting or \
               credentials",
        commands: EVERY,
    },
    Row {
        exit: Exit::Lost,
        name: "lost / not held",
        help: "lost / not held: the token no longer holds a majority",
        commands: &["release", "done", "extend", "exec"],
    },
    Row {
        exit: Exit::Done,
        name: "done already",
        help:
            "done already: acquire --once-per/--once: the period (or key) was done; nothing taken",
        commands: &["acquire"],
    },
    Row {
        exit: Exit::Cancelled,
        name: "cancelled",
        help: "cancelled, not failed: a newer --supersede waiter replaced or stopped this one",
        commands: &["acquire", "exec"],
    },
    Row {
        exit: Exit::TimedOut,
        name: "timed out",
        help: "timed out: exec's command ran past --timeout and was stopped",
        commands: &["exec"],
    },
];

/// The status of [`Exit::Signal`], which has no fixed number, what it
/// means, and the commands that catch the signals to release what they took
/// (the others just die of them): the last row of their man pages' EXIT
/// STATUS.
pub const SIGNAL_ROW: (&str, &str, &[&str]) = (
    "128+N",
    "interrupted by signal N (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM): releases what \
     was taken, then dies of the signal; a shell shows 128+N",
    &["acquire", "exec"],
);

/// The rows of [`TABLE`] that `command` can exit with, in order.
pub fn rows_of(command: &str) -> impl Iterator<Item = &'static Row> + '_ {
    TABLE
        .iter()
        .filter(move |row| row.commands.contains(&command))
}

/// The "Exit codes:" block of `redlock --help`, rendered from [`TABLE`].
pub fn help_text() -> String {
    let mut text = String::from("Exit codes:");
    for row in TABLE {
        text.push_str(&format!("\n  {:<4}{}", row.exit.code(), row.help));
    }
    text
}

impl Exit {
    /// The numeric status passed to the operating system.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Free => 1,
            Exit::Degraded => 2,
            Exit::Usage => 64,
            Exit::NoQuorum => 69,
            Exit::Internal => 70,
            Exit::Busy => 75,
            Exit::Config => 78,
            Exit::Lost => 79,
            Exit::Done => 80,
            Exit::Cancelled => 81,
            Exit::TimedOut => 124,
            Exit::Signal(signal) => u8::try_from(128 + signal.clamp(0, 127)).unwrap_or(u8::MAX),
            Exit::Code(code) => code,
        }
    }

    /// Whether this is an outcome a script expects and `-q` silences, rather
    /// than an error someone has to look at.
    pub fn is_expected_outcome(self) -> bool {
        matches!(
            self,
            Exit::Free | Exit::Busy | Exit::Lost | Exit::Done | Exit::Cancelled
        )
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fixed status. The match in `is_fixed` is exhaustive on purpose:
    /// a new variant does not compile until it is sorted there, and a fixed
    /// one then belongs here, where the test below demands its row.
    const FIXED: [Exit; 12] = [
        Exit::Success,
        Exit::Free,
        Exit::Degraded,
        Exit::Usage,
        Exit::NoQuorum,
        Exit::Internal,
        Exit::Busy,
        Exit::Config,
        Exit::Lost,
        Exit::Done,
        Exit::Cancelled,
        Exit::TimedOut,
    ];

    fn is_fixed(exit: Exit) -> bool {
        match exit {
            Exit::Success
            | Exit::Free
            | Exit::Degraded
            | Exit::Usage
            | Exit::NoQuorum
            | Exit::Internal
            | Exit::Busy
            | Exit::Config
            | Exit::Lost
            | Exit::Done
            | Exit::Cancelled
            | Exit::TimedOut => true,
            Exit::Signal(_) | Exit::Code(_) => false,
        }
    }

    #[test]
    fn every_fixed_status_has_one_row() {
        assert!(FIXED.iter().all(|&exit| is_fixed(exit)));
        for exit in FIXED {
            let rows = TABLE.iter().filter(|row| row.exit == exit).count();
            assert_eq!(rows, 1, "{exit:?} has {rows} rows in TABLE");
        }
        assert_eq!(
            TABLE.len(),
            FIXED.len(),
            "TABLE has a row for no fixed status"
        );
        let codes: Vec<u8> = TABLE.iter().map(|row| row.exit.code()).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            codes, sorted,
            "TABLE must be in ascending order, no repeats"
        );
    }

    #[test]
    fn codes_are_the_documented_numbers() {
        let expected = [0, 1, 2, 64, 69, 70, 75, 78, 79, 80, 81, 124];
        let codes: Vec<u8> = TABLE.iter().map(|row| row.exit.code()).collect();
        assert_eq!(codes, expected);
        assert_eq!(Exit::Signal(2).code(), 130);
        assert_eq!(Exit::Signal(15).code(), 143);
        assert_eq!(Exit::Signal(9).code(), 137);
        assert_eq!(Exit::Code(7).code(), 7);
    }

    #[test]
    fn help_text_has_one_line_per_row() {
        let help = help_text();
        let lines: Vec<&str> = help.lines().collect();
        assert_eq!(lines[0], "Exit codes:");
        assert_eq!(lines.len(), TABLE.len() + 1);
        assert_eq!(
            lines[1],
            "  0   success (status: the lock is held; doctor: ready, nothing unsafe)"
        );
        assert_eq!(
            lines[4],
            "  64  usage error: bad flag, duration, name or missing token"
        );
    }

    /// The numeric rows of the README's "Exit codes" table, as
    /// `(code, meaning)`.
    fn readme_rows(readme: &str) -> Vec<(u8, String)> {
        let section = readme
            .split("\n## Exit codes")
            .nth(1)
            .expect("README has an '## Exit codes' section");
        let section = section.split("\n## ").next().unwrap_or(section);
        section
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let code = cells.get(1)?.parse().ok()?;
                Some((code, cells.get(2)?.to_string()))
            })
            .collect()
    }

    #[test]
    fn the_readme_table_has_exactly_the_rows_of_table() {
        let readme = readme_rows(include_str!("../README.md"));
        let table: Vec<(u8, &str)> = TABLE
            .iter()
            .map(|row| (row.exit.code(), row.name))
            .collect();
        let codes = |rows: &[(u8, String)]| rows.iter().map(|(code, _)| *code).collect::<Vec<_>>();
        assert_eq!(
            codes(&readme),
            table.iter().map(|(code, _)| *code).collect::<Vec<_>>(),
            "the README's exit-code table and exit_code::TABLE list different codes"
        );
        for ((code, meaning), (_, name)) in readme.iter().zip(&table) {
            assert!(
                meaning.starts_with(name),
                "README row {code} says '{meaning}', TABLE names it '{name}'"
            );
        }
    }

    #[test]
    fn the_readme_check_fails_when_a_row_is_missing_or_extra() {
        let readme = include_str!("../README.md");
        let full = readme_rows(readme);
        let without_79: String = readme
            .lines()
            .filter(|line| !line.starts_with("| 79 |"))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_eq!(readme_rows(&without_79).len(), full.len() - 1);
        let with_80 = readme.replacen("\n| 79 |", "\n| 80 | extra | invented |\n| 79 |", 1);
        assert_eq!(readme_rows(&with_80).len(), full.len() + 1);
    }
}
