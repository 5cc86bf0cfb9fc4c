//! `redlock list` and `redlock release --force` against real servers: the
//! locks a majority holds with their holders, leftovers on a minority, the
//! prefix and the pattern, failed servers (69 without a majority), thousands
//! of keys, odd names that must never reach a terminal raw; and breaking a
//! lock whoever holds it, which a holder under `exec` notices at its next
//! extension.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::assertions::{assert_gone_everywhere, assert_no_panic};
use crate::support::{acquire, pid_alive, port_of, run, wait_until, Cluster, Running};

/// The listed locks of `list --json`, by name.
fn listed(json: &Value) -> Vec<(String, Value)> {
    json["locks"]
        .as_array()
        .unwrap_or_else(|| panic!("locks is an array: {json}"))
        .iter()
        .map(|lock| (lock["name"].as_str().unwrap().to_owned(), lock.clone()))
        .collect()
}

fn names(json: &Value) -> Vec<String> {
    listed(json).into_iter().map(|(name, _)| name).collect()
}

// ---------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------

#[test]
fn list_shows_each_lock_with_its_holder_age_and_expiry() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &["-m", "rolling out v2"]);
    acquire(&cluster, "backup", &["--ttl", "1h"]);
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    assert_eq!(out.stderr, "");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "a header and one line per lock: {}",
        out.stdout
    );
    assert!(lines[0].starts_with("NAME") && lines[0].contains("HOLDER"));
    // In the order of their names.
    assert!(lines[1].starts_with("\"backup\"") && lines[1].contains(" held "));
    assert!(
        lines[1].contains("59m"),
        "expires in about an hour: {}",
        lines[1]
    );
    assert!(lines[2].starts_with("\"deploy\"") && lines[2].contains("\"rolling out v2\""));
    assert!(
        lines[2].contains(&format!("(pid {}", std::process::id())),
        "{}",
        lines[2]
    );
    // -q: the exit status only.
    let out = run(cluster.redlock().args(["list", "-q"]));
    out.assert_code(0, "list -q");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}

#[test]
fn list_of_nothing_exits_0_and_says_so_on_stderr() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "empty list");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("no locks"), "{}", out.stderr);
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    assert_eq!(json["locks"], Value::Array(vec![]));
}

#[test]
fn list_json_gives_status_fields_per_lock() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &["-m", "note"]);
    let out = run(cluster.redlock().args(["list", "--json"]));
    out.assert_code(0, "list --json");
    assert_eq!(out.stdout.lines().count(), 1);
    let json = out.json();
    assert_eq!(
        (json["servers"].clone(), json["quorum"].clone()),
        (3.into(), 2.into())
    );
    assert_eq!(json["failed"], Value::Array(vec![]));
    let locks = listed(&json);
    assert_eq!(locks.len(), 1, "{json}");
    let lock = &locks[0].1;
    assert_eq!(lock["name"], "deploy");
    assert_eq!(lock["key"], "deploy");
    assert_eq!(lock["state"], "held");
    assert_eq!(lock["token"], token.as_str());
    assert_eq!(lock["holder"]["kind"], "redlock");
    assert_eq!(lock["holder"]["message"], "note");
    assert_eq!(lock["holder"]["pid"], std::process::id());
    let expires = lock["expires_in_ms"].as_u64().unwrap();
    assert!((25_000..=30_000).contains(&expires), "{expires}");
    assert_eq!(lock["held_on"].as_array().unwrap().len(), 3);
    // The same holder object as status --json.
    let status = run(cluster.redlock().args(["status", "--json", "deploy"])).json();
    let strip = |mut holder: Value| {
        holder.as_object_mut().unwrap().remove("held_for_ms");
        holder
    };
    assert_eq!(
        strip(lock["holder"].clone()),
        strip(status["holder"].clone())
    );
}

#[test]
fn list_filters_names_with_a_glob() {
    let cluster = Cluster::start(3);
    for name in ["deploy-a", "deploy-b", "backup", "deploy*"] {
        acquire(&cluster, name, &[]);
    }
    let list = |pattern: &str| {
        let out = run(cluster.redlock().args(["list", "--json", pattern]));
        out.assert_code(0, pattern);
        names(&out.json())
    };
    assert_eq!(list("deploy-*"), ["deploy-a", "deploy-b"]);
    assert_eq!(list("deploy-?"), ["deploy-a", "deploy-b"]);
    assert_eq!(list("backup"), ["backup"]);
    assert_eq!(list("deploy\\*"), ["deploy*"]);
    assert_eq!(list("*"), ["backup", "deploy*", "deploy-a", "deploy-b"]);
    let out = run(cluster.redlock().args(["list", ""]));
    out.assert_code(64, "an empty pattern");
}

#[test]
fn a_prefix_lists_every_string_under_it_and_none_outside() {
    let cluster = Cluster::start(3);
    // Glob characters in the prefix are matched literally.
    let prefix = "app[1]*:";
    let mut app = cluster.redlock();
    app.args(["--prefix", prefix]);
    run(cluster
        .redlock()
        .args(["--prefix", prefix, "acquire", "-n", "deploy"]))
    .assert_code(0, "acquire under the prefix");
    acquire(&cluster, "deploy", &[]);
    run(cluster
        .redlock()
        .args(["--prefix", "app1:", "acquire", "-n", "x"]))
    .assert_code(0, "acquire under a prefix the glob would match");
    // Another Redlock client's lock under the prefix, and a plain string
    // outside any prefix, on every server.
    for server in &cluster.servers {
        server.set_px(b"app[1]*:theirs", b"their-token", 60_000);
        server.set(b"cache:page", b"<html>");
    }
    let json = run(app.args(["list", "--json"])).json();
    let locks = listed(&json);
    assert_eq!(names(&json), ["deploy", "theirs"], "{json}");
    assert_eq!(locks[0].1["key"], "app[1]*:deploy");
    assert_eq!(locks[1].1["holder"]["kind"], "other_client");
    assert_eq!(locks[1].1["token"], "their-token");
    assert_eq!(json["prefix"], prefix);
    // Without a prefix, only locks with a holder record: a plain string is
    // not taken to be a lock.
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    assert_eq!(
        names(&json),
        ["app1:x", "app[1]*:deploy", "deploy"],
        "{json}"
    );
}

/// `exec --once KEY NAME -- true`: runs once and leaves its done mark on
/// every server, the lock free again.
fn mark_done(redlock: &mut std::process::Command, name: &str) {
    run(redlock
        .args(["exec", "--once", "v1", name, "--", "true"])
        .stdin(Stdio::null()))
    .assert_code(0, "the run that leaves its mark");
}

#[test]
fn a_free_lock_with_a_done_mark_is_listed_with_it() {
    let cluster = Cluster::start(3);
    mark_done(&mut cluster.redlock(), "build");
    acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(
        lines[1].starts_with("\"build\"")
            && lines[1].contains(" free ")
            && lines[1].contains("  done: for --once v1 by ")
            && lines[1].ends_with(", exit status 0 (on 3 of 3 servers)"),
        "{}",
        lines[1]
    );
    assert!(!lines[2].contains("done:"), "{}", lines[2]);
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    let locks = listed(&json);
    assert_eq!(names(&json), ["build", "deploy"], "{json}");
    let build = &locks[0].1;
    assert_eq!(build["state"], "free", "{json}");
    assert_eq!(build["holder"], Value::Null, "{json}");
    assert_eq!(build["done"]["id"], "key:v1", "{json}");
    assert_eq!(build["done"]["on"], 3, "{json}");
    assert_eq!(build["done"]["status"], 0, "{json}");
    assert!(build["done"]["done_by_pid"].as_u64().is_some(), "{json}");
    // A lock without a mark has no `done` at all, as in `status`.
    assert_eq!(locks[1].1.get("done"), None, "{json}");
    // --names lists it too.
    let out = run(cluster.redlock().args(["list", "--names"]));
    assert_eq!(out.stdout, "build\ndeploy\n");
}

#[test]
fn a_held_lock_with_a_done_mark_shows_its_holder_and_the_mark() {
    let cluster = Cluster::start(3);
    mark_done(&mut cluster.redlock(), "build");
    acquire(&cluster, "build", &["-m", "by hand"]);
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    let line = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("\"build\"")
            && line.contains(" held ")
            && line.contains("\"by hand\"); done: for --once v1 by "),
        "{}",
        out.stdout
    );
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    let locks = listed(&json);
    assert_eq!(locks[0].1["state"], "held", "{json}");
    assert_eq!(locks[0].1["holder"]["kind"], "redlock", "{json}");
    assert_eq!(locks[0].1["done"]["id"], "key:v1", "{json}");
}

#[test]
fn a_prefix_lists_only_the_marks_under_it() {
    let cluster = Cluster::start(3);
    let prefix = "app[1]*:";
    mark_done(cluster.redlock().args(["--prefix", prefix]), "nightly");
    mark_done(cluster.redlock().args(["--prefix", "app1:"]), "nightly");
    mark_done(&mut cluster.redlock(), "weekly");
    let under = |pattern: &str| {
        let json = run(cluster
            .redlock()
            .args(["--prefix", prefix, "list", "--json", pattern]))
        .json();
        names(&json)
    };
    assert_eq!(under("*"), ["nightly"]);
    assert_eq!(under("night*"), ["nightly"]);
    assert!(under("week*").is_empty());
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    assert_eq!(
        names(&json),
        ["app1:nightly", "app[1]*:nightly", "weekly"],
        "{json}"
    );
    let json = run(cluster.redlock().args(["list", "--json", "w*"])).json();
    assert_eq!(names(&json), ["weekly"], "{json}");
}

#[test]
fn a_mark_beside_a_name_with_nul_is_never_listed() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.set(b"a\0b\0done", b"key:v1\0\x30\x000\0{}");
        server.set(b"x\0holder\0done", b"key:v1\x000\x000\x00{}");
        server.set(b"\0done", b"key:v1\x000\x000\x00{}");
    }
    mark_done(&mut cluster.redlock(), "real");
    let out = run(cluster.redlock().args(["list", "--names"]));
    out.assert_code(0, "list");
    assert_eq!(out.stdout, "real\n");
    let out = run(cluster.redlock().args(["--prefix", "a", "list", "--names"]));
    out.assert_code(0, "list under a prefix");
    assert_eq!(out.stdout, "");
}

#[test]
fn a_lock_on_a_minority_is_listed_as_minority() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "left", &[]);
    for server in &cluster.servers[1..] {
        redis::cmd("DEL")
            .arg("left")
            .query::<()>(&mut server.client())
            .unwrap();
    }
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "a minority");
    let line = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("\"left\"") && line.contains(" minority "),
        "{}",
        out.stdout
    );
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    let lock = &listed(&json)[0].1;
    assert_eq!(lock["state"], "minority");
    assert_eq!(lock["expires_in_ms"], Value::Null);
    assert_eq!(lock["held_on"].as_array().unwrap().len(), 1);
    assert_eq!(lock["holder"]["kind"], "redlock");
}

#[test]
fn a_dead_server_is_named_and_a_dead_majority_is_69() {
    let mut cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &[]);
    cluster[2].kill();
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "one of three dead");
    assert!(
        out.stdout.contains("\"deploy\"") && out.stdout.contains(" held "),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains(&port_of(&cluster, 2)), "{}", out.stderr);
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    assert_eq!(json["failed"].as_array().unwrap().len(), 1, "{json}");
    assert!(json["failed"][0]["server"]
        .as_str()
        .unwrap()
        .contains(&port_of(&cluster, 2)));
    cluster[1].kill();
    let out = run(cluster.redlock().args(["list", "--json"]));
    out.assert_code(69, "two of three dead");
    assert_no_panic(&out, "list without a majority");
    let json = out.json();
    assert_eq!(json["failed"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(listed(&json)[0].1["state"], "unknown");
    assert!(out.stderr.contains("no quorum"), "{}", out.stderr);
}

#[test]
fn thousands_of_locks_are_all_listed() {
    let cluster = Cluster::start(3);
    const MANY: usize = 2000;
    for server in &cluster.servers {
        let mut pipe = redis::pipe();
        for i in 0..MANY {
            let (name, token) = (format!("job-{i:04}"), format!("token-{i}"));
            let record =
                format!("1 {{\"token\":\"{token}\",\"host\":\"h\",\"pid\":{i},\"user\":\"u\"}}");
            pipe.cmd("SET")
                .arg(&name)
                .arg(&token)
                .arg("PX")
                .arg(60_000)
                .ignore();
            pipe.cmd("SET")
                .arg([name.as_bytes(), b"\0holder"].concat())
                .arg(record)
                .arg("PX")
                .arg(60_000)
                .ignore();
        }
        // Unrelated keys are scanned past, not listed.
        for i in 0..MANY {
            pipe.cmd("SET").arg(format!("cache:{i}")).arg("x").ignore();
        }
        pipe.query::<()>(&mut server.client()).unwrap();
    }
    let started = Instant::now();
    let out = run(cluster.redlock().args(["list", "--json"]));
    out.assert_code(0, "2000 locks");
    let json = out.json();
    let locks = listed(&json);
    assert_eq!(locks.len(), MANY);
    assert!(locks.iter().all(|(_, lock)| lock["state"] == "held"));
    assert_eq!(locks[1234].0, "job-1234");
    assert_eq!(locks[1234].1["holder"]["pid"], 1234);
    // A bound a fault must not exceed (a KEYS-free listing that hangs or
    // goes quadratic), not a speed figure: a debug build takes well under a
    // second here, and took 4 s idle, 8–10 s under a loaded suite, while it
    // cloned every server's whole read for each lock.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let text = run(cluster.redlock().args(["list"]));
    assert_eq!(text.stdout.lines().count(), MANY + 1);
}

#[test]
fn odd_names_are_listed_escaped() {
    let cluster = Cluster::start(3);
    let name = OsStr::from_bytes(b"a\nb\x1b[2J\xff");
    run(cluster
        .redlock()
        .args([OsStr::new("acquire"), OsStr::new("-n"), name]))
    .assert_code(0, "acquire an odd name");
    let out = run(cluster.redlock().args(["list"]));
    out.assert_code(0, "list");
    assert!(
        out.stdout.contains(r#""a\nb\u{1b}[2J\xff""#),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 2);
    // Not UTF-8: JSON has the text form, as for every name (docs/guide.md).
    let json = run(cluster.redlock().args(["list", "--json"])).json();
    assert_eq!(names(&json), [r"a\nb\u{1b}[2J\xff"]);
}

/// `list --names`: the names alone, one a line, escaped as the table shows
/// them but unquoted; the pattern and the prefix apply; no header, nothing
/// for no lock; not with --json. Shell completion reads it.
#[test]
fn list_names_prints_one_escaped_name_a_line_and_nothing_else() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &["-m", "rolling out v2"]);
    acquire(&cluster, "backup", &[]);
    let odd = OsStr::from_bytes(b"b\nx\x1b[2J\xff");
    run(cluster
        .redlock()
        .args([OsStr::new("acquire"), OsStr::new("-n"), odd]))
    .assert_code(0, "acquire an odd name");
    let out = run(cluster.redlock().args(["list", "--names"]));
    out.assert_code(0, "list --names");
    // In the order of the names' bytes, as the table.
    assert_eq!(out.stdout, "b\\nx\\u{1b}[2J\\xff\nbackup\ndeploy\n");
    assert_eq!(out.stderr, "");
    let out = run(cluster.redlock().args(["list", "--names", "d*"]));
    assert_eq!(out.stdout, "deploy\n");
    let out = run(cluster.redlock().args(["list", "--names", "zz*"]));
    out.assert_code(0, "list --names of nothing");
    assert_eq!(out.stdout, "");
    let out = run(cluster
        .redlock()
        .args(["--prefix", "app:", "list", "--names"]));
    assert_eq!(out.stdout, "");
    let out = run(cluster.redlock().args(["list", "--names", "--json"]));
    out.assert_code(64, "list --names --json");
    assert_no_panic(&out, "list --names --json");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("--json"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// release --force
// ---------------------------------------------------------------------------

#[test]
fn force_release_breaks_a_held_lock_and_says_whose_it_was() {
    let cluster = Cluster::start(3);
    let before = cluster.dbsizes();
    let token = acquire(&cluster, "deploy", &["-m", "stuck"]);
    assert_ne!(cluster.dbsizes(), before);
    let out = run(cluster.redlock().args(["release", "--force", "deploy"]));
    out.assert_code(0, "release --force");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("broke \"deploy\": held by")
            && out.stderr.contains("\"stuck\"")
            && out.stderr.contains("on 3 of 3 servers"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1);
    assert_gone_everywhere(&cluster, b"deploy");
    // The holder record went with it; who broke it stays beside it, for
    // what was left of its TTL.
    let after: Vec<_> = before.iter().map(|n| n + 1).collect();
    assert_eq!(cluster.dbsizes(), after);
    for server in &cluster.servers {
        assert!(server.get(b"deploy\0broken").is_some());
    }
    // The holder's own release now finds it gone.
    run(cluster.redlock().args(["release", "deploy", &token])).assert_code(79, "the holder");
}

#[test]
fn force_release_json_reports_what_was_broken() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--json", "deploy"]));
    out.assert_code(0, "release --force --json");
    let json = out.json();
    assert_eq!(json["name"], "deploy");
    assert_eq!(json["forced"], true);
    assert_eq!(json["released"], true);
    assert_eq!(json["state"], "held");
    assert_eq!(json["token"], token.as_str());
    assert_eq!(json["holder"]["kind"], "redlock");
    assert_eq!(json["released_count"], 3);
    assert_eq!(json["released_on"].as_array().unwrap().len(), 3);
    assert_eq!(json["servers"], 3);
    // Again: it is free now, which is fine.
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--json", "deploy"]));
    out.assert_code(0, "already free");
    let json = out.json();
    assert_eq!(
        (json["released"].clone(), json["state"].clone()),
        (false.into(), "free".into())
    );
    assert_eq!(json["holder"], Value::Null);
}

#[test]
fn force_release_of_a_free_lock_says_so_and_exits_0() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["release", "--force", "nobody"]));
    out.assert_code(0, "free");
    assert!(out.stderr.contains("already free"), "{}", out.stderr);
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "-q", "nobody"]));
    out.assert_code(0, "free, -q");
    assert_eq!(out.stderr, "");
}

#[test]
fn force_release_deletes_another_clients_lock_but_not_a_key_of_another_type() {
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        server.set_px(b"theirs", b"their-token", 60_000);
        redis::cmd("HSET")
            .arg("hashed")
            .arg("f")
            .arg("v")
            .query::<()>(&mut server.client())
            .unwrap();
    }
    // Not a redlock token, no holder record: --any-key (force_shape.rs).
    let out = run(cluster
        .redlock()
        .args(["release", "--force", "--any-key", "theirs"]));
    out.assert_code(0, "another client's lock");
    assert!(
        out.stderr.contains("another client (token their-token)"),
        "{}",
        out.stderr
    );
    assert_gone_everywhere(&cluster, b"theirs");
    let out = run(cluster.redlock().args(["release", "--force", "hashed"]));
    out.assert_code(64, "a hash is no lock");
    assert!(
        out.stderr.contains("not a lock: a hash on 3 of 3 servers"),
        "{}",
        out.stderr
    );
    for server in &cluster.servers {
        let kind: String = redis::cmd("TYPE")
            .arg("hashed")
            .query(&mut server.client())
            .unwrap();
        assert_eq!(kind, "hash", "left alone");
    }
}

#[test]
fn force_release_takes_no_token_but_ignores_redlock_token() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "lk", &[]);
    let out = run(cluster.redlock().args(["release", "--force", "lk", &token]));
    out.assert_code(64, "a TOKEN with --force");
    assert!(out.stderr.contains("takes no TOKEN"), "{}", out.stderr);
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TOKEN", "stale")
        .args(["release", "--force", "lk"]));
    out.assert_code(0, "REDLOCK_TOKEN set, as under exec");
    assert_gone_everywhere(&cluster, b"lk");
}

#[test]
fn force_release_needs_a_majority() {
    let mut cluster = Cluster::start(3);
    acquire(&cluster, "lk", &[]);
    cluster[1].kill();
    cluster[2].kill();
    let out = run(cluster.redlock().args(["release", "--force", "lk"]));
    out.assert_code(69, "one of three");
    assert_no_panic(&out, "force without a majority");
    assert!(out.stderr.contains("no quorum"), "{}", out.stderr);
    // Deleted where it could be.
    assert_eq!(cluster[0].get(b"lk"), None);
}

#[test]
fn a_holder_under_exec_stops_its_command_when_its_lock_is_broken() {
    let cluster = Cluster::start(3);
    let dir = crate::support::temp_dir("redlock-test-force-");
    let pid_file = dir.path().join("child.pid");
    let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "--ttl", "1s", "-k", "100ms", "stuck", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.trim().parse::<i32>().is_ok())
    }));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let out = run(cluster.redlock().args(["release", "--force", "stuck"]));
    out.assert_code(0, "break the lock");
    assert!(
        out.stderr.contains("exec:") || out.stderr.contains("broke"),
        "{}",
        out.stderr
    );
    let broken_at = Instant::now();
    // The next extension comes within a third of the TTL.
    assert!(
        wait_until(Duration::from_secs(1), || !pid_alive(pid)),
        "the command outlived its broken lock"
    );
    let done = exec.finish(Duration::from_secs(5));
    assert_eq!(done.code(), 79, "{}", done.stderr);
    assert!(done.stderr.contains("was lost"), "{}", done.stderr);
    assert!(
        broken_at.elapsed() < Duration::from_secs(2),
        "{:?}",
        broken_at.elapsed()
    );
    assert_gone_everywhere(&cluster, b"stuck");
}
