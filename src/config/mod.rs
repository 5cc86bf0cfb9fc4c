//! Turns parsed arguments into validated settings, per command: parsed
//! server URLs and the effective server timeout only for the commands that
//! talk to servers, raw key bytes, the stop plan of `exec`. Every rejection
//! names the option.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cli::{self, Cli, Command, ExecArgs, GlobalArgs};
use crate::duration;
use crate::error::Error;
use crate::lock::{
    Breaking, Holder, ListQuery, LockKey, Once, Semaphore, ServerSpec, Supersede, Take, Target,
    Token, Wait,
};
use crate::supervise::schedule::StopPlan;

mod file;
mod fleet;
mod names;
mod notice;
mod servers;

pub use servers::ServerSource;

pub use notice::Notice;

/// How results and diagnostics are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputMode {
    pub json: bool,
    pub quiet: bool,
    pub verbose: bool,
}

const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_millis(250);

/// The status of a busy lock without `-E`: 75 (EX_TEMPFAIL).
const BUSY: u8 = 75;

/// One validated invocation.
#[derive(Debug)]
pub struct Config {
    pub task: Task,
    pub output: OutputMode,
    /// What the user should hear about how the command was given.
    pub notices: Vec<Notice>,
}

#[derive(Debug)]
pub enum Task {
    /// Work on a lock, which needs the servers.
    Lock {
        servers: Box<Servers>,
        job: LockJob,
    },
    Generate {
        what: cli::Generated,
        dir: PathBuf,
    },
    /// Be the keeper `acquire --while` leaves behind (its settings come on
    /// stdin).
    Keeper,
}

/// Where the lock lives.
#[derive(Debug)]
pub struct Servers {
    pub specs: Vec<ServerSpec>,
    /// Which source named them, for messages and for what `exec` hands on.
    pub source: ServerSource,
    pub timeout: Duration,
    /// Servers that started less than this long ago do not count.
    pub restart_guard: Duration,
    /// The CA file given, and its contents when a URL uses TLS.
    pub tls_ca_cert: Option<PathBuf>,
    pub tls_root_cert: Option<Vec<u8>>,
    /// The key prefix, handed on by `exec` with the servers.
    pub prefix: Vec<u8>,
    /// The config file read, if any, handed on by `exec` too.
    pub config_file: Option<PathBuf>,
    /// Whether waiters listen for releases besides polling
    /// (`REDLOCK_WAKEUPS`).
    pub wakeups: bool,
}

#[derive(Debug)]
pub enum LockJob {
    Acquire(AcquireJob),
    Release(ReleaseJob),
    /// `release --force`: whoever holds it.
    ForceRelease(ForceJob),
    /// `release --force --done NAME`: the done mark beside the lock.
    ClearDone(LockKey),
    Extend(ExtendJob),
    Done(DoneJob),
    Status(StatusJob),
    List(ListJob),
    Exec(Box<ExecSpec>),
    Doctor(DoctorJob),
}

/// A validated `redlock release NAME TOKEN`.
#[derive(Debug)]
pub struct ReleaseJob {
    pub key: LockKey,
    pub token: Token,
    /// `--limit K`: the slot of this semaphore that TOKEN holds.
    pub semaphore: Option<Semaphore>,
}

/// A validated `redlock release --force NAME`.
#[derive(Debug)]
pub struct ForceJob {
    pub key: LockKey,
    pub breaking: Breaking,
}

/// A validated `redlock extend`.
#[derive(Debug)]
pub struct ExtendJob {
    pub key: LockKey,
    pub token: Token,
    pub ttl: Duration,
    /// `--limit K`: the slot of this semaphore that TOKEN holds.
    pub semaphore: Option<Semaphore>,
}

/// A validated `redlock done NAME TOKEN`.
#[derive(Debug)]
pub struct DoneJob {
    pub key: LockKey,
    pub token: Token,
}

/// A validated `redlock status`.
#[derive(Debug)]
pub struct StatusJob {
    pub key: LockKey,
    /// `--limit K`: every slot of this semaphore.
    pub semaphore: Option<Semaphore>,
}

/// A validated `redlock list`.
#[derive(Debug)]
pub struct ListJob {
    pub query: ListQuery,
    /// `--names`: only the names, one a line.
    pub names: bool,
}

/// A validated `redlock doctor` invocation.
#[derive(Debug, Clone, Copy)]
pub struct DoctorJob {
    /// The TTL the locks use, which the clocks are weighed against.
    pub ttl: Duration,
    /// `--single`: one server is accepted.
    pub single: bool,
    /// `--strict`: warnings count.
    pub strict: bool,
    /// `--accept-replicas`: no failover promotes a master's replica behind
    /// its address within the longest TTL.
    pub accept_replicas: bool,
}

/// A validated `redlock acquire` invocation.
#[derive(Debug)]
pub struct AcquireJob {
    pub key: LockKey,
    pub ttl: Duration,
    pub wait: Wait,
    pub message: Option<String>,
    /// The status when the lock is busy (`-E`).
    pub conflict_exit: u8,
    /// `--while PID`: a keeper keeps the lock while PID lives.
    pub keep_while: Option<KeepWhile>,
    /// `--limit K`: take any one slot of this semaphore instead.
    pub semaphore: Option<Semaphore>,
    /// `--fence`: the lock gets a fencing token.
    pub fence: bool,
    /// `--shared`: one reader among many.
    pub shared: bool,
    /// `--supersede [--serial N]`.
    pub supersede: Option<Supersede>,
    /// `--once-per`, `--once`: take it only if not done this period (or
    /// for this key).
    pub once: Option<Once>,
}

/// `acquire --while PID [--while-signal SIG]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepWhile {
    pub pid: i32,
    /// What PID gets when the lock is lost (`None`: nothing).
    pub signal: Option<Signal>,
}

/// Where `exec`'s lock name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSource {
    /// NAME was given.
    Given,
    /// Derived from the command with the plain hash anyone can compute.
    Hashed,
    /// Derived from the command with the config file's `name-key`.
    Keyed,
}

/// A validated `redlock exec` invocation.
#[derive(Debug)]
pub struct ExecSpec {
    pub key: LockKey,
    /// The name as given or derived, exported to the child as REDLOCK_NAME.
    pub name: OsString,
    pub name_source: NameSource,
    pub ttl: Duration,
    pub wait: Wait,
    pub conflict_exit: u8,
    pub stop: StopPlan,
    pub signal: Signal,
    /// `--timeout`: how long the command may run under the lock.
    pub timeout: Option<Duration>,
    pub argv: Vec<OsString>,
    /// The note recorded beside the lock (`-m`).
    pub message: Option<String>,
    /// Whether the holder record holds the (redacted) command line rather
    /// than the program and the number of its arguments.
    pub record_command: bool,
    /// `--limit K`: take any one slot of this semaphore instead.
    pub semaphore: Option<Semaphore>,
    /// `--fence`: the command gets a fencing token in REDLOCK_FENCE.
    pub fence: bool,
    /// `--shared`: one reader among many.
    pub shared: bool,
    /// `--supersede [--serial N]`.
    pub supersede: Option<Supersede>,
    /// `--cancel-in-progress`: an older holder that passed it too is asked
    /// to stop, and this run may be stopped so by a newer one.
    pub cancel_in_progress: bool,
    /// `--once-per`, `--once`: run at most once per period or key.
    pub once: Option<Once>,
}

impl Config {
    pub fn from_cli(cli: Cli) -> Result<Config, Error> {
        let GlobalArgs {
            servers,
            servers_file,
            config_file,
            server_timeout,
            restart_guard,
            tls_ca_cert,
            prefix,
            json,
            quiet,
            verbose,
        } = cli.global;
        let output = OutputMode {
            json,
            quiet,
            verbose,
        };
        let fleet = match cli.command {
            Command::Generate(_) | Command::Keeper => fleet::Fleet::default(),
            _ => fleet::load(config_file.as_deref(), &fleet::default_files())?,
        };
        let prefix = match (prefix, &fleet.prefix) {
            (Some(given), _) => given.as_bytes().to_vec(),
            (None, Some(from_file)) => from_file.value.clone(),
            (None, None) => Vec::new(),
        };
        let job = match cli.command {
            Command::Generate(args) => {
                let (what, dir) = (args.what, args.dir);
                let task = Task::Generate { what, dir };
                return Ok(Config::new(task, output));
            }
            Command::Keeper => return Ok(Config::new(Task::Keeper, output)),
            Command::Acquire(args) => LockJob::Acquire(acquire_job(args, &prefix)?),
            Command::Release(args) => release(args, &prefix)?,
            Command::Extend(args) => extend(args, &prefix)?,
            Command::Done(args) => done(args, &prefix)?,
            Command::Status(args) => status(args, &prefix)?,
            Command::List(args) => list(args, &prefix, json)?,
            Command::Exec(args) => {
                let name_key = fleet.name_key.as_ref().map(|key| key.value.as_slice());
                LockJob::Exec(exec_spec(args, (&prefix, name_key), json, &servers)?)
            }
            Command::Doctor(args) => LockJob::Doctor(DoctorJob {
                ttl: ttl(args.ttl, MIN_TTL)?,
                single: args.single,
                strict: args.strict,
                accept_replicas: args.accept_replicas,
            }),
        };
        let (servers, notices) = servers_for(
            &job,
            servers::Sources {
                flags: servers,
                env: std::env::var_os("REDLOCK_SERVERS"),
                file: servers_file,
                default_files: servers::Sources::default_files(),
            },
            Timing {
                server_timeout,
                restart_guard,
                fleet,
            },
            tls_ca_cert,
            prefix,
        )?;
        Ok(Config {
            task: Task::Lock {
                servers: Box::new(servers),
                job,
            },
            output,
            notices,
        })
    }

    fn new(task: Task, output: OutputMode) -> Self {
        Config {
            task,
            output,
            notices: Vec::new(),
        }
    }
}

fn extend(args: cli::ExtendArgs, prefix: &[u8]) -> Result<LockJob, Error> {
    let key = named_key(prefix, &args.lock.name)?;
    Ok(LockJob::Extend(ExtendJob {
        ttl: ttl(args.ttl.ttl, MIN_TTL)?,
        semaphore: semaphore(&key, &args.limit),
        key,
        token: token(args.lock.token)?,
    }))
}

/// `done NAME TOKEN`.
fn done(args: cli::DoneArgs, prefix: &[u8]) -> Result<LockJob, Error> {
    Ok(LockJob::Done(DoneJob {
        key: named_key(prefix, &args.lock.name)?,
        token: token(args.lock.token)?,
    }))
}

/// `status NAME [--limit K]`.
fn status(args: cli::StatusArgs, prefix: &[u8]) -> Result<LockJob, Error> {
    let key = named_key(prefix, &args.name)?;
    let semaphore = semaphore(&key, &args.limit);
    Ok(LockJob::Status(StatusJob { key, semaphore }))
}

/// `--limit K` on the lock `key`: the semaphore of K slots named so.
fn semaphore(key: &LockKey, limit: &cli::LimitArg) -> Option<Semaphore> {
    limit.limit.map(|k| Semaphore::new(key.clone(), k))
}

fn acquire_job(args: cli::AcquireArgs, prefix: &[u8]) -> Result<AcquireJob, Error> {
    let key = named_key(prefix, &args.name)?;
    Ok(AcquireJob {
        ttl: ttl(args.ttl.ttl, MIN_TTL)?,
        semaphore: semaphore(&key, &args.limit),
        key,
        wait: wait(&args.wait),
        message: message(args.holder),
        conflict_exit: args.wait.conflict_exit_code.unwrap_or(BUSY),
        keep_while: args.keep_while.map(|pid| KeepWhile {
            pid,
            signal: args.while_signal.0,
        }),
        fence: args.fence,
        shared: args.shared,
        supersede: supersede(&args.supersede, false)?,
        once: once(args.once)?,
    })
}

/// `--supersede [--serial N]` (`--cancel-in-progress` implies
/// `--supersede`); `--serial` alone is a usage error.
fn supersede(args: &cli::SupersedeArgs, cancel: bool) -> Result<Option<Supersede>, Error> {
    if args.serial.is_some() && !args.supersede && !cancel {
        return Err(Error::Usage(
            "--serial orders superseding waiters: it needs --supersede (or exec's \
             --cancel-in-progress)"
                .into(),
        ));
    }
    Ok((args.supersede || cancel).then_some(Supersede {
        serial: args.serial,
    }))
}

/// The servers for a lock job, in this order, so that a broken server list
/// says so even when the timeout is bad too.
fn servers_for(
    job: &LockJob,
    sources: servers::Sources,
    timing: Timing,
    tls_ca_cert: Option<PathBuf>,
    prefix: Vec<u8>,
) -> Result<(Servers, Vec<Notice>), Error> {
    let list = servers::resolve(&sources)?;
    let timeout = server_timeout_for(timing.server_timeout()?, job.ttl())?;
    let mut notices = list.notices;
    notices.extend(names::check(&list.specs, &list.source, timeout)?);
    let restart_guard = restart_guard_in_range(timing.restart_guard()?)?;
    ttl_within_guard(job, &restart_guard)?;
    let restart_guard = restart_guard.value;
    let tls_root_cert = match &tls_ca_cert {
        Some(path) if list.specs.iter().any(ServerSpec::is_tls) => {
            Some(servers::read_ca_cert(path)?)
        }
        _ => None,
    };
    let servers = Servers {
        specs: list.specs,
        source: list.source,
        timeout,
        restart_guard,
        tls_ca_cert,
        tls_root_cert,
        prefix,
        config_file: timing.fleet.file,
        wakeups: wakeups(std::env::var_os("REDLOCK_WAKEUPS").as_deref())?,
    };
    Ok((servers, notices))
}

/// The durations given as text, parsed here so that a flag can override a
/// bad environment value, and the config file's, for when neither the flag
/// nor its variable gives one.
struct Timing {
    server_timeout: Option<OsString>,
    restart_guard: Option<OsString>,
    fleet: fleet::Fleet,
}

impl Timing {
    /// The server timeout given: the flag's or its variable's, else the
    /// config file's.
    fn server_timeout(&self) -> Result<Option<Given>, Error> {
        let (flag, variable) = ("--server-timeout", "REDLOCK_SERVER_TIMEOUT");
        Ok(
            match (self.server_timeout.as_deref(), &self.fleet.server_timeout) {
                (Some(text), _) => Some(Given {
                    value: parse_duration_option(text, flag, variable)?,
                    name: flag,
                    place: None,
                }),
                (None, Some(setting)) => Some(Given {
                    value: setting.value,
                    name: "server-timeout",
                    place: Some(fleet::place(&self.fleet, setting.line)),
                }),
                (None, None) => None,
            },
        )
    }

    /// The restart guard: the flag's or its variable's, else the config
    /// file's, else [`DEFAULT_RESTART_GUARD`]; never the command's TTL,
    /// which may differ from one client to the next.
    fn restart_guard(&self) -> Result<Given, Error> {
        let (flag, variable) = ("--restart-guard", "REDLOCK_RESTART_GUARD");
        Ok(
            match (self.restart_guard.as_deref(), &self.fleet.restart_guard) {
                (Some(text), _) => Given {
                    value: parse_duration_option(text, flag, variable)?,
                    name: flag,
                    place: Some(format!("{flag} or {variable}")),
                },
                (None, Some(setting)) => Given {
                    value: setting.value,
                    name: "restart-guard",
                    place: Some(fleet::place(&self.fleet, setting.line)),
                },
                (None, None) => Given {
                    value: DEFAULT_RESTART_GUARD,
                    name: "restart-guard",
                    place: Some("the default".into()),
                },
            },
        )
    }
}

/// A duration given for an option, and where it came from, for messages.
#[derive(Debug, Clone)]
struct Given {
    value: Duration,
    /// The flag (`--server-timeout`), or the config file's name for it.
    name: &'static str,
    /// `config file PATH line N` for a value from the config file.
    place: Option<String>,
}

impl Given {
    /// `--server-timeout 1s`, or `server-timeout 1s (config file PATH line N)`.
    fn shown(&self) -> String {
        let value = crate::duration::exact(self.value);
        match &self.place {
            Some(place) => format!("{} {value} ({place})", self.name),
            None => format!("{} {value}", self.name),
        }
    }
}

/// The restart guard when neither a flag, its variable nor the config file
/// gives one: the default `--ttl`, so that a lock taken with the defaults
/// is covered.
pub const DEFAULT_RESTART_GUARD: Duration = Duration::from_secs(30);

/// No lock may outlive the restart guard: a server that restarted empty is
/// kept out of quorums only for the guard, so a lock that lives longer
/// could be handed out again by a majority that restarted after it was
/// taken. A guard of 0 is off, and so is this cap.
fn ttl_within_guard(job: &LockJob, guard: &Given) -> Result<(), Error> {
    let Some(ttl) = job.ttl() else {
        return Ok(());
    };
    if guard.value.is_zero() || ttl <= guard.value {
        return Ok(());
    }
    // What the guard must be raised to covers the TTL, rounded up.
    let (ttl, shown, needed) = (
        crate::duration::exact(ttl),
        crate::duration::exact(guard.value),
        crate::duration::at_least(ttl),
    );
    let place = guard.place.as_deref().unwrap_or(guard.name);
    let instead = match job {
        LockJob::Exec(_) => format!(
            "exec extends the lock while the command runs, so a --ttl up to {shown} will do"
        ),
        _ => "use exec (which extends a short TTL)".into(),
    };
    Err(Error::Usage(format!(
        "--ttl {ttl} is longer than the restart guard {shown} ({place}): a server that restarts \
         could hand the lock out again before it expires; {instead}, or raise restart-guard for \
         every client of these servers (the config file's restart-guard = {needed})"
    )))
}

/// What a job that takes a lock asks of the servers: `key`, or with
/// `--limit` any slot of `semaphore`, with `record` beside it.
fn take_of(
    (key, semaphore): (&LockKey, Option<&Semaphore>),
    ((ttl, wait), (fence, shared)): ((Duration, Wait), (bool, bool)),
    (record, supersede): (Option<Holder>, Option<Supersede>),
) -> Take {
    let target = match semaphore {
        Some(semaphore) => Target::Slot(semaphore.clone()),
        None => Target::Lock(key.clone()),
    };
    Take {
        fence,
        shared,
        record,
        supersede,
        ..Take::new(target, ttl, wait)
    }
}

impl AcquireJob {
    /// What this job asks of the servers, with `record` beside the lock.
    pub fn take(&self, record: Option<Holder>) -> Take {
        let how = ((self.ttl, self.wait), (self.fence, self.shared));
        take_of(
            (&self.key, self.semaphore.as_ref()),
            how,
            (record, self.supersede),
        )
    }
}

impl ExecSpec {
    /// What this run asks of the servers, with `record` beside the lock.
    pub fn take(&self, record: Option<Holder>) -> Take {
        let how = ((self.ttl, self.wait), (self.fence, self.shared));
        take_of(
            (&self.key, self.semaphore.as_ref()),
            how,
            (record, self.supersede),
        )
    }
}

impl LockJob {
    /// `acquire --while PID`: the process a keeper keeps the lock for.
    pub fn keep_while(&self) -> Option<KeepWhile> {
        match self {
            LockJob::Acquire(job) => job.keep_while,
            _ => None,
        }
    }

    /// The TTL the command asks for, which bounds the server timeout.
    fn ttl(&self) -> Option<Duration> {
        match self {
            LockJob::Acquire(AcquireJob { ttl, .. }) | LockJob::Extend(ExtendJob { ttl, .. }) => {
                Some(*ttl)
            }
            LockJob::Exec(spec) => Some(spec.ttl),
            LockJob::Release(_)
            | LockJob::Done(_)
            | LockJob::ForceRelease(_)
            | LockJob::ClearDone(_)
            | LockJob::Status(_)
            | LockJob::List(_)
            | LockJob::Doctor(_) => None,
        }
    }
}

/// `release NAME TOKEN`, or `release --force NAME`. A TOKEN that comes from
/// REDLOCK_TOKEN (a command under `exec` has one) is no reason to refuse
/// --force; one on the command line is a mistake: --force ignores it.
fn release(args: cli::ReleaseArgs, prefix: &[u8]) -> Result<LockJob, Error> {
    let key = named_key(prefix, &args.lock.name)?;
    if !args.force {
        let token = match args.lock.token {
            None => return Err(Error::Usage(NO_TOKEN_TO_RELEASE.into())),
            given => token(given)?,
        };
        let semaphore = semaphore(&key, &args.limit);
        return Ok(LockJob::Release(ReleaseJob {
            key,
            token,
            semaphore,
        }));
    }
    if args.limit.limit.is_some() {
        return Err(Error::Usage(
            "release --force takes no --limit: break one slot by its own name, e.g.              release --force 'NAME#0'"
                .into(),
        ));
    }
    if args.done {
        return Ok(LockJob::ClearDone(key));
    }
    let from_env = std::env::var("REDLOCK_TOKEN").ok();
    if args.lock.token.is_some() && args.lock.token != from_env {
        return Err(Error::Usage(
            "release --force takes no TOKEN: it deletes the lock whoever holds it".into(),
        ));
    }
    let breaking = Breaking {
        if_token: args.if_token.map(|t| token(Some(t))).transpose()?,
        any_key: args.any_key,
        who: String::new(),
    };
    Ok(LockJob::ForceRelease(ForceJob { key, breaking }))
}

/// `list [PATTERN]`: the pattern is a glob on the name, kept as bytes.
/// `--names` and `--json` each say what stdout is: given both, in either
/// order (clap sees the pair only when `--json` follows `list`), it is a
/// usage error rather than one of them winning silently.
fn list(args: cli::ListArgs, prefix: &[u8], json: bool) -> Result<LockJob, Error> {
    if args.names && json {
        return Err(Error::Usage(
            "list --names prints only the names and --json one JSON object: give one of them"
                .into(),
        ));
    }
    if args.pattern.is_empty() {
        return Err(Error::Usage(
            "the PATTERN must not be empty (leave it out to list every lock)".into(),
        ));
    }
    if let Some(problem) = crate::lock::glob_problem(args.pattern.as_bytes()) {
        return Err(Error::Usage(malformed_glob(problem).into()));
    }
    let query = ListQuery {
        prefix: prefix.to_vec(),
        pattern: args.pattern.as_bytes().to_vec(),
        older_than: args.older_than,
    };
    Ok(LockJob::List(ListJob {
        query,
        names: args.names,
    }))
}

/// Why `list` refuses a PATTERN.
fn malformed_glob(problem: crate::lock::GlobProblem) -> &'static str {
    match problem {
        crate::lock::GlobProblem::UnterminatedClass => {
            "the PATTERN has a '[' without its ']': escape it as '\\[' to match a '['"
        }
        crate::lock::GlobProblem::TrailingBackslash => {
            "the PATTERN ends with a lone '\\': escape it as '\\\\' to match a '\\'"
        }
    }
}

/// `exec`'s job, under `prefix`, deriving a name with `name_key` if given;
/// `servers`, the `-s` values, only for what a missing command says about
/// them.
fn exec_spec(
    args: ExecArgs,
    (prefix, name_key): (&[u8], Option<&[u8]>),
    json: bool,
    servers: &[OsString],
) -> Result<Box<ExecSpec>, Error> {
    if json {
        return Err(Error::Usage(
            "exec has no --json: its stdout is the command's; use `redlock status --json` to \
             read the lock"
                .into(),
        ));
    }
    let ttl = ttl(args.ttl.ttl, MIN_EXEC_TTL)?;
    if args.timeout == Some(Duration::ZERO) {
        return Err(Error::Usage(
            "--timeout must be more than 0 (leave it out for no time limit)".into(),
        ));
    }
    let argv = args.argv;
    let argv = match args.shell {
        Some(line) if line.is_empty() => {
            return Err(Error::Usage("-c needs a non-empty command line".into()))
        }
        Some(line) => vec!["sh".into(), "-c".into(), line],
        None if argv.first().is_none_or(|program| program.is_empty()) => {
            return Err(Error::Usage(format!(
                "no command to run: give it after NAME, or after `--` to name the lock after \
                 it{}",
                flock_s(servers)
            )))
        }
        None => argv,
    };
    let (name, name_source) = match args.name {
        Some(name) => (name, NameSource::Given),
        None => derived_name(&argv, name_key)?,
    };
    let key = lock_key(prefix, &name)?;
    let once = once(args.once)?;
    let wait = wait(&args.wait);
    // A run once that does not wait skips at once, as one that finds the
    // period done does: another host runs it now.
    let busy = match (&once, wait) {
        (Some(_), Wait::No) => 0,
        _ => BUSY,
    };
    Ok(Box::new(ExecSpec {
        semaphore: semaphore(&key, &args.limit),
        key,
        name,
        name_source,
        ttl,
        wait,
        conflict_exit: args.wait.conflict_exit_code.unwrap_or(busy),
        stop: StopPlan::new(ttl, args.kill_after),
        signal: args.signal,
        timeout: args.timeout,
        argv,
        message: message(args.holder),
        record_command: args.record_command,
        fence: args.fence,
        shared: args.shared,
        supersede: supersede(&args.supersede, args.cancel_in_progress)?,
        cancel_in_progress: args.cancel_in_progress,
        once,
    }))
}

/// The longest `--once KEY`: the holder record keeps the run's id whole.
const MAX_ONCE_KEY: usize = 256;

/// `--once-per DUR[@HH:MM]` or `--once KEY` (clap keeps them apart).
fn once(args: cli::OnceArgs) -> Result<Option<Once>, Error> {
    if let Some((period, offset)) = args.once_per {
        return Ok(Some(Once::Per { period, offset }));
    }
    let Some(key) = args.once else {
        return Ok(None);
    };
    let key = key
        .to_str()
        .ok_or_else(|| Error::Usage("the KEY of --once must be text (UTF-8)".into()))?;
    if key.is_empty() || key.contains('\0') || key.len() > MAX_ONCE_KEY {
        return Err(Error::Usage(format!(
            "the KEY of --once must be a non-empty word without NUL, of at most {MAX_ONCE_KEY} \
             bytes"
        )));
    }
    Ok(Some(Once::Key(key.to_owned())))
}

/// What to add when a `-s` value is a bare word (`exec -s deploy
/// ./job.sh`, flock's habit): here it names a server, and the word after it
/// was taken as the lock's NAME.
fn flock_s(servers: &[OsString]) -> String {
    let bare = servers
        .iter()
        .filter_map(|value| value.to_str())
        .find(|value| !value.is_empty() && !value.contains([':', '/', '@', ',', '?', '#']));
    match bare {
        Some(word) => format!(
            "; -s {} names a Redis server here, not the lock, and the word after the options \
             was taken as the lock's NAME (flock's -s, a shared lock, is --shared)",
            crate::redact::value(OsStr::new(word))
        ),
        None => String::new(),
    }
}

/// The `-m` note as text: it is shown to people, so bytes that are not
/// UTF-8 become U+FFFD rather than an error.
fn message(args: cli::HolderArgs) -> Option<String> {
    args.message.map(|m| m.to_string_lossy().into_owned())
}

/// The lock name used when none is given: `exec:`, the program's base name
/// and the first 16 hex digits of a hash of the whole argv (each word's
/// length as 8 big-endian bytes, then the word). The same command gives the
/// same name on any host, so that it contends for the same lock; no
/// argument appears in it. But a hash anyone can compute lets whoever can
/// list the locks test guesses of the arguments offline (10,000 PINs
/// recovered `mysql -p4711`), and a fixed salt would not help. So:
/// - with the config file's `name-key`, the hash is HMAC-SHA256 under that
///   key: only a holder of the key can test a guess;
/// - without it, the SHA-1 of 0.1.0, for a command line without anything
///   that looks like a secret (what `--record-command` would redact); one
///   that has such a thing is refused (a usage error): it needs a NAME or
///   the key.
///
/// The SHA-1 names are shared across versions: they must never change.
pub fn derived_name(
    argv: &[OsString],
    name_key: Option<&[u8]>,
) -> Result<(OsString, NameSource), Error> {
    let mut words = Vec::new();
    for word in argv {
        words.extend_from_slice(&(word.len() as u64).to_be_bytes());
        words.extend_from_slice(word.as_bytes());
    }
    let (digest, source) = match name_key {
        Some(key) => {
            let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
            let tag = ring::hmac::sign(&key, &words);
            let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            (hex, NameSource::Keyed)
        }
        None if crate::redact::holds_secret(argv) => {
            return Err(Error::Usage(
                "no lock name can be derived from this command: it seems to hold a secret \
                 (a password, token or key), and a name derived from it would let anyone who \
                 can list the locks test guesses of it; give the lock a NAME, or set name-key \
                 in the config file"
                    .into(),
            ))
        }
        None => (
            sha1_smol::Sha1::from(&words).digest().to_string(),
            NameSource::Hashed,
        ),
    };
    let program = argv
        .first()
        .map(|p| crate::redact::program_name(p))
        .unwrap_or_default();
    Ok((format!("exec:{program}:{}", &digest[..16]).into(), source))
}

/// Blocking is the default, as in flock; `-w 0` is `-n`.
fn wait(args: &cli::WaitArgs) -> Wait {
    match (args.nonblock, args.wait) {
        (true, _) => Wait::No,
        (false, Some(limit)) if limit.is_zero() => Wait::No,
        (false, Some(limit)) => Wait::For(limit),
        (false, None) => Wait::Forever,
    }
}

fn lock_key(prefix: &[u8], name: &OsStr) -> Result<LockKey, Error> {
    if name.is_empty() {
        return Err(Error::Usage("the lock NAME must not be empty".into()));
    }
    if crate::lock::reserved_in(name.as_bytes()) {
        return Err(Error::Usage(
            "the lock NAME must not hold a NUL byte (00): redlock keeps its own keys beside \
             a lock's under it"
                .into(),
        ));
    }
    Ok(LockKey::prefixed(prefix, name.as_bytes()))
}

/// The key NAME names, given as is or, with `--hex`, as its bytes in hex.
fn named_key(prefix: &[u8], arg: &cli::NameArg) -> Result<LockKey, Error> {
    if !arg.hex {
        return lock_key(prefix, &arg.name);
    }
    let name = from_hex(arg.name.as_bytes()).ok_or_else(|| {
        Error::Usage("with --hex, NAME must be an even number of hex digits".into())
    })?;
    lock_key(prefix, OsStr::from_bytes(&name))
}

/// `616d62ff` → `amb\xff`; `None` unless it is pairs of hex digits.
fn from_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// `release NAME` without a token: how to get on, whichever lock it is.
const NO_TOKEN_TO_RELEASE: &str = "no TOKEN: pass the token `acquire` printed, or set \
    REDLOCK_TOKEN; to break a lock whose holder is dead, use `release --force NAME` \
    (with --if-token TOKEN, only while the token `status` shows still holds it)";

fn token(token: Option<String>) -> Result<Token, Error> {
    match token {
        Some(token) if !token.is_empty() => Ok(Token::from_user(&token)),
        Some(_) => Err(Error::Usage("the TOKEN must not be empty".into())),
        None => Err(Error::Usage(
            "no TOKEN: pass the token `acquire` printed, or set REDLOCK_TOKEN".into(),
        )),
    }
}

/// The longest TTL accepted: far beyond any sane lock, and far inside what
/// Redis accepts for PX.
const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// The shortest TTL that leaves any validity after the clock drift allowance
/// (1% + 2ms) and a round trip.
const MIN_TTL: Duration = Duration::from_millis(10);

/// The shortest TTL for `exec`: room for an extension every TTL/3 and for a
/// stop signal, a grace period and SIGKILL before the deadline.
const MIN_EXEC_TTL: Duration = Duration::from_millis(100);

fn ttl(ttl: Duration, min: Duration) -> Result<Duration, Error> {
    if ttl < min {
        return Err(Error::Usage(format!(
            "--ttl must be at least {}",
            crate::duration::exact(min)
        )));
    }
    if ttl > MAX_TTL {
        return Err(Error::Usage("--ttl must be at most 365 days".into()));
    }
    Ok(ttl)
}

/// `REDLOCK_WAKEUPS`: `0` turns wake-ups on release off (waiters only
/// poll), `1` or unset (or empty) leaves them on.
fn wakeups(value: Option<&OsStr>) -> Result<bool, Error> {
    match value.map(|v| v.to_str()) {
        None | Some(Some("" | "1")) => Ok(true),
        Some(Some("0")) => Ok(false),
        Some(_) => Err(Error::Usage(format!(
            "invalid value '{}' for REDLOCK_WAKEUPS: use 0 (off) or 1 (on)",
            crate::redact::value(value.unwrap_or_default())
        ))),
    }
}

/// A duration option parsed in config (`--server-timeout`,
/// `--restart-guard`), from the flag or its variable, whichever clap chose.
fn parse_duration_option(text: &OsStr, flag: &str, variable: &str) -> Result<Duration, Error> {
    let shown = crate::redact::value(text);
    duration::parse(&text.to_string_lossy()).map_err(|err| {
        // The parser's reason may quote the value too.
        let err = crate::redact::value(OsStr::new(&err.to_string()));
        Error::Usage(format!(
            "invalid value '{shown}' for '{flag} <DUR>' (or {variable}): {err}"
        ))
    })
}

/// The longest server timeout accepted: far beyond any server that is up
/// (a third of the longest TTL is about 121 days), and far inside what a
/// deadline can hold.
const MAX_SERVER_TIMEOUT: Duration = Duration::from_secs(100 * 24 * 3600);

/// The longest restart guard accepted: as long as the longest TTL, which no
/// lock may outlive.
const MAX_RESTART_GUARD: Duration = MAX_TTL;

/// The restart guard, refused beyond [`MAX_RESTART_GUARD`].
fn restart_guard_in_range(guard: Given) -> Result<Given, Error> {
    if guard.value > MAX_RESTART_GUARD {
        return Err(Error::Usage(format!(
            "{} must be at most 365 days",
            guard.name
        )));
    }
    Ok(guard)
}

/// The per-server bound. An explicit value must stay well below the TTL (under
/// a third), or one slow server could eat the whole validity; the default is
/// scaled down for short TTLs instead of failing.
fn server_timeout_for(explicit: Option<Given>, ttl: Option<Duration>) -> Result<Duration, Error> {
    match (explicit, ttl) {
        (Some(timeout), _) if timeout.value.is_zero() => Err(Error::Usage(format!(
            "{} must be greater than 0",
            timeout.name
        ))),
        (Some(timeout), _) if timeout.value > MAX_SERVER_TIMEOUT => Err(Error::Usage(format!(
            "{} must be at most 100 days",
            timeout.name
        ))),
        (Some(timeout), Some(ttl)) if timeout.value >= ttl / 3 => Err(Error::Usage(format!(
            "{} must be below a third of --ttl {}",
            timeout.shown(),
            crate::duration::exact(ttl)
        ))),
        (Some(timeout), _) => Ok(timeout.value),
        (None, Some(ttl)) => Ok(DEFAULT_SERVER_TIMEOUT
            .min(ttl / 5)
            .max(Duration::from_millis(1))),
        (None, None) => Ok(DEFAULT_SERVER_TIMEOUT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn flag(value: Duration) -> Option<Given> {
        Some(Given {
            value,
            name: "--server-timeout",
            place: None,
        })
    }

    #[test]
    fn server_timeout_defaults_and_scales_with_short_ttls() {
        assert_eq!(server_timeout_for(None, None).unwrap(), MS(250));
        assert_eq!(server_timeout_for(None, Some(MS(30_000))).unwrap(), MS(250));
        assert_eq!(server_timeout_for(None, Some(MS(500))).unwrap(), MS(100));
        assert_eq!(server_timeout_for(None, Some(MS(1))).unwrap(), MS(1));
        assert_eq!(
            server_timeout_for(flag(MS(900)), Some(MS(3000))).unwrap(),
            MS(900)
        );
    }

    #[test]
    fn explicit_server_timeout_must_be_well_below_the_ttl() {
        let err = server_timeout_for(flag(MS(1000)), Some(MS(3000))).unwrap_err();
        assert!(err.message().contains("--server-timeout"), "{err:?}");
        assert!(server_timeout_for(flag(MS(0)), None).is_err());
        assert!(server_timeout_for(flag(MAX_SERVER_TIMEOUT), None).is_ok());
        let huge = Duration::from_secs(3_074_457_345_618_258_688);
        let err = server_timeout_for(flag(huge), None).unwrap_err();
        assert_eq!(err.message(), "--server-timeout must be at most 100 days");
        assert!(
            server_timeout_for(flag(MS(5000)), None).is_ok(),
            "no TTL to compare with"
        );
    }

    /// The whole chain behind "the command is gone before the lock can
    /// lapse", for every TTL `exec` accepts and any `-k`: the keeper's
    /// interval (lock), the clock drift (lock), the default server timeout
    /// (here) and the stop plan (supervise) fit together.
    #[test]
    fn the_kill_lands_before_the_validity_ends_for_every_exec_ttl() {
        let ttls = (0..=40).map(|i| MIN_EXEC_TTL.mul_f64(1.5f64.powi(i)).min(MAX_TTL));
        for ttl in ttls.chain([MIN_EXEC_TTL, MAX_TTL]) {
            for kill_after in [MS(0), MS(1), ttl / 4, ttl, MS(5_000), MAX_TTL] {
                let plan = StopPlan::new(ttl, kill_after);
                let started = crate::clock::BootInstant::from_nanos(1_000_000_000);
                // The lease's deadline, as lock/ computes it from the start of
                // the round, is before the servers expire the key.
                let deadline = started + ttl.saturating_sub(crate::lock::drift(ttl));
                assert!(deadline < started + ttl, "{ttl:?}");
                // SIGKILL lands before the deadline, never before the signal.
                assert!(plan.margin >= MS(5), "{ttl:?}");
                assert!(plan.kill_at(deadline) < deadline, "{ttl:?}");
                assert!(plan.term_at(deadline) <= plan.kill_at(deadline));
                // A keeper that extends after its interval and gets its reply
                // within the default server timeout does so before the stop
                // signal would be sent, so a healthy lock never stops.
                let timeout = server_timeout_for(None, Some(ttl)).unwrap();
                let extended = started + crate::lock::keeper_interval(ttl) + timeout;
                assert!(
                    extended < plan.term_at(deadline),
                    "ttl {ttl:?}, -k {kill_after:?}: extended at {extended:?}, stop at {:?}",
                    plan.term_at(deadline)
                );
                // An explicit timeout is below a third of the TTL, so that an
                // extension that waits for it still leaves validity.
                assert!(server_timeout_for(flag(ttl / 3), Some(ttl)).is_err());
            }
        }
    }

    /// [`Timing`] with the flag's (or variable's) text and the config
    /// file's guard.
    fn timing(given: Option<&str>, file: Option<Duration>) -> Timing {
        let setting = |value| fleet::Setting { value, line: 4 };
        Timing {
            server_timeout: None,
            restart_guard: given.map(OsString::from),
            fleet: fleet::Fleet {
                file: Some(PathBuf::from("/etc/redlock/config")),
                restart_guard: file.map(setting),
                ..fleet::Fleet::default()
            },
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn the_guard_is_the_flag_else_the_config_file_else_30s_never_the_ttl() {
        let guard = |given, file| timing(given, file).restart_guard().unwrap();
        assert_eq!(guard(None, None).value, DEFAULT_RESTART_GUARD);
        assert_eq!(guard(None, None).value, MS(30_000));
        assert_eq!(guard(None, Some(HOUR)).value, HOUR);
        assert_eq!(
            guard(None, Some(HOUR)).place.as_deref(),
            Some("config file /etc/redlock/config line 4")
        );
        assert_eq!(guard(Some("2h"), Some(HOUR)).value, 2 * HOUR);
        assert_eq!(guard(Some("0"), Some(HOUR)).value, Duration::ZERO);
        let err = timing(Some("soon"), Some(HOUR))
            .restart_guard()
            .unwrap_err();
        assert!(err.message().contains("--restart-guard"), "{err:?}");
    }

    #[test]
    fn the_default_guard_is_the_default_ttl() {
        use clap::Parser as _;
        let cli = Cli::try_parse_from(["redlock", "acquire", "x"]).unwrap();
        let Command::Acquire(args) = cli.command else {
            panic!("not acquire");
        };
        assert_eq!(args.ttl.ttl, DEFAULT_RESTART_GUARD);
    }

    #[test]
    fn no_ttl_may_outlive_the_guard_unless_the_guard_is_off() {
        let acquire = |ttl| {
            LockJob::Acquire(AcquireJob {
                key: LockKey::new(b"k".to_vec()),
                ttl,
                wait: Wait::No,
                message: None,
                conflict_exit: 75,
                keep_while: None,
                semaphore: None,
                fence: false,
                shared: false,
                supersede: None,
                once: None,
            })
        };
        let guard = |value| Given {
            value,
            name: "restart-guard",
            place: Some("the default".into()),
        };
        let cap = |ttl, g| ttl_within_guard(&acquire(ttl), &guard(g));
        assert!(cap(MS(30_000), MS(30_000)).is_ok(), "up to the guard");
        let err = cap(MS(31_000), MS(30_000)).unwrap_err();
        assert_eq!(err.exit(), crate::exit_code::Exit::Usage);
        let text = err.message();
        assert!(
            text.starts_with("--ttl 31s is longer than the restart guard 30s (the default): "),
            "{text}"
        );
        assert!(
            text.contains("use exec") && text.contains("restart-guard = 31s"),
            "{text}"
        );
        assert!(
            cap(2 * HOUR, Duration::ZERO).is_ok(),
            "a guard of 0 is no cap"
        );
        let status = LockJob::Status(StatusJob {
            key: LockKey::new(b"k".to_vec()),
            semaphore: None,
        });
        assert!(ttl_within_guard(&status, &guard(MS(1))).is_ok(), "no TTL");
    }

    #[test]
    fn a_hex_name_is_its_exact_bytes() {
        let arg = |name: &str| cli::NameArg {
            name: name.into(),
            hex: true,
        };
        let key = named_key(b"p:", &arg("616d62ff")).unwrap();
        assert_eq!(key.bytes(), b"p:amb\xff");
        for bad in ["6", "zz", "616d6", ""] {
            assert!(named_key(b"", &arg(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_are_prefix_then_name_bytes() {
        let key = lock_key(b"app:", std::ffi::OsStr::new("deploy")).unwrap();
        assert_eq!(key.bytes(), b"app:deploy");
        assert!(lock_key(b"app:", std::ffi::OsStr::new("")).is_err());
    }

    #[test]
    fn missing_or_empty_tokens_are_usage_errors() {
        assert!(token(None).is_err());
        assert!(token(Some(String::new())).is_err());
        assert_eq!(token(Some("abc".into())).unwrap().as_str(), "abc");
    }

    #[test]
    fn derived_names_are_stable_and_hold_no_argument() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let plain = |words: &[&str]| {
            let (name, source) = derived_name(&argv(words), None).unwrap();
            assert_eq!(source, NameSource::Hashed);
            name
        };
        // Pinned: computed independently (Python's hashlib); the same on
        // every host and every version.
        assert_eq!(plain(&["cron-job.sh"]), "exec:cron-job.sh:f6f6fc7ca98fc808");
        assert_eq!(
            plain(&["sh", "-c", "echo 'hi' there"]),
            "exec:sh:f16ccb67eac76b5f"
        );
        assert_eq!(
            plain(&["/usr/bin/env", "A=1", "x@y"]),
            "exec:env:feb23f052a9f9e72"
        );
        assert_eq!(plain(&["a b"]), "exec:a_b:6e9e3e2196619123");
        assert_eq!(plain(&["a", "b"]), "exec:a:687fb8b40baf82db");
        let key = Some(&b"0123456789abcdef"[..]);
        let (secret, source) =
            derived_name(&argv(&["mysql", "-phunter2", "redis://:hunter3@h"]), key).unwrap();
        assert_eq!(source, NameSource::Keyed);
        let secret = secret.to_string_lossy();
        assert!(!secret.contains("hunter"), "{secret}");
    }

    #[test]
    fn a_name_key_makes_the_name_a_keyed_hash() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        let keyed = |words: &[&str], key: &[u8]| derived_name(&argv(words), Some(key)).unwrap().0;
        // Pinned: HMAC-SHA256 computed independently (Python's hmac).
        assert_eq!(
            keyed(&["mysql", "-p4711"], b"0123456789abcdef"),
            KEYED_MYSQL
        );
        assert_ne!(
            keyed(&["mysql", "-p4711"], b"0123456789abcdeg"),
            KEYED_MYSQL,
            "another key, another name"
        );
        assert_ne!(
            keyed(&["cron-job.sh"], b"0123456789abcdef"),
            "exec:cron-job.sh:f6f6fc7ca98fc808",
            "not the plain hash"
        );
    }

    const KEYED_MYSQL: &str = "exec:mysql:a01fa0d99ac6c1da";

    #[test]
    fn without_a_key_a_command_that_seems_to_hold_a_secret_gets_no_derived_name() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        for secret in [
            &["mysql", "-p4711"][..],
            &["sh", "-c", "mysql -p4711 -e 'select 1'"],
            &["curl", "-H", "Authorization: Bearer abc"],
            &["env", "PASSWORD=1234", "job"],
            &["redis-cli", "-u", "redis://:pw@h"],
            &["tool", "--token", "abc"],
        ] {
            let err = derived_name(&argv(secret), None).unwrap_err();
            assert_eq!(err.exit(), crate::exit_code::Exit::Usage, "{secret:?}");
            let message = err.message();
            assert!(
                message.contains("give the lock a NAME, or set name-key"),
                "{message}"
            );
            assert!(
                !message.contains("4711") && !message.contains("pw"),
                "{message}"
            );
        }
    }
}
