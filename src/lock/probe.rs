//! Everything `redlock doctor` asks a server about the conditions Redlock's
//! safety rests on ([`Server::probe`]): its INFO, a round trip, its clock,
//! CONFIG and what its ACL allows of every command redlock sends.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::key::{escape_and_cut, record_key, LockKey, SERVER_TEXT_SHOWN};
use super::server_info::Info;
use super::server_url::ServerSpec;
use super::servers::{Server, ServerError};

/// An answer the server would not give (a managed Redis refuses CONFIG or
/// ACL): why, escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

pub type Known<T> = Result<T, Unknown>;

/// How a refusal by the ACL starts (servers.rs says why redlock needs it).
const NOT_PERMITTED: &str = "not permitted";

impl Unknown {
    /// Whether the server's ACL refused the question.
    pub fn is_not_permitted(&self) -> bool {
        self.0.starts_with(NOT_PERMITTED)
    }
}

/// What stops working on a server whose ACL lacks a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    /// The lock itself: the server refuses every attempt, and never counts.
    Lock,
    /// The restart guard (while it is on): the server refuses every attempt.
    RestartGuard,
    /// The holder record beside the lock (who holds it).
    Record,
    /// The line of waiters (fair order).
    Line,
    /// Wake-ups on release: waiters only poll.
    Wakeups,
    /// `redlock list`.
    List,
    /// Shared locks (`--shared`): readers beside the key.
    Shared,
}

/// One command redlock sends (itself, or from its scripts), with the
/// arguments an ACL check needs, and what needs it.
struct Needed {
    command: &'static str,
    feature: Feature,
}

/// Every command redlock sends, and what it is for (lock/scripts/*.lua,
/// servers.rs, notify.rs).
const NEEDED: [Needed; 32] = [
    Needed {
        command: "EVAL",
        feature: Feature::Lock,
    },
    Needed {
        command: "EVALSHA",
        feature: Feature::Lock,
    },
    Needed {
        command: "SET",
        feature: Feature::Lock,
    },
    Needed {
        command: "GET",
        feature: Feature::Lock,
    },
    Needed {
        command: "DEL",
        feature: Feature::Lock,
    },
    Needed {
        command: "PEXPIRE",
        feature: Feature::Lock,
    },
    Needed {
        command: "PTTL",
        feature: Feature::Lock,
    },
    Needed {
        command: "TYPE",
        feature: Feature::Lock,
    },
    Needed {
        command: "STRLEN",
        feature: Feature::Lock,
    },
    Needed {
        command: "INFO",
        feature: Feature::RestartGuard,
    },
    Needed {
        command: "TIME",
        feature: Feature::RestartGuard,
    },
    Needed {
        command: "SET",
        feature: Feature::RestartGuard,
    },
    Needed {
        command: "SET",
        feature: Feature::Record,
    },
    Needed {
        command: "ZADD",
        feature: Feature::Line,
    },
    Needed {
        command: "ZRANGE",
        feature: Feature::Line,
    },
    Needed {
        command: "ZRANGEBYSCORE",
        feature: Feature::Line,
    },
    Needed {
        command: "ZREM",
        feature: Feature::Line,
    },
    Needed {
        command: "ZSCORE",
        feature: Feature::Line,
    },
    Needed {
        command: "ZCOUNT",
        feature: Feature::Line,
    },
    Needed {
        command: "PUBLISH",
        feature: Feature::Wakeups,
    },
    Needed {
        command: "SUBSCRIBE",
        feature: Feature::Wakeups,
    },
    Needed {
        command: "SCAN",
        feature: Feature::List,
    },
    Needed {
        command: "TIME",
        feature: Feature::Shared,
    },
    Needed {
        command: "HSET",
        feature: Feature::Record,
    },
    Needed {
        command: "HGET",
        feature: Feature::Record,
    },
    Needed {
        command: "HSTRLEN",
        feature: Feature::Record,
    },
    Needed {
        command: "HDEL",
        feature: Feature::Record,
    },
    Needed {
        command: "ZADD",
        feature: Feature::Shared,
    },
    Needed {
        command: "ZRANGEBYSCORE",
        feature: Feature::Shared,
    },
    Needed {
        command: "ZREM",
        feature: Feature::Shared,
    },
    Needed {
        command: "ZSCORE",
        feature: Feature::Shared,
    },
    Needed {
        command: "ZCOUNT",
        feature: Feature::Shared,
    },
];

/// A command the server's ACL does not allow this user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub command: &'static str,
    pub feature: Feature,
}

/// Everything `doctor` asked one server, or why it did not answer.
#[derive(Debug, Clone)]
pub struct Probe {
    pub spec: ServerSpec,
    pub answer: Result<Facts, ServerError>,
}

/// What one server that answered said.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The shortest round trip of a few PINGs.
    pub rtt: Duration,
    /// `INFO`, or why not (NOPERM: the user lacks +info).
    pub info: Known<Info>,
    /// This server's clock (TIME) minus ours, in ms, at the moment it
    /// answered as best we can tell (± rtt/2).
    pub clock_offset_ms: Known<i64>,
    /// `CONFIG GET appendfsync`.
    pub appendfsync: Known<String>,
    /// `ACL DRYRUN` of every command redlock sends (Redis ≥ 7): those the
    /// user lacks.
    pub missing: Known<Vec<Missing>>,
}

/// How many PINGs measure the round trip (the first also connects).
const PINGS: usize = 3;

impl Server {
    /// Asks this server everything `doctor` checks; `prefix` is the key
    /// prefix the locks live under (ACLs often limit keys to it).
    pub async fn probe(&self, prefix: &[u8]) -> Probe {
        let answer = self.facts(prefix).await;
        Probe {
            spec: self.spec().clone(),
            answer,
        }
    }

    async fn facts(&self, prefix: &[u8]) -> Result<Facts, ServerError> {
        let mut rtt = Duration::MAX;
        for _ in 0..PINGS {
            let started = std::time::Instant::now();
            let ping = |mut c: super::servers::Connection| async move {
                c.query::<String>(&redis::cmd("PING")).await
            };
            match self.call(ping).await {
                Ok(_) => rtt = rtt.min(started.elapsed()),
                // Reachable, but the ACL refuses even PING: the rest tells.
                Err(ServerError::Refused(why))
                    if rtt == Duration::MAX && why.starts_with(NOT_PERMITTED) =>
                {
                    break
                }
                Err(err) if rtt == Duration::MAX => return Err(err),
                Err(_) => {}
            }
        }
        if rtt == Duration::MAX {
            rtt = Duration::ZERO;
        }
        let info = self
            .ask::<String>(redis::cmd("INFO"))
            .await
            .map(|text| Info::parse(&text));
        let clock_offset_ms = self.clock_offset().await;
        let appendfsync = self.config_get("appendfsync").await;
        let missing = self.missing(prefix).await;
        if let (Err(refused), Err(_), Err(_)) = (&info, &clock_offset_ms, &missing) {
            // Nothing answered after the PINGs: a server that went away.
            if refused.0.starts_with(GONE) {
                return Err(ServerError::Unreachable(refused.0.clone()));
            }
        }
        Ok(Facts {
            rtt,
            info,
            clock_offset_ms,
            appendfsync,
            missing,
        })
    }

    /// One command, or why it went unanswered.
    async fn ask<T: redis::FromRedisValue + Send + 'static>(&self, cmd: redis::Cmd) -> Known<T> {
        let name = cmd.args_iter().next().map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).to_ascii_lowercase(),
            _ => String::new(),
        });
        let request = move |mut c: super::servers::Connection| async move { c.query(&cmd).await };
        self.call(request).await.map_err(|err| match err {
            ServerError::Refused(why) if why.starts_with(NOT_PERMITTED) => Unknown(format!(
                "{NOT_PERMITTED}: the user lacks +{}",
                name.unwrap_or_default()
            )),
            err => unknown(err),
        })
    }

    async fn clock_offset(&self) -> Known<i64> {
        let before = wall_ms();
        let (secs, micros): (i64, i64) = self.ask(redis::cmd("TIME")).await?;
        let after = wall_ms();
        let ours = (before + after) / 2;
        Ok(secs * 1000 + micros / 1000 - ours)
    }

    async fn config_get(&self, name: &str) -> Known<String> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg(name);
        let pairs: Vec<String> = self.ask(cmd).await?;
        match pairs.as_slice() {
            [_, value] => Ok(escape_and_cut(value.as_bytes(), SERVER_TEXT_SHOWN)),
            _ => Err(Unknown(format!("CONFIG GET {name} gave no value"))),
        }
    }

    /// The commands redlock sends that `ACL DRYRUN` says this user may not
    /// run, on keys and a channel like a lock's under `prefix`.
    async fn missing(&self, prefix: &[u8]) -> Known<Vec<Missing>> {
        let user: String = self.ask(acl(&["WHOAMI"])).await?;
        let key = LockKey::prefixed(prefix, b"redlock-doctor");
        let mut pipe = redis::pipe();
        for needed in &NEEDED {
            pipe.add_command(dry_run(&user, needed, &key, prefix));
        }
        let request =
            move |mut c: super::servers::Connection| async move { c.query_all(&pipe).await };
        let replies = self.call(request).await.map_err(unknown)?;
        let mut missing = Vec::new();
        for (needed, reply) in NEEDED.iter().zip(replies) {
            match reply {
                redis::Value::Okay => {}
                redis::Value::SimpleString(ok) if ok == "OK" => {}
                redis::Value::ServerError(err) => {
                    return Err(Unknown(escape_and_cut(
                        format!("ACL DRYRUN: {err:?}").as_bytes(),
                        SERVER_TEXT_SHOWN,
                    )))
                }
                _ => missing.push(Missing {
                    command: needed.command,
                    feature: needed.feature,
                }),
            }
        }
        Ok(missing)
    }
}

/// `ACL sub args…`.
fn acl(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd("ACL");
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// `ACL DRYRUN user COMMAND args…` as redlock sends the command: on the
/// lock's keys, its line, its record, the restart guard's marker, its
/// wake-up channel.
fn dry_run(user: &str, needed: &Needed, key: &LockKey, prefix: &[u8]) -> redis::Cmd {
    let mut cmd = acl(&["DRYRUN", user, needed.command]);
    let lock = key.bytes();
    let reader_records = [lock, super::key::READER_RECORDS_SUFFIX].concat();
    // The line's sorted sets, or for shared locks the readers'.
    let line = match needed.feature {
        Feature::Shared => [lock, super::key::READERS_SUFFIX].concat(),
        _ => [lock, super::key::LINE_SUFFIX].concat(),
    };
    let marker = super::key::guard_marker(prefix);
    let _ = match (needed.command, needed.feature) {
        ("EVAL", _) => cmd.arg("return 1").arg(1).arg(lock),
        ("EVALSHA", _) => cmd
            .arg("e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
            .arg(1)
            .arg(lock),
        ("SET", Feature::RestartGuard) => cmd.arg(&marker).arg("m"),
        ("SET", Feature::Record) => cmd.arg(record_key(key)).arg("r"),
        ("HSET", _) => cmd.arg(&reader_records).arg("t").arg("r"),
        ("HGET" | "HSTRLEN" | "HDEL", _) => cmd.arg(&reader_records).arg("t"),
        ("SET", _) => cmd.arg(lock).arg("t").arg("NX").arg("PX").arg(1000),
        ("PEXPIRE", _) => cmd.arg(lock).arg(1000),
        ("INFO", _) => cmd.arg("server"),
        ("TIME", _) => &mut cmd,
        ("ZADD", _) => cmd.arg(&line).arg(1).arg("t"),
        ("ZRANGE", _) => cmd.arg(&line).arg(0).arg(0),
        ("ZRANGEBYSCORE" | "ZCOUNT", _) => cmd.arg(&line).arg(0).arg(1),
        ("ZREM" | "ZSCORE", _) => cmd.arg(&line).arg("t"),
        ("PUBLISH", _) => cmd.arg(super::notify::channel(key)).arg(""),
        ("SUBSCRIBE", _) => cmd.arg(super::notify::channel(key)),
        ("SCAN", _) => cmd.arg(0),
        _ => cmd.arg(lock),
    };
    cmd
}

/// The start of what [`unknown`] says of a server that went away.
const GONE: &str = "no answer: ";

fn unknown(err: ServerError) -> Unknown {
    match err {
        ServerError::Timeout(_) | ServerError::Unreachable(_) => Unknown(format!("{GONE}{err}")),
        err => Unknown(err.to_string()),
    }
}

fn wall_ms() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}
