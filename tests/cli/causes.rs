//! Every failure says its true cause: per server, what happened (refused,
//! unreachable, token gone, another holder), counted over every server;
//! `-w` running out says it gave up; a lock `exec` keeps alive says so,
//! and a holder whose process is gone is named; `list --older-than`;
//! durations in two units; the same name in `status` and `list`; a
//! release without a token says how to get on.

use std::time::Duration;

use crate::support::assertions::{assert_one_line_error, assert_stderr_says};
use crate::support::{acquire, run, wait_until, Cluster, Running};

// ---------------------------------------------------------------------------
// 1. a loss names each server's cause
// ---------------------------------------------------------------------------

/// The setup: a lock on 3 servers, one restarted empty, another
/// killed. The extension reaches 1 server: the message says so, and says
/// why each of the other two did not confirm the token.
#[test]
fn an_extension_names_each_servers_cause() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "causes-ext", &["--ttl", "60s"]);
    cluster[1].restart();
    cluster[2].kill();
    let (restarted, killed) = (cluster[1].url(), cluster[2].url());
    let out = run(cluster.redlock().args(["extend", "causes-ext", &token]));
    out.assert_code(69, "extend with a restarted and a killed server");
    assert_stderr_says(
        &out,
        &[
            "no quorum for lock \"causes-ext\": extended on 1 of 3 servers, and a majority is 2: ",
            &format!("{restarted} no longer holds the token (its key is gone: expired, released, or the server restarted"),
            &format!("{killed} unreachable (Connection refused"),
        ],
        "extend",
    );
    assert!(
        !out.stderr.contains("1 of 3 servers failed"),
        "{}",
        out.stderr
    );

    let out = run(cluster
        .redlock()
        .args(["extend", "--json", "causes-ext", &token]));
    out.assert_code(69, "extend --json");
    let json = out.json();
    assert_eq!(json["error"], "no_quorum", "{json}");
    let causes: Vec<(String, String)> = json["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes: {json}"))
        .iter()
        .map(|c| {
            (
                c["server"].as_str().unwrap().to_owned(),
                c["cause"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            (cluster[0].url(), "holds_token".to_owned()),
            (restarted, "token_gone".to_owned()),
            (killed, "unreachable".to_owned()),
        ],
        "{json}"
    );
}

/// `exec`'s keeper says the same while it retries: not "1 of 3 servers
/// failed", which reads as if a majority were there.
#[test]
fn exec_retrying_an_extension_names_each_servers_cause() {
    let mut cluster = Cluster::start(3);
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "3s", "causes-exec", "--", "sleep", "30"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped()),
    );
    let held = wait_until(Duration::from_secs(10), || {
        cluster[0].get(b"causes-exec").is_some() && cluster[2].get(b"causes-exec").is_some()
    });
    assert!(held, "exec did not take the lock");
    cluster[1].restart();
    cluster[2].kill();
    let (restarted, killed) = (cluster[1].url(), cluster[2].url());
    // The keeper retries until the validity runs out, then the command is
    // stopped: well before `sleep 30` would end.
    let out = exec.finish(Duration::from_secs(25));
    assert_stderr_says(
        &out,
        &[
            "extending failed, retrying: no quorum for lock \"causes-exec\": extended on 1 of 3 \
             servers, and a majority is 2: ",
            &format!("{restarted} no longer holds the token"),
            &format!("{killed} unreachable ("),
        ],
        "exec",
    );
}

/// A release that no server confirms names who holds it instead.
#[test]
fn a_release_of_another_holders_lock_says_so_per_server() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "causes-rel", &["--ttl", "60s"]);
    let wrong = "00000000000000000000000000000000";
    let out = run(cluster.redlock().args(["release", "causes-rel", wrong]));
    out.assert_code(79, "release with another token");
    assert_stderr_says(
        &out,
        &[
            "released on 0 of 3 servers, and a majority is 2: ",
            &format!("{} holds another token (another holder)", cluster[0].url()),
        ],
        "release",
    );
}

// ---------------------------------------------------------------------------
// 2. every server down: counted, and `list` claims nothing
// ---------------------------------------------------------------------------

#[test]
fn with_every_server_down_every_server_is_counted() {
    let mut cluster = Cluster::start(3);
    for i in 0..3 {
        cluster[i].kill();
    }
    let out = run(cluster.redlock().args(["acquire", "-n", "causes-down"]));
    out.assert_code(69, "acquire with every server down");
    assert_stderr_says(
        &out,
        &["3 of 3 servers failed, and a majority is 2"],
        "acquire",
    );
    for i in 0..3 {
        assert_stderr_says(
            &out,
            &[&format!("{} unreachable (", cluster[i].url())],
            "acquire",
        );
    }
}

#[test]
fn a_server_that_had_not_answered_is_listed_but_not_counted_as_failed() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[1].kill();
    // Alive, but it cannot answer before the round is decided.
    cluster[2].pause();
    let out = run(cluster.redlock().args(["acquire", "-n", "causes-pending"]));
    cluster[2].resume();
    out.assert_code(69, "acquire with a majority down");
    // It did not fail, and the outcome did not wait for it: neither counted
    // nor listed, whether or not it answered before the round ended.
    assert_stderr_says(
        &out,
        &["2 of 3 servers failed, and a majority is 2"],
        "acquire",
    );
    assert!(!out.stderr.contains(&cluster[2].url()), "{}", out.stderr);
}

#[test]
fn a_release_names_only_the_servers_that_decided_it() {
    let mut cluster = Cluster::start(3);
    let held = run(cluster.redlock().args(["acquire", "causes-decided"]));
    held.assert_code(0, "the holder");
    cluster[2].pause();
    let wrong = "0123456789abcdef0123456789abcdef";
    let out = run(cluster.redlock().args(["release", "causes-decided", wrong]));
    cluster[2].resume();
    out.assert_code(79, "a release with another token");
    assert_stderr_says(
        &out,
        &["released on 0 of 3 servers, and a majority is 2"],
        "release",
    );
    // The paused server had no part in the outcome: not named.
    assert!(!out.stderr.contains(&cluster[2].url()), "{}", out.stderr);
}

#[test]
fn list_without_a_quorum_claims_no_empty_listing_and_names_the_pattern() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[1].kill();
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(69, "list with 2 of 3 down");
    assert!(!out.stderr.contains("no locks"), "{}", out.stderr);
    assert!(!out.stderr.contains("lock \"*\""), "{}", out.stderr);
    assert_stderr_says(
        &out,
        &["no quorum to list the locks matching \"*\": 2 of 3 servers failed"],
        "list",
    );
    let out = run(cluster.redlock().args(["list", "--json"]));
    out.assert_code(69, "list --json");
    let json = out.json();
    assert_eq!(json["complete"], false, "{json}");
    assert_eq!(json["error"], "no_quorum", "{json}");
}

// ---------------------------------------------------------------------------
// 3. a wait that runs out says it gave up
// ---------------------------------------------------------------------------

#[test]
fn a_wait_that_runs_out_says_it_gave_up() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "causes-wait", &["--ttl", "60s"]);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-w", "300ms", "causes-wait"]));
    out.assert_code(75, "acquire -w 300ms");
    assert!(
        out.stderr
            .starts_with("redlock: gave up after 300ms: \"causes-wait\" is held by "),
        "{}",
        out.stderr
    );
    let out = run(cluster.redlock().args(["acquire", "-n", "causes-wait"]));
    out.assert_code(75, "acquire -n");
    assert!(!out.stderr.contains("gave up"), "{}", out.stderr);

    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-w", "300ms", "causes-wait"]));
    out.assert_code(75, "acquire --json -w 300ms");
    let json = out.json();
    assert_eq!(json["gave_up_after_ms"], 300, "{json}");
    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-n", "causes-wait"]));
    assert!(out.json()["gave_up_after_ms"].is_null(), "{}", out.stdout);

    let out = run(cluster
        .redlock()
        .args(["exec", "-w", "300ms", "causes-wait", "--", "true"]));
    out.assert_code(75, "exec -w 300ms");
    assert!(
        out.stderr
            .starts_with("redlock: gave up after 300ms: \"causes-wait\" is held by "),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------
// 12a. countdowns in at most two units
// ---------------------------------------------------------------------------

#[test]
fn a_long_countdown_reads_in_two_units() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "causes-days", &["--ttl", "48h"]);
    let out = run(cluster.redlock().args(["status", "causes-days"]));
    out.assert_code(0, "status");
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(first.ends_with("; expires in 1d 23h"), "{first}");
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    assert!(out.stdout.contains("  1d 23h  "), "{}", out.stdout);
}

// ---------------------------------------------------------------------------
// 12e. a release without a token says how to get on
// ---------------------------------------------------------------------------

#[test]
fn a_release_without_a_token_hints_at_force_and_if_token() {
    let out = run(crate::support::redlock().args(["release", "causes-rel"]));
    assert_one_line_error(
        &out,
        64,
        &[
            "no TOKEN",
            "REDLOCK_TOKEN",
            "release --force NAME",
            "--if-token TOKEN",
        ],
        "release without a token",
    );
}

// ---------------------------------------------------------------------------
// 7b. list --older-than
// ---------------------------------------------------------------------------

#[test]
fn list_older_than_shows_only_locks_held_longer() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "app:causes-old", &["--ttl", "60s"]);
    // The behaviour: one lock held a second longer than the other.
    std::thread::sleep(Duration::from_millis(1500));
    acquire(&cluster, "app:causes-new", &["--ttl", "60s"]);
    for i in 0..3 {
        cluster[i].set_px(
            b"app:causes-bare",
            b"0123456789abcdef0123456789abcdef",
            60_000,
        );
    }
    let out = run(cluster.redlock().args(["list", "--prefix", "app:"]));
    out.assert_code(0, "list");
    for name in ["causes-old", "causes-new", "causes-bare"] {
        assert!(out.stdout.contains(name), "{name}: {}", out.stdout);
    }
    let out = run(cluster
        .redlock()
        .args(["list", "--prefix", "app:", "--older-than", "1s"]));
    out.assert_code(0, "list --older-than 1s");
    assert!(out.stdout.contains("causes-old"), "{}", out.stdout);
    assert!(!out.stdout.contains("causes-new"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("causes-bare"),
        "no age, left out: {}",
        out.stdout
    );
    let out = run(cluster.redlock().args(["list", "--older-than", "1h"]));
    out.assert_code(0, "list --older-than 1h");
    assert_eq!(out.stdout, "");
    assert_stderr_says(&out, &["taken more than 1h ago"], "list --older-than 1h");
}

// ---------------------------------------------------------------------------
// 4. a lock exec keeps alive, and a holder whose process is gone
// ---------------------------------------------------------------------------

#[test]
fn a_lock_exec_renews_says_so_instead_of_a_countdown() {
    let cluster = Cluster::start(3);
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "3s", "causes-kept", "--", "sleep", "30"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let held = wait_until(Duration::from_secs(10), || {
        (0..3).all(|i| cluster[i].get(b"causes-kept").is_some())
    });
    assert!(held, "exec did not take the lock");
    let out = run(cluster.redlock().args(["status", "causes-kept"]));
    out.assert_code(0, "status");
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(
        first.ends_with("; kept alive by exec (renewed every 1s)"),
        "{first}"
    );
    let out = run(cluster.redlock().args(["status", "--json", "causes-kept"]));
    let holder = &out.json()["holder"];
    assert_eq!(holder["kept_alive_by_exec"], true, "{holder}");
    assert_eq!(holder["renew_every_ms"], 1000, "{holder}");
    assert_eq!(holder["holder_pid_gone"], false, "{holder}");
    let out = run(cluster.redlock().args(["list"]));
    assert!(out.stdout.contains("renewed every 1s"), "{}", out.stdout);
    let out = run(cluster.redlock().args(["acquire", "-n", "causes-kept"]));
    out.assert_code(75, "acquire -n");
    assert_stderr_says(&out, &["kept alive by exec (renewed every 1s)"], "busy");
    exec.signal(nix::sys::signal::Signal::SIGTERM);
    exec.finish(Duration::from_secs(20));
}

/// `acquire` records the process that ran it: once that shell is gone, a
/// status on the same host says so, with the lock's remaining life.
#[test]
fn a_holder_whose_process_is_gone_is_named() {
    let cluster = Cluster::start(3);
    let redlock = env!("CARGO_BIN_EXE_redlock");
    // `; true`: the shell forks acquire rather than exec it, so that the
    // pid recorded is the shell's, which is gone once this returns.
    let script = format!("{redlock} acquire -n --ttl 25s causes-gone >/dev/null; true");
    run(std::process::Command::new("sh")
        .args(["-c", &script])
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0")
        .env("XDG_CONFIG_HOME", "/nonexistent/redlock-tests"))
    .assert_code(0, "sh -c acquire");
    let status = run(cluster.redlock().args(["status", "--json", "causes-gone"]));
    status.assert_code(0, "status --json");
    let holder = status.json()["holder"].clone();
    assert_eq!(holder["holder_pid_gone"], true, "{holder}");
    assert_eq!(holder["kept_alive_by_exec"], false, "{holder}");
    let pid = holder["pid"].as_u64().unwrap();
    let out = run(cluster.redlock().args(["status", "causes-gone"]));
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!("; holder pid {pid} is gone; the lock expires in ")),
        "{first}"
    );
}

// ---------------------------------------------------------------------------
// 12d. status and list name a lock the same way under a prefix
// ---------------------------------------------------------------------------

#[test]
fn status_and_list_show_the_same_name_under_a_prefix() {
    let cluster = Cluster::start(3);
    acquire(
        &cluster,
        "causes-named",
        &["--prefix", "app:", "--ttl", "20s"],
    );
    let out = run(cluster
        .redlock()
        .args(["--prefix", "app:", "status", "causes-named"]));
    out.assert_code(0, "status");
    assert!(
        out.stdout.starts_with("\"causes-named\" is held by"),
        "{}",
        out.stdout
    );
    let out = run(cluster.redlock().args(["--prefix", "app:", "list"]));
    out.assert_code(0, "list");
    assert!(out.stdout.contains("\n\"causes-named\" "), "{}", out.stdout);
    assert!(!out.stdout.contains("app:"), "{}", out.stdout);
    let out = run(cluster
        .redlock()
        .args(["--prefix", "app:", "status", "--json", "causes-named"]));
    assert_eq!(
        out.json()["name"],
        "app:causes-named",
        "the JSON keeps its fields"
    );
}
