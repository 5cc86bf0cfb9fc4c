//! Who holds a lock: a small record written beside the canonical key, in the
//! same script as the lock itself (see holder.lua). The key keeps the bare
//! token, so other Redlock clients still exclude and are excluded by it; the
//! record lives under a second key that expires and is deleted with the lock.
//!
//! Everything in a record is informational. What a server returns is
//! untrusted: it is read within bounds, and escaped by whoever shows it.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::key::Token;

/// The longest record read back; anything longer is not ours. Each field's
/// bound counts bytes before JSON escapes, which can make one six times
/// longer (`\u0001`): the fields' bounds times six, and room to spare.
const MAX_RECORD: usize = 32 * 1024;

/// What a redlock process records about itself when it takes a lock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The token the record belongs to: a record whose token is not the
    /// lock's value describes an earlier holder and is ignored.
    pub token: String,
    pub host: String,
    /// The `redlock` process that holds the lock.
    pub pid: u32,
    pub user: String,
    /// The command `exec` runs, as a shell would show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's pid, once it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_pid: Option<u32>,
    /// `acquire --while`: the keeper process that extends the lock while
    /// `pid` (the watched process, a script's shell) lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeper_pid: Option<u32>,
    /// The user's note (`-m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The CI job's URL, when the environment names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// `exec` renews the lock this often while its command runs (records
    /// from before redlock wrote it have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_every_ms: Option<u64>,
    /// When `pid` started, in clock ticks after boot (`/proc/PID/stat`), so
    /// that a reused pid is not taken for the holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    /// `exec --cancel-in-progress`: a newer such waiter may ask this holder
    /// to stop (lock/cancel.rs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancellable: bool,
    /// Its `--serial`, if it gave one: only a waiter with a higher one
    /// cancels it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<u64>,
    /// A run once (`--once-per`, `--once`): the run's id, which `redlock
    /// done` marks done (lock/done_mark.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once: Option<String>,
}

/// How much of each field is kept, in bytes: a record stays well under a
/// kilobyte per field, whatever the environment holds.
const HOST_LIMIT: usize = 255;
const USER_LIMIT: usize = 64;
const COMMAND_LIMIT: usize = 1024;
const MESSAGE_LIMIT: usize = 512;
const JOB_LIMIT: usize = 512;

impl Holder {
    /// The record as written beside the lock: JSON, each field cut to its
    /// bound on a character boundary.
    pub fn encode(&self, token: &Token) -> Vec<u8> {
        let bounded = Holder {
            token: token.as_str().to_owned(),
            host: cut(&self.host, HOST_LIMIT),
            pid: self.pid,
            user: cut(&self.user, USER_LIMIT),
            command: self.command.as_deref().map(|c| cut(c, COMMAND_LIMIT)),
            command_pid: self.command_pid,
            keeper_pid: self.keeper_pid,
            message: self.message.as_deref().map(|m| cut(m, MESSAGE_LIMIT)),
            job: self.job.as_deref().map(|j| cut(j, JOB_LIMIT)),
            renew_every_ms: self.renew_every_ms,
            pid_started: self.pid_started,
            cancellable: self.cancellable,
            serial: self.serial,
            once: self.once.as_deref().map(|id| cut(id, MESSAGE_LIMIT)),
        };
        // Serializing plain strings and numbers cannot fail.
        serde_json::to_vec(&bounded).unwrap_or_default()
    }
}

fn cut(text: &str, limit: usize) -> String {
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// A record as one server returned it, with that server's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub holder: Holder,
    /// How long the lock has been held, by the server's own clock (`None`
    /// when the server would not tell its time, or when the record starts
    /// after it: see `ahead`).
    pub held_for: Option<Duration>,
    /// How far the record's start is ahead of the server's clock: a clock
    /// that went back since, or a record not written by redlock. Its age
    /// is then unknown, not 0.
    pub ahead: Option<Duration>,
    /// The holder ran on this host and its process is gone: no process has
    /// its pid (or, when the record has its start time, the process with
    /// its pid started at another time). `false` when that cannot be told:
    /// another host, or a process with its pid that may be it.
    pub pid_gone: bool,
    /// The record names an `acquire --while` keeper that ran on this host
    /// and is gone (SIGKILL, the OOM killer): nothing renews the lock, which
    /// lasts only until it expires. `false` when that cannot be told.
    pub keeper_gone: bool,
    /// The process that renews the lock (`exec` itself, or the keeper of
    /// `acquire --while`) ran on this host and is stopped (Ctrl-Z,
    /// SIGSTOP): nothing renews the lock until it is continued. `false`
    /// when that cannot be told: from another host nothing is known.
    pub renewer_stopped: bool,
}

impl Recorded {
    /// Reads `"<since ms> <json>"` against the server's clock `now_ms`; `None`
    /// for anything that is not a well-formed record of a holder of `value`.
    pub fn parse(raw: &[u8], now_ms: Option<u64>, value: &[u8]) -> Option<Recorded> {
        if raw.len() > MAX_RECORD {
            return None;
        }
        let space = raw.iter().position(|&b| b == b' ')?;
        let since: u64 = std::str::from_utf8(&raw[..space]).ok()?.parse().ok()?;
        let holder: Holder = serde_json::from_slice(&raw[space + 1..]).ok()?;
        let ahead = now_ms.and_then(|now| since.checked_sub(now).filter(|&ms| ms > 0));
        (holder.token.as_bytes() == value).then(|| Recorded {
            pid_gone: gone_here(&holder),
            keeper_gone: keeper_gone_here(&holder),
            renewer_stopped: renewer_stopped_here(&holder),
            held_for: now_ms
                .and_then(|now| now.checked_sub(since))
                .map(Duration::from_millis),
            ahead: ahead.map(Duration::from_millis),
            holder,
        })
    }
}

/// This host's name, as `Holder::host` records it.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown host".to_owned())
}

/// When process `pid` started, in clock ticks after boot: field 22 of
/// `/proc/PID/stat` (after the command name, which may hold anything but
/// ends at the last `)`). `None` when there is no such process.
pub fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// A pid and the start time recorded with it.
type Asked = (u32, Option<u64>);

/// Whether `holder` ran on this host and its process is gone (see
/// [`Recorded::pid_gone`]). Asked once per pid and start time: a listing
/// of many locks held by one process reads /proc once.
fn gone_here(holder: &Holder) -> bool {
    static HOST: LazyLock<String> = LazyLock::new(host_name);
    static SEEN: LazyLock<Mutex<HashMap<Asked, bool>>> = LazyLock::new(Mutex::default);
    if holder.host != *HOST || holder.pid == 0 {
        return false;
    }
    let asked = (holder.pid, holder.pid_started);
    let mut seen = SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *seen
        .entry(asked)
        .or_insert_with(|| match started(holder.pid) {
            None => std::path::Path::new("/proc/self/stat").exists(),
            Some(now) => holder.pid_started.is_some_and(|then| then != now),
        })
}

/// Whether `holder` names a keeper that ran on this host and no live
/// process by its name (`redlock-keeper`) has its pid any more (see
/// [`Recorded::keeper_gone`]).
fn keeper_gone_here(holder: &Holder) -> bool {
    let Some(keeper) = holder.keeper_pid else {
        return false;
    };
    if holder.host != host_name() || !std::path::Path::new("/proc/self/comm").exists() {
        return false;
    }
    // "PID (NAME) STATE ...": a zombie's name is still there.
    let stat = std::fs::read_to_string(format!("/proc/{keeper}/stat")).unwrap_or_default();
    let running = stat.rfind(')').is_some_and(|end| {
        let name = stat[..end].split_once('(').map(|(_, name)| name);
        let state = stat[end + 1..].trim_start().chars().next();
        name == Some("redlock-keeper") && !matches!(state, Some('Z' | 'X'))
    });
    !running
}

/// The state letter of process `pid` (`/proc/PID/stat`, after the
/// command name, which may hold anything but ends at the last `)`).
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Whether the process that renews `holder`'s lock ran on this host and is
/// stopped (see [`Recorded::renewer_stopped`]): the keeper of `acquire
/// --while` when the record names one, else `exec` (a record with a
/// command or a renewal period), by its pid and start time. A plain
/// `acquire` renews nothing: never stopped.
fn renewer_stopped_here(holder: &Holder) -> bool {
    static HOST: LazyLock<String> = LazyLock::new(host_name);
    if holder.host != *HOST {
        return false;
    }
    let (pid, started_then) = match holder.keeper_pid {
        Some(keeper) => (keeper, None),
        None if holder.command.is_some() || holder.renew_every_ms.is_some() => {
            (holder.pid, holder.pid_started)
        }
        None => return false,
    };
    let same = started_then.is_none_or(|then| started(pid) == Some(then));
    // 'T' stopped by a signal, 't' stopped by a tracer.
    pid != 0 && same && matches!(state(pid), Some('T' | 't'))
}

/// Who occupies a lock's key, as far as one server's answer (or a
/// majority's) tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldBy {
    /// A redlock process, with its record.
    Redlock(Box<Recorded>),
    /// A string without a record: another Redlock client's token.
    OtherClient { token: Vec<u8> },
    /// A key of another type: not a lock of any Redlock client.
    NonRedlock { kind: String },
    /// Readers (`--shared`): this many, and no writer.
    Readers { count: u64 },
}

impl HeldBy {
    /// Who holds a key of type `kind` whose value is `value` (strings only),
    /// given the record beside it.
    pub fn of(
        kind: &str,
        value: Option<&[u8]>,
        record: Option<&[u8]>,
        now_ms: Option<u64>,
    ) -> HeldBy {
        match value {
            Some(value) => match record.and_then(|raw| Recorded::parse(raw, now_ms, value)) {
                Some(recorded) => HeldBy::Redlock(Box::new(recorded)),
                None => HeldBy::OtherClient {
                    token: value.to_vec(),
                },
            },
            None => HeldBy::NonRedlock {
                kind: kind.to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder() -> Holder {
        Holder {
            host: "ci-7".into(),
            pid: 4242,
            user: "deploy".into(),
            message: Some("é".repeat(400)),
            ..Holder::default()
        }
    }

    #[test]
    fn a_record_reads_back_with_its_age_and_bounds() {
        let token = Token::generate();
        let record = holder().encode(&token);
        let raw = [b"1000 ".as_slice(), &record].concat();
        let read = Recorded::parse(&raw, Some(61_000), token.as_str().as_bytes()).unwrap();
        assert_eq!(read.held_for, Some(Duration::from_secs(60)));
        assert_eq!(read.holder.host, "ci-7");
        // 400 two-byte characters cut to 512 bytes on a character boundary.
        assert_eq!(read.holder.message.unwrap().len(), 512);
    }

    /// A start after the server's clock (it went back) is no age of 0: the
    /// age is unknown, and how far ahead the start is, known.
    #[test]
    fn a_record_from_the_future_has_no_age() {
        let token = Token::generate();
        let raw = [b"90000 ".as_slice(), &holder().encode(&token)].concat();
        let value = token.as_str().as_bytes();
        let read = Recorded::parse(&raw, Some(61_000), value).unwrap();
        assert_eq!(read.held_for, None);
        assert_eq!(read.ahead, Some(Duration::from_secs(29)));
        let now = Recorded::parse(&raw, Some(90_000), value).unwrap();
        assert_eq!((now.held_for, now.ahead), (Some(Duration::ZERO), None));
        let no_clock = Recorded::parse(&raw, None, value).unwrap();
        assert_eq!((no_clock.held_for, no_clock.ahead), (None, None));
    }

    #[test]
    fn a_record_of_another_token_or_malformed_is_no_record() {
        let token = Token::generate();
        let raw = [b"1000 ".as_slice(), &holder().encode(&token)].concat();
        assert!(Recorded::parse(&raw, Some(2000), b"someone else").is_none());
        assert!(Recorded::parse(b"x {}", Some(2000), b"t").is_none());
        assert!(Recorded::parse(b"1000 {not json", Some(2000), b"t").is_none());
        let huge = [b"1000 ".as_slice(), &vec![b' '; MAX_RECORD]].concat();
        assert!(Recorded::parse(&huge, Some(2000), b"t").is_none());
        assert_eq!(
            HeldBy::of("string", Some(b"v"), None, None),
            HeldBy::OtherClient {
                token: b"v".to_vec()
            }
        );
        assert_eq!(
            HeldBy::of("hash", None, None, None),
            HeldBy::NonRedlock {
                kind: "hash".into()
            }
        );
    }
}
