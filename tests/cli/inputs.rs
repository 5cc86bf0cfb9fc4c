//! Trusting the inputs (issue 8): where the servers come from, what the
//! command under `exec` is told, misconfiguration as exit 78, and the token
//! as a lock only while it is valid. Every test runs the binary against real
//! servers.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::support::{self, acquire, run, timed, Cluster, Output, RedisServer, Running};

const PASSWORD: &str = "s3cr3t-for-inputs";

fn one_line_error(out: &Output, code: i32, context: &str) {
    out.assert_code(code, context);
    assert_eq!(out.stderr.lines().count(), 1, "{context}: {:?}", out.stderr);
    assert!(
        out.stderr.starts_with("redlock: "),
        "{context}: {:?}",
        out.stderr
    );
}

fn servers_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// A way of giving the servers to a command.
type Configure<'a> = dyn Fn(&mut std::process::Command) + 'a;

/// The command under `exec` prints its environment and runs a nested
/// `redlock status` of the same lock: no password anywhere in what it sees,
/// and the nested call finds the lock held (0), however the servers were
/// given.
#[test]
fn exec_keeps_the_password_from_the_command_yet_nested_calls_reach_the_servers() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}", server.port());
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), "servers", &format!("{url}\n"), 0o600);
    let script =
        r#"env; tr '\0' ' ' < /proc/$$/cmdline; echo; "$0" status nested; echo "nested=$?""#;
    let bin = env!("CARGO_BIN_EXE_redlock");
    let by_env = |cmd: &mut std::process::Command| {
        cmd.env("REDLOCK_SERVERS", &url);
    };
    let by_flag = |cmd: &mut std::process::Command| {
        cmd.args(["-q", "-s", &url]);
    };
    let by_file = |cmd: &mut std::process::Command| {
        cmd.env("REDLOCK_SERVERS_FILE", &file);
    };
    let cases: [(&str, &Configure<'_>); 3] = [
        ("REDLOCK_SERVERS", &by_env),
        ("-s", &by_flag),
        ("servers file", &by_file),
    ];
    for (how, configure) in cases {
        let mut cmd = support::redlock();
        configure(&mut cmd);
        let out = run(cmd.args(["exec", "nested", "--", "sh", "-c", script, bin]));
        out.assert_code(0, how);
        assert!(
            !out.stdout.contains(PASSWORD),
            "{how}: the command saw it:\n{}",
            out.stdout
        );
        assert!(
            out.stdout.contains("nested=0"),
            "{how}: {}\n{}",
            out.stdout,
            out.stderr
        );
        assert!(!out.stderr.contains(PASSWORD), "{how}: {}", out.stderr);
    }
}

/// A lock taken on server A; which server a command used shows in whether it
/// finds the lock held (0) or free (1).
struct TwoSites {
    a: RedisServer,
    b: RedisServer,
    dir: tempfile::TempDir,
}

impl TwoSites {
    fn new() -> Self {
        let sites = TwoSites {
            a: RedisServer::start(),
            b: RedisServer::start(),
            dir: tempfile::tempdir().unwrap(),
        };
        let out = run(support::redlock().args(["-s", &sites.a.url(), "acquire", "-n", "site"]));
        out.assert_code(0, "acquire on A");
        sites
    }

    fn file(&self, name: &str, server: &RedisServer) -> PathBuf {
        servers_file(
            self.dir.path(),
            name,
            &format!("# {name}\n\n{}\n", server.url()),
            0o600,
        )
    }

    /// "A" or "B": the server `cmd`'s `status site` looked at.
    fn used(&self, cmd: &mut std::process::Command) -> &'static str {
        let out = run(cmd.args(["status", "-q", "site"]));
        match out.code() {
            0 => "A",
            1 => "B",
            _ => panic!("status: {} {}", out.code(), out.stderr),
        }
    }
}

#[test]
fn servers_come_from_the_flag_then_the_env_then_a_file() {
    let sites = TwoSites::new();
    let (file_a, file_b) = (sites.file("a", &sites.a), sites.file("b", &sites.b));
    let base = || {
        let mut cmd = support::redlock();
        cmd.env("XDG_CONFIG_HOME", sites.dir.path().join("nothing-here"));
        cmd
    };
    // Each source alone.
    assert_eq!(sites.used(base().arg("--servers-file").arg(&file_a)), "A");
    assert_eq!(sites.used(base().env("REDLOCK_SERVERS_FILE", &file_b)), "B");
    // The flag wins over the file.
    assert_eq!(
        sites.used(
            base()
                .args(["-s", &sites.b.url(), "--servers-file"])
                .arg(&file_a)
        ),
        "B"
    );
    // REDLOCK_SERVERS wins over the file; an empty one defers to it.
    let env = |value: &str| {
        let mut cmd = base();
        cmd.env("REDLOCK_SERVERS", value)
            .env("REDLOCK_SERVERS_FILE", &file_a);
        cmd
    };
    assert_eq!(sites.used(&mut env(&sites.b.url())), "B");
    assert_eq!(sites.used(&mut env("")), "A");
    // -s wins over REDLOCK_SERVERS.
    assert_eq!(
        sites.used(env(&sites.a.url()).args(["-s", &sites.b.url()])),
        "B"
    );
}

#[test]
fn the_users_servers_file_is_used_when_nothing_else_names_servers() {
    let sites = TwoSites::new();
    let config = sites.dir.path().join("config");
    std::fs::create_dir_all(config.join("redlock")).unwrap();
    std::fs::copy(sites.file("b", &sites.b), config.join("redlock/servers")).unwrap();
    let with_config = || {
        let mut cmd = support::redlock();
        cmd.env("XDG_CONFIG_HOME", &config);
        cmd
    };
    assert_eq!(sites.used(&mut with_config()), "B");
    // A file given explicitly comes first.
    let file_a = sites.file("a", &sites.a);
    assert_eq!(
        sites.used(with_config().arg("--servers-file").arg(&file_a)),
        "A"
    );
}

#[test]
fn a_servers_file_that_others_can_read_is_warned_about_when_it_holds_a_password() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}", server.port());
    let open = servers_file(dir.path(), "open", &format!("{url}\n"), 0o644);
    let status = |file: &Path, extra: &[&str]| {
        run(support::redlock()
            .arg("--servers-file")
            .arg(file)
            .args(extra)
            .args(["status", "x"]))
    };
    let out = status(&open, &[]);
    out.assert_code(1, "free");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("can be read by group or others"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("chmod 600"), "{}", out.stderr);
    assert!(!out.stderr.contains(PASSWORD));
    assert_eq!(status(&open, &["-q"]).stderr, "", "-q silences it");
    let closed = servers_file(dir.path(), "closed", &format!("{url}\n"), 0o600);
    assert_eq!(status(&closed, &[]).stderr, "");
    let no_secret = servers_file(dir.path(), "plain", "127.0.0.1:1\n", 0o644);
    let out = status(&no_secret, &[]);
    assert!(!out.stderr.contains("can be read"), "{}", out.stderr);
}

#[test]
fn a_password_on_the_command_line_is_warned_about_once() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}", server.port());
    let out = run(support::redlock().args(["-s", &url, "status", "x"]));
    out.assert_code(1, "free");
    assert_eq!(
        out.stderr.matches("can be read by every user").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--servers-file"), "{}", out.stderr);
    assert!(!out.stderr.contains(PASSWORD));
    let quiet = run(support::redlock().args(["-q", "-s", &url, "status", "x"]));
    assert_eq!(quiet.stderr, "");
    let env = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["status", "x"]));
    assert_eq!(env.stderr, "", "not on the command line: no warning");
}

#[test]
fn usage_errors_do_not_echo_passwords() {
    let out = run(support::redlock().args([
        "-s",
        &format!("redis://:{PASSWORD}@h:1"),
        &format!("redis://:{PASSWORD}@h:2"),
        "status",
        "x",
    ]));
    one_line_error(&out, 64, "an unexpected second URL");
    assert!(!out.stderr.contains(PASSWORD), "{}", out.stderr);
    assert!(out.stderr.contains("redis://:***@h:2"), "{}", out.stderr);
}

#[test]
fn an_empty_server_list_is_a_configuration_error_naming_its_source() {
    for value in ["", ",", " , "] {
        let out = run(support::redlock()
            .env("REDLOCK_SERVERS", value)
            .args(["status", "x"]));
        one_line_error(&out, 78, &format!("REDLOCK_SERVERS={value:?}"));
        assert!(
            out.stderr
                .contains("REDLOCK_SERVERS is set but names no server"),
            "{}",
            out.stderr
        );
        let out = run(support::redlock().args(["-s", value, "status", "x"]));
        one_line_error(&out, 78, &format!("-s {value:?}"));
        assert!(
            out.stderr.contains("--server is set but names no server"),
            "{}",
            out.stderr
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let empty = servers_file(dir.path(), "empty", "# nothing yet\n\n", 0o600);
    let out = run(support::redlock()
        .arg("--servers-file")
        .arg(&empty)
        .args(["status", "x"]));
    one_line_error(&out, 78, "an empty servers file");
    assert!(out.stderr.contains("names no server"), "{}", out.stderr);
    // No source at all is an error too: see server_sources.rs.
}

#[test]
fn separate_servers_are_never_merged_into_one() {
    let servers: Vec<RedisServer> = (0..3)
        .map(|_| RedisServer::start_with(&["--requirepass", PASSWORD]))
        .collect();
    let urls: Vec<String> = servers
        .iter()
        .map(|s| format!(":{PASSWORD}@127.0.0.1:{}", s.port()))
        .collect();
    // How many servers status reads, and how many hold the lock: acquire's
    // held_on may leave out a server that answers after the majority.
    let seen = |out: &Output| {
        let json = out.json();
        let servers = json["servers"].as_array().unwrap();
        let holding = servers.iter().filter(|s| s["exists"] == true).count();
        (servers.len(), holding)
    };
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", urls.join(","))
        .args(["acquire", "-n", "list"]));
    out.assert_code(0, "a list of three");
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", urls.join(","))
        .args(["status", "--json", "list"]));
    assert_eq!(seen(&out), (3, 3), "{}", out.stdout);
    let flags = ["-q", "-s", &urls[0], "-s", &urls[1]];
    run(support::redlock()
        .args(flags)
        .args(["acquire", "-n", "flags"]))
    .assert_code(0, "two flags");
    let out = run(support::redlock()
        .args(flags)
        .args(["status", "--json", "flags"]));
    assert_eq!(seen(&out), (2, 2), "{}", out.stdout);
}

#[test]
fn one_server_spelled_two_ways_is_listed_twice() {
    let server = RedisServer::start();
    let port = server.port();
    for other in ["127.1", "2130706433", "0x7f000001", "0177.0.0.1"] {
        let list = format!("127.0.0.1:{port},{other}:{port}");
        let out = run(support::redlock().args(["-s", &list, "status", "x"]));
        one_line_error(&out, 78, &list);
        assert!(out.stderr.contains("listed twice"), "{}", out.stderr);
    }
    // Thousands of servers are checked for duplicates before any I/O, fast.
    let mut many: Vec<String> = (1..=5000).map(|p| format!("127.0.0.1:{p}")).collect();
    many.push("127.0.0.1:1".into());
    let (out, took) = timed(
        support::redlock()
            .env("REDLOCK_SERVERS", many.join(","))
            .args(["status", "x"]),
    );
    one_line_error(&out, 78, "5000 servers and a duplicate");
    // Far below the seconds an O(n²) check took, with room for a debug
    // build on a loaded machine.
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_password_in_the_query_of_a_tcp_url_is_rejected() {
    let server = RedisServer::start_with(&["--requirepass", PASSWORD]);
    let url = format!("redis://127.0.0.1:{}?password={PASSWORD}", server.port());
    let out = run(support::redlock()
        .env("REDLOCK_SERVERS", &url)
        .args(["status", "x"]));
    one_line_error(&out, 78, "?password= on redis://");
    assert!(out.stderr.contains("redis+unix://"), "{}", out.stderr);
    assert!(!out.stderr.contains(PASSWORD));
}

#[test]
fn signals_that_cannot_stop_a_command_are_refused() {
    for signal in ["STOP", "CONT", "TSTP", "CHLD", "SIGTTIN", "19"] {
        let out = run(support::redlock().args(["exec", "--signal", signal, "x", "--", "true"]));
        one_line_error(&out, 64, signal);
        assert!(
            out.stderr.contains("cannot stop a command"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn negative_values_are_rejected_by_the_option_that_got_them() {
    let cases: [(&[&str], &str); 5] = [
        (&["acquire", "--ttl", "-5s", "x"], "--ttl"),
        (&["acquire", "-w", "-1", "x"], "--wait"),
        (
            &["exec", "-E", "-1", "x", "--", "true"],
            "--conflict-exit-code",
        ),
        (&["exec", "-k", "-1s", "x", "--", "true"], "--kill-after"),
        (
            &["--server-timeout", "-1s", "status", "x"],
            "--server-timeout",
        ),
    ];
    for (args, option) in cases {
        // A server, never asked: the bad value stops the command first.
        let out = run(support::redlock().args(["-s", "127.0.0.1:1"]).args(args));
        one_line_error(&out, 64, option);
        assert!(out.stderr.contains(option), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("tip:"), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn redaction_hides_only_what_can_be_a_password() {
    for (url, shown) in [
        ("redis://127.0.0.1:-1", "127.0.0.1:-1"),
        ("::1:6379", "::1:6379"),
    ] {
        let out = run(support::redlock().args(["-s", url, "status", "x"]));
        one_line_error(&out, 78, url);
        assert!(out.stderr.contains(shown), "{url}: {}", out.stderr);
    }
}

/// A pipe whose buffer is full: a write to it blocks until the reader
/// drains it.
fn full_pipe() -> (std::fs::File, OwnedFd) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let (reader, writer) = nix::unistd::pipe().unwrap();
    fcntl(&writer, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
    let mut filler = std::fs::File::from(writer.try_clone().unwrap());
    while filler.write(&[b'.'; 4096]).is_ok() {}
    fcntl(&writer, FcntlArg::F_SETFL(OFlag::empty())).unwrap();
    (std::fs::File::from(reader), writer)
}

#[test]
fn a_token_written_after_its_validity_ran_out_is_released_and_69() {
    let cluster = Cluster::start(3);
    let (mut reader, writer) = full_pipe();
    let waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "-n", "--ttl", "300ms", "stalled"])
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped()),
    );
    // The lock is taken, and the token waits in a full pipe past its TTL.
    assert!(
        support::wait_until(Duration::from_secs(10), || cluster[0]
            .get(b"stalled")
            .is_some()),
        "the lock was never taken"
    );
    assert!(
        support::wait_until(Duration::from_secs(10), || (0..3)
            .all(|i| cluster[i].get(b"stalled").is_none())),
        "the lock never lapsed"
    );
    let mut drained = Vec::new();
    let drain = std::thread::spawn(move || {
        let _ = reader.read_to_end(&mut drained);
        drained
    });
    let out = waiter.finish(Duration::from_secs(10));
    let drained = drain.join().unwrap();
    out.assert_code(69, "a token written after the validity");
    assert!(
        out.stderr
            .contains("expired while its token was being written"),
        "{}",
        out.stderr
    );
    assert!(
        String::from_utf8_lossy(&drained)
            .trim_start_matches('.')
            .len()
            == 33
    );
    support::assertions::assert_gone_everywhere(&cluster, b"stalled");
}

/// stdout closed after the lock operation succeeded (`| head`, `| true`):
/// the operation's own status, and, as for coreutils, no word of a reader
/// that went away.
#[test]
fn a_closed_stdout_after_the_operation_keeps_its_status() {
    let cluster = Cluster::start(3);
    let token = acquire(&cluster, "closed", &[]);
    let closed = || {
        let (reader, writer) = nix::unistd::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    let with_closed_stdout = |args: &[&str]| {
        Running::spawn(
            cluster
                .redlock()
                .args(args)
                .stdin(Stdio::null())
                .stdout(closed())
                .stderr(Stdio::piped()),
        )
        .finish(Duration::from_secs(10))
    };
    let out = with_closed_stdout(&["status", "closed"]);
    out.assert_code(0, "status of a held lock, stdout closed");
    assert_eq!(out.stderr, "");
    let out = with_closed_stdout(&["extend", "--json", "closed", &token]);
    out.assert_code(0, "extend --json, stdout closed");
    let out = with_closed_stdout(&["release", "--json", "closed", &token]);
    out.assert_code(0, "release --json, stdout closed");
    assert_eq!(out.stderr, "");
    support::assertions::assert_gone_everywhere(&cluster, b"closed");
    let out = with_closed_stdout(&["status", "closed"]);
    out.assert_code(1, "status of a free lock, stdout closed");
    // acquire is the exception: a token nobody read is released (70).
    let out = with_closed_stdout(&["acquire", "-n", "closed"]);
    out.assert_code(70, "acquire, stdout closed");
    support::assertions::assert_gone_everywhere(&cluster, b"closed");
}

/// `redlock acquire NAME >&-`: a stdout closed from the start, which
/// Rust's runtime quietly replaces with /dev/null. The token would reach
/// nobody, so the lock is released and acquire fails (70), as for a closed
/// pipe.
#[test]
fn acquire_with_stdout_closed_from_the_start_releases_the_lock() {
    let cluster = Cluster::start(3);
    let mut cmd = cluster.redlock();
    cmd.args(["acquire", "-n", "--ttl", "10s", "closed"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: close() is async-signal-safe and allocates nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            nix::unistd::close(1)?;
            Ok(())
        });
    }
    let out = Running::spawn(&mut cmd).finish(Duration::from_secs(10));
    out.assert_code(70, "acquire >&-");
    assert_eq!(
        out.stderr,
        "redlock: could not print the token, so the lock was released: stdout is closed\n"
    );
    support::assertions::assert_gone_everywhere(&cluster, b"closed");
}

/// A waiting acquire that keeps failing says, under -v, what each attempt
/// met; without -v only the last reason is said.
#[test]
fn verbose_says_what_each_failed_attempt_met() {
    let dead = {
        let mut server = RedisServer::start();
        server.kill();
        server
    };
    let url = dead.url();
    let out = run(support::redlock().args(["-v", "-s", &url, "acquire", "-w", "500ms", "x"]));
    out.assert_code(69, "-w against a dead server");
    assert!(
        out.stderr.contains("attempt 1 failed, retrying: no quorum"),
        "{}",
        out.stderr
    );
    let out = run(support::redlock().args(["-s", &url, "acquire", "-w", "500ms", "x"]));
    out.assert_code(69, "the same without -v");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

/// A URL is text from the user: escaped and cut to one short line when
/// shown, like a lock name.
#[test]
fn urls_with_control_characters_or_great_length_are_shown_safely() {
    let long = format!("redis://h:1/{}", "9".repeat(5000));
    for url in [
        "redis://h\x1b]0;PWNED\x07:1",
        "redis://h:1/\x1b[2J",
        long.as_str(),
    ] {
        let out = run(support::redlock().args(["-s", url, "status", "x"]));
        one_line_error(&out, 78, &url.escape_debug().to_string());
        assert!(!out.stderr.contains(['\x1b', '\x07']), "{:?}", out.stderr);
        assert!(out.stderr.len() < 600, "{} bytes", out.stderr.len());
    }
}

/// A restart guard given by flag reaches a nested redlock too: on servers
/// that just started, `--restart-guard 0` for exec means 0 for the nested
/// status, which then finds the lock held (not "restarting", 69).
#[test]
fn a_nested_call_counts_the_servers_as_exec_did() {
    let cluster = Cluster::start(3);
    let script = r#""$0" status nested-guard >/dev/null; echo "nested=$?""#;
    let bin = env!("CARGO_BIN_EXE_redlock");
    let mut cmd = cluster.redlock();
    cmd.env_remove("REDLOCK_RESTART_GUARD");
    let out = run(cmd
        .args(["--restart-guard", "0", "exec", "nested-guard", "--"])
        .args(["sh", "-c", script, bin]));
    out.assert_code(0, "exec with --restart-guard 0");
    assert!(
        out.stdout.contains("nested=0"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}
