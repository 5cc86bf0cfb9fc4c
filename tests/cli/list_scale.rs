//! `redlock list` at scale: tens of thousands of locks, seeded straight into
//! real servers in the layout redlock writes (the token at the name, the
//! holder record at `NAME\0holder`), are listed in linear time.

use std::time::{Duration, Instant};

use crate::support::{run, with_peak_rss, Cluster};

/// Writes `count` locks named `scale-00000`… on `cluster`, each held by a
/// redlock holder record, with one Lua call per server.
fn seed_locks(cluster: &Cluster, count: usize) {
    const SEED: &str = r#"
        for i = 1, tonumber(ARGV[1]) do
          local name = string.format("scale-%05d", i)
          local token = "token-" .. i
          redis.call("SET", name, token, "PX", 600000)
          redis.call("SET", name .. "\0holder",
            '1 {"token":"' .. token .. '","host":"h","pid":' .. i .. ',"user":"u"}',
            "PX", 600000)
        end
        return 1
    "#;
    for server in &cluster.servers {
        let _: i64 = redis::cmd("EVAL")
            .arg(SEED)
            .arg(0)
            .arg(count)
            .query(&mut server.client())
            .unwrap();
    }
}

#[test]
fn twenty_thousand_locks_are_listed_in_linear_time() {
    const MANY: usize = 20_000;
    let cluster = Cluster::start(3);
    seed_locks(&cluster, MANY);
    let started = Instant::now();
    let out = run(cluster.redlock().args(["list", "--json"]));
    let took = started.elapsed();
    out.assert_code(0, "20k locks");
    let json = out.json();
    let locks = json["locks"].as_array().expect("locks");
    assert_eq!(locks.len(), MANY);
    assert_eq!(locks[12_344]["name"], "scale-12345");
    assert_eq!(locks[12_344]["holder"]["pid"], 12_345);
    // Generous for a debug build on a loaded machine (about 2 s when
    // linear); the quadratic listing took minutes here.
    assert!(
        took < Duration::from_secs(25),
        "20k locks listed in {took:?}"
    );
}

/// A listing is written a batch at a time as it is read: its memory holds
/// the names and one batch, not every lock with every server's view (20k
/// locks took 62 MiB in a debug build before, about 18 MiB now).
#[test]
fn a_long_listing_is_written_as_it_is_read_in_bounded_memory() {
    const MANY: usize = 20_000;
    let cluster = Cluster::start(3);
    seed_locks(&cluster, MANY);
    let mut cmd = cluster.redlock();
    cmd.args(["list", "--json"]);
    let (out, peak) = with_peak_rss(&cmd);
    out.assert_code(0, "list --json");
    assert_eq!(out.json()["locks"].as_array().map(Vec::len), Some(MANY));
    assert!(peak < 40 * 1024, "peak RSS {peak} KiB for {MANY} locks");
}
