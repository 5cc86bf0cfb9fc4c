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

/// A SCAN reply: cursor 1 (never done) and `keys`.
fn endless_scan_page(keys: &[&[u8]]) -> Vec<u8> {
    let mut reply = format!("*2\r\n$1\r\n1\r\n*{}\r\n", keys.len()).into_bytes();
    for key in keys {
        reply.extend(format!("${}\r\n", key.len()).bytes());
        reply.extend_from_slice(key);
        reply.extend(b"\r\n");
    }
    reply
}

#[test]
fn list_gives_up_on_a_scan_cursor_that_never_ends() {
    let server = FakeServer::answering(endless_scan_page(&[]));
    let (out, took) = timed(
        crate::support::redlock()
            .env("REDLOCK_TEST_LIST_DEADLINE_MS", "500")
            .args(["-s", &server.url(), "list"]),
    );
    out.assert_code(69, "an endless SCAN");
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    assert!(
        out.stderr.contains(&port),
        "names the server: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("SCAN and reads did not end within 500ms"),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn list_refuses_a_scan_that_never_stops_sending_keys() {
    let key = b"k\0holder".as_slice();
    let server = FakeServer::answering(endless_scan_page(&[key; 100]));
    let out = run(crate::support::redlock()
        .env("REDLOCK_TEST_LIST_MOST_KEYS", "1000")
        .args(["-s", &server.url(), "list"]));
    out.assert_code(69, "a SCAN that keeps sending keys");
    assert!(
        out.stderr.contains("returned more than 1000 keys"),
        "{}",
        out.stderr
    );
}

/// 50 MB: far more than a server timeout's worth of bytes to move.
const HUGE: usize = 50 << 20;

#[test]
fn a_huge_value_at_a_lock_is_busy_not_a_timeout() {
    let cluster = Cluster::start(1);
    cluster[0].set(b"big", &vec![b'v'; HUGE]);
    let (out, took) = timed(cluster.redlock().args(["acquire", "-n", "big"]));
    out.assert_code(75, "acquire -n on a 50 MB value");
    assert!(
        out.stderr.contains("a non-redlock value (a string)"),
        "{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let token = "0123456789abcdef0123456789abcdef";
    let out = run(cluster.redlock().args(["release", "big", token]));
    assert_ne!(
        out.code(),
        69,
        "release compares without moving the value: {}",
        out.stderr
    );
    let out = run(cluster.redlock().args(["status", "big"]));
    assert_ne!(out.code(), 69, "status: {}", out.stderr);
    assert!(out.stdout.len() < 4096, "{} bytes shown", out.stdout.len());
}

#[test]
fn a_huge_holder_record_is_ignored_not_a_timeout() {
    let cluster = Cluster::start(1);
    acquire(&cluster, "rec", &["--ttl", "1h"]);
    cluster[0].set(b"rec\0holder", &vec![b'r'; HUGE]);
    let out = run(cluster.redlock().args(["status", "rec"]));
    out.assert_code(0, "status with a 50 MB record");
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list with a 50 MB record");
}

#[test]
fn a_publish_flood_costs_a_waiter_a_bounded_rate_of_attempts() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "flooded", &["--ttl", "1m"]);
    let stop = Arc::new(AtomicBool::new(false));
    // One flooder over the three servers, pausing 1ms a round so that the
    // flood (tens of thousands of messages a second) leaves the machine's
    // cores to the other tests.
    let mut clients: Vec<_> = cluster.servers.iter().map(|s| s.client()).collect();
    let flooding = Arc::clone(&stop);
    let flooder = thread::spawn(move || {
        let mut published = 0u64;
        while !flooding.load(Ordering::SeqCst) {
            for client in &mut clients {
                let mut pipe = redis::pipe();
                for _ in 0..20 {
                    pipe.cmd("PUBLISH")
                        .arg(b"flooded\0released")
                        .arg("")
                        .ignore();
                }
                pipe.query::<()>(client).unwrap();
                published += 20;
            }
            thread::sleep(Duration::from_millis(1));
        }
        published
    });
    let before: Vec<u64> = cluster
        .servers
        .iter()
        .map(RedisServer::script_calls)
        .collect();
    let started = Instant::now();
    let out = run(cluster.redlock().args(["acquire", "-w", "3s", "flooded"]));
    let waited = started.elapsed();
    let after: Vec<u64> = cluster
        .servers
        .iter()
        .map(RedisServer::script_calls)
        .collect();
    stop.store(true, Ordering::SeqCst);
    let published = flooder.join().unwrap();
    out.assert_code(75, "the lock stays busy");
    assert!(published > 1000, "the flood ran: {published} messages");
    // About 15 polls and at most 4 + 30 wake-ups in 3 s, each one script
    // call per server; the flood used to buy well over a thousand.
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(
            a - b <= 150,
            "server {i}: {} script calls in {waited:?} under {published} messages",
            a - b
        );
    }
}

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
            out.stderr,
            format!(
                "redlock: --server-timeout must be at most 100 days; see 'redlock {} --help'\n",
                args[0]
            ),
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

#[test]
fn rediss_to_a_plaintext_port_is_a_configuration_error_with_a_hint() {
    let server = RedisServer::start();
    let url = format!("rediss://127.0.0.1:{}", server.port());
    // Waiting for ever: only a refusal ends it.
    let (out, took) = timed(crate::support::redlock().args(["-s", &url, "acquire", "x"]));
    out.assert_code(78, "rediss:// to a plaintext port");
    assert!(out.stderr.contains("use redis://"), "{}", out.stderr);
    assert!(took < Duration::from_secs(10), "{took:?}");
}
