//! What a hostile server says about a lock is checked before it is shown.

use crate::support::fake_server::FakeServer;
use crate::support::{redlock, run, with_peak_rss};

/// A PTTL below -2 means nothing in Redis: a reply that carries one is
/// malformed, and the server counts as failed rather than showing a lock
/// that "expires in 0s" and "never expires" at once.
#[test]
fn a_pttl_no_redis_gives_is_a_malformed_reply() {
    let pttl = -(1i64 << 62);
    let reply = format!(
        "*5\r\n*5\r\n$6\r\nstring\r\n$3\r\ntok\r\n:{pttl}\r\n$-1\r\n:5000\r\n$-1\r\n:0\r\n$-1\r\n$-1\r\n"
    );
    let server = FakeServer::answering(reply);
    let out = run(redlock()
        .env("REDLOCK_SERVERS", server.url())
        .env("REDLOCK_RESTART_GUARD", "0")
        .args(["status", "x"]));
    out.assert_code(69, "the only server's reply is malformed");
    assert!(!out.stdout.contains("expires in 0s"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("returned a malformed reply: the key's PTTL"),
        "{}",
        out.stdout
    );
}

/// A reply of 100 MB from something that is not Redis: redlock stops
/// reading it past 64 MiB, at once, instead of reading it into memory
/// until the server timeout.
#[test]
fn a_huge_reply_is_refused_past_the_cap_not_read_into_memory() {
    let size = 100 << 20;
    let mut reply = format!("${size}\r\n").into_bytes();
    reply.resize(reply.len() + size, b'x');
    let server = FakeServer::answering(reply);
    let mut cmd = redlock();
    cmd.env("REDLOCK_SERVERS", server.url())
        .env("REDLOCK_RESTART_GUARD", "0")
        .args(["--server-timeout", "5s", "status", "x"]);
    let started = std::time::Instant::now();
    let (out, peak) = with_peak_rss(&cmd);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "read until the timeout: {:?}",
        started.elapsed()
    );
    assert!(
        out.stdout.contains("a reply larger than 64 MiB"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(peak < 96 * 1024, "peak RSS {peak} KiB");
}
