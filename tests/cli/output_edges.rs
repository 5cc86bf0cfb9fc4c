//! Rough edges of what redlock writes (issue 29): a reader that goes away
//! early (`| head`), `list --json --names`, durations of more than two
//! units, a holder record whose start is in the future, and `doctor` on a
//! server without ACL commands, against real servers.

use std::fs;
use std::io::Read;
use std::process::Stdio;

use serde_json::Value;

use crate::support::assertions::assert_stderr_says;
use crate::support::{acquire, run, Cluster, RedisServer, Running, RUN_TIMEOUT};

/// Writes `count` locks straight to every server of `cluster`, each with a
/// holder record started `since_ms` on the server's clock (or now), under
/// names long enough that even `list --names` outgrows a pipe's buffer
/// (64 KiB) many times over.
fn locks_on_every_server(cluster: &Cluster, names: &[String], since_ms: impl Fn(u64) -> u64) {
    for server in &cluster.servers {
        let mut client = server.client();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut client).unwrap();
        let since = since_ms(secs * 1000 + micros / 1000);
        let mut pipe = redis::pipe();
        for (i, name) in names.iter().enumerate() {
            let token = format!("token-{i}");
            let record = format!(
                "{since} {{\"token\":\"{token}\",\"host\":\"h\",\"pid\":{i},\"user\":\"u\"}}"
            );
            pipe.cmd("SET")
                .arg(name)
                .arg(&token)
                .arg("PX")
                .arg(120_000)
                .ignore();
            pipe.cmd("SET")
                .arg([name.as_bytes(), b"\0holder"].concat())
                .arg(record)
                .arg("PX")
                .arg(120_000)
                .ignore();
        }
        pipe.query::<()>(&mut client).unwrap();
    }
}

fn many_names(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("a-lock-with-a-name-long-enough-to-fill-a-pipe-{i:05}"))
        .collect()
}

// ---------------------------------------------------------------------------
// A closed pipe
// ---------------------------------------------------------------------------

/// `redlock list | head -c 16`: the reader takes a few bytes and goes away
/// while most of the listing is still to be written. As for coreutils, that
/// is no error: nothing on stderr (there was a "Broken pipe" line), and the
/// status is the listing's own.
#[test]
fn a_reader_that_goes_away_early_is_no_error() {
    let cluster = Cluster::start(3);
    locks_on_every_server(&cluster, &many_names(3000), |now| now);
    for args in [&["list"][..], &["list", "--names"], &["list", "--json"]] {
        let mut listing = Running::spawn(
            cluster
                .redlock()
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let mut start = [0u8; 16];
        let mut stdout = listing.stdout.take().unwrap();
        stdout.read_exact(&mut start).unwrap();
        // The reader goes away: the rest of the listing meets a closed pipe.
        drop(stdout);
        let out = listing.finish(RUN_TIMEOUT);
        out.assert_code(0, &format!("{args:?} into a pipe closed early"));
        assert_eq!(out.stderr, "", "{args:?}");
    }
}

/// A failure to write that is no reader going away (a full disk) is still
/// said, and the operation's status stands.
#[test]
fn a_full_disk_is_still_said() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "full", &[]);
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Running::spawn(
        cluster
            .redlock()
            .args(["status", "full"])
            .stdin(Stdio::null())
            .stdout(full)
            .stderr(Stdio::piped()),
    )
    .finish(RUN_TIMEOUT);
    out.assert_code(0, "status > /dev/full");
    assert_stderr_says(
        &out,
        &["the result could not be written to stdout: No space left on device"],
        "status > /dev/full",
    );
}

// ---------------------------------------------------------------------------
// list --json --names
// ---------------------------------------------------------------------------

/// `--names` and `--json` each decide what stdout is: together they are a
/// usage error (64), wherever `--json` stands. It once printed the names,
/// then the JSON, when `--json` came before `list`.
#[test]
fn list_refuses_names_with_json_in_either_order() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "named", &[]);
    for args in [
        &["--json", "list", "--names"][..],
        &["list", "--names", "--json"],
        &["list", "--json", "--names"],
    ] {
        let out = run(cluster.redlock().args(args));
        out.assert_code(64, &format!("{args:?}"));
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("--names") && out.stderr.contains("--json"),
            "{args:?}: {}",
            out.stderr
        );
    }
    // Each alone still works.
    run(cluster.redlock().args(["list", "--names"])).assert_code(0, "--names");
    run(cluster.redlock().args(["--json", "list"])).assert_code(0, "--json");
}

// ---------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------

/// A TTL past the restart guard is shown in at most two units (it was
/// `1day 29s 991ms`, and `11months 30days 3h 50m 24s` for 365 days), and the
/// guard it asks for covers the TTL.
#[test]
fn durations_show_at_most_two_units() {
    let refused = |ttl: &str| {
        let out = run(crate::support::redlock().args([
            "-s",
            "redis://127.0.0.1:1",
            // The tests' default is 0 (off), and so is the cap it puts on a TTL.
            "--restart-guard",
            "30s",
            "acquire",
            "-n",
            "--ttl",
            ttl,
            "long",
        ]));
        out.assert_code(64, &format!("--ttl {ttl} past the restart guard"));
        out.stderr
    };
    let stderr = refused("86429.991");
    assert!(
        stderr.contains("--ttl 1d is longer than the restart guard 30s"),
        "{stderr}"
    );
    assert!(stderr.contains("restart-guard = 1d 1h)"), "{stderr}");
    let stderr = refused("365d");
    assert!(
        stderr.contains("--ttl 365d is longer than the restart guard 30s"),
        "{stderr}"
    );
    assert!(stderr.contains("restart-guard = 365d)"), "{stderr}");
    assert!(
        !stderr.contains("month") && !stderr.contains("day"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------
// A holder record from the future
// ---------------------------------------------------------------------------

/// A record whose start is a day after the server's clock (the clock went
/// back since): its age is unknown, not 0s. `list` says so, `status` too,
/// `--json` gives how far ahead it is instead of an age, and `--older-than`
/// lists it rather than let it escape.
#[test]
fn a_record_from_the_future_has_no_age_and_does_not_escape_older_than() {
    let cluster = Cluster::start(3);
    const DAY_MS: u64 = 86_400_000;
    locks_on_every_server(&cluster, &["ahead".to_owned()], |now| now + DAY_MS);
    acquire(&cluster, "recent", &[]);

    let out = run(cluster.redlock().arg("list"));
    out.assert_code(0, "list");
    let row = out
        .stdout
        .lines()
        .find(|line| line.starts_with("\"ahead\""))
        .unwrap_or_else(|| panic!("no row of the lock: {}", out.stdout));
    assert!(row.contains("in the future (clock skew?)"), "{row}");
    assert!(!row.contains(" 0s "), "{row}");

    let out = run(cluster.redlock().args(["list", "--older-than", "1h"]));
    out.assert_code(0, "list --older-than 1h");
    let names: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(names.len(), 1, "{}", out.stdout);
    assert!(names[0].starts_with("\"ahead\""), "{}", out.stdout);

    let json: Value = run(cluster.redlock().args(["list", "--json"])).json();
    let holder = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|lock| lock["name"] == "ahead")
        .map(|lock| lock["holder"].clone())
        .unwrap_or_else(|| panic!("{json}"));
    assert!(holder.get("held_for_ms").is_none(), "{holder}");
    let ahead = holder["start_in_future_ms"].as_u64().unwrap();
    assert!((DAY_MS - 60_000..=DAY_MS).contains(&ahead), "{holder}");

    let out = run(cluster.redlock().args(["status", "ahead"]));
    out.assert_code(0, "status of the lock");
    assert!(
        out.stdout
            .contains("u@h (pid 0) since a start in the future (clock skew?)"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------
// doctor: ACL and the server's name
// ---------------------------------------------------------------------------

/// A server without the ACL command (Redis before 6, here a Redis 7 with
/// `rename-command ACL ""`) gets redlock's words on its acl line, not the
/// client library's error; and the server is named by what it says it is.
#[test]
fn doctor_names_a_server_without_acl_in_its_own_words() {
    let server = RedisServer::start_with(&["--rename-command", "ACL", ""]);
    let url = server.url();
    let out = run(crate::support::redlock().args(["-s", &url, "doctor", "--single"]));
    let acl = out
        .stdout
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some("acl"))
        .unwrap_or_else(|| panic!("no acl line: {}", out.stdout));
    assert!(
        acl.contains(
            "not checked: this server has no ACL command (none before Redis 6, or \
             rename-command took it away)"
        ),
        "{acl}"
    );
    assert!(acl.starts_with("  unknown"), "{acl}");
    assert!(!acl.contains("unknown command"), "{acl}");
    let version = server.info_field("server", "redis_version").unwrap();
    assert!(
        out.stdout.contains(&format!("{url}: "))
            && out.stdout.contains(&format!("(redis {version}, ")),
        "{}",
        out.stdout
    );
    let json: Value =
        run(crate::support::redlock().args(["-s", &url, "--json", "doctor", "--single"])).json();
    assert_eq!(json["servers"][0]["server_name"], "redis", "{json}");
    assert_eq!(json["servers"][0]["version"], version.as_str(), "{json}");
}
