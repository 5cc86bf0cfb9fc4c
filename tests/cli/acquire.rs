//! `redlock acquire`: the canonical key layout other Redlock clients share,
//! quorum and unlock-all against foreign values and failing servers, the
//! `-n`/`-w` waiting rules, concurrent contenders, and the transports
//! (unix socket, `/db`, TLS). Every test runs real `redis-server` processes.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::assertions::{
    assert_gone_everywhere, assert_held_everywhere, assert_no_panic, is_token, token_of,
};
use crate::support::{
    self, acquire, port_of, run, timed, wait_until, Cluster, DelayProxy, Output, RedisServer,
    Running, RUN_TIMEOUT,
};

// ---------------------------------------------------------------------------
// Output and canonical layout
// ---------------------------------------------------------------------------

#[test]
fn acquire_prints_only_the_token_and_stores_it_canonically_on_every_server() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["acquire", "-n", "deploy"]));
    out.assert_code(0, "acquire");
    let token = token_of(&out);
    assert_eq!(out.stdout, format!("{token}\n"), "stdout is the token only");
    assert_eq!(out.stderr, "", "nothing on stderr on success");

    // Another Redlock client sees a plain string key named exactly NAME whose
    // value is exactly the token, with a PX expiry close to the TTL.
    assert_held_everywhere(&cluster, b"deploy", &token);
    for (i, server) in cluster.servers.iter().enumerate() {
        let pttl = server.pttl(b"deploy");
        assert!(
            (29_000..=30_000).contains(&pttl),
            "server {i}: PTTL {pttl} is not about 30s"
        );
    }
    // Nothing else was written but the holder record beside the key.
    for server in &cluster.servers {
        let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut server.client())
            .unwrap();
        keys.sort();
        assert_eq!(
            keys,
            vec![b"deploy".to_vec(), b"deploy\0holder".to_vec()],
            "the lock key and its holder record"
        );
    }
}

#[test]
fn acquire_ttl_is_set_in_milliseconds() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "short", &["--ttl", "2500ms"]);
    assert_held_everywhere(&cluster, b"short", &token);
    for server in &cluster.servers {
        let pttl = server.pttl(b"short");
        assert!(
            (1_500..=2_500).contains(&pttl),
            "PTTL {pttl} for --ttl 2500ms"
        );
    }
}

#[test]
fn acquire_with_prefix_stores_prefix_followed_by_name() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &["--prefix", "app:"]);
    assert_held_everywhere(&cluster, b"app:deploy", &token);
    assert_gone_everywhere(&cluster, b"deploy");

    // The environment variable works the same way, and status finds it.
    let out = run(cluster
        .redlock()
        .env("REDLOCK_PREFIX", "app:")
        .args(["status", "deploy"]));
    out.assert_code(0, "status with REDLOCK_PREFIX");
    assert!(out.stdout.contains(&token), "{}", out.stdout);
    // Without the prefix the lock "deploy" is another, free lock.
    run(cluster.redlock().args(["status", "deploy"])).assert_code(1, "unprefixed is free");
}

#[test]
fn acquire_json_is_one_object_with_the_documented_fields() {
    let cluster = Cluster::start(3);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--json", "--ttl", "20s", "report"]));
    out.assert_code(0, "acquire --json");
    assert_eq!(out.stdout.lines().count(), 1, "one line: {:?}", out.stdout);
    assert!(out.stdout.starts_with('{') && out.stdout.trim_end().ends_with('}'));
    let json = out.json();
    assert_eq!(json["name"], "report");
    let token = json["token"]
        .as_str()
        .expect("token is a string")
        .to_owned();
    assert!(is_token(&token), "{token}");
    assert!(out.stdout.contains(&format!("\"token\":\"{token}\"")));
    assert_eq!(json["ttl_ms"], 20_000);
    let validity = json["validity_ms"]
        .as_i64()
        .expect("validity_ms is an integer");
    assert!(
        (10_000..20_000).contains(&validity),
        "validity_ms {validity} must be below the TTL but most of it"
    );
    let held_on: Vec<&str> = json["held_on"]
        .as_array()
        .expect("held_on is an array")
        .iter()
        .map(|server| server.as_str().expect("held_on holds strings"))
        .collect();
    assert!(held_on.len() >= 2, "a quorum: {held_on:?}");
    for server in &held_on {
        assert!(cluster.urls().iter().any(|u| u == server), "{server}");
    }
    assert_eq!(json["attempts"], 1);
    assert_held_everywhere(&cluster, b"report", &token);
}

// ---------------------------------------------------------------------------
// Foreign values and unlock-all
// ---------------------------------------------------------------------------

#[test]
fn foreign_value_on_a_minority_does_not_prevent_the_lock_and_is_untouched() {
    let cluster = Cluster::start(3);
    cluster[1].set(b"job", b"someone-elses-value");
    let token = acquire(&cluster, "job", &[]);
    assert_eq!(cluster[0].get(b"job"), Some(token.clone().into_bytes()));
    assert_eq!(cluster[2].get(b"job"), Some(token.clone().into_bytes()));
    assert_eq!(
        cluster[1].get(b"job"),
        Some(b"someone-elses-value".to_vec()),
        "a foreign value is never overwritten"
    );
    assert_eq!(cluster[1].pttl(b"job"), -1, "nor given a TTL");

    // Releasing deletes only our copies.
    run(cluster.redlock().args(["release", "job", &token])).assert_code(0, "release");
    assert_eq!(
        cluster.get_all(b"job"),
        vec![None, Some(b"someone-elses-value".to_vec()), None]
    );
}

#[test]
fn foreign_values_on_a_majority_mean_busy_and_nothing_of_ours_is_left() {
    let cluster = Cluster::start(3);
    cluster[0].set(b"job", b"foreign-a");
    cluster[2].set_px(b"job", b"foreign-b", 60_000);
    let out = run(cluster.redlock().args(["acquire", "-n", "job"]));
    out.assert_code(75, "busy on a majority");
    assert_eq!(out.stdout, "", "no token printed");
    assert!(out.stderr.starts_with("redlock: "), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "\"job\" is busy: at least 2 of 3 servers hold it for others, no one holder on a majority"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(
        cluster.get_all(b"job"),
        vec![
            Some(b"foreign-a".to_vec()),
            None,
            Some(b"foreign-b".to_vec())
        ],
        "foreign values untouched, and the server that said yes was unlocked"
    );
    assert_eq!(cluster[0].pttl(b"job"), -1);
    assert!(cluster[2].pttl(b"job") > 50_000);
}

#[test]
fn a_key_of_another_type_counts_as_held_by_someone_else() {
    let cluster = Cluster::start(3);
    for i in [0, 1] {
        redis::cmd("RPUSH")
            .arg("queue")
            .arg("x")
            .query::<i64>(&mut cluster[i].client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "queue"]));
    out.assert_code(75, "a list on a majority");
    assert_no_panic(&out, "list");
    assert_eq!(cluster[2].get(b"queue"), None, "unlocked");
    for i in [0, 1] {
        let len: i64 = redis::cmd("LLEN")
            .arg("queue")
            .query(&mut cluster[i].client())
            .unwrap();
        assert_eq!(len, 1, "the list is untouched");
    }
}

// ---------------------------------------------------------------------------
// -n, -w and waiting
// ---------------------------------------------------------------------------

#[test]
fn nonblocking_acquire_of_a_held_lock_is_busy_at_once() {
    let cluster = Cluster::start(3);
    let holder = acquire(&cluster, "nightly", &[]);
    for flags in [
        &["-n"][..],
        &["-w", "0"],
        &["--nonblock"],
        &["--wait", "0s"],
    ] {
        for server in &cluster.servers {
            redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query::<()>(&mut server.client())
                .unwrap();
        }
        let (out, took) = timed(cluster.redlock().arg("acquire").args(flags).arg("nightly"));
        cluster.assert_one_round(&format!("{flags:?}"));
        out.assert_code(75, &format!("{flags:?} on a held lock"));
        assert_eq!(out.stdout, "", "{flags:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{flags:?}: {}", out.stderr);
        assert!(out.stderr.contains("is held by"), "{}", out.stderr);
        assert!(
            took < Duration::from_millis(1000),
            "{flags:?} took {took:?}: no retry expected"
        );
    }
    assert_held_everywhere(&cluster, b"nightly", &holder);

    // -q silences the expected "busy" outcome but keeps the exit code.
    let out = run(cluster.redlock().args(["acquire", "-q", "-n", "nightly"]));
    out.assert_code(75, "-q busy");
    assert_eq!(out.stderr, "", "-q prints nothing for busy");

    // --json reports the failure as an object on stdout.
    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-n", "nightly"]));
    out.assert_code(75, "--json busy");
    let json = out.json();
    assert_eq!(json["name"], "nightly");
    assert_eq!(json["error"], "busy");
    assert!(
        json["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{json}"
    );
}

/// `-E CODE` as under `exec`: the status for a busy lock (or a `-w` wait that
/// ran out on one), `-E 0` without a word, so that a cron job skips quietly;
/// never a token, and never for any other failure.
#[test]
fn conflict_exit_code_replaces_75_for_a_busy_lock_only() {
    let mut cluster = Cluster::start(3);
    let holder = acquire(&cluster, "nightly", &[]);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "-E", "0", "nightly"]));
    out.assert_code(0, "-n -E 0 on a held lock");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    let out = run(cluster
        .redlock()
        .args(["acquire", "-w", "300ms", "-E", "3", "nightly"]));
    out.assert_code(3, "-w ran out, -E 3");
    assert_eq!(out.stdout, "", "no token");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("\"nightly\" is held by"),
        "{}",
        out.stderr
    );
    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-n", "-E", "0", "nightly"]));
    out.assert_code(0, "--json -n -E 0");
    assert_eq!(out.json()["error"], "busy", "the result is still told");
    assert_held_everywhere(&cluster, b"nightly", &holder);
    // A free lock is taken as usual, and no quorum is still 69.
    let token = acquire(&cluster, "other", &["-E", "0"]);
    assert_held_everywhere(&cluster, b"other", &token);
    cluster[0].kill();
    cluster[1].kill();
    let out = run(cluster.redlock().args(["acquire", "-n", "-E", "0", "gone"]));
    out.assert_code(69, "-E 0 without a quorum");
}

#[test]
fn wait_takes_the_lock_once_the_holders_ttl_runs_out() {
    let cluster = Cluster::start(3);
    // The holder's key is set after this instant and lives 1s from then, so
    // nobody can take it before 1s has passed, however slowly the holder's
    // process ends and the waiter's starts.
    let started = Instant::now();
    let holder = acquire(&cluster, "handover", &["--ttl", "1s"]);
    let out = run(cluster.redlock().args(["acquire", "-w", "5s", "handover"]));
    let took = started.elapsed();
    out.assert_code(0, "-w 5s against a 1s holder");
    let token = token_of(&out);
    assert_ne!(token, holder);
    assert!(
        took >= Duration::from_millis(990),
        "took the lock after {took:?}, before the holder's 1s TTL ran out"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_held_everywhere(&cluster, b"handover", &token);
}

#[test]
fn wait_runs_out_against_a_long_holder() {
    let cluster = Cluster::start(3);
    let holder = acquire(&cluster, "long", &[]);
    let (out, took) = timed(cluster.redlock().args(["acquire", "-w", "300ms", "long"]));
    out.assert_code(75, "-w 300ms against a 30s holder");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("\"long\" is held by"), "{}", out.stderr);
    assert!(
        took >= Duration::from_millis(300),
        "gave up after {took:?}, before -w 300ms"
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_held_everywhere(&cluster, b"long", &holder);
}

#[test]
fn blocking_acquire_waits_until_the_holder_releases() {
    let cluster = Cluster::start(3);
    let holder = acquire(&cluster, "queue", &[]);
    let waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "queue"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // It waits (it stands in line) before the release, or this would test
    // an acquire of a free lock.
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("queue", 1)),
        "the blocking acquire never stood in line"
    );
    run(cluster.redlock().args(["release", "queue", &holder])).assert_code(0, "release");
    let output = waiter.finish_or_explain(Duration::from_secs(5), || {
        "blocking acquire did not take the released lock within 5s".to_owned()
    });
    output.assert_code(0, "the blocking acquire");
    let token = output.stdout.trim_end();
    assert!(is_token(token), "{token:?}");
    assert_held_everywhere(&cluster, b"queue", token);
}

/// A waiter that stands in line when SIGTERM comes takes its ticket out of
/// the line (what a process without a handler would leave behind), leaves
/// the holder alone, and then dies of SIGTERM, not "exits 143".
#[test]
fn sigterm_while_waiting_leaves_the_line_then_dies_of_it() {
    leaves_the_line_then_dies_of(Signal::SIGTERM);
}

/// SIGUSR1, SIGUSR2 and SIGALRM kill a process by default: without a
/// handler they left the waiter's ticket in line (and whatever its attempt
/// had taken).
#[test]
fn other_fatal_signals_while_waiting_are_handled_like_sigterm() {
    for signal in [Signal::SIGUSR1, Signal::SIGUSR2, Signal::SIGALRM] {
        leaves_the_line_then_dies_of(signal);
    }
}

fn leaves_the_line_then_dies_of(signal: Signal) {
    let cluster = Cluster::start(3);
    let holder = acquire(&cluster, "held", &[]);
    let before = cluster.dbsizes();
    let waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "held"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("held", 1)),
        "the waiter never stood in line"
    );
    waiter.signal(signal);
    let output = waiter.finish_or_explain(Duration::from_secs(5), || {
        format!("acquire ignored {signal} for 5s")
    });
    output.assert_signal(signal, &format!("a waiter sent {signal}"));
    assert!(output.stdout.is_empty(), "no token printed");
    assert_held_everywhere(&cluster, b"held", &holder);
    assert_eq!(
        cluster.dbsizes(),
        before,
        "the waiter left something behind (its ticket in line?)"
    );
}

/// `bash -c 'redlock ...; echo after'` in a process group of its own, as a
/// terminal's foreground job, with `redlock` waiting at `step`.
fn script_waiting_at(cluster: &Cluster, step: &str) -> Running {
    let mut bash = std::process::Command::new("bash");
    support::drop_redlock_variables(&mut bash, std::env::vars_os().map(|(name, _)| name));
    bash.env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0")
        .env("XDG_CONFIG_HOME", "/nonexistent/redlock-tests");
    support::with_default_signals(&mut bash);
    // SAFETY: setsid() is async-signal-safe and allocates nothing.
    unsafe {
        bash.pre_exec(|| {
            nix::unistd::setsid()?;
            Ok(())
        });
    }
    Running::spawn(
        bash.args(["-c", &format!("\"$0\" {step}; echo after")])
            .arg(env!("CARGO_BIN_EXE_redlock"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// Ctrl-C at a terminal: SIGINT to every process of the foreground group.
fn ctrl_c(script: &Running) {
    let group = nix::unistd::Pid::from_raw(-(script.id() as i32));
    nix::sys::signal::kill(group, Signal::SIGINT).expect("SIGINT to the script's group");
}

/// bash goes on after a command that *exited* 130, taking it to have
/// handled the SIGINT, and stops only when it *died* of it ("wait and
/// cooperative exit"): a script Ctrl-C'd while redlock waits stops there.
#[test]
fn ctrl_c_while_waiting_stops_the_calling_script() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "held", &[]);
    let before = cluster.dbsizes();
    let script = script_waiting_at(&cluster, "acquire -w 30s held");
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("held", 1)),
        "the script's redlock never stood in line"
    );
    ctrl_c(&script);
    let out = script.finish(Duration::from_secs(10));
    assert!(!out.stdout.contains("after"), "the script ran on: {out:?}");
    out.assert_signal(Signal::SIGINT, "bash, Ctrl-C'd at its redlock step");
    assert_eq!(cluster.dbsizes(), before, "the waiter left its ticket");
}

/// The same under `exec`: the command dies of the SIGINT exec passed on,
/// exec dies of it too, and so does the script.
#[test]
fn ctrl_c_under_exec_stops_the_calling_script() {
    let cluster = Cluster::start(3);
    let dir = support::temp_dir("redlock-test-ctrl-c");
    let started = dir.path().join("started");
    let step = format!(
        "exec job -- sh -c 'touch {}; exec sleep 30'",
        started.display()
    );
    let script = script_waiting_at(&cluster, &step);
    assert!(
        wait_until(Duration::from_secs(10), || started.exists()),
        "the command never started"
    );
    ctrl_c(&script);
    let out = script.finish(Duration::from_secs(10));
    assert!(!out.stdout.contains("after"), "the script ran on: {out:?}");
    out.assert_signal(Signal::SIGINT, "bash, Ctrl-C'd at its redlock exec step");
    assert_gone_everywhere(&cluster, b"job");
}

#[test]
fn concurrent_contenders_exactly_one_wins() {
    let cluster = Cluster::start(3);
    // A split vote (each contender wins a different minority, so nobody
    // wins) is correct Redlock behaviour; it is retried on a fresh name. Two
    // winners, or a 69 on healthy servers, fail at once.
    for round in 0..5 {
        let name = format!("race-{round}");
        let outs: Vec<Output> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..5)
                .map(|_| {
                    let mut cmd = cluster.redlock();
                    cmd.args(["acquire", "-n", &name]);
                    scope.spawn(move || run(&mut cmd))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let codes: Vec<i32> = outs.iter().map(|o| o.code()).collect();
        for out in &outs {
            assert!(
                out.code() == 0 || out.code() == 75,
                "contender exited {} on healthy servers: {}",
                out.code(),
                out.stderr
            );
        }
        let winners: Vec<&Output> = outs.iter().filter(|o| o.code() == 0).collect();
        assert!(winners.len() <= 1, "two winners: {codes:?}");
        if let [winner] = winners[..] {
            let token = token_of(winner);
            let held = cluster
                .get_all(name.as_bytes())
                .iter()
                .filter(|v| v.as_deref() == Some(token.as_bytes()))
                .count();
            assert!(held >= 2, "the winner holds only {held} servers");
            for loser in outs.iter().filter(|o| o.code() == 75) {
                assert_eq!(loser.stdout, "", "a loser printed a token");
            }
            return;
        }
        // Nobody won: every contender must have cleaned up after itself.
        assert_gone_everywhere(&cluster, name.as_bytes());
    }
    panic!("5 rounds of 5 contenders without a winner");
}

// ---------------------------------------------------------------------------
// Failing servers
// ---------------------------------------------------------------------------

#[test]
fn one_paused_server_of_three_does_not_delay_acquire() {
    let mut cluster = Cluster::start(3);
    cluster[2].pause();
    let (out, took) = timed(cluster.redlock().args([
        "acquire",
        "-n",
        "--server-timeout",
        "2s",
        "--ttl",
        "30s",
        "paused",
    ]));
    out.assert_code(0, "acquire with one paused server");
    assert!(
        took < Duration::from_secs(1),
        "acquire waited {took:?} for a paused server; it must return at quorum"
    );
    let token = token_of(&out);
    assert_held_everywhere(&cluster, b"paused", &token);
}

/// One of five servers hung: every acquire and release returns without
/// waiting for it (the server timeout is 2s; each call must take far less),
/// and the fault margin holds: right after `acquire` returns, the key is on
/// every healthy server, and right after `release` returns, it is gone from
/// every one of them.
#[test]
fn a_hung_server_of_five_delays_neither_acquire_nor_release() {
    let mut cluster = Cluster::start(5);
    cluster[4].pause();
    let hung = cluster[4].url();
    for round in 0..40 {
        let name = format!("hung-{round}");
        let (out, took) = timed(cluster.redlock().args([
            "acquire",
            "-n",
            "--json",
            "--server-timeout",
            "2s",
            &name,
        ]));
        out.assert_code(0, "acquire with one of five hung");
        assert!(took < Duration::from_secs(1), "acquire took {took:?}");
        let json = out.json();
        let token = json["token"].as_str().expect("a token").to_owned();
        let held_on: Vec<&str> = json["held_on"]
            .as_array()
            .expect("held_on is an array")
            .iter()
            .map(|server| server.as_str().expect("held_on holds strings"))
            .collect();
        assert!(held_on.len() >= 3, "a quorum: {held_on:?}");
        assert!(!held_on.contains(&hung.as_str()), "{held_on:?}");
        for i in 0..4 {
            assert_eq!(
                cluster[i].get(name.as_bytes()).as_deref(),
                Some(token.as_bytes()),
                "round {round}: the key is not on healthy server {i} right after acquire"
            );
        }
        let (out, took) =
            timed(
                cluster
                    .redlock()
                    .args(["release", "--server-timeout", "2s", &name, &token]),
            );
        out.assert_code(0, "release with one of five hung");
        assert!(took < Duration::from_secs(1), "release took {took:?}");
        for i in 0..4 {
            assert_eq!(
                cluster[i].get(name.as_bytes()),
                None,
                "round {round}: the key is still on healthy server {i} right after release"
            );
        }
    }
}

/// `validity_ms` is what is left when the answer reaches the user, after
/// every round acquire waits for. With one of five servers stopped and a
/// 900ms server timeout, whatever acquire waited for after taking the lock
/// must come off the validity it prints: TTL - validity_ms covers the time
/// the call took (but for starting the process, well under 100ms).
#[test]
fn validity_ms_is_counted_when_the_answer_is_returned() {
    let mut cluster = Cluster::start(5);
    cluster[4].pause();
    for args in [&["-n"][..], &["-w", "5s"]] {
        let (out, took) = timed(
            cluster
                .redlock()
                .args([
                    "acquire",
                    "--json",
                    "--ttl",
                    "3s",
                    "--server-timeout",
                    "900ms",
                ])
                .args(args)
                .arg("honest"),
        );
        out.assert_code(0, "acquire with one of five stopped");
        let json = out.json();
        let validity = Duration::from_millis(json["validity_ms"].as_u64().unwrap());
        assert!(
            validity + took <= Duration::from_millis(3100),
            "{args:?}: validity_ms {validity:?} printed after a call of {took:?} on a 3s TTL"
        );
        let token = json["token"].as_str().unwrap().to_owned();
        run(cluster.redlock().args(["release", "honest", &token])).assert_code(0, "release");
    }
}

/// The median of several timed runs: one slow run on a loaded machine does
/// not decide.
fn median_time(runs: usize, mut once: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| once()).collect();
    times.sort();
    times[runs / 2]
}

/// With a majority stopped, `acquire -n` fails (69) after one server
/// timeout, not two: the compare-and-delete that undoes the attempt is
/// written to the servers that did not answer it, and not waited for.
#[test]
fn no_majority_fails_after_one_server_timeout_not_two() {
    let mut cluster = Cluster::start(3);
    cluster[1].pause();
    cluster[2].pause();
    let (out, took) =
        timed(
            cluster
                .redlock()
                .args(["acquire", "-n", "--server-timeout", "2s", "undone"]),
        );
    out.assert_code(69, "no quorum with 2 of 3 stopped");
    assert!(
        took < Duration::from_secs(3),
        "acquire -n took {took:?}: the undo waited out the 2s server timeout again"
    );
    // The undo reached the server that took the key.
    assert_eq!(cluster[0].get(b"undone"), None);
}

/// A waiting acquire (it stands in line, and leaves it) and a hand-off from
/// one holder to a waiter cost no server timeout for a stopped minority:
/// under twice their time with every server healthy (and well under the
/// 250ms server timeout in any case).
#[test]
fn a_stopped_server_costs_a_waiting_acquire_and_a_hand_off_nothing() {
    let mut cluster = Cluster::start(5);
    let waiting_acquire = |cluster: &Cluster| {
        median_time(5, || {
            let (out, took) = timed(
                cluster
                    .redlock()
                    .args(["acquire", "-w", "5s", "--json", "w"]),
            );
            out.assert_code(0, "acquire -w");
            let token = out.json()["token"].as_str().unwrap().to_owned();
            run(cluster.redlock().args(["release", "w", &token])).assert_code(0, "release");
            took
        })
    };
    let hand_off = |cluster: &Cluster| {
        median_time(5, || {
            let token = acquire(cluster, "h", &[]);
            let waiter = Running::spawn(
                cluster
                    .redlock()
                    .args(["acquire", "-w", "10s", "--json", "h"])
                    .stdout(std::process::Stdio::piped()),
            );
            // The waiter stands in line (or at least waits) before the release.
            assert!(wait_until(Duration::from_secs(5), || {
                let healthy = cluster.servers.iter().filter(|s| !s.is_paused());
                healthy
                    .filter(|s| s.subscribers(b"h\0released") > 0)
                    .count()
                    >= 3
            }));
            // A moment more for the waiter to settle into its wait (no state shows it).
            std::thread::sleep(Duration::from_millis(50));
            let released = Instant::now();
            run(cluster.redlock().args(["release", "h", &token])).assert_code(0, "release");
            let out = waiter.finish(Duration::from_secs(10));
            let took = released.elapsed();
            out.assert_code(0, "the waiter takes it");
            let token = out.json()["token"].as_str().unwrap().to_owned();
            run(cluster.redlock().args(["release", "h", &token])).assert_code(0, "release");
            took
        })
    };
    let healthy = (waiting_acquire(&cluster), hand_off(&cluster));
    cluster[4].pause();
    let stopped = (waiting_acquire(&cluster), hand_off(&cluster));
    for (what, healthy, stopped) in [
        ("a waiting acquire", healthy.0, stopped.0),
        ("a hand-off", healthy.1, stopped.1),
    ] {
        assert!(
            stopped < healthy * 2 + Duration::from_millis(20) && stopped < Duration::from_millis(200),
            "{what} took {stopped:?} with one of five servers stopped, {healthy:?} with all healthy"
        );
    }
}

/// A server that answers after the majority, but not much after (its
/// connection is still being set up when the majority has answered), still
/// gets the request before `acquire` and `release` exit: the lock is on all
/// three servers, not on a bare majority, and the release leaves no key.
/// Two servers are 10ms away, the third 25ms; each wants a password, so a
/// connection takes a round trip (AUTH) before it can send the request: the
/// third has not sent it when the majority has answered (20ms).
#[test]
fn a_server_a_little_slower_than_the_majority_still_gets_the_request() {
    let cluster = Cluster::start_with(3, &["--requirepass", "slow-pw-1"]);
    let near = DelayProxy::start(10, &[cluster[0].port(), cluster[1].port()]);
    let far = DelayProxy::start(25, &[cluster[2].port()]);
    let urls: Vec<String> = near
        .ports
        .iter()
        .chain(&far.ports)
        .map(|port| format!("redis://:slow-pw-1@127.0.0.1:{port}"))
        .collect();
    let redlock = || {
        let mut cmd = support::redlock();
        cmd.env("REDLOCK_SERVERS", urls.join(","));
        cmd
    };
    for round in 0..3 {
        let out = run(redlock().args(["acquire", "-n", "--server-timeout", "2s", "slow"]));
        out.assert_code(0, "acquire");
        let token = token_of(&out);
        // What was written reaches the server through the proxy 30ms later;
        // had it not been written, nothing would (acquire has exited), and
        // the key would not go before its 30s TTL.
        let within = Duration::from_secs(2);
        assert!(
            wait_until(within, || cluster[2].get(b"slow").as_deref()
                == Some(token.as_bytes())),
            "round {round}: the slower server never got the SET"
        );
        run(redlock().args(["release", "--server-timeout", "2s", "slow", &token]))
            .assert_code(0, "release");
        assert!(
            wait_until(within, || cluster[2].get(b"slow").is_none()),
            "round {round}: the slower server kept the key"
        );
    }
}

/// A won round does not wait a second round time for a server whose
/// request is written but unanswered (SIGSTOPped: its kernel completes the
/// TCP handshake and takes the bytes), only about the spread of the
/// majority's answers: that wait cost every process's first round once
/// more the time the majority took, so `acquire -w` with one of five
/// servers stopped took up to twice as long. Two servers are 400ms away
/// and the third is stopped: the acquire takes about 400ms, as when the
/// third is healthy, not 800ms.
#[test]
fn a_stopped_server_costs_a_slow_majority_no_second_round_time() {
    let mut cluster = Cluster::start(3);
    let far = DelayProxy::start(400, &[cluster[0].port(), cluster[1].port()]);
    let urls: Vec<String> = far
        .ports
        .iter()
        .map(|port| format!("redis://127.0.0.1:{port}"))
        .chain([cluster[2].url()])
        .collect();
    let mut runs = 0;
    let mut take = || {
        runs += 1;
        let mut cmd = support::redlock();
        cmd.env("REDLOCK_SERVERS", urls.join(","));
        let name = format!("far-{runs}");
        cmd.args(["acquire", "-w", "10s", "--server-timeout", "5s", &name]);
        let (out, took) = timed(&mut cmd);
        out.assert_code(0, "acquire -w");
        took
    };
    let healthy = median_time(3, &mut take);
    cluster[2].pause();
    let stopped = median_time(3, &mut take);
    assert!(
        stopped < healthy + Duration::from_millis(200),
        "acquire -w took {stopped:?} with the near server stopped, {healthy:?} with it healthy: \
         it waited for the stopped server after the majority answered"
    );
}

/// An attempt does not wait out the server timeout for servers whose last
/// call timed out (two of five stopped, as behind a partition) once the
/// others answered and cannot make a quorum without them: it fails at once
/// and the next one follows after the retry delay. Here a leftover key on
/// one of the three live servers keeps every attempt at two of three; with
/// a 1s server timeout, a 3s wait made at most 3 attempts when each waited
/// for the stopped servers, and now makes many.
#[test]
fn attempts_do_not_wait_for_servers_that_timed_out_before() {
    let mut cluster = Cluster::start(5);
    cluster[2].set_px(b"leftover", b"someone-else", 60_000);
    cluster[3].pause();
    cluster[4].pause();
    let out = run(cluster.redlock().args([
        "-v",
        "--server-timeout",
        "1s",
        "acquire",
        "-w",
        "3s",
        "leftover",
    ]));
    out.assert_code(75, "acquire -w on a key held on one live server");
    let attempts = out.stderr.matches("failed, retrying").count();
    assert!(
        attempts >= 6,
        "{attempts} attempts in 3s: each waited out the stopped servers\n{}",
        out.stderr
    );
}

#[test]
fn a_minority_down_does_not_matter() {
    let mut cluster = Cluster::start(5);
    cluster[1].kill();
    cluster[3].kill();
    let token = acquire(&cluster, "five", &[]);
    assert_held_everywhere(&cluster, b"five", &token);
    let out = run(cluster.redlock().args(["acquire", "-n", "five"]));
    out.assert_code(75, "still exclusive with 3 of 5");
}

#[test]
fn an_even_number_of_servers_needs_a_strict_majority() {
    let mut four = Cluster::start(4);
    four[3].kill();
    let token = acquire(&four, "even", &[]);
    assert_held_everywhere(&four, b"even", &token);
    four[2].kill();
    let out = run(four.redlock().args(["acquire", "-n", "even-2"]));
    out.assert_code(69, "2 of 4 is not a majority");
    run(four.redlock().args(["status", "even"])).assert_code(69, "status with 2 of 4");

    let mut two = Cluster::start(2);
    two[1].kill();
    let out = run(two.redlock().args(["acquire", "-n", "pair"]));
    out.assert_code(69, "1 of 2 is not a majority");
    assert_eq!(two[0].get(b"pair"), None, "unlocked");
}

#[test]
fn a_majority_killed_is_no_quorum_at_once_and_names_the_servers() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[2].kill();
    let (out, took) = timed(cluster.redlock().args(["acquire", "-n", "down"]));
    out.assert_code(69, "2 of 3 killed");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for i in [0, 2] {
        assert!(
            out.stderr.contains(&port_of(&cluster, i)),
            "stderr does not name killed server {i}: {}",
            out.stderr
        );
    }
    assert_eq!(cluster[1].get(b"down"), None, "the survivor was unlocked");

    // -q does not hide an outage, and --json names it.
    let out = run(cluster.redlock().args(["acquire", "-q", "-n", "down"]));
    out.assert_code(69, "-q");
    assert!(out.stderr.starts_with("redlock: "), "-q hid an outage");
    let out = run(cluster.redlock().args(["acquire", "--json", "-n", "down"]));
    out.assert_code(69, "--json");
    let json = out.json();
    assert_eq!(json["error"], "no_quorum");
    assert_eq!(json["name"], "down");
}

#[test]
fn a_majority_paused_is_no_quorum_within_the_timeouts() {
    let mut cluster = Cluster::start(3);
    cluster[0].pause();
    cluster[1].pause();
    let (out, took) = timed(cluster.redlock().args(["acquire", "-n", "stuck"]));
    out.assert_code(69, "2 of 3 paused");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(
        took >= Duration::from_millis(250),
        "gave up after {took:?}, before the 250ms server timeout"
    );
    for i in [0, 1] {
        assert!(
            out.stderr.contains(&port_of(&cluster, i)),
            "stderr does not name paused server {i}: {}",
            out.stderr
        );
    }
    assert_eq!(
        cluster[2].get(b"stuck"),
        None,
        "the answering server was unlocked"
    );
}

#[test]
fn waiting_on_a_cluster_without_quorum_ends_with_69_not_75() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[1].kill();
    let (out, took) = timed(cluster.redlock().args(["acquire", "-w", "500ms", "gone"]));
    out.assert_code(69, "-w against a dead majority");
    assert!(took >= Duration::from_millis(500), "took {took:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn unwritable_stdout_releases_the_lock() {
    let cluster = Cluster::start(3);
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "-n", "lost-token"])
            .stdin(Stdio::null())
            .stdout(full)
            .stderr(Stdio::piped()),
    )
    .finish(RUN_TIMEOUT);
    let code = output.code();
    let stderr = output.stderr;
    assert_eq!(code, 70, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.starts_with("redlock: "), "{stderr}");
    assert_gone_everywhere(&cluster, b"lost-token");
}

// ---------------------------------------------------------------------------
// Transports: unix socket, database number, TLS
// ---------------------------------------------------------------------------

#[test]
fn unix_socket_servers_work() {
    let server = RedisServer::start_unix();
    let socket = server.unix_socket().unwrap();
    let url = format!("redis+unix://{}", socket.display());
    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "sock"]));
    out.assert_code(0, "acquire over a unix socket");
    let token = token_of(&out);
    assert_eq!(server.get(b"sock"), Some(token.clone().into_bytes()));
    run(support::redlock().args(["-s", &url, "status", "sock"])).assert_code(0, "status");
    run(support::redlock().args(["-s", &url, "release", "sock", &token])).assert_code(0, "release");
    assert_eq!(server.get(b"sock"), None);
}

#[test]
fn database_number_in_the_url_selects_that_database() {
    let server = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}/3", server.port());
    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "in-db3"]));
    out.assert_code(0, "acquire in db 3");
    let token = token_of(&out);
    assert_eq!(server.get(b"in-db3"), None, "db 0 is untouched");
    let mut con = server.client();
    redis::cmd("SELECT").arg(3).query::<()>(&mut con).unwrap();
    let value: Option<Vec<u8>> = redis::cmd("GET").arg("in-db3").query(&mut con).unwrap();
    assert_eq!(value, Some(token.clone().into_bytes()));
    run(support::redlock().args(["-s", &url, "release", "in-db3", &token]))
        .assert_code(0, "release");
    let value: Option<Vec<u8>> = redis::cmd("GET").arg("in-db3").query(&mut con).unwrap();
    assert_eq!(value, None, "released in db 3");
}

#[test]
fn tls_servers_work_with_the_ca_certificate() {
    let server = RedisServer::start_tls();
    let url = server.tls_url();
    let ca = server.tls_ca_cert().unwrap();
    let out = run(support::redlock()
        .args(["-s", &url, "--tls-ca-cert"])
        .arg(&ca)
        .args(["--server-timeout", "2s", "acquire", "-n", "secure"]));
    out.assert_code(0, "acquire over TLS");
    let token = token_of(&out);
    assert_eq!(server.get(b"secure"), Some(token.clone().into_bytes()));

    // The environment variable works too.
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .env("REDLOCK_TLS_CA_CERT", &ca)
        .args(["--server-timeout", "2s", "release", "secure", &token]));
    out.assert_code(0, "release over TLS");
    assert_eq!(server.get(b"secure"), None);
}

#[test]
fn tls_servers_without_the_ca_certificate_fail_cleanly() {
    let server = RedisServer::start_tls();
    let url = server.tls_url();
    let out = run(support::redlock().args([
        "-s",
        &url,
        "--server-timeout",
        "2s",
        "acquire",
        "-n",
        "secure",
    ]));
    assert_ne!(
        out.code(),
        0,
        "an untrusted certificate must not be accepted"
    );
    assert_no_panic(&out, "TLS without CA");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("redlock: "), "{}", out.stderr);
    assert_eq!(server.get(b"secure"), None);

    // A plain redis:// URL to the TLS port fails too, without hanging.
    let plain = format!("redis://127.0.0.1:{}", server.port());
    let (out, took) = timed(support::redlock().args(["-s", &plain, "acquire", "-n", "secure"]));
    assert_ne!(out.code(), 0);
    assert_no_panic(&out, "plain to TLS");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}
