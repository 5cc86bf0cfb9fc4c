//! Takeover after `kill -9` of `redlock exec` (the OOM killer, a CI
//! runner's cancel): its watchdog, which outlives it, releases the lock as
//! soon as no process of the command's group is left, so that the next
//! waiter takes it within a second instead of a whole TTL later; and never
//! while a process of the group still runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::{pid_alive, wait_until, Cluster, Output, RedisServer, Running};

/// How soon after the kill the next waiter must have the lock.
const TAKEOVER: Duration = Duration::from_secs(1);

fn temp() -> tempfile::TempDir {
    crate::support::temp_dir("redlock-test-takeover-")
}

fn spawn(cmd: &mut Command) -> Running {
    Running::spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// Waits for a file the command writes, and returns what it says.
fn read_when_written(path: &Path) -> String {
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read_to_string(path)
            .is_ok_and(|s| s.ends_with('\n'))),
        "{} never appeared",
        path.display()
    );
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

/// Starts `acquire -w` on `name` from `redlock` and waits until it stands
/// in line on every server, behind the exec that holds the lock.
fn waiter(cluster: &Cluster, redlock: &mut Command, name: &str) -> Running {
    waiter_in(cluster, redlock.args(["acquire", "-w", "60s", name]), name)
}

/// The same for a prepared `acquire` whose line is the key `line`.
fn waiter_in(cluster: &Cluster, acquire: &mut Command, line: &str) -> Running {
    let waiting = spawn(acquire);
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere(line, 1)),
        "the waiter never stood in line"
    );
    waiting
}

/// SIGKILLs `exec` and waits for `waiting` to take the lock: how long that
/// took from the kill.
fn kill_and_take_over(exec: Running, waiting: Running) -> Duration {
    let killed = Instant::now();
    exec.signal(Signal::SIGKILL);
    let out: Output = waiting.finish(Duration::from_secs(60));
    let took = killed.elapsed();
    out.assert_code(0, "the waiter takes the lock");
    drop(exec);
    took
}

#[test]
fn a_killed_exec_is_taken_over_within_a_second() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let pid_file = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let exec = spawn(cluster.redlock().args(["exec", "oom", "-c", &script]));
    let command: i32 = read_when_written(&pid_file).parse().unwrap();
    let waiting = waiter(&cluster, &mut cluster.redlock(), "oom");
    let took = kill_and_take_over(exec, waiting);
    assert!(!pid_alive(command), "the command died with exec");
    assert!(
        took < TAKEOVER,
        "the next waiter got the lock {took:?} after exec was killed"
    );
}

#[test]
fn a_process_that_ignores_sigterm_keeps_the_lock_until_it_is_killed() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let pid_file = dir.path().join("pid");
    // The command itself dies with exec (PR_SET_PDEATHSIG); what it started
    // ignores SIGTERM, so only the watchdog's SIGKILL, -k after its SIGTERM,
    // ends the group.
    let script = format!(
        "trap '' TERM; sleep 60 & echo $! > {}; wait",
        pid_file.display()
    );
    let exec = spawn(
        cluster
            .redlock()
            .args(["exec", "-k", "2s", "stubborn", "-c", &script]),
    );
    let stubborn: i32 = read_when_written(&pid_file).parse().unwrap();
    let waiting = waiter(&cluster, &mut cluster.redlock(), "stubborn");
    let took = kill_and_take_over(exec, waiting);
    assert!(!pid_alive(stubborn), "SIGKILL ended it");
    assert!(
        took >= Duration::from_secs(2),
        "released {took:?} after the kill, while a process of the group ignored SIGTERM"
    );
    assert!(
        took < Duration::from_secs(2) + TAKEOVER,
        "released {took:?} after the kill: not at once after SIGKILL at 2s"
    );
}

#[test]
fn a_leftover_in_the_group_keeps_the_lock_until_it_ends() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let (begun, done) = (dir.path().join("begun"), dir.path().join("done"));
    // The command exits at once; what it leaves behind ignores SIGTERM and
    // runs on for 2s, holding the lock (exec waits for it).
    let script = format!(
        "(trap '' TERM; echo go > {}; sleep 2; touch {}) & exit 0",
        begun.display(),
        done.display()
    );
    let exec = spawn(
        cluster
            .redlock()
            .args(["exec", "-k", "20s", "leftover", "-c", &script]),
    );
    read_when_written(&begun);
    let started = Instant::now();
    let waiting = waiter(&cluster, &mut cluster.redlock(), "leftover");
    let took = kill_and_take_over(exec, waiting);
    assert!(
        done.exists(),
        "released {took:?} after the kill, while the leftover still ran"
    );
    let since_start = started.elapsed();
    assert!(
        since_start < Duration::from_secs(2) + TAKEOVER,
        "released {since_start:?} after the leftover began its 2s: not at once when it ended"
    );
}

#[test]
fn the_private_servers_file_goes_with_the_released_lock() {
    let cluster = Cluster::start(3);
    let servers = cluster.acl_user("locker", "s3cretPW", &["~*", "&*", "+@all"]);
    let dir = temp();
    let named = dir.path().join("file");
    let script = format!(
        "echo \"$REDLOCK_SERVERS_FILE\" > {}; exec sleep 60",
        named.display()
    );
    let with_password = || {
        let mut redlock = crate::support::redlock();
        redlock.env("REDLOCK_SERVERS", &servers);
        redlock
    };
    let exec = spawn(with_password().args(["exec", "secret", "-c", &script]));
    let file = std::path::PathBuf::from(read_when_written(&named));
    assert!(
        file.exists(),
        "exec wrote the servers to {}",
        file.display()
    );
    let waiting = waiter(&cluster, &mut with_password(), "secret");
    let took = kill_and_take_over(exec, waiting);
    assert!(
        !file.exists() && !file.parent().unwrap().exists(),
        "{} is left behind after exec was killed",
        file.display()
    );
    assert!(
        took < TAKEOVER,
        "the watchdog logs in with the password: taken over after {took:?}"
    );
}

#[test]
fn a_killed_exec_holding_a_slot_under_a_prefix_is_taken_over_within_a_second() {
    let cluster = Cluster::start(3);
    let limited = ["--prefix", "app:", "--limit", "1"];
    let exec = spawn(
        cluster
            .redlock()
            .arg("exec")
            .args(limited)
            .args(["pool", "--", "sleep", "60"]),
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .get_all(b"app:pool#0")
            .iter()
            .all(Option::is_some)),
        "exec never took the slot"
    );
    let mut acquire = cluster.redlock();
    acquire
        .args(["acquire", "-w", "60s"])
        .args(limited)
        .arg("pool");
    let waiting = waiter_in(&cluster, &mut acquire, "app:pool#0");
    let took = kill_and_take_over(exec, waiting);
    assert!(
        took < TAKEOVER,
        "the next waiter got the slot {took:?} after exec was killed"
    );
}

#[test]
fn an_exec_killed_before_its_command_started_is_taken_over_within_a_second() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let ran = dir.path().join("ran");
    // The lock is taken and the watchdog told; exec stops just before it
    // starts the command (debug builds only), and is killed there.
    let exec = spawn(
        cluster
            .redlock()
            .env("REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS", "20000")
            .args(["exec", "early", "--", "touch", &ran.display().to_string()]),
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .get_all(b"early")
            .iter()
            .all(Option::is_some)),
        "exec never took the lock"
    );
    let waiting = waiter(&cluster, &mut cluster.redlock(), "early");
    let took = kill_and_take_over(exec, waiting);
    assert!(!ran.exists(), "the command never started");
    assert!(
        took < TAKEOVER,
        "the next waiter got the lock {took:?} after exec was killed"
    );
}

#[test]
fn over_tls_the_watchdog_needs_no_file_at_the_release() {
    let server = RedisServer::start_tls();
    let dir = temp();
    // exec's own copy of the CA, gone before the kill: the watchdog has
    // the TLS set-up in memory from exec's start.
    let ca = dir.path().join("ca.pem");
    std::fs::copy(server.tls_ca_cert().unwrap(), &ca).unwrap();
    let redlock = |ca: &Path| {
        let mut redlock = crate::support::redlock();
        redlock
            .env("REDLOCK_SERVERS", server.tls_url())
            .env("REDLOCK_TLS_CA_CERT", ca)
            .args(["--server-timeout", "2s"]);
        redlock
    };
    let exec = spawn(redlock(&ca).args(["exec", "secure", "--", "sleep", "60"]));
    if !wait_until(Duration::from_secs(5), || server.get(b"secure").is_some()) {
        let out = exec.finish(Duration::from_secs(1));
        panic!("exec never took the lock: {out:?}");
    }
    std::fs::remove_file(&ca).unwrap();
    let waiting =
        spawn(redlock(&server.tls_ca_cert().unwrap()).args(["acquire", "-w", "60s", "secure"]));
    assert!(
        wait_until(Duration::from_secs(10), || server.in_line("secure") == 1),
        "the waiter never stood in line"
    );
    let took = kill_and_take_over(exec, waiting);
    assert!(
        took < TAKEOVER,
        "the next waiter got the lock {took:?} after exec was killed"
    );
}
