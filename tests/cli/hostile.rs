//! Hostile servers and holders: a SCAN that never ends or never stops
//! sending keys, a value of megabytes at a lock's key, a flood of messages
//! on a lock's release channel, absurd durations, a glob that would run into
//! redlock's own key suffix, and `rediss://` to a plaintext port. Real
//! servers wherever a real Redis can do it; the fake server only for replies
//! no Redis gives.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::fake_server::FakeServer;
use crate::support::{acquire, run, timed, Cluster, RedisServer};

#[test]
fn absurd_server_timeouts_are_refused_not_a_panic() {
    let cluster = Cluster::start(1);
    let token = acquire(&cluster, "t", &[]);
    let huge = "3074457345618258688";
    for args in [
        &["status", "t"][..],
        &["list"],
        &["release", "t", &token],
        &["release", "--force", "t"],
    ] {
        let out = run(cluster
            .redlock()
            .args(["--server-timeout", huge])
            .args(args));
        out.assert_code(64, &format!("{args:?}"));
        assert_eq!(
            out.stderr, "redlock: --server-timeout must be at most 1h\n",
            "{args:?}"
        );
    }
    let out = run(cluster
        .redlock()
        .args(["--restart-guard", "400d", "status", "t"]));
    out.assert_code(64, "a 400-day restart guard");
}

#[test]
fn a_glob_that_would_run_into_the_record_suffix_is_refused() {
    let cluster = Cluster::start(1);
    acquire(&cluster, "deploy", &[]);
    for pattern in ["*[", "dep\\"] {
        let out = run(cluster.redlock().args(["list", pattern]));
        out.assert_code(64, pattern);
        assert!(out.stdout.is_empty(), "{pattern}: {}", out.stdout);
        assert!(out.stderr.contains("PATTERN"), "{}", out.stderr);
    }
    let out = run(cluster.redlock().args(["list", "--json", "d[e]p*"]));
    out.assert_code(0, "a well-formed class");
    assert_eq!(out.json()["locks"][0]["name"], "deploy");
}
