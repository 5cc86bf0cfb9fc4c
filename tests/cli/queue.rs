//! The line of waiters: waiters are served in the order they started
//! waiting, one that dies or gives up leaves the line, and a caller that
//! does not wait never cuts in.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use std::time::Instant;

use crate::support::{acquire, faketime_library, run, temp_dir, wait_until, Cluster, Running};

/// How long a dead waiter's ticket stays in line, whatever the options
/// (lock/queue.rs: `LINGER`).
const LINGER: Duration = Duration::from_millis(1000);

/// What a dead waiter may cost a free lock: its linger, and the next
/// waiter's poll or wake-up.
const PER_DEATH: Duration = Duration::from_millis(1500);

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
        for (i, who) in ["A", "B", "C", "D"].into_iter().enumerate() {
            waiters.push(waiter(&cluster, &log, who));
            // Each stands in line before the next starts waiting.
            wait_in_line(&cluster, "line", i + 1);
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
    wait_in_line(&cluster, "line", 1);
    let b = waiter(&cluster, &log, "B");
    wait_in_line(&cluster, "line", 2);
    let c = waiter(&cluster, &log, "C");
    wait_in_line(&cluster, "line", 3);
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
        gap < PER_DEATH,
        "C waited {gap:?} after A for the dead B; the linger is {LINGER:?}"
    );
}

#[test]
fn a_waiter_that_gives_up_leaves_the_line_at_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("queue-gives-up");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "line", &[]);
    let a = waiter(&cluster, &log, "A");
    wait_in_line(&cluster, "line", 1);
    let quitter = run(cluster.redlock().args(["acquire", "-w", "500ms", "line"]));
    quitter.assert_code(75, "gave up");
    assert!(
        cluster.in_line_everywhere("line", 1),
        "the waiter that gave up is still in line"
    );
    let c = waiter(&cluster, &log, "C");
    wait_in_line(&cluster, "line", 2);
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
        server.stand_in_line("line", 1, "000000000000001-first");
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "line"]));
    out.assert_code(75, "-n does not cut in");
    // "at least 2" where the round was decided before the third answer
    // (it was on a loaded CI machine).
    assert!(
        ["2", "3"].iter().any(|n| out.stderr.contains(&format!(
            "\"line\" is free, but 1 waiter is in line for it (on at least {n} of 3 servers)"
        ))),
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

/// `-n` on a free lock whose line has kept it from callers for longer than
/// a linger (its head is dead): the plain text leaves the lock to the whole
/// one, which steps the line aside, so `-n` takes it, as it did when every
/// attempt sent the whole text.
#[test]
fn a_caller_that_does_not_wait_takes_a_lock_whose_line_stepped_aside() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.stand_in_line("aside", 1, "000000000000001-dead");
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut server.client()).unwrap();
        let long_ago = secs * 1000 + micros / 1000 - 60_000;
        let _: () = redis::cmd("SET")
            .arg(b"aside\0free")
            .arg(long_ago)
            .arg("PX")
            .arg(120_000)
            .query(&mut server.client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "aside"]));
    out.assert_code(0, "-n past a line that stepped aside");
    assert!(taken(&cluster, "aside"));
}

/// A line on two of three servers and none on the third, the lock free on
/// all: the plain text takes the third and leaves the two to the whole
/// text; that round fails, its key on the third is undone, and the whole
/// text, sent at once, says a waiter is first. Nothing is left behind, and
/// the line stays.
#[test]
fn a_caller_that_does_not_wait_leaves_nothing_where_a_line_stands_on_a_majority() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers[..2] {
        server.stand_in_line("mixed", 1, "000000000000001-first");
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "mixed"]));
    out.assert_code(75, "-n beside a line on a majority");
    assert!(
        out.stderr
            .contains("is free, but 1 waiter is in line for it"),
        "{}",
        out.stderr
    );
    assert_eq!(cluster.get_all(b"mixed"), vec![None, None, None]);
    let lines: Vec<usize> = cluster.servers.iter().map(|s| s.in_line("mixed")).collect();
    assert_eq!(lines, [1, 1, 0]);
}

/// A lock held on a majority, with a line kept on the minority where the
/// key is gone: the whole text could not take it, so `-n` makes one round.
#[test]
fn a_lock_held_on_a_majority_costs_a_caller_that_does_not_wait_one_round() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "held", &[]);
    let _: i64 = redis::cmd("DEL")
        .arg("held")
        .query(&mut cluster.servers[2].client())
        .unwrap();
    cluster.servers[2].stand_in_line("held", 1, "000000000000001-first");
    for server in &cluster.servers {
        server.reset_stats();
    }
    run(cluster.redlock().args(["acquire", "-n", "held"])).assert_code(75, "held");
    cluster.assert_one_round("-n on a lock held on a majority");
}

/// A waiter behind others in line says so while it waits, instead of
/// naming a holder that is not there ("held by another holder on at
/// least 0 of 3 servers", as the progress once said).
#[test]
fn a_waiter_in_line_says_it_waits_its_turn() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.stand_in_line("turn", 1, "000000000000001-first");
    }
    // The line keeps a free lock from callers for at most a linger in a
    // row (1s, when the first progress line is due too: a waiter that took
    // it then, its attempt ready before a delayed tick, said nothing). A
    // linger longer than the wait keeps it out to the end, and the wait
    // outlasts the first second with room to spare on a loaded machine.
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TEST_PROGRESS_EVERY_MS", "1000")
        .env("REDLOCK_TEST_LINGER_MS", "60000")
        .args(["acquire", "-w", "3s", "turn"]));
    out.assert_code(75, "the line keeps the free lock from this waiter");
    let waiting = out
        .stderr
        .lines()
        .find(|line| line.starts_with("redlock: waiting for"))
        .unwrap_or_else(|| panic!("no progress line: {}", out.stderr));
    assert!(
        waiting.starts_with(
            "redlock: waiting for \"turn\": it is free, but earlier waiters in line go first"
        ),
        "{waiting}"
    );
    assert!(!waiting.contains("held by"), "{waiting}");
}

#[test]
fn servers_that_disagree_on_the_line_still_let_the_earliest_waiter_through() {
    let cluster = Cluster::start(3);
    // An earlier waiter reached only the first server (say the others were
    // down when it arrived): there it is first; on the others, nobody is.
    cluster[0].stand_in_line("line", 1, "000000000000001-early");
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

/// Issue 28: servers that missed calls while cut off name different
/// waiters first (here two that reached one server each and never came
/// back), so none is first on a majority. A waiter that sees no ticket
/// ahead of its own on a majority goes past them at once; before, it waited
/// for each server's step-aside, a linger (5s here) started at different
/// moments on each.
#[test]
fn a_waiter_goes_past_a_line_split_between_servers_at_once() {
    let cluster = Cluster::start(3);
    cluster[0].stand_in_line("split", 1, "000000000000001-only-on-0");
    cluster[1].stand_in_line("split", 2, "000000000000002-only-on-1");
    let started = Instant::now();
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TEST_LINGER_MS", "5000")
        .args(["acquire", "-w", "20s", "split"]));
    let took = started.elapsed();
    out.assert_code(0, "the lock is free on every server");
    assert!(
        took < Duration::from_secs(2),
        "took {took:?}: the split line kept a free lock for its step-aside"
    );
    // Every server took it: the split heads were gone past, not waited for.
    let held = cluster.get_all(b"split");
    assert!(held.iter().all(Option::is_some), "{held:?}");
}

#[test]
fn other_redlock_clients_ignore_the_line_and_are_still_excluded() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.stand_in_line("line", 1, "000000000000001-first");
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

/// Whether a majority of `cluster` holds a lock under `name`.
fn taken(cluster: &Cluster, name: &str) -> bool {
    cluster.get_all(name.as_bytes()).iter().flatten().count() > cluster.servers.len() / 2
}

/// Waits until `count` tickets stand in `name`'s line on every server:
/// the last waiter started has tried once and taken its place.
#[track_caller]
fn wait_in_line(cluster: &Cluster, name: &str, count: usize) {
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere(name, count)),
        "not {count} in line for {name:?}: {:?}",
        cluster
            .servers
            .iter()
            .map(|s| s.in_line(name))
            .collect::<Vec<_>>()
    );
}

/// A plain `acquire -w` that waits for `name` with `extra` options.
fn acquire_waiter(cluster: &Cluster, name: &str, extra: &[&str]) -> Running {
    Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "-w", "60s"])
            .args(extra)
            .arg(name)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

/// Starts waiters one after another, each in line (behind those already
/// there) before the next starts.
fn waiters_in_line(cluster: &Cluster, name: &str, count: usize, extra: &[&str]) -> Vec<Running> {
    let already = cluster[0].in_line(name);
    (1..=count)
        .map(|i| {
            let waiter = acquire_waiter(cluster, name, extra);
            wait_in_line(cluster, name, already + i);
            waiter
        })
        .collect()
}

/// Waiters whose options would once have made them linger for months (the
/// linger grew with the server timeout) cost a free lock no more than any
/// other dead waiter.
#[test]
fn a_dead_waiters_linger_is_capped_whatever_its_options() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "capped", &[]);
    let dead = waiters_in_line(
        &cluster,
        "capped",
        1,
        &["--ttl", "365d", "--server-timeout", "100d"],
    );
    let live = waiters_in_line(&cluster, "capped", 1, &[]);
    for waiter in &dead {
        waiter.signal(Signal::SIGKILL);
    }
    let released = Instant::now();
    run(cluster.redlock().args(["release", "capped", &token])).assert_code(0, "release");
    assert!(wait_until(Duration::from_secs(20), || taken(
        &cluster, "capped"
    )));
    let free_for = released.elapsed();
    assert!(
        free_for < PER_DEATH,
        "the free lock waited {free_for:?} for a dead waiter"
    );
    drop(live);
}

/// Dead waiters one after another, each killed at the head of the line
/// before its predecessor's ticket lapsed: the line steps aside once it has
/// kept a free lock for a linger, so the deaths do not add up.
#[test]
fn a_storm_of_dead_waiters_keeps_a_free_lock_for_a_bounded_time() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "storm", &[]);
    let mut doomed = waiters_in_line(&cluster, "storm", 4, &[]).into_iter();
    let _live = waiters_in_line(&cluster, "storm", 1, &[]);
    doomed.next().unwrap().signal(Signal::SIGKILL);
    let released = Instant::now();
    run(cluster.redlock().args(["release", "storm", &token])).assert_code(0, "release");
    let mut next_kill = released + Duration::from_millis(700);
    let free_for = loop {
        if taken(&cluster, "storm") {
            break released.elapsed();
        }
        if Instant::now() >= next_kill {
            // The next waiter dies at the head of the line, unless it has
            // the lock already (then `taken` says so).
            if let Some(waiter) = doomed.next() {
                waiter.signal(Signal::SIGKILL);
            }
            next_kill += Duration::from_millis(700);
        }
        assert!(released.elapsed() < Duration::from_secs(20), "never taken");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        free_for < PER_DEATH,
        "a free lock waited {free_for:?} while waiters died at the head of its line"
    );
}

/// An ACL that allows part of the line's commands (ZADD and ZRANGE, not
/// ZREM or ZRANGEBYSCORE) gives no line at all: a half-kept line would keep
/// dead tickets for ever.
#[test]
fn a_server_that_allows_part_of_the_line_keeps_none() {
    let cluster = Cluster::start(3);
    let rules = ["~*", "&*", "+@all", "-zrem", "-zrangebyscore"];
    let servers: Vec<String> = cluster
        .servers
        .iter()
        .map(|s| s.acl_user("partial", "partial-pw-1", &rules))
        .collect();
    let servers = servers.join(",");
    let partial = || {
        let mut cmd = cluster.redlock();
        cmd.env("REDLOCK_SERVERS", &servers);
        cmd
    };
    let token = run(partial().args(["acquire", "-n", "part"]));
    token.assert_code(0, "the holder");
    let token = token.stdout.trim().to_owned();
    let dead = Running::spawn(
        partial()
            .args(["acquire", "-w", "60s", "part"])
            .stderr(Stdio::null()),
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("part", 1)),
        "the waiter never stood in line"
    );
    dead.signal(Signal::SIGKILL);
    let _ = dead.finish(Duration::from_secs(5));
    run(partial().args(["release", "part", &token])).assert_code(0, "release");
    let started = Instant::now();
    let out = run(partial().args(["acquire", "-w", "10s", "part"]));
    out.assert_code(0, "the next caller");
    assert!(
        started.elapsed() < PER_DEATH,
        "the free lock took {:?} with a dead ticket on a server without ZREM",
        started.elapsed()
    );
}

/// `release --force` takes the line with the lock, and says so; `status`
/// tells of a free lock's waiters.
#[test]
fn release_force_clears_the_line_and_status_counts_its_waiters() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.stand_in_line("forced", 1, "000000000000001-first");
        server.stand_in_line("forced", 2, "000000000000002-second");
    }
    let out = run(cluster.redlock().args(["status", "forced"]));
    out.assert_code(1, "free");
    assert!(
        out.stdout.contains("line:    2 waiters in line"),
        "{}",
        out.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "forced"])).json();
    assert_eq!(json["waiters_in_line"], 2, "{json}");
    let out = run(cluster.redlock().args(["acquire", "-n", "forced"]));
    out.assert_code(75, "-n with two in line");
    assert!(
        out.stderr.contains("2 waiters are in line"),
        "{}",
        out.stderr
    );
    let out = run(cluster.redlock().args(["release", "--force", "forced"]));
    out.assert_code(0, "release --force");
    assert!(
        out.stderr
            .contains("took the 2 waiters in line out of its line"),
        "{}",
        out.stderr
    );
    let json = run(cluster
        .redlock()
        .args(["release", "--force", "--json", "forced"]))
    .json();
    assert_eq!(json["waiters_cleared"], 0, "{json}");
    run(cluster.redlock().args(["acquire", "-n", "forced"])).assert_code(0, "no line left");
}

/// A waiter's place comes from the servers' clocks, not its own: one whose
/// clock is 5s slow, which starts waiting after another, is served after it.
#[test]
fn a_waiter_with_a_slow_clock_does_not_jump_the_line() {
    let Some(library) = faketime_library() else {
        panic!("libfaketime is missing: scripts/test installs the faketime package");
    };
    let cluster = Cluster::start(3);
    let dir = temp_dir("queue-skew");
    let log = dir.path().join("log").display().to_string();
    for round in 0..2 {
        let _ = std::fs::remove_file(&log);
        let token = acquire(&cluster, "line", &[]);
        let first = waiter(&cluster, &log, "first");
        wait_in_line(&cluster, "line", 1);
        // The behaviour: the second comes later by the clock of the servers.
        std::thread::sleep(Duration::from_millis(100));
        let mut skewed = cluster.redlock();
        let shift = if round == 0 { "-5s" } else { "+5s" };
        skewed
            .env("LD_PRELOAD", &library)
            .env("FAKETIME", shift)
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        let section =
            format!("echo \"start skewed 0\" >> {log}; sleep 0.1; echo \"end skewed 0\" >> {log}");
        let second = Running::spawn(
            skewed
                .args([
                    "exec", "-q", "-w", "30s", "line", "--", "sh", "-c", &section,
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        wait_in_line(&cluster, "line", 2);
        run(cluster.redlock().args(["release", "line", &token])).assert_code(0, "release");
        first
            .finish(Duration::from_secs(30))
            .assert_code(0, "first ran");
        second
            .finish(Duration::from_secs(30))
            .assert_code(0, "skewed ran");
        assert_eq!(served(&log), ["first", "skewed"], "clock {shift}");
    }
}

/// With a server down, every live server must agree on who is first. A
/// waiter whose attempt wins some servers but not all keeps its place on
/// those too: it used to stand in line only where it was refused, so two
/// waiters could each be first somewhere and neither on a majority, and
/// eight contenders with 2 of 5 servers dead could wait out a minute.
#[test]
fn a_waiter_keeps_its_place_where_its_attempt_won() {
    let mut cluster = Cluster::start(3);
    cluster[2].kill();
    let _: () = redis::cmd("SET")
        .arg("place")
        .arg("someone-else")
        .arg("PX")
        .arg(3000)
        .query(&mut cluster[1].client())
        .unwrap();
    let waiter = Running::spawn(
        cluster
            .redlock()
            .env("REDLOCK_TEST_POLL_DELAY_MS", "300")
            .args(["acquire", "-w", "15s", "place"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let both = wait_until(Duration::from_secs(5), || {
        cluster[0].in_line("place") == 1 && cluster[1].in_line("place") == 1
    });
    assert!(
        both,
        "in line on server 0: {}, on server 1: {}",
        cluster[0].in_line("place"),
        cluster[1].in_line("place")
    );
    waiter
        .finish(Duration::from_secs(20))
        .assert_code(0, "the lock once the other holder's key expired");
    assert_eq!(
        (cluster[0].in_line("place"), cluster[1].in_line("place")),
        (0, 0),
        "the holder left the line"
    );
}

/// Server values are checked before they are used: the line's "kept the
/// free lock since" (`NAME\0free`) that is not a number failed every
/// acquire of the name on that server (a Lua error), and one in the
/// future kept the free lock from callers for as long as the key stayed.
/// Both now start the count afresh.
#[test]
fn a_lines_since_that_is_not_a_number_or_in_the_future_starts_afresh() {
    let cluster = Cluster::start(3);
    for (name, since) in [("junk", "abc"), ("ahead", "99999999999999")] {
        let free = [name.as_bytes(), b"\0free"].concat();
        for server in &cluster.servers {
            server.stand_in_line(name, 1, "000000000000001-first");
            server.set(&free, since.as_bytes());
        }
        let out = run(cluster.redlock().args(["acquire", "-n", name]));
        out.assert_code(75, "the line keeps the free lock");
        assert!(
            out.stderr.contains("1 waiter is in line for it"),
            "{name}: {}",
            out.stderr
        );
        for server in &cluster.servers {
            assert!(server.pttl(&free) > 0, "{name}: not started afresh");
        }
        // The line keeps it for a bounded time only: a waiter gets it.
        let out = run(cluster.redlock().args(["acquire", "-w", "10s", name]));
        out.assert_code(0, "the line stepped aside in the end");
    }
}
