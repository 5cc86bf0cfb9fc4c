//! Issue 27: every way the data behind a server's address is replaced while
//! a holder holds the lock must keep that server out of quorums for the
//! restart guard (69, with the cause), and never let a second holder in.
//! Each case is the safety review's, at the review's proportions (3
//! servers, a guard equal to the TTL) with a short guard so that the tests
//! are fast: a failover behind one address (a switched forwarder, the VIP,
//! in front of a real master and its real replica), a failover and
//! switch-back (REPLICAOF, then NO ONE), SWAPDB (plain, `--shared` and
//! `--limit`), CONFIG RESETSTAT after an eviction, and a marker dated in the
//! server's future. Every server has been seen for longer than the guard
//! first, so that what the guard does is caused by the change alone.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::forwarder::Forwarder;
use crate::support::{run, wait_until, Cluster, Output, RedisServer};

/// The guard and the TTL of every case.
const GUARD: &str = "2s";

fn redlock_on(servers: &str) -> Command {
    let mut cmd = crate::support::redlock();
    cmd.env("REDLOCK_SERVERS", servers)
        .env("REDLOCK_RESTART_GUARD", GUARD);
    cmd
}

fn acquire(servers: &str, name: &str, extra: &[&str]) -> Output {
    run(redlock_on(servers)
        .args(["acquire", "-n", "--ttl", GUARD, name])
        .args(extra))
}

/// Lets redlock see every server under the guard, then waits it out.
fn seen_longer_than_the_guard(servers: &str) {
    run(redlock_on(servers).args(["status", "seen"]));
    // The behaviour: the guard of 2s passes.
    std::thread::sleep(Duration::from_millis(2100));
    let out = run(redlock_on(servers).args(["status", "seen"]));
    out.assert_code(1, "every server counts: the lock is free");
}

fn redis(server: &RedisServer, args: &[&str]) -> redis::Value {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut server.client())
        .unwrap_or_else(|e| panic!("{args:?} on {}: {e}", server.port()))
}

/// The second client must be kept out with 69, naming `cause`, while the
/// first holder's validity runs.
#[track_caller]
fn assert_kept_out(second: &Output, cause: &str) {
    second.assert_code(69, "a second client while the first holds the lock");
    assert!(second.stderr.contains(cause), "{}", second.stderr);
}

fn replica_of(replica: &RedisServer, master: &RedisServer) {
    replica.replicate(master, true);
}

/// Waits until `replica` has every key its master has (the markers).
fn caught_up(replica: &RedisServer, master: &RedisServer) {
    let size = |s: &RedisServer| -> i64 { redis::cmd("DBSIZE").query(&mut s.client()).unwrap() };
    assert!(wait_until(Duration::from_secs(5), || size(replica) == size(master)));
}

/// A managed endpoint fails over to a replica that missed the last write,
/// behind the same address, on two of three servers: the replica (up for
/// longer than the guard) holds the old master's marker, with the old
/// master's run_id. Its uptime says nothing of when its data became the
/// master's: the guard counts from now, and no fence is handed out twice.
#[test]
fn a_failover_behind_one_address_does_not_hand_the_lock_to_a_second_holder() {
    let masters = Cluster::start(3);
    let replicas = Cluster::start(3);
    let vips: Vec<Forwarder> = masters
        .servers
        .iter()
        .map(|m| Forwarder::start(m.port()))
        .collect();
    let servers = vips
        .iter()
        .map(Forwarder::addr)
        .collect::<Vec<_>>()
        .join(",");
    for i in 0..3 {
        replica_of(&replicas[i], &masters[i]);
    }
    seen_longer_than_the_guard(&servers);
    // Up for twice the guard: a guard that trusts the uptime of a process
    // with another run_id would count it at once.
    let uptime = |s: &RedisServer| -> u64 {
        s.info_field("server", "uptime_in_seconds")
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(wait_until(Duration::from_secs(10), || uptime(&replicas[1]) >= 5));
    for i in 0..2 {
        caught_up(&replicas[i], &masters[i]);
        // The replica misses what comes next: the link is cut, and the
        // failover promotes it (a new replication ID, its own run_id).
        redis(&replicas[i], &["REPLICAOF", "NO", "ONE"]);
    }
    let first = acquire(&servers, "job", &["--fence"]);
    first.assert_code(0, "the first holder");
    let taken = Instant::now();
    for i in 0..2 {
        vips[i].switch_to(replicas[i].port());
    }
    let second = acquire(&servers, "job", &["--fence"]);
    assert!(taken.elapsed() < Duration::from_secs(2), "too slow to tell");
    assert_kept_out(&second, "another server process holds its data");
    assert!(
        second.stdout.is_empty(),
        "no token, no fence: {}",
        second.stdout
    );
}

/// Failover and switch-back in one process: the master becomes a replica
/// of a server that missed the last write (a full resync replaces its
/// data, marker included, with one that names this very process), then is
/// promoted again. Same run_id, same eviction count: only the replication
/// ID tells.
#[test]
fn a_switch_back_through_replicaof_does_not_hand_the_lock_to_a_second_holder() {
    let masters = Cluster::start(3);
    let others = Cluster::start(2);
    let servers = masters.servers_arg();
    // A master's first replica gives it a new replication ID (its backlog
    // starts), which costs one guard: attached before the guard is waited
    // out.
    for i in 0..2 {
        replica_of(&others[i], &masters[i]);
    }
    seen_longer_than_the_guard(&servers);
    for i in 0..2 {
        caught_up(&others[i], &masters[i]);
        redis(&others[i], &["REPLICAOF", "NO", "ONE"]);
    }
    acquire(&servers, "job", &[]).assert_code(0, "the first holder");
    for i in 0..2 {
        replica_of(&masters[i], &others[i]);
        redis(&masters[i], &["REPLICAOF", "NO", "ONE"]);
        assert_eq!(masters[i].get(b"job"), None, "the resync lost the lock");
    }
    let second = acquire(&servers, "job", &[]);
    assert_kept_out(&second, "it was a replica in between");
}

/// SWAPDB 0 1 where a second fleet uses db 1 on the same servers: this
/// fleet now reads the other's data, its marker included (same run_id,
/// same counters). A plain lock, a writer beside a `--shared` reader and a
/// `--limit 2` semaphore each keep the second client out.
#[test]
fn swapdb_with_another_fleets_db_does_not_hand_the_lock_to_a_second_holder() {
    let cluster = Cluster::start(3);
    let db0 = cluster.servers_arg();
    let db1 = cluster
        .urls()
        .iter()
        .map(|u| format!("{u}/1"))
        .collect::<Vec<_>>()
        .join(",");
    seen_longer_than_the_guard(&db0);
    seen_longer_than_the_guard(&db1);
    acquire(&db0, "job", &[]).assert_code(0, "the first holder");
    acquire(&db0, "read", &["--shared"]).assert_code(0, "a reader");
    for _ in 0..2 {
        acquire(&db0, "sem", &["--limit", "2"]).assert_code(0, "a slot");
    }
    for i in 0..2 {
        redis(&cluster[i], &["SWAPDB", "0", "1"]);
    }
    assert_kept_out(&acquire(&db0, "job", &[]), "another db's data");
    assert_kept_out(&acquire(&db0, "read", &[]), "another db's data");
    assert_kept_out(
        &acquire(&db0, "sem", &["--limit", "2"]),
        "another db's data",
    );
    // The other fleet, in db 1 now on two servers, reads this one's data,
    // the held lock included: busy, or kept out, never a second holder.
    let other = acquire(&db1, "job", &[]);
    assert!(matches!(other.code(), 69 | 75), "{}", other.stderr);
}

/// FLUSHDB of this fleet's db on a majority (the sibling of FLUSHALL,
/// which tests/cli/restart_guard.rs covers): the marker goes with the
/// locks, and the servers are kept out, named with the cause.
#[test]
fn flushdb_under_a_holder_does_not_hand_the_lock_to_a_second_holder() {
    let cluster = Cluster::start(3);
    let servers = cluster.servers_arg();
    seen_longer_than_the_guard(&servers);
    acquire(&servers, "job", &[]).assert_code(0, "the first holder");
    for i in 0..2 {
        redis(&cluster[i], &["FLUSHDB"]);
    }
    let second = acquire(&servers, "job", &[]);
    assert_kept_out(
        &second,
        "or they lost their data (a restart without persistence, a flush",
    );
}

/// An eviction (a lock under volatile-lru), then CONFIG RESETSTAT, which
/// takes evicted_keys back to the marker's count: the commands counter,
/// lower than the marker saw, tells that the statistics were reset.
#[test]
fn resetstat_after_an_eviction_does_not_hand_the_lock_to_a_second_holder() {
    let cluster = Cluster::start(3);
    let servers = cluster.servers_arg();
    seen_longer_than_the_guard(&servers);
    acquire(&servers, "job", &[]).assert_code(0, "the first holder");
    for i in 0..2 {
        let server = &cluster[i];
        redis(
            server,
            &["CONFIG", "SET", "maxmemory-policy", "volatile-lru"],
        );
        redis(server, &["CONFIG", "SET", "maxmemory", "1"]);
        let _: redis::RedisResult<()> = redis::cmd("SET")
            .arg("filler")
            .arg("x")
            .query(&mut server.client());
        redis(server, &["CONFIG", "SET", "maxmemory", "0"]);
        assert_eq!(server.get(b"job"), None, "the lock was evicted");
        redis(server, &["CONFIG", "RESETSTAT"]);
        assert_eq!(
            server.info_field("stats", "evicted_keys").as_deref(),
            Some("0")
        );
    }
    let second = acquire(&servers, "job", &[]);
    assert_kept_out(&second, "statistics were reset");
}

/// A marker dated a day ahead (the server's clock stepped back, or a user
/// allowed SET wrote it) costs that server one guard from now, not a day.
#[test]
fn a_marker_from_the_future_costs_one_guard_not_until_its_date() {
    let cluster = Cluster::start(1);
    let servers = cluster.servers_arg();
    seen_longer_than_the_guard(&servers);
    let marker = cluster[0]
        .get(b"\0guard2")
        .or_else(|| cluster[0].get(b"\0guard"))
        .expect("a marker");
    let ahead = a_day_ahead(&String::from_utf8(marker).unwrap());
    let key: &[u8] = if cluster[0].get(b"\0guard2").is_some() {
        b"\0guard2"
    } else {
        b"\0guard"
    };
    cluster[0].set(key, ahead.as_bytes());
    let kept = acquire(&servers, "job", &[]);
    let named = format!(
        "redis://127.0.0.1:{}: its clock went back",
        cluster[0].port()
    );
    assert_kept_out(&kept, &named);
    let started = Instant::now();
    let out = run(redlock_on(&servers).args(["acquire", "-w", "6s", "--ttl", GUARD, "job"]));
    out.assert_code(0, "taken once one guard has passed");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// The marker's value with its time (the field of 13 digits) a day later.
fn a_day_ahead(marker: &str) -> String {
    marker
        .split(' ')
        .map(|field| match field.parse::<u64>() {
            Ok(ms) if field.len() == 13 => (ms + 86_400_000).to_string(),
            _ => field.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
