//! What servers answer besides "yes" and "no". An error no retry can fix (an
//! ACL that denies a command redlock needs, a database index the server does
//! not have, a client certificate it requires) is a refusal: exit 78 at
//! once, on every command, never "not held" (79), "busy" (75) or "no quorum"
//! (69) retried until a deadline or forever; a URL that can never work is
//! rejected before any server is asked. A key of another type is still
//! someone else's lock.

use std::time::Duration;

use crate::support::assertions::{assert_held_everywhere, assert_no_panic};
use crate::support::fake_server::FakeServer;
use crate::support::{self, acquire, run, timed, Cluster, Output, RedisServer};

const PASSWORD: &str = "acl-pw-1234";

/// Every permission but `denied` (e.g. `-get`), on every key.
fn all_but(denied: &str) -> [&str; 3] {
    ["~*", "+@all", denied]
}

/// Runs `redlock ARGS` against `servers` (a `REDLOCK_SERVERS` value) and
/// asserts that it is refused at once: exit 78 within 2s, whatever `-w`
/// says, with `says` on stderr.
#[track_caller]
fn assert_refused(servers: &str, args: &[&str], says: &str) -> Output {
    let context = format!("{args:?} on {servers}");
    let (out, took) = timed(
        support::redlock()
            .env("REDLOCK_SERVERS", servers)
            .args(args),
    );
    out.assert_code(78, &context);
    assert_no_panic(&out, &context);
    assert!(
        took < Duration::from_secs(2),
        "{context}: took {took:?}; a refusal is never retried"
    );
    assert!(
        out.stderr.contains(says),
        "{context}: stderr must say {says:?}: {}",
        out.stderr
    );
    out
}

// ---------------------------------------------------------------------------
// ACL permissions
// ---------------------------------------------------------------------------

#[test]
fn a_user_without_get_is_refused_not_told_its_lock_is_lost() {
    // The scripts read the key with pcall, which also swallowed NOPERM: a
    // lock the token holds read as "not held" (79), and a busy acquire's
    // unlock-all silently deleted nothing.
    let cluster = Cluster::start(3);
    let servers = cluster.acl_user("noget", PASSWORD, &all_but("-get"));
    let token = acquire(&cluster, "held", &[]);
    assert_refused(&servers, &["release", "held", &token], "ACL");
    assert_refused(&servers, &["extend", "held", &token], "ACL");
    // SET needs no GET, but the unlock-all of a failed attempt does: each
    // attempt would leave its key behind, so no attempt is worth making.
    assert_refused(&servers, &["acquire", "-n", "held"], "ACL");
    assert_refused(&servers, &["acquire", "-w", "5s", "held"], "ACL");
    assert_held_everywhere(&cluster, b"held", &token);
    // Taken on one server of three, busy on the others: the key taken
    // cannot be unlocked.
    cluster[0].set(b"split", b"someone-else");
    cluster[1].set(b"split", b"someone-else");
    assert_refused(&servers, &["acquire", "-n", "split"], "ACL");
}

#[test]
fn a_command_the_acl_denies_inside_a_script_is_a_refusal() {
    // A denied call inside a script used to come back as a plain ERR, read
    // as a passing failure: 69, "no quorum".
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "lk", &[]);
    let cases: [(&str, &[&str]); 8] = [
        ("-del", &["release", "lk", &token]),
        // A run once counts its period on the servers' clock: without TIME
        // it would fall back to this host's and disagree near the edge.
        (
            "-time",
            &["exec", "--once-per", "1h", "daily", "--", "true"],
        ),
        // A superseding waiter reads the others with HGETALL: without it,
        // superseding would silently never happen.
        ("-hgetall", &["acquire", "-w", "2s", "--supersede", "lk"]),
        ("-pexpire", &["extend", "lk", &token]),
        ("-pttl", &["extend", "lk", &token]),
        ("-pttl", &["status", "lk"]),
        ("-type", &["status", "lk"]),
        ("-get", &["status", "lk"]),
    ];
    for (denied, args) in cases {
        let servers = cluster.acl_user("limited", PASSWORD, &all_but(denied));
        let out = assert_refused(&servers, args, "ACL");
        assert!(
            out.stderr.contains("+pexpire"),
            "{denied} {args:?}: the message lists what redlock needs: {}",
            out.stderr
        );
    }
    assert_held_everywhere(&cluster, b"lk", &token);
}

/// acquire, status, release and extend on `servers` are each refused, for
/// `why`.
#[track_caller]
fn assert_every_command_refused(servers: &str, why: &str) {
    for args in [
        &["acquire", "-w", "5s", "x"][..],
        &["status", "x"],
        &["release", "x", "tok"],
        &["extend", "x", "tok"],
    ] {
        assert_refused(servers, args, why);
    }
}

#[test]
fn a_user_without_select_is_refused_for_a_database_other_than_0() {
    let cluster = Cluster::start(3);
    let servers = cluster
        .servers
        .iter()
        .map(|s| format!("{}/1", s.acl_user("nosel", PASSWORD, &all_but("-select"))))
        .collect::<Vec<_>>()
        .join(",");
    assert_every_command_refused(&servers, "ACL");
}

#[test]
fn exec_stops_its_command_at_once_when_an_extension_is_refused() {
    // Without GET the extension read as "lost" (79); without PEXPIRE it was
    // retried until the stop schedule ran out (79, later). Either way the
    // servers refuse: 78, as soon as the first extension is refused.
    let cluster = Cluster::start(3);
    // One lock each: without GET the lock cannot be released either.
    for (denied, name) in [("-get", "job-get"), ("-pexpire", "job-pexpire")] {
        let servers = cluster.acl_user("noext", PASSWORD, &all_but(denied));
        let context = format!("exec with {denied}");
        let (out, took) = timed(support::redlock().env("REDLOCK_SERVERS", &servers).args([
            "exec", "--ttl", "3s", "-k", "100ms", name, "--", "sleep", "30",
        ]));
        out.assert_code(78, &context);
        assert_no_panic(&out, &context);
        // The first extension comes after a third of the TTL.
        assert!(
            took < Duration::from_millis(2200),
            "{context}: the command ran on for {took:?}"
        );
        assert!(
            out.stderr
                .contains("could not be extended; the command was stopped")
                && out.stderr.contains("ACL"),
            "{context}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("release after the command ended"),
            "{context}: the release is only tidying up: {}",
            out.stderr
        );
    }
}

#[test]
fn a_key_of_another_type_is_still_someone_elses_lock() {
    // GET on a hash answers WRONGTYPE: "not ours", as before, not an error.
    let cluster = Cluster::start(3);
    for server in &cluster.servers {
        redis::cmd("HSET")
            .arg("hashed")
            .arg("field")
            .arg("value")
            .query::<()>(&mut server.client())
            .unwrap();
    }
    run(cluster.redlock().args(["release", "hashed", "tok"])).assert_code(79, "release");
    run(cluster.redlock().args(["extend", "hashed", "tok"])).assert_code(79, "extend");
    run(cluster.redlock().args(["acquire", "-n", "hashed"])).assert_code(75, "acquire -n");
    for server in &cluster.servers {
        let kind: String = redis::cmd("TYPE")
            .arg("hashed")
            .query(&mut server.client())
            .unwrap();
        assert_eq!(kind, "hash", "the foreign key is untouched");
    }
}

// ---------------------------------------------------------------------------
// Other settings no retry can fix
// ---------------------------------------------------------------------------

#[test]
fn a_database_index_the_server_does_not_have_is_a_refusal() {
    // `ERR DB index is out of range` on every connection: it was 69, and a
    // blocking acquire retried it forever.
    let cluster = Cluster::start(3);
    let servers = cluster
        .urls()
        .iter()
        .map(|url| format!("{url}/16"))
        .collect::<Vec<_>>()
        .join(",");
    assert_every_command_refused(&servers, "DB index is out of range");
}

#[test]
fn a_url_that_can_never_connect_is_rejected_before_any_server_is_asked() {
    // The server is gone: a URL that got as far as connecting would be a 69
    // (connection refused), so a 78 here comes from reading the URL alone.
    let dead = {
        let mut server = RedisServer::start();
        server.kill();
        server
    };
    let port = dead.port();
    let cases = [
        (format!("redis://127.0.0.1:{port}/-1"), "database index -1"),
        (
            format!("redis://:pw@127.0.0.1:{port}/-5"),
            "database index -5",
        ),
        (format!("redis://127.0.0.1:{port}/notadb"), "notadb"),
        (
            "redis+unix:///nonexistent.sock?db=-1".to_owned(),
            "database index -1",
        ),
        ("redis://127.0.0.1:0".to_owned(), "port 0"),
        ("rediss://localhost:0".to_owned(), "port 0"),
    ];
    for (url, says) in &cases {
        for args in [
            &["acquire", "-w", "5s", "x"][..],
            &["status", "x"],
            &["release", "x", "tok"],
        ] {
            let context = format!("-s {url} {args:?}");
            let out = run(support::redlock().args(["-s", url]).args(args));
            out.assert_code(78, &context);
            assert_no_panic(&out, &context);
            assert_eq!(out.stderr.lines().count(), 1, "{context}: {}", out.stderr);
            assert!(out.stderr.contains(says), "{context}: {}", out.stderr);
        }
    }
}

#[test]
fn a_tls_server_that_requires_a_client_certificate_is_a_refusal() {
    // redlock presents no client certificate: every handshake fails, with
    // CertificateRequired under TLS 1.3 and HandshakeFailure under TLS 1.2.
    for extra in [
        &["--tls-auth-clients", "yes"][..],
        &["--tls-auth-clients", "yes", "--tls-protocols", "TLSv1.2"],
    ] {
        let server = RedisServer::start_tls_with(extra);
        let ca = server.tls_ca_cert().unwrap();
        let servers = server.tls_url();
        for args in [&["acquire", "-w", "5s", "x"][..], &["status", "x"]] {
            let context = format!("{extra:?} {args:?}");
            let (out, took) = timed(
                support::redlock()
                    .args(["-s", &servers, "--tls-ca-cert"])
                    .arg(&ca)
                    .args(args),
            );
            out.assert_code(78, &context);
            assert!(took < Duration::from_secs(2), "{context}: took {took:?}");
            assert!(
                out.stderr.contains("client certificate"),
                "{context}: {}",
                out.stderr
            );
        }
        let dbsize: i64 = redis::cmd("DBSIZE").query(&mut server.client()).unwrap();
        assert_eq!(dbsize, 0);
    }
}

/// Under TLS 1.3 the alert of a server that requires a client certificate
/// comes after the handshake: a first request written while the server
/// closes meets a broken pipe, not the alert (CI saw 69 once). A test hook
/// makes every connection fail so; the probe that follows hears the alert,
/// and the failure is the refusal it is. A server that wants no
/// certificate stays a passing failure, 69.
#[test]
fn a_broken_pipe_from_a_server_that_wants_a_client_certificate_is_a_refusal() {
    for (extra, code) in [(&["--tls-auth-clients", "yes"][..], 78), (&[][..], 69)] {
        let server = RedisServer::start_tls_with(extra);
        let ca = server.tls_ca_cert().unwrap();
        let out = run(support::redlock()
            .env("REDLOCK_TEST_BROKEN_PIPE_ON_FIRST_REQUEST", "1")
            .args(["-s", &server.tls_url(), "--tls-ca-cert"])
            .arg(&ca)
            .args(["status", "x"]));
        out.assert_code(code, &format!("{extra:?}"));
        assert_eq!(
            out.stderr.contains("client certificate"),
            code == 78,
            "{extra:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn plaintext_to_a_tls_port_is_retried_but_the_message_suggests_rediss() {
    // The server resets the connection without a word, as a server or a
    // proxy that goes away would: it cannot be told from an outage, so it
    // stays a 69, but the message names the likely cause.
    let server = RedisServer::start_tls();
    let url = format!("redis://127.0.0.1:{}", server.port());
    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "x"]));
    out.assert_code(69, "redis:// to a TLS port");
    assert!(
        out.stderr.contains("use rediss://"),
        "the message suggests TLS: {}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------
// What servers say is shown safely
// ---------------------------------------------------------------------------

/// The most a message may take that quotes a server: ours, plus 200
/// characters of the server's text and the marker of what was cut.
const MESSAGE_BOUND: usize = 1000;

/// No ESC, BEL or other control character but the line feeds that end lines.
#[track_caller]
fn assert_no_controls(text: &str, context: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{context}: a raw control character reached the terminal: {:?}",
        text.chars().take(500).collect::<String>()
    );
}

/// A message about a server's reply: one line, no control characters,
/// bounded in length.
#[track_caller]
fn assert_shown_safely(out: &Output, context: &str) {
    assert_no_panic(out, context);
    assert_no_controls(&out.stderr, context);
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "{context}: stderr must be one line: {:?}",
        out.stderr.chars().take(500).collect::<String>()
    );
    assert!(
        out.stderr.len() < MESSAGE_BOUND,
        "{context}: {} bytes on stderr: {:?}",
        out.stderr.len(),
        out.stderr.chars().take(500).collect::<String>()
    );
}

#[test]
fn an_error_reply_with_escape_sequences_is_shown_escaped_on_one_line() {
    let replies: [(&str, Vec<u8>); 3] = [
        (
            "terminal escapes",
            b"-ERR \x1b]0;PWNED\x07\x1b[2J\x1b[31mred\r\n".to_vec(),
        ),
        (
            "an HTTP answer",
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n\r\n\x1b[2J<html>\n</html>\r\n"
                .to_vec(),
        ),
        ("garbage", b"\x1b[2J\x07\xff\xfe\r\n\r\n\n\n\x00".to_vec()),
    ];
    for (what, reply) in replies {
        let server = FakeServer::answering(reply);
        for args in [
            &["acquire", "-n", "x"][..],
            &["release", "x", "tok"],
            &["extend", "x", "tok"],
        ] {
            let context = format!("{what}: {args:?}");
            let out = run(support::redlock().args(["-s", &server.url()]).args(args));
            assert_eq!(out.code(), 69, "{context}: {}", out.stderr);
            assert_shown_safely(&out, &context);
        }
        let out = run(support::redlock().args(["-s", &server.url(), "status", "x"]));
        assert_no_controls(&out.stdout, &format!("{what}: status table"));
        assert_no_controls(&out.stderr, &format!("{what}: status"));
    }
}

#[test]
fn a_huge_error_reply_is_cut() {
    let mut reply = b"-ERR ".to_vec();
    reply.extend(std::iter::repeat_n(b'A', 5 << 20));
    reply.extend(b"\r\n");
    let server = FakeServer::answering(reply);
    let out = run(support::redlock().args(["-s", &server.url(), "acquire", "-n", "x"]));
    out.assert_code(69, "a 5 MB error");
    assert_shown_safely(&out, "a 5 MB error");
    assert!(
        out.stderr.contains("…[+") && out.stderr.contains(" bytes]"),
        "the cut is marked: {}",
        out.stderr
    );
    let out = run(support::redlock().args(["-s", &server.url(), "status", "x"]));
    assert!(
        out.stdout.len() + out.stderr.len() < 2 * MESSAGE_BOUND,
        "status: {} + {} bytes",
        out.stdout.len(),
        out.stderr.len()
    );
}

#[test]
fn what_a_server_holds_is_escaped_and_cut_in_the_status_table_but_whole_in_json() {
    // The inspect script's answer: {occupant() = {type, value, PTTL, holder
    // record, the server's clock in ms}, the restart guard's word (nil: the
    // server counts), waiters in line, who broke it, the fencing counter}. A value that is not
    // ours is shown in the table; a type other than "string" too; and a
    // holder record's fields.
    let huge_value = format!("\x1b]0;PWNED\x07{}", "v".repeat(5 << 20));
    let mut held = format!(
        "*5\r\n*5\r\n$6\r\nstring\r\n${}\r\n{huge_value}\r\n:60000\r\n$-1\r\n:5000\r\n$-1\r\n:0\r\n$-1\r\n$-1\r\n",
        huge_value.len()
    )
    .into_bytes();
    let held_server = FakeServer::answering(std::mem::take(&mut held));
    let kind = "\x1b[2J\x07hash";
    let foreign = format!(
        "*5\r\n*5\r\n${}\r\n{kind}\r\n$-1\r\n:-1\r\n$-1\r\n:5000\r\n$-1\r\n:0\r\n$-1\r\n$-1\r\n",
        kind.len()
    );
    let foreign_server = FakeServer::answering(foreign);
    let evil = format!("\u{1b}]0;PWNED\u{7}{}", "h".repeat(1000));
    let record = serde_json::json!({
        "token": "tok", "host": evil, "pid": 1, "user": evil, "message": evil,
        "command": evil, "job": evil,
    })
    .to_string();
    let record = format!("1000 {record}");
    let recorded = format!(
        "*5\r\n*5\r\n$6\r\nstring\r\n$3\r\ntok\r\n:60000\r\n${}\r\n{record}\r\n:5000\r\n$-1\r\n:0\r\n$-1\r\n$-1\r\n",
        record.len()
    );
    let recorded_server = FakeServer::answering(recorded);
    for server in [&held_server, &foreign_server, &recorded_server] {
        let out = run(support::redlock().args(["-s", &server.url(), "status", "x"]));
        out.assert_code(0, "status");
        assert_no_controls(&out.stdout, "status table");
        assert!(out.stdout.lines().count() <= 4, "{:?}", out.stdout);
        assert!(
            out.stdout.lines().all(|line| line.len() < MESSAGE_BOUND),
            "status table lines are bounded: {} bytes",
            out.stdout.len()
        );
    }
    let out = run(support::redlock().args(["-s", &recorded_server.url(), "status", "x"]));
    assert!(
        out.stdout.contains("held by \\u{1b}]0;PWNED\\u{7}hhh") && out.stdout.contains("for 4s"),
        "the record is shown, escaped, with its age by the server's clock: {}",
        out.stdout
    );
    let out = run(support::redlock().args(["-s", &held_server.url(), "status", "--json", "x"]));
    out.assert_code(0, "status --json");
    let json = out.json();
    assert_eq!(
        json["token"].as_str().map(str::len),
        Some(huge_value.len()),
        "--json shows the value whole"
    );
}

/// The rules of the documented least-privileged user (the `ACL SETUSER
/// locker` line under Permissions in docs/operations.md), after its password.
fn documented_acl() -> Vec<String> {
    let operations = include_str!("../../docs/operations.md");
    let line = operations
        .lines()
        .find_map(|line| line.strip_prefix("`ACL SETUSER locker on >PASSWORD "))
        .expect("docs/operations.md shows the least-privileged user's ACL line");
    line.trim_end_matches(['`', '.'])
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_documented_least_privileged_user_can_run_every_command() {
    let cluster = Cluster::start(3);
    let rules = documented_acl();
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let servers = cluster.acl_user("locker", PASSWORD, &rules);
    // The restart guard reads INFO and TIME and writes its marker: on, at
    // 2s (no --ttl may be longer), once a first look at the servers has
    // started it and it has passed.
    let locker_under = |guard: &str, args: &[&str]| {
        let out = run(support::redlock()
            .env("REDLOCK_SERVERS", &servers)
            .env("REDLOCK_RESTART_GUARD", guard)
            .args(args));
        assert_no_panic(&out, &format!("{args:?}"));
        out
    };
    let locker = |args: &[&str]| locker_under("2s", args);
    assert_no_panic(&locker(&["status", "lk"]), "status, which starts the guard");
    // The behaviour: the guard of 2s passes.
    std::thread::sleep(Duration::from_millis(2100));
    let out = locker(&["acquire", "-n", "--ttl", "2s", "-m", "least", "lk"]);
    out.assert_code(0, "acquire");
    let token = out.stdout.trim().to_owned();
    locker(&["status", "lk"]).assert_code(0, "status");
    locker(&["extend", "--ttl", "2s", "lk", &token]).assert_code(0, "extend");
    let out = locker(&["list", "--json"]);
    out.assert_code(0, "list");
    assert_eq!(out.json()["locks"][0]["name"], "lk", "{}", out.stdout);
    locker(&["release", "lk", &token]).assert_code(0, "release");
    locker(&["acquire", "-n", "--ttl", "2s", "stale"]).assert_code(0, "acquire");
    locker(&["release", "--force", "stale"]).assert_code(0, "release --force");
    locker(&["exec", "--ttl", "300ms", "job", "--", "sleep", "0.5"]).assert_code(0, "exec");
    // A reader records who it is beside the readers (HSET, HGET, HSTRLEN)
    // and takes it away when it leaves (HDEL).
    let out = locker(&[
        "acquire", "-n", "--shared", "--ttl", "2s", "-m", "reader", "rd",
    ]);
    out.assert_code(0, "acquire --shared");
    let reader = out.stdout.trim().to_owned();
    let out = locker(&["status", "--json", "rd"]);
    out.assert_code(0, "status of a shared lock");
    assert_eq!(
        out.json()["shared_holders"][0]["holder"]["message"],
        "reader",
        "{}",
        out.stdout
    );
    locker(&["release", "rd", &reader]).assert_code(0, "release of a reader");

    // Wake-ups: the user may publish and subscribe, so a waiter is woken by
    // the release, not by its poll (forced to 5s). The guard is off here:
    // the lock must outlive the waiter's setting up.
    let locker = |args: &[&str]| locker_under("0", args);
    let out = locker(&["acquire", "-n", "woken"]);
    out.assert_code(0, "acquire");
    let token = out.stdout.trim().to_owned();
    let waiter = support::Running::spawn(
        support::redlock()
            .env("REDLOCK_SERVERS", &servers)
            .env("REDLOCK_RESTART_GUARD", "0")
            .env("REDLOCK_TEST_POLL_DELAY_MS", "5000")
            .args(["acquire", "-w", "20s", "woken"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    );
    let listening = || {
        cluster
            .servers
            .iter()
            .all(|s| s.subscribers(b"woken\0released") == 1)
    };
    assert!(
        support::wait_until(Duration::from_secs(10), listening),
        "the waiter does not listen for releases"
    );
    locker(&["release", "woken", &token]).assert_code(0, "release");
    let released = std::time::Instant::now();
    waiter
        .finish(Duration::from_secs(30))
        .assert_code(0, "the waiter");
    assert!(
        released.elapsed() < Duration::from_secs(1),
        "the waiter was not woken: {:?}",
        released.elapsed()
    );

    // The line: a free lock with someone else first in line keeps the
    // caller out (75, not a refusal of a command the scripts need), status
    // counts the waiter, and release --force clears the line.
    for server in &cluster.servers {
        server.stand_in_line("lined", 1, "000000000000001-first");
    }
    locker(&["acquire", "-n", "lined"]).assert_code(75, "someone is first in line");
    let out = locker(&["status", "--json", "lined"]);
    assert_eq!(out.json()["waiters_in_line"], 1, "{}", out.stdout);
    locker(&["release", "--force", "lined"]).assert_code(0, "release --force");
    locker(&["acquire", "-n", "lined"]).assert_code(0, "the line is gone");
}
