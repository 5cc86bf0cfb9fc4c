//! The command line as clap sees it. Only parsing lives here; `config`
//! validates the values and turns them into settings.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::duration;

const EXIT_CODES: &str = "\
Exit codes:
  0   success (status: the lock is held)
  1   status: the lock is free
  64  usage error: bad flag, duration, name or missing token
  69  no quorum: fewer than N/2+1 servers answered
  70  internal error
  75  busy: held by someone else (-n), or the -w wait ran out
  78  configuration error: unusable server URL or TLS setting
  79  lost / not held: the token no longer holds a majority";

/// A distributed mutex for shell scripts, cron jobs and CI pipelines: the
/// Redlock algorithm over N independent Redis masters.
#[derive(Debug, Parser)]
#[command(
    name = "redlock",
    version,
    propagate_version = true,
    disable_help_subcommand = true,
    after_help = EXIT_CODES,
    long_about = "A distributed mutex for shell scripts, cron jobs and CI pipelines.\n\n\
        redlock takes a lock on N independent Redis masters with the Redlock algorithm: \
        the same key and a random token are written to every server at once, and the lock \
        counts only when a majority (N/2+1) took it within its validity time."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// A Redis master: redis://[user:pass@]host[:port][/db], rediss:// for TLS, or
    /// redis+unix:///path[?db=N&pass=P]. Repeat it or separate URLs with commas for N
    /// masters; a bare host:port means redis://. [default: redis://127.0.0.1:6379]
    #[arg(
        short = 's',
        long = "server",
        value_name = "URL",
        env = "REDLOCK_SERVERS",
        hide_env_values = true,
        value_delimiter = ',',
        global = true
    )]
    pub servers: Vec<String>,

    /// Bound for connecting to each server and for each reply. Default: 250ms, or a
    /// fifth of --ttl when that is shorter; an explicit value must be below a third of
    /// --ttl.
    #[arg(long, value_name = "DUR", env = "REDLOCK_SERVER_TIMEOUT", value_parser = duration::parse, global = true)]
    pub server_timeout: Option<Duration>,

    /// PEM file of the CA that signed the servers' certificates, for rediss:// URLs
    /// (instead of the system's roots).
    #[arg(long, value_name = "FILE", env = "REDLOCK_TLS_CA_CERT", global = true)]
    pub tls_ca_cert: Option<std::path::PathBuf>,

    /// Prepended to every lock name to form the Redis key (empty by default).
    #[arg(long, value_name = "PREFIX", env = "REDLOCK_PREFIX", global = true)]
    pub prefix: Option<OsString>,

    /// Print a result as one JSON object on stdout.
    #[arg(long, global = true)]
    pub json: bool,

    /// Say nothing on stderr about expected outcomes (busy, free, not held); only
    /// errors are printed.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Describe each step on stderr: servers, timings, validity.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Take the lock and print its token on stdout. Blocks until the lock is free
    /// unless -n or -w is given.
    #[command(
        after_help = "Example:\n  tok=$(redlock acquire -w 30s nightly-report) || exit\n  \
        trap 'redlock release nightly-report \"$tok\"' EXIT"
    )]
    Acquire(AcquireArgs),

    /// Release the lock, if TOKEN still holds it.
    Release(TokenArgs),

    /// Push the lock's expiry out to --ttl from now, if TOKEN still holds it. A lock
    /// that already expired is never re-created.
    Extend(ExtendArgs),

    /// Show what every server holds for the lock. Exits 0 when a majority holds it,
    /// 1 when it is free.
    Status(NameArg),

    /// Write shell completions or man pages (for packagers and the project's own
    /// generated files).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// The lock's name (any bytes); the Redis key is PREFIX followed by NAME.
    #[arg(value_name = "NAME")]
    pub name: OsString,
}

#[derive(Debug, Args)]
pub struct TtlArg {
    /// How long the lock lives on the servers unless extended or released, e.g. 30s,
    /// 1m30s, 250ms or 2.5 (seconds).
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration::parse)]
    pub ttl: Duration,
}

#[derive(Debug, Args)]
pub struct AcquireArgs {
    #[command(flatten)]
    pub name: NameArg,

    #[command(flatten)]
    pub ttl: TtlArg,

    #[command(flatten)]
    pub wait: WaitArgs,
}

/// Blocking is the default, as in flock.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Fail at once (exit 75) if the lock is held.
    #[arg(short = 'n', long = "nonblock", conflicts_with = "wait")]
    pub nonblock: bool,

    /// Retry for at most DUR, then exit 75 (-w 0 is -n).
    #[arg(short = 'w', long = "wait", value_name = "DUR", value_parser = duration::parse)]
    pub wait: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub name: NameArg,

    /// The token `acquire` printed.
    #[arg(value_name = "TOKEN", env = "REDLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    #[command(flatten)]
    pub lock: TokenArgs,

    #[command(flatten)]
    pub ttl: TtlArg,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[arg(value_enum)]
    pub what: Generated,

    /// The directory to write the files into.
    pub dir: std::path::PathBuf,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Generated {
    /// bash, zsh, fish, elvish and PowerShell completion scripts
    Completions,
    /// one man page for redlock and one for each subcommand
    Man,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_lists_every_exit_code_of_the_enum() {
        let help = Cli::command().render_long_help().to_string();
        for code in ["0 ", "1 ", "64", "69", "70", "75", "78", "79"] {
            assert!(
                help.contains(&format!("  {code}")),
                "--help lacks exit code {code}"
            );
        }
    }
}
