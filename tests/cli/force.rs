//! `release --force` breaks locks, and only locks: application data under
//! the same name, and a holder that took the lock since it was looked at,
//! are left alone.

use crate::support::assertions::assert_stderr_says;
use crate::support::{acquire, run, Cluster};

#[test]
fn a_key_without_expiry_is_application_data_and_is_left_alone() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        let _: () = redis::cmd("SET")
            .arg("user:42:balance")
            .arg("1000")
            .query(&mut server.client())
            .unwrap();
    }
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "user:42:balance"]));
    out.assert_code(64, "not a lock");
    assert_stderr_says(
        &out,
        &[
            "\"user:42:balance\" is not a lock: a string without expiry on 3 of 3 servers, \
             left alone (release --force deletes only locks, which always expire; --any-key \
             breaks it anyway)",
        ],
        "not a lock",
    );
    for server in &cluster.servers {
        assert_eq!(
            server.get(b"user:42:balance").as_deref(),
            Some(&b"1000"[..])
        );
    }
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--any-key", "user:42:balance"]));
    out.assert_code(0, "--any-key breaks it");
    assert_eq!(cluster[0].get(b"user:42:balance"), None);
}

#[test]
fn if_token_breaks_the_dead_holder_and_never_the_one_that_came_after() {
    let cluster = Cluster::start(3);
    let dead = acquire(&cluster, "handover", &[]);
    let out = run(cluster.redlock().args([
        "release",
        "--force",
        "--if-token",
        "not-the-holder",
        "handover",
    ]));
    out.assert_code(79, "another token holds it");
    assert_stderr_says(
        &out,
        &["left \"handover\" alone: another token holds it now"],
        "another token holds it",
    );
    run(cluster.redlock().args(["status", "handover"])).assert_code(0, "still held");
    let out = run(cluster.redlock().args([
        "release",
        "--force",
        "--json",
        "--if-token",
        &dead,
        "handover",
    ]));
    out.assert_code(0, "the token given holds it");
    assert_eq!(out.json()["released_count"], 3);
    run(cluster.redlock().args(["status", "handover"])).assert_code(1, "free");
    let out = run(cluster
        .redlock()
        .args(["release", "--if-token", &dead, "handover", &dead]));
    out.assert_code(64, "--if-token needs --force");
}

#[test]
fn with_no_server_answering_nothing_is_called_free() {
    let mut cluster = Cluster::start(1);
    cluster[0].kill();
    let out = run(cluster.redlock().args(["release", "--force", "gone"]));
    out.assert_code(69, "no quorum");
    assert!(!out.stderr.contains("free"), "{}", out.stderr);
    assert!(
        out.stderr.contains("no quorum for lock \"gone\""),
        "{}",
        out.stderr
    );
}

/// Who broke a lock stays beside it for what was left of its TTL: `status`
/// says so, and so does the `exec` whose lock it was.
#[test]
fn a_broken_lock_says_who_broke_it() {
    let cluster = Cluster::start(3);
    let holder = crate::support::Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "3s", "victim", "--", "sleep", "30"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    );
    let held = crate::support::wait_until(std::time::Duration::from_secs(10), || {
        run(cluster.redlock().args(["status", "-q", "victim"])).code() == 0
    });
    assert!(held, "exec never held the lock");
    let out = run(cluster
        .redlock()
        .env("USER", "ops")
        .args(["release", "--force", "victim"]));
    out.assert_code(0, "broken");
    let status = run(cluster.redlock().args(["status", "victim"]));
    status.assert_code(1, "free");
    assert!(
        status.stdout.contains("broken by ops@") && status.stdout.contains("with release --force"),
        "{}",
        status.stdout
    );
    let json = run(cluster.redlock().args(["status", "--json", "victim"])).json();
    assert!(
        json["broken"]["by"].as_str().unwrap().starts_with("ops@"),
        "{json}"
    );
    let out = holder.finish(std::time::Duration::from_secs(20));
    out.assert_code(79, "exec lost its lock");
    assert_stderr_says(
        &out,
        &["; broken by ops@", "the command was stopped"],
        "exec lost its lock",
    );
}
