//! Shared locks (`--shared`, as `flock -s`): readers overlap each other,
//! never a writer; a waiting writer keeps new readers out, and the readers
//! at the head of the line enter together when it leaves.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{acquire, run, temp_dir, wait_until, Cluster, Running};

const READERS_KEY: &[u8] = b"shared\0readers";

/// `exec NAME` (shared with `--shared` in `extra`) of a job that logs
/// `start WHO` and `end WHO` around a section of `section` seconds.
fn job(cluster: &Cluster, log: &str, who: &str, extra: &[&str], section: &str) -> Running {
    let script =
        format!("echo \"start {who}\" >> {log}; sleep {section}; echo \"end {who}\" >> {log}");
    Running::spawn(
        cluster
            .redlock()
            .args(["exec", "-q", "-w", "30s"])
            .args(extra)
            .args(["shared", "--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

fn log_lines(log: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn wait_in_line(cluster: &Cluster, count: usize) {
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("shared", count)),
        "not {count} in line: {:?}",
        cluster
            .servers
            .iter()
            .map(|s| s.in_line("shared"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn readers_overlap_and_a_writer_is_refused_beside_them_and_they_beside_it() {
    let cluster = Cluster::start(3);
    let before = cluster.dbsizes();
    let r1 = acquire(&cluster, "shared", &["--shared"]);
    let r2 = acquire(&cluster, "shared", &["--shared"]);
    assert_ne!(r1, r2);
    let writer = run(cluster.redlock().args(["acquire", "-n", "shared"]));
    writer.assert_code(75, "a writer beside readers");
    assert!(
        writer.stderr.contains("2 shared holders (--shared)"),
        "{}",
        writer.stderr
    );
    assert_eq!(cluster.get_all(b"shared"), vec![None, None, None]);

    let status = run(cluster.redlock().args(["status", "shared"]));
    status.assert_code(0, "status of a shared lock");
    assert!(
        status
            .stdout
            .starts_with("\"shared\" is held shared by 2 readers"),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains(&format!("reader:  {r1} on 3 of 3 servers")),
        "{}",
        status.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "shared"])).json();
    assert_eq!(json["state"], "shared");
    assert_eq!(json["held"], true);
    assert_eq!(json["readers"], 2);
    assert_eq!(json["shared_holders"].as_array().unwrap().len(), 2);
    assert_eq!(json["servers"][0]["readers"], 2);

    run(cluster.redlock().args(["release", "shared", &r1])).assert_code(0, "release a reader");
    run(cluster.redlock().args(["acquire", "-n", "shared"]))
        .assert_code(75, "one reader still holds");
    run(cluster.redlock().args(["release", "shared", &r2])).assert_code(0, "release the last");
    run(cluster.redlock().args(["release", "shared", &r2])).assert_code(79, "released already");
    let w = acquire(&cluster, "shared", &[]);
    let reader = run(cluster
        .redlock()
        .args(["acquire", "-n", "--shared", "shared"]));
    reader.assert_code(75, "a reader beside a writer");
    run(cluster.redlock().args(["release", "shared", &w])).assert_code(0, "release the writer");
    assert_eq!(cluster.dbsizes(), before, "nothing left behind");
}

#[test]
fn a_shared_token_extends_only_while_it_holds() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "shared", &["--shared", "--ttl", "2s"]);
    let pttl = cluster[0].pttl(READERS_KEY);
    assert!(pttl > 1000 && pttl <= 2000, "{pttl}");
    run(cluster
        .redlock()
        .args(["extend", "--ttl", "20s", "shared", &token]))
    .assert_code(0, "extend a reader");
    let pttl = cluster[0].pttl(READERS_KEY);
    assert!(
        pttl > 15_000,
        "the set lives as long as its latest reader: {pttl}"
    );
    // The reader's own lapse moved too: it outlives its first 2s.
    std::thread::sleep(Duration::from_millis(2200));
    run(cluster.redlock().args(["acquire", "-n", "shared"]))
        .assert_code(75, "the extended reader still holds");
    run(cluster.redlock().args(["release", "shared", &token])).assert_code(0, "release");
    // A lapsed reader is not extended back to life.
    let short = acquire(&cluster, "shared", &["--shared", "--ttl", "200ms"]);
    std::thread::sleep(Duration::from_millis(400));
    run(cluster
        .redlock()
        .args(["extend", "--ttl", "20s", "shared", &short]))
    .assert_code(79, "a lapsed reader");
    let w = acquire(&cluster, "shared", &[]);
    run(cluster.redlock().args(["release", "shared", &w])).assert_code(0, "release");
}

#[test]
fn exec_shared_runs_readers_side_by_side() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("shared-exec");
    let log = dir.path().join("log").display().to_string();
    let a = job(&cluster, &log, "A", &["--shared"], "1");
    let b = job(&cluster, &log, "B", &["--shared"], "1");
    a.finish(Duration::from_secs(30)).assert_code(0, "A");
    b.finish(Duration::from_secs(30)).assert_code(0, "B");
    let lines = log_lines(&log);
    assert_eq!(
        lines
            .iter()
            .take(2)
            .filter(|l| l.starts_with("start"))
            .count(),
        2,
        "both started before either ended: {lines:?}"
    );
}

/// Readers hold; a writer waits in line; a reader that comes after it
/// queues behind it (it does not join the readers), and runs once the
/// writer has had its turn.
#[test]
fn a_waiting_writer_keeps_new_readers_out() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("shared-preference");
    let log = dir.path().join("log").display().to_string();
    let r1 = acquire(&cluster, "shared", &["--shared"]);
    let writer = job(&cluster, &log, "W", &[], "0.3");
    wait_in_line(&cluster, 1);
    let late = job(&cluster, &log, "R2", &["--shared"], "0.1");
    wait_in_line(&cluster, 2);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        log_lines(&log),
        Vec::<String>::new(),
        "nobody entered beside R1"
    );
    let json = run(cluster.redlock().args(["status", "--json", "shared"])).json();
    assert_eq!(json["readers"], 1, "{json}");
    run(cluster.redlock().args(["release", "shared", &r1])).assert_code(0, "release R1");
    writer.finish(Duration::from_secs(30)).assert_code(0, "W");
    late.finish(Duration::from_secs(30)).assert_code(0, "R2");
    assert_eq!(log_lines(&log), ["start W", "end W", "start R2", "end R2"]);
}

/// A writer holds; readers wait in line; its release lets the whole run of
/// readers at the head of the line in at once, by the wake-up (the poll is
/// forced to 20s, so only the announcement can let the second reader in).
#[test]
fn the_readers_at_the_head_of_the_line_enter_together() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("shared-together");
    let log = dir.path().join("log").display().to_string();
    let w = acquire(&cluster, "shared", &[]);
    let readers: Vec<Running> = ["R1", "R2", "R3"]
        .iter()
        .enumerate()
        .map(|(i, who)| {
            let reader = Running::spawn(
                cluster
                    .redlock()
                    .env("REDLOCK_TEST_POLL_DELAY_MS", "20000")
                    .args([
                        "exec", "-q", "-w", "30s", "--shared", "shared", "--", "sh", "-c",
                    ])
                    .arg(format!(
                        "echo \"start {who}\" >> {log}; sleep 1; echo \"end {who}\" >> {log}"
                    ))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            );
            wait_in_line(&cluster, i + 1);
            reader
        })
        .collect();
    let released = Instant::now();
    run(cluster.redlock().args(["release", "shared", &w])).assert_code(0, "release W");
    for reader in readers {
        reader
            .finish(Duration::from_secs(30))
            .assert_code(0, "reader");
    }
    let lines = log_lines(&log);
    assert!(
        lines[..3].iter().all(|l| l.starts_with("start")),
        "all three ran side by side: {lines:?}"
    );
    assert!(
        released.elapsed() < Duration::from_secs(10),
        "woken, not polled: {:?}",
        released.elapsed()
    );
}

/// Readers keep arriving, each overlapping the next, so that without
/// writer preference the lock would never be free; a writer still gets it
/// within a bound.
#[test]
fn a_writer_gets_the_lock_while_readers_keep_arriving() {
    let cluster = Cluster::start(3);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arriving = {
        let (cluster_servers, stop) = (cluster.servers_arg(), stop.clone());
        std::thread::spawn(move || {
            let mut readers = Vec::new();
            let mut spawned = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && spawned < 60 {
                readers.push(Running::spawn(
                    crate::support::redlock()
                        .env("REDLOCK_SERVERS", &cluster_servers)
                        .args(["exec", "-q", "-w", "30s", "--shared", "shared", "--"])
                        .args(["sleep", "0.4"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped()),
                ));
                spawned += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            readers
                .into_iter()
                .map(|r| r.finish(Duration::from_secs(60)).code())
                .collect::<Vec<_>>()
        })
    };
    // Readers overlap from here on.
    assert!(wait_until(Duration::from_secs(10), || {
        run(cluster.redlock().args(["status", "--json", "shared"])).json()["readers"]
            .as_u64()
            .unwrap_or(0)
            >= 2
    }));
    let started = Instant::now();
    let writer = run(cluster
        .redlock()
        .args(["exec", "-w", "4s", "shared", "--", "true"]));
    let waited = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.assert_code(0, "the writer got its turn");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    let codes = arriving.join().unwrap();
    assert!(codes.iter().all(|&c| c == 0), "{codes:?}");
}

#[test]
fn shared_with_a_fence_or_a_limit_is_a_usage_error_on_one_line() {
    // Readers run at once: no fence orders them, and a semaphore's slots
    // are exclusive locks.
    let cluster = Cluster::start(1);
    for other in [&["--fence"][..], &["--limit", "2"]] {
        for (command, rest) in [("acquire", &["rw"][..]), ("exec", &["rw", "--", "true"])] {
            let out = run(cluster
                .redlock()
                .args([command, "-n", "--shared"])
                .args(other)
                .args(rest));
            out.assert_code(64, &format!("{command} --shared {other:?}"));
            assert!(
                out.stderr.contains("'--shared' cannot be used with"),
                "{}",
                out.stderr
            );
            assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        }
    }
    assert_eq!(cluster.dbsizes(), [0], "nothing taken");
}

#[test]
fn an_exclusive_exec_nested_in_a_shared_one_is_refused_not_run_beside_readers() {
    // The outer reader's token holds the lock only shared: riding on it
    // would run a writer beside the other reader, and waiting for the lock
    // would wait for ourselves. Found by review: it ran.
    let cluster = Cluster::start(3);
    let _other_reader = acquire(&cluster, "rw", &["--shared", "--ttl", "30s"]);
    let dir = temp_dir("shared-nested");
    let marker = dir.path().join("writer-ran");
    let inner = format!(
        "{} exec -w 1s rw -- touch {}; echo \"inner $?\" >&2",
        env!("CARGO_BIN_EXE_redlock"),
        marker.to_str().unwrap()
    );
    let out = run(cluster
        .redlock()
        .args(["exec", "--shared", "rw", "--", "sh", "-c", &inner]));
    assert!(
        !marker.exists(),
        "the writer ran beside a reader: {}",
        out.stderr
    );
    assert!(out.stderr.contains("inner 64"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("an enclosing exec --shared holds \"rw\": an exclusive exec of it inside would wait for itself"),
        "{}",
        out.stderr
    );
    // A reader inside the reader still runs in place.
    let inner = format!("{} exec --shared rw -- true", env!("CARGO_BIN_EXE_redlock"));
    run(cluster
        .redlock()
        .args(["exec", "--shared", "rw", "--", "sh", "-c", &inner]))
    .assert_code(0, "a reader inside a reader");
}

#[test]
fn release_force_breaks_a_lock_held_by_readers_and_names_them() {
    // Found by review: --force said "already free", left the readers, and
    // the writer it was meant to let in stayed out.
    let cluster = Cluster::start(3);
    let _first = acquire(&cluster, "stuck", &["--shared", "--ttl", "30s"]);
    let _second = acquire(&cluster, "stuck", &["--shared", "--ttl", "30s"]);
    let forced = run(cluster.redlock().args(["release", "--force", "stuck"]));
    forced.assert_code(0, "release --force of readers");
    assert!(
        forced.stderr.contains(
            "broke \"stuck\": held by 2 shared holders (--shared); deleted on 3 of 3 servers"
        ),
        "{}",
        forced.stderr
    );
    run(cluster.redlock().args(["acquire", "-n", "stuck"]))
        .assert_code(0, "a writer after release --force of the readers");
    // --if-token breaks only that reader, and leaves the others alone.
    let kept = acquire(&cluster, "one", &["--shared"]);
    let gone = acquire(&cluster, "one", &["--shared"]);
    run(cluster
        .redlock()
        .args(["release", "--force", "--if-token", &gone, "one"]))
    .assert_code(0, "--if-token of a reader");
    let status = run(cluster.redlock().args(["status", "--json", "one"])).json();
    assert_eq!(status["readers"], 1, "{status}");
    assert_eq!(
        status["shared_holders"][0]["token"],
        kept.as_str(),
        "{status}"
    );
    run(cluster
        .redlock()
        .args(["release", "--force", "--if-token", &"0".repeat(32), "one"]))
    .assert_code(79, "--if-token of nobody");
}
