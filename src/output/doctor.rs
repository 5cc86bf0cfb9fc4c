//! `redlock doctor`'s words, which both formats show: each finding as a
//! check's name, a one-line explanation and the fix ([`words`]), the
//! verdict and the levels' words; and the warning `acquire` and `exec`
//! give about a server that can lose a lock. The report as text is in
//! `text/doctor.rs`, as JSON in `json/doctor.rs`.

use std::time::Duration;

use super::format::Level as Loudness;
use super::words::{guard_cause, server_failure};
use crate::duration::rounded;
use crate::lock::{Concern, ConcernKind, Feature, Missing, CLUSTER_SLOTS};
use crate::outcome::report::{Finding, Level, Now, Ready, Report, State};

/// A finding in words: the check, what it found, and the fix (none when
/// nothing needs fixing).
pub(super) struct Said {
    pub check: &'static str,
    pub says: String,
    pub fix: Option<String>,
}

fn said(check: &'static str, says: String, fix: Option<&str>) -> Said {
    Said {
        check,
        says,
        fix: fix.map(str::to_owned),
    }
}

pub(super) fn words(finding: &Finding) -> Said {
    let bad = finding.level() > Level::Ok;
    let unknown = |check, why: &crate::lock::Unknown, fix: Option<&str>| {
        said(check, format!("unknown ({})", why.0), fix)
    };
    match finding {
        Finding::Unreachable(err) => said(
            "reachable",
            format!("{}: it cannot count toward a quorum", server_failure(err)),
            Some("start it, or check the URL, the network and --server-timeout"),
        ),
        Finding::Refused(why) => said(
            "reachable",
            format!("it answers but refuses us: {why}"),
            Some("fix the credentials in the URL, or the server's ACL"),
        ),
        Finding::Master => said("role", "a master".into(), None),
        Finding::Replica { master, read_only } => replica(master.as_deref(), *read_only),
        Finding::RoleUnknown(why) => unknown(
            "role",
            why,
            Some("grant +info, or check by hand (INFO replication) that it is a master"),
        ),
        Finding::Duplicate { of } => said(
            "distinct",
            format!("the same server (run_id) as {of}: one server would count twice"),
            Some("list each server once"),
        ),
        Finding::Eviction { policy, .. } => eviction(policy, bad),
        Finding::EvictionUnknown(why) => unknown("eviction", why, Some("make sure it is noeviction")),
        Finding::Persistence { aof, fsync, guard } => persistence(finding, *aof, fsync, *guard),
        Finding::PersistenceUnknown(why) => unknown(
            "persistence",
            why,
            Some("make sure it has appendonly yes and appendfsync always, or keep the restart guard on"),
        ),
        Finding::Uptime { uptime, guard } => uptime_words(*uptime, *guard, bad),
        Finding::Clock { off, ahead, bound } => clock(*off, *ahead, *bound, bad),
        Finding::ClockUnknown(why) => unknown("clock", why, None),
        Finding::RoundTrip { rtt, timeout } => round_trip(*rtt, *timeout, bad),
        Finding::Cluster(on) => cluster(*on),
        Finding::Acl {
            missing,
            guard_on,
            complete,
        } => acl(missing, *guard_on, *complete),
        // An older server without the command: why, in redlock's words.
        Finding::AclUnknown(why) if why.is_not_checked() => {
            said("acl", why.0.clone(), Some(ACL_BY_HAND))
        }
        Finding::AclUnknown(why) => unknown("acl", why, Some(ACL_BY_HAND)),
        Finding::Replicas {
            attached,
            replicas,
            accepted,
        } => replicas_words(*attached, replicas, *accepted),
        Finding::Address(reached) => address(reached),
        Finding::AddressUnknown(why) => unknown("address", why, Some(ADDRESS_BY_HAND)),
        Finding::Debug(setting) => debug(setting),
        Finding::DebugAlways(version) => debug_always(version),
        Finding::DebugUnknown(why) => unknown("debug", why, Some(DEBUG_BY_HAND)),
        Finding::Shared {
            db,
            other_dbs,
            markers,
        } => shared(*db, other_dbs, markers),
        Finding::Count { servers, single } => count(*servers, *single, finding.level()),
        Finding::Quorum {
            masters,
            answered,
            quorum,
        } => quorum_words(*masters, *answered, *quorum, bad),
        Finding::Now(now) => now_words(now),
        Finding::Ready(ready) => ready_words(ready),
    }
}

/// Whether a lock can count one server now.
fn now_words(now: &Now) -> Said {
    match now {
        Now::Usable => said("now", "usable: a lock can count it now".into(), None),
        Now::GuardUnknown(err) => said(
            "now",
            format!(
                "usable as far as doctor can tell; the restart guard's word is unknown: a \
                 cluster node keeps it per hash tag ({})",
                cut(&server_failure(err), 120)
            ),
            Some("redlock status on a name with its {hash tag} reads that tag's guard"),
        ),
        Now::Guarded(guarded) => said(
            "now",
            format!(
                "kept out of quorums by the restart guard for another {} ({}: {})",
                rounded(guarded.left),
                guarded.cause.as_str(),
                guard_cause(guarded.cause)
            ),
            Some("wait: it counts again by itself; if it happens again, find out why"),
        ),
        Now::NoSlots(node) => said(
            "now",
            format!(
                "a cluster node with cluster_state {} serving {} of {CLUSTER_SLOTS} hash slots: \
                 every lock fails on it",
                node.state, node.slots
            ),
            Some("assign it slots (CLUSTER ADDSLOTS), or use standalone masters (cluster-enabled no)"),
        ),
        Now::Out(what) => said("now", format!("cannot count: {what}"), None),
        Now::Fails(err) => said(
            "now",
            format!("the lock's script {} on it", server_failure(err)),
            Some("see its reachable and acl checks"),
        ),
    }
}

/// Whether a lock can be taken now: the servers usable against the quorum.
fn ready_words(ready: &Ready) -> Said {
    let Ready {
        usable,
        total,
        quorum,
        ..
    } = *ready;
    let of = format!("{usable} of {total} servers usable now, quorum {quorum}");
    match ready.state() {
        State::Ready => said("ready", format!("{of}: a lock can be taken"), None),
        State::Degraded => said(
            "ready",
            format!(
                "degraded: {of}: a lock can be taken, and {}",
                match usable - quorum {
                    0 => "no other server can fail".to_owned(),
                    1 => "1 more server can fail".to_owned(),
                    n => format!("{n} more servers can fail"),
                }
            ),
            Some("bring the other servers back (see their now checks)"),
        ),
        State::NotReady(left) => said(
            "ready",
            format!(
                "not ready yet: {of}: the restart guard keeps {} out; a lock can be taken in {}",
                ready.guarded.len(),
                rounded(left)
            ),
            Some("wait: the restart guard lets them count by then"),
        ),
        State::Unavailable => said(
            "ready",
            format!("unavailable: {of}: no lock can be taken"),
            Some("bring the servers back (see their reachable and now checks)"),
        ),
    }
}

fn replicas_words(attached: u64, replicas: &[String], accepted: bool) -> Said {
    let which = match replicas {
        [] => String::new(),
        [a, b, c, _, ..] => format!(" ({a}, {b}, {c}, …)"),
        shown => format!(" ({})", shown.join(", ")),
    };
    let count = match attached {
        1 => "1 replica attached".to_owned(),
        n => format!("{n} replicas attached"),
    };
    match (attached, accepted) {
        (0, _) => said(
            "replicas",
            "none attached: no failover can promote one".into(),
            None,
        ),
        (_, true) => said(
            "replicas",
            format!(
                "{count}{which}, accepted with --accept-replicas: no failover may promote one \
                 behind this address sooner than the longest --ttl"
            ),
            None,
        ),
        (_, false) => said(
            "replicas",
            format!(
                "{count}{which}: a failover (Sentinel, a managed Redis) promotes one behind \
                 this address, and it may have missed the last writes, so a lock it lost can be \
                 taken twice, and a --fence counter hands a number out again"
            ),
            Some(
                "list independent masters with no failover behind their addresses; or, if a \
                 failover waits longer than the longest --ttl (or never happens), keep the \
                 restart guard on and pass --accept-replicas",
            ),
        ),
    }
}

fn address(reached: &crate::lock::Reached) -> Said {
    let connections = crate::lock::CONNECTIONS;
    if reached.run_ids.len() <= 1 {
        return said(
            "address",
            format!(
                "{} of {connections} new connections answered, all from the same server (run_id)",
                reached.answered
            ),
            None,
        );
    }
    let run_ids: Vec<&str> = reached
        .run_ids
        .iter()
        .map(|id| id.get(..8).unwrap_or(id))
        .collect();
    said(
        "address",
        format!(
            "{connections} new connections reached {} servers (run_id {}): several servers \
             behind one address (DNS round robin, a proxy pool, a Service of several pods) \
             each take locks the others do not see, so two clients can hold one lock",
            run_ids.len(),
            run_ids.join(", ")
        ),
        Some("list an address that reaches one server only (each pod or host's own), once each"),
    )
}

/// How to check by hand what the address check could not.
const ADDRESS_BY_HAND: &str =
    "make sure one server alone answers at this address (no DNS round robin or pool)";

/// How to check by hand what the debug check could not.
const DEBUG_BY_HAND: &str =
    "check by hand that redis.conf has enable-debug-command no (Redis 7's default)";

fn debug_always(version: &str) -> Said {
    said(
        "debug",
        format!("Redis {version}: before Redis 7, DEBUG is always enabled; {DEBUG_RELOAD}"),
        Some(
            "remove +debug from every user's ACL (or rename-command DEBUG \"\" in redis.conf), \
             or upgrade to Redis 7 with enable-debug-command no",
        ),
    )
}

/// What DEBUG enabled lets a client do.
const DEBUG_RELOAD: &str = "a client with +debug can run DEBUG RELOAD, which loads an older \
    dataset into the live process: the restart guard cannot see it, and a lock it drops can be \
    taken twice";

fn debug(setting: &str) -> Said {
    match setting {
        "no" => said(
            "debug",
            "enable-debug-command no: DEBUG RELOAD, which the restart guard cannot see, is refused"
                .into(),
            None,
        ),
        setting => said(
            "debug",
            format!(
                "enable-debug-command {setting}: {}{DEBUG_RELOAD}",
                match setting {
                    "local" => "from the server's own host, ",
                    _ => "",
                }
            ),
            Some("set enable-debug-command no in redis.conf and restart (CONFIG SET cannot)"),
        ),
    }
}

fn shared(
    db: i64,
    other_dbs: &[(u32, u64)],
    markers: &Result<crate::lock::Markers, crate::lock::Unknown>,
) -> Said {
    let mut parts = Vec::new();
    if !other_dbs.is_empty() {
        let dbs: Vec<String> = other_dbs
            .iter()
            .map(|(db, keys)| format!("db {db} ({keys} key{})", if *keys == 1 { "" } else { "s" }))
            .collect();
        parts.push(format!(
            "{} also hold{} keys: SWAPDB {db} {} (by any user of this server) puts other data \
             in place of this db's locks",
            dbs.join(", "),
            if dbs.len() == 1 { "s" } else { "" },
            other_dbs[0].0
        ));
    }
    let partly = match markers {
        Ok(m) if !m.complete => " (the scan looked at part of this db only)",
        _ => "",
    };
    match markers {
        Ok(m) if !m.others.is_empty() => {
            let prefixes: Vec<String> = m.others.iter().map(|p| format!("\"{p}\"")).collect();
            let more = match m.more {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            parts.push(format!(
                "db {db} holds the restart guard markers of other prefixes ({}{more}){partly}: \
                 another fleet's FLUSHDB or SWAPDB replaces these locks too",
                prefixes.join(", ")
            ));
        }
        Ok(_) => {}
        Err(why) => parts.push(format!("other prefixes in db {db} unknown ({})", why.0)),
    }
    let found = !other_dbs.is_empty() || matches!(markers, Ok(m) if !m.others.is_empty());
    match found {
        true => said(
            "shared",
            parts.join("; "),
            Some(
                "give each fleet a server of its own, or deny the other users SWAPDB, FLUSHDB \
                 and FLUSHALL (ACL SETUSER <user> -swapdb -flushdb -flushall)",
            ),
        ),
        false if parts.is_empty() => said(
            "shared",
            format!(
                "no other db holds keys, and no other prefix's guard marker is in db {db}{partly}"
            ),
            None,
        ),
        false => said(
            "shared",
            format!("no other db holds keys; {}", parts.join("; ")),
            Some("grant +scan, or check by hand that no other fleet uses this server"),
        ),
    }
}

/// How to check the ACL where `ACL DRYRUN` cannot.
const ACL_BY_HAND: &str = "check by hand that the user may run EVAL, EVALSHA, SET, GET, DEL, \
    PEXPIRE, PTTL, TYPE, STRLEN, INFO, TIME, ZADD, ZRANGE, ZRANGEBYSCORE, ZREM, ZSCORE, ZCOUNT, \
    HSET, HGET, HDEL, HSTRLEN, PUBLISH, SUBSCRIBE and SCAN (Redis 7's ACL DRYRUN tells)";

fn eviction(policy: &str, bad: bool) -> Said {
    match bad {
        true => said(
            "eviction",
            format!("maxmemory-policy {policy} can evict a held lock (every lock has an expiry)"),
            Some("CONFIG SET maxmemory-policy noeviction, and set it in redis.conf"),
        ),
        false => said(
            "eviction",
            format!("maxmemory-policy {policy}: no lock is evicted"),
            None,
        ),
    }
}

fn round_trip(rtt: Duration, timeout: Duration, bad: bool) -> Said {
    match bad {
        true => said(
            "round trip",
            format!(
                "{}: half of --server-timeout {} or more, so it often answers too late to count",
                ms(rtt),
                rounded(timeout)
            ),
            Some("raise --server-timeout (server-timeout in the config file), or use a nearer server"),
        ),
        false => said(
            "round trip",
            format!("{}, well within --server-timeout {}", ms(rtt), rounded(timeout)),
            None,
        ),
    }
}

fn cluster(on: bool) -> Said {
    match on {
        true => said(
            "cluster",
            "cluster mode: only names with a {hash tag} work, and a failover to a replica can \
             lose a lock"
                .into(),
            Some("use standalone masters (cluster-enabled no)"),
        ),
        false => said("cluster", "standalone, not cluster mode".into(), None),
    }
}

fn replica(master: Option<&str>, read_only: Option<bool>) -> Said {
    let of = master.map(|m| format!(" of {m}")).unwrap_or_default();
    let what = match read_only {
        Some(false) => "writable: it takes locks that replication from its master overwrites",
        _ => "read-only: it refuses every lock",
    };
    said(
        "role",
        format!("a replica{of}, {what}; Redlock needs independent masters"),
        Some("list only independent masters (REPLICAOF NO ONE on it, or replace it in the list)"),
    )
}

fn persistence(
    finding: &Finding,
    aof: bool,
    fsync: &Result<String, crate::lock::Unknown>,
    guard: Duration,
) -> Said {
    let kept = match (aof, fsync.as_deref()) {
        (true, Ok("always")) => {
            return said(
                "persistence",
                "AOF with appendfsync always: a restart keeps its locks".into(),
                None,
            )
        }
        (true, Ok(other)) => {
            format!("AOF with appendfsync {other}: a restart can lose the last locks")
        }
        (true, Err(why)) => format!(
            "AOF, appendfsync unknown ({}): a restart may lose locks",
            why.0
        ),
        (false, _) => "no AOF: a restart loses its locks".to_owned(),
    };
    let fix = "appendonly yes and appendfsync always";
    match finding.level() {
        Level::Unsafe | Level::Unknown => said(
            "persistence",
            format!(
                "{kept}, and the restart guard is off: after a restart it counts at once, and a \
                 lock it lost can be taken twice"
            ),
            Some(&format!(
                "turn the restart guard on (restart-guard = 30s in the config file, at least the \
                 longest --ttl), or {fix}"
            )),
        ),
        _ => said(
            "persistence",
            format!(
                "{kept}; the restart guard ({}) covers it, keeping it out of quorums after one, \
                 though not the fencing counters of --fence ({fix} keeps those)",
                rounded(guard)
            ),
            None,
        ),
    }
}

fn uptime_words(uptime: Duration, guard: Duration, bad: bool) -> Said {
    if bad {
        return said(
            "uptime",
            format!(
                "started {} ago: the restart guard ({}) keeps it out of quorums for another {}",
                rounded(uptime),
                rounded(guard),
                rounded(guard.saturating_sub(uptime))
            ),
            Some("wait for the guard to pass; if it restarts often, find out why"),
        );
    }
    let guard = match guard.is_zero() {
        true => " (the restart guard is off)".to_owned(),
        false => format!(", longer than the restart guard ({})", rounded(guard)),
    };
    said("uptime", format!("up for {}{guard}", rounded(uptime)), None)
}

fn clock(off: Duration, ahead: bool, bound: Duration, bad: bool) -> Said {
    if bad {
        let side = if ahead { "ahead of" } else { "behind" };
        return said(
            "clock",
            format!(
                "its clock (TIME) is {} {side} the others', more than {} (1% of --ttl)",
                rounded(off),
                rounded(bound)
            ),
            Some("run NTP (chrony) on every server's host"),
        );
    }
    said(
        "clock",
        format!("agrees with the others' within {}", rounded(bound)),
        None,
    )
}

/// What a feature's commands are for, and what stops without them.
fn feature(feature: Feature) -> &'static str {
    match feature {
        Feature::Lock => "the lock itself: this server refuses every lock",
        Feature::RestartGuard => "the restart guard: this server refuses every lock while it is on",
        Feature::Record => "the holder record: nobody sees who holds a lock",
        Feature::Line => "the line of waiters: no fair order",
        Feature::Wakeups => "wake-ups on release: waiters only poll",
        Feature::List => "redlock list",
        Feature::Shared => {
            "shared locks: this server refuses every --shared attempt, and a writer once readers \
             hold"
        }
    }
}

fn acl(missing: &[Missing], guard_on: bool, complete: bool) -> Said {
    if missing.is_empty() {
        return said(
            "acl",
            "the user may run every command redlock uses".into(),
            None,
        );
    }
    let mut features: Vec<Feature> = missing.iter().map(|m| m.feature).collect();
    features.sort();
    features.dedup();
    let parts: Vec<String> = features
        .iter()
        .map(|f| {
            let commands: Vec<String> = missing
                .iter()
                .filter(|m| m.feature == *f)
                .map(|m| format!("+{}", m.command.to_ascii_lowercase()))
                .collect();
            let what = match (f, guard_on) {
                (Feature::RestartGuard, false) => "the restart guard, which is off",
                _ => feature(*f),
            };
            format!("{} ({what})", commands.join(" "))
        })
        .collect();
    let mut grant: Vec<String> = missing
        .iter()
        .map(|m| format!("+{}", m.command.to_ascii_lowercase()))
        .collect();
    grant.dedup();
    let rest = match complete {
        true => "",
        false => " (the others could not be checked: the user may not run ACL DRYRUN)",
    };
    said(
        "acl",
        format!("the user lacks {}{rest}", parts.join("; ")),
        Some(&format!("ACL SETUSER <user> {}", grant.join(" "))),
    )
}

fn count(servers: usize, single: bool, level: Level) -> Said {
    let quorum = servers / 2 + 1;
    match level {
        Level::Ok if single => said(
            "count",
            "1 server, accepted with --single: its crash or restart loses the locks".into(),
            None,
        ),
        Level::Ok => said(
            "count",
            format!(
                "{servers} servers, quorum {quorum}: {} may fail",
                servers - quorum
            ),
            None,
        ),
        Level::Warning => said(
            "count",
            format!(
                "{servers} servers, quorum {quorum}: an even count tolerates no more failures \
                 than {} servers",
                servers - 1
            ),
            Some("use an odd number of servers: add or drop one"),
        ),
        _ => said(
            "count",
            format!(
                "{servers} server{}, quorum {quorum}: no failure is tolerated",
                if servers == 1 { "" } else { "s" }
            ),
            Some("use 3 or 5 independent masters, or --single to accept one server's semantics"),
        ),
    }
}

fn quorum_words(masters: usize, answered: usize, quorum: usize, bad: bool) -> Said {
    match (answered < quorum, bad) {
        (true, _) => said(
            "quorum",
            format!(
                "only {answered} of the servers answered, quorum {quorum}: no lock can be taken"
            ),
            Some("bring the servers back, or check the URLs and the network"),
        ),
        (false, true) => said(
            "quorum",
            format!("only {masters} distinct masters can count, quorum {quorum}: no lock is safe"),
            Some("list at least a quorum of distinct, independent masters"),
        ),
        (false, false) => said(
            "quorum",
            format!("{} answered, quorum {quorum}", distinct(masters)),
            None,
        ),
    }
}

/// "1 distinct master", "3 distinct masters".
fn distinct(masters: usize) -> String {
    match masters {
        1 => "1 distinct master".into(),
        n => format!("{n} distinct masters"),
    }
}

/// `text` cut to `chars` characters, with "…" when it was longer.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A duration of a round trip: sub-millisecond ones too.
pub(super) fn ms(duration: Duration) -> String {
    format!("{:.1}ms", duration.as_secs_f64() * 1000.0)
}

pub(super) fn level_word(level: Level) -> &'static str {
    match level {
        Level::Ok => "ok",
        Level::Unknown => "unknown",
        Level::Warning => "warning",
        Level::Unsafe => "unsafe",
    }
}

/// The verdict of the whole report, in the order of the exit status: no
/// lock can be taken, unsafe, not ready yet, degraded, then the worst level.
pub(super) fn verdict(report: &Report) -> &'static str {
    match (report.too_few(), report.state()) {
        (true, _) => "unreachable",
        (_, State::Unavailable) => "unavailable",
        _ if report.unsafe_configuration() => "unsafe",
        (_, State::NotReady(_)) => "not-ready",
        (_, State::Degraded) => "degraded",
        _ => level_word(report.level()),
    }
}

/// The state's word in JSON.
pub(super) fn state_word(state: State) -> &'static str {
    match state {
        State::Ready => "ready",
        State::Degraded => "degraded",
        State::NotReady(_) => "not-ready",
        State::Unavailable => "unavailable",
    }
}

/// What `acquire` and `exec` say of a server that can lose a lock: always
/// when it counts toward the lock just taken, under `-v` otherwise.
pub fn concern(concern: &Concern) -> (Loudness, String) {
    let server = &concern.server;
    let counted = match concern.counted {
        true => "it holds this lock and counts toward the quorum, but ",
        false => "",
    };
    let text = match &concern.kind {
        ConcernKind::Replica { master } => format!(
            "{server} is a replica{}: {counted}replication from its master overwrites what it \
             holds; list only independent masters (see redlock doctor)",
            master
                .as_ref()
                .map(|m| format!(" of {m}"))
                .unwrap_or_default()
        ),
        ConcernKind::Evicts { policy } => format!(
            "{server} has maxmemory-policy {policy}: {counted}it can evict a lock before it \
             expires; set noeviction (see redlock doctor)"
        ),
    };
    let loudness = match concern.counted {
        true => Loudness::Warning,
        false => Loudness::Verbose,
    };
    (loudness, text)
}
