//! The shell scripts of README.md and the guide, run as printed: each test
//! takes the code block under a heading of a document, changes at most its timing (a TTL, an
//! interval) to keep it short, writes the job it runs (`./make-report`,
//! `./import.sh`) into the script's directory, and runs it with `bash`
//! against real servers. A script that the README teaches must not hide a
//! lost lock, nor hold the lock longer than its job.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::assertions::assert_gone_everywhere;
use crate::support::{
    pid_alive, redlock_at, temp_dir, wait_until, Cluster, Output, ReservedPort, Running,
};

/// A document of the project and a heading line in it.
type Section = (&'static str, &'static str);

const SHELL_SCRIPT: Section = ("docs/guide.md", "## Take a lock for a known time");
const LONG_JOB: Section = ("docs/guide.md", "## Keep a long job's lock alive");
/// The line of the long job's script that sets its TTL and extend interval.
const LONG_JOB_TIMES: &str = "ttl=30 every=10 ";

/// How long a script may take; the scripts here take a few seconds.
const LIMIT: Duration = Duration::from_secs(60);

/// The first fenced code block under the line `heading` of the document,
/// before the next heading. Panics if there is none, so that removing or
/// renaming the section fails the tests that run its script.
fn snippet((document, heading): Section) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(document);
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "{document} has no line {heading:?}");
    let fence = lines
        .by_ref()
        .take_while(|line| !line.starts_with('#'))
        .find(|line| line.starts_with("```"));
    assert!(
        fence.is_some(),
        "{document} has no code block under {heading:?}"
    );
    let mut code = String::new();
    for line in lines {
        if line.starts_with("```") {
            return code;
        }
        code.push_str(line);
        code.push('\n');
    }
    panic!("the code block under {heading:?} in {document} is not closed")
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

/// The long job's script with another TTL and extend interval (seconds).
fn long_job_with(ttl: &str, every: &str) -> String {
    replace_once(
        &snippet(LONG_JOB),
        LONG_JOB_TIMES,
        &format!("ttl={ttl} every={every} "),
    )
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
        let mut bash = self.bash(script);
        bash.env("REDLOCK_SERVERS", cluster.servers_arg())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Running::spawn(&mut bash)
    }

    /// `bash SCRIPT` in this directory, with `redlock` first on its PATH:
    /// run as the binary is run (no inherited REDLOCK_* variables, default
    /// signal actions, a session of its own).
    fn bash(&self, script: &str) -> Command {
        fs::write(self.path().join("script"), script).unwrap();
        let bin = Path::new(env!("CARGO_BIN_EXE_redlock")).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        let mut bash = redlock_at(Path::new("bash"));
        bash.arg("script")
            .current_dir(self.path())
            .env("PATH", std::env::join_paths(dirs).unwrap());
        bash
    }

    fn run(&self, cluster: &Cluster, script: &str) -> Output {
        self.spawn(cluster, script).finish(LIMIT)
    }

    /// A pid the job wrote to `./NAME`, waiting for it to appear.
    fn pid(&self, name: &str) -> i32 {
        let path = self.path().join(name);
        let read = || fs::read_to_string(&path).ok()?.trim().parse::<i32>().ok();
        assert!(
            wait_until(Duration::from_secs(10), || read().is_some()),
            "the job never wrote ./{name}"
        );
        read().unwrap()
    }
}

/// Whether process `parent` has a child process named `name` (its `comm`).
fn has_child_named(parent: i32, name: &str) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid ...; comm may itself contain ") ".
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            return false;
        };
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        &stat[open + 1..close] == name && ppid == Some(&parent.to_string())
    })
}

/// Deletes `key` on every server of `cluster`, as an operator or a server
/// restart would.
fn delete_everywhere(cluster: &Cluster, key: &str) {
    for server in &cluster.servers {
        let _: i64 = redis::cmd("DEL")
            .arg(key)
            .query(&mut server.client())
            .unwrap();
    }
}

/// Which of the job and its grandchild are still alive; SIGKILLs those, so
/// that a failing test does not leave them running (and holding the
/// script's stdout) into the next tests.
fn kill_survivors(job: i32, grandchild: i32) -> (bool, bool) {
    let alive = (pid_alive(job), pid_alive(grandchild));
    for (pid, alive) in [(job, alive.0), (grandchild, alive.1)] {
        if alive {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    alive
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

// ---------------------------------------------------------------------------
// Keep a long job's lock alive
// ---------------------------------------------------------------------------

#[test]
fn long_job_script_ends_with_the_job_not_at_the_next_extend() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    dir.job(
        "import.sh",
        "redlock status -q big-import || exit 99; exit 3",
    );
    // The README's numbers: an extend every 20 seconds.
    let started = Instant::now();
    let out = dir.run(&cluster, &snippet(LONG_JOB));
    let took = started.elapsed();
    out.assert_code(3, "the job's status, from a job run under the lock");
    assert!(
        took < Duration::from_secs(10),
        "the script took {took:?} after a job that ended at once: it held the \
         lock until the next extend\n{}",
        out.stderr
    );
    assert_gone_everywhere(&cluster, b"big-import");
}

#[test]
fn long_job_script_stops_the_job_and_its_children_when_the_lock_is_lost() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    dir.job(
        "import.sh",
        "echo $$ > child.pid; sleep 60 & echo $! > grandchild.pid; wait",
    );
    // An extend every 0.2 seconds instead of 20, to notice the loss quickly.
    let script = dir.spawn(&cluster, &long_job_with("60", "0.2"));
    let (child, grandchild) = (dir.pid("child.pid"), dir.pid("grandchild.pid"));
    delete_everywhere(&cluster, "big-import");
    let stopped = wait_until(Duration::from_secs(10), || {
        !pid_alive(child) && !pid_alive(grandchild)
    });
    let alive = kill_survivors(child, grandchild);
    let out = script.finish(LIMIT);
    assert!(
        stopped,
        "10s after the lock was lost, (job, grandchild) alive: {alive:?}\n\
         --- stderr ---\n{}",
        out.stderr
    );
    out.assert_code(79, "a script whose lock was lost");
    assert!(
        out.stderr.contains("is not held by this token"),
        "stderr should say the lock was lost:\n{}",
        out.stderr
    );
}

#[test]
fn long_job_script_keeps_the_lock_past_its_ttl() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    dir.job("import.sh", "sleep 4");
    // A 3s TTL extended every 0.5s, for a 4s job: the release at the end
    // succeeds only if the extends kept the lock.
    let out = dir.run(&cluster, &long_job_with("3", "0.5"));
    out.assert_code(0, "a 4s job under a 3s TTL kept alive");
    assert_gone_everywhere(&cluster, b"big-import");
}

#[test]
fn long_job_script_passes_a_stop_on_to_the_job_and_keeps_the_lock_until_it_ends() {
    let cluster = Cluster::start(3);
    let dir = Workdir::new();
    // On SIGTERM, the job records whether the lock is still held, then
    // exits 7.
    dir.job(
        "import.sh",
        "trap 'redlock status -q big-import; echo $? > held-when-stopped; exit 7' TERM\n\
         echo $$ > child.pid; sleep 60 & echo $! > grandchild.pid; wait",
    );
    let script = dir.spawn(&cluster, &snippet(LONG_JOB));
    let (child, grandchild) = (dir.pid("child.pid"), dir.pid("grandchild.pid"));
    // The script has set its traps once it waits on its first `sleep`.
    let pid = script.id() as i32;
    assert!(
        wait_until(Duration::from_secs(10), || has_child_named(pid, "sleep")),
        "the script never started its first sleep"
    );
    // As a CI runner cancelling a step, or `kill PID`, would.
    script.signal(Signal::SIGTERM);
    let signalled = Instant::now();
    let stopped = wait_until(Duration::from_secs(10), || {
        !pid_alive(child) && !pid_alive(grandchild)
    });
    let alive = kill_survivors(child, grandchild);
    let out = script.finish(LIMIT);
    let took = signalled.elapsed();
    assert!(
        stopped,
        "10s after SIGTERM to the script, (job, grandchild) alive: {alive:?}\n\
         --- stderr ---\n{}",
        out.stderr
    );
    let held = fs::read_to_string(dir.path().join("held-when-stopped")).unwrap_or_default();
    assert_eq!(held, "0\n", "`status -q` when the job was stopped");
    out.assert_code(7, "the status of the job it stopped");
    assert!(
        took < Duration::from_secs(10),
        "the script (or a process holding its stdout) ended {took:?} after \
         its job was stopped\n{}",
        out.stderr
    );
    assert_gone_everywhere(&cluster, b"big-import");
}

const FIRST_LOCK: Section = ("README.md", "## The first lock");

/// Shuts down, on drop, the servers a script started on these ports, also
/// when the script failed before its own shutdown line.
struct ShutDown<'a>(&'a [ReservedPort]);

impl Drop for ShutDown<'_> {
    fn drop(&mut self) {
        for port in self.0 {
            let _ = Command::new("redis-cli")
                .args(["-p", &port.0.to_string(), "shutdown", "nosave"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[test]
fn the_first_lock_runs_as_printed_with_servers_it_starts() {
    // The README's own servers, on free ports instead of 7001-7003.
    let ports = [
        ReservedPort::new(),
        ReservedPort::new(),
        ReservedPort::new(),
    ];
    let _shut_down = ShutDown(&ports);
    // Before the servers are shut down, each says what it listens on.
    let mut script = replace_once(
        &snippet(FIRST_LOCK),
        "for port in 7001 7002 7003; do redis-cli",
        "for port in 7001 7002 7003; do redis-cli -p \"$port\" config get bind; done\n\
         for port in 7001 7002 7003; do redis-cli",
    );
    for (readme, port) in ["7001", "7002", "7003"].iter().zip(&ports) {
        script = script.replace(readme, &port.0.to_string());
    }
    let dir = Workdir::new();
    let mut bash = dir.bash(&format!("set -e\n{script}"));
    bash.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // As a newcomer runs it: no guard set from outside (redlock_at sets 0).
    bash.env_remove("REDLOCK_RESTART_GUARD");
    let out = Running::spawn(&mut bash).finish(LIMIT);
    out.assert_code(0, "the first lock's commands, run with set -e");
    assert!(
        out.stdout.contains("busy: exit 75"),
        "the second acquire found the lock busy:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("runs while holding demo"),
        "exec ran its command:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("is held by"),
        "status showed the holder:\n{}",
        out.stdout
    );
    // `config get bind` prints the name, then the addresses: redis-server
    // listens on every interface ("* -::*") unless told otherwise.
    assert_eq!(
        out.stdout.matches("bind\n127.0.0.1\n").count(),
        3,
        "each server listens on 127.0.0.1 only:\n{}",
        out.stdout
    );
}

/// Every `redis-server` that a document or a script starts listens on
/// 127.0.0.1 only: a throwaway server without a password must not be
/// reachable from the network. A command continued with `\` is one line.
#[test]
fn every_server_the_docs_and_scripts_start_listens_on_loopback_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    for dir in ["docs", "scripts"] {
        for entry in fs::read_dir(root.join(dir)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    let mut started = 0;
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for command in text.replace("\\\n", " ").lines() {
            let Some(at) = command.find("redis-server --") else {
                continue;
            };
            if command[at..].starts_with("redis-server --version") {
                continue;
            }
            started += 1;
            assert!(
                command.contains("--bind 127.0.0.1 "),
                "{}: a redis-server that listens on every interface:\n{command}",
                file.display()
            );
        }
    }
    assert!(started >= 2, "the README and scripts/lib.sh start servers");
}

/// The README is a landing page: what redlock is, how to install it, the
/// first lock, the recipes, the exit codes; the details live in docs/.
#[test]
fn the_readme_is_a_landing_page_of_at_most_400_lines() {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move details to docs/ (install ways: docs/install.md)"
    );
}
