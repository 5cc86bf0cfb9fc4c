//! `redlock release` and `redlock extend`: 0 when the token holds a
//! majority, 79 when it provably does not (and then nothing is changed or
//! re-created), 69 when too few servers answer; tokens from the argument or
//! `REDLOCK_TOKEN`; the lock life cycle with a minority of servers dead.

use std::time::Duration;

use crate::support::assertions::{assert_gone_everywhere, assert_held_everywhere, assert_no_panic};
use crate::support::{acquire, port_of, run, timed, wait_until, Cluster, RedisServer};

const WRONG: &str = "00000000000000000000000000000000";

/// How many running servers have a PTTL for `key` that satisfies `ok`.
fn count(cluster: &Cluster, key: &[u8], ok: impl Fn(i64) -> bool) -> usize {
    pttls(cluster, key).into_iter().filter(|&p| ok(p)).count()
}

/// Makes `server` busy (unable to answer) for 100ms with `DEBUG SLEEP`; the
/// call has started when this returns. Join the handle to wait for the end.
fn busy_for_100ms(server: &RedisServer) -> std::thread::JoinHandle<()> {
    let mut con = server.client();
    let mut probe = server.client();
    let handle = std::thread::spawn(move || {
        redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg("0.1")
            .query::<()>(&mut con)
            .unwrap()
    });
    // The server is asleep once a PING on another connection goes unanswered.
    probe
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let asleep = wait_until(Duration::from_secs(2), || {
        redis::cmd("PING").query::<String>(&mut probe).is_err()
    });
    assert!(asleep, "DEBUG SLEEP did not start");
    handle
}

/// PTTL on every running server.
fn pttls(cluster: &Cluster, key: &[u8]) -> Vec<i64> {
    cluster
        .servers
        .iter()
        .filter(|s| s.is_running() && !s.is_paused())
        .map(|s| s.pttl(key))
        .collect()
}

// ---------------------------------------------------------------------------
// release
// ---------------------------------------------------------------------------

#[test]
fn release_deletes_the_key_everywhere_and_a_second_release_is_79() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    let out = run(cluster.redlock().args(["release", "job", &token]));
    out.assert_code(0, "release");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    assert_gone_everywhere(&cluster, b"job");

    let out = run(cluster.redlock().args(["release", "job", &token]));
    out.assert_code(79, "second release");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.starts_with("redlock: "), "{}", out.stderr);
    let out = run(cluster.redlock().args(["release", "-q", "job", &token]));
    out.assert_code(79, "-q second release");
    assert_eq!(out.stderr, "", "-q silences 'not held'");

    // The lock is free for the next owner.
    acquire(&cluster, "job", &[]);
}

#[test]
fn release_with_a_wrong_token_is_79_and_leaves_the_lock_alone() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    let before = pttls(&cluster, b"job");
    let out = run(cluster.redlock().args(["release", "job", WRONG]));
    out.assert_code(79, "wrong token");
    assert!(out.stderr.contains("not held"), "{}", out.stderr);
    assert_held_everywhere(&cluster, b"job", &token);
    for (before, after) in before.iter().zip(pttls(&cluster, b"job")) {
        assert!(
            after <= *before && after > before - 2_000,
            "{before} -> {after}"
        );
    }
    // A prefix of the real token is not the token.
    let out = run(cluster.redlock().args(["release", "job", &token[..31]]));
    out.assert_code(79, "truncated token");
    assert_held_everywhere(&cluster, b"job", &token);
}

#[test]
fn release_of_a_foreign_value_is_79_and_keeps_it() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.set(b"theirs", b"their-token");
    }
    let out = run(cluster.redlock().args(["release", "theirs", "other-token"]));
    out.assert_code(79, "not our value");
    assert_eq!(
        cluster.get_all(b"theirs"),
        vec![Some(b"their-token".to_vec()); 3]
    );
    // Their own token does release it: the layout is the shared one.
    run(cluster.redlock().args(["release", "theirs", "their-token"])).assert_code(0, "theirs");
    assert_gone_everywhere(&cluster, b"theirs");
}

#[test]
fn release_reads_the_token_from_redlock_token() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TOKEN", WRONG)
        .args(["release", "job"]));
    out.assert_code(79, "wrong REDLOCK_TOKEN");
    assert_held_everywhere(&cluster, b"job", &token);
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TOKEN", &token)
        .args(["release", "job"]));
    out.assert_code(0, "REDLOCK_TOKEN");
    assert_gone_everywhere(&cluster, b"job");
}

#[test]
fn an_argument_token_wins_over_redlock_token() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    run(cluster
        .redlock()
        .env("REDLOCK_TOKEN", WRONG)
        .args(["release", "job", &token]))
    .assert_code(0, "argument over environment");
    assert_gone_everywhere(&cluster, b"job");
}

#[test]
fn release_json_reports_the_servers() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    let out = run(cluster.redlock().args(["release", "--json", "job", &token]));
    out.assert_code(0, "release --json");
    let json = out.json();
    assert_eq!(json["name"], "job");
    assert_eq!(json["released"], true);
    let ports = |list: &serde_json::Value| -> Vec<String> {
        let mut ports: Vec<String> = list
            .as_array()
            .expect("released_on is a list")
            .iter()
            .map(|s| s.as_str().unwrap().rsplit(':').next().unwrap().to_owned())
            .collect();
        ports.sort();
        ports
    };
    let mut every: Vec<String> = (0..3).map(|i| cluster[i].port().to_string()).collect();
    every.sort();
    // The servers that confirmed before release returned: a majority at
    // least. The delete was written to every server all the same, so the
    // key is gone from each of them right after.
    let released_on = ports(&json["released_on"]);
    assert!(released_on.len() >= 2, "{released_on:?}");
    assert!(released_on.iter().all(|port| every.contains(port)));
    assert_eq!(json["released_count"], released_on.len());
    assert_eq!(json["servers"], 3);
    assert_gone_everywhere(&cluster, b"job");

    let out = run(cluster.redlock().args(["release", "--json", "job", &token]));
    out.assert_code(79, "release --json not held");
    let json = out.json();
    assert_eq!(json["error"], "not_held");
}

#[test]
fn release_of_a_token_left_only_on_a_minority_is_79_and_cleans_it_up() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    // Two servers lost the key (expired, restarted, flushed).
    for i in [0, 1] {
        redis::cmd("DEL")
            .arg("job")
            .query::<i64>(&mut cluster[i].client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["release", "job", &token]));
    out.assert_code(79, "held on 1 of 3 only");
    assert_gone_everywhere(&cluster, b"job");
}

#[test]
fn release_with_a_majority_down_is_69() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    cluster[0].kill();
    cluster[1].pause();
    let (out, took) = timed(cluster.redlock().args(["release", "job", &token]));
    out.assert_code(69, "one killed, one paused");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    for i in [0, 1] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }
    // The server that answered still dropped our key.
    assert_eq!(cluster[2].get(b"job"), None);
}

// ---------------------------------------------------------------------------
// extend
// ---------------------------------------------------------------------------

#[test]
fn extend_pushes_the_expiry_out() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &["--ttl", "2s"]);
    for pttl in pttls(&cluster, b"job") {
        assert!(pttl <= 2_000, "{pttl}");
    }
    let out = run(cluster
        .redlock()
        .args(["extend", "job", &token, "--ttl", "60s"]));
    out.assert_code(0, "extend");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    // A quorum at least; every server is `extend_reaches_a_server_that_answers_late`.
    let extended = count(&cluster, b"job", |pttl| pttl > 50_000 && pttl <= 60_000);
    assert!(
        extended >= 2,
        "PTTLs after extend --ttl 60s: {:?}",
        pttls(&cluster, b"job")
    );
    assert_held_everywhere(&cluster, b"job", &token);

    // extend never shortens: a shorter --ttl leaves the later expiry alone,
    // so that a command under `exec` cannot cut short its supervisor's lease.
    run(cluster
        .redlock()
        .args(["extend", "job", &token, "--ttl", "5s"]))
    .assert_code(0, "5s");
    let kept = count(&cluster, b"job", |pttl| pttl > 50_000);
    assert_eq!(
        kept,
        extended,
        "PTTLs after extend --ttl 5s: {:?}",
        pttls(&cluster, b"job")
    );
}

#[test]
fn extend_reaches_a_server_that_answers_late() {
    // Server 2 is busy for 100ms (DEBUG SLEEP), well within the 1s server
    // timeout, while `extend` runs; it still holds the token. extend must set
    // the new expiry there too ("on every server where it still holds
    // TOKEN"), as `acquire`'s SET still lands on a late server and `release`
    // waits for it: otherwise the lock is extended on a bare majority and is
    // lost as soon as one of those servers fails.
    //
    // extend decides at quorum and may exit before the late server answers,
    // so the request it sent must be complete on its own: an EVALSHA answered
    // NOSCRIPT by a server that never ran the script would need an EVAL
    // fallback that an exited process never sends. (That is why a script is
    // sent with EVAL the first time on a connection.)
    let cluster = Cluster::start_with(3, &["--enable-debug-command", "yes"]);
    let token = acquire(&cluster, "job", &["--ttl", "5s"]);
    let sleeper = busy_for_100ms(&cluster[2]);
    let out = run(cluster.redlock().args([
        "extend",
        "job",
        &token,
        "--ttl",
        "60s",
        "--server-timeout",
        "1s",
    ]));
    out.assert_code(0, "extend with one slow server");
    sleeper.join().unwrap();
    assert_eq!(cluster[2].get(b"job"), Some(token.clone().into_bytes()));
    let extended = wait_until(Duration::from_secs(1), || cluster[2].pttl(b"job") > 50_000);
    assert!(
        extended,
        "the slow server kept the old expiry: PTTLs {:?}",
        pttls(&cluster, b"job")
    );
}

#[test]
fn release_reaches_a_server_that_answers_late() {
    let cluster = Cluster::start_with(3, &["--enable-debug-command", "yes"]);
    let token = acquire(&cluster, "job", &[]);
    let sleeper = busy_for_100ms(&cluster[2]);
    let out = run(cluster
        .redlock()
        .args(["release", "job", &token, "--server-timeout", "1s"]));
    out.assert_code(0, "release with one slow server");
    sleeper.join().unwrap();
    assert_gone_everywhere(&cluster, b"job");
}

#[test]
fn extend_defaults_to_30s_and_reads_redlock_token() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &["--ttl", "2s"]);
    run(cluster
        .redlock()
        .env("REDLOCK_TOKEN", &token)
        .args(["extend", "job"]))
    .assert_code(0, "extend via REDLOCK_TOKEN");
    let extended = count(&cluster, b"job", |pttl| pttl > 25_000 && pttl <= 30_000);
    assert!(extended >= 2, "PTTLs {:?}", pttls(&cluster, b"job"));
}

#[test]
fn extend_json_reports_the_new_lease() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    let out = run(cluster
        .redlock()
        .args(["extend", "--json", "--ttl", "45s", "job", &token]));
    out.assert_code(0, "extend --json");
    let json = out.json();
    assert_eq!(json["name"], "job");
    assert_eq!(json["token"], token.as_str());
    assert_eq!(json["ttl_ms"], 45_000);
    let validity = json["validity_ms"]
        .as_i64()
        .expect("validity_ms is an integer");
    assert!((30_000..45_000).contains(&validity), "{validity}");
    let held_on = json["held_on"].as_array().expect("held_on is an array");
    assert!(held_on.len() >= 2, "{json}");
    assert_eq!(json["attempts"], 1);
}

#[test]
fn extend_with_a_wrong_token_is_79_and_changes_nothing() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &["--ttl", "10s"]);
    let out = run(cluster
        .redlock()
        .args(["extend", "job", WRONG, "--ttl", "120s"]));
    out.assert_code(79, "wrong token");
    assert!(out.stderr.contains("not held"), "{}", out.stderr);
    assert_held_everywhere(&cluster, b"job", &token);
    for pttl in pttls(&cluster, b"job") {
        assert!(
            pttl <= 10_000,
            "a wrong token extended the lock: PTTL {pttl}"
        );
    }
}

#[test]
fn an_expired_token_cannot_be_released_or_extended_and_is_not_recreated() {
    let cluster = Cluster::start(3);
    let token = acquire(
        &cluster,
        "brief",
        &["--ttl", "400ms", "--server-timeout", "120ms"],
    );
    assert!(
        crate::support::wait_until(Duration::from_secs(3), || cluster
            .get_all(b"brief")
            .iter()
            .all(Option::is_none)),
        "the 400ms lock did not expire"
    );
    let out = run(cluster
        .redlock()
        .args(["extend", "brief", &token, "--ttl", "60s"]));
    out.assert_code(79, "extend an expired lock");
    assert_gone_everywhere(&cluster, b"brief");
    let out = run(cluster.redlock().args(["release", "brief", &token]));
    out.assert_code(79, "release an expired lock");
    assert_gone_everywhere(&cluster, b"brief");
}

#[test]
fn extend_does_not_recreate_the_key_on_a_server_that_lost_it() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &["--ttl", "10s"]);
    redis::cmd("DEL")
        .arg("job")
        .query::<i64>(&mut cluster[1].client())
        .unwrap();
    let out = run(cluster
        .redlock()
        .args(["extend", "job", &token, "--ttl", "60s"]));
    out.assert_code(0, "still held on 2 of 3");
    assert_eq!(cluster[1].get(b"job"), None, "extend re-created a lost key");
    assert!(cluster[0].pttl(b"job") > 50_000);
    assert!(cluster[2].pttl(b"job") > 50_000);

    // Lost on a second server too: the token no longer holds a majority.
    redis::cmd("DEL")
        .arg("job")
        .query::<i64>(&mut cluster[2].client())
        .unwrap();
    let out = run(cluster.redlock().args(["extend", "job", &token]));
    out.assert_code(79, "held on 1 of 3");
    assert_eq!(cluster.get_all(b"job")[1..], [None, None]);
}

#[test]
fn extend_of_a_foreign_value_or_type_is_79() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        redis::cmd("HSET")
            .arg("h")
            .arg("f")
            .arg("v")
            .query::<i64>(&mut server.client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["extend", "h", WRONG]));
    out.assert_code(79, "a hash is not our lock");
    assert_no_panic(&out, "hash");
    for server in &cluster.servers {
        assert_eq!(server.pttl(b"h"), -1, "the hash got an expiry");
    }
    let out = run(cluster.redlock().args(["release", "h", WRONG]));
    out.assert_code(79, "release of a hash");
    let len: i64 = redis::cmd("HLEN")
        .arg("h")
        .query(&mut cluster[0].client())
        .unwrap();
    assert_eq!(len, 1);
}

#[test]
fn extend_with_a_majority_paused_is_69() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &[]);
    cluster[0].pause();
    cluster[2].pause();
    let (out, took) = timed(cluster.redlock().args(["extend", "job", &token]));
    out.assert_code(69, "2 of 3 paused");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    for i in [0, 2] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }
    // Unknown is not "not held": once the servers are back, the token still
    // holds the lock.
    cluster[0].resume();
    cluster[2].resume();
    run(cluster.redlock().args(["extend", "job", &token])).assert_code(0, "after resume");
}

#[test]
fn extend_with_one_paused_server_returns_at_quorum() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "job", &["--ttl", "10s"]);
    cluster[1].pause();
    let (out, took) = timed(cluster.redlock().args([
        "extend",
        "job",
        &token,
        "--ttl",
        "60s",
        "--server-timeout",
        "2s",
    ]));
    out.assert_code(0, "extend with one paused");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(cluster[0].pttl(b"job") > 50_000);
    assert!(cluster[2].pttl(b"job") > 50_000);
}

// ---------------------------------------------------------------------------
// The whole life cycle with a minority of servers killed
// ---------------------------------------------------------------------------

fn life_cycle_with_killed(n: usize, killed: &[usize]) {
    let mut cluster = Cluster::start(n);
    for &i in killed {
        cluster[i].kill();
    }
    let context = format!("{} of {n} killed", killed.len());
    let token = acquire(&cluster, "cycle", &["--ttl", "5s"]);
    assert_held_everywhere(&cluster, b"cycle", &token);

    run(cluster.redlock().args(["acquire", "-n", "cycle"])).assert_code(75, &context);

    let out = run(cluster.redlock().args(["status", "cycle"]));
    out.assert_code(0, &format!("status, {context}"));
    assert!(out.stdout.contains(&token));

    run(cluster
        .redlock()
        .args(["extend", "cycle", &token, "--ttl", "60s"]))
    .assert_code(0, &format!("extend, {context}"));
    for pttl in pttls(&cluster, b"cycle") {
        assert!(pttl > 50_000, "PTTL {pttl} after extend, {context}");
    }

    run(cluster.redlock().args(["release", "cycle", &token]))
        .assert_code(0, &format!("release, {context}"));
    assert_gone_everywhere(&cluster, b"cycle");
    run(cluster.redlock().args(["status", "cycle"])).assert_code(1, &context);
    run(cluster.redlock().args(["release", "cycle", &token])).assert_code(79, &context);
}

#[test]
fn life_cycle_with_one_of_three_killed() {
    life_cycle_with_killed(3, &[0]);
}

#[test]
fn life_cycle_with_two_of_five_killed() {
    life_cycle_with_killed(5, &[1, 4]);
}

#[test]
fn life_cycle_with_two_of_three_paused_recovers_after_resume() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "cycle", &[]);
    cluster[1].pause();
    cluster[2].pause();
    run(cluster.redlock().args(["status", "cycle"])).assert_code(69, "status");
    run(cluster.redlock().args(["acquire", "-n", "cycle"])).assert_code(69, "acquire");
    cluster[1].resume();
    cluster[2].resume();
    run(cluster.redlock().args(["status", "cycle"])).assert_code(0, "status after resume");
    run(cluster.redlock().args(["release", "cycle", &token])).assert_code(0, "release");
    assert_gone_everywhere(&cluster, b"cycle");
}
