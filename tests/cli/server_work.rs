//! What a lock costs the servers, counted by the servers themselves
//! (`INFO commandstats`): script calls per attempt and per hand-off. Speed
//! is measured by scripts/bench, never here; these tests check how many
//! times the scripts run, which is behaviour.

use std::process::Stdio;
use std::thread;
use std::time::Duration;

use crate::support::{acquire, proc_state, run, wait_until, Cluster, RedisServer, Running};

/// Checks that every server saw `each` calls, but for at most `late` more
/// in all: a round is decided by a majority, and a server whose reply came
/// after the round's grace (on a loaded machine) gets the clean-up a silent
/// server gets, one call more.
#[track_caller]
fn assert_calls(calls: &[u64], each: u64, late: u64, what: &str) {
    let extra: u64 = calls.iter().map(|&c| c.saturating_sub(each)).sum();
    assert!(
        calls.iter().all(|&c| c >= each) && extra <= late,
        "{what}: calls per server {calls:?}, expected {each} each (at most {late} more for a \
         late server)"
    );
}

#[test]
fn a_failed_attempt_on_a_busy_lock_costs_each_server_one_script_call() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "busy", &[]);
    for server in &cluster.servers {
        server.reset_stats();
    }
    run(cluster.redlock().args(["acquire", "-n", "busy"])).assert_code(75, "busy");
    // The attempt, and no compare-and-delete where the script said that
    // it did not take the lock (2 each before).
    assert_calls(&cluster.script_calls(), 1, 1, "a busy attempt");
}

/// How many clients listen for releases of `name` on every server.
fn listening_everywhere(cluster: &Cluster, name: &str, count: i64) -> bool {
    let channel = [name.as_bytes(), b"\0released"].concat();
    cluster
        .servers
        .iter()
        .all(|server| server.subscribers(&channel) == count)
}

/// Waits until one of `waiters` has exited and returns it; panics after
/// 10s.
fn first_to_exit(waiters: &mut Vec<Running>) -> Running {
    let mut exited = None;
    let found = wait_until(Duration::from_secs(10), || {
        exited = waiters
            .iter()
            .position(|w| proc_state(w.id() as i32).is_none_or(|state| state == 'Z'));
        exited.is_some()
    });
    assert!(found, "no waiter took the released lock");
    waiters.swap_remove(exited.unwrap())
}

/// How long no server may see a script call for [`quiet`] to hold.
const QUIET_FOR: Duration = Duration::from_millis(500);

/// Waits until no server has served a script call for [`QUIET_FOR`]: the
/// waiters of the hand-off test, which poll once a minute, have made every
/// attempt what they heard set off. A waiter whose last subscription was
/// confirmed during an attempt tries once more (notify.rs), which on a
/// loaded machine came after the servers had it in line and listening.
/// Panics after 20s.
fn quiet(cluster: &Cluster) {
    let settled = wait_until(Duration::from_secs(20), || {
        let before = cluster.script_calls();
        thread::sleep(QUIET_FOR);
        cluster.script_calls() == before
    });
    assert!(settled, "the servers never went quiet\n{}", cluster.logs());
}

#[test]
fn a_hand_off_among_eight_waiters_costs_each_server_two_script_calls() {
    let cluster = Cluster::start(3);
    let mut token = acquire(&cluster, "herd", &[]);
    // Waiters that stand in line without coming back (a long poll and a
    // long linger): only a release moves them.
    let mut waiters: Vec<Running> = (0..8)
        .map(|_| {
            Running::spawn(
                cluster
                    .redlock()
                    .args(["acquire", "-w", "60s", "herd"])
                    .env("REDLOCK_TEST_POLL_DELAY_MS", "60000")
                    .env("REDLOCK_TEST_LINGER_MS", "120000")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
            )
        })
        .collect();
    let ready = wait_until(Duration::from_secs(20), || {
        cluster.in_line_everywhere("herd", 8) && listening_everywhere(&cluster, "herd", 8)
    });
    assert!(ready, "8 waiters in line and listening\n{}", cluster.logs());
    quiet(&cluster);
    let mut woken_for_nothing = Vec::new();
    for round in 0..3 {
        for server in &cluster.servers {
            server.reset_stats();
        }
        run(cluster.redlock().args(["release", "herd", &token])).assert_code(0, "release");
        let winner = first_to_exit(&mut waiters).finish(Duration::from_secs(5));
        winner.assert_code(0, "the first in line");
        token = winner.stdout.trim().to_owned();
        // Whatever the release set off has happened by now.
        quiet(&cluster);
        // The release, and the one attempt of the waiter whose turn it
        // was: the others stay asleep, and the winner left the line where
        // it took the lock (3 each before). A known race (the release
        // reaches one server after the winner left its line there, and
        // that server wakes the next waiter for an attempt that cannot
        // win, and its undo) may cost one round one waiter's attempt: at
        // most 2 calls more per server, in at most one round of three.
        let calls = cluster.script_calls();
        let extra: u64 = calls.iter().map(|&c| c.saturating_sub(2)).sum();
        if extra > 1 {
            woken_for_nothing.push(calls.clone());
            assert_calls(&calls, 2, 6, &format!("hand-off {round}, one waiter woken"));
        } else {
            assert_calls(&calls, 2, 1, &format!("hand-off {round}"));
        }
        assert!(cluster.in_line_everywhere("herd", 7 - round));
    }
    assert!(
        woken_for_nothing.len() <= 1,
        "a waiter was woken for nothing in more than one hand-off: {woken_for_nothing:?}"
    );
}

#[test]
fn an_exec_whose_command_ends_at_once_costs_each_server_two_script_calls() {
    let cluster = Cluster::start(3);
    // Once, so that the servers have every script cached either way.
    run(cluster
        .redlock()
        .args(["exec", "-n", "quick", "--", "true"]))
    .assert_code(0, "exec");
    for server in &cluster.servers {
        server.reset_stats();
    }
    run(cluster
        .redlock()
        .args(["exec", "-n", "quick", "--", "true"]))
    .assert_code(0, "exec");
    // The attempt and the release: the command's pid would join the holder
    // record with an extension a second after it started, and it was gone
    // by then (3 each before).
    assert_calls(&cluster.script_calls(), 2, 1, "exec -- true");
}

/// Full-text script calls (EVAL) `server` has served since its stats were
/// reset.
fn full_text_calls(server: &RedisServer) -> u64 {
    server
        .info_field("commandstats", "cmdstat_eval")
        .and_then(|stats| {
            let calls = stats.split(',').find_map(|f| f.strip_prefix("calls="))?;
            calls.parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn a_waiter_sends_the_acquire_scripts_text_once_per_server() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "text", &[]);
    for server in &cluster.servers {
        server.reset_stats();
    }
    // A waiter that polls every 20 ms while the lock stays held for 600 ms:
    // some 30 attempts.
    let waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "-w", "20s", "text"])
            .env("REDLOCK_TEST_POLL_DELAY_MS", "20")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let ready = wait_until(Duration::from_secs(10), || {
        listening_everywhere(&cluster, "text", 1)
    });
    assert!(ready, "the waiter listens\n{}", cluster.logs());
    std::thread::sleep(Duration::from_millis(600));
    run(cluster.redlock().args(["release", "text", &token])).assert_code(0, "release");
    waiter
        .finish(Duration::from_secs(10))
        .assert_code(0, "the waiter");
    let texts: Vec<u64> = cluster.servers.iter().map(full_text_calls).collect();
    let calls = cluster.script_calls();
    // Full texts (EVAL): the waiter's first attempt (the plain text), the
    // whole text once on each connection its attempts went on (the first,
    // and the one it switched to for listening: one or two), the release
    // process's only call; a late server may also see the failed attempt's
    // clean-up or the winner's leave, each a first call on its connection,
    // and on a loaded machine a server whose connection was still opening
    // when the first round was decided never gets the plain text. Every
    // other attempt is an EVALSHA: sent whole on every attempt, the texts
    // would be some 30 per server.
    assert!(
        texts.iter().all(|&n| (2..=6).contains(&n)),
        "EVAL: calls per server {texts:?}, expected 3-4 each (the plain text, the whole \
         text per connection, the release), 2 more for a late server"
    );
    assert!(
        calls.iter().zip(&texts).all(|(all, eval)| all - eval >= 10),
        "the waiter's attempts: script calls {calls:?}, of them full texts {texts:?}"
    );
}
