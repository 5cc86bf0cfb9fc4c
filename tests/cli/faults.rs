//! Faults in `exec` itself, driven at the point that matters: a freeze
//! between taking the lock and starting the command (test-only pauses read by
//! debug builds), a freeze of the supervisor while its command ends, and a
//! server restart under a cached connection.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::assertions::assert_gone_everywhere;
use crate::support::{run, wait_until, Cluster, Output, Running};

/// `exec --ttl 1s` that would create `marker` if its command ran.
fn exec_touching(cluster: &Cluster, marker: &Path) -> std::process::Command {
    let mut cmd = cluster.redlock();
    cmd.args(["exec", "--ttl", "1s", "frozen", "--", "touch"])
        .arg(marker);
    cmd
}

#[test]
fn a_command_is_not_started_once_the_stop_time_has_passed() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // Frozen for longer than the TTL after the lock was taken.
    let out =
        run(exec_touching(&cluster, &marker).env("REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS", "1500"));
    assert_not_started(&out, &marker, "frozen between acquire and spawn");
    assert_gone_everywhere(&cluster, b"frozen");
}

/// exec exited 79 saying the command was not started, and it did not run
/// (it would have created `marker`).
#[track_caller]
fn assert_not_started(out: &Output, marker: &Path, context: &str) {
    out.assert_code(79, context);
    assert!(
        out.stderr.contains("the command was not started"),
        "{}",
        out.stderr
    );
    assert!(
        !marker.exists(),
        "the command ran after the lock's stop time"
    );
}

#[test]
fn a_command_frozen_between_fork_and_exec_is_not_started() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // Frozen in the child before anyone knows its group: only the child's
    // own last look at the clock can keep the command from running.
    let out = run(exec_touching(&cluster, &marker).env("REDLOCK_TEST_PAUSE_IN_CHILD_MS", "1500"));
    assert_not_started(&out, &marker, "frozen between fork and exec");
    // Without a freeze the same command runs.
    run(&mut exec_touching(&cluster, &marker)).assert_code(0, "no freeze");
    assert!(marker.exists());
}

/// The supervisor is frozen (SIGSTOP) while its command ends on its own,
/// well inside the validity; it wakes after the deadline. The watchdog saw
/// the command gone at the stop time, so its status stands.
#[test]
fn a_command_that_ended_while_exec_was_frozen_keeps_its_status() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    // --ttl 3s: the stop time is about 1.8s after the lock is taken, far
    // after the command's end, even on a loaded machine.
    let script = format!("touch '{}'; sleep 0.2; exit 3", started.display());
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "3s", "ended", "--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(
        wait_until(Duration::from_secs(5), || started.exists()),
        "the command never started"
    );
    exec.signal(Signal::SIGSTOP);
    // Frozen until the lock has lapsed on every server.
    assert!(
        wait_until(Duration::from_secs(10), || (0..3)
            .all(|i| cluster[i].get(b"ended").is_none())),
        "the lock never lapsed"
    );
    exec.signal(Signal::SIGCONT);
    let out = exec.finish(Duration::from_secs(10));
    out.assert_code(3, "the command's own status, seen late");
}

/// The server restarts (empty) under exec's cached connection. The next
/// extension must not fail on the stale connection ("broken pipe", a retry,
/// a misleading message): retried once on a fresh one, it finds the truth,
/// that the lock is gone, and the command is stopped as lost.
#[test]
fn an_extension_after_a_server_restart_tells_the_truth_at_once() {
    let mut cluster = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    // --ttl 6s: the first extension comes 2s after the lock is taken, long
    // after the restart below has finished.
    let script = format!("touch '{}'; sleep 10", started.display());
    let exec = Running::spawn(
        cluster
            .redlock()
            .args([
                "exec",
                "--ttl",
                "6s",
                "restarted",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(
        wait_until(Duration::from_secs(5), || started.exists()),
        "the command never started"
    );
    cluster[0].restart();
    let out = exec.finish(Duration::from_secs(10));
    out.assert_code(79, "the lock is gone with the restart");
    assert!(out.stderr.contains("was lost"), "{}", out.stderr);
    assert!(!out.stderr.contains("extending failed"), "{}", out.stderr);
    assert!(
        !out.stderr.to_lowercase().contains("broken pipe"),
        "{}",
        out.stderr
    );
}
