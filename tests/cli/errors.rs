//! Exit codes and error messages: every documented code is reachable, usage
//! errors are one `redlock: ` line and exit 64 without touching the servers,
//! configuration errors exit 78, passwords are never echoed, and nothing ever
//! panics.

use std::ffi::OsString;
use std::time::Duration;

use crate::support::assertions::{assert_no_panic, token_of};
use crate::support::{self, acquire, run, timed, Cluster, Output, RedisServer};

const PASSWORD: &str = "s3cret-pw";

/// Asserts the shape of a usage or configuration error: the code, nothing on
/// stdout, exactly one line on stderr starting with `redlock: `, no panic.
#[track_caller]
fn assert_one_line_error(out: &Output, code: i32, context: &str) {
    out.assert_code(code, context);
    assert_no_panic(out, context);
    assert_eq!(out.stdout, "", "{context}: stdout must be empty");
    assert_eq!(
        out.stderr.trim_end().lines().count(),
        1,
        "{context}: stderr must be one line: {:?}",
        out.stderr
    );
    assert!(
        out.stderr.starts_with("redlock: "),
        "{context}: stderr must start with 'redlock: ': {:?}",
        out.stderr
    );
}

/// Asserts that the password appears nowhere in the output.
#[track_caller]
fn assert_no_password(out: &Output, password: &str, context: &str) {
    assert!(
        !out.stdout.contains(password) && !out.stderr.contains(password),
        "{context}: the password was echoed\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.stdout,
        out.stderr
    );
}

fn dbsize(server: &RedisServer) -> i64 {
    redis::cmd("DBSIZE").query(&mut server.client()).unwrap()
}

// ---------------------------------------------------------------------------
// Every exit code
// ---------------------------------------------------------------------------

#[test]
fn every_documented_exit_code_is_reachable() {
    let mut cluster = Cluster::start(3);
    // 1: status of a free lock.
    run(cluster.redlock().args(["status", "codes"])).assert_code(1, "free");
    // 0: acquire, and status of a held lock.
    let token = acquire(&cluster, "codes", &[]);
    run(cluster.redlock().args(["status", "codes"])).assert_code(0, "held");
    // 75: busy.
    run(cluster.redlock().args(["acquire", "-n", "codes"])).assert_code(75, "busy");
    // 79: a token that does not hold the lock.
    run(cluster
        .redlock()
        .args(["release", "codes", "not-the-token"]))
    .assert_code(79, "lost");
    // 64: usage.
    run(cluster
        .redlock()
        .args(["acquire", "codes", "--ttl", "soon"]))
    .assert_code(64, "usage");
    // 78: configuration.
    run(support::redlock().args(["-s", "ftp://x", "status", "codes"])).assert_code(78, "config");
    // 0: release.
    run(cluster.redlock().args(["release", "codes", &token])).assert_code(0, "release");
    // 69: no quorum.
    cluster[0].kill();
    cluster[1].kill();
    run(cluster.redlock().args(["status", "codes"])).assert_code(69, "no quorum");
}

// ---------------------------------------------------------------------------
// Usage errors: 64
// ---------------------------------------------------------------------------

#[test]
fn garbage_arguments_are_one_line_usage_errors() {
    // A live server: an invalid invocation that slipped through would take
    // a lock (and be caught by DBSIZE) rather than hang.
    let server = RedisServer::start();
    let cases: &[&[&str]] = &[
        &["acquire", "x", "--bogus"],
        &["--bogus", "status", "x"],
        &["acquire", "x", "--ttl", "abc"],
        &["acquire", "x", "--ttl", "0"],
        &["acquire", "x", "--ttl", "0ms"],
        &["acquire", "x", "--ttl", "500us"],
        &["acquire", "x", "--ttl", "-5s"],
        &["acquire", "x", "--ttl", ""],
        &["acquire", "x", "--ttl", "1e400"],
        &["acquire", "x", "--ttl", "NaN"],
        &["acquire", "x", "--ttl", "99999999999999999999999"],
        &["acquire", "x", "--ttl", "366days"],
        &["extend", "x", "tok", "--ttl", "400d"],
        &["acquire", "x", "-w", "-1"],
        &["acquire", "x", "-w", "forever"],
        &["acquire", "x", "--server-timeout", "20s", "--ttl", "30s"],
        &["acquire", "x", "--server-timeout", "10s", "--ttl", "30s"],
        &["acquire", "x", "--server-timeout", "1s", "--ttl", "2s"],
        &["acquire", "x", "--server-timeout", "0"],
        &[
            "extend",
            "x",
            "tok",
            "--server-timeout",
            "10s",
            "--ttl",
            "30s",
        ],
        &["status", "x", "--server-timeout", "0"],
        &["status", "x", "--server-timeout", "abc"],
        &["acquire", ""],
        &["acquire", "", "-n"],
        &["status", ""],
        &["release", "", "tok"],
        &["extend", "", "tok"],
        &["acquire"],
        &["status"],
        &["release"],
        &["extend"],
        &["release", "x"],
        &["extend", "x"],
        &["release", "x", ""],
        &["extend", "x", ""],
        &["acquire", "x", "-n", "-w", "1"],
        &["acquire", "x", "extra"],
        &["release", "x", "tok", "extra"],
        &["status", "x", "-q", "-v"],
        &["bogus"],
        &["help", "bogus"],
        &["acquire", "x", "--ttl"],
        &["-s"],
    ];
    for args in cases {
        let out = run(support::redlock().arg("-s").arg(server.url()).args(*args));
        assert_one_line_error(&out, 64, &format!("{args:?}"));
    }
    assert_eq!(dbsize(&server), 0, "a usage error wrote to Redis");
}

#[test]
fn an_empty_token_from_the_environment_is_a_usage_error() {
    let server = RedisServer::start();
    for sub in ["release", "extend"] {
        let out =
            run(support::redlock()
                .env("REDLOCK_TOKEN", "")
                .args(["-s", &server.url(), sub, "x"]));
        assert_one_line_error(&out, 64, &format!("{sub} with REDLOCK_TOKEN=''"));
    }
}

#[test]
fn a_server_timeout_flag_overrides_an_unusable_environment_value() {
    let server = RedisServer::start();
    let redlock = || {
        let mut cmd = support::redlock();
        cmd.args(["-s", &server.url()]);
        cmd
    };
    for (env, why) in [
        ("garbage", "not a duration"),
        ("10s", "too long for --ttl 1s"),
    ] {
        let given = |args: &[&str]| {
            let mut cmd = redlock();
            cmd.env("REDLOCK_SERVER_TIMEOUT", env).args(args);
            run(&mut cmd)
        };
        let out = given(&["acquire", "-n", "x", "--ttl", "1s"]);
        assert_one_line_error(&out, 64, &format!("REDLOCK_SERVER_TIMEOUT={env} ({why})"));
        let out = given(&[
            "acquire",
            "-n",
            "x",
            "--ttl",
            "1s",
            "--server-timeout",
            "100ms",
        ]);
        out.assert_code(
            0,
            &format!("the flag wins over REDLOCK_SERVER_TIMEOUT={env}"),
        );
        run(redlock().args(["release", "x", out.stdout.trim()])).assert_code(0, "release");
    }
}

#[test]
fn a_server_flag_overrides_a_redlock_servers_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let server = RedisServer::start();
    let not_utf8 = std::ffi::OsStr::from_bytes(b"redis://127.0.0.1:1\xff");
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", not_utf8)
        .args(["status", "x"]));
    assert_one_line_error(&out, 78, "REDLOCK_SERVERS not UTF-8");
    assert!(out.stderr.contains("not valid UTF-8"), "{}", out.stderr);
    let out = run(support::redlock().env("REDLOCK_SERVERS", not_utf8).args([
        "status",
        "x",
        "-s",
        &server.url(),
    ]));
    out.assert_code(1, "-s wins over REDLOCK_SERVERS: the lock is free");
}

/// A broken server list is the error reported, even when the server timeout
/// is unusable too (a stale REDLOCK_SERVER_TIMEOUT beside a typo in -s).
#[test]
fn a_bad_server_list_is_reported_before_a_bad_timeout() {
    let out = run(support::redlock()
        .env("REDLOCK_SERVER_TIMEOUT", "abc")
        .args(["-s", "ftp://x", "acquire", "k"]));
    assert_one_line_error(&out, 78, "bad -s and bad REDLOCK_SERVER_TIMEOUT");
    assert!(out.stderr.contains("ftp://x"), "{}", out.stderr);
}

#[test]
fn no_subcommand_is_a_usage_error() {
    for args in [
        &[][..],
        &["-v"],
        &["--json"],
        &["-s", "redis://127.0.0.1:1"],
    ] {
        let out = run(support::redlock().args(args));
        out.assert_code(64, &format!("{args:?}"));
        assert_no_panic(&out, "no subcommand");
        assert!(out.stderr.contains("redlock"), "{}", out.stderr);
        assert!(
            !out.stderr.contains("generate") && !out.stderr.contains("__watchdog"),
            "hidden subcommands leaked: {}",
            out.stderr
        );
    }
}

#[test]
fn help_and_version_exit_0_on_stdout() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["acquire", "--help"],
        &["release", "-h"],
        &["extend", "--help"],
        &["status", "--help"],
    ] {
        let out = run(support::redlock().args(args));
        out.assert_code(0, &format!("{args:?}"));
        assert!(out.stdout.contains("Usage"), "{args:?}: {}", out.stdout);
        assert_eq!(out.stderr, "");
    }
    let out = run(support::redlock().arg("--version"));
    out.assert_code(0, "--version");
    assert!(out.stdout.starts_with("redlock "), "{}", out.stdout);
    let out = run(support::redlock().arg("--help"));
    for code in ["64", "69", "75", "78", "79"] {
        assert!(out.stdout.contains(code), "--help lacks exit code {code}");
    }
}

#[test]
fn a_ttl_redis_cannot_store_is_a_usage_error_not_no_quorum() {
    // 10^16 s is 10^19 ms, more than Redis accepts for PX (a signed 64-bit
    // number): the servers answer "value is not an integer or out of range"
    // every time. That is the user's input, not an outage, so it must be a
    // usage error; it must not be retried (without -w it would block forever)
    // nor be reported as "no quorum" while every server is up.
    let cluster = Cluster::start(3);
    let (out, took) = timed(cluster.redlock().args([
        "acquire",
        "-w",
        "1s",
        "--ttl",
        "10000000000000000",
        "huge",
    ]));
    assert_one_line_error(&out, 64, "acquire --ttl 1e16s");
    assert!(took < Duration::from_millis(900), "retried for {took:?}");
    let token = acquire(&cluster, "huge", &[]);
    let out = run(cluster
        .redlock()
        .args(["extend", "huge", &token, "--ttl", "10000000000000000"]));
    assert_one_line_error(&out, 64, "extend --ttl 1e16s");
}

// ---------------------------------------------------------------------------
// Configuration errors: 78
// ---------------------------------------------------------------------------

#[test]
fn unusable_server_urls_are_configuration_errors() {
    let server = RedisServer::start();
    let port = server.port();
    let cases = [
        "ftp://x".to_string(),
        "http://127.0.0.1:80".to_string(),
        "redis://h:notaport".to_string(),
        "redis://127.0.0.1:99999".to_string(),
        format!("redis://127.0.0.1:{port}/notadb"),
        "redis+unix://".to_string(),
        "redis://".to_string(),
        "://".to_string(),
    ];
    for url in &cases {
        for sub in [
            &["acquire", "-n", "x"][..],
            &["status", "x"],
            &["release", "x", "t"],
        ] {
            let out = run(support::redlock().args(["-s", url]).args(sub));
            assert_one_line_error(&out, 78, &format!("-s {url:?} {sub:?}"));
        }
        // The environment variable is validated the same way, and a bad URL
        // among good ones spoils the configuration.
        let out = run(support::redlock()
            .env("REDLOCK_SERVERS", format!("{},{url}", server.url()))
            .args(["acquire", "-n", "x"]));
        assert_one_line_error(&out, 78, &format!("REDLOCK_SERVERS with {url:?}"));
    }
    assert_eq!(
        dbsize(&server),
        0,
        "nothing is written when the config is bad"
    );
}

/// `-s http://…` says which schemes work, not redis-rs's "did not parse -
/// InvalidClientConfig"; from the flag, the variable and a servers file.
#[test]
fn a_url_of_another_scheme_names_the_schemes_that_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers");
    std::fs::write(&file, "http://:hunter2@127.0.0.1:80\n").unwrap();
    let mut flag = support::redlock();
    flag.args(["-s", "http://127.0.0.1:80", "status", "x"]);
    let mut variable = support::redlock();
    variable
        .env("REDLOCK_SERVERS", "https://h:443")
        .args(["acquire", "-n", "x"]);
    let mut servers_file = support::redlock();
    servers_file
        .arg("--servers-file")
        .arg(&file)
        .args(["release", "x", "t"]);
    let runs = [
        (flag, "-s"),
        (variable, "REDLOCK_SERVERS"),
        (servers_file, "--servers-file"),
    ];
    for (mut cmd, source) in runs {
        let out = run(&mut cmd);
        assert_one_line_error(&out, 78, source);
        for word in ["is no Redis URL", "redis://", "rediss://", "redis+unix://"] {
            assert!(
                out.stderr.contains(word),
                "{source}: no {word:?} in {}",
                out.stderr
            );
        }
        assert!(
            !out.stderr.contains("InvalidClientConfig"),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    }
}

#[test]
fn the_same_server_listed_twice_is_a_configuration_error() {
    let server = RedisServer::start();
    let url = server.url();
    let bare = format!("127.0.0.1:{}", server.port());
    let cases: Vec<Vec<String>> = vec![
        vec!["-s".into(), url.clone(), "-s".into(), url.clone()],
        vec!["-s".into(), format!("{url},{url}")],
        vec!["-s".into(), format!("{url}, {url} ")],
        vec!["-s".into(), bare.clone(), "-s".into(), url.clone()],
    ];
    for args in &cases {
        let out = run(support::redlock().args(args).args(["acquire", "-n", "x"]));
        assert_one_line_error(&out, 78, &format!("{args:?}"));
        assert!(out.stderr.contains("twice"), "{}", out.stderr);
    }
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", format!("{url},{url}"))
        .args(["status", "x"]));
    assert_one_line_error(&out, 78, "REDLOCK_SERVERS twice");
    assert_eq!(dbsize(&server), 0);
}

#[test]
fn the_same_server_spelled_differently_is_listed_twice() {
    // `redis://H:P`, `redis://H:P/`, `redis://H:P/0` and `localhost` for
    // 127.0.0.1 are the same master (docs/operations.md: "whatever the database number,
    // user or spelling"). Listed together they are counted as two servers:
    // a free lock is then reported busy (the second SET NX fails on the
    // shared key) where the duplicate must be refused (78).
    let server = RedisServer::start();
    let url = server.url();
    for other in [
        format!("{url}/0"),
        format!("{url}/"),
        format!("redis://localhost:{}", server.port()),
    ] {
        let out = run(support::redlock().args(["-s", &url, "-s", &other, "acquire", "-n", "dup"]));
        assert_one_line_error(&out, 78, &format!("-s {url} -s {other}"));
        assert!(out.stderr.contains("twice"), "{}", out.stderr);
    }
    assert_eq!(dbsize(&server), 0);
}

#[test]
fn two_databases_of_one_server_are_not_two_masters() {
    // Two database numbers of one redis-server are one master: one process
    // that fails as one. Counting them as two lets a single server form a
    // quorum of 2 out of 2 (or 2 out of 3), which is exactly what the
    // "listed twice" check exists to prevent.
    let server = RedisServer::start();
    let out = run(support::redlock().args([
        "-s",
        &format!("{}/1", server.url()),
        "-s",
        &format!("{}/2", server.url()),
        "acquire",
        "-n",
        "one-master",
    ]));
    assert_one_line_error(&out, 78, "db 1 and db 2 of one server");
}

#[test]
fn an_unreadable_tls_ca_cert_is_a_configuration_error() {
    let server = RedisServer::start_tls();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let big = dir.path().join("big.pem");
    std::fs::write(&big, vec![b'A'; 1024 * 1024 + 1]).unwrap();
    for path in [
        OsString::from("/nonexistent/ca.pem"),
        dir.path().as_os_str().to_owned(),
        // Neither may hang us nor eat memory: only a small regular file is read.
        OsString::from("/dev/zero"),
        fifo.into_os_string(),
        big.into_os_string(),
    ] {
        let (out, took) = timed(
            support::redlock()
                .args(["-s", &server.tls_url(), "--tls-ca-cert"])
                .arg(&path)
                .args(["acquire", "-n", "x"]),
        );
        assert_one_line_error(&out, 78, &format!("--tls-ca-cert {path:?}"));
        assert!(out.stderr.contains("--tls-ca-cert"), "{}", out.stderr);
        assert!(took < Duration::from_secs(2), "{path:?} took {took:?}");
    }
    let out = run(support::redlock()
        .env("REDLOCK_TLS_CA_CERT", "/nonexistent/ca.pem")
        .args(["-s", &server.tls_url(), "status", "x"]));
    assert_one_line_error(&out, 78, "REDLOCK_TLS_CA_CERT");
}

/// The CA file is read only when a URL uses TLS.
#[test]
fn a_tls_ca_cert_is_not_read_without_a_tls_server() {
    let server = RedisServer::start();
    let out = run(support::redlock()
        .args(["-s", &server.url(), "--tls-ca-cert", "/dev/zero"])
        .args(["status", "x"]));
    out.assert_code(1, "a plain server does not need the CA");
    assert_eq!(out.stderr, "");
}

#[test]
fn a_tls_ca_cert_without_any_certificate_is_a_configuration_error() {
    // A readable file that holds no PEM certificate can never verify any
    // server: an unusable TLS setting (78), not an outage (69) that `acquire`
    // without -n would retry forever.
    let server = RedisServer::start_tls();
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not a certificate\n").unwrap();
    let out = run(support::redlock()
        .args(["-s", &server.tls_url(), "--tls-ca-cert"])
        .arg(&garbage)
        .args(["--server-timeout", "2s", "acquire", "-w", "500ms", "x"]));
    assert_one_line_error(&out, 78, "--tls-ca-cert with no certificate");
}

#[test]
fn a_url_option_that_can_never_connect_is_a_configuration_error() {
    // redis-rs reads `#insecure` as "skip certificate checks", which this
    // build cannot do: every connection fails with InvalidClientConfig.
    // That is known before any server is asked, so it must be a 78, not a
    // 69 that acquire without -n retries forever.
    let server = RedisServer::start_tls();
    let url = format!("{}/#insecure", server.tls_url());
    let out = run(support::redlock().args(["-s", &url, "acquire", "-w", "500ms", "x"]));
    assert_one_line_error(&out, 78, "rediss://...#insecure");
}

// ---------------------------------------------------------------------------
// Passwords are never echoed
// ---------------------------------------------------------------------------

#[test]
fn the_right_password_works_and_is_never_printed() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}", server.port());

    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "-v", "pw"]));
    out.assert_code(0, "acquire with the right password");
    assert_no_password(&out, PASSWORD, "acquire -v");
    assert!(
        out.stderr.contains(":***@"),
        "-v names the server: {}",
        out.stderr
    );
    let token = token_of(&out);
    assert_eq!(server.get(b"pw"), Some(token.clone().into_bytes()));

    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "--json", "pw2"]));
    out.assert_code(0, "acquire --json");
    assert_no_password(&out, PASSWORD, "acquire --json");

    for args in [
        &["status", "pw"][..],
        &["status", "--json", "pw"],
        &["status", "-v", "pw"],
        &["extend", "-v", "--json", "pw", &token],
        &["acquire", "-n", "--json", "pw"],
        &["release", "-v", "--json", "pw", &token],
        &["release", "-v", "--json", "pw", &token],
    ] {
        let out = run(support::redlock().args(["-s", &url]).args(args));
        assert_no_password(&out, PASSWORD, &format!("{args:?}"));
        assert_no_panic(&out, &format!("{args:?}"));
    }
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["status", "--json", "pw"]));
    out.assert_code(1, "released");
    assert!(out.stdout.contains(":***@127.0.0.1"), "{}", out.stdout);
    assert_no_password(&out, PASSWORD, "status --json");
}

#[test]
fn a_percent_encoded_password_works_and_neither_form_is_printed() {
    let server = RedisServer::start_with(&["--requirepass", "p@ss,wo rd"]);
    let url = format!("redis://:p%40ss%2Cwo%20rd@127.0.0.1:{}", server.port());
    let out = run(support::redlock().args(["-s", &url, "acquire", "-n", "-v", "enc"]));
    out.assert_code(0, "percent-encoded password");
    let token = token_of(&out);
    assert_eq!(server.get(b"enc"), Some(token.into_bytes()));
    let out = run(support::redlock().args(["-s", &url, "status", "--json", "enc"]));
    out.assert_code(0, "status");
    for shown in ["p%40ss", "p@ss", "wo rd", "wo%20rd"] {
        assert_no_password(&out, shown, "status --json");
    }
}

#[test]
fn a_wrong_password_is_a_final_refusal_that_hides_the_password() {
    // Refusals (wrong password, NOAUTH) on so many servers that no majority
    // is possible are configuration errors: 78 at once, even with -w.
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let port = server.port();
    for (url, secret) in [
        (
            format!("redis://:wrong-pw-123@127.0.0.1:{port}"),
            "wrong-pw-123",
        ),
        (
            format!("redis://alice:wrong-pw-123@127.0.0.1:{port}"),
            "wrong-pw-123",
        ),
        (format!("redis://127.0.0.1:{port}"), PASSWORD),
    ] {
        for args in [
            &["acquire", "-n", "pw"][..],
            &["acquire", "-w", "5s", "pw"],
            &["status", "pw"],
            &["status", "--json", "pw"],
            &["release", "pw", "tok"],
            &["extend", "pw", "tok"],
        ] {
            let context = format!("{url} {args:?}");
            let (out, took) = timed(support::redlock().args(["-s", &url]).args(args));
            out.assert_code(78, &context);
            assert!(took < Duration::from_secs(2), "{context}: took {took:?}");
            assert_no_panic(&out, &context);
            assert_no_password(&out, secret, &context);
            assert!(
                out.stderr.contains(&format!("127.0.0.1:{port}")),
                "{context}: the failing server must be named: {}",
                out.stderr
            );
        }
    }
    let out = run(support::redlock().args([
        "-s",
        &format!("redis://:wrong-pw-123@127.0.0.1:{port}"),
        "acquire",
        "-n",
        "--json",
        "pw",
    ]));
    out.assert_code(78, "wrong password --json");
    assert!(out.stderr.contains(":***@127.0.0.1"), "{}", out.stderr);
    let json = out.json();
    assert_eq!(json["error"], "refused");
    let message = json["message"].as_str().expect("message is a string");
    assert!(!message.contains("wrong-pw-123"), "{message}");
    assert_eq!(server.get(b"pw"), None);
}

#[test]
fn a_refusal_from_a_minority_does_not_matter() {
    let open = Cluster::start(2);
    let guarded = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let servers = format!(
        "{},redis://:wrong-pw-123@127.0.0.1:{}",
        open.servers_arg(),
        guarded.port()
    );
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &servers)
        .args(["acquire", "-n", "-v", "mostly"]));
    out.assert_code(0, "2 of 3 accept");
    assert_no_password(&out, "wrong-pw-123", "-v");
    let token = token_of(&out);
    assert_eq!(
        open.get_all(b"mostly"),
        vec![Some(token.clone().into_bytes()); 2]
    );
    run(support::redlock()
        .env("REDLOCK_SERVERS", &servers)
        .args(["release", "mostly", &token]))
    .assert_code(0, "release on 2 of 3");
}

#[test]
fn passwords_to_dead_or_unparsable_servers_are_not_echoed() {
    let dead = {
        let mut server = RedisServer::start();
        server.kill();
        server
    };
    let dead_url = format!("redis://:{PASSWORD}@127.0.0.1:{}", dead.port());
    // -q: no warning about the password on the command line, only the error.
    let (out, took) = timed(support::redlock().args(["-q", "-s", &dead_url, "acquire", "-n", "x"]));
    assert_one_line_error(&out, 69, "dead server with a password");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert_no_password(&out, PASSWORD, "dead");
    assert!(out.stderr.contains(":***@"), "{}", out.stderr);

    for url in [
        format!("redis://:{PASSWORD}@127.0.0.1:notaport"),
        format!("redis://user:{PASSWORD}@"),
        format!("ftp://:{PASSWORD}@127.0.0.1:1"),
        format!("redis://:{PASSWORD}@[::1"),
        format!("redis://:{PASSWORD}@127.0.0.1:1/notadb"),
        format!("redis+unix:///nonexistent.sock?db=x&pass={PASSWORD}"),
    ] {
        let out = run(support::redlock().args(["-s", &url, "status", "x"]));
        assert_one_line_error(&out, 78, &url);
        assert_no_password(&out, PASSWORD, &url);
    }
    // A password written without the colon (user-info only) is hidden too.
    let out = run(support::redlock().args([
        "-s",
        &format!("redis://{PASSWORD}@127.0.0.1:{}", dead.port()),
        "status",
        "x",
    ]));
    out.assert_code(69, "user-info only");
    assert_no_password(&out, PASSWORD, "user-info only");
    // And in the query of a unix socket URL.
    let out = run(support::redlock().args([
        "-s",
        &format!("redis+unix:///nonexistent/redis.sock?pass={PASSWORD}"),
        "status",
        "x",
    ]));
    out.assert_code(69, "missing socket");
    assert_no_password(&out, PASSWORD, "unix ?pass=");
}

#[test]
fn passwords_with_unencoded_reserved_characters_are_not_echoed() {
    // An unencoded `?`, `/` or `#` in the password makes the URL unparsable
    // (or changes where the host starts); the message must still hide every
    // part of it. (`?` used to be printed verbatim: the redaction split off
    // the "query" before looking for the '@'.)
    for secret in ["s3cret?pw", "s3cret/pw", "s3cret#pw", "s3cret?p/w#x"] {
        for url in [
            format!("redis://:{secret}@127.0.0.1:1"),
            format!("redis://alice:{secret}@127.0.0.1:1/2"),
        ] {
            let out = run(support::redlock().args(["-s", &url, "status", "x"]));
            assert_ne!(out.code(), 0, "{url}");
            assert_no_panic(&out, &url);
            assert_no_password(&out, secret, &url);
            assert_no_password(&out, "s3cret", &format!("{url}: first half"));
        }
    }
}

#[test]
fn help_never_shows_passwords_from_the_environment() {
    let url = format!("redis://:{PASSWORD}@127.0.0.1:6390");
    for args in [
        &["--help"][..],
        &["-h"],
        &["acquire", "--help"],
        &["release", "--help"],
        &["extend", "--help"],
        &["status", "--help"],
    ] {
        let out = run(support::redlock()
            .env("REDLOCK_SERVERS", &url)
            .env("REDLOCK_TOKEN", "token-secret-42")
            .args(args));
        out.assert_code(0, &format!("{args:?}"));
        assert_no_password(&out, PASSWORD, &format!("{args:?}"));
        assert_no_password(&out, "token-secret-42", &format!("{args:?}"));
    }
    // Usage errors do not print it either.
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["acquire", "x", "--bogus"]));
    assert_one_line_error(&out, 64, "usage error with a password in the env");
    assert_no_password(&out, PASSWORD, "usage error");
}
