//! `redlock`: a distributed mutex for shell scripts, cron jobs and CI, using the
//! Redlock algorithm over N independent Redis masters.
//!
//! Data flows one way: `cli` (clap) → `config` (validated settings) →
//! `commands` on top of `lock` (the protocol) → `output` and `exit_code`.

pub mod cli;
mod commands;
pub mod config;
pub mod duration;
pub mod exec;
pub mod exit_code;
pub mod generate;
pub mod lock;
mod output;
mod signals;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::cli::Cli;
use crate::config::{Config, ConfigError, Task};
use crate::exit_code::Exit;
use crate::lock::Redlock;

/// The whole program: parse, run, report, exit. Never panics on bad input.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return parse_error(&err).into(),
    };
    let quiet = cli.global.quiet;
    match run(cli) {
        Ok(exit) => exit.into(),
        Err(err) => {
            let exit = Exit::for_error(&err);
            if !(quiet && exit.is_expected_outcome()) {
                output::note(&format!("{err:#}"));
            }
            exit.into()
        }
    }
}

/// Runs one parsed command line and returns its exit status.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    let config = Config::from_cli(cli)?;
    let task = match config.task {
        Task::Lock(task) => task,
        Task::Generate { what, dir } => {
            generate::write(what, &dir)?;
            return Ok(Exit::Success);
        }
        Task::Watchdog { signal, plan } => {
            let acted = exec::watchdog_main(signal, plan)?;
            return Ok(if acted {
                Exit::Code(exec::WATCHDOG_ACTED)
            } else {
                Exit::Success
            });
        }
    };
    // rustls needs one process-wide crypto provider before any TLS connection;
    // an error only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let servers = config.servers;
    let redlock = Redlock::new(
        servers.specs,
        servers.timeout,
        servers.tls_root_cert.as_deref(),
    )
    .map_err(|err| ConfigError(err.to_string()))?;
    signals::reset_inherited();
    // One thread is plenty for N sockets, and it keeps the process simple to
    // reason about when it later supervises a child.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(commands::run(&redlock, task, config.output))
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
                one_line(&err.render().to_string())
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

#[cfg(test)]
mod tests {
    use super::one_line;

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
