//! The restart guard: a server that may have lost the locks it held (it
//! restarted, was flushed, evicted keys) does not count toward a quorum until
//! the guard has passed since. Tested against real restarts of servers
//! without persistence, FLUSHALL, eviction and a restart with an AOF. The
//! guard is the flag's, else the variable's, else the config file's, else
//! 30s; no `--ttl` may be longer than the guard in force.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::assertions::{
    assert_gone_everywhere, assert_one_line_error, assert_stderr_says, token_of,
};
use crate::support::{
    acquire, open_temp_dir, run, wait_until, write_file, Cluster, Output, RedisServer,
};

/// `cluster.redlock()` with the restart guard as a user has it: the
/// fixture's `REDLOCK_RESTART_GUARD=0` taken out.
fn as_users_have_it(cluster: &Cluster) -> Command {
    let mut cmd = cluster.redlock();
    cmd.env_remove("REDLOCK_RESTART_GUARD");
    cmd
}

/// The fixture turns the guard off; these tests set it.
fn guarded(cluster: &Cluster, guard: &str) -> std::process::Command {
    let mut cmd = cluster.redlock();
    cmd.env("REDLOCK_RESTART_GUARD", guard);
    cmd
}

#[test]
fn servers_started_within_the_guard_do_not_count() {
    let cluster = Cluster::start(3);
    let out = run(guarded(&cluster, "30s").args(["acquire", "-n", "fresh"]));
    out.assert_code(69, "three servers that just started");
    assert!(
        out.stderr
            .contains(": first sight of 3 servers (redis://127.0.0.1:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("), or they lost their data (a restart without persistence, a flush: the same to redlock): they count in "),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(", when the restart guard (30s) has passed; first sight happens once per server and prefix; -w waits for it"),
        "{}",
        out.stderr
    );
    assert_gone_everywhere(&cluster, b"fresh");
    // The default guard is 30s, whatever the lock's TTL.
    let out = run(as_users_have_it(&cluster).args(["acquire", "-n", "--ttl", "10s", "fresh"]));
    out.assert_code(69, "the default guard");
    assert!(out.stderr.contains("restart guard (30s)"), "{}", out.stderr);
    // Off: every server counts.
    let out = run(guarded(&cluster, "0").args(["acquire", "-n", "fresh"]));
    out.assert_code(0, "--restart-guard 0");
}

/// The negative control of the Redlock article's delayed-restart rule: a
/// holder's majority restarts empty; without the guard a second client takes
/// the lock the first still holds; with it, it cannot.
#[test]
fn a_majority_that_restarted_empty_cannot_hand_a_held_lock_to_another() {
    let mut cluster = Cluster::start(3);
    let holder = acquire(&cluster, "held", &["--ttl", "20s"]);
    cluster[0].restart();
    cluster[1].restart();
    let out = run(guarded(&cluster, "20s").args(["acquire", "-n", "--ttl", "20s", "held"]));
    out.assert_code(69, "the guard keeps the restarted majority out");
    assert!(
        out.stderr
            .contains("or they lost their data (a restart without persistence"),
        "{}",
        out.stderr
    );
    assert_eq!(cluster[2].get(b"held"), Some(holder.clone().into_bytes()));
    let out = run(guarded(&cluster, "0").args(["acquire", "-n", "--ttl", "20s", "held"]));
    out.assert_code(
        0,
        "without the guard, a second holder: the overlap it prevents",
    );
    assert_ne!(token_of(&out), holder);
}

#[test]
fn a_waiting_acquire_waits_out_the_guard_and_says_so_under_v() {
    let mut cluster = Cluster::start(3);
    for i in 0..3 {
        cluster[i].restart();
    }
    let started = Instant::now();
    // No --ttl may be longer than the guard.
    let out =
        run(guarded(&cluster, "2s").args(["-v", "acquire", "-w", "10s", "--ttl", "2s", "waited"]));
    let took = started.elapsed();
    out.assert_code(0, "-w outlasts a 2s guard");
    assert!(took >= Duration::from_millis(900), "took {took:?}");
    assert!(out.stderr.contains("restart guard"), "{}", out.stderr);
}

#[test]
fn status_shows_restarting_servers_and_does_not_call_them_free() {
    let cluster = Cluster::start(3);
    let out = run(guarded(&cluster, "30s").args(["status", "x"]));
    out.assert_code(69, "three restarting servers tell nothing");
    assert_eq!(
        out.stdout
            .matches("(first sight, or data lost: counts in")
            .count(),
        3,
        "{}",
        out.stdout
    );
    let out = run(guarded(&cluster, "30s").args(["status", "--json", "x"]));
    let json = out.json();
    let servers = json["servers"].as_array().unwrap();
    assert!(
        servers
            .iter()
            .all(|s| s["restarting_ms"].as_u64().unwrap() > 0),
        "{json}"
    );
    let out = run(guarded(&cluster, "0").args(["status", "--json", "x"]));
    out.assert_code(1, "free once the guard is off");
    assert!(out.json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["restarting_ms"] == 0));
}

/// Busy or not counted must not depend on which replies come first. Two
/// restarted servers answer at once; the three that hold another's lock
/// answer a moment later (paused briefly, well within the server timeout).
/// A majority holds the lock: busy (75), not "restarting" (69).
#[test]
fn busy_is_told_from_restarting_whatever_answers_first() {
    let mut cluster = Cluster::start(5);
    // Seen, and old enough to count under a 4s guard: the contender's TTL
    // may be no longer, and its server timeout must stay below a third of it.
    seen_longer_than_the_guard(&cluster, "4s");
    let holder = run(cluster.redlock().args(["acquire", "-n", "order"]));
    holder.assert_code(0, "the holder, on five servers");
    cluster[0].restart();
    cluster[1].restart();
    let mut contender = guarded(&cluster, "4s");
    contender.args([
        "--server-timeout",
        "1300ms",
        "acquire",
        "-n",
        "--ttl",
        "4s",
        "order",
    ]);
    for i in 2..5 {
        cluster[i].pause();
    }
    let resumed = std::thread::spawn(move || {
        // The behaviour: the servers answer only after a while.
        std::thread::sleep(Duration::from_millis(300));
        for i in 2..5 {
            cluster[i].resume();
        }
        cluster
    });
    let out = run(&mut contender);
    let _cluster = resumed.join().unwrap();
    out.assert_code(75, "three of five hold it: busy");
}

/// Lets redlock see every server once under `guard` (which writes each
/// server's marker), then waits the guard out: the servers count from then
/// on, until one of them loses its data.
/// Both looks get a server timeout that measures nothing (5s): a server
/// with `appendfsync always` on a loaded machine (its disk busy) once took
/// longer than the default 250ms to answer, and the second look exited 69.
fn seen_longer_than_the_guard(cluster: &Cluster, guard: &str) {
    let look = |guard: &str| {
        let mut status = guarded(cluster, guard);
        status.args(["--server-timeout", "5s", "status", "seen"]);
        run(&mut status)
    };
    look(guard);
    let guard = humantime::parse_duration(guard).unwrap();
    // The behaviour: the guard passes.
    std::thread::sleep(guard + Duration::from_millis(50));
    look("1ms").assert_code(1, "every server counts");
}

/// Waits until the wall clock is 930-960 ms into a second.
fn just_before_a_second_ends() {
    loop {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_millis();
        if (930..960).contains(&ms) {
            return;
        }
        let wait = if ms < 930 { 930 - ms } else { 1000 - ms + 930 };
        std::thread::sleep(Duration::from_millis(u64::from(wait)));
    }
}

fn uptime_in_seconds(server: &RedisServer) -> u64 {
    server
        .info_field("server", "uptime_in_seconds")
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// Redis reports uptime in whole seconds, floor(now) - floor(start): a
/// server restarted just before a second ends reads 1 a few ms later. The
/// guard must count from the restart itself: under a 1s guard, that server
/// does not count yet.
#[test]
fn a_server_restarted_at_once_counts_only_after_the_whole_guard() {
    let mut cluster = Cluster::start(1);
    seen_longer_than_the_guard(&cluster, "1s");
    let mut tries = 0;
    let ticked_after = loop {
        just_before_a_second_ends();
        let restarted = Instant::now();
        cluster[0].restart();
        assert!(wait_until(Duration::from_secs(3), || uptime_in_seconds(
            &cluster[0]
        ) >= 1));
        let ticked = restarted.elapsed();
        tries += 1;
        // A loaded machine may make the restart itself slow: try again.
        if ticked < Duration::from_millis(600) || tries == 5 {
            break ticked;
        }
    };
    assert!(
        ticked_after < Duration::from_millis(600),
        "uptime read 1 only after {ticked_after:?}"
    );
    let out = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "early"]));
    out.assert_code(
        69,
        &format!("restarted {ticked_after:?} ago, its uptime already reads 1s"),
    );
    assert!(out.stderr.contains("it counts in"), "{}", out.stderr);
}

/// The case the outside fault run found: a holder's majority restarts at once
/// under it, and a second client with the same TTL and guard waits. It must
/// not get the lock before the first one's validity is over.
#[test]
fn a_restarted_majority_cannot_hand_a_held_lock_out_within_its_ttl() {
    let mut cluster = Cluster::start(3);
    seen_longer_than_the_guard(&cluster, "2s");
    just_before_a_second_ends();
    let taken = Instant::now();
    let first = run(guarded(&cluster, "2s").args(["acquire", "-n", "--ttl", "2s", "held"]));
    first.assert_code(0, "the first holder");
    cluster[0].restart();
    cluster[1].restart();
    let second = run(guarded(&cluster, "2s").args(["acquire", "-w", "10s", "--ttl", "2s", "held"]));
    let got_it = taken.elapsed();
    second.assert_code(0, "the second holder, once the guard passed");
    assert!(
        got_it >= Duration::from_millis(2000),
        "a second holder {got_it:?} after the first took a 2s lock"
    );
}

/// FLUSHALL loses every lock without a restart: the uptime says nothing, the
/// missing marker does.
#[test]
fn a_flushed_majority_does_not_count_until_the_guard_has_passed() {
    let cluster = Cluster::start(3);
    seen_longer_than_the_guard(&cluster, "1s");
    let holder = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "flushed"]));
    holder.assert_code(0, "the holder");
    for i in 0..2 {
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut cluster[i].client())
            .unwrap();
    }
    let out = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "flushed"]));
    out.assert_code(69, "two of three servers were flushed under a holder");
    assert!(
        out.stderr.contains("they lost their data"),
        "{}",
        out.stderr
    );
    let started = Instant::now();
    let out = run(guarded(&cluster, "1s").args(["acquire", "-w", "5s", "--ttl", "1s", "flushed"]));
    out.assert_code(0, "taken once the guard has passed");
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
}

/// Under `volatile-*` eviction a lock (it has a TTL) can be evicted while
/// the marker (it has none) stays: the server's evicted_keys tell.
#[test]
fn a_server_that_evicted_keys_does_not_count_until_the_guard_has_passed() {
    let cluster = Cluster::start(1);
    seen_longer_than_the_guard(&cluster, "1s");
    let holder = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "evicted"]));
    holder.assert_code(0, "the holder");
    let mut client = cluster[0].client();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", "volatile-lru"][..])
        .query(&mut client)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"][..])
        .query(&mut client)
        .unwrap();
    let _: redis::RedisResult<()> = redis::cmd("SET")
        .arg(&["filler", "x"][..])
        .query(&mut client);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"][..])
        .query(&mut client)
        .unwrap();
    assert_eq!(cluster[0].get(b"evicted"), None, "the lock was evicted");
    assert!(
        cluster[0].get(b"\0guard2").is_some(),
        "the marker has no TTL and stays"
    );
    let out = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "evicted"]));
    out.assert_code(69, "the server evicted a lock");
}

/// A server that restarts with its data (an AOF, fsync always) keeps the
/// marker, but nothing here can check what it persisted: it is kept out for
/// the guard from its restart, as one without data is.
#[test]
fn a_server_that_restarted_with_its_data_does_not_count_at_once() {
    let mut cluster = Cluster::start_with(1, &["--appendonly", "yes", "--appendfsync", "always"]);
    seen_longer_than_the_guard(&cluster, "1s");
    cluster[0].restart();
    assert!(
        cluster[0].get(b"\0guard2").is_some(),
        "the AOF kept the marker"
    );
    let out = run(guarded(&cluster, "1s").args(["acquire", "-n", "--ttl", "1s", "kept"]));
    out.assert_code(69, "restarted a moment ago with its data");
}

// ---------------------------------------------------------------------------
// The cap on --ttl, and where the guard comes from
// ---------------------------------------------------------------------------

/// Accepted under a guard of `guard`: the servers were started a moment
/// ago, so the guard keeps them out (69) and says how long it is.
#[track_caller]
fn assert_accepted_under_guard(out: &Output, guard: &str, context: &str) {
    out.assert_code(69, context);
    assert_stderr_says(
        out,
        &[&format!("when the restart guard ({guard}) has passed")],
        context,
    );
}

const CAP_31S: &str = "--ttl 31s is longer than the restart guard 30s";

#[test]
fn a_ttl_longer_than_the_default_guard_of_30s_is_refused() {
    let cluster = Cluster::start(3);
    let out = run(as_users_have_it(&cluster).args(["acquire", "-n", "--ttl", "31s", "capped"]));
    assert_one_line_error(
        &out,
        64,
        &[CAP_31S, "use exec", "restart-guard = 31s"],
        "acquire --ttl 31s under the default guard",
    );
    assert_gone_everywhere(&cluster, b"capped");
    for args in [
        &["extend", "--ttl", "31s", "capped", "some-token"][..],
        &["exec", "-n", "--ttl", "31s", "capped", "--", "touch", "ran"],
    ] {
        let dir = open_temp_dir("redlock-test-guard-");
        let mut cmd = as_users_have_it(&cluster);
        let out = run(cmd.current_dir(dir.path()).args(args));
        assert_one_line_error(&out, 64, &[CAP_31S], &args.join(" "));
        assert!(!dir.path().join("ran").exists(), "exec ran its command");
    }
    // A guard given: a TTL up to it is accepted.
    let out = run(as_users_have_it(&cluster).args([
        "--restart-guard",
        "31s",
        "acquire",
        "-n",
        "--ttl",
        "31s",
        "capped",
    ]));
    assert_accepted_under_guard(&out, "31s", "--restart-guard 31s --ttl 31s");
    // A guard of 0 turns the cap off with it.
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--ttl", "2h", "capped"]));
    out.assert_code(0, "--ttl 2h with the guard off");
}

/// The guard in force, and so the cap: the flag, else the variable, else
/// the config file, else 30s.
#[test]
fn the_guard_comes_from_the_flag_the_variable_or_the_config_file() {
    let cluster = Cluster::start(3);
    let dir = open_temp_dir("redlock-test-guard-");
    let hour = write_file(dir.path(), "hour", "restart-guard = 1h\n");
    let two_hours = write_file(dir.path(), "two-hours", "restart-guard = 2h\n");
    let ttl_2h = ["acquire", "-n", "--ttl", "2h", "guarded"];
    let mut cmd = as_users_have_it(&cluster);
    let out = run(cmd.env("REDLOCK_CONFIG_FILE", &hour).args(ttl_2h));
    assert_one_line_error(
        &out,
        64,
        &[
            "--ttl 2h is longer than the restart guard 1h",
            "restart-guard = 2h",
        ],
        "file guard 1h, --ttl 2h",
    );
    let mut cmd = as_users_have_it(&cluster);
    let out = run(cmd.env("REDLOCK_CONFIG_FILE", &two_hours).args(ttl_2h));
    assert_accepted_under_guard(&out, "2h", "file guard 2h, --ttl 2h");
    // The variable wins over the file, the flag over the variable.
    let mut cmd = as_users_have_it(&cluster);
    cmd.env("REDLOCK_CONFIG_FILE", &two_hours)
        .env("REDLOCK_RESTART_GUARD", "1h");
    let out = run(cmd.args(ttl_2h));
    assert_one_line_error(
        &out,
        64,
        &["longer than the restart guard 1h"],
        "variable 1h over file 2h",
    );
    let mut cmd = as_users_have_it(&cluster);
    cmd.env("REDLOCK_CONFIG_FILE", &hour)
        .env("REDLOCK_RESTART_GUARD", "1h")
        .args(["--restart-guard", "2h"]);
    let out = run(cmd.args(ttl_2h));
    assert_accepted_under_guard(&out, "2h", "flag 2h over variable and file 1h");
    // status, which takes no TTL, goes by the file's guard too.
    let mut cmd = as_users_have_it(&cluster);
    let out = run(cmd
        .env("REDLOCK_CONFIG_FILE", &hour)
        .args(["status", "guarded"]));
    out.assert_code(69, "status under the file's guard");
    assert!(
        out.stdout.contains("(first sight, or data lost: counts in"),
        "{}",
        out.stdout
    );
    assert_gone_everywhere(&cluster, b"guarded");
}
