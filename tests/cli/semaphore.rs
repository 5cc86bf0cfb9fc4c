//! Counting semaphores (`--limit K`): K slots, `NAME#0` … `NAME#K-1`, each
//! a Redlock mutex; a client holds one. Real servers, real processes: the
//! occupancy of a critical section is counted under flock(1) by the
//! sections themselves.

use std::path::Path;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{run, temp_dir, wait_until, Cluster, Output, Running};

/// A poll delay no wake-up test waits out (debug builds only).
const SLOW_POLL_MS: &str = "5000";

/// `acquire -n --json --limit K NAME`'s object; panics unless it exits 0.
fn take(cluster: &Cluster, name: &str, limit: &str) -> serde_json::Value {
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--json", "--limit", limit, name]));
    out.assert_code(0, "acquire --limit");
    out.json()
}

/// The critical section: under flock, count this holder in, check that no
/// other holder has its slot, note the count and the slot; stay a while;
/// count it out.
const SECTION: &str = r#"d=$1
flock "$d/lock" sh -c '
  n=$(( $(cat "$0/count") + 1 )); echo $n > "$0/count"
  echo "in $n slot $REDLOCK_SLOT" >> "$0/seen"
  if [ -e "$0/slot.$REDLOCK_SLOT" ]; then echo "dup $REDLOCK_SLOT" >> "$0/seen"; fi
  : > "$0/slot.$REDLOCK_SLOT"' "$d"
sleep 0.1
flock "$d/lock" sh -c '
  n=$(( $(cat "$0/count") - 1 )); echo $n > "$0/count"
  rm -f "$0/slot.$REDLOCK_SLOT"' "$d"
"#;

/// One client: `rounds` times `exec --limit 3 -w` around [`SECTION`].
fn client(cluster: &Cluster, dir: &Path, rounds: usize) -> thread::JoinHandle<Vec<String>> {
    let mut cmd = cluster.redlock();
    cmd.args([
        "exec", "--limit", "3", "-w", "60s", "pool", "--", "sh", "-c",
    ])
    .arg(SECTION)
    .arg("section")
    .arg(dir);
    thread::spawn(move || {
        (0..rounds)
            .map(|_| {
                let out = run(&mut cmd);
                format!("{} {}", out.code(), out.stderr.trim())
            })
            .collect()
    })
}

#[test]
fn ten_clients_on_three_slots_never_overlap_more_than_three_and_all_finish() {
    let cluster = Cluster::start(3);
    let dir = temp_dir("semaphore-occupancy");
    std::fs::write(dir.path().join("count"), "0\n").unwrap();
    std::fs::write(dir.path().join("seen"), "").unwrap();
    let (clients, rounds) = (10, 3);
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|_| client(&cluster, dir.path(), rounds))
        .collect();
    let ends: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let took = started.elapsed();
    let failed: Vec<&String> = ends.iter().filter(|e| !e.starts_with("0 ")).collect();
    assert!(failed.is_empty(), "rounds that failed: {failed:?}");
    // 30 sections of 0.1s on 3 slots need 1s; the rest is processes.
    assert!(took < Duration::from_secs(40), "all rounds took {took:?}");
    let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
    assert!(!seen.contains("dup"), "two holders had one slot:\n{seen}");
    let entries: Vec<(u32, String)> = seen
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(words[0], "in", "{line}");
            (words[1].parse().unwrap(), words[3].to_owned())
        })
        .collect();
    assert_eq!(entries.len(), clients * rounds, "{seen}");
    let most = entries.iter().map(|(n, _)| *n).max().unwrap();
    assert!(most <= 3, "{most} holders at once:\n{seen}");
    assert_eq!(
        most, 3,
        "never 3 holders at once, so the test proves little:\n{seen}"
    );
    for (_, slot) in &entries {
        assert!(
            ["0", "1", "2"].contains(&slot.as_str()),
            "REDLOCK_SLOT {slot:?}"
        );
    }
}

#[test]
fn all_slots_busy_is_75_and_release_or_extend_find_the_slot_by_token() {
    let cluster = Cluster::start(3);
    let held: Vec<serde_json::Value> = (0..3).map(|_| take(&cluster, "jobs", "3")).collect();
    let mut slots: Vec<u64> = held.iter().map(|j| j["slot"].as_u64().unwrap()).collect();
    slots.sort_unstable();
    assert_eq!(slots, [0, 1, 2], "{held:?}");
    for lease in &held {
        let slot = lease["slot"].as_u64().unwrap();
        assert_eq!(lease["name"], format!("jobs#{slot}"), "{lease}");
        assert_eq!(
            (lease["semaphore"].as_str(), lease["limit"].as_u64()),
            (Some("jobs"), Some(3))
        );
        // The slot is a lock of its own, on every server.
        let token = lease["token"].as_str().unwrap().as_bytes().to_vec();
        let key = format!("jobs#{slot}");
        assert_eq!(cluster.get_all(key.as_bytes()), vec![Some(token); 3]);
    }
    let busy = run(cluster
        .redlock()
        .args(["acquire", "-n", "--limit", "3", "jobs"]));
    busy.assert_code(75, "a fourth holder");
    // It says that every slot is busy, then who holds the last one tried.
    assert!(
        busy.stdout.is_empty()
            && busy
                .stderr
                .starts_with("redlock: all 3 slots of \"jobs\" are busy; \"jobs#")
            && busy.stderr.contains("\" is held by "),
        "{}",
        busy.stderr
    );
    assert_eq!(busy.stderr.lines().count(), 1, "{}", busy.stderr);
    let json = run(cluster
        .redlock()
        .args(["acquire", "-n", "--json", "--limit", "3", "jobs"]));
    json.assert_code(75, "a fourth holder, in JSON");
    let message = json.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("all 3 slots of \"jobs\" are busy"),
        "{message}"
    );

    let token = |i: usize| held[i]["token"].as_str().unwrap().to_owned();
    let extended = run(cluster.redlock().args([
        "extend",
        "--json",
        "--limit",
        "3",
        "--ttl",
        "20s",
        "jobs",
        &token(1),
    ]));
    extended.assert_code(0, "extend --limit");
    assert_eq!(extended.json()["slot"], held[1]["slot"]);
    let released = run(cluster
        .redlock()
        .args(["release", "--limit", "3", "jobs", &token(1)]));
    released.assert_code(0, "release --limit");
    let again = run(cluster
        .redlock()
        .args(["release", "--limit", "3", "jobs", &token(1)]));
    again.assert_code(79, "the token holds no slot any more");
    let retaken = take(&cluster, "jobs", "3");
    assert_eq!(
        retaken["slot"], held[1]["slot"],
        "the freed slot is the free one"
    );
    // Or by the slot's own name, as any lock.
    let name = held[2]["name"].as_str().unwrap();
    run(cluster.redlock().args(["release", name, &token(2)])).assert_code(0, "release NAME#i");
}

#[test]
fn a_waiter_stands_in_every_line_and_is_woken_by_the_release_of_any_slot() {
    let cluster = Cluster::start(3);
    let held: Vec<serde_json::Value> = (0..2).map(|_| take(&cluster, "pair", "2")).collect();
    let waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "--json", "-w", "20s", "--limit", "2", "pair"])
            .env("REDLOCK_TEST_POLL_DELAY_MS", SLOW_POLL_MS)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let listening = || {
        (0..3).all(|i| {
            (0..2).all(|slot| {
                cluster[i].subscribers(format!("pair#{slot}\0released").as_bytes()) == 1
            })
        })
    };
    assert!(
        wait_until(Duration::from_secs(10), listening),
        "the waiter does not listen to every slot on every server\n{}",
        cluster.logs()
    );
    let in_line = || (0..2).all(|slot| cluster.in_line_everywhere(&format!("pair#{slot}"), 1));
    assert!(
        wait_until(Duration::from_secs(10), in_line),
        "not in every slot's line"
    );

    let second = &held[1];
    let released_at = Instant::now();
    run(cluster.redlock().args([
        "release",
        second["name"].as_str().unwrap(),
        second["token"].as_str().unwrap(),
    ]))
    .assert_code(0, "release one slot");
    let out = waiter.finish(Duration::from_secs(30));
    let took = released_at.elapsed();
    out.assert_code(0, "the waiter");
    assert_eq!(out.json()["slot"], second["slot"], "{}", out.stdout);
    assert!(
        took < Duration::from_secs(2),
        "the waiter took {took:?} after the release: it waited for its poll\n{}",
        out.stderr
    );
    // It left every line once it held a slot.
    let left = || (0..2).all(|slot| cluster.in_line_everywhere(&format!("pair#{slot}"), 0));
    assert!(
        wait_until(Duration::from_secs(5), left),
        "a ticket stayed in line"
    );
}

/// `release --limit K NAME TOKEN` releases whatever slot the token holds,
/// a reader's too: a slot's key can be taken by its name with `--shared`
/// (`acquire --shared 'pool#1'`), and the release cannot know whose token it
/// was given.
#[test]
fn release_with_a_limit_finds_a_readers_token_on_a_slot() {
    let cluster = Cluster::start(3);
    let token = crate::support::acquire(&cluster, "pool#1", &["--shared"]);
    run(cluster
        .redlock()
        .args(["release", "--limit", "2", "pool", &token]))
    .assert_code(0, "release --limit of a reader's token");
    assert!(
        cluster.servers.iter().all(|s| s.pttl(b"pool#1") == -2),
        "the reader's slot is still held"
    );
}

#[test]
fn status_shows_every_slot_and_how_many_are_free() {
    let cluster = Cluster::start(3);
    let all_free = run(cluster.redlock().args(["status", "--limit", "3", "st"]));
    all_free.assert_code(1, "status of a free semaphore");
    assert!(
        all_free
            .stdout
            .starts_with("\"st\" is a semaphore of 3 slots: 0 held, 3 free"),
        "{}",
        all_free.stdout
    );
    let held = take(&cluster, "st", "3");
    let text = run(cluster.redlock().args(["status", "--limit", "3", "st"]));
    text.assert_code(0, "status with one slot held");
    assert!(text.stdout.contains("1 held, 2 free"), "{}", text.stdout);
    for slot in 0..3 {
        assert!(
            text.stdout.contains(&format!("\"st#{slot}\"")),
            "{}",
            text.stdout
        );
    }
    let json = run(cluster
        .redlock()
        .args(["status", "--json", "--limit", "3", "st"]));
    json.assert_code(0, "status --json");
    let json = json.json();
    assert_eq!(
        (json["name"].as_str(), json["limit"].as_u64()),
        (Some("st"), Some(3))
    );
    assert_eq!(
        (json["held"].as_u64(), json["free"].as_u64()),
        (Some(1), Some(2))
    );
    let slot = held["slot"].as_u64().unwrap() as usize;
    let slots = json["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 3);
    assert_eq!(slots[slot]["held"], true);
    assert_eq!(slots[slot]["token"], held["token"]);
    assert_eq!(slots[slot]["slot"], slot);
    assert_eq!(
        slots[(slot + 1) % 3]["state"],
        slots[(slot + 2) % 3]["state"]
    );
    assert_eq!(slots[(slot + 1) % 3]["held"], false);
    // `list` shows the slot as the lock it is.
    let list = run(cluster.redlock().args(["list", "--names", "st*"]));
    list.assert_code(0, "list");
    assert_eq!(list.stdout.trim(), format!("st#{slot}"));
}

#[test]
fn a_bad_limit_or_limit_with_fence_is_a_usage_error_on_one_line() {
    let cluster = Cluster::start(1);
    for bad in ["0", "-1", "x", "257"] {
        let out = run(cluster
            .redlock()
            .args(["acquire", "-n", "--limit", bad, "b"]));
        out.assert_code(64, &format!("--limit {bad}"));
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(
            first.contains("--limit") && first.contains("1 to 256"),
            "{}",
            out.stderr
        );
    }
    let forced = run(cluster
        .redlock()
        .args(["release", "--force", "--limit", "2", "b"]));
    forced.assert_code(64, "release --force --limit");
    assert_eq!(forced.stderr.lines().count(), 1, "{}", forced.stderr);
    // A fence orders holders one after another; a semaphore's run at once.
    for (command, rest) in [("acquire", &["b"][..]), ("exec", &["b", "--", "true"])] {
        let fenced = run(cluster
            .redlock()
            .args([command, "-n", "--fence", "--limit", "2"])
            .args(rest));
        fenced.assert_code(64, "--fence --limit");
        assert!(
            fenced
                .stderr
                .contains("'--fence' cannot be used with '--limit"),
            "{}",
            fenced.stderr
        );
        assert_eq!(fenced.stderr.lines().count(), 1, "{}", fenced.stderr);
    }
}

#[test]
fn exec_gives_the_command_its_slot_and_releases_that_slot() {
    let cluster = Cluster::start(3);
    let held = take(&cluster, "ex", "2");
    let out = run(cluster
        .redlock()
        .args(["exec", "-n", "--limit", "2", "ex", "--", "sh", "-c"])
        .arg("echo $REDLOCK_NAME $REDLOCK_SLOT"));
    out.assert_code(0, "exec --limit");
    let other = 1 - held["slot"].as_u64().unwrap();
    assert_eq!(out.stdout.trim(), format!("ex {other}"));
    // The slot it took is free again; the other is still held.
    let free = run(cluster
        .redlock()
        .args(["status", "--json", "--limit", "2", "ex"]))
    .json();
    assert_eq!(free["held"], 1);
    assert_eq!(free["slots"][other as usize]["held"], false);
}

/// A process for `--while` to watch (it ends in 30s), and its pid.
fn a_process_to_watch() -> (std::process::Child, String) {
    let sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = sleeper.id().to_string();
    (sleeper, pid)
}

#[test]
fn acquire_while_keeps_a_slot_until_release_limit_finds_it() {
    let cluster = Cluster::start(3);
    let (mut sleeper, pid) = a_process_to_watch();
    let out = run(cluster.redlock().args([
        "acquire", "--json", "-n", "--limit", "2", "--while", &pid, "kw",
    ]));
    out.assert_code(0, "acquire --limit --while");
    let lease = out.json();
    let token = lease["token"].as_str().unwrap();
    let status = || {
        run(cluster
            .redlock()
            .args(["status", "--json", "--limit", "2", "kw"]))
        .json()
    };
    assert_eq!(status()["held"], 1, "the keeper holds the slot");
    run(cluster
        .redlock()
        .args(["release", "--limit", "2", "kw", token]))
    .assert_code(0, "release --limit stands the keeper down");
    assert_eq!(status()["held"], 0);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// The servers' record of a semaphore's K, beside its slots.
fn limit_key(name: &str) -> Vec<u8> {
    [name.as_bytes(), b"\0limit"].concat()
}

/// Clients that disagree on K: `--limit 3` three times and `--limit 4`
/// once made 4 holders. The servers record K beside the slots; a client
/// with another K is refused (78, no retry under `-w`), told the K the
/// servers hold, and takes nothing.
#[test]
fn a_client_with_another_limit_is_refused_naming_the_k_the_servers_hold() {
    let cluster = Cluster::start(3);
    let tokens: Vec<String> = (0..3)
        .map(|_| {
            take(&cluster, "pool", "3")["token"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for wait in [&["-n"][..], &["-w", "5s"]] {
        let out = run(cluster
            .redlock()
            .args(["acquire", "--limit", "4"])
            .args(wait)
            .arg("pool"));
        out.assert_code(78, "another K");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr.contains(
                "refused us (this server records --limit 3 for the semaphore, and this client \
                 asked for --limit 4: every client of a semaphore must pass the same K)"
            ),
            "{}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("waiting"),
            "-w retried: {}",
            out.stderr
        );
    }
    assert_eq!(cluster.get_all(b"pool#3"), vec![None; 3], "a fourth holder");
    for server in &cluster.servers {
        assert_eq!(server.get(&limit_key("pool")).as_deref(), Some(&b"3"[..]));
        let ttl = server.pttl(&limit_key("pool"));
        assert!(
            ttl > 20_000 && ttl <= 30_000,
            "the record lives as a slot: {ttl}"
        );
    }
    // A smaller K is refused too, even for a slot that is free.
    run(cluster
        .redlock()
        .args(["release", "--limit", "3", "pool", &tokens[0]]))
    .assert_code(0, "release");
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--limit", "2", "pool"]));
    out.assert_code(78, "a smaller K");
    assert!(out.stderr.contains("records --limit 3"), "{}", out.stderr);
    // The same K still gets the free slot.
    take(&cluster, "pool", "3");
}

/// The record lives as long as a slot is held: extensions keep it alive
/// past the first TTL (here `acquire --while`'s keeper, in another
/// process, and `extend --limit`); once the last holder is gone and its TTL
/// has passed, the record is gone and another K may be used.
#[test]
fn the_limit_record_lives_while_a_slot_is_held_and_then_lapses() {
    let cluster = Cluster::start(3);
    let (mut sleeper, pid) = a_process_to_watch();
    let out = run(cluster.redlock().args([
        "acquire", "--json", "-n", "--limit", "2", "--ttl", "1s", "--while", &pid, "kept",
    ]));
    out.assert_code(0, "acquire --limit --while");
    let kept = out.json()["token"].as_str().unwrap().to_owned();
    let out = run(cluster.redlock().args([
        "acquire", "--json", "-n", "--limit", "2", "--ttl", "1s", "extended",
    ]));
    let extended = out.json()["token"].as_str().unwrap().to_owned();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        run(cluster.redlock().args([
            "extend", "--limit", "2", "--ttl", "1s", "extended", &extended,
        ]))
        .assert_code(0, "extend --limit");
        // The behaviour: held past the first TTL by extensions alone.
        thread::sleep(Duration::from_millis(300));
    }
    for name in ["kept", "extended"] {
        let out = run(cluster
            .redlock()
            .args(["acquire", "-n", "--limit", "3", name]));
        out.assert_code(78, "another K while a slot is held past its first TTL");
    }
    run(cluster
        .redlock()
        .args(["release", "--limit", "2", "kept", &kept]))
    .assert_code(0, "release");
    run(cluster
        .redlock()
        .args(["release", "--limit", "2", "extended", &extended]))
    .assert_code(0, "release");
    assert!(
        wait_until(Duration::from_secs(5), || cluster
            .get_all(&limit_key("kept"))
            .iter()
            .chain(&cluster.get_all(&limit_key("extended")))
            .all(Option::is_none)),
        "the record outlived the last slot's TTL"
    );
    for name in ["kept", "extended"] {
        let out = run(cluster
            .redlock()
            .args(["acquire", "-n", "--limit", "3", name]));
        out.assert_code(0, "another K once every holder is gone");
    }
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// A K recorded on only a minority of servers (a leftover of an attempt
/// that failed, say) refuses on those servers only: the others still make
/// a majority, and the record there follows the new holder's K.
#[test]
fn a_k_recorded_on_a_minority_keeps_only_those_servers_out() {
    let cluster = Cluster::start(3);
    cluster.servers[0].set_px(&limit_key("few"), b"5", 30_000);
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--json", "--limit", "2", "few"]));
    out.assert_code(0, "a majority records no other K");
    let held_on = out.json()["held_on"].as_array().unwrap().len();
    assert_eq!(held_on, 2, "{}", out.stdout);
    assert_eq!(
        cluster.servers[0].get(&limit_key("few")).as_deref(),
        Some(&b"5"[..])
    );
    for server in &cluster.servers[1..] {
        assert_eq!(server.get(&limit_key("few")).as_deref(), Some(&b"2"[..]));
    }
    // A record that is not a number is shown escaped and cut.
    for server in &cluster.servers {
        server.set_px(
            &limit_key("odd"),
            "x\u{1b}]0;\u{7}".repeat(20).as_bytes(),
            30_000,
        );
    }
    let out = run(cluster
        .redlock()
        .args(["acquire", "-n", "--limit", "2", "odd"]));
    out.assert_code(78, "a record that is no K of ours");
    assert!(
        out.stderr.contains("records --limit x\\u{1b}]0;\\u{7}x"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
}

/// `acquire WAIT --limit 64 pool` on 3 servers of which 2 are stopped:
/// what it said, how long it took, and the servers.
fn limit_64_with_a_majority_stopped(wait: &[&str]) -> (Output, Duration, Cluster) {
    let mut cluster = Cluster::start(3);
    cluster[1].pause();
    cluster[2].pause();
    let started = Instant::now();
    let out = run(cluster
        .redlock()
        .arg("acquire")
        .args(wait)
        .args(["--limit", "64", "pool"]));
    (out, started.elapsed(), cluster)
}

/// `-n` fails at once whatever K is: with a majority stopped, the first
/// slot tried shows that no majority can answer, and the other slots are
/// not tried (each would wait out the server timeout again: K x 0.5s, 32s
/// for K = 64). It fails as a lock does without a majority, with 69.
#[test]
fn acquire_n_with_a_majority_stopped_fails_at_once_whatever_k() {
    let (out, took, cluster) = limit_64_with_a_majority_stopped(&["-n"]);
    out.assert_code(69, "no quorum for any slot");
    assert!(
        out.stderr
            .starts_with("redlock: no quorum for lock \"pool#"),
        "{}",
        out.stderr
    );
    // One server timeout (250ms) for the attempt; 2s leaves room for a
    // loaded machine, and none for a wait per slot.
    assert!(
        took < Duration::from_secs(2),
        "acquire -n --limit 64 took {took:?}"
    );
    // Nothing is left behind on the server that answered.
    let left: usize = (0..64)
        .filter(|i| cluster[0].get(format!("pool#{i}").as_bytes()).is_some())
        .count();
    assert_eq!(left, 0, "slots left held on the server that answered");
}

/// A waiter that gives up leaves every slot's line at once: each leave
/// waits for a majority, and with a majority stopped, K leaves one after
/// another took K server timeouts (16s for K = 64) after the wait was over.
#[test]
fn a_waiter_that_gives_up_leaves_every_line_at_once() {
    let (out, took, _cluster) = limit_64_with_a_majority_stopped(&["-w", "1s"]);
    out.assert_code(69, "no quorum for any slot within 1s");
    assert!(
        took < Duration::from_secs(4),
        "acquire -w 1s --limit 64 took {took:?}"
    );
}
