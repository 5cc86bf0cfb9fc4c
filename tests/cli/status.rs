//! `redlock status`: held (0), free (1) and unknown (69) against real
//! servers, the text and `--json` forms, foreign values, and lock names made
//! of odd bytes (spaces, unicode, 4 KB, control characters, invalid UTF-8),
//! which must reach Redis unchanged and never reach a terminal raw.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::assertions::{
    assert_gone_everywhere, assert_held_everywhere, assert_no_panic, token_of,
};
use crate::support::{acquire, port_of, run, timed, Cluster};

/// No raw control character other than the line feeds separating lines.
#[track_caller]
fn assert_no_raw_controls(text: &str, what: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} contains a raw control character: {text:?}"
    );
}

// ---------------------------------------------------------------------------
// Held, free, unknown
// ---------------------------------------------------------------------------

#[test]
fn status_of_a_free_lock_exits_1() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["status", "nobody"]));
    out.assert_code(1, "free lock");
    assert_eq!(out.stderr, "", "free is an expected outcome, not an error");
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(first.contains("free"), "{}", out.stdout);
    assert_eq!(
        out.stdout.lines().count(),
        4,
        "a summary and one line per server"
    );
    for i in 0..3 {
        assert!(out.stdout.contains(&port_of(&cluster, i)), "{}", out.stdout);
    }
    // -q keeps the exit code and prints nothing.
    let out = run(cluster.redlock().args(["status", "-q", "nobody"]));
    out.assert_code(1, "-q free");
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}

#[test]
fn status_of_a_held_lock_exits_0_and_shows_the_token_per_server() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "held lock");
    assert_eq!(out.stderr, "");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[0].contains("\"deploy\" is held by"), "{}", lines[0]);
    assert!(
        lines[1].contains(&token) && lines[1].contains("on 3 of 3 servers"),
        "{}",
        lines[1]
    );
    for i in 0..3 {
        let line = lines
            .iter()
            .find(|l| l.contains(&port_of(&cluster, i)))
            .unwrap_or_else(|| panic!("no line for server {i}: {}", out.stdout));
        assert!(line.contains(&token), "{line}");
    }
    // status only reads.
    assert_held_everywhere(&cluster, b"deploy", &token);
    assert!(cluster[0].pttl(b"deploy") > 25_000);
}

#[test]
fn status_json_of_a_held_lock() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    let out = run(cluster.redlock().args(["status", "--json", "deploy"]));
    out.assert_code(0, "status --json held");
    assert_eq!(out.stdout.lines().count(), 1);
    assert!(out.stdout.starts_with('{'));
    let json = out.json();
    assert_eq!(json["name"], "deploy");
    assert_eq!(json["state"], "held");
    assert_eq!(json["held"], true);
    assert_eq!(json["token"], token.as_str());
    // held_on: the servers that hold the token, as in acquire --json.
    let mut held_on: Vec<&str> = json["held_on"]
        .as_array()
        .expect("held_on is an array")
        .iter()
        .map(|server| server.as_str().expect("held_on holds strings"))
        .collect();
    let mut urls = cluster.urls();
    held_on.sort_unstable();
    urls.sort_unstable();
    assert_eq!(held_on, urls);
    assert_eq!(json["quorum"], 2);
    let servers = json["servers"].as_array().expect("servers is an array");
    assert_eq!(servers.len(), 3);
    for (server, url) in servers.iter().zip(cluster.urls()) {
        assert_eq!(server["server"], url.as_str(), "configuration order");
        assert_eq!(server["exists"], true);
        assert_eq!(server["type"], "string");
        assert_eq!(server["token"], token.as_str());
        let ttl = server["ttl_ms"].as_i64().expect("ttl_ms is an integer");
        assert!((25_000..=30_000).contains(&ttl), "ttl_ms {ttl}");
        assert_eq!(server.get("error"), Some(&Value::Null), "{server}");
    }
}

#[test]
fn status_json_of_a_free_lock() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["status", "--json", "nobody"]));
    out.assert_code(1, "status --json free");
    let json = out.json();
    assert_eq!(json["state"], "free");
    assert_eq!(json["held"], false);
    assert_eq!(json.get("token"), Some(&Value::Null), "{json}");
    assert_eq!(json["held_on"], json!([]));
    for server in json["servers"].as_array().expect("servers is an array") {
        assert_eq!(server["exists"], false);
        assert_eq!(server["type"], "none");
        assert_eq!(server.get("token"), Some(&Value::Null), "{server}");
        assert_eq!(server["ttl_ms"], -2);
        assert_eq!(server.get("error"), Some(&Value::Null), "{server}");
    }
}

#[test]
fn status_with_a_majority_killed_is_unknown_69() {
    let mut cluster = Cluster::start(3);
    acquire(&cluster, "deploy", &[]);
    cluster[0].kill();
    cluster[1].kill();
    let (out, took) = timed(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(69, "2 of 3 killed");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(out.stdout.contains("unknown"), "{}", out.stdout);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    for i in [0, 1] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }

    let out = run(cluster.redlock().args(["status", "--json", "deploy"]));
    out.assert_code(69, "--json unknown");
    let json = out.json();
    assert_eq!(json["state"], "unknown");
    assert_eq!(
        json["held"],
        serde_json::Value::Null,
        "unknown is not false"
    );
    let servers = json["servers"].as_array().expect("servers is an array");
    for server in &servers[..2] {
        assert!(
            server["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{server}"
        );
    }
    assert_eq!(
        servers[2].get("error"),
        Some(&Value::Null),
        "{}",
        servers[2]
    );
}

#[test]
fn status_with_a_majority_paused_is_unknown_69_within_the_timeout() {
    let mut cluster = Cluster::start(3);
    cluster[1].pause();
    cluster[2].pause();
    let (out, took) = timed(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(69, "2 of 3 paused");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    for i in [1, 2] {
        assert!(out.stderr.contains(&port_of(&cluster, i)), "{}", out.stderr);
    }
}

#[test]
fn status_with_a_minority_killed_still_decides() {
    let mut cluster = Cluster::start(3);
    let token = acquire(&cluster, "deploy", &[]);
    cluster[2].kill();
    let out = run(cluster.redlock().args(["status", "deploy"]));
    out.assert_code(0, "held on 2 of 3 with one killed");
    assert!(out.stdout.contains(&token));
    let out = run(cluster.redlock().args(["status", "nobody"]));
    out.assert_code(1, "free on 2 of 3 with one killed");

    // Held on one live server and free on the other: the dead one could
    // hold it too, so nobody can tell.
    cluster[1].set(b"half", b"tok");
    let out = run(cluster.redlock().args(["status", "half"]));
    out.assert_code(69, "1 holder, 1 free, 1 dead");
}

#[test]
fn status_shows_foreign_values_and_types() {
    let cluster = Cluster::start(3);
    cluster[0].set(b"mixed", b"foreign-token");
    cluster[1].set(b"mixed", b"foreign-token");
    redis::cmd("SADD")
        .arg("mixed")
        .arg("m")
        .query::<i64>(&mut cluster[2].client())
        .unwrap();
    let out = run(cluster.redlock().args(["status", "mixed"]));
    out.assert_code(0, "the same value on a majority is a held lock");
    assert!(out.stdout.contains("foreign-token"), "{}", out.stdout);
    assert!(out.stdout.contains("never expires"), "{}", out.stdout);
    assert!(out.stdout.contains("set"), "{}", out.stdout);

    let out = run(cluster.redlock().args(["status", "--json", "mixed"]));
    let json = out.json();
    assert_eq!(json["token"], "foreign-token");
    let third = &json["servers"][2];
    assert_eq!(third["type"], "set");
    assert_eq!(third.get("token"), Some(&Value::Null), "{third}");
    assert_eq!(third["ttl_ms"], -1);
    assert_no_panic(&out, "mixed types");
}

#[test]
fn status_escapes_control_characters_in_foreign_values() {
    let cluster = Cluster::start(3);
    let evil = b"\x1b]0;pwned\x07\x1b[2J\r\nfake line";
    for server in &cluster.servers {
        server.set(b"evil", evil);
    }
    let out = run(cluster.redlock().args(["status", "evil"]));
    out.assert_code(0, "held by the evil value");
    assert_no_raw_controls(&out.stdout, "stdout");
    assert_eq!(out.stdout.lines().count(), 5, "{:?}", out.stdout);
    let out = run(cluster.redlock().args(["status", "--json", "evil"]));
    assert_no_raw_controls(&out.stdout, "--json stdout");
    assert_eq!(out.stdout.lines().count(), 1);
    out.json();
}

// ---------------------------------------------------------------------------
// Odd lock names
// ---------------------------------------------------------------------------

/// acquire, status (text and JSON) and release of `name` on 3 servers; the
/// key in Redis must be exactly the name's bytes.
fn round_trip(name: &OsStr) -> (String, String) {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["acquire", "-n"]).arg(name));
    out.assert_code(0, "acquire an odd name");
    let token = token_of(&out);
    assert_held_everywhere(&cluster, name.as_bytes(), &token);
    for server in &cluster.servers {
        let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut server.client())
            .unwrap();
        keys.sort();
        let record = [name.as_bytes(), b"\0holder"].concat();
        assert_eq!(
            keys,
            vec![name.as_bytes().to_vec(), record],
            "the key is the name; its holder record is beside it"
        );
    }

    let busy = run(cluster.redlock().args(["acquire", "-n"]).arg(name));
    busy.assert_code(75, "second acquire");
    assert_eq!(busy.stderr.lines().count(), 1, "{:?}", busy.stderr);
    assert_no_raw_controls(&busy.stderr, "busy stderr");

    let status = run(cluster.redlock().arg("status").arg(name));
    status.assert_code(0, "status of an odd name");
    assert_eq!(
        status.stdout.lines().count(),
        5,
        "the name must not add lines: {:?}",
        status.stdout
    );
    assert!(status.stdout.contains(&token));
    assert_no_raw_controls(&status.stdout, "status stdout");
    assert_no_raw_controls(&status.stderr, "status stderr");

    let json = run(cluster.redlock().args(["status", "--json"]).arg(name));
    json.assert_code(0, "status --json of an odd name");
    assert_no_raw_controls(&json.stdout, "status --json");
    let parsed = json.json();
    assert_eq!(parsed["token"], token.as_str());
    let shown = parsed["name"]
        .as_str()
        .expect("name is a string")
        .to_owned();

    run(cluster.redlock().arg("release").arg(name).arg(&token)).assert_code(0, "release");
    assert_gone_everywhere(&cluster, name.as_bytes());
    run(cluster.redlock().arg("status").arg(name)).assert_code(1, "free after release");
    (token, shown)
}

#[test]
fn names_with_spaces_and_unicode() {
    let (_, shown) = round_trip(OsStr::new("nightly report"));
    assert_eq!(shown, "nightly report");
    let (_, shown) = round_trip(OsStr::new("déploiement 🚀"));
    assert_eq!(shown, "déploiement 🚀", "unicode is shown as is in JSON");
}

#[test]
fn a_4kb_name() {
    let name = "n".repeat(2048) + &"é".repeat(1024);
    assert_eq!(name.len(), 4096);
    let (_, shown) = round_trip(OsStr::new(&name));
    assert_eq!(shown, name);
}

#[test]
fn names_with_control_characters_are_stored_raw_and_shown_escaped() {
    // JSON carries the exact name (its own escapes cover control characters).
    for name in [
        "line1\nline2",
        "\x1b[31mred\x1b[0m\r\t",
        "quote\" back\\slash",
    ] {
        let (_, in_json) = round_trip(OsStr::new(name));
        assert_eq!(in_json, name);
    }
}

#[test]
fn names_that_are_not_utf8_are_stored_byte_for_byte() {
    round_trip(OsStr::from_bytes(b"lock-\xff\xfe-\xc3"));
}

#[test]
fn names_that_look_like_flags_after_double_dash() {
    let cluster = Cluster::start(3);
    let out = run(cluster.redlock().args(["acquire", "-n", "--", "-w"]));
    out.assert_code(0, "acquire -- -w");
    let token = token_of(&out);
    assert_held_everywhere(&cluster, b"-w", &token);
    run(cluster.redlock().args(["status", "--", "-w"])).assert_code(0, "status -- -w");
}
