//! What `release --force` takes for a lock without `--any-key`
//! (src/lock/scripts/force.lua): a string that expires and is redlock's,
//! by its value (a redlock token: 32 lowercase hex digits) or by the
//! holder record beside it. An application's string with a TTL under the
//! same name (`session:1`) was once deleted, since it expires and is short.

use crate::support::{acquire, run, Cluster};

/// `value` under `key` on every server, expiring in a minute.
fn set_everywhere(cluster: &Cluster, key: &[u8], value: &[u8]) {
    for server in &cluster.servers {
        server.set_px(key, value, 60_000);
    }
}

fn held_everywhere(cluster: &Cluster, key: &[u8], value: &[u8]) -> bool {
    cluster
        .get_all(key)
        .iter()
        .all(|held| held.as_deref() == Some(value))
}

fn gone_everywhere(cluster: &Cluster, key: &[u8]) -> bool {
    cluster.get_all(key).iter().all(Option::is_none)
}

#[test]
fn an_application_string_with_a_ttl_is_left_alone() {
    let cluster = Cluster::start(3);
    set_everywhere(&cluster, b"session:1", b"user=42;cart=7");
    let out = run(cluster.redlock().args(["release", "--force", "session:1"]));
    out.assert_code(64, "a session is no lock");
    assert!(
        out.stderr.contains(
            "\"session:1\" is not a lock: a string that is no redlock token, with no holder \
             record on 3 of 3 servers, left alone"
        ) && out.stderr.contains("--any-key breaks it anyway"),
        "{}",
        out.stderr
    );
    assert!(held_everywhere(&cluster, b"session:1", b"user=42;cart=7"));
    let json = run(cluster
        .redlock()
        .args(["release", "--force", "--json", "session:1"]))
    .json();
    assert_eq!(json["left_alone"][0]["reason"], "not_token", "{json}");
    assert_eq!(json["released_count"], 0, "{json}");
    assert!(held_everywhere(&cluster, b"session:1", b"user=42;cart=7"));
}

#[test]
fn a_redlock_lock_is_still_broken_with_or_without_its_record() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &["--ttl", "1h"]);
    let out = run(cluster.redlock().args(["release", "--force", "deploy"]));
    out.assert_code(0, "a redlock lock");
    assert!(gone_everywhere(&cluster, b"deploy"));
    // A redlock token whose record could not be written (an ACL without
    // TIME, a full server): its shape is enough.
    set_everywhere(&cluster, b"bare", b"0123456789abcdef0123456789abcdef");
    let out = run(cluster.redlock().args(["release", "--force", "bare"]));
    out.assert_code(0, "a redlock token without its record");
    assert!(gone_everywhere(&cluster, b"bare"));
}

#[test]
fn another_redlock_clients_lock_needs_any_key_or_its_token() {
    let cluster = Cluster::start(3);
    // redis-py's and node-redlock's tokens are UUIDs (or random base64).
    let uuid = b"3f1c2a9e-7b4d-4c2e-9a61-5d0b8e7f4a13";
    set_everywhere(&cluster, b"theirs", uuid);
    let out = run(cluster.redlock().args(["release", "--force", "theirs"]));
    out.assert_code(64, "not redlock's: --any-key is needed");
    assert!(held_everywhere(&cluster, b"theirs", uuid));
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--any-key", "theirs"]));
    out.assert_code(0, "--any-key breaks another client's lock");
    assert!(
        out.stderr.contains("another client (token 3f1c2a9e-"),
        "{}",
        out.stderr
    );
    assert!(gone_everywhere(&cluster, b"theirs"));
    // --if-token names the value: that is enough too.
    set_everywhere(&cluster, b"theirs", uuid);
    let out = run(cluster.redlock().args([
        "release",
        "--force",
        "--if-token",
        std::str::from_utf8(uuid).unwrap(),
        "theirs",
    ]));
    out.assert_code(0, "--if-token with their token");
    assert!(gone_everywhere(&cluster, b"theirs"));
}
