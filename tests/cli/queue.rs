//! The line of waiters: waiters are served in the order they started
//! waiting, one that dies or gives up leaves the line, and a caller that
//! does not wait never cuts in.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::{acquire, run, temp_dir, Cluster, Running};

/// How long a dead waiter's ticket stays in line with the default server
/// timeout (lock/queue.rs: `linger`).
const LINGER: Duration = Duration::from_millis(3400);

/// `exec -w 30s NAME` of a job that logs `start WHO NS` and `end WHO NS`
/// around a 100ms section.
fn waiter(cluster: &Cluster, log: &str, who: &str) -> Running {
    let section = format!(
        "echo \"start {who} $(date +%s%N)\" >> {log}; sleep 0.1; echo \"end {who} $(date +%s%N)\" >> {log}"
    );
    Running::spawn(
        cluster
            .redlock()
            .args([
                "exec", "-q", "-w", "30s", "line", "--", "sh", "-c", &section,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// The log as (event, who, ns) in the order written.
fn events(log: &str) -> Vec<(String, String, u128)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            (words[0].into(), words[1].into(), words[2].parse().unwrap())
        })
        .collect()
}

/// Asserts the sections never overlapped and returns who ran, in order.
fn served(log: &str) -> Vec<String> {
    let events = events(log);
    for pair in events.chunks(2) {
        assert!(
            pair.len() == 2 && pair[0].0 == "start" && pair[1].0 == "end" && pair[0].1 == pair[1].1,
            "sections overlapped: {events:?}"
        );
    }
    events
        .iter()
        .filter(|e| e.0 == "start")
        .map(|e| e.1.clone())
        .collect()
}

/// When `who`'s section started or ended.
fn at(log: &str, event: &str, who: &str) -> u128 {
    events(log)
        .into_iter()
        .find(|e| e.0 == event && e.1 == who)
        .unwrap_or_else(|| panic!("no {event} of {who}: {:?}", events(log)))
        .2
}

#[test]
fn waiters_are_served_in_the_order_they_started_waiting() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("queue-order");
    let before = cluster.dbsizes();
    for round in 0..3 {
        let log = dir.path().join(format!("log{round}")).display().to_string();
        let token = acquire(&cluster, "line", &[]);
        let mut waiters = Vec::new();
        for who in ["A", "B", "C", "D"] {
            waiters.push(waiter(&cluster, &log, who));
            // Each stands in line before the next starts waiting.
            std::thread::sleep(Duration::from_millis(400));
        }
        run(cluster.redlock().args(["release", "line", &token])).assert_code(0, "release");
        for w in waiters {
            w.finish(Duration::from_secs(30))
                .assert_code(0, "each waiter ran");
        }
        assert_eq!(served(&log), ["A", "B", "C", "D"], "round {round}");
    }
    assert_eq!(cluster.dbsizes(), before, "the line leaves nothing behind");
}

#[test]
fn a_killed_waiter_delays_the_next_by_at_most_the_linger() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("queue-killed");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "line", &[]);
    let a = waiter(&cluster, &log, "A");
    std::thread::sleep(Duration::from_millis(400));
    let b = waiter(&cluster, &log, "B");
    std::thread::sleep(Duration::from_millis(400));
    let c = waiter(&cluster, &log, "C");
    std::thread::sleep(Duration::from_millis(400));
    // B dies in line: it cannot leave it; its ticket must lapse.
    b.signal(Signal::SIGKILL);
    let _ = b.finish(Duration::from_secs(10));
    run(cluster.redlock().args(["release", "line", &token])).assert_code(0, "release");
    a.finish(Duration::from_secs(30)).assert_code(0, "A ran");
    c.finish(Duration::from_secs(30)).assert_code(0, "C ran");
    assert_eq!(served(&log), ["A", "C"]);
    let gap =
        Duration::from_nanos(u64::try_from(at(&log, "start", "C") - at(&log, "end", "A")).unwrap());
    assert!(
        gap < LINGER + Duration::from_secs(1),
        "C waited {gap:?} after A for the dead B; the bound is {LINGER:?}"
    );
}

#[test]
fn a_waiter_that_gives_up_leaves_the_line_at_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("queue-gives-up");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "line", &[]);
    let a = waiter(&cluster, &log, "A");
    std::thread::sleep(Duration::from_millis(400));
    let quitter = run(cluster.redlock().args(["acquire", "-w", "500ms", "line"]));
    quitter.assert_code(75, "gave up");
    let c = waiter(&cluster, &log, "C");
    std::thread::sleep(Duration::from_millis(400));
    run(cluster.redlock().args(["release", "line", &token])).assert_code(0, "release");
    a.finish(Duration::from_secs(30)).assert_code(0, "A ran");
    c.finish(Duration::from_secs(30)).assert_code(0, "C ran");
    let gap =
        Duration::from_nanos(u64::try_from(at(&log, "start", "C") - at(&log, "end", "A")).unwrap());
    assert!(
        gap < Duration::from_millis(1500),
        "C waited {gap:?} after A: the waiter that gave up was still in line"
    );
}

#[test]
fn a_caller_that_does_not_wait_never_cuts_in_line() {
    let cluster = Cluster::start(3);
    // Someone waits in line (a ticket that lapses far in the future), and
    // the lock itself is free.
    for server in &cluster.servers {
        let mut client = server.client();
        let _: () = redis::cmd("ZADD")
            .arg(b"line\0line")
            .arg(1)
            .arg("000000000000001-first")
            .query(&mut client)
            .unwrap();
        let _: () = redis::cmd("ZADD")
            .arg(b"line\0lapse")
            .arg(u64::MAX >> 12)
            .arg("000000000000001-first")
            .query(&mut client)
            .unwrap();
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "line"]));
    out.assert_code(75, "-n does not cut in");
    assert!(
        out.stderr
            .contains("is busy: earlier waiters stand in line for it on at least 2 of 3 servers"),
        "{}",
        out.stderr
    );
    run(cluster.redlock().args(["acquire", "-w", "600ms", "line"]))
        .assert_code(75, "a later waiter does not cut in");
    for server in &cluster.servers {
        let _: () = redis::cmd("DEL")
            .arg(b"line\0line")
            .arg(b"line\0lapse")
            .query(&mut server.client())
            .unwrap();
    }
    acquire(&cluster, "line", &[]);
}

/// Puts a waiter's ticket (started at `score` ms) in `name`'s line on
/// `server`, lapsing far in the future.
fn stand_in_line(server: &crate::support::RedisServer, name: &str, score: u64, id: &str) {
    let mut client = server.client();
    let line = [name.as_bytes(), b"\0line"].concat();
    let lapse = [name.as_bytes(), b"\0lapse"].concat();
    let _: () = redis::cmd("ZADD")
        .arg(&line)
        .arg(score)
        .arg(id)
        .query(&mut client)
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(&lapse)
        .arg(u64::MAX >> 12)
        .arg(id)
        .query(&mut client)
        .unwrap();
}

#[test]
fn servers_that_disagree_on_the_line_still_let_the_earliest_waiter_through() {
    let cluster = Cluster::start(3);
    // An earlier waiter reached only the first server (say the others were
    // down when it arrived): there it is first; on the others, nobody is.
    stand_in_line(&cluster[0], "line", 1, "000000000000001-early");
    // A waiter that starts now is first in line on a majority (servers 1
    // and 2), so it takes the lock there and nothing livelocks.
    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-w", "5s", "line"]));
    out.assert_code(0, "the first in line on a majority takes the lock");
    let json = out.json();
    let held_on: Vec<String> = json["held_on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    assert!(
        !held_on
            .iter()
            .any(|s| s.ends_with(&format!(":{}", cluster[0].port()))),
        "not on the server where another waiter is first: {held_on:?}"
    );
    assert_eq!(held_on.len(), 2, "{held_on:?}");
}

#[test]
fn other_redlock_clients_ignore_the_line_and_are_still_excluded() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        stand_in_line(server, "line", 1, "000000000000001-first");
    }
    // A client that knows nothing of the line takes the free lock...
    for server in &cluster.servers {
        let taken: Option<String> = redis::cmd("SET")
            .arg("line")
            .arg("their-token")
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .query(&mut server.client())
            .unwrap();
        assert_eq!(taken.as_deref(), Some("OK"));
    }
    // ... and redlock is excluded by it, whatever the line says.
    let out = run(cluster.redlock().args(["acquire", "-w", "600ms", "line"]));
    out.assert_code(75, "held by the other client");
    assert!(
        out.stderr
            .contains("held by another client (token their-token)"),
        "{}",
        out.stderr
    );
}
