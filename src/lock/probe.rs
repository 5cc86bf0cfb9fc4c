//! Everything `redlock doctor` asks a server about the conditions Redlock's
//! safety rests on ([`Server::probe`]): its INFO, a round trip, its clock,
//! CONFIG, what its ACL allows of every command redlock sends, who answers
//! on several new connections, and whose restart-guard markers its db holds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::core::redlock::Redlock;
use super::core::servers::{Server, ServerError};
use super::key::{escape_and_cut, record_key, LockKey, SERVER_TEXT_SHOWN};
use super::server_info::{ClusterNode, Concern, Info};
use super::server_url::ServerSpec;

/// An answer the server would not give (a managed Redis refuses CONFIG or
/// ACL): why, escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

pub type Known<T> = Result<T, Unknown>;

/// How a refusal by the ACL starts (servers.rs says why redlock needs it).
const NOT_PERMITTED: &str = "not permitted";

/// How a question the server has no command for starts: the answer is
/// then not unknown but unasked, and the reason says which command.
const NOT_CHECKED: &str = "not checked: ";

/// Before Redis 6 there is no ACL command at all (or it was renamed
/// away in redis.conf).
const NO_ACL: &str = "not checked: this server has no ACL command (none before Redis 6, or \
     rename-command took it away)";

/// Redis 6 has ACL WHOAMI but no ACL DRYRUN, which came with Redis 7.
const NO_DRYRUN: &str = "not checked: this server has no ACL DRYRUN (Redis < 7)";

impl Unknown {
    /// Whether the server's ACL refused the question.
    pub fn is_not_permitted(&self) -> bool {
        self.0.starts_with(NOT_PERMITTED)
    }

    /// Whether the server has no command to answer the question with (an
    /// older Redis): it was not asked, rather than left unanswered.
    pub fn is_not_checked(&self) -> bool {
        self.0.starts_with(NOT_CHECKED)
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
    /// The db the URL selects (0 unless it says `/N`).
    pub db: i64,
    /// `CONFIG GET enable-debug-command` (Redis ≥ 7 has it).
    pub debug_command: Known<String>,
    /// Who answered on [`CONNECTIONS`] new connections opened at once.
    pub reached: Known<Reached>,
    /// The restart-guard markers of other prefixes in this db.
    pub markers: Known<Markers>,
    /// A cluster node's state and the slots it serves (`None`: INFO does
    /// not say `cluster_enabled:1`).
    pub cluster: Option<Known<ClusterNode>>,
}

/// The servers (`run_id`) that answered on new connections to one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// The connections that answered.
    pub answered: usize,
    /// The distinct run_ids among them, escaped, in the order first seen.
    pub run_ids: Vec<String>,
}

/// What a bounded SCAN of this db found of other fleets' restart guards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    /// The prefixes of other redlock fleets whose guard marker is here,
    /// escaped; at most [`PREFIXES_SHOWN`].
    pub others: Vec<String>,
    /// More such prefixes than those shown.
    pub more: usize,
    /// Whether the SCAN went through the whole db within its bounds.
    pub complete: bool,
}

/// How many new connections `doctor` opens at once to each address: a pool
/// of two servers that picks one at random goes unseen with odds of 2 in
/// 2^8, under 1%; one that alternates, never.
pub const CONNECTIONS: usize = 8;

/// The most of a db the marker SCAN reads: pages of [`SCAN_COUNT`], and
/// a time bound. A db of more keys than that is looked at in part, and
/// the report says so.
const SCAN_PAGES: usize = 100;
const SCAN_COUNT: usize = 1000;
const SCAN_TIME: Duration = Duration::from_secs(1);

/// How many other prefixes the report names.
pub const PREFIXES_SHOWN: usize = 3;

/// What every restart-guard marker's key holds, after its prefix: the
/// marker is `PREFIX\0guard` (and is to become `PREFIX\0guard@DB`);
/// key.rs makes it (`guard_marker`).
const GUARD_TAG: &[u8] = b"\0guard";

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
            let ping = |mut c: super::core::servers::Connection| async move {
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
        let debug_command = self.config_get("enable-debug-command").await;
        let reached = self.reached().await;
        let markers = self.markers(prefix).await;
        let cluster = match &info {
            Ok(info) if info.cluster_enabled == Some(true) => Some(self.cluster_node().await),
            _ => None,
        };
        Ok(Facts {
            rtt,
            info,
            clock_offset_ms,
            appendfsync,
            missing,
            db: self.spec().connection_info().redis_settings().db(),
            debug_command,
            reached,
            markers,
            cluster,
        })
    }

    /// CLUSTER INFO and CLUSTER NODES: whether the cluster is up, and the
    /// slots this node serves.
    async fn cluster_node(&self) -> Known<ClusterNode> {
        let cluster = |sub: &str| {
            let mut cmd = redis::cmd("CLUSTER");
            cmd.arg(sub);
            cmd
        };
        let info: String = self.ask(cluster("INFO")).await?;
        let nodes: String = self.ask(cluster("NODES")).await?;
        Ok(ClusterNode::parse(&info, &nodes))
    }

    /// The run_ids that answer `INFO server` on [`CONNECTIONS`] new
    /// connections, opened at once: behind a DNS round robin, a Service of
    /// several pods or a proxy pool, each connection may reach another
    /// server.
    async fn reached(&self) -> Known<Reached> {
        let mut cmd = redis::cmd("INFO");
        cmd.arg("server");
        let asked = (0..CONNECTIONS).map(|_| self.on_new_connection::<String>(&cmd));
        let mut answered = 0;
        let mut run_ids: Vec<String> = Vec::new();
        let mut failure = None;
        for reply in all(asked.collect()).await {
            match reply.map(|text| Info::parse(&text).run_id) {
                Ok(Some(run_id)) => {
                    answered += 1;
                    if !run_ids.contains(&run_id) {
                        run_ids.push(run_id);
                    }
                }
                Ok(None) => failure = Some(Unknown("INFO has no run_id".into())),
                Err(ServerError::Refused(why)) if why.starts_with(NOT_PERMITTED) => {
                    failure = Some(Unknown(format!("{NOT_PERMITTED}: the user lacks +info")))
                }
                Err(err) => failure = Some(unknown(err)),
            }
        }
        match (answered, failure) {
            (0 | 1, Some(why)) => Err(why),
            _ => Ok(Reached { answered, run_ids }),
        }
    }

    /// The prefixes of the restart-guard markers in this db that are not
    /// `prefix`'s: SCAN for keys holding [`GUARD_TAG`], within
    /// [`SCAN_PAGES`] pages and [`SCAN_TIME`].
    async fn markers(&self, prefix: &[u8]) -> Known<Markers> {
        let pattern = [b"*".as_slice(), GUARD_TAG, b"*"].concat();
        let started = Instant::now();
        let mut others: Vec<Vec<u8>> = Vec::new();
        let mut cursor = 0;
        let mut complete = false;
        for _ in 0..SCAN_PAGES {
            let pattern = pattern.clone();
            let page = move |mut c: super::core::servers::Connection| async move {
                c.scan_page(cursor, &pattern, SCAN_COUNT).await
            };
            let (next, keys) = self.call(page).await.map_err(|err| match err {
                ServerError::Refused(why) if why.starts_with(NOT_PERMITTED) => {
                    Unknown(format!("{NOT_PERMITTED}: the user lacks +scan"))
                }
                err => unknown(err),
            })?;
            for key in keys {
                match marker_prefix(&key) {
                    Some(theirs) if !is_ours(theirs, prefix) => {
                        let theirs = untagged(theirs).to_vec();
                        if !others.contains(&theirs) {
                            others.push(theirs);
                        }
                    }
                    _ => {}
                }
            }
            cursor = next;
            complete = cursor == 0;
            if complete || started.elapsed() > SCAN_TIME {
                break;
            }
        }
        others.sort();
        Ok(Markers {
            more: others.len().saturating_sub(PREFIXES_SHOWN),
            others: others
                .iter()
                .take(PREFIXES_SHOWN)
                .map(|p| escape_and_cut(p, SERVER_TEXT_SHOWN))
                .collect(),
            complete,
        })
    }

    /// One command, or why it went unanswered.
    async fn ask<T: redis::FromRedisValue + Send + 'static>(&self, cmd: redis::Cmd) -> Known<T> {
        let name = cmd.args_iter().next().map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).to_ascii_lowercase(),
            _ => String::new(),
        });
        let request =
            move |mut c: super::core::servers::Connection| async move { c.query(&cmd).await };
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
        let user: String =
            self.ask(acl(&["WHOAMI"]))
                .await
                .map_err(|why| match is_unknown_command(&why.0) {
                    true => Unknown(NO_ACL.to_owned()),
                    false => why,
                })?;
        let key = LockKey::prefixed(prefix, b"redlock-doctor");
        let mut pipe = redis::pipe();
        for needed in &NEEDED {
            pipe.add_command(dry_run(&user, needed, &key, prefix));
        }
        // Each reply as it is, an error too: one that says there is no
        // DRYRUN is told from the rest.
        pipe.ignore_errors();
        let request =
            move |mut c: super::core::servers::Connection| async move { c.query_all(&pipe).await };
        let replies = self.call(request).await.map_err(unknown)?;
        let mut missing = Vec::new();
        for (needed, reply) in NEEDED.iter().zip(replies) {
            match reply {
                redis::Value::Okay => {}
                redis::Value::SimpleString(ok) if ok == "OK" => {}
                redis::Value::ServerError(err) => return Err(dry_run_failed(&err)),
                _ => missing.push(Missing {
                    command: needed.command,
                    feature: needed.feature,
                }),
            }
        }
        Ok(missing)
    }
}

/// Whether a server's error says it has no such command or subcommand
/// (`ERR unknown command 'ACL'…` of Redis 5, or of a renamed ACL;
/// `ERR Unknown subcommand or wrong number of arguments for 'DRYRUN'…`
/// of Redis 6; `ERR unknown subcommand 'DRYRUN'…` of Redis 7).
fn is_unknown_command(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("unknown command") || text.contains("unknown subcommand")
}

/// What an error reply to an ACL DRYRUN means: no DRYRUN on this server
/// (Redis 6), or the server's own words, escaped.
fn dry_run_failed(err: &redis::ServerError) -> Unknown {
    let text = format!("{} {}", err.code(), err.details().unwrap_or_default());
    match is_unknown_command(&text) {
        true => Unknown(NO_DRYRUN.to_owned()),
        false => Unknown(escape_and_cut(
            format!("ACL DRYRUN: {text}").as_bytes(),
            SERVER_TEXT_SHOWN,
        )),
    }
}

/// The prefix of a restart-guard marker's key: what comes before its
/// [`GUARD_TAG`].
fn marker_prefix(key: &[u8]) -> Option<&[u8]> {
    key.windows(GUARD_TAG.len())
        .position(|w| w == GUARD_TAG)
        .map(|at| &key[..at])
}

/// Whether a marker with this prefix is one of `ours`: `ours` itself, or
/// the marker of a name with a hash tag under it (`ours` then the name up
/// to the tag's `}`, key.rs `marker_for`).
fn is_ours(theirs: &[u8], ours: &[u8]) -> bool {
    match theirs.strip_prefix(ours) {
        Some([]) => true,
        Some(rest) => rest.ends_with(b"}") && rest.contains(&b'{'),
        None => false,
    }
}

/// Another fleet's marker prefix without the name's hash tag part, if it
/// is one (`billing:{web}` is `billing:`'s): what its prefix is, as far as
/// the key tells.
fn untagged(theirs: &[u8]) -> &[u8] {
    match theirs.iter().position(|&b| b == b'{') {
        Some(open) if theirs.ends_with(b"}") => &theirs[..open],
        _ => theirs,
    }
}

/// Every future of `futures`, run at once on this task, and their outputs
/// in order.
async fn all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(done) => *output = Some(done),
                    Poll::Pending => pending = true,
                }
            }
        }
        match pending {
            true => Poll::Pending,
            false => Poll::Ready(()),
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
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

impl Redlock {
    /// The servers that can lose a lock they hold (a replica, an eviction
    /// policy that evicts keys with an expiry), as they answered behind the
    /// first attempt. For the servers in `held_on` the answer is waited for
    /// (it was pipelined behind the attempt's own and is all but there);
    /// for the others up to `others` (`None`: only what arrived counts).
    pub async fn concerns(&self, held_on: &[ServerSpec], others: Option<Duration>) -> Vec<Concern> {
        let mut concerns = Vec::new();
        for server in &self.servers {
            let counted = held_on
                .iter()
                .any(|spec| spec.secret_url() == server.spec().secret_url());
            let wait = match counted {
                true => Some(server.timeout()),
                false => others.map(|patience| patience.min(server.timeout())),
            };
            if let Some(info) = server.behind.known(wait).await {
                concerns.extend(Concern::of(server.spec(), counted, &info));
            }
        }
        concerns
    }

    /// Asks every server, at once, everything `doctor` checks; the locks
    /// live under `prefix`.
    pub async fn probe(&self, prefix: &[u8]) -> Vec<Probe> {
        let asked: Vec<_> = self
            .servers
            .iter()
            .map(|server| {
                let (server, prefix) = (Arc::clone(server), prefix.to_vec());
                tokio::spawn(async move { server.probe(&prefix).await })
            })
            .collect();
        let mut probes = Vec::with_capacity(asked.len());
        for (handle, server) in asked.into_iter().zip(&self.servers) {
            probes.push(handle.await.unwrap_or_else(|err| Probe {
                spec: server.spec().clone(),
                answer: Err(ServerError::Failed(err.to_string())),
            }));
        }
        probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error reply with this text, as the client library reads it.
    fn server_error(text: &str) -> redis::ServerError {
        match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
            Ok(redis::Value::ServerError(err)) => err,
            other => panic!("not an error reply: {other:?}"),
        }
    }

    /// What servers before Redis 7 answer for the ACL check: their words
    /// become redlock's, not the client library's raw pipeline error.
    #[test]
    fn an_older_servers_missing_acl_commands_are_told_apart() {
        // Redis 5 (and a Redis whose ACL was renamed away) on ACL WHOAMI.
        assert!(is_unknown_command(
            "unknown command `ACL`, with args beginning with: `WHOAMI`, "
        ));
        assert!(is_unknown_command(
            "ERR unknown command 'ACL', with args beginning with: 'WHOAMI' "
        ));
        // Redis 6.0 and 6.2 on ACL DRYRUN.
        let redis_6 = server_error(
            "ERR Unknown subcommand or wrong number of arguments for 'DRYRUN'. Try ACL HELP.",
        );
        let why = dry_run_failed(&redis_6);
        assert_eq!(why.0, NO_DRYRUN);
        assert!(why.is_not_checked() && !why.is_not_permitted());
        assert!(Unknown(NO_ACL.into()).is_not_checked());
        // Any other error is the server's, said as such.
        let other = server_error("ERR something else");
        assert_eq!(dry_run_failed(&other).0, "ACL DRYRUN: ERR something else");
        assert!(!is_unknown_command("NOPERM this user has no permissions"));
    }

    #[test]
    fn markers_of_this_prefix_and_its_hash_tags_are_ours() {
        let ours = |key: &[u8], prefix: &[u8]| is_ours(marker_prefix(key).unwrap(), prefix);
        // The marker key.rs makes, today's and a db-suffixed one.
        assert!(ours(&super::super::key::guard_marker(b"app:"), b"app:"));
        assert!(ours(&super::super::key::guard_marker(b""), b""));
        assert!(ours(b"app:\0guard@3", b"app:"));
        assert!(ours(b"app:{deploy}\0guard", b"app:"));
        assert!(!ours(b"billing:\0guard", b"app:"));
        assert!(!ours(b"app:x:\0guard", b"app:"));
        assert!(!ours(b"app:\0guard", b""));
        assert_eq!(marker_prefix(b"no marker"), None);
        assert_eq!(untagged(b"billing:{web}"), b"billing:");
        assert_eq!(untagged(b"billing:"), b"billing:");
    }
}
