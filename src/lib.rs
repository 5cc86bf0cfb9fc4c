//! `redlock`: a distributed mutex for shell scripts, cron jobs and CI, using the
//! Redlock algorithm over N independent Redis masters.
//!
//! Data flows one way: `cli` (clap) → `config` (validated settings, per
//! command) → `commands` on top of `lock` (the protocol) and `supervise`
//! (processes) → one `Error` or exit status → `output` and `exit_code`.

pub mod cli;
pub mod clock;
mod commands;
pub mod config;
pub mod duration;
pub mod error;
pub mod exit_code;
pub mod lock;
mod output;
mod signals;
pub mod supervise;

pub use commands::generate;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::cli::Cli;
use crate::config::Config;
use crate::exit_code::Exit;
use crate::output::{OutputMode, Reporter};

/// The whole program: parse, run, report, exit. Never panics on bad input.
/// The only place that decides how the process ends.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return parse_error(&err).into(),
    };
    // Errors found before the config is whole are reported under the
    // options as given.
    let mode = OutputMode {
        json: cli.global.json,
        quiet: cli.global.quiet,
        verbose: cli.global.verbose,
    };
    let out = Reporter::new(mode);
    let result = Config::from_cli(cli).and_then(|config| {
        let out = Reporter::new(config.output);
        for notice in &config.notices {
            out.notice(notice);
        }
        commands::dispatch(config.task, out)
    });
    match result {
        // An interrupted wait, or an `exec` whose command died of the signal
        // we passed on, dies of that signal (signals::end decides).
        Ok(exit) => signals::end(exit),
        Err(err) => {
            out.error(&err);
            err.exit().into()
        }
    }
}

/// Help and version go to stdout with status 0; any other parse failure is one
/// line on stderr and status 64, whatever clap's own convention.
fn parse_error(err: &clap::Error) -> Exit {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            Exit::Success
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            Exit::Usage
        }
        // clap's list of subcommands would include the hidden ones.
        ErrorKind::MissingSubcommand => {
            output::note(
                "a subcommand is needed: acquire, release, extend, status or exec; see 'redlock --help'",
            );
            Exit::Usage
        }
        _ => {
            output::note(&format!(
                "{}; see 'redlock --help'",
                redact_urls(&one_line(&err.render().to_string()))
            ));
            Exit::Usage
        }
    }
}

/// clap's multi-line message (error, tips, usage) as one line, without the usage.
fn one_line(message: &str) -> String {
    let message = message.split("\nUsage:").next().unwrap_or(message);
    let message = message
        .split("For more information")
        .next()
        .unwrap_or(message);
    let message = message.trim().trim_start_matches("error:").trim();
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// clap quotes the arguments it did not expect, and those may be server URLs
/// with passwords: every word that could hold user-info is redacted.
fn redact_urls(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            let inner = word.trim_matches(|c| c == '\'' || c == '"');
            if inner.contains('@') || inner.contains("://") {
                word.replace(inner, &lock::redact_url(inner))
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::{one_line, redact_urls};

    #[test]
    fn urls_in_usage_errors_are_redacted() {
        assert_eq!(
            redact_urls("unexpected argument 'redis://:pw@h:2' found"),
            "unexpected argument 'redis://:***@h:2' found"
        );
        assert_eq!(redact_urls("'u:pw@h:1'"), "'u:***@h:1'");
        assert_eq!(
            redact_urls("invalid value '-5s' for '--ttl <DUR>'"),
            "invalid value '-5s' for '--ttl <DUR>'"
        );
    }

    #[test]
    fn clap_errors_become_one_line() {
        let clap = "error: the following required arguments were not provided:\n  <NAME>\n\n\
                    Usage: redlock acquire <NAME>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(clap),
            "the following required arguments were not provided: <NAME>"
        );
        let no_usage = "error: invalid value 'abc' for '--ttl <DUR>': bad\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(no_usage),
            "invalid value 'abc' for '--ttl <DUR>': bad"
        );
    }
}
