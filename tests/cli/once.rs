//! `exec --once-per DUR` and `exec --once KEY` (issue 31): a job fired on
//! several "hosts" (processes whose wall clocks are skewed with
//! libfaketime) runs at most once per period, across every host, against
//! real redis-server processes. The period is the servers' clock's, so the
//! skew does not matter; each test picks a period that does not end while
//! it runs (`@HH:MM` half an hour away from now on the servers' clock).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use tempfile::TempDir;

use crate::support::{
    faketime_library, proc_state, run, temp_dir, wait_until, Cluster, Output, Running,
};

const HOUR_MS: u64 = 3_600_000;

/// The servers' clock, in ms (server 0's).
fn server_ms(cluster: &Cluster) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut cluster[0].client()).unwrap();
    secs * 1000 + micros / 1000
}

/// `--once-per 1h@00:MM`, with MM half an hour from now: no period ends
/// during a test. Also the offset in ms, for the id of a mark.
fn hourly(cluster: &Cluster) -> (String, u64) {
    let minute = (server_ms(cluster) / 60_000 + 30) % 60;
    (format!("1h@00:{minute:02}"), minute * 60_000)
}

/// The id of this hour's run (`lock/once.rs`), `back` periods ago.
fn period_id(cluster: &Cluster, offset: u64, back: u64) -> String {
    let n = (server_ms(cluster) - offset) / HOUR_MS - back;
    format!("per:{HOUR_MS}:{offset}:{n}")
}

/// `redlock exec` on a "host" whose wall clock is `shift` (libfaketime's
/// `FAKETIME`, "+5" for five seconds ahead; "" for the true clock).
fn host(cluster: &Cluster, shift: &str) -> Command {
    let mut cmd = cluster.redlock();
    if !shift.is_empty() {
        let library = faketime_library()
            .expect("libfaketime is missing: scripts/test installs the faketime package");
        cmd.env("LD_PRELOAD", library)
            .env("FAKETIME", shift)
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }
    cmd.arg("exec").stdin(Stdio::null());
    cmd
}

/// A job that appends `who` to `runs`, then sleeps `secs` and exits `code`.
fn job(runs: &Path, who: &str, secs: u32, code: i32) -> Vec<String> {
    vec![
        "-c".into(),
        format!(
            "echo {who} >> {}; sleep {secs}; exit {code}",
            runs.display()
        ),
    ]
}

fn runs(runs: &Path) -> Vec<String> {
    std::fs::read_to_string(runs)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn spawn(cmd: &mut Command) -> Running {
    Running::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))
}

fn skipped(out: &Output, context: &str) {
    out.assert_code(0, context);
    assert!(
        out.stderr
            .contains("skipped: \"nightly\" was done this period by ")
            && out.stderr.contains("(exit status 0); not run"),
        "{context}: {}",
        out.stderr
    );
}

/// The cron case: three hosts, clocks -5 s, 0 and +5 s, fire the
/// same 1 s job 0, 2 and 5 s apart. It runs once; the others skip (exit 0)
/// with a line that names who did it.
#[test]
fn three_skewed_hosts_fired_seconds_apart_run_a_one_second_job_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let mut outs = Vec::new();
    for (who, shift, after) in [("a", "-5", 0), ("b", "", 2), ("c", "+5", 3)] {
        // A fixed pause: hosts firing seconds apart is the case under test.
        std::thread::sleep(Duration::from_secs(after));
        let mut cmd = host(&cluster, shift);
        cmd.args(["--once-per", &per, "nightly", "--", "sh"])
            .args(job(&ran, who, 1, 0));
        outs.push(spawn(&mut cmd));
    }
    let outs: Vec<Output> = outs
        .into_iter()
        .map(|o| o.finish(Duration::from_secs(20)))
        .collect();
    outs[0].assert_code(0, "the first host runs it");
    skipped(&outs[1], "the second host");
    skipped(&outs[2], "the third host");
    assert_eq!(runs(&ran), ["a"]);
    // The lock is free again; the mark stays beside it, until the period's
    // end and a margin (PXAT on each server).
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
    for server in &cluster.servers {
        let pttl = server.pttl(b"nightly\0done");
        assert!(pttl > 60_000 && pttl <= HOUR_MS as i64 + 120_000, "{pttl}");
    }
    // -q: a skip says nothing.
    let quiet = run(host(&cluster, "").args(["-q", "--once-per", &per, "nightly", "--", "true"]));
    quiet.assert_code(0, "-q");
    assert_eq!(quiet.stderr, "", "-q says nothing");
}

/// A run that fails marks nothing: the next host runs the job, and the
/// one after skips.
#[test]
fn a_failing_run_does_not_count_and_the_next_host_runs_it() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let fire = |who, shift, code| {
        let mut cmd = host(&cluster, shift);
        cmd.args(["--once-per", &per, "nightly", "--", "sh"])
            .args(job(&ran, who, 0, code));
        run(&mut cmd)
    };
    fire("a", "+5", 3).assert_code(3, "a failing first run");
    assert_eq!(cluster.get_all(b"nightly\0done"), vec![None, None, None]);
    fire("b", "-5", 0).assert_code(0, "the next runs it");
    skipped(&fire("c", "", 0), "the third");
    assert_eq!(runs(&ran), ["a", "b"]);
}

/// A holder killed mid-job (SIGKILL) marks nothing: a host waiting behind
/// it (-w) runs the job once the lock is free again, and the next skips.
/// A host with -n while the job runs skips at once (0, runs nothing).
#[test]
fn a_holder_killed_mid_job_is_run_again_by_the_next_host_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let mut first = host(&cluster, "-5");
    first
        .args(["--once-per", &per, "--ttl", "3s", "nightly", "--", "sh"])
        .args(job(&ran, "a", 60, 0));
    let first = spawn(&mut first);
    assert!(wait_until(Duration::from_secs(10), || runs(&ran).len() == 1));
    let mut busy = host(&cluster, "");
    busy.args(["-n", "--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "n", 0, 0));
    run(&mut busy).assert_code(0, "-n while another host runs it");
    let mut waiter = host(&cluster, "+5");
    waiter
        .args(["-w", "30s", "--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "b", 0, 0));
    let waiter = spawn(&mut waiter);
    assert!(wait_until(Duration::from_secs(10), || cluster
        .in_line_everywhere("nightly", 1)));
    first.signal(Signal::SIGKILL);
    first.finish(Duration::from_secs(10));
    waiter
        .finish(Duration::from_secs(30))
        .assert_code(0, "the waiter runs it");
    let again = run(host(&cluster, "").args(["--once-per", &per, "nightly", "--", "true"]));
    skipped(&again, "after the waiter's run");
    assert_eq!(runs(&ran), ["a", "b"]);
}

/// A waiter behind a running holder waits, then skips when the holder
/// succeeded: its next attempt meets the mark.
#[test]
fn a_waiter_behind_a_successful_run_skips() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let mut first = host(&cluster, "");
    first
        .args(["--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "a", 2, 0));
    let first = spawn(&mut first);
    assert!(wait_until(Duration::from_secs(10), || runs(&ran).len() == 1));
    let mut waiter = host(&cluster, "+5");
    waiter
        .args(["-w", "30s", "--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "b", 0, 0));
    let waiter = spawn(&mut waiter);
    first
        .finish(Duration::from_secs(20))
        .assert_code(0, "the first");
    skipped(&waiter.finish(Duration::from_secs(20)), "the waiter");
    assert_eq!(runs(&ran), ["a"]);
}

/// The issue's `-n`: a host that arrives while another runs the job skips
/// at once, quietly and with status 0, as `-E 0` does; `-E 75` (or any
/// CODE) still tells busy apart. A plain `exec -n` stays busy, 75.
#[test]
fn with_n_a_host_that_finds_the_job_running_skips_at_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let mut first = host(&cluster, "");
    first
        .args(["--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "a", 3, 0));
    let first = spawn(&mut first);
    assert!(wait_until(Duration::from_secs(10), || runs(&ran).len() == 1));
    let mut nonblocking = host(&cluster, "");
    nonblocking
        .args(["-n", "--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "b", 0, 0));
    let out = run(&mut nonblocking);
    out.assert_code(0, "-n while another host runs it");
    assert_eq!(out.stderr, "", "a skip of -n is quiet, as -E 0's");
    let mut told = host(&cluster, "");
    told.args(["-n", "-E", "75", "--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "c", 0, 0));
    run(&mut told).assert_code(75, "-n -E 75");
    let mut plain = host(&cluster, "");
    plain.args(["-n", "nightly", "--", "true"]);
    run(&mut plain).assert_code(75, "a plain exec -n");
    first
        .finish(Duration::from_secs(20))
        .assert_code(0, "the first");
    assert_eq!(runs(&ran), ["a"], "nobody else ran it");
}

/// The mark of this period on one server of three is enough to skip (the
/// client's rule: any server that says done); a mark of the previous
/// period, on every server, is not.
#[test]
fn one_server_saying_done_skips_and_last_periods_mark_does_not() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, offset) = hourly(&cluster);
    let mark = |id: &str| {
        format!("{id}\x001700000000000\x000\x00{{\"token\":\"t\",\"host\":\"elsewhere\",\"pid\":7,\"user\":\"u\"}}")
    };
    for server in &cluster.servers {
        server.set(
            b"nightly\0done",
            mark(&period_id(&cluster, offset, 1)).as_bytes(),
        );
    }
    let fire = |who| {
        let mut cmd = host(&cluster, "");
        cmd.args(["--once-per", &per, "nightly", "--", "sh"])
            .args(job(&ran, who, 0, 0));
        run(&mut cmd)
    };
    fire("a").assert_code(0, "last period's mark does not skip");
    assert_eq!(runs(&ran), ["a"]);
    // Now only server 2 holds this period's mark, written by another host.
    for server in &cluster.servers {
        redis::cmd("DEL")
            .arg(b"nightly\0done")
            .query::<i64>(&mut server.client())
            .unwrap();
    }
    cluster[2].set(
        b"nightly\0done",
        mark(&period_id(&cluster, offset, 0)).as_bytes(),
    );
    let out = fire("b");
    skipped(&out, "one server says done");
    assert!(
        out.stderr
            .contains("by elsewhere (pid 7) at 2023-11-14 22:13:20 UTC"),
        "{}",
        out.stderr
    );
    assert_eq!(runs(&ran), ["a"]);
    // Nothing of the attempt is left behind.
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
}

/// A run whose period is older than the done mark's (same DUR and shift)
/// skips: it fixed its period before the edge and reached the lock after a
/// run of the next period. Running it was a second run in the servers'
/// current period, and its mark replaced the newer one, so that the
/// period's next host ran the job a third time, with no server losing data.
#[test]
fn a_run_of_an_older_period_skips_when_a_later_one_is_done() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, offset) = hourly(&cluster);
    let next = (server_ms(&cluster) - offset) / HOUR_MS + 1;
    let next_id = format!("per:{HOUR_MS}:{offset}:{next}");
    let mark = format!("{next_id}\x001700000000000\x000\x00{{\"token\":\"t\",\"host\":\"elsewhere\",\"pid\":7,\"user\":\"u\"}}");
    for server in &cluster.servers {
        server.set(b"nightly\0done", mark.as_bytes());
    }
    let mut cmd = host(&cluster, "");
    cmd.args(["--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "a", 0, 0));
    skipped(&run(&mut cmd), "a later period is done");
    assert_eq!(runs(&ran), Vec::<String>::new());
    // The newer mark is left as it was.
    for server in &cluster.servers {
        assert_eq!(
            server.get(b"nightly\0done"),
            Some(mark.clone().into_bytes())
        );
    }
}

/// `--once KEY`: once per key; another key runs again.
#[test]
fn once_per_key_runs_once_for_each_key() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let fire = |who, key| {
        let mut cmd = host(&cluster, "");
        cmd.args(["--once", key, "setup", "--", "sh"])
            .args(job(&ran, who, 0, 0));
        run(&mut cmd)
    };
    fire("a", "build-17").assert_code(0, "the first");
    let second = fire("b", "build-17");
    second.assert_code(0, "the second");
    assert!(
        second
            .stderr
            .contains("skipped: \"setup\" was done for --once build-17 by "),
        "{}",
        second.stderr
    );
    fire("c", "build-18").assert_code(0, "another key");
    assert_eq!(runs(&ran), ["a", "c"]);
    let pttl = cluster[0].pttl(b"setup\0done");
    assert!(pttl > 29 * 24 * HOUR_MS as i64, "kept 30 days: {pttl}");
}

/// Bad values are a one-line usage error, exit 64, before any server is
/// asked.
#[test]
fn bad_once_values_are_usage_errors() {
    let cluster = Cluster::start(1);
    for (args, says) in [
        (&["--once-per", "0"][..], "shorter than a second"),
        (&["--once-per", "500ms"][..], "shorter than a second"),
        (&["--once-per", "1h@01:00"][..], "within one period"),
        (&["--once-per", "1d@25:00"][..], "not a time of day"),
        // Periods whose end overflowed the mark's lapse (a panic, exit 101).
        (&["--once-per", "213503982334601d"][..], "at most 100 years"),
        (&["--once-per", "584942417y"][..], "at most 100 years"),
        (&["--once-per", "101y"][..], "at most 100 years"),
        (
            &["--once-per", "1h", "--once", "k"][..],
            "cannot be used with",
        ),
        (&["--once", ""][..], "non-empty word without NUL"),
        (&["--once", &"k".repeat(257)][..], "of at most 256 bytes"),
        (&["--once", "k", "--limit", "2"][..], "cannot be used with"),
        (&["--once-per", "1h", "--shared"][..], "cannot be used with"),
    ] {
        let out = run(host(&cluster, "").args(args).args(["job", "--", "true"]));
        out.assert_code(64, &format!("{args:?}"));
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
    assert_eq!(cluster.dbsizes(), [0]);
    // The flag is named plainly: its value name's `@` is no URL's
    // user-info to redact (it read `for '--once-per ***@HH:MM]>'`).
    for value in ["0", "1h@01:00"] {
        let out = run(host(&cluster, "").args(["--once-per", value, "job", "--", "true"]));
        out.assert_code(64, value);
        assert!(
            out.stderr.contains(" for '--once-per': ") && !out.stderr.contains("HH:MM]>"),
            "{value}: {}",
            out.stderr
        );
    }
}

/// `redlock` (no exec) against `cluster`.
fn redlock_at(cluster: &Cluster) -> Command {
    let mut cmd = cluster.redlock();
    cmd.stdin(Stdio::null());
    cmd
}

/// For scripts: `acquire --once-per` tells "do it" (0, the token) from
/// "done already" (80) from "busy" (75) from "servers down" (69) by the
/// status alone; `done` marks it, only while TOKEN holds the lock (79
/// otherwise, and 64 for a lock taken without a run once).
#[test]
fn acquire_and_done_tell_a_script_every_case_by_the_status() {
    let mut cluster = Cluster::start(3);
    let (per, _) = hourly(&cluster);
    let acquire = |extra: &[&str]| {
        run(redlock_at(&cluster)
            .args(["acquire", "--once-per", &per, "--ttl", "10s"])
            .args(extra)
            .arg("nightly"))
    };
    let taken = acquire(&["-n"]);
    taken.assert_code(0, "do it");
    let tok = taken.stdout.trim().to_owned();
    acquire(&["-n"]).assert_code(75, "busy while it runs");
    run(redlock_at(&cluster).args(["done", "nightly", "not-the-token"]))
        .assert_code(79, "done with another token");
    let done = run(redlock_at(&cluster).args(["--json", "done", "nightly", &tok]));
    done.assert_code(0, "done");
    let json = done.json();
    assert_eq!(json["done"], true, "{json}");
    assert!(
        json["id"].as_str().unwrap().starts_with("per:3600000:"),
        "{json}"
    );
    assert!(json["marked_on"].as_array().unwrap().len() >= 2, "{json}");
    run(redlock_at(&cluster).args(["release", "nightly", &tok])).assert_code(0, "release");
    // Done already: 80, with who did it; -q says nothing; --json its own
    // object.
    let again = acquire(&["-w", "5s"]);
    again.assert_code(80, "done already");
    assert_eq!(again.stdout, "", "no token");
    assert!(
        again
            .stderr
            .contains("skipped: \"nightly\" was done this period by ")
            && again.stderr.contains("(exit status 0); nothing taken"),
        "{}",
        again.stderr
    );
    let quiet = acquire(&["-q"]);
    quiet.assert_code(80, "-q");
    assert_eq!(quiet.stderr, "");
    let json = acquire(&["--json"]);
    json.assert_code(80, "--json");
    let json = json.json();
    assert_eq!(json["skipped"], true, "{json}");
    assert_eq!(json["status"], 0, "{json}");
    assert!(json["done_by_pid"].as_u64().is_some(), "{json}");
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
    // A lock taken without a run once has no run to mark.
    let plain = run(redlock_at(&cluster).args(["acquire", "-n", "plain"]));
    let plain_tok = plain.stdout.trim().to_owned();
    let refused = run(redlock_at(&cluster).args(["done", "plain", &plain_tok]));
    refused.assert_code(64, "done of a plain lock");
    assert!(refused
        .stderr
        .contains("not taken with --once-per or --once"));
    // Servers down: 69.
    cluster.servers[1].kill();
    cluster.servers[2].kill();
    run(redlock_at(&cluster).args(["acquire", "-n", "--once", "k", "other"]))
        .assert_code(69, "servers down");
}

/// The script of `redlock done --help`, as printed: a job that succeeds
/// runs once, a failed one is run again, and done-already exits 0.
#[test]
fn the_script_recipe_of_done_runs_the_job_once() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let example = redlock::cli::examples("done")[0].lines.join("\n");
    let script = example.replace(
        "./backup.sh",
        &format!("sh -c 'echo x >> {}; exit \"$FAIL\"'", ran.display()),
    );
    // The redlock under test first in PATH, as the script calls it.
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_redlock"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let fire = |fail: &str| {
        let mut sh = Command::new("sh");
        // The environment the tests give redlock (the servers, the restart
        // guard off for servers started a moment ago).
        for (name, value) in cluster.redlock().get_envs() {
            match value {
                Some(value) => sh.env(name, value),
                None => sh.env_remove(name),
            };
        }
        sh.args(["-c", &script])
            .env("PATH", &path)
            .env("FAIL", fail)
            .stdin(Stdio::null());
        run(&mut sh)
    };
    fire("3").assert_code(1, "a failed job");
    fire("0").assert_code(0, "the job runs");
    fire("0").assert_code(0, "done already");
    assert_eq!(runs(&ran), ["x", "x"]);
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
}

/// `status` shows the mark (which run, who, when, the status, on how many
/// servers); `release --force --done` deletes it, and the job runs again.
#[test]
fn status_shows_the_mark_and_release_force_done_clears_it() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, offset) = hourly(&cluster);
    let fire = || {
        let mut cmd = host(&cluster, "");
        cmd.args(["--once-per", &per, "nightly", "--", "sh"])
            .args(job(&ran, "x", 0, 0));
        run(&mut cmd)
    };
    fire().assert_code(0, "the first run");
    let status = run(redlock_at(&cluster).args(["status", "nightly"]));
    status.assert_code(1, "free");
    assert!(
        status.stdout.contains("\n  done:    the period ending ")
            && status.stdout.contains(" UTC by ")
            && status
                .stdout
                .contains(", exit status 0 (on 3 of 3 servers)"),
        "{}",
        status.stdout
    );
    let json = run(redlock_at(&cluster).args(["status", "--json", "nightly"])).json();
    assert_eq!(json["done"]["id"], period_id(&cluster, offset, 0), "{json}");
    assert_eq!(json["done"]["on"], 3, "{json}");
    assert_eq!(json["done"]["status"], 0, "{json}");
    // Without --force, --done is refused; with it, the mark goes.
    run(redlock_at(&cluster).args(["release", "--done", "nightly"]))
        .assert_code(64, "--done needs --force");
    let cleared = run(redlock_at(&cluster).args(["release", "--force", "--done", "nightly"]));
    cleared.assert_code(0, "cleared");
    assert!(
        cleared
            .stderr
            .contains("deleted the done mark of \"nightly\" from 3 of 3 servers"),
        "{}",
        cleared.stderr
    );
    assert_eq!(cluster.get_all(b"nightly\0done"), vec![None, None, None]);
    let json = run(redlock_at(&cluster).args(["status", "--json", "nightly"])).json();
    assert!(json.get("done").is_none(), "{json}");
    fire().assert_code(0, "runs again");
    assert_eq!(runs(&ran), ["x", "x"]);
    let again = run(redlock_at(&cluster).args(["--json", "release", "--force", "--done", "other"]));
    again.assert_code(0, "nothing to clear");
    assert_eq!(again.json()["cleared"], false);
}

/// A run whose lock is lost (broken with `release --force`) is stopped and
/// marks nothing, whatever its command would have said: the next runs it.
#[test]
fn a_run_that_loses_its_lock_marks_nothing() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("once");
    let ran = dir.path().join("runs");
    let (per, _) = hourly(&cluster);
    let mut first = host(&cluster, "");
    first
        .args(["--once-per", &per, "--ttl", "3s", "nightly", "--", "sh"])
        .args(job(&ran, "a", 30, 0));
    let first = spawn(&mut first);
    assert!(wait_until(Duration::from_secs(10), || runs(&ran).len() == 1));
    run(redlock_at(&cluster).args(["release", "--force", "nightly"])).assert_code(0, "broken");
    first
        .finish(Duration::from_secs(30))
        .assert_code(79, "the lock was lost");
    assert_eq!(cluster.get_all(b"nightly\0done"), vec![None, None, None]);
    let mut next = host(&cluster, "");
    next.args(["--once-per", &per, "nightly", "--", "sh"])
        .args(job(&ran, "b", 0, 0));
    run(&mut next).assert_code(0, "the next runs it");
    assert_eq!(runs(&ran), ["a", "b"]);
}

/// A run whose job outlasts its period's end and margin still leaves its
/// mark, for at least the margin: a waiter of that period that takes the
/// lock next must find it. (The mark was written `PXAT` the period's end and
/// a margin, which deletes a key at once when that time has passed, while
/// `done` said it had marked the run on every server.)
#[test]
fn a_run_that_ends_after_its_periods_margin_still_leaves_its_mark() {
    let cluster = Cluster::start(3);
    // The margin is a minute; a test hook makes it 2 s (guard off, so the
    // margin is the hook's).
    let at = || {
        let mut cmd = redlock_at(&cluster);
        cmd.env("REDLOCK_TEST_ONCE_MARGIN_MS", "2000")
            .env("REDLOCK_RESTART_GUARD", "0");
        cmd
    };
    // `--once-per 1s`: the period ends within a second of the acquire.
    let taken = run(at().args(["acquire", "--once-per", "1s", "--ttl", "1m", "nightly"]));
    taken.assert_code(0, "do it");
    let tok = taken.stdout.trim().to_owned();
    // A fixed sleep: the period's end and its margin passing while the job
    // runs is the case under test.
    std::thread::sleep(Duration::from_millis(3500));
    run(at().args(["done", "nightly", &tok])).assert_code(0, "done");
    for server in &cluster.servers {
        let pttl = server.pttl(b"nightly\0done");
        assert!(pttl > 1_000 && pttl <= 2_000, "the mark is kept: {pttl}");
    }
}

/// A `waiting_job` with `ttl` on `cluster`, once it runs.
struct StoppedAtItsEnd {
    exec: Running,
    /// The hour's offset, for `period_id`.
    offset: u64,
    /// When the job was let end.
    went: std::time::Instant,
    /// The job's directory, kept until exec ends.
    _dir: TempDir,
}

/// A `waiting_job` with `ttl` on `cluster` that runs, then servers 1 and 2
/// stopped and the job let end.
fn majority_stopped_at_the_jobs_end(cluster: &mut Cluster, ttl: &str) -> StoppedAtItsEnd {
    let dir = temp_dir("once");
    let (ran, go) = (dir.path().join("runs"), dir.path().join("go"));
    let (per, offset) = hourly(cluster);
    let exec = waiting_job(cluster, &per, ttl, (&ran, &go));
    assert!(wait_until(Duration::from_secs(10), || runs(&ran).len() == 1));
    cluster[1].pause();
    cluster[2].pause();
    let went = std::time::Instant::now();
    std::fs::write(&go, "").unwrap();
    StoppedAtItsEnd {
        exec,
        offset,
        went,
        _dir: dir,
    }
}

/// `exec -v --once-per` with a 200 ms server timeout whose job appends `a`
/// to `ran`, then waits until the file `go` exists and exits 0.
fn waiting_job(cluster: &Cluster, per: &str, ttl: &str, (ran, go): (&Path, &Path)) -> Running {
    let mut cmd = redlock_at(cluster);
    cmd.args(["-v", "--server-timeout", "200ms", "exec", "--ttl", ttl])
        .args(["--once-per", per, "nightly", "--", "sh", "-c"])
        .arg(format!(
            "echo a >> {}; while [ ! -e {} ]; do sleep 0.05; done",
            ran.display(),
            go.display()
        ));
    spawn(&mut cmd)
}

/// A majority of the servers stopped while the job runs, and continued
/// after its mark's first round gave up on them but before the lock's
/// validity ends: that round marks one server of three, and exec tries
/// the other two again until they answer. It says it marked a majority,
/// and every server holds the mark. (Before, one round: "this run does
/// not count", and the period could run twice.)
#[test]
fn a_mark_that_misses_a_majority_is_retried_until_it_reaches_one() {
    let mut cluster = Cluster::start(3);
    let StoppedAtItsEnd {
        exec, offset, _dir, ..
    } = majority_stopped_at_the_jobs_end(&mut cluster, "20s");
    // A fixed pause: the stop outlasting the mark's first round (200 ms
    // for each server) is the case under test.
    std::thread::sleep(Duration::from_millis(1500));
    cluster[1].resume();
    cluster[2].resume();
    let out = exec.finish(Duration::from_secs(20));
    out.assert_code(0, "the job ran");
    assert!(!out.stderr.contains("does not count"), "{}", out.stderr);
    marked_a_majority_then_all(&cluster, offset, &out);
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
}

/// `out` says the mark of this hour's run reached a majority, and every
/// server of `cluster` holds it soon after.
fn marked_a_majority_then_all(cluster: &Cluster, offset: u64, out: &Output) {
    let said = |on: usize| format!("marked \"nightly\" done on {on} of 3 servers");
    assert!(
        out.stderr.contains(&said(2)) || out.stderr.contains(&said(3)),
        "{}",
        out.stderr
    );
    let id = period_id(cluster, offset, 0);
    let marked =
        |mark: &Option<Vec<u8>>| mark.as_ref().is_some_and(|m| m.starts_with(id.as_bytes()));
    assert!(
        wait_until(Duration::from_secs(5), || {
            cluster.get_all(b"nightly\0done").iter().all(marked)
        }),
        "{:?}\n{}",
        cluster.get_all(b"nightly\0done"),
        out.stderr
    );
}

/// A majority of the servers stopped past the lock's validity: the mark is
/// tried again until the validity ends, not longer, and the run does not
/// count; exec exits with the job's status.
#[test]
fn a_mark_cut_off_past_the_locks_validity_does_not_count_and_ends() {
    let mut cluster = Cluster::start(3);
    let StoppedAtItsEnd {
        exec, went, _dir, ..
    } = majority_stopped_at_the_jobs_end(&mut cluster, "2s");
    let out = exec.finish(Duration::from_secs(20));
    let took = went.elapsed();
    out.assert_code(0, "the job's status");
    assert!(
        out.stderr
            .contains("; this run does not count, and the next may run it again"),
        "{}",
        out.stderr
    );
    // Tried again until about the end of the lock's validity (2 s, or a
    // little more after an extension), and no longer: a release that
    // waits out two servers follows.
    assert!(
        took > Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}\n{}",
        out.stderr
    );
}

/// `redlock done` tries its mark again too, while the servers' PTTLs say
/// the lock holds: it stops itself after reading the lock (a test hook),
/// two of three servers are stopped, and continued after its first round
/// gave up on them. It marks a majority, and exits 0.
#[test]
fn done_retries_a_mark_that_misses_a_majority_while_the_lock_holds() {
    let mut cluster = Cluster::start(3);
    let (per, offset) = hourly(&cluster);
    let taken =
        run(redlock_at(&cluster).args(["acquire", "--once-per", &per, "--ttl", "20s", "nightly"]));
    taken.assert_code(0, "do it");
    let tok = taken.stdout.trim().to_owned();
    let mut done = redlock_at(&cluster);
    done.env("REDLOCK_TEST_STOP_BEFORE_DONE_MARK", "1").args([
        "-v",
        "--server-timeout",
        "200ms",
        "done",
        "nightly",
        &tok,
    ]);
    let done = spawn(&mut done);
    let pid = done.id() as i32;
    assert!(
        wait_until(Duration::from_secs(10), || proc_state(pid) == Some('T')),
        "redlock done did not stop before its mark"
    );
    cluster[1].pause();
    cluster[2].pause();
    done.signal(Signal::SIGCONT);
    // A fixed pause: the stop outlasting the mark's first round (200 ms
    // for each server) is the case under test.
    std::thread::sleep(Duration::from_millis(1500));
    cluster[1].resume();
    cluster[2].resume();
    let out = done.finish(Duration::from_secs(20));
    out.assert_code(0, "marked");
    marked_a_majority_then_all(&cluster, offset, &out);
}

/// Too few servers to read the period from is waited out as the lock would
/// be: `-n` says 69 at once; under `-w` the clocks are asked again until a
/// majority answers, and the job runs; once the wait is over, 69. (Before,
/// 69 at once under -w too.)
#[test]
fn under_w_the_period_waits_for_a_majority_of_the_servers_clocks() {
    let mut cluster = Cluster::start(3);
    let (per, _) = hourly(&cluster);
    let exec = |wait: &[&str]| {
        let mut cmd = host(&cluster, "");
        cmd.args(wait)
            .args(["--once-per", &per, "nightly", "--", "true"]);
        cmd
    };
    let (mut once, mut short, mut long) =
        (exec(&["-n"]), exec(&["-w", "1s"]), exec(&["-w", "20s"]));
    cluster[1].pause();
    cluster[2].pause();
    run(&mut once).assert_code(69, "-n: one reading");
    let started = std::time::Instant::now();
    run(&mut short).assert_code(69, "the wait ran out");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let waiting = spawn(&mut long);
    // A fixed pause: the stop outlasting exec's first reading (250 ms for
    // each server) is the case under test.
    std::thread::sleep(Duration::from_millis(1000));
    cluster[1].resume();
    cluster[2].resume();
    let out = waiting.finish(Duration::from_secs(20));
    out.assert_code(0, "the job ran once the clocks answered");
    assert!(
        cluster
            .get_all(b"nightly\0done")
            .iter()
            .all(Option::is_some),
        "{:?}",
        cluster.get_all(b"nightly\0done")
    );
}

/// A signal while the done mark is tried again (a majority stopped from the
/// command's end on) stops the tries, which may last the lock's validity:
/// exec says the run does not count and ends at once, not 20 s later.
#[test]
fn a_signal_stops_the_marks_tries() {
    let mut cluster = Cluster::start(3);
    let StoppedAtItsEnd { exec, _dir, .. } = majority_stopped_at_the_jobs_end(&mut cluster, "20s");
    // A fixed pause: past the mark's first round (200 ms for each server),
    // into its tries.
    std::thread::sleep(Duration::from_millis(1000));
    exec.signal(Signal::SIGINT);
    let signalled = std::time::Instant::now();
    let out = exec.finish(Duration::from_secs(30));
    let took = signalled.elapsed();
    cluster[1].resume();
    cluster[2].resume();
    assert!(
        out.stderr.contains(
            "SIGINT while \"nightly\"'s done mark was tried again; this run does not count"
        ),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(5), "{took:?}: {}", out.stderr);
}

/// `-w` is one wait for the servers' clocks and the lock: clocks that
/// answer after 1 s of `-w 2s`, and a busy lock, end at about 2 s with 75,
/// not 1 s more than the wait.
#[test]
fn the_clocks_wait_comes_out_of_w() {
    let mut cluster = Cluster::start(3);
    let (per, _) = hourly(&cluster);
    run(redlock_at(&cluster).args(["acquire", "--ttl", "30s", "nightly"]))
        .assert_code(0, "held by another");
    let mut exec = host(&cluster, "");
    exec.args(["-w", "2s", "--once-per", &per, "nightly", "--", "true"]);
    cluster[1].pause();
    cluster[2].pause();
    let started = std::time::Instant::now();
    let waiting = spawn(&mut exec);
    std::thread::sleep(Duration::from_millis(1000));
    cluster[1].resume();
    cluster[2].resume();
    let out = waiting.finish(Duration::from_secs(20));
    out.assert_code(75, "busy once the wait ran out");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(2700),
        "{took:?}: {}",
        out.stderr
    );
}

/// `acquire --while PID` waiting for the servers' clocks (a majority
/// stopped, blocking) stops waiting when PID exits, as its wait for the
/// lock does: 75, nothing taken. (Before, it asked on after PID was gone.)
#[test]
fn the_clocks_wait_of_acquire_while_ends_with_its_process() {
    let mut cluster = Cluster::start(3);
    let (per, _) = hourly(&cluster);
    let mut script = Command::new("sleep").arg("30").spawn().unwrap();
    let mut acquire = redlock_at(&cluster);
    acquire
        .args(["acquire", "--while", &script.id().to_string()])
        .args(["--once-per", &per, "nightly"]);
    cluster[1].pause();
    cluster[2].pause();
    let waiting = spawn(&mut acquire);
    std::thread::sleep(Duration::from_millis(700));
    let _ = script.kill();
    let _ = script.wait();
    let ended = std::time::Instant::now();
    let out = waiting.finish(Duration::from_secs(30));
    cluster[1].resume();
    cluster[2].resume();
    out.assert_code(75, "its process exited");
    assert!(
        out.stderr.contains("(--while) exited; nothing was taken"),
        "{}",
        out.stderr
    );
    assert!(
        ended.elapsed() < Duration::from_secs(5),
        "{:?}",
        ended.elapsed()
    );
    assert_eq!(cluster.get_all(b"nightly"), vec![None, None, None]);
}
