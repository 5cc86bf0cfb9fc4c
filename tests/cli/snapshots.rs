//! Snapshots of the help and of the main messages, so that a change of
//! wording shows up in review as a diff of `tests/cli/snapshots/*.snap`
//! (STYLE.md item 9). The other modules check what the text must say; these
//! check all of it.
//!
//! After a deliberate change, refresh and then read the diff:
//! `INSTA_UPDATE=always cargo test --test cli snapshots` (or
//! `cargo insta review`). On CI (`CI` set) insta never writes: a mismatch
//! fails.

use std::process::Command;

use crate::support::{self, acquire, run, Cluster, Output};

/// clap wraps help to `$COLUMNS` when stdout is not a terminal (it never is
/// here: [`support::redlock`] runs the binary in a session of its own).
const COLUMNS: &str = "100";

/// The password of the URL that must be shown redacted. It is not written
/// into the snapshot files at all, not even in the command line.
const PASSWORD: &str = "s3cret-pw";

/// [`support::redlock`] at a fixed width.
fn redlock() -> Command {
    let mut cmd = support::redlock();
    cmd.env("COLUMNS", COLUMNS);
    cmd
}

/// Snapshot settings: files named after the case alone, the command line as
/// the description, and what varies from run to run replaced by
/// placeholders: the `ports` of the test servers (only those: the help's
/// default port 6379 must show), tokens, and the time a lock has left.
fn settings(command_line: &str, ports: &[u16]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(command_line);
    for port in ports {
        settings.add_filter(&format!(r"127\.0\.0\.1:{port}\b"), "127.0.0.1:[PORT]");
    }
    settings.add_filter(r"\b[0-9a-f]{32}\b", "[TOKEN]");
    settings.add_filter(r"expires in \d[0-9a-z ]*", "expires in [TTL]");
    // Who holds it: this host, this user, a pid and an age that vary.
    settings.add_filter(
        r"held by \S+@\S+ \(pid \d+",
        "held by [USER]@[HOST] (pid [PID]",
    );
    settings.add_filter(r"\) for \d[0-9a-z ]*;", ") for [AGE];");
    settings
}

/// The command line of `cmd` after `redlock`, for the snapshot header, with
/// [`PASSWORD`] replaced.
fn command_line(cmd: &Command) -> String {
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| {
            let a = a.to_string_lossy().replace(PASSWORD, "[PASSWORD]");
            if a.is_empty() || a.contains(' ') {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect();
    format!("redlock {}", args.join(" ")).trim_end().to_owned()
}

/// Runs `cmd`, asserts its exit code (a snapshot update must not quietly
/// change a documented code) and snapshots the code with both streams.
#[track_caller]
fn outcome(name: &str, code: i32, cmd: &mut Command) -> Output {
    snapshot_outcome(name, code, cmd, &[])
}

/// [`outcome`] of `redlock ARGS` against `cluster`.
#[track_caller]
fn outcome_on(cluster: &Cluster, name: &str, code: i32, args: &[&str]) -> Output {
    let mut cmd = cluster.redlock();
    cmd.env("COLUMNS", COLUMNS).args(args);
    let ports: Vec<u16> = cluster.servers.iter().map(|s| s.port()).collect();
    snapshot_outcome(name, code, &mut cmd, &ports)
}

#[track_caller]
fn snapshot_outcome(name: &str, code: i32, cmd: &mut Command, ports: &[u16]) -> Output {
    let out = run(cmd);
    snapshot_output(name, code, cmd, ports, out)
}

/// [`snapshot_outcome`] of an `out` that `cmd` already gave.
#[track_caller]
fn snapshot_output(name: &str, code: i32, cmd: &Command, ports: &[u16], out: Output) -> Output {
    out.assert_code(code, name);
    let shown = format!(
        "status: {}\n--- stdout ---\n{}--- stderr ---\n{}",
        out.code(),
        out.stdout,
        out.stderr
    );
    settings(&command_line(cmd), ports).bind(|| insta::assert_snapshot!(name, shown));
    out
}

// ---------------------------------------------------------------------------
// Help: stdout, exit 0
// ---------------------------------------------------------------------------

#[track_caller]
fn help(name: &str, args: &[&str]) {
    let mut cmd = redlock();
    cmd.args(args);
    let out = run(&mut cmd);
    out.assert_code(0, name);
    assert_eq!(out.stderr, "", "{name}: help goes to stdout");
    settings(&command_line(&cmd), &[]).bind(|| insta::assert_snapshot!(name, out.stdout));
}

#[test]
fn help_redlock() {
    help("help_redlock", &["--help"]);
}

/// Every visible subcommand's help, from the one registry of them (the
/// clap definition): a new command needs its snapshot, or this fails.
#[test]
fn help_of_every_subcommand() {
    for name in visible_subcommands() {
        help(&format!("help_{name}"), &[&name, "--help"]);
    }
}

/// The subcommands `redlock --help` lists.
fn visible_subcommands() -> Vec<String> {
    use clap::CommandFactory as _;
    redlock::cli::Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_owned())
        .collect()
}

/// `redlock help CMD` is `redlock CMD --help`, as in git and cargo; the
/// hidden subcommands stay out of the list of commands.
#[test]
fn help_subcommand_prints_the_commands_help() {
    for name in visible_subcommands() {
        let name = name.as_str();
        let by_flag = run(redlock().args([name, "--help"]));
        let out = run(redlock().args(["help", name]));
        out.assert_code(0, &format!("redlock help {name}"));
        assert_eq!(out.stdout, by_flag.stdout, "redlock help {name}");
    }
    let out = run(redlock().arg("help"));
    out.assert_code(0, "redlock help");
    assert_eq!(out.stdout, run(redlock().arg("--help")).stdout);
    assert!(!out.stdout.contains("generate") && !out.stdout.contains("watchdog"));
    let out = run(redlock().args(["help", "nope"]));
    out.assert_code(64, "redlock help nope");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// Usage errors: 64, before any server is asked
// ---------------------------------------------------------------------------

#[test]
fn usage_missing_name() {
    outcome("usage_missing_name", 64, redlock().args(["acquire"]));
}

#[test]
fn usage_bad_ttl() {
    outcome(
        "usage_bad_ttl",
        64,
        redlock().args(["acquire", "nightly", "--ttl", "soon"]),
    );
}

#[test]
fn usage_empty_name() {
    outcome("usage_empty_name", 64, redlock().args(["acquire", ""]));
}

#[test]
fn usage_exec_without_a_command() {
    outcome(
        "usage_exec_without_a_command",
        64,
        redlock().args(["exec", "nightly"]),
    );
}

#[test]
fn usage_exec_with_an_empty_command_line() {
    outcome(
        "usage_exec_with_an_empty_command_line",
        64,
        redlock().args(["exec", "nightly", "-c", ""]),
    );
}

#[test]
fn usage_release_without_a_token() {
    outcome(
        "usage_release_without_a_token",
        64,
        redlock().args(["release", "nightly"]),
    );
}

#[test]
fn usage_unknown_flag() {
    outcome(
        "usage_unknown_flag",
        64,
        redlock().args(["acquire", "nightly", "--bogus"]),
    );
}

#[test]
fn usage_no_subcommand() {
    // With no argument at all, the help is printed to stderr.
    outcome("usage_no_subcommand", 64, &mut redlock());
}

#[test]
fn usage_no_subcommand_after_options() {
    outcome(
        "usage_no_subcommand_after_options",
        64,
        redlock().args(["-v"]),
    );
}

// ---------------------------------------------------------------------------
// Configuration errors: 78, before any server is asked
// ---------------------------------------------------------------------------

#[test]
fn config_unparsable_url_hides_its_password() {
    let out = outcome(
        "config_unparsable_url_hides_its_password",
        78,
        redlock().args([
            "-s",
            &format!("redis://:{PASSWORD}@127.0.0.1:notaport"),
            "status",
            "nightly",
        ]),
    );
    assert!(!out.stderr.contains(PASSWORD), "{}", out.stderr);
    assert!(out.stderr.contains(":***@"), "{}", out.stderr);
}

#[test]
fn config_the_same_server_twice() {
    outcome(
        "config_the_same_server_twice",
        78,
        redlock().args([
            "-s",
            "redis://127.0.0.1:1",
            "-s",
            "redis://127.0.0.1:1",
            "acquire",
            "-n",
            "nightly",
        ]),
    );
}

#[test]
fn config_tls_ca_cert_that_is_not_pem() {
    // A path relative to the working directory, so that no temporary path
    // ends up in the snapshot.
    let dir = support::temp_dir("redlock-test-snap-");
    std::fs::write(dir.path().join("not-a-cert.pem"), "not a certificate\n").unwrap();
    outcome(
        "config_tls_ca_cert_that_is_not_pem",
        78,
        redlock().current_dir(dir.path()).args([
            "-s",
            "rediss://localhost:1",
            "--tls-ca-cert",
            "not-a-cert.pem",
            "acquire",
            "-n",
            "nightly",
        ]),
    );
}

// ---------------------------------------------------------------------------
// Against real servers
// ---------------------------------------------------------------------------

#[test]
fn busy_with_nonblock() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "nightly", &[]);
    outcome_on(
        &cluster,
        "busy_with_nonblock",
        75,
        &["acquire", "-n", "nightly"],
    );
}

#[test]
fn release_with_a_wrong_token() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "nightly", &[]);
    // The release is decided by two answers; the third is shown when it
    // comes within the round's grace, which a loaded machine can miss. The
    // words are what is snapshotted, so the first run that heard all three
    // is (a run before it that did not was once the snapshotted one).
    let mut cmd = cluster.redlock();
    cmd.env("COLUMNS", COLUMNS)
        .args(["release", "nightly", "not-the-token"]);
    let out = (0..20)
        .map(|_| run(&mut cmd))
        .find(|out| out.stderr.matches("holds another token").count() == 3)
        .expect("no release heard all three servers");
    let ports: Vec<u16> = cluster.servers.iter().map(|s| s.port()).collect();
    snapshot_output("release_with_a_wrong_token", 79, &cmd, &ports, out);
}

#[test]
fn status_of_a_free_lock() {
    let cluster = Cluster::start(3);
    outcome_on(&cluster, "status_of_a_free_lock", 1, &["status", "nightly"]);
}

#[test]
fn status_of_a_held_lock() {
    let cluster = Cluster::start(3);
    acquire(&cluster, "nightly", &[]);
    outcome_on(&cluster, "status_of_a_held_lock", 0, &["status", "nightly"]);
}

#[test]
fn no_quorum_with_a_majority_killed() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[2].kill();
    outcome_on(
        &cluster,
        "no_quorum_with_a_majority_killed",
        69,
        &["acquire", "-n", "nightly"],
    );
}
