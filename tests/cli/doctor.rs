//! `redlock doctor` against real servers set up with each misconfiguration
//! Redlock's safety cannot stand: a replica, one server listed twice, an
//! eviction policy, an even count, a server that has just restarted, an ACL
//! user without +info, a paused or dead server; and the healthy case. What
//! the restart guard cannot see: a master with a replica attached, two
//! servers behind one address (a round-robin forwarder), DEBUG enabled, a
//! server shared with another db or another fleet's prefix. Then the
//! warning `acquire` and `exec` give when a server they count is a replica
//! or evicts keys with an expiry.

use std::process::Command;
use std::time::Duration;

use crate::support::round_robin::RoundRobin;
use crate::support::{run, wait_until, Cluster, DelayProxy, Output, RedisServer};

/// Servers whose AOF is fsynced on every write: nothing about persistence
/// to say, whatever the restart guard.
const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn doctor(cmd: &mut Command, args: &[&str]) -> Output {
    run(cmd.arg("doctor").args(args))
}

/// The line of `check` in the text report's block that starts with
/// `server` (a URL, or "the N servers").
fn line_of(out: &Output, block: &str, check: &str) -> String {
    let mut lines = out.stdout.lines().skip_while(|l| !l.starts_with(block));
    let _ = lines.next();
    lines
        .take_while(|l| l.starts_with("  "))
        .find(|l| l.split_whitespace().nth(1) == Some(check))
        .unwrap_or_else(|| panic!("no {check} line under {block}:\n{}", out.stdout))
        .to_owned()
}

fn config_set(server: &RedisServer, name: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(&mut server.client())
        .unwrap();
}

fn replica_of(replica: &RedisServer, master: &RedisServer) {
    replica.replicate(master, false);
}

#[test]
fn healthy_servers_exit_0_even_with_strict() {
    let cluster = Cluster::start_with(3, DURABLE);
    for strict in [false, true] {
        let args: &[&str] = if strict { &["--strict"] } else { &[] };
        let out = doctor(&mut cluster.redlock(), args);
        out.assert_code(0, &format!("healthy, strict {strict}"));
        assert!(
            out.stdout
                .ends_with("verdict: ok (0 unsafe, 0 warnings, 0 unknown)\n")
                || out
                    .stdout
                    .contains("verdict: ok (0 unsafe, 0 warnings, 0 unknown"),
            "{}",
            out.stdout
        );
        let url = cluster[0].url();
        assert!(line_of(&out, &url, "role").contains("a master"));
        assert!(line_of(&out, &url, "persistence").contains("appendfsync always"));
        assert!(line_of(&out, &url, "acl").contains("every command"));
        assert!(line_of(&out, "the 3 servers", "count").starts_with("  ok"));
    }
}

#[test]
fn a_replica_in_the_list_is_unsafe() {
    let cluster = Cluster::start_with(3, DURABLE);
    replica_of(&cluster[2], &cluster[0]);
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(1, "a replica");
    let role = line_of(&out, &cluster[2].url(), "role");
    assert!(role.starts_with("  UNSAFE"), "{role}");
    assert!(
        role.contains(&format!("a replica of 127.0.0.1:{}", cluster[0].port())),
        "{role}"
    );
    assert!(role.contains("fix: "), "{role}");
    assert!(line_of(&out, &cluster[0].url(), "role").contains("a master"));
}

#[test]
fn one_server_listed_twice_under_two_spellings_is_unsafe() {
    let twice = RedisServer::start_unix();
    let other = RedisServer::start_with(DURABLE);
    let socket = twice.unix_socket().unwrap();
    let unix = format!("redis+unix://{}", socket.display());
    config_set(&twice, "appendonly", "yes");
    config_set(&twice, "appendfsync", "always");
    let servers = format!("{},{unix},{}", twice.url(), other.url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &[],
    );
    out.assert_code(1, "the same server twice");
    let distinct = line_of(&out, &unix, "distinct");
    assert!(distinct.starts_with("  UNSAFE"), "{distinct}");
    assert!(distinct.contains(&twice.url()), "{distinct}");
    let quorum = line_of(&out, "the 3 servers", "quorum");
    assert!(quorum.contains("2 distinct masters"), "{quorum}");
}

#[test]
fn an_eviction_policy_is_unsafe() {
    let cluster = Cluster::start_with(3, DURABLE);
    config_set(&cluster[1], "maxmemory-policy", "allkeys-lru");
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(1, "allkeys-lru");
    let eviction = line_of(&out, &cluster[1].url(), "eviction");
    assert!(eviction.starts_with("  UNSAFE"), "{eviction}");
    assert!(eviction.contains("maxmemory-policy allkeys-lru can evict a held lock"));
    assert!(eviction.contains("fix: CONFIG SET maxmemory-policy noeviction"));
    assert!(line_of(&out, &cluster[0].url(), "eviction").starts_with("  ok"));
}

#[test]
fn an_even_count_is_a_warning_that_strict_counts() {
    let cluster = Cluster::start_with(4, DURABLE);
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(0, "4 servers");
    let count = line_of(&out, "the 4 servers", "count");
    assert!(count.starts_with("  warning"), "{count}");
    assert!(count.contains("an even count"), "{count}");
    assert!(out.stdout.contains("verdict: warning"), "{}", out.stdout);
    let out = doctor(&mut cluster.redlock(), &["--strict"]);
    out.assert_code(1, "4 servers, --strict");
}

#[test]
fn one_server_needs_single() {
    let server = RedisServer::start_with(DURABLE);
    let one = || {
        let mut cmd = crate::support::redlock();
        cmd.args(["-s", &server.url()]);
        cmd
    };
    let out = doctor(&mut one(), &[]);
    out.assert_code(1, "one server");
    assert!(line_of(&out, "the 1 server:", "count").contains("--single"));
    let out = doctor(&mut one(), &["--single"]);
    out.assert_code(0, "one server, --single");
}

#[test]
fn a_server_that_just_restarted_is_a_warning_under_the_guard() {
    let mut cluster = Cluster::start(3);
    cluster[1].restart();
    // Never seen under this prefix, every server is inside the guard: no
    // lock can be taken yet (issue 28: this was a 0).
    let out = doctor(cluster.redlock().env("REDLOCK_RESTART_GUARD", "1h"), &[]);
    out.assert_code(75, "restarted, guard 1h");
    let uptime = line_of(&out, &cluster[1].url(), "uptime");
    assert!(uptime.starts_with("  warning"), "{uptime}");
    assert!(
        uptime.contains("the restart guard (1h) keeps it out of quorums"),
        "{uptime}"
    );
    // Without AOF the guard is what covers a restart: said, not counted
    // by --strict (issue 28).
    let persistence = line_of(&out, &cluster[1].url(), "persistence");
    assert!(persistence.starts_with("  ok"), "{persistence}");
    assert!(persistence.contains("no AOF"), "{persistence}");
    assert!(
        persistence.contains("the restart guard (1h) covers it"),
        "{persistence}"
    );
    let now = line_of(&out, &cluster[1].url(), "now");
    assert!(
        now.contains("kept out of quorums by the restart guard"),
        "{now}"
    );
    doctor(
        cluster.redlock().env("REDLOCK_RESTART_GUARD", "1h"),
        &["--strict"],
    )
    .assert_code(75, "restarted, --strict");
    // With the guard off, nothing covers a restart without AOF.
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(1, "no AOF, guard off");
    let persistence = line_of(&out, &cluster[1].url(), "persistence");
    assert!(persistence.starts_with("  UNSAFE"), "{persistence}");
    assert!(
        persistence.contains("the restart guard is off"),
        "{persistence}"
    );
}

#[test]
fn an_acl_user_without_info_is_named_with_what_it_breaks() {
    let cluster = Cluster::start_with(3, DURABLE);
    let url = cluster[0].acl_user("doctor", "pw", &["~*", "&*", "+@all", "-info"]);
    let servers = format!("{url},{},{}", cluster[1].url(), cluster[2].url());
    let out = doctor(
        crate::support::redlock()
            .env("REDLOCK_SERVERS", &servers)
            .env("REDLOCK_RESTART_GUARD", "1s"),
        &[],
    );
    out.assert_code(1, "no +info");
    assert!(
        !out.stdout.contains(":pw@"),
        "a password shown: {}",
        out.stdout
    );
    let shown = format!("redis://doctor@127.0.0.1:{}", cluster[0].port());
    let block = out
        .stdout
        .lines()
        .find(|l| l.contains(&format!("127.0.0.1:{}:", cluster[0].port())))
        .unwrap_or_else(|| panic!("{}", out.stdout))
        .split(": ")
        .next()
        .unwrap()
        .to_owned();
    assert!(block.contains("127.0.0.1"), "{block} / {shown}");
    let acl = line_of(&out, &block, "acl");
    assert!(acl.starts_with("  UNSAFE"), "{acl}");
    assert!(acl.contains("+info (the restart guard"), "{acl}");
    assert!(acl.contains("fix: ACL SETUSER <user> +info"), "{acl}");
    // What INFO would have said is unknown, not an error.
    let role = line_of(&out, &block, "role");
    assert!(role.starts_with("  unknown"), "{role}");
}

#[test]
fn a_paused_server_is_a_warning_and_too_few_answering_is_69() {
    let mut cluster = Cluster::start_with(3, DURABLE);
    cluster[2].pause();
    let out = doctor(&mut cluster.redlock(), &[]);
    // Still a majority: degraded (issue 28: this was a 0).
    out.assert_code(2, "one paused");
    assert!(out.stdout.contains("verdict: degraded"), "{}", out.stdout);
    let reachable = line_of(&out, &cluster[2].url(), "reachable");
    assert!(reachable.starts_with("  warning"), "{reachable}");
    assert!(reachable.contains("did not answer"), "{reachable}");
    cluster[1].kill();
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(69, "one paused, one dead");
    assert!(
        out.stdout.contains("verdict: unreachable"),
        "{}",
        out.stdout
    );
    assert!(line_of(&out, "the 3 servers", "quorum").contains("only 1 of the servers answered"));
}

#[test]
fn json_has_one_object_per_server_and_a_verdict() {
    let cluster = Cluster::start_with(3, DURABLE);
    replica_of(&cluster[2], &cluster[0]);
    let out = doctor(&mut cluster.redlock(), &["--json"]);
    out.assert_code(1, "--json, a replica");
    let json = out.json();
    assert_eq!(json["verdict"], "unsafe");
    assert_eq!(json["exit"], 1);
    assert_eq!(json["total"], 3);
    assert_eq!(json["quorum"], 2);
    assert_eq!(json["answered"], 3);
    assert_eq!(json["strict"], false);
    let servers = json["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3);
    for (server, url) in servers.iter().zip(cluster.urls()) {
        assert_eq!(server["server"], url.as_str());
        assert!(server["rtt_ms"].as_f64().unwrap() >= 0.0);
        assert!(server["version"].is_string());
        for check in server["checks"].as_array().unwrap() {
            assert!(
                check["check"].is_string() && check["says"].is_string(),
                "{check}"
            );
            assert!(
                check["fix"].is_null() || check["fix"].is_string(),
                "{check}"
            );
            let level = check["level"].as_str().unwrap();
            assert!(
                ["ok", "unknown", "warning", "unsafe"].contains(&level),
                "{check}"
            );
        }
    }
    assert_eq!(servers[1]["verdict"], "ok");
    assert_eq!(servers[2]["verdict"], "unsafe");
    // The master of that replica is unsafe too: a failover promotes it.
    assert_eq!(servers[0]["verdict"], "unsafe");
    assert_eq!(check(&servers[0], "replicas")["level"], "unsafe");
    for name in ["replicas", "address", "debug", "shared"] {
        assert_eq!(check(&servers[1], name)["level"], "ok", "{name}");
    }
    let role = check(&servers[2], "role");
    assert_eq!(role["level"], "unsafe");
    assert!(role["fix"]
        .as_str()
        .unwrap()
        .contains("independent masters"));
    let overall: Vec<&str> = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(overall, ["count", "quorum", "ready"]);
    // A majority is usable, but the replica is not: degraded, and unsafe,
    // which the exit status puts first.
    assert_eq!(json["state"], "degraded");
    assert_eq!(json["unsafe"], true);
    assert_eq!(json["usable"], 2);
    assert_eq!(servers[2]["usable"], false);
    assert_eq!(check(&servers[2], "now")["says"], "cannot count: a replica");
}

/// Today a replica listed as a master and made writable is counted "3 of
/// 3"; acquire and exec now say so every time its yes counts, and under -v
/// of a read-only one they did not count. The second master is stopped,
/// so that the quorum of 2 needs the replica's yes: a quiet run names a
/// server by what it answered before the majority decided, or within the
/// short grace after (round.rs), and a replica that answers later is named
/// by -v and by doctor.
#[test]
fn acquire_and_exec_warn_of_a_replica_they_count() {
    let mut cluster = Cluster::start(3);
    replica_of(&cluster[2], &cluster[0]);
    config_set(&cluster[2], "replica-read-only", "no");
    let said = format!(
        "{} is a replica of 127.0.0.1:{}: it holds this lock and counts toward the quorum",
        cluster[2].url(),
        cluster[0].port()
    );
    cluster[1].pause();
    let out = run(cluster.redlock().args(["acquire", "-n", "a"]));
    out.assert_code(0, "acquire with a writable replica");
    assert_eq!(out.stderr.matches(&said).count(), 1, "{}", out.stderr);
    let out = run(cluster.redlock().args(["exec", "-n", "b", "true"]));
    out.assert_code(0, "exec with a writable replica");
    assert_eq!(out.stderr.matches(&said).count(), 1, "{}", out.stderr);
    cluster[1].resume();
    // Read-only, it refuses the lock and does not count: said under -v only.
    config_set(&cluster[2], "replica-read-only", "yes");
    let out = run(cluster.redlock().args(["acquire", "-n", "c"]));
    out.assert_code(0, "acquire with a read-only replica");
    assert!(!out.stderr.contains("is a replica"), "{}", out.stderr);
    let out = run(cluster.redlock().args(["-v", "acquire", "-n", "d"]));
    let replica = format!("{} is a replica of", cluster[2].url());
    assert!(out.stderr.contains(&replica), "{}", out.stderr);
    assert!(!out.stderr.contains(&said), "{}", out.stderr);
}

/// Under -v, what a server that did not count is gets said even when its
/// answer comes after the majority's: a read-only replica 30 ms away
/// refuses the lock well after the two masters took it.
#[test]
fn verbose_names_a_far_replica_that_did_not_count() {
    let cluster = Cluster::start(3);
    replica_of(&cluster[2], &cluster[0]);
    let far = DelayProxy::start(30, &[cluster[2].port()]);
    let urls = [
        cluster[0].url(),
        cluster[1].url(),
        format!("redis://127.0.0.1:{}", far.ports[0]),
    ];
    let out = run(cluster
        .redlock()
        .env("REDLOCK_SERVERS", urls.join(","))
        .args(["-v", "acquire", "-n", "far"]));
    out.assert_code(0, "acquire with a far read-only replica");
    let replica = format!("{} is a replica of", urls[2]);
    assert!(out.stderr.contains(&replica), "{}", out.stderr);
}

#[test]
fn acquire_warns_of_a_server_that_evicts_keys_with_an_expiry() {
    let cluster = Cluster::start(3);
    config_set(&cluster[0], "maxmemory-policy", "volatile-lru");
    let out = run(cluster.redlock().args(["acquire", "-n", "e"]));
    out.assert_code(0, "acquire, volatile-lru");
    let said = format!(
        "{} has maxmemory-policy volatile-lru: it holds this lock and counts toward the quorum, \
         but it can evict a lock before it expires",
        cluster[0].url()
    );
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    let out = run(cluster.redlock().args(["acquire", "-n", "f"]));
    assert_eq!(
        out.stderr.matches("maxmemory-policy").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn a_user_without_zadd_is_told_that_shared_locks_are_refused() {
    // Found by review: doctor spoke only of the line's fair order, while
    // every --shared attempt was refused (78).
    let cluster = Cluster::start(3);
    let servers = cluster.acl_user("nozadd", "pw", &["~*", "&*", "+@all", "-zadd"]);
    run(crate::support::redlock()
        .env("REDLOCK_SERVERS", &servers)
        .args(["acquire", "-n", "--shared", "z"]))
    .assert_code(78, "a shared lock without ZADD");
    let doctor = run(crate::support::redlock()
        .env("REDLOCK_SERVERS", &servers)
        .env("REDLOCK_RESTART_GUARD", "0")
        .args(["doctor"]));
    let acl: Vec<&str> = doctor
        .stdout
        .lines()
        .filter(|line| line.contains(" acl "))
        .collect();
    assert_eq!(acl.len(), 3, "{}", doctor.stdout);
    for line in acl {
        assert!(
            line.contains("shared locks: this server refuses every --shared attempt"),
            "{line}"
        );
        assert!(!line.contains("pw"), "{line}");
    }
}

/// Waits until `master` has `n` replicas connected (INFO replication).
fn wait_for_replicas(master: &RedisServer, n: usize) {
    let attached = || master.info_field("replication", "connected_slaves") == Some(n.to_string());
    assert!(
        wait_until(Duration::from_secs(10), attached),
        "{} replicas never attached to {}",
        n,
        master.url()
    );
}

/// Found by review (issue 27): doctor said "ok role a master" of a master
/// with a replica attached, which is what a failover behind its address
/// promotes, without the last writes.
#[test]
fn a_master_with_a_replica_attached_is_unsafe_unless_accepted() {
    let cluster = Cluster::start_with(3, DURABLE);
    let replica = RedisServer::start_with(DURABLE);
    replica_of(&replica, &cluster[0]);
    wait_for_replicas(&cluster[0], 1);
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(1, "a master with a replica");
    let replicas = line_of(&out, &cluster[0].url(), "replicas");
    assert!(replicas.starts_with("  UNSAFE"), "{replicas}");
    assert!(
        replicas.contains(&format!(
            "1 replica attached (127.0.0.1:{})",
            replica.port()
        )),
        "{replicas}"
    );
    assert!(replicas.contains("a failover"), "{replicas}");
    assert!(
        replicas.contains("fix: list independent masters with no failover"),
        "{replicas}"
    );
    assert!(replicas.contains("--accept-replicas"), "{replicas}");
    let none = line_of(&out, &cluster[1].url(), "replicas");
    assert!(none.starts_with("  ok"), "{none}");
    assert!(none.contains("none attached"), "{none}");
    // Knowingly accepted (a delayed failover, or none): no finding.
    let out = doctor(&mut cluster.redlock(), &["--accept-replicas", "--strict"]);
    out.assert_code(0, "--accept-replicas");
    let replicas = line_of(&out, &cluster[0].url(), "replicas");
    assert!(replicas.starts_with("  ok"), "{replicas}");
    assert!(
        replicas.contains("accepted with --accept-replicas"),
        "{replicas}"
    );
}

/// Found by review (issue 27): two live servers behind one address (DNS
/// round robin, a proxy pool) each took the lock for another client, and
/// nothing noticed.
#[test]
fn two_servers_behind_one_address_are_unsafe() {
    let cluster = Cluster::start_with(4, DURABLE);
    let pool = RoundRobin::start(&[cluster[0].port(), cluster[3].port()]);
    let servers = format!("{},{},{}", pool.url(), cluster[1].url(), cluster[2].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &[],
    );
    out.assert_code(1, "two servers behind one address");
    let address = line_of(&out, &pool.url(), "address");
    assert!(address.starts_with("  UNSAFE"), "{address}");
    assert!(
        address.contains("8 new connections reached 2 servers"),
        "{address}"
    );
    assert!(address.contains("fix: list an address that reaches one server"));
    assert!(line_of(&out, &cluster[1].url(), "address").starts_with("  ok"));
    // The control: the same forwarder in front of one server.
    let alone = RoundRobin::start(&[cluster[0].port()]);
    let servers = format!("{},{},{}", alone.url(), cluster[1].url(), cluster[2].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &["--strict"],
    );
    out.assert_code(0, "one server behind the forwarder");
    let address = line_of(&out, &alone.url(), "address");
    assert!(
        address.contains("8 of 8 new connections answered, all from the same server"),
        "{address}"
    );
}

/// Found by review (issue 27): DEBUG RELOAD loads an older dataset into the
/// live process, and the restart guard cannot see it. Redis 7 refuses DEBUG
/// unless enable-debug-command says otherwise.
#[test]
fn debug_enabled_is_a_warning_and_an_acl_without_config_is_unknown() {
    let cluster = Cluster::start_with(2, DURABLE);
    let yes = RedisServer::start_with(&[DURABLE, &["--enable-debug-command", "yes"]].concat());
    let local = RedisServer::start_with(&[DURABLE, &["--enable-debug-command", "local"]].concat());
    let servers = format!("{},{},{}", yes.url(), local.url(), cluster[0].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &[],
    );
    out.assert_code(0, "DEBUG enabled is a warning");
    let debug = line_of(&out, &yes.url(), "debug");
    assert!(debug.starts_with("  warning"), "{debug}");
    assert!(
        debug.contains("enable-debug-command yes: a client with +debug can run DEBUG RELOAD"),
        "{debug}"
    );
    assert!(debug.contains("the restart guard cannot see it"), "{debug}");
    assert!(
        debug.contains("fix: set enable-debug-command no in redis.conf"),
        "{debug}"
    );
    let debug = line_of(&out, &local.url(), "debug");
    assert!(debug.starts_with("  warning"), "{debug}");
    assert!(
        debug.contains("enable-debug-command local: from the server's own host"),
        "{debug}"
    );
    let debug = line_of(&out, &cluster[0].url(), "debug");
    assert!(debug.starts_with("  ok"), "{debug}");
    assert!(debug.contains("enable-debug-command no"), "{debug}");
    doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &["--strict"],
    )
    .assert_code(1, "DEBUG enabled, --strict");
    // A user that may not run CONFIG: the check could not be made, and
    // doctor says so rather than failing.
    let url = yes.acl_user("noconfig", "pw", &["~*", "&*", "+@all", "-config"]);
    let servers = format!("{url},{},{}", cluster[0].url(), cluster[1].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &[],
    );
    out.assert_code(0, "no +config");
    let debug = out
        .stdout
        .lines()
        .find(|l| l.contains(" debug "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(debug.starts_with("  unknown"), "{debug}");
    assert!(
        debug.contains("not permitted: the user lacks +config"),
        "{debug}"
    );
    assert!(debug.contains("enable-debug-command no"), "{debug}");
}

/// Found by review (issue 27): `SWAPDB 0 1`, where a second fleet uses db 1,
/// gave two holders. A server shared with another db, or with another
/// fleet's prefix in this db, is named, with what the other fleet can do.
#[test]
fn a_server_shared_with_another_db_or_prefix_is_a_warning() {
    let cluster = Cluster::start_with(3, DURABLE);
    // Another fleet's redlock, under another prefix: its acquire writes
    // its restart guard's marker (the servers are new: it gets 69).
    run(cluster
        .redlock()
        .env("REDLOCK_RESTART_GUARD", "30s")
        .args(["--prefix", "billing:", "acquire", "-n", "x"]))
    .assert_code(69, "the other fleet's first acquire");
    // This fleet's own markers, the plain one and a hash tag's, are no
    // finding.
    for name in ["deploy", "{web}a"] {
        run(cluster
            .redlock()
            .env("REDLOCK_RESTART_GUARD", "30s")
            .args(["acquire", "-n", name]))
        .assert_code(69, "this fleet's first acquire");
    }
    let mut db1 = cluster[0].client();
    redis::cmd("SELECT").arg(1).query::<()>(&mut db1).unwrap();
    redis::cmd("SET")
        .arg("cache:x")
        .arg("1")
        .query::<()>(&mut db1)
        .unwrap();
    let out = doctor(&mut cluster.redlock(), &[]);
    out.assert_code(0, "a shared server is a warning");
    for (i, server) in cluster.urls().iter().enumerate() {
        let shared = line_of(&out, server, "shared");
        assert!(shared.starts_with("  warning"), "{i}: {shared}");
        assert!(
            shared
                .contains(r#"db 0 holds the restart guard markers of other prefixes ("billing:")"#),
            "{i}: {shared}"
        );
        assert!(shared.contains("fix: give each fleet a server"), "{shared}");
    }
    let shared = line_of(&out, &cluster[0].url(), "shared");
    assert!(
        shared.contains("db 1 (1 key) also holds keys: SWAPDB 0 1"),
        "{shared}"
    );
    doctor(&mut cluster.redlock(), &["--strict"]).assert_code(1, "shared, --strict");
    // Seen from the other fleet, this fleet's markers, the hash tag's
    // too, are of the other prefix (the empty one), and its own are not.
    let out = doctor(cluster.redlock().args(["--prefix", "billing:"]), &[]);
    let shared = line_of(&out, &cluster[1].url(), "shared");
    assert!(shared.contains(r#"other prefixes (""):"#), "{shared}");
}

/// A key is anyone's text: another prefix's marker is shown escaped.
#[test]
fn another_prefix_is_shown_escaped() {
    let cluster = Cluster::start_with(3, DURABLE);
    cluster[0].set(b"\x1b[2Jevil:\0guard", b"1");
    let out = doctor(&mut cluster.redlock(), &[]);
    let shared = line_of(&out, &cluster[0].url(), "shared");
    assert!(shared.starts_with("  warning"), "{shared}");
    assert!(shared.contains("[2Jevil:"), "{shared}");
    assert!(!out.stdout.contains('\x1b'), "{}", out.stdout);
}

/// The restart guard for the tests of "can a lock be taken now": long
/// enough that a run sees a server still inside it.
const GUARD: &str = "30s";

/// `cluster.redlock()` with the restart guard `guard` on.
fn guarded(cluster: &Cluster, guard: &str) -> Command {
    let mut cmd = cluster.redlock();
    cmd.env("REDLOCK_RESTART_GUARD", guard);
    cmd
}

/// The JSON object of server `i`.
fn server_json(json: &serde_json::Value, i: usize) -> serde_json::Value {
    json["servers"][i].clone()
}

/// The check `name` of one server's JSON; panics if it has none.
fn check(server: &serde_json::Value, name: &str) -> serde_json::Value {
    server["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check: {server}"))
        .clone()
}

/// Issue 28: doctor said "ok quorum, 3 masters can count" and exited 0
/// while every server was inside the restart guard (never seen under this
/// prefix), and every acquire exited 69.
#[test]
fn servers_inside_the_guard_are_not_ready_yet_with_when_and_why() {
    let cluster = Cluster::start_with(3, DURABLE);
    let out = doctor(&mut guarded(&cluster, GUARD), &["--json"]);
    out.assert_code(75, "never-seen servers, inside the guard");
    let json = out.json();
    assert_eq!(json["state"], "not-ready", "{json}");
    assert_eq!(json["verdict"], "not-ready");
    assert_eq!(json["exit"], 75);
    assert_eq!(json["usable"], 0);
    assert_eq!(json["not_ready"], true);
    assert_eq!(json["degraded"], false);
    assert_eq!(json["unavailable"], false);
    assert_eq!(json["unsafe"], false);
    let ready_in = json["ready_in_ms"].as_u64().unwrap();
    assert!((20_000..=30_000).contains(&ready_in), "{json}");
    for i in 0..3 {
        let server = server_json(&json, i);
        assert_eq!(server["usable"], false, "{server}");
        assert_eq!(server["guard"]["cause"], "unseen", "{server}");
        let left = server["guard"]["left_ms"].as_u64().unwrap();
        assert!((20_000..=30_000).contains(&left), "{server}");
    }
    // What acquire finds agrees.
    run(guarded(&cluster, GUARD).args(["acquire", "-n", "now"]))
        .assert_code(69, "acquire inside the guard");
    let out = doctor(&mut guarded(&cluster, GUARD), &[]);
    out.assert_code(75, "text");
    let ready = line_of(&out, "the 3 servers", "ready");
    assert!(
        ready.contains("not ready yet: 0 of 3 servers usable now, quorum 2: the restart guard keeps 3 out; a lock can be taken in"),
        "{ready}"
    );
    let now = line_of(&out, &cluster[0].url(), "now");
    assert!(now.starts_with("  warning"), "{now}");
    assert!(
        now.contains("kept out of quorums by the restart guard for another"),
        "{now}"
    );
    assert!(now.contains("(unseen: first sight"), "{now}");
    assert!(out.stdout.contains("verdict: not-ready"), "{}", out.stdout);
    // Without the guard, the same servers are usable at once.
    doctor(&mut cluster.redlock(), &["--strict"]).assert_code(0, "guard off");
}

/// Waits out a restart guard of 1s from the first doctor run.
fn past_a_guard_of_1s(cluster: &Cluster) {
    doctor(&mut guarded(cluster, "1s"), &[]);
    // The behaviour: the guard of 1s passes.
    std::thread::sleep(Duration::from_millis(1200));
}

/// Issue 28: after a FLUSHALL of a majority every acquire exited 69 for
/// the guard, and doctor said ok.
#[test]
fn a_flushall_of_a_majority_is_not_ready_until_the_guard_passes() {
    let cluster = Cluster::start_with(3, DURABLE);
    past_a_guard_of_1s(&cluster);
    doctor(&mut guarded(&cluster, "1s"), &["--strict"]).assert_code(0, "past the guard");
    for server in [&cluster[0], &cluster[1]] {
        redis::cmd("FLUSHALL")
            .query::<()>(&mut server.client())
            .unwrap();
    }
    let out = doctor(&mut guarded(&cluster, "1s"), &["--json"]);
    out.assert_code(75, "a FLUSHALL of 2 of 3");
    let json = out.json();
    assert_eq!(json["state"], "not-ready", "{json}");
    assert_eq!(json["usable"], 1);
    assert!(json["ready_in_ms"].as_u64().unwrap() <= 1000, "{json}");
    for i in [0, 1] {
        assert_eq!(server_json(&json, i)["guard"]["cause"], "unseen", "{json}");
    }
    assert_eq!(server_json(&json, 2)["usable"], true, "{json}");
    assert!(server_json(&json, 2)["guard"].is_null(), "{json}");
    // The behaviour: the guard of 1s passes.
    std::thread::sleep(Duration::from_millis(1200));
    doctor(&mut guarded(&cluster, "1s"), &["--strict"]).assert_code(0, "the guard passed");
}

/// A node with `--cluster-enabled yes` and no slots assigned.
fn slotless_node() -> RedisServer {
    RedisServer::start_with(
        &[
            DURABLE,
            &[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ],
        ]
        .concat(),
    )
}

/// Issue 28: a cluster node that serves no slots fails every lock, and
/// doctor counted it.
#[test]
fn a_cluster_node_that_serves_no_slots_is_not_usable() {
    let cluster = Cluster::start_with(2, DURABLE);
    let node = slotless_node();
    let servers = format!("{},{},{}", node.url(), cluster[0].url(), cluster[1].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &["--json"],
    );
    out.assert_code(2, "one slot-less node of 3: degraded");
    let json = out.json();
    assert_eq!(json["state"], "degraded", "{json}");
    assert_eq!(json["usable"], 2);
    assert_eq!(server_json(&json, 0)["usable"], false);
    let now = check(&server_json(&json, 0), "now");
    assert_eq!(now["level"], "warning");
    assert!(
        now["says"]
            .as_str()
            .unwrap()
            .contains("cluster_state fail serving 0 of 16384 hash slots: every lock fails on it"),
        "{now}"
    );
    // Two of three: no lock can be taken, as acquire finds.
    let other = slotless_node();
    let servers = format!("{},{},{}", node.url(), other.url(), cluster[0].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &["--json"],
    );
    out.assert_code(69, "two slot-less nodes of 3");
    let json = out.json();
    assert_eq!(json["state"], "unavailable", "{json}");
    assert_eq!(json["unavailable"], true);
    assert_eq!(json["verdict"], "unavailable");
    run(crate::support::redlock()
        .env("REDLOCK_SERVERS", &servers)
        .args(["acquire", "-n", "slots"]))
    .assert_code(69, "acquire on two slot-less nodes of 3");
}

/// A cluster node that serves every slot takes the locks of names with a
/// hash tag: usable, its restart guard unknown (kept per hash tag).
#[test]
fn a_cluster_node_that_serves_slots_is_usable_with_its_guard_unknown() {
    let cluster = Cluster::start_with(2, DURABLE);
    let node = slotless_node();
    redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query::<()>(&mut node.client())
        .unwrap();
    let up = || {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut node.client())
            .unwrap();
        info.contains("cluster_state:ok")
    };
    assert!(
        wait_until(Duration::from_secs(15), up),
        "the cluster never came up"
    );
    let servers = format!("{},{},{}", node.url(), cluster[0].url(), cluster[1].url());
    let out = doctor(
        crate::support::redlock().env("REDLOCK_SERVERS", &servers),
        &["--json"],
    );
    out.assert_code(0, "a node serving every slot");
    let json = out.json();
    assert_eq!(json["state"], "ready", "{json}");
    assert_eq!(json["usable"], 3);
    let now = check(&server_json(&json, 0), "now");
    assert_eq!(now["level"], "unknown", "{now}");
    assert!(
        now["says"]
            .as_str()
            .unwrap()
            .contains("a cluster node keeps it per hash tag"),
        "{now}"
    );
}

/// Issue 28: 1 of 3 down is degraded, still a majority: its own exit
/// status and JSON, apart from unsafe and not ready.
#[test]
fn one_of_three_down_is_degraded_and_a_lock_can_be_taken() {
    let mut cluster = Cluster::start_with(3, DURABLE);
    cluster[2].kill();
    let out = doctor(&mut cluster.redlock(), &["--json"]);
    out.assert_code(2, "1 of 3 down");
    let json = out.json();
    assert_eq!(json["state"], "degraded", "{json}");
    assert_eq!(json["verdict"], "degraded");
    assert_eq!(json["degraded"], true);
    assert_eq!(json["unsafe"], false);
    assert_eq!(json["not_ready"], false);
    assert_eq!(json["usable"], 2);
    assert_eq!(server_json(&json, 0)["usable"], true);
    assert_eq!(server_json(&json, 2)["usable"], false);
    let out = doctor(&mut cluster.redlock(), &["--strict"]);
    out.assert_code(2, "1 of 3 down, --strict");
    let ready = line_of(&out, "the 3 servers", "ready");
    assert!(
        ready.contains(
            "degraded: 2 of 3 servers usable now, quorum 2: a lock can be taken, and no other \
             server can fail"
        ),
        "{ready}"
    );
    run(cluster.redlock().args(["acquire", "-n", "degraded"])).assert_code(0, "acquire");
}

/// Issue 28: with `--strict`, AOF with appendfsync everysec was red for
/// ever under the restart guard, which covers what a restart loses.
#[test]
fn aof_everysec_passes_strict_once_the_guard_is_out_of_the_way() {
    let cluster = Cluster::start_with(3, &["--appendonly", "yes", "--appendfsync", "everysec"]);
    past_a_guard_of_1s(&cluster);
    let out = doctor(&mut guarded(&cluster, "1s"), &["--strict", "--json"]);
    out.assert_code(0, "everysec under the guard, --strict");
    let json = out.json();
    assert_eq!(json["state"], "ready", "{json}");
    let persistence = check(&server_json(&json, 0), "persistence");
    assert_eq!(persistence["level"], "ok", "{persistence}");
    assert!(
        persistence["says"]
            .as_str()
            .unwrap()
            .contains("appendfsync everysec: a restart can lose the last locks; the restart guard (1s) covers it"),
        "{persistence}"
    );
    // Without the guard nothing covers it.
    doctor(&mut cluster.redlock(), &[]).assert_code(1, "everysec, guard off");
}

/// The first code block under `heading` in docs/operations.md, as printed.
fn operations_snippet(heading: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(
        lines.next().is_some(),
        "docs/operations.md has no {heading:?}"
    );
    let mut lines = lines.skip_while(|line| !line.starts_with("```"));
    assert!(lines.next().is_some(), "no code block under {heading:?}");
    let mut code = String::new();
    for line in lines.take_while(|line| !line.starts_with("```")) {
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// `script` run by `sh` as a monitoring system runs it: `redlock` on the
/// PATH (the binary under test), the servers in `REDLOCK_SERVERS`, and a
/// server timeout that measures nothing (5s): these servers fsync every
/// write (`appendfsync always`), and on a loaded machine one of them can
/// take longer than the default 250ms, which doctor rightly calls a
/// server that did not answer (the restart guard's tests saw it).
fn monitor(cluster: &Cluster, script: &str, guard: &str) -> Output {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_redlock"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(crate::support::redlock_at(std::path::Path::new("/bin/sh"))
        .args(["-c", script])
        .env("PATH", path)
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_SERVER_TIMEOUT", "5s")
        .env("REDLOCK_RESTART_GUARD", guard))
}

/// Issue 28: the documented Nagios check, as printed, maps doctor's exit
/// status and JSON to OK, WARNING and CRITICAL.
#[test]
fn the_documented_nagios_check_tells_the_kinds_apart() {
    let check = operations_snippet("### A Nagios check");
    let mut cluster = Cluster::start_with(3, DURABLE);
    let expect = |out: &Output, code: i32, starts: &str| {
        out.assert_code(code, starts);
        assert!(out.stdout.starts_with(starts), "{starts}: {}", out.stdout);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    };
    let out = monitor(&cluster, &check, "0");
    expect(
        &out,
        0,
        "REDLOCK OK - 3 of 3 servers usable, quorum 2 | usable=3;;;0;3",
    );
    let out = monitor(&cluster, &check, GUARD);
    expect(
        &out,
        1,
        "REDLOCK WARNING - not ready yet: 0 of 3 servers usable, quorum 2, ready in ",
    );
    assert!(out.stdout.contains("ms | usable=0;;;0;3"), "{}", out.stdout);
    config_set(&cluster[0], "maxmemory-policy", "allkeys-lru");
    let out = monitor(&cluster, &check, "0");
    expect(&out, 2, "REDLOCK CRITICAL - unsafe configuration");
    config_set(&cluster[0], "maxmemory-policy", "noeviction");
    cluster[2].kill();
    let out = monitor(&cluster, &check, "0");
    expect(&out, 1, "REDLOCK WARNING - degraded: 2 of 3 servers usable");
    cluster[1].kill();
    let out = monitor(&cluster, &check, "0");
    expect(
        &out,
        2,
        "REDLOCK CRITICAL - no lock can be taken: 1 of 3 servers usable",
    );
}

/// Issue 28: the documented Prometheus textfile snippet, as printed but for
/// its directory, writes well-formed metrics of each kind.
#[test]
fn the_documented_prometheus_metrics_are_written() {
    let snippet = operations_snippet("### A Prometheus metric");
    let dir = crate::support::temp_dir("redlock-test-prom-");
    let from = "dir=/var/lib/node_exporter/textfile_collector";
    assert_eq!(snippet.matches(from).count(), 1, "{snippet}");
    let script = snippet.replace(from, &format!("dir='{}'", dir.path().display()));
    let mut cluster = Cluster::start_with(3, DURABLE);
    let metrics = |cluster: &Cluster, guard: &str| -> std::collections::HashMap<String, String> {
        monitor(cluster, &script, guard).assert_code(0, "the snippet");
        let text = std::fs::read_to_string(dir.path().join("redlock.prom")).unwrap();
        let mut found = std::collections::HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.split_once(' ').unwrap_or_else(|| panic!("{line}"));
            assert!(
                value == "NaN" || value.parse::<f64>().is_ok(),
                "not a number: {line}\n{text}"
            );
            found.insert(name.to_owned(), value.to_owned());
        }
        found
    };
    let ready = metrics(&cluster, "0");
    assert_eq!(ready["redlock_doctor_exit_status"], "0");
    assert_eq!(ready["redlock_usable_servers"], "3");
    assert_eq!(ready["redlock_quorum"], "2");
    assert_eq!(ready["redlock_unsafe"], "0");
    assert_eq!(ready["redlock_ready_in_seconds"], "NaN");
    let guarded = metrics(&cluster, GUARD);
    assert_eq!(guarded["redlock_doctor_exit_status"], "75");
    assert_eq!(guarded["redlock_not_ready"], "1");
    assert_eq!(guarded["redlock_usable_servers"], "0");
    let left: f64 = guarded["redlock_ready_in_seconds"].parse().unwrap();
    assert!((20.0..=30.0).contains(&left), "{left}");
    cluster[2].kill();
    let degraded = metrics(&cluster, "0");
    assert_eq!(degraded["redlock_doctor_exit_status"], "2");
    assert_eq!(degraded["redlock_degraded"], "1");
    assert_eq!(degraded["redlock_not_ready"], "0");
    assert_eq!(degraded["redlock_usable_servers"], "2");
}
