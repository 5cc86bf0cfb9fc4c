//! The restart guard: a server that started less than the guard ago may have
//! lost the locks it held, so it does not count toward a quorum. Tested
//! against real restarts of servers without persistence.

use std::time::{Duration, Instant};

use crate::support::assertions::{assert_gone_everywhere, token_of};
use crate::support::{acquire, run, Cluster};

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
            .contains(" of 3 servers restarted less than 30s ago (restart guard; counted again in"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--restart-guard 0 turns the guard off"),
        "{}",
        out.stderr
    );
    assert_gone_everywhere(&cluster, b"fresh");
    // The default guard is the lock's own TTL.
    let mut cmd = cluster.redlock();
    cmd.env_remove("REDLOCK_RESTART_GUARD");
    let out = run(cmd.args(["acquire", "-n", "--ttl", "30s", "fresh"]));
    out.assert_code(69, "the default guard");
    assert!(out.stderr.contains("less than 30s ago"), "{}", out.stderr);
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
        out.stderr.contains(" of 3 servers restarted"),
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
    let out = run(guarded(&cluster, "2s").args(["-v", "acquire", "-w", "10s", "waited"]));
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
        out.stdout.matches("(restarting, counted again in").count(),
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
    // Old enough to count under a 2s guard.
    std::thread::sleep(Duration::from_millis(2200));
    let holder = run(guarded(&cluster, "2s").args(["acquire", "-n", "order"]));
    holder.assert_code(0, "the holder, on five counting servers");
    cluster[0].restart();
    cluster[1].restart();
    let mut contender = guarded(&cluster, "2s");
    contender.args(["--server-timeout", "2s", "acquire", "-n", "order"]);
    for i in 2..5 {
        cluster[i].pause();
    }
    let resumed = std::thread::spawn(move || {
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
