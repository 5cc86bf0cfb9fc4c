//! Issue 29, the rough edges of the inputs: a `-s NAME` that does not
//! resolve, a lock NAME and a command swapped, a mistyped port or URL, a
//! `#insecure` TLS URL, a user name against a server without ACL users, a
//! fencing counter that is no number, and a byte order mark in the config
//! file. Each against the real binary, with real servers where one is
//! involved.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use crate::support::assertions::{assert_one_line_error, assert_stderr_says};
use crate::support::{self, run, timed, Cluster, RedisServer};

/// The flock habit: `exec -s NAME CMD ARG` takes NAME as a server. A name
/// that does not resolve is a configuration error at once, which says
/// what `-s deploy` was taken as and what -s is; it used to wait (here
/// for -w 3s, without -w for ever) and end in a 69 that named nothing.
#[test]
fn exec_s_name_says_at_once_what_the_name_was_taken_as() {
    let dir = support::temp_dir("rough-inputs");
    let (out, took) = timed(support::redlock().current_dir(dir.path()).args([
        "exec",
        "-s",
        "deploy.invalid",
        "-w",
        "3s",
        "sh",
        "-c",
        "touch ran",
    ]));
    assert_one_line_error(&out, 78, &[], "exec -s NAME");
    assert!(
        out.stderr.contains(
            "-s deploy.invalid: taken as the server redis://deploy.invalid:6379, whose name \
             does not resolve ("
        ),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("is --shared"), "{}", out.stderr);
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(!dir.path().join("ran").exists(), "the command ran");
    // With one word after NAME, the command is missing: said with what -s is.
    let out = run(support::redlock().args(["exec", "-s", "deploy", "./job.sh"]));
    assert_one_line_error(&out, 64, &[], "exec -s NAME CMD");
    assert!(
        out.stderr.contains(
            "no command to run: give it after NAME, or after `--` to name the lock after it; \
             -s deploy names a Redis server here, not the lock"
        ),
        "{}",
        out.stderr
    );
}

/// A name that does not resolve beside servers that still make a majority
/// counts as a server that is down: the lock is taken, and a warning
/// names the server (it said nothing before).
#[test]
fn a_name_that_does_not_resolve_beside_a_majority_is_named_and_the_lock_taken() {
    let cluster = Cluster::start(2);
    let servers = format!("{},redis://gone.invalid:6379", cluster.servers_arg());
    let out = run(support::redlock().env("REDLOCK_SERVERS", &servers).args([
        "acquire",
        "-n",
        "--ttl",
        "5s",
        "unresolved-minority",
    ]));
    out.assert_code(0, "acquire with 2 of 3");
    let expected = format!(
        "redlock: REDLOCK_SERVERS: redis://gone.invalid:6379: the name gone.invalid does not \
         resolve ({}); it counts as a server that is down",
        resolver_words(&out.stderr)
    );
    assert_eq!(out.stderr.trim_end(), expected);
    // Two of three unresolvable: no majority can ever answer.
    let servers = format!(
        "{},gone.invalid,also-gone.invalid:7000",
        cluster.servers[0].url()
    );
    let out = run(support::redlock().env("REDLOCK_SERVERS", &servers).args([
        "acquire",
        "-n",
        "unresolved-majority",
    ]));
    assert_one_line_error(&out, 78, &[], "2 of 3 unresolvable");
    assert!(
        out.stderr.contains(
            "REDLOCK_SERVERS: gone.invalid: taken as the server redis://gone.invalid:6379"
        ) && out
            .stderr
            .contains("1 of 3 servers are left, fewer than the 2 a lock needs"),
        "{}",
        out.stderr
    );
}

/// The resolver's words in a message (glibc and musl word it differently).
fn resolver_words(stderr: &str) -> String {
    let start = stderr
        .find("resolve (")
        .map_or(0, |at| at + "resolve (".len());
    let end = stderr[start..].find(')').map_or(start, |at| start + at);
    stderr[start..end].to_owned()
}

/// `exec ./deploy.sh staging` takes the script as the lock's NAME and
/// `staging` as the command: the message says so, with the command line
/// meant. The same after following clap's tip into `exec ./report.sh --
/// --full`; and clap's tip itself now leads to the right line.
#[test]
fn a_name_that_is_the_command_is_pointed_at() {
    let cluster = Cluster::start(1);
    let dir = support::temp_dir("rough-inputs");
    let script = dir.path().join("deploy.sh");
    std::fs::write(&script, "#!/bin/sh\necho deployed \"$@\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out =
        run(cluster
            .redlock()
            .current_dir(dir.path())
            .args(["exec", "./deploy.sh", "staging"]));
    out.assert_code(127, "exec ./deploy.sh staging");
    assert_stderr_says(
        &out,
        &[
            "cannot run staging: No such file or directory (os error 2); ./deploy.sh, taken as \
             the lock's NAME, is a command itself: did you mean `redlock exec -- ./deploy.sh \
             staging`",
        ],
        "exec ./deploy.sh staging",
    );
    let out = run(cluster.redlock().current_dir(dir.path()).args([
        "exec",
        "./deploy.sh",
        "--",
        "--full",
    ]));
    out.assert_code(127, "clap's tip followed");
    assert_stderr_says(
        &out,
        &["did you mean `redlock exec -- ./deploy.sh --full`"],
        "clap's tip followed",
    );
    // A NAME that is no command: no hint.
    let out = run(cluster
        .redlock()
        .args(["exec", "nightly", "no-such-command"]));
    out.assert_code(127, "exec nightly no-such-command");
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
    // clap's tip: not "-- --full" (which runs --full) but the line meant.
    let out = run(cluster.redlock().current_dir(dir.path()).args([
        "exec",
        "-n",
        "./deploy.sh",
        "--full",
        "now",
    ]));
    assert_one_line_error(&out, 64, &[], "exec ./deploy.sh --full");
    assert!(!out.stderr.contains("'-- --full'"), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "tip: ./deploy.sh was taken as the lock's NAME; to run it, put `--` before it: \
             redlock exec [OPTIONS] -- ./deploy.sh --full now"
        ),
        "{}",
        out.stderr
    );
    let out = run(cluster.redlock().args(["exec", "nightly", "--bogus", "ls"]));
    assert_one_line_error(&out, 64, &[], "exec nightly --bogus ls");
    assert!(
        !out.stderr.contains("'-- --bogus'") && out.stderr.contains("--bogus is no option of exec"),
        "{}",
        out.stderr
    );
}

/// Mistyped URLs, refused in redlock's words before any server is asked:
/// a port typo is shown (it was hidden as if it were a password), a URL
/// that lost a ':' is no "Invalid database number", `#insecure` is no
/// message about a feature of the Redis library.
#[test]
fn mistyped_urls_say_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        (
            "redis://127.0.0.1:6379x",
            "invalid server URL redis://127.0.0.1:6379x: the port 6379x is not a number",
        ),
        (
            "127.0.0.1:70000",
            "invalid server URL redis://127.0.0.1:70000: port 70000 is out of range",
        ),
        (
            "redis//127.0.0.1:6379",
            "the scheme lacks its \"://\" (did you mean redis://127.0.0.1:6379?)",
        ),
        (
            "redis://127.0.0.1/6379",
            "database 6379, which looks like a port without its ':' (redis://127.0.0.1:6379)",
        ),
        (
            "redis://127.0.0.1:6379/:0",
            "the path /:0 is no database number",
        ),
        (
            "rediss://127.0.0.1:6380/#insecure",
            "redlock does not skip the check of a server's certificate (#insecure); give the \
             CA that signed it with --tls-ca-cert FILE",
        ),
    ];
    for (url, expected) in cases {
        let out = run(support::redlock().args(["-s", url, "status", "x"]));
        assert_one_line_error(&out, 78, &[], url);
        assert!(out.stderr.contains(expected), "{url}: {}", out.stderr);
        for internal in ["Invalid database number", "feature", "did not parse"] {
            assert!(!out.stderr.contains(internal), "{url}: {}", out.stderr);
        }
    }
    // What may be a password without its @host stays hidden.
    let out = run(support::redlock().args(["-s", "redis://admin:hunter2", "status", "x"]));
    assert_one_line_error(&out, 78, &[], "a password without its host");
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("redis://admin:***: what follows the host's ':' is no port"),
        "{}",
        out.stderr
    );
}

/// A user name with a wrong password: the refusal says that a server older
/// than Redis 6 has no ACL users (redis-rs then tries the password alone).
/// Redis 5 is not installed here: a Redis 7 refuses the same way.
#[test]
fn a_refused_user_name_says_that_old_servers_have_no_users() {
    let server = RedisServer::start_with(&["--requirepass", "right-one"]);
    let url = format!("redis://deployer:wrong-one@127.0.0.1:{}", server.port());
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["acquire", "-n", "x"]));
    assert_one_line_error(&out, 78, &[], "a user name refused");
    assert!(
        out.stderr.contains(
            "refused us (Password authentication failed (the URL names a user: if the server \
             is older than Redis 6, it has no ACL users and checks the password alone, against \
             its requirepass))"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("wrong-one"), "{}", out.stderr);
    // Without a user name, no such hint.
    let url = format!("redis://:wrong-one@127.0.0.1:{}", server.port());
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["acquire", "-n", "x"]));
    assert_one_line_error(&out, 78, &[], "a password refused");
    assert!(!out.stderr.contains("ACL users"), "{}", out.stderr);
}

/// A byte order mark at the start of the config file is skipped, as in a
/// servers file: one rule (the config file refused it).
#[test]
fn a_byte_order_mark_is_skipped_in_both_files() {
    let cluster = Cluster::start(1);
    let dir = support::temp_dir("rough-inputs");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    let config = write("config", "\u{feff}prefix = bom:\n");
    let servers = write("servers", &format!("\u{feff}{}\n", cluster[0].url()));
    let out = run(support::redlock()
        .arg("--config-file")
        .arg(&config)
        .arg("--servers-file")
        .arg(&servers)
        .args(["acquire", "-n", "--ttl", "5s", "x"]));
    out.assert_code(0, "a BOM in both files");
    assert_eq!(out.stderr, "");
    // The first line was read: the key has the file's prefix.
    assert!(cluster[0].get(b"bom:x").is_some(), "no key bom:x");
}
