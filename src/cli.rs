//! The command line as clap sees it. Only parsing lives here; `config`
//! validates the values and turns them into settings.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueHint};
use nix::sys::signal::Signal;

use crate::duration;
use crate::exit_code::{self, Exit};

mod help;

pub use help::{command, command_with, fitted, Detail};

/// One example of a subcommand: what it does, and the lines to type. Shown
/// by `--help` and by the man pages, from here.
pub struct Example {
    pub what: &'static str,
    pub lines: &'static [&'static str],
}

/// Every visible subcommand's examples.
const EXAMPLES: &[(&str, &[Example])] = &[
    ("acquire", &[
            Example {
                what: "Hold the lock while this script runs: a keeper extends it until the script ends",
                lines: &[
                    "tok=$(redlock acquire --while $$ big-import) || exit",
                    "trap 'redlock release big-import \"$tok\" || exit $?' EXIT",
                ],
            },
            Example {
                what: "Take the lock for a script, waiting at most 30s; release it when the script exits",
                lines: &[
                    "tok=$(redlock acquire -w 30s nightly-report) || exit",
                    "trap 'redlock release nightly-report \"$tok\" || exit $?' EXIT",
                ],
            },
            Example {
                what: "Cron: skip quietly (exit 0, no token) while another run holds the lock",
                lines: &[
                    "tok=$(redlock acquire -n -E 0 nightly-report) || exit",
                    "[ -n \"$tok\" ] || exit 0",
                ],
            },
            Example {
                what: "Runbook: say why you hold it (status shows it); --ttl 1h needs restart-guard = 1h",
                lines: &["tok=$(redlock acquire -n --ttl 1h -m \"failover to db2 (INC-4242)\" db-failover)"],
            },
    ]),
    ("release", &[
            Example {
                what: "Release the lock that acquire gave the token for",
                lines: &["redlock release nightly-report \"$tok\""],
            },
            Example {
                what: "The same, with the token from the environment",
                lines: &["REDLOCK_TOKEN=$tok redlock release nightly-report"],
            },
            Example {
                what: "Break a stale lock whose holder is known dead; prints what it broke",
                lines: &["redlock release --force db-failover"],
            },
    ]),
    ("list", &[
            Example {
                what: "The nightly locks on these servers: name, state, age, expiry, holder",
                lines: &["redlock list 'nightly-*'"],
            },
            Example {
                what: "The deploy locks of one application, as JSON",
                lines: &["redlock --prefix app: list --json 'deploy-*' | jq '.locks[].holder'"],
            },
    ]),
    ("done", &[Example {
            what: "A script's job once a day: 80 means done already; mark it done, then release",
            lines: &[
                "tok=$(redlock acquire --once-per 1d nightly) || exit $(( $? == 80 ? 0 : $? ))",
                "./backup.sh || { redlock release nightly \"$tok\"; exit 1; }",
                "redlock done nightly \"$tok\"; redlock release nightly \"$tok\"",
            ],
    }]),
    ("extend", &[Example {
            what: "Keep a long job's lock for 30 more seconds (every 10s, say); 79 means it was lost",
            lines: &["redlock extend --ttl 30s nightly-report \"$tok\" || exit"],
    }]),
    ("status", &[
            Example {
                what: "What every server holds for the lock",
                lines: &["redlock status deploy"],
            },
            Example {
                what: "Whether the lock is held, by the exit status alone (0 held, 1 free)",
                lines: &["if redlock status -q deploy; then echo held; fi"],
            },
            Example {
                what: "Who holds it, for a script: user, host, pid, note, CI job, age",
                lines: &["redlock status --json deploy | jq .holder"],
            },
    ]),
    ("doctor", &[
            Example {
                what: "Check the servers: a verdict per server and overall, each problem with its fix",
                lines: &["redlock doctor"],
            },
            Example {
                what: "Monitoring: 0 ready, 2 degraded, 75 not ready yet, 1 unsafe (--strict: or a warning), 69 down",
                lines: &["redlock doctor --strict --json > doctor.json || alert \"redlock: exit $?\""],
            },
    ]),
    ("exec", &[
            Example {
                what: "Cron on every host: run the backup once a day fleet-wide, skip quietly",
                lines: &["redlock exec --once-per 1d -q nightly-backup /usr/local/bin/backup"],
            },
            Example {
                what: "CI: wait up to 30 minutes for the previous deploy",
                lines: &["redlock exec deploy -w 30m ./deploy.sh staging"],
            },
            Example {
                what: "A shell command line; the lock is named after it",
                lines: &["redlock exec -c 'make migrate && make seed'"],
            },
            Example {
                what: "Without NAME, `--` comes before the command; the lock is named after it",
                lines: &["redlock exec -n -- ./report.sh --full"],
            },
    ]),
];

/// The examples of the subcommand `name` (none for a hidden one).
pub fn examples(name: &str) -> &'static [Example] {
    EXAMPLES
        .iter()
        .find(|(command, _)| *command == name)
        .map_or(&[], |(_, examples)| examples)
}

/// The "Examples:" block of a subcommand's `--help`.
fn examples_help(name: &str) -> String {
    // Pushed, not formatted: every run builds every subcommand's help.
    let mut text = String::with_capacity(1024);
    text.push_str("Examples:");
    for example in examples(name) {
        text.push_str("\n  # ");
        text.push_str(example.what);
        for line in example.lines {
            text.push_str("\n  ");
            text.push_str(line);
        }
    }
    text
}

/// The exit statuses of `exec`, with the numbers it shares with the other
/// commands taken from [`Exit`]. In `exec --help` and its man page.
pub fn exec_exit_status() -> String {
    format!(
        "Exit status: the command's own; 128+N if it died of signal N (if exec got that signal\n\
        itself and passed it on, exec dies of it too, unless it is SIGQUIT); {} (or -E) if the\n\
        lock was busy; {} if no quorum; {} if the lock was lost while the command ran; {} if\n\
        the servers refuse the lock or an extension; {} if the command ran past --timeout;\n\
        126/127 if the command could not be run / was not found.",
        Exit::Busy.code(),
        Exit::NoQuorum.code(),
        Exit::Lost.code(),
        Exit::Config.code(),
        Exit::TimedOut.code()
    )
}

/// What `-V` and `--version` print after the name: the version, and the
/// commit and the day it was built from (`build.rs`). The plain version
/// (`get_version`) is the one the man pages carry, so that they do not
/// change with every commit.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_COMMIT"),
    ", built ",
    env!("BUILD_DATE"),
    ")"
);

/// A distributed mutex for shell scripts, cron jobs and CI pipelines: the
/// Redlock algorithm over N independent Redis masters.
#[derive(Debug, Parser)]
#[command(
    name = "redlock",
    version,
    long_version = LONG_VERSION,
    propagate_version = true,
    after_help = exit_code::help_text(),
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
    /// masters; a bare host[:port] means redis:// (port 6379), e.g. -s localhost for one
    /// local Redis. Without it: REDLOCK_SERVERS (the same list), then a servers file
    /// (--servers-file); there is no default server.
    // REDLOCK_SERVERS is read in config, not by clap: config must know which
    // source named the servers, and clap would reject a value that is not
    // UTF-8 even when this flag overrides it.
    #[arg(short = 's', long = "server", value_name = "URL", global = true)]
    pub servers: Vec<OsString>,

    /// A file of server URLs, one per line (# starts a comment line); used when neither
    /// -s nor REDLOCK_SERVERS names servers. Without it, $XDG_CONFIG_HOME/redlock/servers,
    /// then /etc/redlock/servers, are used if they exist; one that exists but cannot be
    /// read is an error.
    #[arg(
        long,
        value_name = "FILE",
        env = "REDLOCK_SERVERS_FILE",
        hide_env_values = true,
        global = true
    )]
    pub servers_file: Option<std::path::PathBuf>,

    /// A file of settings for every client of these servers, one `name = value` a line:
    /// restart-guard, server-timeout, prefix, name-key (# starts a comment line). A flag or
    /// its variable wins over it. Without it, $XDG_CONFIG_HOME/redlock/config, then
    /// /etc/redlock/config, are used if they exist (the first one, whole).
    #[arg(
        long,
        value_name = "FILE",
        env = "REDLOCK_CONFIG_FILE",
        hide_env_values = true,
        global = true
    )]
    pub config_file: Option<std::path::PathBuf>,

    /// Bound for connecting to each server and for each reply. Default: server-timeout in
    /// the config file, else 250ms or a fifth of --ttl when that is shorter; a value given
    /// must be below a third of --ttl.
    // Parsed in config, not by clap: clap would reject an invalid
    // REDLOCK_SERVER_TIMEOUT even when the flag, given after the subcommand,
    // overrides it.
    #[arg(
        long,
        value_name = "DUR",
        env = "REDLOCK_SERVER_TIMEOUT",
        hide_env_values = true,
        allow_hyphen_values = true,
        global = true
    )]
    pub server_timeout: Option<OsString>,

    /// Do not count a server that started less than DUR ago toward a quorum: it may have
    /// lost the locks it held. A --ttl longer than the guard is refused; 0 turns the guard
    /// off, and that limit with it. Give every client of these servers the same guard (the
    /// config file). [default: restart-guard in the config file, else 30s]
    // Parsed in config, like --server-timeout.
    #[arg(
        long,
        value_name = "DUR",
        env = "REDLOCK_RESTART_GUARD",
        hide_env_values = true,
        allow_hyphen_values = true,
        global = true
    )]
    pub restart_guard: Option<OsString>,

    /// PEM file of the CA that signed the servers' certificates, for rediss:// URLs
    /// (instead of the system's roots).
    #[arg(
        long,
        value_name = "FILE",
        env = "REDLOCK_TLS_CA_CERT",
        hide_env_values = true,
        global = true
    )]
    pub tls_ca_cert: Option<std::path::PathBuf>,

    /// Prepended to every lock name to form the Redis key. [default: prefix in the config
    /// file, else empty]
    #[arg(
        long,
        value_name = "PREFIX",
        env = "REDLOCK_PREFIX",
        hide_env_values = true,
        global = true
    )]
    pub prefix: Option<OsString>,

    /// Print a result as one JSON object on stdout.
    #[arg(long, global = true)]
    pub json: bool,

    /// Print nothing but errors: no messages about expected outcomes (busy, free, not
    /// held) and no status table; the exit code tells.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Describe each step on stderr: servers, timings, validity.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// Deferred: clap builds a subcommand's options only when it is named (or
/// for help, man pages and completions, which build them all), which is
/// most of what parsing a command line costs (help.rs). Deferred, the
/// options come after the subcommand's own settings, so the structs of
/// options have plain comments, not doc comments: clap would make a doc
/// comment the about of every subcommand that flattens the struct.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Take the lock and print its token on stdout. Blocks until the lock is free
    /// unless -n or -w is given.
    #[command(after_help = examples_help("acquire"))]
    Acquire(AcquireArgs),

    /// Release the lock, if TOKEN still holds it; with --force, whoever holds it.
    #[command(after_help = examples_help("release"))]
    Release(ReleaseArgs),

    /// Mark the run of acquire --once-per or --once done, while TOKEN still holds the
    /// lock: any later run in its period (or for its key) is done already (acquire
    /// exits 80, exec skips). Release the lock afterwards.
    #[command(after_help = examples_help("done"))]
    Done(DoneArgs),

    /// Push the lock's expiry out to --ttl from now, if TOKEN still holds it. A lock
    /// that already expired is never re-created.
    #[command(after_help = examples_help("extend"))]
    Extend(ExtendArgs),

    /// Show who holds the lock, for how long and until when, and what every server
    /// holds. Exits 0 when a majority holds it, 1 when it is free.
    #[command(after_help = examples_help("status"))]
    Status(StatusArgs),

    /// List the locks on the servers (under --prefix) with their holders, as a
    /// majority sees them.
    #[command(after_help = examples_help("list"))]
    List(ListArgs),

    /// Run a command while holding the lock, extending the lock while it runs and
    /// stopping the command before the lock can lapse.
    #[command(
        after_help = format!("{}\n\n{}", examples_help("exec"), exec_exit_status()),
        override_usage = "redlock exec [OPTIONS] NAME CMD [ARGS]...\n       \
            redlock exec [OPTIONS] [NAME] -- CMD [ARGS]...\n       \
            redlock exec [OPTIONS] [NAME] -c STRING"
    )]
    Exec(ExecArgs),

    /// Check the servers against what Redlock's safety rests on: masters, distinct,
    /// enough of them, no eviction, persistence or the restart guard, clocks, round
    /// trips, cluster mode, ACLs, and what the restart guard cannot see: replicas, servers
    /// behind one address, DEBUG, a shared server. Exits 0 when nothing is unsafe, 1 when something
    /// is (with --strict, a warning too), 69 when too few servers answer.
    #[command(after_help = examples_help("doctor"))]
    Doctor(DoctorArgs),

    /// Write shell completions or man pages (for packagers and the project's own
    /// generated files).
    #[command(hide = true)]
    Generate(GenerateArgs),

    /// The process `acquire --while` leaves behind to keep the lock; it reads its
    /// settings from stdin and is not for direct use.
    #[command(hide = true)]
    Keeper,
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// The lock's name (any bytes but NUL); the Redis key is PREFIX followed by NAME.
    #[arg(value_name = "NAME")]
    pub name: OsString,

    /// NAME is the name's bytes in hex, as `name_hex` in --json output gives a name
    /// that is not UTF-8.
    #[arg(long)]
    pub hex: bool,
}

// `--once-per DUR[@HH:MM]` or `--once KEY`: a run at most once per period
// or key, across every host.
#[derive(Debug, Args)]
pub struct OnceArgs {
    /// Run at most once per period of DUR across every host: a run that
    /// succeeded marks the period done on the servers (exec: its command exited
    /// 0; acquire: `redlock done`), and any later run in it skips with a line
    /// naming the host, pid, time and status (exec exits 0, acquire 80).
    /// Periods are counted on the servers' clock from the Unix epoch in UTC (1d
    /// runs from 00:00 UTC); @HH:MM shifts them (1d@02:00). A run that fails, is
    /// killed or loses the lock marks nothing. Not with --limit or --shared.
    #[arg(
        long = "once-per",
        value_name = ONCE_PER_VALUE,
        value_parser = parse_period,
        conflicts_with_all = ["once", "limit", "shared"]
    )]
    pub once_per: Option<(Duration, Duration)>,

    /// Run at most once for KEY (a release, a pipeline id) across every host,
    /// as --once-per does for a period; the mark is kept 30 days, and a run with
    /// another KEY replaces it. Not with --limit or --shared.
    #[arg(long = "once", value_name = "KEY", conflicts_with_all = ["limit", "shared"])]
    pub once: Option<OsString>,
}

/// `--once-per`'s value name. Its `@` would read as a URL's user-info to
/// the redaction of usage errors, which then garbled the flag's name:
/// [`plain_flag_names`] drops it from clap's messages first.
const ONCE_PER_VALUE: &str = "DUR[@HH:MM]";

/// `message` (clap's) with `'--once-per <DUR[@HH:MM]>'` as `'--once-per'`.
pub fn plain_flag_names(message: &str) -> String {
    message.replace(&format!(" <{ONCE_PER_VALUE}>'"), "'")
}

/// The longest `--once-per` period: its end and margin, in ms since 1970,
/// must fit the servers' expire times (a longer one overflowed).
const MAX_PERIOD: Duration = Duration::from_secs(36_525 * 86_400); // 100 years

/// A period for `--once-per`: a duration of at least a second, and an
/// optional `@HH:MM` (UTC) that its periods start at, within one period.
fn parse_period(text: &str) -> Result<(Duration, Duration), String> {
    let (period, at) = match text.split_once('@') {
        Some((period, at)) => (period, Some(at)),
        None => (text, None),
    };
    let period = duration::parse(period)?;
    if period < Duration::from_secs(1) {
        return Err(format!("'{text}' is shorter than a second"));
    }
    if period > MAX_PERIOD {
        return Err(format!(
            "'{text}' is longer than a period can be (at most 100 years)"
        ));
    }
    let offset = match at {
        None => Duration::ZERO,
        Some(at) => {
            let bad = || format!("'{at}' is not a time of day like 02:00 (HH:MM, UTC)");
            let (h, m) = at.split_once(':').ok_or_else(bad)?;
            let (h, m): (u64, u64) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            Duration::from_secs(h * 3600 + m * 60)
        }
    };
    if offset >= period {
        return Err(format!(
            "'{text}': the start is not within one period (the shift must be shorter than it)"
        ));
    }
    Ok((period, offset))
}

// `--limit K`: the lock is a counting semaphore of K slots.
#[derive(Debug, Args)]
pub struct LimitArg {
    /// NAME is a counting semaphore: up to K holders at once, each in one of the slots
    /// NAME#0 … NAME#K-1 (K from 1 to 256). acquire and exec take any free slot (exec gives
    /// the command REDLOCK_SLOT), release and extend find the slot TOKEN holds, status shows
    /// every slot. Every client of NAME must pass the same K: the servers record it, and
    /// refuse another (exit 78) until the last slot's TTL has passed.
    #[arg(long, value_name = "K", value_parser = parse_limit, allow_hyphen_values = true)]
    pub limit: Option<u32>,
}

// `--supersede [--serial N]`: a newer waiter replaces older ones.
#[derive(Debug, Args)]
pub struct SupersedeArgs {
    /// Among waiters of NAME that all pass --supersede, a newer one replaces the older
    /// ones, as a CI concurrency group keeps one pending run: they leave the line at once
    /// and exit 81 (cancelled, not failed), naming who superseded them. A holder is never
    /// superseded, and waiters without it neither supersede nor are superseded. Not with
    /// --limit or --shared.
    #[arg(long, conflicts_with_all = ["limit", "shared"])]
    pub supersede: bool,

    /// With --supersede: "newer" is this number instead of the order of arrival, e.g.
    /// GitHub's run_number or GitLab's CI_PIPELINE_IID, so that a re-run of an old pipeline
    /// arriving last is itself superseded at once.
    #[arg(long, value_name = "N", value_parser = parse_serial, allow_hyphen_values = true)]
    pub serial: Option<u64>,
}

/// A `--serial`: a non-negative integer.
fn parse_serial(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a non-negative integer"))
}

/// A number of slots for `--limit`: 1 to [`crate::lock::MAX_LIMIT`].
fn parse_limit(text: &str) -> Result<u32, String> {
    let max = crate::lock::MAX_LIMIT;
    text.trim()
        .parse()
        .ok()
        .filter(|k| (1..=max).contains(k))
        .ok_or_else(|| format!("'{text}' is not a number of slots from 1 to {max}"))
}

// `status NAME [--limit K]`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub name: NameArg,

    #[command(flatten)]
    pub limit: LimitArg,
}

#[derive(Debug, Args)]
pub struct TtlArg {
    /// How long the lock lives on the servers unless extended or released, e.g. 30s,
    /// 1m30s, 250ms or 2.5 (seconds); at most the restart guard (--restart-guard).
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration::parse, allow_hyphen_values = true)]
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

    #[command(flatten)]
    pub holder: HolderArgs,

    #[command(flatten)]
    pub limit: LimitArg,

    #[command(flatten)]
    pub once: OnceArgs,
    /// Also hand out a fencing token: a number that increases strictly from each holder of
    /// NAME to the next, for storage to reject writes carrying a lower one. Printed after the
    /// token on the same line, `TOKEN FENCE` (`read -r tok fence`), or as "fence" with --json.
    /// Each server keeps a counter for NAME without expiry. Not with --limit: a semaphore's
    /// holders run at once, which a fence cannot order.
    #[arg(long, conflicts_with = "limit")]
    pub fence: bool,

    /// Keep the lock while process PID lives: `tok=$(redlock acquire --while $$ NAME)` in a
    /// script. A keeper process extends the lock every third of --ttl, releases it once PID
    /// and what it left in its process group have exited, and stops quietly when `redlock
    /// release NAME "$tok"` runs on this host; if the lock is lost, PID gets --while-signal.
    #[arg(long = "while", value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub keep_while: Option<i32>,

    /// With --while: the signal sent to PID, and to its process group if it leads one, when
    /// the lock is lost, e.g. TERM, INT or USR1; none sends nothing.
    #[arg(
        long = "while-signal",
        value_name = "SIG",
        default_value = "TERM",
        requires = "keep_while",
        value_parser = parse_while_signal,
        allow_hyphen_values = true
    )]
    pub while_signal: WhileSignal,

    /// Take the lock shared, as flock's shared mode: any number of --shared holders at
    /// once, but never beside an exclusive one. A waiting exclusive holder keeps new shared
    /// ones out. There is no short form (the one flock uses names a server here). Not with
    /// --limit or --fence.
    #[arg(long, conflicts_with_all = ["limit", "fence"])]
    pub shared: bool,

    #[command(flatten)]
    pub supersede: SupersedeArgs,
}

/// The signal `acquire --while` sends on a loss, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WhileSignal(pub Option<Signal>);

/// `none`, or a signal that can stop a script (see [`parse_stop_signal`]).
fn parse_while_signal(text: &str) -> Result<WhileSignal, String> {
    match text.trim().eq_ignore_ascii_case("none") {
        true => Ok(WhileSignal(None)),
        false => parse_stop_signal(text).map(|signal| WhileSignal(Some(signal))),
    }
}

// What the holder records beside the lock, besides who and where it is.
#[derive(Debug, Args)]
pub struct HolderArgs {
    /// A note recorded beside the lock while it is held, shown by `status` and
    /// to whoever finds it busy, e.g. -m "rolling out v2.3".
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<OsString>,
}

// Blocking is the default, as in flock.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Fail at once (exit 75) if the lock is held.
    #[arg(short = 'n', long = "nonblock", conflicts_with = "wait")]
    pub nonblock: bool,

    /// Retry for at most DUR, then exit with the last attempt's status: 75 busy, 69 no quorum
    /// (-w 0 is -n).
    #[arg(short = 'w', long = "wait", value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub wait: Option<Duration>,

    /// Exit with CODE instead of 75 when the lock is busy (or the -w wait ran out);
    /// -E 0 skips quietly, the cron idiom (acquire then prints no token).
    #[arg(
        short = 'E',
        long = "conflict-exit-code",
        value_name = "CODE",
        value_parser = parse_exit_status,
        allow_hyphen_values = true
    )]
    pub conflict_exit_code: Option<u8>,
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
pub struct ReleaseArgs {
    #[command(flatten)]
    pub lock: TokenArgs,

    /// Delete the lock whoever holds it, without a token: for a stale lock whose
    /// holder is known to be dead, never to hurry a live one.
    #[arg(long)]
    pub force: bool,

    /// With --force: break the lock only while TOKEN still holds it (the token status
    /// showed for the dead holder), never a holder that took it since.
    #[arg(long, value_name = "TOKEN", requires = "force")]
    pub if_token: Option<String>,

    /// With --force: delete the done mark of --once-per or --once beside the lock,
    /// so that the job can run again in this period (or for this key); the lock
    /// itself is left alone.
    #[arg(long, requires = "force", conflicts_with_all = ["if_token", "any_key", "limit"])]
    pub done: bool,

    /// With --force: break a string key that does not look like a lock too (one without
    /// expiry, with a value longer than any token, or neither a redlock token nor
    /// beside a holder record: a lock another Redlock client took, say).
    #[arg(long, requires = "force")]
    pub any_key: bool,

    #[command(flatten)]
    pub limit: LimitArg,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// A glob on the lock names (after the prefix): * ? [abc] and \ as in Redis.
    #[arg(value_name = "PATTERN", default_value = "*")]
    pub pattern: OsString,

    /// Print only the names, one a line, escaped as the table shows them but
    /// without quotes: no header, no other column. For scripts and shell
    /// completion.
    #[arg(long, conflicts_with = "json")]
    pub names: bool,

    /// Only locks held for longer than DUR (30m, 2h), by the age redlock records
    /// beside each lock; locks without such a record (taken by other Redlock
    /// clients) have no known age and are left out.
    #[arg(long, value_name = "DUR", value_parser = duration::parse, allow_hyphen_values = true)]
    pub older_than: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The TTL the locks on these servers use: the servers' clocks must agree within
    /// 1% of it.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = duration::parse, allow_hyphen_values = true)]
    pub ttl: Duration,

    /// Accept single-instance semantics: one server, which is no failure-tolerant
    /// Redlock, is then no finding.
    #[arg(long)]
    pub single: bool,

    /// Count warnings too: exit 1 when there is any.
    #[arg(long)]
    pub strict: bool,

    /// Accept masters with replicas attached: you know that no failover promotes a
    /// replica behind a master's address sooner than the longest TTL after the master
    /// stopped (a delayed failover), or at all (replicas for backups or reads).
    #[arg(long)]
    pub accept_replicas: bool,
}

#[derive(Debug, Args)]
pub struct DoneArgs {
    #[command(flatten)]
    pub lock: TokenArgs,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    #[command(flatten)]
    pub lock: TokenArgs,

    #[command(flatten)]
    pub ttl: TtlArg,

    #[command(flatten)]
    pub limit: LimitArg,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The lock's name. Without it, the name is derived from the command line:
    /// `exec:PROGRAM:HASH`, the program's base name and a hash of every word of
    /// the command, the same on every host (-v prints it), keyed with the
    /// config file's name-key if it has one; without a key, a command line that
    /// looks like it holds a secret needs a NAME.
    // The terminator makes a `--` where NAME could be end it unset: the
    // command follows, and the name is derived from it.
    #[arg(value_name = "NAME", value_terminator = "--")]
    pub name: Option<OsString>,

    #[command(flatten)]
    pub ttl: TtlArg,

    #[command(flatten)]
    pub wait: WaitArgs,

    #[command(flatten)]
    pub holder: HolderArgs,

    #[command(flatten)]
    pub limit: LimitArg,

    #[command(flatten)]
    pub once: OnceArgs,

    /// After the stop signal, wait this long before SIGKILL; capped at a third of
    /// --ttl so that the kill always lands before the lock can lapse.
    #[arg(short = 'k', long = "kill-after", value_name = "DUR", default_value = "5s", value_parser = duration::parse, allow_hyphen_values = true)]
    pub kill_after: Duration,

    /// Stop the command (the stop signal, then SIGKILL after --kill-after) and
    /// release the lock if it still runs this long after it started, counting what
    /// it leaves behind; exec then exits 124, as timeout(1) does.
    #[arg(long, value_name = "DUR", value_parser = duration::parse)]
    pub timeout: Option<Duration>,

    /// The signal that asks the command to stop when the lock is lost, e.g. TERM,
    /// SIGINT or 2.
    #[arg(
        long,
        value_name = "SIG",
        default_value = "TERM",
        value_parser = StopSignalParser,
        hide_possible_values = true,
        allow_hyphen_values = true
    )]
    pub signal: Signal,

    /// Record the command line beside the lock (redacted of the usual forms of
    /// secrets), where anyone who can read the servers sees it. Without it, the
    /// record names only the program and how many arguments it has.
    #[arg(long = "record-command")]
    pub record_command: bool,

    /// Give the command a fencing token in REDLOCK_FENCE: a number that increases strictly
    /// from each holder of NAME to the next (see acquire --fence). Not with --limit.
    #[arg(long, conflicts_with = "limit")]
    pub fence: bool,

    /// Take the lock shared, as flock's shared mode: any number of --shared holders at
    /// once, but never beside an exclusive one. A waiting exclusive holder keeps new shared
    /// ones out. There is no short form (the one flock uses names a server here). Not with
    /// --limit or --fence.
    #[arg(long, conflicts_with_all = ["limit", "fence"])]
    pub shared: bool,

    #[command(flatten)]
    pub supersede: SupersedeArgs,

    /// --supersede, and also stop a running holder of NAME that passed --cancel-in-progress
    /// and is older: its command gets the stop signal (then SIGKILL after --kill-after),
    /// and it exits 81 (cancelled). This run takes the lock only once that holder has
    /// released it. A holder without the flag is never stopped.
    #[arg(long = "cancel-in-progress", conflicts_with_all = ["limit", "shared"])]
    pub cancel_in_progress: bool,

    /// Run STRING with `sh -c` instead of CMD.
    #[arg(
        short = 'c',
        long = "command",
        value_name = "STRING",
        conflicts_with = "argv"
    )]
    pub shell: Option<OsString>,

    /// The command and its arguments: after NAME, as with flock, or after `--`,
    /// which needs no NAME before it. The options of redlock come before CMD;
    /// every word from CMD on is the command's.
    #[arg(
        value_name = "CMD",
        trailing_var_arg = true,
        value_hint = ValueHint::CommandWithArguments
    )]
    pub argv: Vec<OsString>,
}

/// For an option clap did not expect in `exec` before the command: clap's
/// tip for it (`tip: to pass '--full' as a value, use '-- --full'`) and
/// the one to say instead. Followed, clap's tip turns `exec ./report.sh
/// --full` into `exec ./report.sh -- --full`, which takes ./report.sh as
/// the lock's NAME and runs `--full`. `None` for any other error.
pub fn exec_tip(err: &clap::Error, args: &[OsString]) -> Option<(String, String)> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let matches = command()
        .ignore_errors(true)
        .try_get_matches_from(args)
        .ok()?;
    let ("exec", exec) = matches.subcommand()? else {
        return None;
    };
    let clap_tip = format!("tip: to pass '{arg}' as a value, use '-- {arg}'");
    let shown = |word: &std::ffi::OsStr| crate::redact::value(word);
    let name = exec.get_raw("name").and_then(|mut names| names.next());
    let command = name.and_then(crate::supervise::child::command_named);
    let ours = match (name, command) {
        (Some(name), Some(command)) => {
            // The words from the unexpected one on, as given.
            let rest = args
                .windows(2)
                .position(|pair| pair[0] == name && pair[1] == arg.as_str())
                .map_or_else(
                    || shown(std::ffi::OsStr::new(arg)),
                    |at| words(&args[at + 1..]),
                );
            let (name, command) = (shown(name), shown(&command));
            format!(
                "tip: {name} was taken as the lock's NAME; to run it, put `--` before it: \
                 redlock exec [OPTIONS] -- {command} {rest} (the lock is then named after the \
                 command), or give the lock a NAME first: redlock exec [OPTIONS] NAME {command} \
                 {rest}"
            )
        }
        _ => format!(
            "tip: {} is no option of exec; options of the command go after it: redlock exec \
             [OPTIONS] NAME CMD [ARGS], or redlock exec [OPTIONS] -- CMD [ARGS]",
            shown(std::ffi::OsStr::new(arg))
        ),
    };
    Some((clap_tip, ours))
}

/// Words of the command line as a message shows them: redacted, escaped.
fn words(args: &[OsString]) -> String {
    let shown: Vec<String> = args.iter().map(|w| crate::redact::value(w)).collect();
    shown.join(" ")
}

/// An exit status for `-E`: 0 to 255.
fn parse_exit_status(text: &str) -> Result<u8, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{text}' is not an exit status from 0 to 255"))
}

/// A signal that can stop the command: not one whose default action is to
/// stop or continue it or to do nothing, since SIGCONT follows the stop
/// signal and the command would run on until SIGKILL.
fn parse_stop_signal(text: &str) -> Result<Signal, String> {
    let signal = parse_signal(text)?;
    match signal {
        Signal::SIGSTOP
        | Signal::SIGTSTP
        | Signal::SIGTTIN
        | Signal::SIGTTOU
        | Signal::SIGCONT
        | Signal::SIGCHLD
        | Signal::SIGURG
        | Signal::SIGWINCH => Err(format!(
            "{} cannot stop a command (it stops, continues or is ignored by default); \
             use TERM, INT, HUP, QUIT, USR1, USR2 or KILL",
            signal.as_str()
        )),
        _ => Ok(signal),
    }
}

/// [`parse_stop_signal`], with the names it accepts as the possible values
/// that completions offer (not listed in `--help`: numbers and `SIG` names
/// are accepted too).
#[derive(Debug, Clone, Copy)]
struct StopSignalParser;

impl clap::builder::TypedValueParser for StopSignalParser {
    type Value = Signal;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Signal, clap::Error> {
        parse_stop_signal.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        // The usual ones first, then the rest in the order of their numbers.
        const USUAL: [Signal; 7] = [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGQUIT,
            Signal::SIGKILL,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
        ];
        let rest = Signal::iterator().filter(|signal| !USUAL.contains(signal));
        let names = USUAL
            .into_iter()
            .chain(rest)
            .filter(|signal| parse_stop_signal(signal.as_str()).is_ok())
            .map(|signal| signal.as_str().trim_start_matches("SIG"));
        Some(Box::new(names.map(clap::builder::PossibleValue::new)))
    }
}

/// A signal by name (`TERM`, `SIGTERM`, any case) or number.
fn parse_signal(text: &str) -> Result<Signal, String> {
    let text = text.trim();
    if let Ok(number) = text.parse::<i32>() {
        return Signal::try_from(number).map_err(|_| format!("no signal number {number}"));
    }
    let upper = text.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    name.parse()
        .map_err(|_| format!("'{text}' is not a signal name like TERM, INT or HUP"))
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
    use clap::{CommandFactory, Parser};

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `exec`'s NAME and command line as parsed from `words`, or clap's error.
    fn exec_words(words: &[&str]) -> Result<(Option<String>, Vec<String>, bool), String> {
        let cli = Cli::try_parse_from(["redlock", "exec"].iter().chain(words))
            .map_err(|err| err.to_string())?;
        let super::Command::Exec(args) = cli.command else {
            panic!("{words:?} is no exec");
        };
        let text = |word: std::ffi::OsString| word.into_string().unwrap();
        let argv = args.argv.into_iter().map(text).collect();
        Ok((args.name.map(text), argv, args.wait.nonblock))
    }

    #[test]
    fn exec_takes_the_command_after_name_or_after_the_double_dash() {
        let ok = |name: Option<&str>, argv: &[&str], nonblock| {
            Ok((
                name.map(String::from),
                argv.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
                nonblock,
            ))
        };
        // As flock: NAME, then the command; every word from it on is the
        // command's, options and `--` included.
        assert_eq!(
            exec_words(&["nm", "ls", "-l"]),
            ok(Some("nm"), &["ls", "-l"], false)
        );
        assert_eq!(
            exec_words(&["nm", "ls", "-n", "--", "-v"]),
            ok(Some("nm"), &["ls", "-n", "--", "-v"], false)
        );
        // redlock's options before the command, also after NAME.
        assert_eq!(
            exec_words(&["-n", "nm", "--ttl", "5s", "ls", "-n"]),
            ok(Some("nm"), &["ls", "-n"], true)
        );
        // `--` after NAME, or instead of it: then the name is derived.
        assert_eq!(
            exec_words(&["nm", "-n", "--", "ls"]),
            ok(Some("nm"), &["ls"], true)
        );
        assert_eq!(
            exec_words(&["--ttl", "5s", "nm", "--", "ls"]),
            ok(Some("nm"), &["ls"], false)
        );
        assert_eq!(
            exec_words(&["--", "ls", "-l"]),
            ok(None, &["ls", "-l"], false)
        );
        assert_eq!(
            exec_words(&["-n", "--", "nm", "--", "x"]),
            ok(None, &["nm", "--", "x"], true)
        );
        // -c takes the place of the command.
        assert_eq!(
            exec_words(&["-c", "make", "nm"]),
            ok(Some("nm"), &[], false)
        );
        assert_eq!(
            exec_words(&["nm", "-c", "make"]),
            ok(Some("nm"), &[], false)
        );
        // NAME alone parses; config says that the command is missing.
        assert_eq!(exec_words(&["nm"]), ok(Some("nm"), &[], false));
        // An unknown option before the command is an error, not a command.
        let err = exec_words(&["nm", "--bogus", "ls"]).unwrap_err();
        assert!(err.contains("--bogus"), "{err}");
        let err = exec_words(&["nm", "-c", "make", "ls"]).unwrap_err();
        assert!(err.contains("cannot be used with"), "{err}");
    }

    #[test]
    fn signals_parse_by_name_or_number() {
        use super::{parse_signal, Signal};
        assert_eq!(parse_signal("TERM"), Ok(Signal::SIGTERM));
        assert_eq!(parse_signal("sigint"), Ok(Signal::SIGINT));
        assert_eq!(parse_signal("9"), Ok(Signal::SIGKILL));
        assert!(parse_signal("NOPE").is_err());
        assert!(parse_signal("999").is_err());
        use super::parse_stop_signal;
        assert_eq!(parse_stop_signal("KILL"), Ok(Signal::SIGKILL));
        for useless in [
            "STOP", "CONT", "TSTP", "CHLD", "TTIN", "TTOU", "WINCH", "URG", "19",
        ] {
            assert!(parse_stop_signal(useless).is_err(), "{useless}");
        }
    }

    #[test]
    fn help_shows_the_exit_code_table() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains(&crate::exit_code::help_text()));
        for row in crate::exit_code::TABLE {
            let line = format!("  {:<4}{}", row.exit.code(), row.help);
            assert_eq!(
                help.lines().filter(|l| *l == line).count(),
                1,
                "--help lacks '{line}'"
            );
        }
    }
}
