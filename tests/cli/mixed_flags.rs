//! Issue 31's flags mixed on one lock, which "behave as documented"
//! (docs/guide.md, "Mixed flags"): each pair either works, tested here
//! against real servers, or is a one-line usage error (64).

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{run, temp_dir, wait_until, Cluster, Running};

/// The status of a superseded or cancelled run (exit_code.rs: `Cancelled`).
const CANCELLED: i32 = 81;

/// `--once-per 1h@00:MM`, MM half an hour from now on the servers' clock:
/// no period ends during a test.
fn hourly(cluster: &Cluster) -> String {
    let (secs, _): (u64, u64) = redis::cmd("TIME").query(&mut cluster[0].client()).unwrap();
    format!("1h@00:{:02}", (secs / 60 + 30) % 60)
}

/// `exec -w 30s EXTRA nightly -- sh -c SCRIPT`, its stderr piped.
fn exec(cluster: &Cluster, extra: &[&str], script: &str) -> Running {
    Running::spawn(
        cluster
            .redlock()
            .args(["exec", "-w", "30s"])
            .args(extra)
            .args(["nightly", "--", "sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

fn lines(log: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[track_caller]
fn wait_for_line(log: &str, line: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || lines(log)
            .iter()
            .any(|l| l == line)),
        "no {line:?} in {:?}",
        lines(log)
    );
}

#[track_caller]
fn wait_in_line(cluster: &Cluster, count: usize) {
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("nightly", count)),
        "not {count} in line"
    );
}

/// Refused: `--supersede` and `--cancel-in-progress` with `--shared` or
/// `--limit` (readers and slots are not one line of one pending run), and
/// `--cancel-in-progress` on `acquire` (redlock cannot stop a script).
#[test]
fn supersede_and_cancel_with_shared_or_limit_are_usage_errors() {
    let cluster = Cluster::start(1);
    for (command, args) in [
        ("exec", &["--supersede", "--shared"][..]),
        ("exec", &["--supersede", "--limit", "2"]),
        ("exec", &["--cancel-in-progress", "--shared"]),
        ("exec", &["--cancel-in-progress", "--limit", "2"]),
        ("acquire", &["--supersede", "--shared"]),
        ("acquire", &["--supersede", "--limit", "2"]),
        ("acquire", &["--cancel-in-progress"]),
    ] {
        let mut cmd = cluster.redlock();
        cmd.arg(command).args(args).arg("nightly");
        if command == "exec" {
            cmd.args(["--", "true"]);
        }
        let out = run(cmd.stdin(Stdio::null()));
        out.assert_code(64, &format!("{command} {args:?}"));
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    }
    assert_eq!(cluster.dbsizes(), [0]);
}

/// `--once-per` with `--supersede`: the newest waiter supersedes the older
/// one (81), then skips once the holder's run succeeded; the job ran once.
#[test]
fn once_per_with_supersede_supersedes_then_skips_after_the_run() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("mixed");
    let log = dir.path().join("log").display().to_string();
    let per = hourly(&cluster);
    let flags = ["--once-per", per.as_str(), "--supersede"];
    let holder = exec(
        &cluster,
        &flags,
        &format!("echo a >> {log}; while [ ! -e {log}.go ]; do sleep 0.1; done"),
    );
    wait_for_line(&log, "a");
    let older = exec(&cluster, &flags, &format!("echo b >> {log}"));
    wait_in_line(&cluster, 1);
    let newer = exec(&cluster, &flags, &format!("echo c >> {log}"));
    let older = older.finish(Duration::from_secs(10));
    older.assert_code(CANCELLED, "the older waiter is superseded");
    assert!(
        older.stderr.contains("superseded by a newer waiter"),
        "{}",
        older.stderr
    );
    std::fs::write(format!("{log}.go"), "").unwrap();
    holder
        .finish(Duration::from_secs(30))
        .assert_code(0, "the holder runs it");
    let newer = newer.finish(Duration::from_secs(30));
    newer.assert_code(0, "the newer waiter skips: done this period");
    assert!(
        newer.stderr.contains("was done this period by"),
        "{}",
        newer.stderr
    );
    assert_eq!(lines(&log), ["a"]);
}

/// `--once-per` with `--cancel-in-progress`: a newer run stops the older
/// one mid-job (81); the stopped run marks nothing, the newer one runs it
/// and marks it, and a later one skips.
#[test]
fn once_per_with_cancel_in_progress_runs_the_newest_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("mixed");
    let log = dir.path().join("log").display().to_string();
    let per = hourly(&cluster);
    let flags = ["--once-per", per.as_str(), "--cancel-in-progress"];
    let older = exec(
        &cluster,
        &flags,
        &format!("trap 'echo stopped >> {log}; exit 143' TERM; echo a >> {log}; sleep 30 & wait"),
    );
    wait_for_line(&log, "a");
    let newer = exec(&cluster, &flags, &format!("echo b >> {log}"));
    older
        .finish(Duration::from_secs(10))
        .assert_code(CANCELLED, "the older run is cancelled");
    newer
        .finish(Duration::from_secs(30))
        .assert_code(0, "the newer run");
    assert_eq!(lines(&log), ["a", "stopped", "b"]);
    let later = exec(&cluster, &flags, &format!("echo c >> {log}")).finish(Duration::from_secs(30));
    later.assert_code(0, "skipped");
    assert!(
        later.stderr.contains("was done this period by"),
        "{}",
        later.stderr
    );
    assert_eq!(lines(&log), ["a", "stopped", "b"]);
}

/// A `--cancel-in-progress` holder and a plain waiter: the plain waiter
/// never cancels anyone; it waits its turn and runs after the holder.
#[test]
fn a_plain_waiter_never_cancels_a_cancellable_holder() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("mixed");
    let log = dir.path().join("log").display().to_string();
    let holder = exec(
        &cluster,
        &["--cancel-in-progress"],
        &format!("echo holder >> {log}; sleep 2; echo done >> {log}"),
    );
    wait_for_line(&log, "holder");
    let plain = exec(&cluster, &[], &format!("echo plain >> {log}"));
    holder
        .finish(Duration::from_secs(30))
        .assert_code(0, "the holder runs to its end");
    plain
        .finish(Duration::from_secs(30))
        .assert_code(0, "the plain waiter runs after it");
    assert_eq!(lines(&log), ["holder", "done", "plain"]);
}

/// `acquire --once-per --while $$`: the keeper holds the lock while the
/// script runs, `redlock done` marks it, the keeper releases it when the
/// script ends, and the next script's acquire says done already (80).
#[test]
fn acquire_once_per_with_while_marks_and_the_next_script_skips() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("mixed");
    let log = dir.path().join("log").display().to_string();
    let per = hourly(&cluster);
    let script = format!(
        "tok=$(redlock acquire --once-per {per} --while $$ -w 10s nightly) || exit $?\n\
         echo x >> {log}\n\
         redlock done nightly \"$tok\""
    );
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_redlock"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let fire = || {
        let mut sh = Command::new("sh");
        for (name, value) in cluster.redlock().get_envs() {
            match value {
                Some(value) => sh.env(name, value),
                None => sh.env_remove(name),
            };
        }
        sh.args(["-c", &script])
            .env("PATH", &path)
            .stdin(Stdio::null());
        run(&mut sh)
    };
    fire().assert_code(0, "the first script runs the job and marks it");
    // The keeper releases once the script has exited.
    assert!(wait_until(Duration::from_secs(10), || cluster
        .get_all(b"nightly")
        .iter()
        .all(Option::is_none)));
    let again = fire();
    again.assert_code(80, "done already");
    assert!(
        again.stderr.contains("was done this period by"),
        "{}",
        again.stderr
    );
    assert_eq!(lines(&log), ["x"]);
}
