//! `--supersede` (issue 31): among waiters of one lock that all pass it, a
//! newer waiter replaces the older ones, which leave the line at once and
//! exit 81 (cancelled) naming who superseded them; `--serial N` orders
//! them by the caller's number instead of by arrival. Real servers.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{acquire, run, temp_dir, wait_until, Cluster, Output, Running};

/// The status of a superseded waiter (exit_code.rs: `Cancelled`).
const CANCELLED: i32 = 81;

/// How long an older waiter may take to hear it was superseded: it learns
/// within a second (woken on its own channel); the rest is a loaded
/// machine's margin.
const HEARS_WITHIN: Duration = Duration::from_secs(4);

/// `exec --supersede [EXTRA] deploy -- sh -c 'echo WHO >> LOG'`, waiting.
fn waiter(cluster: &Cluster, log: &str, who: &str, extra: &[&str]) -> Running {
    let section = format!("echo {who} >> {log}");
    Running::spawn(
        cluster
            .redlock()
            .args(["exec", "-w", "30s"])
            .args(extra)
            .args(["deploy", "--", "sh", "-c", &section])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// Who ran, in order.
fn ran(log: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[track_caller]
fn wait_in_line(cluster: &Cluster, count: usize) {
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("deploy", count)),
        "not {count} in line: {:?}",
        cluster
            .servers
            .iter()
            .map(|s| s.in_line("deploy"))
            .collect::<Vec<_>>()
    );
}

/// A superseded waiter's end: 81, and one line naming the newer waiter
/// (`names`: its pid or serial), after the progress lines of a wait that
/// took a second or more on a loaded machine.
#[track_caller]
fn assert_superseded(out: &Output, names: &str, context: &str) {
    out.assert_code(CANCELLED, context);
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| !line.starts_with("redlock: waiting for"))
        .collect();
    assert_eq!(said.len(), 1, "{context}: {}", out.stderr);
    assert!(
        said[0].contains("superseded by a newer waiter") && said[0].contains(names),
        "{context}: {}",
        out.stderr
    );
}

#[test]
fn of_three_waiters_arriving_in_turn_the_first_two_are_superseded_and_the_last_runs() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-three");
    let log = dir.path().join("log").display().to_string();
    let before = cluster.dbsizes();
    let token = acquire(&cluster, "deploy", &[]);
    let first = waiter(&cluster, &log, "first", &["--supersede"]);
    wait_in_line(&cluster, 1);
    let second = waiter(&cluster, &log, "second", &["--supersede"]);
    let second_pid = format!("pid {}", second.id());
    let since = Instant::now();
    let out = first.finish(HEARS_WITHIN);
    assert_superseded(&out, &second_pid, "the first, by the second");
    assert!(since.elapsed() < HEARS_WITHIN, "{:?}", since.elapsed());
    // The second stands in line alone.
    wait_in_line(&cluster, 1);
    let third = waiter(&cluster, &log, "third", &["--supersede"]);
    let third_pid = format!("pid {}", third.id());
    let out = second.finish(HEARS_WITHIN);
    assert_superseded(&out, &third_pid, "the second, by the third");
    wait_in_line(&cluster, 1);
    // The holder is never superseded: its lock is still there.
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    third
        .finish(Duration::from_secs(30))
        .assert_code(0, "the last one runs");
    assert_eq!(ran(&log), ["third"]);
    // The marks beside the lock expire a minute after the last write.
    let after: Vec<i64> = before.iter().map(|n| n + 1).collect();
    assert_eq!(
        cluster.dbsizes(),
        after,
        "only the superseding waiters' hash"
    );
}

#[test]
fn with_serials_an_older_one_arriving_last_is_superseded_at_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-serial");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "deploy", &[]);
    let newer = waiter(&cluster, &log, "run-12", &["--supersede", "--serial", "12"]);
    wait_in_line(&cluster, 1);
    let started = Instant::now();
    let rerun = waiter(&cluster, &log, "run-11", &["--supersede", "--serial", "11"]);
    let out = rerun.finish(HEARS_WITHIN);
    assert_superseded(&out, "serial 12", "the re-run of run 11");
    assert!(started.elapsed() < HEARS_WITHIN);
    wait_in_line(&cluster, 1);
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    newer
        .finish(Duration::from_secs(30))
        .assert_code(0, "run 12 runs");
    assert_eq!(ran(&log), ["run-12"]);
}

#[test]
fn a_waiter_without_the_flag_is_neither_superseded_nor_superseding() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-plain");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "deploy", &[]);
    let plain = waiter(&cluster, &log, "plain", &[]);
    wait_in_line(&cluster, 1);
    let superseding = waiter(&cluster, &log, "superseding", &["--supersede"]);
    wait_in_line(&cluster, 2);
    let late_plain = waiter(&cluster, &log, "late-plain", &[]);
    wait_in_line(&cluster, 3);
    // Time for a supersede to land, had there been one (every waiter
    // polls within 0.3s): the point is that nothing happens.
    std::thread::sleep(Duration::from_secs(1));
    wait_in_line(&cluster, 3);
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    for (waiter, who) in [
        (plain, "plain"),
        (superseding, "superseding"),
        (late_plain, "late-plain"),
    ] {
        waiter
            .finish(Duration::from_secs(30))
            .assert_code(0, &format!("{who} ran"));
    }
    assert_eq!(ran(&log), ["plain", "superseding", "late-plain"]);
}

#[test]
fn acquire_supersede_exits_81_too() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let older = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "--supersede", "--serial", "3", "deploy"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    wait_in_line(&cluster, 1);
    let newer = Running::spawn(
        cluster
            .redlock()
            .args([
                "acquire",
                "-w",
                "20s",
                "--supersede",
                "--serial",
                "4",
                "deploy",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let out = older.finish(HEARS_WITHIN);
    assert_superseded(&out, "serial 4", "acquire --supersede");
    assert_eq!(out.stdout, "", "no token");
    // With --json, the failure says who, as data.
    let json = Running::spawn(
        cluster
            .redlock()
            .args([
                "--json",
                "acquire",
                "--supersede",
                "--serial",
                "2",
                "deploy",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let out = json.finish(HEARS_WITHIN);
    out.assert_code(CANCELLED, "acquire --json --supersede");
    let failure: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(failure["error"], "superseded", "{failure}");
    assert_eq!(failure["superseded_by"]["serial"], 4, "{failure}");
    assert_eq!(
        failure["superseded_by"]["arrived_ms"],
        serde_json::Value::Null
    );
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    let out = newer.finish(Duration::from_secs(20));
    out.assert_code(0, "the newest takes the lock");
    assert!(!out.stdout.trim().is_empty(), "its token");
}

#[test]
fn bad_serials_are_one_line_usage_errors() {
    let cluster = Cluster::start(1);
    for bad in [
        &["--supersede", "--serial", "-1"][..],
        &["--supersede", "--serial", "x"],
        &["--supersede", "--serial", "1.5"],
        &["--supersede", "--serial", ""],
        &["--supersede", "--serial", "18446744073709551616"],
        &["--serial", "3"],
    ] {
        for command in ["exec", "acquire"] {
            let mut cmd = cluster.redlock();
            cmd.arg(command).args(bad).arg("deploy");
            if command == "exec" {
                cmd.args(["--", "true"]);
            }
            let out = run(&mut cmd);
            out.assert_code(64, &format!("{command} {bad:?}"));
            assert_eq!(out.stderr.lines().count(), 1, "{bad:?}: {}", out.stderr);
        }
    }
}

#[test]
fn status_and_list_show_the_pending_superseding_waiter() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-status");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["--json", "status", "deploy"]));
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(status["superseding_waiter"], serde_json::Value::Null);
    let waiting = waiter(&cluster, &log, "run-7", &["--supersede", "--serial", "7"]);
    let pid = waiting.id();
    // It registers on its attempts in line.
    assert!(wait_until(Duration::from_secs(10), || {
        let out = run(cluster.redlock().args(["--json", "status", "deploy"]));
        let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
        status["superseding_waiter"]["serial"] == 7 && status["superseding_waiter"]["pid"] == pid
    }));
    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "held");
    assert!(
        out.stdout.contains(&format!(
            "pending: a superseding waiter (serial 7, pid {pid} on "
        )),
        "{}",
        out.stdout
    );
    // list shows it beside the holder.
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    assert!(
        out.stdout.contains(&format!(
            "; pending: a superseding waiter (serial 7, pid {pid} on "
        )),
        "{}",
        out.stdout
    );
    let out = run(cluster.redlock().args(["--json", "list"]));
    let listed: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        listed["locks"][0]["superseding_waiter"]["serial"], 7,
        "{listed}"
    );
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    waiting
        .finish(Duration::from_secs(30))
        .assert_code(0, "it runs");
    // Once it took the lock it is no longer pending.
    let out = run(cluster.redlock().args(["status", "deploy"]));
    assert!(!out.stdout.contains("pending:"), "{}", out.stdout);
    let out = run(cluster.redlock().args(["--json", "list"]));
    let listed: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        listed["locks"][0]["superseding_waiter"],
        serde_json::Value::Null
    );
}

/// `exec --cancel-in-progress -- sh -c SCRIPT`, its stderr piped.
fn canceller(cluster: &Cluster, script: &str, extra: &[&str]) -> Running {
    Running::spawn(
        cluster
            .redlock()
            .args(["exec", "-w", "30s"])
            .args(extra)
            .args(["deploy", "--", "sh", "-c", script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// Waits until `log` has `line`.
#[track_caller]
fn wait_for_line(log: &str, line: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || ran(log)
            .iter()
            .any(|l| l == line)),
        "no {line:?} in {:?}",
        ran(log)
    );
}

#[test]
fn cancel_in_progress_stops_an_older_holder_that_opted_in_and_runs_after_it() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-cancel");
    let log = dir.path().join("log").display().to_string();
    let older = canceller(
        &cluster,
        &format!(
            "trap 'echo stopped >> {log}; exit 143' TERM; echo older >> {log}; sleep 30 & wait"
        ),
        &["--cancel-in-progress"],
    );
    wait_for_line(&log, "older");
    // status says that it can be cancelled.
    let out = run(cluster.redlock().args(["status", "deploy"]));
    assert!(out.stdout.contains(", cancellable)"), "{}", out.stdout);
    let out = run(cluster.redlock().args(["--json", "status", "deploy"]));
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(status["holder"]["cancellable"], true, "{status}");
    let asked = Instant::now();
    let newer = canceller(
        &cluster,
        &format!("echo newer >> {log}"),
        &["--cancel-in-progress"],
    );
    let newer_pid = format!("pid {}", newer.id());
    let out = older.finish(HEARS_WITHIN);
    // It learns within a second (a poll of 250ms on each side); the rest
    // is a loaded machine's margin.
    assert!(asked.elapsed() < HEARS_WITHIN, "{:?}", asked.elapsed());
    out.assert_code(CANCELLED, "the older holder");
    assert!(
        out.stderr.contains("asked this run to stop") && out.stderr.contains(&newer_pid),
        "{}",
        out.stderr
    );
    newer
        .finish(Duration::from_secs(30))
        .assert_code(0, "the newer one runs");
    // Its command saw the stop signal, and the newer one started only
    // after it had exited.
    assert_eq!(ran(&log), ["older", "stopped", "newer"]);
}

#[test]
fn cancel_in_progress_never_stops_a_holder_that_did_not_opt_in() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-no-cancel");
    let log = dir.path().join("log").display().to_string();
    let holder = canceller(
        &cluster,
        &format!("echo holder >> {log}; sleep 2; echo done >> {log}"),
        &[],
    );
    wait_for_line(&log, "holder");
    let newer = canceller(
        &cluster,
        &format!("echo newer >> {log}"),
        &["--cancel-in-progress"],
    );
    let out = run(cluster.redlock().args(["--json", "status", "deploy"]));
    let status: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(status["holder"]["cancellable"], serde_json::Value::Null);
    holder
        .finish(Duration::from_secs(30))
        .assert_code(0, "the holder runs to its end");
    newer
        .finish(Duration::from_secs(30))
        .assert_code(0, "the newer one runs after it");
    assert_eq!(ran(&log), ["holder", "done", "newer"]);
}

/// The older waiter polls every 20s (a test hook) and its ticket stays in
/// line meanwhile: only the newer waiter's publish on its own channel can
/// make it hear, within a second, that it was superseded.
#[test]
fn an_older_waiter_that_polls_rarely_is_woken_when_superseded() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("supersede-woken");
    let log = dir.path().join("log").display().to_string();
    let token = acquire(&cluster, "deploy", &[]);
    let linger = ("REDLOCK_TEST_LINGER_MS", "60000");
    let older = Running::spawn(
        cluster
            .redlock()
            .env("REDLOCK_TEST_POLL_DELAY_MS", "20000")
            .env(linger.0, linger.1)
            .args(["exec", "--supersede", "deploy", "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    wait_in_line(&cluster, 1);
    let started = Instant::now();
    let newer = Running::spawn(
        cluster
            .redlock()
            .env(linger.0, linger.1)
            .args(["exec", "--supersede", "deploy", "--"])
            .args(["sh", "-c", &format!("echo newer >> {log}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let out = older.finish(HEARS_WITHIN);
    assert_superseded(&out, "superseded", "woken, not polled");
    assert!(started.elapsed() < HEARS_WITHIN, "{:?}", started.elapsed());
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    newer
        .finish(Duration::from_secs(30))
        .assert_code(0, "newer");
    assert_eq!(ran(&log), ["newer"]);
}
