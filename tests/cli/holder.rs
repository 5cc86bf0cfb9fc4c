//! Who holds a lock: the holder record written beside the key, shown by
//! `status`, by a busy `acquire`, and in their JSON; and that it never
//! outlives the lock.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::assertions::{assert_held_everywhere, assert_stderr_says};
use crate::support::{acquire, run, temp_dir, wait_until, Cluster, Running};

/// The CI variables a job URL is read from, removed so that a test run
/// inside a CI does not record that CI's job.
const CI_VARIABLES: [&str; 6] = [
    "GITHUB_SERVER_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
    "CI_JOB_URL",
    "BUILDKITE_BUILD_URL",
    "BUILD_URL",
];

/// `cluster.redlock()` as user `alice` outside any CI.
fn as_alice(cluster: &Cluster) -> Command {
    let mut cmd = cluster.redlock();
    cmd.env("USER", "alice");
    for name in CI_VARIABLES {
        cmd.env_remove(name);
    }
    cmd
}

const RECORD: &[u8] = b"deploy\0holder";

#[test]
fn status_names_the_holder_its_note_its_job_and_its_age() {
    let cluster = Cluster::start(3);
    let out = run(as_alice(&cluster)
        .args(["acquire", "-n", "-m", "rolling out v2", "deploy"])
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_REPOSITORY", "acme/shop")
        .env("GITHUB_RUN_ID", "4242"));
    out.assert_code(0, "acquire -m");
    let token = out.stdout.trim().to_owned();
    // The behaviour: a second of age, which status shows.
    std::thread::sleep(Duration::from_millis(1100));

    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "status of a held lock");
    let first = out.stdout.lines().next().unwrap();
    let job = "job https://github.com/acme/shop/actions/runs/4242";
    assert!(
        first.starts_with("\"deploy\" is held by alice@")
            && first.contains(&format!(
                "(pid {}, {job}, \"rolling out v2\") for 1s",
                std::process::id()
            ))
            && first.contains("; expires in 2"),
        "{first}"
    );

    let json = run(cluster.redlock().args(["status", "--json", "deploy"])).json();
    let holder = &json["holder"];
    assert_eq!(holder["kind"], "redlock");
    assert_eq!(holder["user"], "alice");
    // acquire exits once it printed the token: the holder is who ran it.
    assert_eq!(holder["pid"], std::process::id());
    assert_eq!(holder["message"], "rolling out v2");
    assert_eq!(
        holder["job"],
        "https://github.com/acme/shop/actions/runs/4242"
    );
    assert!(holder["command"].is_null(), "acquire runs no command");
    let held_for = holder["held_for_ms"].as_u64().unwrap();
    assert!((1000..10_000).contains(&held_for), "{held_for}");
    let expires = json["expires_in_ms"].as_u64().unwrap();
    assert!((20_000..=30_000).contains(&expires), "{expires}");
    assert_eq!(json["token"], token.as_str());
}

#[test]
fn exec_records_its_command_and_the_commands_pid() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("holder-exec");
    let pid_file = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
    let exec = Running::spawn(
        as_alice(&cluster)
            .args(["exec", "-m", "nightly", "deploy", "--", "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    }));
    let command_pid: u64 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The pid is added by an extension right after the command started.
    let mut json = serde_json::Value::Null;
    assert!(
        wait_until(Duration::from_secs(5), || {
            json = run(cluster.redlock().args(["status", "--json", "deploy"])).json();
            json["holder"]["command_pid"] == command_pid
        }),
        "{json}"
    );
    let holder = &json["holder"];
    assert_eq!(holder["pid"], exec.id());
    // No argument by default: `--record-command` records the line.
    assert_eq!(holder["command"], "sh (2 arguments)");
    assert_eq!(holder["message"], "nightly");
    let text = run(cluster.redlock().args(["status", "deploy"])).stdout;
    assert!(
        text.contains(&format!(
            "(pid {}, command pid {command_pid}, \"nightly\")",
            exec.id()
        )) && text.contains("\n  command: sh (2 arguments)\n"),
        "{text}"
    );
    exec.signal(nix::sys::signal::Signal::SIGTERM);
    exec.finish(Duration::from_secs(10));
}

#[test]
fn the_record_lives_and_dies_with_the_lock() {
    let cluster = Cluster::start(3);
    let before = cluster.dbsizes();
    let token = acquire(&cluster, "deploy", &["--ttl", "20s"]);
    assert_eq!(
        cluster.dbsizes(),
        before.iter().map(|n| n + 2).collect::<Vec<_>>(),
        "the lock and its record"
    );
    for server in &cluster.servers {
        let (lock, record) = (server.pttl(b"deploy"), server.pttl(RECORD));
        assert!((lock - record).abs() < 50, "{lock} vs {record}");
    }
    // The behaviour: time passes, so that the record's expiry must follow the extension.
    std::thread::sleep(Duration::from_millis(1100));
    run(cluster
        .redlock()
        .args(["extend", "--ttl", "60s", "deploy", &token]))
    .assert_code(0, "extend");
    for server in &cluster.servers {
        let record = server.pttl(RECORD);
        assert!((55_000..=60_000).contains(&record), "record PTTL {record}");
    }
    // The age is kept across extensions.
    let json = run(cluster.redlock().args(["status", "--json", "deploy"])).json();
    assert!(
        json["holder"]["held_for_ms"].as_u64().unwrap() >= 1000,
        "{json}"
    );
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    assert_eq!(cluster.dbsizes(), before, "release leaves nothing behind");

    run(cluster.redlock().args(["exec", "job", "--", "true"])).assert_code(0, "exec");
    assert_eq!(cluster.dbsizes(), before, "exec leaves nothing behind");

    acquire(&cluster, "short", &["--ttl", "300ms"]);
    assert!(
        wait_until(Duration::from_secs(5), || cluster.dbsizes() == before),
        "an expired lock leaves nothing behind: {:?}",
        cluster.dbsizes()
    );
}

#[test]
fn a_busy_acquire_names_the_holder_in_text_and_json() {
    let cluster = Cluster::start(3);
    run(as_alice(&cluster).args(["acquire", "-n", "-m", "db migration", "deploy"]))
        .assert_code(0, "holder");

    let out = run(cluster.redlock().args(["acquire", "-n", "deploy"]));
    out.assert_code(75, "busy");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("redlock: \"deploy\" is held by alice@")
            && out.stderr.contains("\"db migration\") for ")
            && out.stderr.contains("; expires in 29s"),
        "{}",
        out.stderr
    );

    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "-w", "400ms", "deploy"]));
    out.assert_code(75, "busy after waiting");
    let json = out.json();
    assert_eq!(json["error"], "busy");
    assert_eq!(json["holder"]["user"], "alice");
    assert_eq!(json["holder"]["message"], "db migration");
    assert!(json["expires_in_ms"].as_u64().unwrap() > 20_000, "{json}");
    assert!(json["attempts"].as_u64().unwrap() >= 2, "{json}");
    assert!(json["waited_ms"].as_u64().unwrap() >= 400, "{json}");

    let json = run(cluster
        .redlock()
        .args(["acquire", "--json", "-n", "deploy"]))
    .json();
    assert_eq!(json["attempts"], 1);
    assert!(json["waited_ms"].as_u64().unwrap() < 1000, "{json}");
}

#[test]
fn other_clients_and_other_values_are_named_as_such() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.set_px(b"theirs", b"their-token", 60_000);
        let _: () = redis::cmd("HSET")
            .arg("config")
            .arg("a")
            .arg("b")
            .query(&mut server.client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["status", "theirs"]));
    out.assert_code(0, "held by another client");
    assert!(
        out.stdout
            .starts_with("\"theirs\" is held by another client (token their-token); expires in "),
        "{}",
        out.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "theirs"])).json();
    assert_eq!(json["holder"]["kind"], "other_client");
    assert_eq!(json["holder"]["token"], "their-token");

    let out = run(cluster.redlock().args(["status", "config"]));
    out.assert_code(0, "a hash on every server is held, though by no lock");
    assert!(
        out.stdout
            .starts_with("\"config\" is held by a non-redlock value (a hash); it never expires"),
        "{}",
        out.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "config"])).json();
    assert_eq!(json["state"], "held");
    assert_eq!(json["held"], true);
    assert_eq!(json["holder"]["kind"], "non_redlock");
    assert_eq!(json["holder"]["type"], "hash");
    assert!(json["expires_in_ms"].is_null());
    let out = run(cluster.redlock().args(["acquire", "-n", "config"]));
    out.assert_code(75, "busy");
    assert_stderr_says(&out, &["held by a non-redlock value (a hash)"], "busy");
}

#[test]
fn a_record_left_by_an_earlier_holder_is_not_shown_for_a_new_one() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &[]);
    // Someone deletes the lock by hand and another client takes it: the
    // record, which names the old token, must not be shown for the new one.
    for server in &cluster.servers {
        server.set_px(b"deploy", b"new-holder", 60_000);
    }
    let out = run(cluster.redlock().args(["status", "deploy"]));
    assert!(
        out.stdout
            .contains("held by another client (token new-holder)"),
        "{}",
        out.stdout
    );
}

#[test]
fn what_the_holder_records_is_bounded_and_shown_escaped() {
    let cluster = Cluster::start(3);
    let note = format!("line1\nline2\x1b[2J{}", "x".repeat(10_000));
    run(cluster
        .redlock()
        .args(["acquire", "-n", "-m", &note, "deploy"]))
    .assert_code(0, "-m");
    let record = cluster[0].get(RECORD).unwrap();
    assert!(record.len() < 4096, "{} bytes recorded", record.len());
    let out = run(cluster.redlock().args(["status", "deploy"]));
    assert_eq!(out.stdout.lines().count(), 5, "{}", out.stdout);
    assert!(
        out.stdout.contains(r#""line1\nline2\u{1b}[2Jxxx"#),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains('\x1b'), "{}", out.stdout);
    let busy = run(cluster.redlock().args(["acquire", "-n", "deploy"]));
    assert_eq!(busy.stderr.lines().count(), 1, "{}", busy.stderr);
    assert!(busy.stderr.len() < 600, "{} bytes", busy.stderr.len());
}

#[test]
fn exec_refuses_json_it_could_not_print() {
    let cluster = Cluster::start(1);
    let out = run(cluster
        .redlock()
        .args(["exec", "--json", "job", "--", "true"]));
    out.assert_code(64, "exec --json");
    assert_stderr_says(&out, &["exec has no --json"], "exec --json");
    assert_eq!(out.stdout, "", "the command did not run");
}

#[test]
fn messages_count_servers_in_plain_words() {
    let mut cluster = Cluster::start(1);
    cluster[0].kill();
    let out = run(cluster.redlock().args(["acquire", "-n", "x"]));
    out.assert_code(69, "the only server is down");
    assert_stderr_says(
        &out,
        &["no quorum for lock \"x\": its only server failed"],
        "the only server is down",
    );
    let cluster = Cluster::start(1);
    let out = run(cluster.redlock().args(["status", "free"]));
    assert!(
        out.stdout.contains("a majority of 1 server (quorum 1)"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_lost_lock_is_told_once_by_name() {
    let cluster = Cluster::start(3);
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "600ms", "deploy", "--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    assert!(wait_until(Duration::from_secs(5), || cluster[0]
        .get(b"deploy")
        .is_some()));
    for server in &cluster.servers {
        let _: () = redis::cmd("DEL")
            .arg("deploy")
            .query(&mut server.client())
            .unwrap();
    }
    let out = exec.finish(Duration::from_secs(10));
    out.assert_code(79, "lost");
    // The deletes reach the servers one by one, so an extension may find
    // the token on one of them still.
    // Each server that no longer holds it is named.
    assert!(
        ["0", "1"].iter().any(|held| out.stderr.contains(&format!(
            "lock \"deploy\" was lost ({held} of 3 servers still hold its token, 2 needed: "
        ))),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("no longer holds the token (its key is gone")
            && out.stderr.contains("); the command was stopped"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr.matches("\"deploy\"").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn an_interrupted_wait_says_nothing_is_held() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &[]);
    let waiting = Running::spawn(
        cluster
            .redlock()
            .args(["-v", "acquire", "deploy"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("deploy", 1)),
        "the waiter never stood in line"
    );
    waiting.signal(nix::sys::signal::Signal::SIGINT);
    let out = waiting.finish(Duration::from_secs(10));
    out.assert_signal(nix::sys::signal::Signal::SIGINT, "interrupted");
    assert!(
        out.stderr
            .contains("interrupted by SIGINT while waiting for \"deploy\"; it is not held"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("released what was taken"),
        "{}",
        out.stderr
    );
    assert_held_everywhere(
        &cluster,
        b"deploy",
        &cluster[0]
            .get(b"deploy")
            .map(|v| String::from_utf8(v).unwrap())
            .unwrap(),
    );
}

#[test]
fn a_key_of_another_type_where_the_record_goes_is_left_alone() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        let _: () = redis::cmd("HSET")
            .arg(RECORD)
            .arg("f")
            .arg("v")
            .query(&mut server.client())
            .unwrap();
    }
    let token = acquire(&cluster, "deploy", &[]);
    run(cluster.redlock().args(["extend", "deploy", &token])).assert_code(0, "extend");
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(0, "release");
    for server in &cluster.servers {
        let kind: String = redis::cmd("TYPE")
            .arg(RECORD)
            .query(&mut server.client())
            .unwrap();
        assert_eq!(kind, "hash", "the hash is still there");
        assert_eq!(server.pttl(RECORD), -1, "and still without expiry");
    }
}

#[test]
fn leftovers_of_two_holders_name_no_holder() {
    let cluster = Cluster::start(3);
    cluster[0].set_px(b"split", b"token-a", 60_000);
    cluster[1].set_px(b"split", b"token-b", 60_000);
    let out = run(cluster.redlock().args(["acquire", "-n", "split"]));
    out.assert_code(75, "busy on leftovers");
    assert_stderr_says(&out, &["\"split\" is busy: at least 2 of 3 servers hold it for others, no one holder on a majority"], "busy on leftovers");
    let json = run(cluster.redlock().args(["acquire", "--json", "-n", "split"])).json();
    assert!(json["holder"].is_null(), "{json}");
    assert!(json["expires_in_ms"].is_null(), "{json}");
}

#[test]
fn without_time_in_the_acl_locks_work_without_a_record() {
    let cluster = Cluster::start(3);
    let rules = [
        "~*", "+set", "+get", "+del", "+pexpire", "+pttl", "+type", "+info", "+eval", "+evalsha",
    ];
    let urls: Vec<String> = cluster
        .servers
        .iter()
        .map(|s| s.acl_user("notime", "pw-notime", &rules))
        .collect();
    let as_user = || {
        let mut cmd = cluster.redlock();
        cmd.env("REDLOCK_SERVERS", urls.join(","));
        cmd
    };
    let before = cluster.dbsizes();
    let out = run(as_user().args(["acquire", "-n", "deploy"]));
    out.assert_code(0, "acquire without +time");
    let token = out.stdout.trim().to_owned();
    assert_eq!(cluster[0].get(RECORD), None, "no record without TIME");
    let out = run(as_user().args(["status", "deploy"]));
    out.assert_code(0, "status without +time");
    assert!(
        out.stdout.contains("held by another client"),
        "{}",
        out.stdout
    );
    let out = run(as_user().args(["acquire", "-n", "deploy"]));
    out.assert_code(75, "busy without +time");
    let out = run(as_user().args(["release", "--json", "deploy", &token]));
    out.assert_code(0, "release");
    let released_on = out.json()["released_on"].clone();
    let released_on = released_on.as_array().unwrap();
    // Nothing is left where the release was confirmed: no record, no line.
    // A server that had not been handed the release when the majority
    // confirmed it (its connection's AUTH still unanswered on a loaded
    // machine) keeps the lock, and only the lock, until its TTL, as a late
    // server does (round.rs).
    let after = cluster.dbsizes();
    for (i, server) in cluster.servers.iter().enumerate() {
        let port = format!(":{}", server.port());
        let confirmed = released_on
            .iter()
            .any(|url| url.as_str().unwrap().ends_with(&port));
        let left = server.get(b"deploy");
        let lock_left = !confirmed && left.as_deref() == Some(token.as_bytes());
        assert_eq!(
            after[i],
            before[i] + i64::from(lock_left),
            "server {i}: {:?}, released on {released_on:?}",
            left.map(String::from_utf8)
        );
    }
}

#[test]
fn a_cluster_node_is_refused_unless_the_name_has_a_hash_tag() {
    let dir = temp_dir("holder-cluster");
    let config = dir.path().join("nodes.conf");
    let server = crate::support::RedisServer::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        config.to_str().unwrap(),
    ]);
    let _: () = redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query(&mut server.client())
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut server.client())
            .unwrap();
        info.contains("cluster_state:ok")
    }));
    let redlock = || {
        let mut cmd = crate::support::redlock();
        cmd.args(["-s", &server.url()]);
        cmd
    };
    let (out, took) = crate::support::timed(redlock().args(["acquire", "-w", "5s", "deploy"]));
    out.assert_code(78, "a lock and its record in two slots");
    assert_stderr_says(
        &out,
        &["cluster-mode endpoint"],
        "a lock and its record in two slots",
    );
    assert!(
        took < Duration::from_secs(3),
        "refused at once, not retried: {took:?}"
    );
    let out = run(redlock().args(["acquire", "-n", "{deploy}"]));
    out.assert_code(0, "a hash tag keeps both in one slot");
    let out = run(redlock().args(["status", "{deploy}"]));
    out.assert_code(0, "status");
    assert!(out.stdout.contains("is held by"), "{}", out.stdout);
}
