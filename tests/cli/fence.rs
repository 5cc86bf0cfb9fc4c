//! `--fence`: fencing tokens that increase strictly from one holder of a
//! lock to the next, across independent masters (src/lock/fence.rs). The
//! shell form and the JSON field, `exec`'s REDLOCK_FENCE, `status`, a
//! paused holder's stale token, servers that restart, and the fencing
//! write that cannot reach a majority in time.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::assertions::is_token;
use crate::support::{
    drop_redlock_variables, proc_state, run, wait_until, Cluster, Output, Running, RUN_TIMEOUT,
};

/// The fencing counter's key beside the lock `name`.
fn counter_key(name: &str) -> Vec<u8> {
    [name.as_bytes(), b"\0fence"].concat()
}

/// `TOKEN FENCE\n`, the stdout of a successful `acquire --fence`: both.
#[track_caller]
fn token_and_fence(out: &Output) -> (String, u64) {
    out.assert_code(0, "acquire --fence");
    let line = out
        .stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("stdout is not one line: {:?}", out.stdout));
    let (token, fence) = line
        .split_once(' ')
        .unwrap_or_else(|| panic!("stdout is not TOKEN FENCE: {line:?}"));
    assert!(is_token(token), "not a token: {line:?}");
    (
        token.to_owned(),
        fence.parse().expect("the fence is a number"),
    )
}

/// `acquire --fence -n NAME` then `release`: the fence it got.
fn hold_once(cluster: &Cluster, name: &str, extra: &[&str]) -> u64 {
    let out = run(cluster
        .redlock()
        .args(["acquire", "--fence", "-n", name])
        .args(extra));
    let (token, fence) = token_and_fence(&out);
    run(cluster.redlock().args(["release", name, &token])).assert_code(0, "release");
    fence
}

#[test]
fn acquire_fence_prints_the_token_then_the_fence_and_each_holder_gets_a_higher_one() {
    let cluster = Cluster::start(3);
    let fences: Vec<u64> = (0..3).map(|_| hold_once(&cluster, "job", &[])).collect();
    assert_eq!(fences, [1, 2, 3]);
    // Every server keeps the counter without expiry.
    for server in &cluster.servers {
        assert_eq!(server.get(&counter_key("job")).as_deref(), Some(&b"3"[..]));
        assert_eq!(server.pttl(&counter_key("job")), -1, "no expiry");
    }
    // --json: an integer.
    let out = run(cluster
        .redlock()
        .args(["acquire", "--fence", "--json", "-n", "job"]));
    out.assert_code(0, "acquire --fence --json");
    let json = out.json();
    assert_eq!(json["fence"], serde_json::json!(4), "{json}");
    let token = json["token"].as_str().unwrap().to_owned();
    // status: the fence handed out last, in text and JSON.
    let status = run(cluster.redlock().args(["status", "job"]));
    status.assert_code(0, "status");
    assert!(
        status
            .stdout
            .contains("\n  fence:   4 (the last fencing token handed out)"),
        "{}",
        status.stdout
    );
    let status = run(cluster.redlock().args(["status", "--json", "job"]));
    assert_eq!(status.json()["fence"], serde_json::json!(4));
    run(cluster.redlock().args(["release", "job", &token])).assert_code(0, "release");
    // Without --fence: the token alone, no counter, no fence anywhere.
    let out = run(cluster.redlock().args(["acquire", "-n", "plain"]));
    assert!(is_token(out.stdout.trim_end()), "{:?}", out.stdout);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--json", "plain2"]));
    assert!(out.json().get("fence").is_none(), "{}", out.stdout);
    for server in &cluster.servers {
        assert_eq!(server.get(&counter_key("plain")), None);
    }
    let status = run(cluster.redlock().args(["status", "--json", "plain"]));
    assert_eq!(status.json()["fence"], serde_json::Value::Null);
    // A lock taken without --fence leaves a fenced name's counter alone.
    let out = run(cluster.redlock().args(["acquire", "-n", "job"]));
    let token = out.stdout.trim_end().to_owned();
    run(cluster.redlock().args(["release", "job", &token])).assert_code(0, "release");
    assert_eq!(hold_once(&cluster, "job", &[]), 5);
}

#[test]
fn a_shell_reads_token_and_fence_with_one_read() {
    let cluster = Cluster::start(3);
    let script = "read -r tok fence < <(redlock acquire --fence -n deploy) || exit 9\n\
                  echo \"tok=$tok fence=$fence\"\n\
                  redlock release deploy \"$tok\"";
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_redlock"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut bash = std::process::Command::new("bash");
    drop_redlock_variables(&mut bash, std::env::vars_os().map(|(name, _)| name));
    bash.args(["-c", script])
        .env("PATH", path)
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0");
    let out = run(&mut bash);
    out.assert_code(0, "the script");
    let line = out.stdout.trim_end();
    let (tok, fence) = line
        .strip_prefix("tok=")
        .and_then(|rest| rest.split_once(" fence="))
        .unwrap_or_else(|| panic!("{line:?}"));
    assert!(is_token(tok), "{line:?}");
    assert_eq!(fence, "1", "{line:?}");
}

#[test]
fn exec_fence_gives_the_command_redlock_fence_and_plain_exec_none() {
    let cluster = Cluster::start(3);
    let echo = ["sh", "-c", "echo \"fence=${REDLOCK_FENCE-unset}\""];
    let out = run(cluster
        .redlock()
        .args(["exec", "--fence", "-n", "job", "--"])
        .args(echo));
    out.assert_code(0, "exec --fence");
    assert_eq!(out.stdout, "fence=1\n");
    let out = run(cluster
        .redlock()
        .args(["exec", "--fence", "-n", "job", "--"])
        .args(echo));
    assert_eq!(out.stdout, "fence=2\n");
    // Without --fence, none: not even one an outer exec handed down.
    let out = run(cluster
        .redlock()
        .env("REDLOCK_FENCE", "99")
        .args(["exec", "-n", "job", "--"])
        .args(echo));
    out.assert_code(0, "exec");
    assert_eq!(out.stdout, "fence=unset\n");
}

/// A holder kept by `acquire --fence --while PID` whose keeper is frozen
/// (SIGSTOP) past the lock's TTL still has its fence; the next holder's is
/// higher, whatever the frozen one believes.
#[test]
fn a_paused_holders_stale_token_is_lower_than_the_next_holders() {
    let cluster = Cluster::start(3);
    let sleeper = Running::spawn(std::process::Command::new("sleep").arg("30"));
    let pid = sleeper_pid(&sleeper);
    let out = run(cluster.redlock().args([
        "acquire",
        "--fence",
        "--ttl",
        "1s",
        "--restart-guard",
        "1s",
        "--while",
        &pid,
        "job",
    ]));
    let (_, stale) = token_and_fence(&out);
    let status = run(cluster.redlock().args(["status", "--json", "job"]));
    let keeper = status.json()["holder"]["keeper_pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no keeper pid: {}", status.stdout));
    let keeper = nix::unistd::Pid::from_raw(keeper as i32);
    nix::sys::signal::kill(keeper, Signal::SIGSTOP).unwrap();
    assert!(wait_until(Duration::from_secs(5), || proc_state(
        keeper.as_raw()
    ) == Some('T')));
    // The frozen keeper cannot extend: the lock lapses, and the next
    // holder waits for it.
    let out = run(cluster.redlock().args([
        "acquire",
        "--fence",
        "--ttl",
        "1s",
        "--restart-guard",
        "1s",
        "-w",
        "5s",
        "job",
    ]));
    let (_, next) = token_and_fence(&out);
    nix::sys::signal::kill(keeper, Signal::SIGCONT).unwrap();
    assert!(
        next > stale,
        "the next holder's fence {next} is not above the paused one's {stale}"
    );
    sleeper.signal(Signal::SIGKILL);
    let _ = sleeper.finish(RUN_TIMEOUT);
}

fn sleeper_pid(sleeper: &Running) -> String {
    sleeper.id().to_string()
}

/// With `appendfsync always`, a minority of servers restarting (between
/// holders, and under one) loses no increase: every holder's fence is
/// above the last, and a majority keeps a counter at or above it. Not
/// every server: acquire returns once a majority confirmed the fence, and
/// the server restarted right after may not have read its write yet.
#[test]
fn no_increase_is_lost_when_a_minority_of_servers_restarts() {
    let mut cluster = Cluster::start_with(3, &["--appendonly", "yes", "--appendfsync", "always"]);
    let guard_off = ["--restart-guard", "0"];
    let mut last = 0;
    for round in 0..6 {
        let out = run(cluster
            .redlock()
            .args(["acquire", "--fence", "-n", "job"])
            .args(guard_off));
        let (token, fence) = token_and_fence(&out);
        assert!(fence > last, "round {round}: fence {fence} after {last}");
        last = fence;
        // One server restarts under the holder, another after it.
        cluster.servers[round % 3].restart();
        run(cluster
            .redlock()
            .args(["release", "job", &token])
            .args(guard_off))
        .assert_code(0, "release");
        cluster.servers[(round + 1) % 3].restart();
        let kept: Vec<Option<u64>> = cluster
            .servers
            .iter()
            .map(|server| {
                let kept = server.get(&counter_key("job"))?;
                std::str::from_utf8(&kept).ok()?.parse().ok()
            })
            .collect();
        let at_least = kept.iter().filter(|n| n.is_some_and(|n| n >= fence));
        assert!(
            at_least.count() >= 2,
            "round {round}: fewer than a majority kept a counter of {fence} or more after a restart: {kept:?}"
        );
    }
}

/// The fencing write cannot reach a majority: redlock stops itself right
/// before it (a test hook), two of three servers are frozen, and then it
/// goes on. The lock is not handed out, it is released where it can be,
/// and acquire exits 69, as for any majority that could not be had.
#[test]
fn a_fence_that_cannot_reach_a_majority_releases_the_lock_and_exits_69() {
    let mut cluster = Cluster::start(3);
    let mut cmd = cluster.redlock();
    cmd.env("REDLOCK_TEST_STOP_BEFORE_FENCE", "1")
        .args([
            "acquire",
            "--fence",
            "--ttl",
            "6s",
            "--server-timeout",
            "300ms",
            "-n",
            "job",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let acquiring = Running::spawn(&mut cmd);
    let pid = acquiring.id() as i32;
    assert!(
        wait_until(Duration::from_secs(10), || proc_state(pid) == Some('T')),
        "redlock did not stop before the fencing round"
    );
    let token = cluster.servers[0]
        .get(b"job")
        .expect("locked before the fence");
    assert_eq!(cluster.get_all(b"job"), vec![Some(token.clone()); 3]);
    cluster.servers[1].pause();
    cluster.servers[2].pause();
    acquiring.signal(Signal::SIGCONT);
    let out = acquiring.finish(RUN_TIMEOUT);
    out.assert_code(69, "a fence on 1 of 3 servers");
    assert_eq!(out.stdout, "", "no token, no fence handed out");
    assert!(
        out.stderr
            .contains("no quorum for lock \"job\": fenced on 1 of 3 servers, and a majority is 2"),
        "{}",
        out.stderr
    );
    assert_eq!(cluster.servers[0].get(b"job"), None, "not released");
    cluster.servers[1].resume();
    cluster.servers[2].resume();
    // The next holder is above whatever the failed attempt wrote.
    let written: u64 = cluster.servers[0]
        .get(&counter_key("job"))
        .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
    let out = run(cluster
        .redlock()
        .args(["acquire", "--fence", "-w", "10s", "job"]));
    let (_, next) = token_and_fence(&out);
    assert!(next > written, "{next} after {written}");
}

#[test]
fn a_fenced_exec_nested_in_an_unfenced_one_is_refused_not_run_without_a_fence() {
    // Found by review: it ran in place with no REDLOCK_FENCE at all.
    let cluster = Cluster::start(3);
    let inner = format!(
        "{} exec --fence nf -- sh -c 'echo \"ran [$REDLOCK_FENCE]\"'; echo \"inner $?\" >&2",
        env!("CARGO_BIN_EXE_redlock")
    );
    let out = run(cluster
        .redlock()
        .args(["exec", "nf", "--", "sh", "-c", &inner]));
    assert!(!out.stdout.contains("ran"), "{}", out.stdout);
    assert!(out.stderr.contains("inner 64"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("an enclosing exec holds \"nf\" without --fence"),
        "{}",
        out.stderr
    );
    // Inside a fenced exec, the nested one gets the outer one's fence.
    let inner = format!(
        "{} exec --fence nf -- sh -c 'echo \"ran [$REDLOCK_FENCE]\"'",
        env!("CARGO_BIN_EXE_redlock")
    );
    let out = run(cluster
        .redlock()
        .args(["exec", "--fence", "nf", "--", "sh", "-c", &inner]));
    out.assert_code(0, "fenced inside fenced");
    assert!(out.stdout.contains("ran [1]"), "{}", out.stdout);
}

/// Server values are checked before they are used: a fencing counter at or
/// above 2^63 − 1 (what no redlock ever writes) is that server's failure;
/// the other servers still count, and the fence handed out comes from them.
#[test]
fn an_implausible_counter_on_one_server_is_that_servers_failure_not_everyones() {
    let cluster = Cluster::start(3);
    for value in ["18446744073709551615", "9223372036854775807"] {
        cluster.servers[0].set(&counter_key("job"), value.as_bytes());
        let out = run(cluster
            .redlock()
            .args(["acquire", "--fence", "-v", "-n", "job"]));
        let (token, fence) = token_and_fence(&out);
        assert!(fence < 1 << 62, "{value}: handed out {fence}");
        assert!(
            !out.stderr.contains(&cluster.servers[0].url()),
            "{value}: the server with the bad counter counted: {}",
            out.stderr
        );
        assert_eq!(cluster.servers[0].get(b"job"), None, "{value}: taken there");
        run(cluster.redlock().args(["release", "job", &token])).assert_code(0, "release");
        // The bad counter is left as it was: redlock never lowers one.
        assert_eq!(
            cluster.servers[0].get(&counter_key("job")).unwrap(),
            value.as_bytes()
        );
    }
    let fences: Vec<u64> = (0..2).map(|_| hold_once(&cluster, "job", &[])).collect();
    assert_eq!(fences, [3, 4], "no fence twice, none lower");
}

/// Counters at or above 2^63 − 1 on two of three servers: no majority,
/// exit 69, and the message names both servers and their values.
#[test]
fn implausible_counters_on_a_majority_give_69_naming_each_server_and_value() {
    let cluster = Cluster::start(3);
    cluster.servers[0].set(&counter_key("job"), b"9223372036854775807");
    cluster.servers[1].set(&counter_key("job"), b"99999999999999999999");
    let out = run(cluster.redlock().args(["acquire", "--fence", "-n", "job"]));
    out.assert_code(69, "two implausible counters");
    assert_eq!(out.stdout, "", "no token, no fence");
    for (server, shown) in [(0, "9223372036854775807"), (1, "99999999999999999999")] {
        let needle = format!(
            "{} failed (the fencing counter {shown} is at or above 2^63-1, \
             which redlock never hands out)",
            cluster.servers[server].url()
        );
        assert!(out.stderr.contains(&needle), "{needle}\n{}", out.stderr);
    }
    assert_eq!(
        cluster.get_all(b"job"),
        vec![None; 3],
        "released everywhere"
    );
}

/// The highest fence redlock hands out is 2^63 − 2: a counter there
/// (which a holder of that fence left) gives no higher one, and no fence is
/// handed out twice.
#[test]
fn no_fence_above_2_63_minus_2_is_handed_out() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.set(&counter_key("job"), b"9223372036854775805");
    }
    assert_eq!(hold_once(&cluster, "job", &[]), (1 << 63) - 2);
    let out = run(cluster.redlock().args(["acquire", "--fence", "-n", "job"]));
    out.assert_code(69, "no fence left");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains(
            "no fencing token is left for lock \"job\": the last one handed out is \
             9223372036854775806 (2^63-2, the highest redlock hands out) on redis://"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(
        cluster.get_all(b"job"),
        vec![None; 3],
        "released everywhere"
    );
}

/// A counter that is not a number: that server's failure, named with the
/// value it holds, escaped and cut short, in words (it read
/// `("the": fencing counter of this lock is not a number)`).
#[test]
fn a_counter_that_is_not_a_number_is_named_escaped_and_bounded() {
    let cluster = Cluster::start(3);
    let junk = format!("x\x1b[31m{}", "y".repeat(500));
    cluster.servers[1].set(&counter_key("job"), junk.as_bytes());
    cluster.servers[2].set(&counter_key("job"), junk.as_bytes());
    let out = run(cluster.redlock().args(["acquire", "--fence", "-n", "job"]));
    out.assert_code(69, "two counters that are not numbers");
    let needle = format!(
        "{} failed (the fencing counter is not a number: 'x\\u{{1b}}[31myyy",
        cluster.servers[2].url()
    );
    assert!(out.stderr.contains(&needle), "{needle}\n{}", out.stderr);
    assert!(
        out.stderr.contains("...[+466 bytes]'"),
        "not cut: {}",
        out.stderr
    );
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
    assert!(out.stderr.len() < 700, "not bounded: {}", out.stderr);
    assert!(!out.stderr.contains("\"the\""), "{}", out.stderr);
}
