//! What a hostile server says about a lock is checked before it is shown.

use crate::support::fake_server::FakeServer;
use crate::support::{redlock, run};

/// A PTTL below -2 means nothing in Redis: a reply that carries one is
/// malformed, and the server counts as failed rather than showing a lock
/// that "expires in 0s" and "never expires" at once.
#[test]
fn a_pttl_no_redis_gives_is_a_malformed_reply() {
    let pttl = -(1i64 << 62);
    let reply = format!(
        "*4\r\n*5\r\n$6\r\nstring\r\n$3\r\ntok\r\n:{pttl}\r\n$-1\r\n:5000\r\n$-1\r\n:0\r\n$-1\r\n"
    );
    let server = FakeServer::answering(reply);
    let out = run(redlock()
        .env("REDLOCK_SERVERS", server.url())
        .env("REDLOCK_RESTART_GUARD", "0")
        .args(["status", "x"]));
    out.assert_code(69, "the only server's reply is malformed");
    assert!(!out.stdout.contains("expires in 0s"), "{}", out.stdout);
    assert!(
        out.stdout.contains("returned a malformed reply"),
        "{}",
        out.stdout
    );
}
