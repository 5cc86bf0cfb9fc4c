//! `redlock`: a distributed mutex for shell scripts, cron jobs and CI, using the
//! Redlock algorithm over N independent Redis masters.
//!
//! Data flows one way: `cli` (clap) → `config` (validated settings, per
//! command) → `commands` on top of `lock` (the protocol) and `supervise`
//! (processes) → one `Error` or exit status → `output` and `exit_code`.

// First of all, so that it is the first error on another OS rather than one
// in a wall of unresolved Linux calls (tests/cli/packaging.rs checks that it
// stays first).
#[cfg(not(target_os = "linux"))]
compile_error!(
    "redlock builds on Linux only: it needs CLOCK_BOOTTIME, pidfd, PR_SET_PDEATHSIG, \
     PR_SET_CHILD_SUBREAPER and /proc, which this OS does not have; see docs/platforms.md \
     for the plan for macOS"
);

/// Public for the tests: the clap definition is checked and rendered.
pub mod cli;
mod clock;
mod commands;
mod config;
mod duration;
mod error;
/// Public for the tests: the README's table is checked against it.
pub mod exit_code;
mod keeper;
mod lock;
/// Public for the tests: tests/cli/lua.rs runs the Lua scripts as each mode
/// of a call sends them (lock/scripts/compose.rs composes them).
pub mod lua {
    pub use crate::lock::{composed, composition, keys_sent, mode_of, Features};
}
mod outcome;
mod output;
mod redact;
mod repeats;
mod signals;
mod supervise;
mod test_hooks;

pub use commands::generate;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::FromArgMatches as _;

use crate::cli::Cli;
use crate::commands::Ending;
use crate::config::{Config, OutputMode};
use crate::exit_code::Exit;
use crate::output::{Event, Output};

/// The whole program: parse, run, render once, end. Never panics on bad
/// input. The only place that ends the process.
pub fn main() -> ExitCode {
    // No core dump, and no /proc/PID/{mem,environ} for other processes of
    // this user: this process holds the servers' passwords. execve resets
    // it, so the command `exec` runs (and anything it runs) dumps as usual;
    // the watchdog, a fork of this process, inherits it.
    let _ = nix::sys::prctl::set_dumpable(false);
    if version_asked() {
        return print_version().into();
    }
    let cli = match parse() {
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
    let ending = match Config::from_cli(cli) {
        Ok(config) => {
            let output = Output::new(config.output);
            for notice in &config.notices {
                output.events().say(Event::Notice(notice));
            }
            commands::dispatch(config.task, &output)
        }
        Err(error::Error::Usage(message)) => {
            let message = format!("{message}; {}", see_help());
            commands::finish(&Output::new(mode), &Err(error::Error::Usage(message)))
        }
        Err(err) => commands::finish(&Output::new(mode), &Err(err)),
    };
    end(ending)
}

/// The command line, parsed. The matches are taken apart where they are,
/// not copied first as `from_arg_matches` does. The definition the words of
/// `--help` are fitted into is built only when clap has something to show
/// (help, an error): the same parse again, for its message.
fn parse() -> Result<Cli, clap::Error> {
    use clap::CommandFactory as _;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut matches = match Cli::command().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(_) => cli::command().try_get_matches_from(args)?,
    };
    Cli::from_arg_matches_mut(&mut matches)
}

/// The version line, as clap's `--version` prints it (`cli::LONG_VERSION`).
const VERSION: &str = concat!(
    "redlock ",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_COMMIT"),
    ", built ",
    env!("BUILD_DATE"),
    ")\n"
);

/// `redlock --version` (or `-V`) alone: answered without building the clap
/// definition, which costs more than the rest of such a run.
fn version_asked() -> bool {
    let mut args = std::env::args_os().skip(1);
    match (args.next(), args.next()) {
        (Some(arg), None) => arg == "--version" || arg == "-V",
        _ => false,
    }
}

/// Prints [`VERSION`] as clap would (a closed stdout is not an error).
fn print_version() -> Exit {
    let _ = output::raw(VERSION);
    Exit::Success
}

/// Exits with the status, or dies of the signal that interrupted us, so
/// that a calling shell sees what a terminal's Ctrl-C did.
fn end(ending: Ending) -> ExitCode {
    if let Some(signal) = ending.signal {
        signals::die_of(signal);
    }
    ending.exit.into()
}

/// Help and version go to stdout with status 0; any other parse failure is one
/// line on stderr and status 64, whatever clap's own convention. A version
/// is always the long one, with the commit and the build date: clap would
/// print the short one for `-V`, and a subcommand's under its own name.
fn parse_error(err: &clap::Error) -> Exit {
    match err.kind() {
        ErrorKind::DisplayVersion => print_version(),
        ErrorKind::DisplayHelp => {
            let _ = err.print();
            Exit::Success
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            Exit::Usage
        }
        // clap's list of subcommands would include the hidden ones.
        ErrorKind::MissingSubcommand => {
            output::note(&format!(
                "a subcommand is needed: {}; see 'redlock --help'",
                subcommands()
            ));
            Exit::Usage
        }
        ErrorKind::InvalidValue if empty_variable(err).is_some() => {
            let variable = empty_variable(err).unwrap_or_default();
            output::note(&format!(
                "{variable} is set but empty: name a file in it, or unset it; {}",
                see_help()
            ));
            Exit::Usage
        }
        _ => {
            let mut message = cli::plain_flag_names(&one_line(&err.render().to_string()));
            let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
            if let Some((clap_tip, ours)) = cli::exec_tip(err, &args) {
                message = message.replace(&clap_tip, &ours);
            }
            output::note(&format!("{}; {}", redact::urls(&message), see_help()));
            Exit::Usage
        }
    }
}

/// Where to read about what went wrong: the help of the subcommand that was
/// given (a visible one), else the program's.
fn see_help() -> String {
    let command = <Cli as clap::CommandFactory>::command();
    let visible: Vec<String> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_owned())
        .collect();
    // Parsed again, errors aside: only which subcommand was given matters.
    let given = command
        .ignore_errors(true)
        .try_get_matches()
        .ok()
        .and_then(|matches| matches.subcommand_name().map(str::to_owned));
    match given {
        Some(name) if visible.contains(&name) => format!("see 'redlock {name} --help'"),
        _ => "see 'redlock --help'".to_owned(),
    }
}

/// The variable behind an empty value clap refused, when it came from the
/// environment (`REDLOCK_SERVERS_FILE=""`) rather than from the flag that
/// clap's message would name.
fn empty_variable(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(shown)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = shown.split_whitespace().next()?;
    let command = <Cli as clap::CommandFactory>::command();
    let arg = command.get_arguments().find(|arg| {
        arg.get_long()
            .is_some_and(|long| flag == format!("--{long}"))
    })?;
    let variable = arg.get_env()?;
    let on_command_line = std::env::args_os().skip(1).any(|word| {
        word == flag
            || word
                .as_encoded_bytes()
                .starts_with(format!("{flag}=").as_bytes())
    });
    let empty = std::env::var_os(variable).is_some_and(|value| value.is_empty());
    (empty && !on_command_line).then(|| variable.to_string_lossy().into_owned())
}

/// "acquire, release, …, exec or doctor": the visible subcommands, from the one
/// registry of them (the clap definition).
fn subcommands() -> String {
    let command = <Cli as clap::CommandFactory>::command();
    let names: Vec<&str> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name())
        .collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
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
    // clap's tips stand on lines of their own: keep them apart from the
    // error once the lines are joined.
    let lines = message.lines().map(|line| match line.trim_start() {
        tip if tip.starts_with("tip:") => format!("; {tip}"),
        line => line.to_owned(),
    });
    let joined = lines.collect::<Vec<_>>().join(" ");
    let words = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    words.replace(" ; tip:", "; tip:")
}

#[cfg(test)]
mod tests {
    use super::{one_line, subcommands, VERSION};

    #[test]
    fn the_quick_version_is_the_one_clap_prints() {
        let clap = crate::cli::command().render_long_version();
        assert_eq!(VERSION, clap);
        let plain = crate::cli::command().render_version();
        assert_eq!(plain, concat!("redlock ", env!("CARGO_PKG_VERSION"), "\n"));
    }

    #[test]
    fn the_missing_subcommand_message_names_every_visible_one() {
        assert_eq!(
            subcommands(),
            "acquire, release, done, extend, status, list, exec or doctor"
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
        let tip = "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a \
                   value, use '-- --bogus'\n\nUsage: redlock exec\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(tip),
            "unexpected argument '--bogus' found; tip: to pass '--bogus' as a value, use '-- --bogus'"
        );
        let no_usage = "error: invalid value 'abc' for '--ttl <DUR>': bad\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(no_usage),
            "invalid value 'abc' for '--ttl <DUR>': bad"
        );
    }
}
