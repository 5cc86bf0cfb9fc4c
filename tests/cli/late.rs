//! Acquire and extend requests carry their deadline on each server's own
//! clock (lock/server_clock.rs), and a server answers "late" to one that
//! arrives past it. Before any reply told a server's clock, this host's
//! wall clock stands in for it; a caller whose clock is far behind is told
//! "late", learns the clock from that reply and sends once more. The
//! held-up requests themselves are played in network namespaces by the
//! torture scenario `late-requests`.

use std::time::Duration;

use crate::support::{faketime_library, run, Cluster};

/// A caller whose wall clock is an hour behind the servers' still takes a
/// free lock in one attempt (`-n`), and extends and releases it: each
/// first request is late, and its second try carries the clock the late
/// reply gave. A caller an hour ahead is not bounded too early either.
#[test]
fn a_caller_whose_clock_is_off_by_an_hour_takes_extends_and_releases() {
    let library = faketime_library()
        .expect("libfaketime is missing: scripts/test installs the faketime package");
    let cluster = Cluster::start(3);
    for shift in ["-1h", "+1h"] {
        let skewed = || {
            let mut cmd = cluster.redlock();
            cmd.env("LD_PRELOAD", &library)
                .env("FAKETIME", shift)
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            cmd
        };
        let taken = run(skewed().args(["acquire", "-n", "--ttl", "30s", "skewed"]));
        taken.assert_code(0, &format!("acquire with the clock {shift}"));
        let token = taken.stdout.trim().to_string();
        let everywhere = vec![Some(token.as_bytes().to_vec()); 3];
        assert_eq!(cluster.get_all(b"skewed"), everywhere, "clock {shift}");
        run(skewed().args(["extend", "--ttl", "60s", "skewed", &token]))
            .assert_code(0, &format!("extend with the clock {shift}"));
        assert!(cluster[0].pttl(b"skewed") > 30_000, "extended");
        run(skewed().args(["release", "skewed", &token]))
            .assert_code(0, &format!("release with the clock {shift}"));
    }
    // The exec path too: its keeper extends every 100ms of a 300ms TTL.
    let mut exec = cluster.redlock();
    exec.env("LD_PRELOAD", &library)
        .env("FAKETIME", "-1h")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .args(["exec", "-n", "--ttl", "300ms", "skewed", "--", "sleep", "1"]);
    let started = std::time::Instant::now();
    run(&mut exec).assert_code(0, "exec with the clock an hour behind");
    assert!(started.elapsed() >= Duration::from_secs(1));
}
