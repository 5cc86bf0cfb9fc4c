//! Turns parsed arguments into validated settings: parsed server URLs, the
//! effective server timeout, raw key bytes. Every rejection names the option.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cli::{self, Cli, Command, GlobalArgs};
use crate::duration;
use crate::exec::{derived_name, ExecSpec, StopPlan};
use crate::lock::{LockKey, ServerSpec, Token, Wait};

const DEFAULT_SERVER: &str = "redis://127.0.0.1:6379";
const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_millis(250);

/// Input that can never work: exit 64.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A server or TLS setting that cannot be used: exit 78.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// How results and diagnostics are printed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Output {
    pub json: bool,
    pub quiet: bool,
    pub verbose: bool,
}

/// Where the lock lives.
#[derive(Debug)]
pub struct Servers {
    pub specs: Vec<ServerSpec>,
    pub timeout: Duration,
    pub tls_root_cert: Option<Vec<u8>>,
}

/// One validated invocation.
#[derive(Debug)]
pub enum Task {
    /// Work on a lock, which needs the servers.
    Lock(LockTask),
    Generate {
        what: cli::Generated,
        dir: std::path::PathBuf,
    },
    Watchdog {
        signal: Signal,
        plan: StopPlan,
    },
}

#[derive(Debug)]
pub enum LockTask {
    Acquire {
        key: LockKey,
        ttl: Duration,
        wait: Wait,
    },
    Release {
        key: LockKey,
        token: Token,
    },
    Extend {
        key: LockKey,
        token: Token,
        ttl: Duration,
    },
    Status {
        key: LockKey,
    },
    Exec(ExecSpec),
}

#[derive(Debug)]
pub struct Config {
    pub task: Task,
    pub servers: Servers,
    pub output: Output,
}

impl Config {
    pub fn from_cli(cli: Cli) -> anyhow::Result<Config> {
        let GlobalArgs {
            servers,
            server_timeout,
            tls_ca_cert,
            prefix,
            json,
            quiet,
            verbose,
        } = cli.global;
        let prefix = prefix.map(|p| p.as_bytes().to_vec()).unwrap_or_default();
        let key = |name: &cli::NameArg| lock_key(&prefix, &name.name);
        let (task, ttl) = match cli.command {
            Command::Acquire(args) => {
                let ttl = ttl(args.ttl.ttl, MIN_TTL)?;
                let task = LockTask::Acquire {
                    key: key(&args.name)?,
                    ttl,
                    wait: wait(&args.wait),
                };
                (Task::Lock(task), Some(ttl))
            }
            Command::Release(args) => {
                let task = LockTask::Release {
                    key: key(&args.name)?,
                    token: token(args.token)?,
                };
                (Task::Lock(task), None)
            }
            Command::Extend(args) => {
                let ttl = ttl(args.ttl.ttl, MIN_TTL)?;
                let task = LockTask::Extend {
                    key: key(&args.lock.name)?,
                    token: token(args.lock.token)?,
                    ttl,
                };
                (Task::Lock(task), Some(ttl))
            }
            Command::Status(name) => (Task::Lock(LockTask::Status { key: key(&name)? }), None),
            Command::Exec(args) => {
                let ttl = ttl(args.ttl.ttl, MIN_EXEC_TTL)?;
                let argv = match args.shell {
                    Some(line) if line.is_empty() => {
                        return Err(UsageError("-c needs a non-empty command line".into()).into())
                    }
                    Some(line) => vec!["sh".into(), "-c".into(), line],
                    None if args.argv.first().is_none_or(|program| program.is_empty()) => {
                        return Err(UsageError("no command to run after --".into()).into())
                    }
                    None => args.argv,
                };
                let (name, derived_name) = match args.name {
                    Some(name) => (name, false),
                    None => (derived_name(&argv), true),
                };
                let spec = ExecSpec {
                    key: lock_key(&prefix, &name)?,
                    name,
                    derived_name,
                    ttl,
                    wait: wait(&args.wait),
                    conflict_exit: args.conflict_exit_code,
                    stop: StopPlan::new(ttl, args.kill_after),
                    signal: args.signal,
                    argv,
                };
                (Task::Lock(LockTask::Exec(spec)), Some(ttl))
            }
            Command::Watchdog(args) => {
                let plan = StopPlan {
                    grace: Duration::from_millis(args.grace_ms),
                    margin: Duration::from_millis(args.margin_ms),
                };
                (
                    Task::Watchdog {
                        signal: args.signal,
                        plan,
                    },
                    None,
                )
            }
            Command::Generate(args) => {
                let task = Task::Generate {
                    what: args.what,
                    dir: args.dir,
                };
                (task, None)
            }
        };
        Ok(Config {
            task,
            servers: Servers {
                specs: server_specs(&servers)?,
                timeout: server_timeout_for(
                    server_timeout
                        .as_deref()
                        .map(parse_server_timeout)
                        .transpose()?,
                    ttl,
                )?,
                tls_root_cert: tls_ca_cert.map(|path| read_ca_cert(&path)).transpose()?,
            },
            output: Output {
                json,
                quiet,
                verbose,
            },
        })
    }
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

fn lock_key(prefix: &[u8], name: &std::ffi::OsStr) -> Result<LockKey, UsageError> {
    if name.is_empty() {
        return Err(UsageError("the lock NAME must not be empty".into()));
    }
    Ok(LockKey::new([prefix, name.as_bytes()].concat()))
}

fn token(token: Option<String>) -> Result<Token, UsageError> {
    match token {
        Some(token) if !token.is_empty() => Ok(Token::from_user(&token)),
        Some(_) => Err(UsageError("the TOKEN must not be empty".into())),
        None => Err(UsageError(
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

fn ttl(ttl: Duration, min: Duration) -> Result<Duration, UsageError> {
    if ttl < min {
        return Err(UsageError(format!(
            "--ttl must be at least {}",
            humantime::format_duration(min)
        )));
    }
    if ttl > MAX_TTL {
        return Err(UsageError("--ttl must be at most 365 days".into()));
    }
    Ok(ttl)
}

/// Splits `-s`/`REDLOCK_SERVERS` values at commas. A piece with an '@' but
/// no scheme is the rest of a password that held an unencoded comma: it is
/// joined back, so that the password is parsed (and hidden) as one.
fn split_server_list(values: &[&str]) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for piece in values.iter().flat_map(|value| value.split(',')) {
        match urls.last_mut() {
            Some(previous) if piece.contains('@') && !piece.contains("://") => {
                previous.push(',');
                previous.push_str(piece);
            }
            _ => urls.push(piece.to_owned()),
        }
    }
    urls
}

fn server_specs(values: &[OsString]) -> Result<Vec<ServerSpec>, ConfigError> {
    // Checked here, not by clap, which would reject a REDLOCK_SERVERS that
    // is not UTF-8 even when -s overrides it.
    let values = values
        .iter()
        .map(|value| {
            value
                .to_str()
                .ok_or_else(|| ConfigError("--server: a server URL is not valid UTF-8".into()))
        })
        .collect::<Result<Vec<&str>, _>>()?;
    let urls = split_server_list(&values);
    let urls: Vec<&str> = urls
        .iter()
        .map(|u| u.trim())
        .filter(|u| !u.is_empty())
        .collect();
    if urls.is_empty() {
        return Ok(vec![
            ServerSpec::parse(DEFAULT_SERVER).map_err(|e| ConfigError(e.to_string()))?
        ]);
    }
    let specs = urls
        .into_iter()
        .map(|url| ServerSpec::parse(url).map_err(|err| ConfigError(format!("--server: {err}"))))
        .collect::<Result<Vec<_>, _>>()?;
    // The same master listed twice would count twice towards the quorum.
    for (i, spec) in specs.iter().enumerate() {
        if let Some(earlier) = specs[..i]
            .iter()
            .find(|earlier| earlier.identity() == spec.identity())
        {
            return Err(ConfigError(format!(
                "--server: {spec} is listed twice (as {earlier}): the same host and port is one master, \
                 whatever the database"
            )));
        }
    }
    Ok(specs)
}

/// The CA certificate(s) for `rediss://`, checked here so that a wrong file
/// is a configuration error, not an endless series of failed handshakes.
fn read_ca_cert(path: &std::path::Path) -> Result<Vec<u8>, ConfigError> {
    let pem = std::fs::read(path)
        .map_err(|err| ConfigError(format!("--tls-ca-cert {}: {err}", path.display())))?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        return Err(ConfigError(format!(
            "--tls-ca-cert {}: no PEM certificate in the file",
            path.display()
        )));
    }
    Ok(pem)
}

/// `--server-timeout` or `REDLOCK_SERVER_TIMEOUT`, whichever clap chose.
fn parse_server_timeout(text: &std::ffi::OsStr) -> Result<Duration, UsageError> {
    let text = text.to_string_lossy();
    duration::parse(&text).map_err(|err| {
        UsageError(format!(
            "invalid value '{text}' for '--server-timeout <DUR>' (or REDLOCK_SERVER_TIMEOUT): {err}"
        ))
    })
}

/// The per-server bound. An explicit value must stay well below the TTL (under
/// a third), or one slow server could eat the whole validity; the default is
/// scaled down for short TTLs instead of failing.
fn server_timeout_for(
    explicit: Option<Duration>,
    ttl: Option<Duration>,
) -> Result<Duration, UsageError> {
    match (explicit, ttl) {
        (Some(timeout), _) if timeout.is_zero() => {
            Err(UsageError("--server-timeout must be greater than 0".into()))
        }
        (Some(timeout), Some(ttl)) if timeout >= ttl / 3 => Err(UsageError(format!(
            "--server-timeout {} must be below a third of --ttl {}",
            humantime::format_duration(timeout),
            humantime::format_duration(ttl)
        ))),
        (Some(timeout), _) => Ok(timeout),
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

    #[test]
    fn server_timeout_defaults_and_scales_with_short_ttls() {
        assert_eq!(server_timeout_for(None, None).unwrap(), MS(250));
        assert_eq!(server_timeout_for(None, Some(MS(30_000))).unwrap(), MS(250));
        assert_eq!(server_timeout_for(None, Some(MS(500))).unwrap(), MS(100));
        assert_eq!(server_timeout_for(None, Some(MS(1))).unwrap(), MS(1));
        assert_eq!(
            server_timeout_for(Some(MS(900)), Some(MS(3000))).unwrap(),
            MS(900)
        );
    }

    #[test]
    fn explicit_server_timeout_must_be_well_below_the_ttl() {
        let err = server_timeout_for(Some(MS(1000)), Some(MS(3000))).unwrap_err();
        assert!(err.0.contains("--server-timeout"), "{err}");
        assert!(server_timeout_for(Some(MS(0)), None).is_err());
        assert!(
            server_timeout_for(Some(MS(5000)), None).is_ok(),
            "no TTL to compare with"
        );
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
    fn server_lists_split_at_commas_but_not_inside_passwords() {
        let list = split_server_list;
        assert_eq!(list(&["a:1,b:2", "c:3"]), ["a:1", "b:2", "c:3"]);
        assert_eq!(
            list(&["redis://u:p,w@h:1,h:2"]),
            ["redis://u:p,w@h:1", "h:2"]
        );
        assert_eq!(list(&["redis://:1,2@h:1"]), ["redis://:1,2@h:1"]);
    }

    #[test]
    fn servers_default_to_localhost_and_reject_bad_urls() {
        assert_eq!(server_specs(&[]).unwrap()[0].to_string(), DEFAULT_SERVER);
        assert_eq!(
            server_specs(&["a:1".into(), " b:2 ".into()]).unwrap().len(),
            2
        );
        assert!(server_specs(&["ftp://x".into()]).is_err());
        assert!(
            server_specs(&["a:1".into(), "redis://a:1".into()]).is_err(),
            "duplicate"
        );
        assert!(
            server_specs(&["a:1/0".into(), "a:1/1".into()]).is_err(),
            "two databases of one server"
        );
    }
}
