//! The shell scripts of README.md, run as printed: each test takes the code
//! block under a heading of README.md, changes at most its timing (a TTL, an
//! interval) to keep it short, writes the job it runs (`./make-report`) into
//! the script's directory, and runs it with `bash` against real servers. A
//! script that the README teaches must not hide a lost lock.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::assertions::assert_gone_everywhere;
use crate::support::{redlock_at, temp_dir, Cluster, Output, Running};

const SHELL_SCRIPT: &str = "### Take a lock in a shell script";
/// How long a script may take; the scripts here take a few seconds.
const LIMIT: Duration = Duration::from_secs(60);

/// The first fenced code block under the line `heading` of README.md, before
/// the next heading. Panics if there is none, so that removing or renaming
/// the section fails the tests that run its script.
fn snippet(heading: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut lines = readme.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "README.md has no line {heading:?}");
    let fence = lines
        .by_ref()
        .take_while(|line| !line.starts_with('#'))
        .find(|line| line.starts_with("```"));
    assert!(
        fence.is_some(),
        "README.md has no code block under {heading:?}"
    );
    let mut code = String::new();
    for line in lines {
        if line.starts_with("```") {
            return code;
        }
        code.push_str(line);
        code.push('\n');
    }
    panic!("the code block under {heading:?} in README.md is not closed")
}

/// `text` with its one occurrence of `from` replaced by `to`.
#[track_caller]
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "expected {from:?} once in the README's script:\n{text}"
    );
    text.replacen(from, to, 1)
}

/// A directory where a script runs, with the jobs it calls.
struct Workdir(tempfile::TempDir);

impl Workdir {
    fn new() -> Self {
        Workdir(temp_dir("redlock-test-readme-"))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// Writes the executable `./NAME` that runs `body` with `sh`. A child
    /// process writes it: a file this multi-threaded test process had open
    /// for writing could be inherited by another test's fork, and running it
    /// would then fail with "Text file busy".
    fn job(&self, name: &str, body: &str) {
        let mut writer = Command::new("sh")
            .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh", name])
            .current_dir(self.path())
            .stdin(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run sh: {e}"));
        let mut stdin = writer.stdin.take().unwrap();
        stdin
            .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
            .unwrap();
        drop(stdin);
        assert!(writer.wait().unwrap().success(), "cannot write ./{name}");
    }

    /// Starts `bash SCRIPT` in this directory, with `redlock` on its PATH and
    /// `REDLOCK_SERVERS` naming `cluster`, stdin from /dev/null.
    fn spawn(&self, cluster: &Cluster, script: &str) -> Running {
        fs::write(self.path().join("script"), script).unwrap();
        let bin = Path::new(env!("CARGO_BIN_EXE_redlock")).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        // Run as the binary is run: no inherited REDLOCK_* variables, default
        // signal actions, a session of its own.
        let mut bash = redlock_at(Path::new("bash"));
        bash.arg("script")
            .current_dir(self.path())
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("REDLOCK_SERVERS", cluster.servers_arg())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Running::spawn(&mut bash)
    }

    fn run(&self, cluster: &Cluster, script: &str) -> Output {
        self.spawn(cluster, script).finish(LIMIT)
    }
}

// ---------------------------------------------------------------------------
// Take a lock in a shell script
// ---------------------------------------------------------------------------

#[test]
fn shell_script_fails_with_79_when_the_job_outlived_the_lock() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    // A job that ends only once the lock has expired on the servers.
    dir.job(
        "make-report",
        "while redlock status -q nightly-report; do sleep 0.05; done",
    );
    // The one change: a 1s TTL instead of the default 30s, to keep it short.
    let script = snippet(SHELL_SCRIPT);
    assert!(
        !script.contains("--ttl"),
        "the script sets its own --ttl; change how this test shortens it:\n{script}"
    );
    let script = replace_once(&script, "redlock acquire ", "redlock acquire --ttl 1s ");
    let out = dir.run(&cluster, &script);
    out.assert_code(79, "a script whose job outlived its lock");
    assert!(
        out.stderr.contains("is not held by this token"),
        "stderr should say the lock was lost:\n{}",
        out.stderr
    );
}

#[test]
fn shell_script_holds_the_lock_for_the_job_and_releases_it() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    dir.job("make-report", "redlock status -q nightly-report");
    let out = dir.run(&cluster, &snippet(SHELL_SCRIPT));
    out.assert_code(0, "a job that ran while the lock was held");
    assert_eq!(out.stderr, "", "a successful run prints nothing");
    assert_gone_everywhere(&cluster, b"nightly-report");
}

#[test]
fn shell_script_keeps_a_failed_jobs_status() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    dir.job("make-report", "exit 3");
    let out = dir.run(&cluster, &snippet(SHELL_SCRIPT));
    out.assert_code(3, "a job that failed with 3 while the lock was held");
    assert_gone_everywhere(&cluster, b"nightly-report");
}
