//! `redlock exec`: the child runs only under the lock, keeps it while it runs,
//! and is stopped (with its grandchildren) before the lock can lapse. Every
//! test uses real redis-server processes and real child processes.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::support::assertions::assert_gone_everywhere;
use crate::support::{acquire, pid_alive, run, wait_until, Cluster, Ended, Output, Running};

/// Starts `redlock exec ARGS` in the background with stdin closed, as cron does.
fn spawn_exec(cluster: &Cluster, args: &[&str]) -> Running {
    spawn_exec_with(&mut cluster.redlock(), args)
}

/// The same, from a prepared `redlock` command (extra environment, say).
fn spawn_exec_with(redlock: &mut std::process::Command, args: &[&str]) -> Running {
    Running::spawn(
        redlock
            .arg("exec")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// Reads a pid a child script wrote to `path`, waiting for it to appear.
fn read_pid(path: &Path) -> i32 {
    assert!(
        wait_until(Duration::from_secs(5), || std::fs::read_to_string(path)
            .is_ok_and(|s| s.trim().parse::<i32>().is_ok())),
        "{} never appeared",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A child script that records its own pid and a grandchild's, then waits.
/// Both ignore nothing: they die on TERM.
fn family_script(dir: &Path) -> String {
    format!(
        "echo $$ > {dir}/child.pid; sleep 60 & echo $! > {dir}/grandchild.pid; wait",
        dir = dir.display()
    )
}

fn family(dir: &Path) -> (i32, i32) {
    (
        read_pid(&dir.join("child.pid")),
        read_pid(&dir.join("grandchild.pid")),
    )
}

fn temp() -> tempfile::TempDir {
    crate::support::temp_dir("redlock-test-exec-")
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn passes_the_childs_exit_code_through() {
    let cluster = Cluster::start(3);
    run(cluster.redlock().args(["exec", "codes", "--", "true"])).assert_code(0, "true");
    run(cluster
        .redlock()
        .args(["exec", "codes", "--", "sh", "-c", "exit 7"]))
    .assert_code(7, "exit 7");
    run(cluster
        .redlock()
        .args(["exec", "codes", "-c", "kill -9 $$"]))
    .assert_code(137, "SIGKILL");
    run(cluster
        .redlock()
        .args(["exec", "codes", "-c", "kill -TERM $$"]))
    .assert_code(143, "SIGTERM");
    assert_gone_everywhere(&cluster, b"codes");
}

/// The command may follow NAME without `--`, as with `flock NAME cmd`:
/// every word from the command on is the command's, even one that looks like
/// an option of redlock, or `--`; redlock's own options come before it.
#[test]
fn the_command_may_follow_name_without_a_double_dash() {
    let cluster = Cluster::start(3);
    let script = r#"printf '%s|' "$REDLOCK_NAME" "$@""#;
    let out = run(cluster.redlock().args([
        "exec", "flocky", "-n", "sh", "-c", script, "sh", "-v", "-n", "--", "x",
    ]));
    out.assert_code(0, "exec NAME sh -c ...");
    assert_eq!(out.stdout, "flocky|-v|-n|--|x|");
    assert_gone_everywhere(&cluster, b"flocky");
    // `--` instead of NAME: the name is derived from the command.
    let out = run(cluster
        .redlock()
        .args(["exec", "-n", "--", "sh", "-c", script, "sh", "-v"]));
    out.assert_code(0, "exec -- sh -c ...");
    let name = out
        .stdout
        .strip_suffix("|-v|")
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        name.starts_with("exec:sh:") && name.len() == "exec:sh:".len() + 16,
        "{name}"
    );
    // NAME alone is no command.
    let out = run(cluster.redlock().args(["exec", "-n", "flocky"]));
    out.assert_code(64, "exec NAME");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("after NAME, or after `--`"),
        "{}",
        out.stderr
    );
}

#[test]
fn missing_or_unrunnable_command_gives_127_or_126_and_releases() {
    let cluster = Cluster::start(3);
    let out = run(cluster
        .redlock()
        .args(["exec", "nope", "--", "/nonexistent/command"]));
    out.assert_code(127, "missing command");
    assert!(
        out.stderr.contains("/nonexistent/command"),
        "{}",
        out.stderr
    );
    let dir = temp();
    let script = dir.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    run(cluster.redlock().args(["exec", "nope", "--"]).arg(&script))
        .assert_code(126, "not executable");
    assert_gone_everywhere(&cluster, b"nope");
    run(cluster.redlock().args(["acquire", "-n", "nope"])).assert_code(0, "free again");
}

#[test]
fn child_sees_its_lock_name_and_the_token_stored_in_redis() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let env_file = dir.path().join("env");
    let script = format!(
        "printf '%s\\n%s\\n' \"$REDLOCK_NAME\" \"$REDLOCK_TOKEN\" > {}.tmp && mv {0}.tmp {0}; sleep 1",
        path_str(&env_file)
    );
    let child = spawn_exec(&cluster, &["env-check", "-c", &script]);
    assert!(
        wait_until(Duration::from_secs(5), || env_file.exists()),
        "child never ran"
    );
    let env = std::fs::read_to_string(&env_file).unwrap();
    let lines: Vec<&str> = env.lines().collect();
    assert_eq!(lines[0], "env-check");
    let token = lines[1].as_bytes().to_vec();
    assert_eq!(token.len(), 32);
    for value in cluster.get_all(b"env-check") {
        assert_eq!(value.as_deref(), Some(token.as_slice()), "token in Redis");
    }
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(0), "{stderr}");
}

#[test]
fn busy_lock_does_not_run_the_command() {
    let cluster = Cluster::start(3);
    let holder = run(cluster.redlock().args(["acquire", "busy"]));
    holder.assert_code(0, "holder");
    let dir = temp();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", path_str(&marker));
    let out = run(cluster.redlock().args(["exec", "busy", "-n", "-c", &touch]));
    out.assert_code(75, "-n on a busy lock");
    assert!(out.stderr.contains("busy"), "{}", out.stderr);
    let out = run(cluster
        .redlock()
        .args(["exec", "busy", "-n", "-E", "0", "-c", &touch]));
    out.assert_code(0, "-E 0");
    assert_eq!(out.stderr, "", "-E 0 skips quietly");
    let out = run(cluster
        .redlock()
        .args(["exec", "busy", "-w", "300ms", "-E", "3", "-c", &touch]));
    out.assert_code(3, "-w ran out, -E 3");
    assert!(
        !marker.exists(),
        "the command must not run while the lock is busy"
    );
    let token = holder.stdout.trim().as_bytes().to_vec();
    assert_eq!(
        cluster.get_all(b"busy"),
        vec![Some(token.clone()), Some(token.clone()), Some(token)]
    );
}

#[test]
fn no_quorum_before_the_start_gives_69_and_does_not_run() {
    let mut cluster = Cluster::start(3);
    cluster[0].kill();
    cluster[1].kill();
    let dir = temp();
    let marker = dir.path().join("ran");
    let out = run(cluster
        .redlock()
        .args(["exec", "nq", "-n", "--", "touch"])
        .arg(&marker));
    out.assert_code(69, "majority down");
    assert!(!marker.exists());
}

#[test]
fn short_ttl_is_kept_alive_while_the_child_runs() {
    let cluster = Cluster::start(3);
    let started = Instant::now();
    let child = spawn_exec(&cluster, &["--ttl", "1s", "kept", "--", "sleep", "2"]);
    // The behaviour: past its TTL, only extensions keep it (the keeper's
    // interval itself is tested in src/lock/keeper.rs, without a clock).
    std::thread::sleep(Duration::from_millis(1500));
    let held = cluster
        .get_all(b"kept")
        .iter()
        .filter(|v| v.is_some())
        .count();
    assert!(
        held >= 2,
        "lock must still be held at 1.5s with a 1s TTL (held on {held})"
    );
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(0), "{stderr}");
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_gone_everywhere(&cluster, b"kept");
}

#[test]
fn a_lock_taken_over_stops_child_and_grandchild_before_the_deadline() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let child = spawn_exec(
        &cluster,
        &["--ttl", "2s", "taken", "-c", &family_script(dir.path())],
    );
    let (pid, grandchild) = family(dir.path());
    // Someone else takes the lock on a majority (e.g. after a restart).
    cluster[0].set(b"taken", b"someone-else");
    cluster[1].set(b"taken", b"someone-else");
    let taken_at = Instant::now();
    // The lock's validity ends at most one TTL after its last extension.
    assert!(
        wait_until(Duration::from_millis(1900), || !pid_alive(pid)
            && !pid_alive(grandchild)),
        "child or grandchild outlived the lock's validity"
    );
    let stopped_after = taken_at.elapsed();
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
    assert!(stderr.contains("was lost"), "{stderr}");
    assert!(
        stopped_after < Duration::from_millis(1900),
        "{stopped_after:?}"
    );
    assert_eq!(
        cluster[0].get(b"taken").as_deref(),
        Some(&b"someone-else"[..]),
        "not released"
    );
}

#[test]
fn a_majority_paused_stops_the_child_before_the_deadline() {
    let mut cluster = Cluster::start(3);
    let dir = temp();
    let child = spawn_exec(
        &cluster,
        &["--ttl", "2s", "paused", "-c", &family_script(dir.path())],
    );
    let (pid, grandchild) = family(dir.path());
    cluster[0].pause();
    cluster[1].pause();
    let paused_at = Instant::now();
    assert!(
        wait_until(Duration::from_millis(1950), || !pid_alive(pid)
            && !pid_alive(grandchild)),
        "child or grandchild outlived the lock's validity"
    );
    cluster[0].resume();
    cluster[1].resume();
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
    assert!(paused_at.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_frozen_supervisor_cannot_let_the_child_outlive_the_lock() {
    let cluster = Cluster::start(3);
    let dir = temp();
    // A bad variable that the flag overrides must not disable the watchdog.
    let servers = cluster.servers_arg();
    let script = family_script(dir.path());
    let child = spawn_exec_with(
        cluster
            .redlock()
            .env("REDLOCK_SERVERS", "127.0.0.1:1,127.0.0.1:1"),
        &["-s", &servers, "--ttl", "1s", "frozen", "-c", &script],
    );
    let supervisor = child.id() as i32;
    let (pid, grandchild) = family(dir.path());
    child.signal(Signal::SIGSTOP);
    let frozen_at = Instant::now();
    // Nothing extends the lock any more: it expires on the servers after
    // its remaining PTTL. The watchdog alone must stop both before that.
    let expires_in = Duration::from_millis(cluster[0].pttl(b"frozen").max(0) as u64);
    let stopped = wait_until(expires_in, || !pid_alive(pid) && !pid_alive(grandchild));
    let still_frozen = crate::support::proc_state(supervisor) == Some('T');
    std::thread::sleep(Duration::from_secs(2).saturating_sub(frozen_at.elapsed()));
    child.signal(Signal::SIGCONT);
    assert!(
        stopped,
        "child or grandchild outlived the lock while the supervisor was frozen"
    );
    assert!(still_frozen, "the supervisor must not have been running");
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
}

#[test]
fn sigterm_to_exec_reaches_the_child_and_releases_the_lock() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let got = dir.path().join("got-term");
    // The background process records its own pid, from a shell of its own:
    // a TERM that reached the trapping shell's forked child before it reset
    // its traps would be taken for the trap and lost (dash), and a sleep
    // started then would keep the lock for a minute.
    let script = format!(
        "trap 'echo term > {got}; exit 42' TERM; \
         sh -c 'echo $$ > {d}/grandchild.pid; exec sleep 60' & echo $$ > {d}/child.pid; wait",
        got = path_str(&got),
        d = dir.path().display()
    );
    let child = spawn_exec(&cluster, &["term", "-c", &script]);
    family(dir.path());
    child.signal(Signal::SIGTERM);
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(
        ended,
        Ended::Code(42),
        "exec exits with the child's status: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), "term");
    assert_gone_everywhere(&cluster, b"term");
}

/// The signals `pid` ignores, from the SigIgn mask in /proc/PID/status.
fn ignored_signals(pid: i32) -> Vec<Signal> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .map(|hex| u64::from_str_radix(hex.trim(), 16).unwrap())
        .unwrap();
    Signal::iterator()
        .filter(|&sig| mask & (1 << (sig as i32 - 1)) != 0)
        .collect()
}

/// `redlock` for the cluster, started as a parent that ignores `ignored`
/// and blocks `blocked` would start it (both survive exec).
fn redlock_inheriting(
    cluster: &Cluster,
    ignored: &'static [Signal],
    blocked: &'static [Signal],
) -> std::process::Command {
    let mut redlock = cluster.redlock();
    // SAFETY: signal() and pthread_sigmask() are async-signal-safe, and
    // nothing here allocates.
    unsafe {
        redlock.pre_exec(move || {
            use nix::sys::signal::{signal, SigHandler, SigSet};
            for &sig in ignored {
                signal(sig, SigHandler::SigIgn)?;
            }
            let mut mask = SigSet::empty();
            for &sig in blocked {
                mask.add(sig);
            }
            mask.thread_block()?;
            Ok(())
        });
    }
    redlock
}

/// A command that records its pid, then exits 3 once `go` exists.
fn run_until_go(dir: &Path) -> String {
    format!(
        "echo $$ > {d}/child.pid; while [ ! -e {d}/go ]; do sleep 0.05; done; exit 3",
        d = dir.display()
    )
}

#[test]
fn signals_ignored_when_exec_starts_stay_ignored_for_it_and_the_command() {
    // `nohup` ignores SIGHUP, and a script's `cmd &` SIGINT and SIGQUIT:
    // neither exec nor its command may then die of them.
    let cluster = Cluster::start(3);
    let dir = temp();
    let protected = &[Signal::SIGHUP, Signal::SIGINT, Signal::SIGQUIT];
    let mut redlock = redlock_inheriting(&cluster, protected, &[]);
    let exec = spawn_exec_with(&mut redlock, &["nohup", "-c", &run_until_go(dir.path())]);
    let child = read_pid(&dir.path().join("child.pid"));
    let inherited = ignored_signals(child);
    for &sig in protected {
        assert!(
            inherited.contains(&sig),
            "{sig} is not ignored by the command: {inherited:?}"
        );
        exec.signal(sig);
        nix::sys::signal::killpg(Pid::from_raw(child), sig).unwrap();
    }
    // Time for a handler, had exec installed one, to pass a signal on.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(dir.path().join("go"), "").unwrap();
    let Output { ended, stderr, .. } = exec.finish(Duration::from_secs(10));
    assert_eq!(
        ended,
        Ended::Code(3),
        "the command ran to its end: {stderr}"
    );
    assert_gone_everywhere(&cluster, b"nohup");
}

#[test]
fn blocked_signals_and_an_ignored_sigchld_from_the_parent_do_not_blind_exec() {
    // A signal mask survives exec; so does an ignored SIGCHLD, which would
    // make the kernel reap the command and lose its status, and an ignored
    // SIGTTIN, which would make a background read fail instead of stopping.
    let cluster = Cluster::start(3);
    let dir = temp();
    let mut redlock = redlock_inheriting(
        &cluster,
        &[Signal::SIGCHLD, Signal::SIGTTIN],
        &[Signal::SIGTERM, Signal::SIGCHLD],
    );
    let exec = spawn_exec_with(&mut redlock, &["masked", "-c", &run_until_go(dir.path())]);
    let child = read_pid(&dir.path().join("child.pid"));
    let inherited = ignored_signals(child);
    assert!(
        !inherited.contains(&Signal::SIGTTIN) && !inherited.contains(&Signal::SIGCHLD),
        "the command inherited {inherited:?}"
    );
    exec.signal(Signal::SIGTERM);
    let Output { ended, stderr, .. } = exec.finish(Duration::from_secs(10));
    assert_eq!(
        ended,
        Ended::Signal(Signal::SIGTERM),
        "the command died of the forwarded SIGTERM, and so did exec: {stderr}"
    );
    assert_gone_everywhere(&cluster, b"masked");
}

#[test]
fn sigkill_to_exec_kills_the_child_and_grandchild() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let child = spawn_exec(&cluster, &["killed", "-c", &family_script(dir.path())]);
    let (pid, grandchild) = family(dir.path());
    child.signal(Signal::SIGKILL);
    child.finish(Duration::from_secs(5));
    assert!(
        wait_until(Duration::from_secs(6), || !pid_alive(pid)
            && !pid_alive(grandchild)),
        "the command ran on without its supervisor"
    );
}

#[test]
fn a_child_outlives_the_first_ten_seconds() {
    // PR_SET_PDEATHSIG fires when the *thread* that spawned the child exits;
    // tokio's idle blocking threads exit after 10s, here shortened to 300ms
    // (debug builds only). The child must not care.
    let cluster = Cluster::start(3);
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TEST_THREAD_KEEP_ALIVE_MS", "300")
        .args(["exec", "--ttl", "1s", "long", "--", "sleep", "1.5"]));
    out.assert_code(
        0,
        "a 1.5s child under a 1s TTL, past the threads' keep-alive",
    );
}

#[test]
fn derived_name_makes_identical_commands_contend() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let started = dir.path().join("started");
    let script = format!("touch {}; sleep 2", path_str(&started));
    let first = spawn_exec(&cluster, &["-c", &script]);
    assert!(wait_until(Duration::from_secs(5), || started.exists()));
    let out = run(cluster.redlock().args(["exec", "-n", "-v", "-c", &script]));
    out.assert_code(75, "the same command is already running");
    let expected = out
        .stderr
        .lines()
        .find_map(|line| line.split_once("derived from the command: "))
        .and_then(|(_, name)| name.split('"').nth(1).map(str::to_owned))
        .unwrap_or_else(|| panic!("-v names the derived lock: {}", out.stderr));
    assert!(expected.starts_with("exec:sh:"), "{expected}");
    let Output { ended, stderr, .. } = first.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(0), "{stderr}");
    assert!(
        cluster[0].get(expected.as_bytes()).is_none(),
        "released under the derived name"
    );
}

#[test]
fn nested_exec_of_the_same_lock_runs_in_place() {
    let cluster = Cluster::start(3);
    let redlock = env!("CARGO_BIN_EXE_redlock");
    let script = format!("{redlock} exec -n nested -- sh -c 'echo inner-ran'");
    let out = run(cluster.redlock().args(["exec", "nested", "-c", &script]));
    out.assert_code(0, "nested exec");
    assert!(out.stdout.contains("inner-ran"), "{}", out.stdout);
}

/// `rounds` rounds of `clients` concurrent execs around a critical section that
/// detects overlap with mkdir (atomic test-and-set).
fn contend(
    cluster: &mut Cluster,
    clients: usize,
    rounds: usize,
    mid_run: impl FnOnce(&mut Cluster),
) -> PathBuf {
    let dir = temp().keep();
    let inside = dir.join("inside");
    let entered = dir.join("entered");
    let script = format!(
        "mkdir {inside} || {{ echo overlap >> {overlap}; exit 99; }}; echo x >> {entered}; \
         sleep 0.05; rmdir {inside}",
        inside = path_str(&inside),
        overlap = path_str(&dir.join("overlap")),
        entered = path_str(&entered),
    );
    let mut children: Vec<Running> = (0..clients)
        .map(|_| {
            spawn_exec(
                cluster,
                &["mutex", "--ttl", "3s", "-w", "60s", "-c", &script],
            )
        })
        .collect();
    let mut mid_run = Some(mid_run);
    for round in 0..rounds {
        if round == rounds / 2 {
            (mid_run.take().unwrap())(cluster);
        }
        for child in children.drain(..) {
            let Output { ended, stderr, .. } = child.finish(Duration::from_secs(90));
            assert_eq!(
                ended,
                Ended::Code(0),
                "round {round}: {stderr}\n{}",
                cluster.logs()
            );
        }
        if round + 1 < rounds {
            children = (0..clients)
                .map(|_| {
                    spawn_exec(
                        cluster,
                        &["mutex", "--ttl", "3s", "-w", "60s", "-c", &script],
                    )
                })
                .collect();
        }
    }
    assert!(
        !dir.join("overlap").exists(),
        "two holders were inside at once"
    );
    let entries = std::fs::read_to_string(&entered).unwrap().lines().count();
    assert_eq!(
        entries,
        clients * rounds,
        "every client entered every round"
    );
    dir
}

#[test]
fn eight_contenders_never_overlap() {
    let mut cluster = Cluster::start(3);
    let dir = contend(&mut cluster, 8, 3, |_| {});
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn eight_contenders_never_overlap_with_two_of_five_servers_killed_mid_run() {
    let mut cluster = Cluster::start(5);
    let dir = contend(&mut cluster, 8, 4, |cluster| {
        cluster[0].kill();
        cluster[3].kill();
    });
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn on_a_terminal_ctrl_c_reaches_the_child_and_its_status_is_kept() {
    // `script` (util-linux) gives the command a pseudo-terminal; a ^C byte
    // written to it makes the terminal send SIGINT to its foreground group.
    let cluster = Cluster::start(3);
    let dir = temp();
    // The child records its pid only once its trap is in place: a ^C that
    // came before would kill it with 130, which is not what is tested here.
    // `exec` leaves redlock alone in its job, as a shell's job would be.
    let command = format!(
        "exec {} exec tty-lock -- sh -c 'trap \"echo got-int; exit 5\" INT; echo $$ > {}/child.pid; \
         while :; do sleep 0.1; done'",
        env!("CARGO_BIN_EXE_redlock"),
        dir.path().display()
    );
    let mut script = start_on_a_terminal(&cluster, &command);
    assert!(
        wait_until(Duration::from_secs(5), || cluster[0]
            .get(b"tty-lock")
            .is_some()),
        "exec never took the lock"
    );
    wait_for_terminal(read_pid(&dir.path().join("child.pid")));
    use std::io::Write as _;
    script.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    script
        .finish(Duration::from_secs(10))
        .assert_code(5, "the child's own status after its INT trap");
    assert_gone_everywhere(&cluster, b"tty-lock");
}

/// A command that records its pid and its background sleep's, and exits 4
/// `seconds` later. No loops: a shell stopped while it vforks shows state
/// D, not T.
fn sleep_then_exit_4(dir: &Path, seconds: u32) -> String {
    format!(
        "sleep {seconds} & echo $! > {d}/grandchild.pid; echo $$ > {d}/child.pid; wait; exit 4",
        d = dir.display()
    )
}

#[test]
fn sigcont_to_exec_continues_the_command_even_if_exec_started_with_it_ignored() {
    // Ignoring SIGCONT cannot keep a process stopped, so it protects
    // nothing: exec must pass it on all the same.
    let cluster = Cluster::start(3);
    let dir = temp();
    let mut redlock = redlock_inheriting(&cluster, &[Signal::SIGCONT], &[]);
    // Long enough that SIGTSTP comes first, even on a loaded machine.
    let script = sleep_then_exit_4(dir.path(), 3);
    let exec = spawn_exec_with(&mut redlock, &["cont", "-c", &script]);
    let (child, _) = family(dir.path());
    exec.signal(Signal::SIGTSTP);
    let stopped = wait_until(Duration::from_secs(5), || {
        crate::support::proc_state(child) == Some('T')
    });
    exec.signal(Signal::SIGCONT);
    let Output { ended, stderr, .. } = exec.finish(Duration::from_secs(10));
    assert!(stopped, "SIGTSTP did not pause the command");
    assert_eq!(
        ended,
        Ended::Code(4),
        "SIGCONT resumed the command to its end: {stderr}"
    );
    assert_gone_everywhere(&cluster, b"cont");
}

#[test]
fn sigtstp_to_exec_pauses_the_command_under_the_lock_until_sigcont() {
    let cluster = Cluster::start(3);
    let dir = temp();
    // The background sleep would end within the 2s the test waits, unless
    // it was paused.
    let script = sleep_then_exit_4(dir.path(), 1);
    let exec = spawn_exec(&cluster, &["--ttl", "1s", "tstp", "-c", &script]);
    let (child, grandchild) = family(dir.path());
    let supervisor = exec.id() as i32;
    exec.signal(Signal::SIGTSTP);
    let state = |pid| crate::support::proc_state(pid);
    let stopped = wait_until(Duration::from_secs(5), || {
        state(child) == Some('T') && state(grandchild) == Some('T')
    });
    let states = (state(child), state(grandchild), state(supervisor));
    // Longer than the TTL, and than the sleep would have run on.
    std::thread::sleep(Duration::from_millis(2000));
    let paused = pid_alive(grandchild);
    let supervising = state(supervisor) != Some('T');
    let held = cluster.get_all(b"tstp").iter().all(Option::is_some);
    exec.signal(Signal::SIGCONT);
    let Output { ended, stderr, .. } = exec.finish(Duration::from_secs(10));
    assert!(
        stopped,
        "command, grandchild and exec states after SIGTSTP: {states:?}"
    );
    assert!(paused, "the grandchild ran on after SIGTSTP");
    assert!(
        supervising,
        "exec stopped itself with nobody to continue it"
    );
    assert!(
        held,
        "the lock was not extended while the command was paused"
    );
    assert_eq!(
        ended,
        Ended::Code(4),
        "SIGCONT resumed the command to its end: {stderr}"
    );
    assert_gone_everywhere(&cluster, b"tstp");
}

#[test]
fn on_a_terminal_without_job_control_every_ctrl_z_is_undone() {
    use std::io::Write as _;
    // Under `script -c`, exec's group is orphaned: no shell could continue
    // it, so a stop from the terminal is undone. Ctrl-Z after Ctrl-Z, each
    // coming before exec looks again, must not leave the command stopped.
    let cluster = Cluster::start(3);
    let dir = temp();
    let command = format!(
        "exec {} exec tty-orphan -- sh -c 'sleep 2 & echo $$ > {}/child.pid; wait; exit 5'",
        env!("CARGO_BIN_EXE_redlock"),
        dir.path().display()
    );
    let mut script = start_on_a_terminal(&cluster, &command);
    wait_for_terminal(read_pid(&dir.path().join("child.pid")));
    let keyboard = script.stdin.as_mut().unwrap();
    for _ in 0..6 {
        keyboard.write_all(b"\x1a").unwrap();
        keyboard.flush().unwrap();
        std::thread::sleep(Duration::from_millis(15));
    }
    script
        .finish(Duration::from_secs(10))
        .assert_code(5, "the command ran to its end");
    assert_gone_everywhere(&cluster, b"tty-orphan");
}

#[test]
fn other_signals_to_exec_are_passed_to_the_whole_group() {
    let cluster = Cluster::start(3);
    let dir = temp();
    // The grandchild (a second shell) records the USR1 it gets from the group.
    let script = format!(
        "sh -c 'trap \"echo usr1 >> {d}/grandchild-got\" USR1; echo $$ > {d}/grandchild.pid; \
         while [ ! -e {d}/stop ]; do sleep 0.05; done' & \
         trap 'echo usr1 >> {d}/child-got' USR1; echo $$ > {d}/child.pid; \
         while [ ! -e {d}/stop ]; do sleep 0.05; done; wait",
        d = dir.path().display()
    );
    let child = spawn_exec(&cluster, &["usr1", "-c", &script]);
    read_pid(&dir.path().join("child.pid"));
    read_pid(&dir.path().join("grandchild.pid"));
    child.signal(Signal::SIGUSR1);
    let got = |who: &str| dir.path().join(format!("{who}-got")).exists();
    assert!(
        wait_until(Duration::from_secs(5), || got("child") && got("grandchild")),
        "USR1 reached child: {}, grandchild: {}",
        got("child"),
        got("grandchild")
    );
    std::fs::write(dir.path().join("stop"), "").unwrap();
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(
        ended,
        Ended::Code(0),
        "exec survived USR1 and kept the child's status: {stderr}"
    );
}

#[test]
fn the_command_cannot_shorten_its_own_lock() {
    let cluster = Cluster::start(3);
    let redlock = env!("CARGO_BIN_EXE_redlock");
    let dir = temp();
    let extended = dir.path().join("extended");
    let script = format!(
        "{redlock} extend --ttl 1s \"$REDLOCK_NAME\" && touch {}; sleep 2",
        path_str(&extended)
    );
    let child = spawn_exec(&cluster, &["--ttl", "30s", "shorten", "-c", &script]);
    assert!(
        wait_until(Duration::from_secs(5), || extended.exists()),
        "the inner extend failed"
    );
    // The behaviour: past the 1s the command asked for, the lock stands.
    std::thread::sleep(Duration::from_millis(1500));
    run(cluster.redlock().args(["acquire", "-n", "shorten"])).assert_code(75, "still held");
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(0), "{stderr}");
}

#[test]
fn the_lock_is_held_until_processes_left_in_the_group_end() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let (begun, done) = (dir.path().join("begun"), dir.path().join("done"));
    let script = format!(
        "(touch {}; sleep 2; touch {}) & exit 3",
        path_str(&begun),
        path_str(&done)
    );
    let started = Instant::now();
    let child = spawn_exec(&cluster, &["leftover", "-c", &script]);
    assert!(
        wait_until(Duration::from_secs(5), || begun.exists()),
        "the command never ran"
    );
    run(cluster.redlock().args(["acquire", "-n", "leftover"]))
        .assert_code(75, "held while the background process runs");
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(3), "the command's own status: {stderr}");
    assert!(
        done.exists(),
        "the background process finished under the lock"
    );
    let took = started.elapsed();
    // It ends when the background process does (exec reaps what it adopts),
    // not whenever init gets round to reaping it.
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_gone_everywhere(&cluster, b"leftover");
}

#[test]
fn an_exec_waiting_while_its_binary_is_replaced_still_runs_guarded() {
    // An upgrade while `exec -w` waits for the lock replaces the file exec
    // was started from; the watchdog it starts later must still be exec.
    let cluster = Cluster::start(3);
    let dir = temp();
    let installed = dir.path().join("redlock");
    std::fs::copy(env!("CARGO_BIN_EXE_redlock"), &installed).unwrap();
    let holder = acquire(&cluster, "upgrade", &["--ttl", "30s"]);
    let mut redlock = crate::support::redlock_at(&installed);
    redlock
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .args(["exec", "upgrade", "-w", "20s", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Another test thread forking while the copy was open for writing makes
    // the new file briefly "text file busy".
    let child = (0..50)
        .find_map(|_| match redlock.spawn() {
            Err(err) if err.raw_os_error() == Some(nix::libc::ETXTBSY) => {
                std::thread::sleep(Duration::from_millis(20));
                None
            }
            spawned => Some(Running::from(spawned.expect("spawn the copied redlock"))),
        })
        .expect("the copied binary stayed busy");
    // Started from the old file: it stands in line.
    assert!(
        wait_until(Duration::from_secs(10), || cluster
            .in_line_everywhere("upgrade", 1)),
        "the exec never waited"
    );
    std::fs::remove_file(&installed).unwrap();
    std::fs::write(&installed, "#!/bin/sh\nexit 99\n").unwrap();
    run(cluster.redlock().args(["release", "upgrade", &holder])).assert_code(0, "release");
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(20));
    assert_eq!(
        ended,
        Ended::Code(0),
        "the command ran under a watchdog: {stderr}"
    );
    assert_gone_everywhere(&cluster, b"upgrade");
}

#[test]
fn exec_rejects_ttls_too_short_to_supervise() {
    let cluster = Cluster::start(1);
    let out = run(cluster
        .redlock()
        .args(["exec", "--ttl", "50ms", "x", "--", "true"]));
    out.assert_code(64, "--ttl 50ms");
    assert!(
        out.stderr.contains("--ttl must be at least 100ms"),
        "{}",
        out.stderr
    );
    run(cluster.redlock().args(["acquire", "--ttl", "5ms", "x"]))
        .assert_code(64, "acquire --ttl 5ms");
}

/// The pid of the `redlock` process whose arguments include `marker` and
/// that talks to `cluster` (tests running at the same time, or another copy
/// of the suite, may use the same marker).
fn redlock_pid_with(cluster: &Cluster, marker: &str) -> Option<i32> {
    let servers = format!("REDLOCK_SERVERS={}", cluster.servers_arg());
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_redlock = args.first()?.ends_with(b"redlock");
        let marked = args.contains(&marker.as_bytes());
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let ours = environ
            .split(|b| *b == 0)
            .any(|var| var == servers.as_bytes());
        (is_redlock && marked && ours).then_some(pid)
    })
}

/// `command` run by `/bin/sh` on a pseudo-terminal of its own (script(1)
/// from util-linux), with the cluster's servers and every stream piped.
///
/// The environment is cleared: script runs the command with `$SHELL -c`,
/// and whether that shell stays in the job beside what it runs (dash does,
/// bash replaces itself with the last command) decides how exec treats the
/// terminal.
/// A test that wants exec alone in its job says `exec redlock ...`.
fn on_a_terminal(cluster: &Cluster, command: &str) -> std::process::Command {
    let mut script = std::process::Command::new("script");
    crate::support::with_default_signals(&mut script)
        .args(["-qfc", command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SHELL", "/bin/sh")
        .env("TERM", "dumb")
        .env("REDLOCK_SERVERS", cluster.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    script
}

/// Starts `command` with [`on_a_terminal`]; script(1) exits with its status.
fn start_on_a_terminal(cluster: &Cluster, command: &str) -> Running {
    Running::spawn(on_a_terminal(cluster, command).arg("-e"))
}

/// An interactive bash on a pseudo-terminal (from script(1)): the
/// job-control shell a person would use. Returns it and its keyboard.
fn interactive_bash(cluster: &Cluster) -> (Running, std::process::ChildStdin) {
    // Nothing of the user's: no history written to their ~/.bash_history,
    // no key bindings read from their ~/.inputrc.
    let mut bash = Running::spawn(
        on_a_terminal(cluster, "bash --norc --noprofile -i")
            .env("PS1", "$ ")
            .env("HISTFILE", "")
            .env("INPUTRC", "/dev/null"),
    );
    let keyboard = bash.stdin.take().unwrap();
    (bash, keyboard)
}

/// Types `lines` and `exit`, and returns what the terminal showed; fails if
/// bash does not exit (it would have lost its terminal, for instance).
fn type_and_exit(bash: Running, mut keyboard: std::process::ChildStdin, lines: &str) -> String {
    use std::io::Write as _;
    keyboard.write_all(lines.as_bytes()).unwrap();
    keyboard.write_all(b"exit\n").unwrap();
    drop(keyboard);
    // If bash hangs, killing script(1) closes the pseudo-terminal, which
    // hangs up bash and whatever it runs; stdout is the screen.
    bash.finish_or_explain(Duration::from_secs(15), || {
        let processes = std::process::Command::new("ps")
            .args(["-e", "-o", "pid,ppid,pgid,tpgid,stat,wchan:20,args"])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
        let ours: Vec<&str> = processes
            .lines()
            .filter(|line| {
                line.contains("redlock") || line.contains("sh -c") || line.contains("bash")
            })
            .collect();
        format!("bash did not exit\n{}", ours.join("\n"))
    })
    .stdout
}

/// Whether the process group of `pid` is the foreground group of its
/// terminal (fields 2 and 5 after the command name in /proc/PID/stat).
fn owns_terminal(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let fields: Vec<&str> = stat[stat.rfind(')').map_or(0, |end| end + 1)..]
        .split_whitespace()
        .collect();
    fields.get(2).is_some() && fields.get(2) == fields.get(5)
}

/// Waits until the command `pid` has the terminal for good, so that a ^Z
/// reaches it. bash gives its job the terminal from the forked child and
/// again from the parent, which may come after exec handed the terminal on;
/// exec gives it back within one clock check (50ms).
fn wait_for_terminal(pid: i32) {
    let settled = || {
        wait_until(Duration::from_secs(5), || owns_terminal(pid)) && {
            // The behaviour: the terminal stays with it a while.
            std::thread::sleep(Duration::from_millis(150));
            owns_terminal(pid)
        }
    };
    assert!(
        settled() || settled(),
        "the command never kept the terminal"
    );
}

/// A command for the terminal tests: records its pid, runs about two
/// seconds, exits 6. It forks before it records its pid and not after: a shell that
/// a Ctrl-Z stops while it vforks shows state D instead of T.
fn second_long_command(name: &str, dir: &Path) -> String {
    format!(
        "{} exec {name} -- sh -c 'sleep 2 & echo $$ > {}/child.pid; wait; exit 6'\n",
        env!("CARGO_BIN_EXE_redlock"),
        dir.display()
    )
}

#[test]
fn on_a_terminal_ctrl_z_stops_the_command_and_exec_and_fg_resumes_both() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    keyboard
        .write_all(second_long_command("tty-stop", dir.path()).as_bytes())
        .unwrap();
    let child = read_pid(&dir.path().join("child.pid"));
    let exec = redlock_pid_with(&cluster, "tty-stop").expect("the exec process");
    wait_for_terminal(child);
    keyboard.write_all(b"\x1a").unwrap();
    let state = |pid| crate::support::proc_state(pid);
    let stopped = wait_until(Duration::from_secs(5), || {
        state(child) == Some('T') && state(exec) == Some('T')
    });
    let states = (state(child), state(exec));
    let held = cluster[0].get(b"tty-stop").is_some();
    let screen = type_and_exit(bash, keyboard, "fg\necho status=$?\n");
    assert!(
        stopped,
        "after ^Z: command and exec states {states:?}\n{screen}"
    );
    assert!(held, "the lock is held while the job is suspended");
    assert!(
        screen.contains("status=6"),
        "fg resumed the command to its end:\n{screen}"
    );
    assert_gone_everywhere(&cluster, b"tty-stop");
}

#[test]
fn on_a_terminal_ctrl_z_in_a_script_stops_the_command_with_the_script() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    // exec shares its job with the script's shell, so the ^Z goes to that
    // job, not to the command's group: exec must stop the command with it.
    let script = dir.path().join("job.sh");
    std::fs::write(
        &script,
        format!(
            "{} exec tty-script -- sh -c 'sleep 3 & echo $$ > {}/child.pid; wait; exit 6'\n",
            env!("CARGO_BIN_EXE_redlock"),
            dir.path().display()
        ),
    )
    .unwrap();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    keyboard
        .write_all(format!("bash {}\n", script.display()).as_bytes())
        .unwrap();
    let child = read_pid(&dir.path().join("child.pid"));
    let exec = redlock_pid_with(&cluster, "tty-script").expect("the exec process");
    keyboard.write_all(b"\x1a").unwrap();
    let state = |pid| crate::support::proc_state(pid);
    let stopped = wait_until(Duration::from_secs(5), || {
        state(child) == Some('T') && state(exec) == Some('T')
    });
    let states = (state(child), state(exec));
    let screen = type_and_exit(bash, keyboard, "fg\necho status=$?\n");
    assert!(
        stopped,
        "after ^Z: command and exec states {states:?}\n{screen}"
    );
    assert!(
        screen.contains("status=6"),
        "fg resumed the command to its end:\n{screen}"
    );
    assert_gone_everywhere(&cluster, b"tty-script");
}

#[test]
fn on_a_terminal_ctrl_z_and_fg_leave_what_the_command_left_behind_in_the_background() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    let line = format!(
        "{} exec tty-behind -- sh -c 'sleep 3 & echo $! > {}/left.pid; exit 0'\n",
        env!("CARGO_BIN_EXE_redlock"),
        dir.path().display()
    );
    keyboard.write_all(line.as_bytes()).unwrap();
    let left = read_pid(&dir.path().join("left.pid"));
    let exec = redlock_pid_with(&cluster, "tty-behind").expect("the exec process");
    // The command has exited and exec has the terminal back.
    wait_for_terminal(exec);
    keyboard.write_all(b"\x1a").unwrap();
    let state = |pid| crate::support::proc_state(pid);
    let stopped = wait_until(Duration::from_secs(5), || {
        state(left) == Some('T') && state(exec) == Some('T')
    });
    let states = (state(left), state(exec));
    keyboard.write_all(b"fg\n").unwrap();
    let resumed = wait_until(Duration::from_secs(5), || state(left) == Some('S'));
    // The behaviour: the leftover does not take the terminal in a while.
    std::thread::sleep(Duration::from_millis(300));
    let leftover_has_terminal = owns_terminal(left);
    let still_running = pid_alive(left);
    let screen = type_and_exit(bash, keyboard, "echo status=$?\n");
    assert!(
        stopped,
        "after ^Z: leftover and exec states {states:?}\n{screen}"
    );
    assert!(resumed, "fg continued the leftover:\n{screen}");
    assert!(still_running, "the leftover ended before it was checked");
    assert!(
        !leftover_has_terminal,
        "fg gave the terminal to what the command left behind:\n{screen}"
    );
    assert!(screen.contains("status=0"), "{screen}");
}

#[test]
fn on_a_terminal_bg_after_ctrl_z_leaves_the_shell_its_terminal() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    keyboard
        .write_all(second_long_command("tty-bg", dir.path()).as_bytes())
        .unwrap();
    let child = read_pid(&dir.path().join("child.pid"));
    wait_for_terminal(child);
    let exec = redlock_pid_with(&cluster, "tty-bg").expect("the exec process");
    keyboard.write_all(b"\x1a").unwrap();
    // Both stopped: the shell has its prompt back before `bg` is typed.
    let state = |pid| crate::support::proc_state(pid);
    assert!(
        wait_until(Duration::from_secs(5), || state(child) == Some('T')
            && state(exec) == Some('T')),
        "after ^Z: command {:?}, exec {:?}",
        state(child),
        state(exec)
    );
    // The shell must still have its terminal afterwards, to run `wait`.
    let screen = type_and_exit(bash, keyboard, "bg\nwait %1; echo status=$?\n");
    assert!(
        screen.contains("status=6"),
        "the job finished in the background:\n{screen}"
    );
}

#[test]
fn in_a_pipeline_on_a_terminal_the_job_keeps_working() {
    let cluster = Cluster::start(3);
    let (bash, keyboard) = interactive_bash(&cluster);
    let line = format!(
        "{} exec tty-pipe -- seq 1 20000 | tail -n 1; echo status=$?\n",
        env!("CARGO_BIN_EXE_redlock")
    );
    let screen = type_and_exit(bash, keyboard, &line);
    assert!(
        screen.contains("20000") && screen.contains("status=0"),
        "{screen}"
    );
}

#[test]
fn a_grandchild_that_ignores_the_stop_signal_is_killed_before_the_deadline() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let script = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {d}/grandchild.pid; while :; do sleep 0.05; done' & \
         echo $$ > {d}/child.pid; wait",
        d = dir.path().display()
    );
    let child = spawn_exec(
        &cluster,
        &["--ttl", "2s", "-k", "300ms", "stubborn", "-c", &script],
    );
    let (pid, grandchild) = family(dir.path());
    cluster[0].set(b"stubborn", b"someone-else");
    cluster[1].set(b"stubborn", b"someone-else");
    assert!(
        wait_until(Duration::from_millis(1900), || !pid_alive(pid)
            && !pid_alive(grandchild)),
        "a process that ignores SIGTERM outlived the lock"
    );
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
}

#[test]
fn a_command_run_from_a_script_on_a_terminal_can_prompt() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    // exec shares its job with the script's shell, so the command starts in
    // the background; when it reads the terminal it must get it.
    let script = dir.path().join("deploy.sh");
    std::fs::write(
        &script,
        format!(
            "{} exec tty-prompt -- sh -c 'touch {}/asking; printf \"Continue? \"; read a; \
             echo answer=$a'\n",
            env!("CARGO_BIN_EXE_redlock"),
            dir.path().display()
        ),
    )
    .unwrap();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    keyboard
        .write_all(format!("bash {}; echo status=$?\n", script.display()).as_bytes())
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(8), || dir
            .path()
            .join("asking")
            .exists()),
        "the command never started"
    );
    keyboard.write_all(b"go-ahead\n").unwrap();
    let screen = type_and_exit(bash, keyboard, "");
    assert!(
        screen.contains("answer=go-ahead") && screen.contains("status=0"),
        "{screen}"
    );
}

#[test]
fn on_a_terminal_a_leftover_stopped_on_the_terminal_does_not_hold_the_lock() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let (bash, mut keyboard) = interactive_bash(&cluster);
    // Three background readers outlive the command, then stop on the
    // terminal they no longer have: one that SIGHUP ends, one that ignores
    // it (as under nohup), one that ignores SIGTERM too.
    let line = format!(
        "{} exec tty-left -- sh -c '(sleep 0.3; read a </dev/tty) & \
         (trap \"\" HUP; sleep 0.3; read b </dev/tty) & \
         (trap \"\" HUP TERM; sleep 0.3; read c </dev/tty) & exit 0'; \
         echo status=$?\n",
        env!("CARGO_BIN_EXE_redlock"),
    );
    keyboard.write_all(line.as_bytes()).unwrap();
    assert!(
        wait_until(Duration::from_secs(8), || cluster[0]
            .get(b"tty-left")
            .is_some()),
        "exec never took the lock"
    );
    let released = wait_until(Duration::from_secs(10), || {
        cluster.get_all(b"tty-left") == vec![None, None, None]
    });
    let screen = type_and_exit(bash, keyboard, "");
    assert!(
        released,
        "the lock stayed held by a stopped leftover:\n{screen}"
    );
    assert!(screen.contains("status=0"), "{screen}");
    assert!(
        screen.contains("sending it SIGTERM") && screen.contains("sending it SIGKILL"),
        "the readers that ignore SIGHUP, and SIGTERM, were not stopped in turn:\n{screen}"
    );
}

/// The children of `pid`, read from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .map(|child| child.parse().unwrap())
        .collect()
}

/// The watchdog is forked from `exec`, not a second start of the binary: it
/// has `exec`'s own executable, and runs in a process group of its own, out
/// of reach of the terminal's signals.
#[test]
fn the_watchdog_is_a_fork_of_exec_in_its_own_group() {
    let cluster = Cluster::start(1);
    let exec = Running::spawn(
        cluster
            .redlock()
            .args(["exec", "forked", "--", "sleep", "30"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let pid = exec.id();
    assert!(
        wait_until(Duration::from_secs(10), || children_of(pid).len() == 2),
        "exec {pid} never had its command and its watchdog: {:?}",
        children_of(pid)
    );
    let cmdline = |pid: u32| std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let watchdog = children_of(pid)
        .into_iter()
        .find(|&child| cmdline(child) != b"sleep\x0030\x00")
        .expect("a child that is not the command");
    // Its name and command line are its own: see
    // the_watchdog_shows_in_ps_as_the_watchdog.
    let exe = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert_eq!(exe(watchdog), exe(pid));
    let group = nix::unistd::getpgid(Some(Pid::from_raw(watchdog as i32))).unwrap();
    assert_eq!(group, Pid::from_raw(watchdog as i32), "its own group");
    exec.signal(Signal::SIGTERM);
    let out = exec.finish(Duration::from_secs(20));
    out.assert_signal(
        Signal::SIGTERM,
        "exec passes SIGTERM on to sleep, then dies of it",
    );
    assert!(!pid_alive(watchdog as i32), "the watchdog outlived exec");
}

#[test]
fn extensions_failing_while_exec_runs_are_said_as_such_not_as_a_freeze() {
    // The on-call report: kill a master, restart it empty, kill another.
    // Each extension fails; the stop falls due and the watchdog, acting on
    // the same schedule, may come first: the debug hook makes it come first
    // every time. exec ran all along, so it must not say it was not running,
    // and it must say why the extensions failed.
    let mut cluster = Cluster::start(3);
    let dir = temp();
    let child = spawn_exec_with(
        cluster
            .redlock()
            .env("REDLOCK_TEST_WATCHDOG_EARLY_MS", "150"),
        &["--ttl", "1s", "longjob3", "-c", &family_script(dir.path())],
    );
    let (pid, grandchild) = family(dir.path());
    cluster[0].restart();
    cluster[1].kill();
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
    assert!(!pid_alive(pid) && !pid_alive(grandchild), "{stderr}");
    assert!(
        !stderr.contains("not running"),
        "exec ran the whole time:\n{stderr}"
    );
    assert!(
        stderr.contains("lock \"longjob3\" could not be extended in time")
            && stderr.contains("extending it kept failing (")
            && stderr.contains(" in ")
            && stderr.contains("); the last attempt: no quorum"),
        "the true cause:\n{stderr}"
    );
}

#[test]
fn a_frozen_exec_says_it_was_not_running() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let child = spawn_exec(
        &cluster,
        &[
            "--ttl",
            "1s",
            "frozen-says",
            "-c",
            &family_script(dir.path()),
        ],
    );
    let (pid, _) = family(dir.path());
    child.signal(Signal::SIGSTOP);
    assert!(
        wait_until(Duration::from_secs(5), || !pid_alive(pid)),
        "the watchdog stopped the command"
    );
    child.signal(Signal::SIGCONT);
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    assert_eq!(ended, Ended::Code(79), "{stderr}");
    assert!(
        stderr.contains("while redlock itself was not running"),
        "{stderr}"
    );
    assert!(!stderr.contains("could not be extended"), "{stderr}");
}

#[test]
fn on_a_terminal_ctrl_c_names_the_leftovers_then_stops_then_kills_them() {
    use std::io::Write as _;
    // The command traps INT and exits; its background processes ignore INT
    // (as a non-interactive shell's do), one of them TERM too. exec holds
    // the lock for them and says so; the next Ctrl-C sends them the stop
    // signal, the one after SIGKILL, and exec ends and releases.
    let cluster = Cluster::start(3);
    let dir = temp();
    let d = dir.path().display();
    let command = format!(
        "exec {} exec -k 20s --ttl 60s tty-left -- sh -c 'trap \"exit 1\" INT; \
         sleep 100 & echo $! > {d}/plain.pid; \
         (trap \"\" TERM; exec sleep 101) & echo $! > {d}/stubborn.pid; \
         echo $$ > {d}/child.pid; wait'",
        env!("CARGO_BIN_EXE_redlock"),
    );
    let mut script = start_on_a_terminal(&cluster, &command);
    let child = read_pid(&dir.path().join("child.pid"));
    let (plain, stubborn) = (
        read_pid(&dir.path().join("plain.pid")),
        read_pid(&dir.path().join("stubborn.pid")),
    );
    wait_for_terminal(child);
    let exec = redlock_pid_with(&cluster, "tty-left").expect("the exec process");
    let mut keyboard = script.stdin.take().unwrap();
    keyboard.write_all(b"\x03").unwrap();
    // The command is gone and exec has the terminal back: the next Ctrl-C
    // is exec's.
    let back = wait_until(Duration::from_secs(5), || {
        !pid_alive(child) && owns_terminal(exec)
    });
    let held = cluster[0].get(b"tty-left").is_some() && pid_alive(plain);
    keyboard.write_all(b"\x03").unwrap();
    let plain_stopped = wait_until(Duration::from_secs(5), || !pid_alive(plain));
    // The behaviour: the stubborn one outlives the second Ctrl-C a while.
    std::thread::sleep(Duration::from_millis(300));
    let stubborn_lived = pid_alive(stubborn);
    let still_held = cluster[0].get(b"tty-left").is_some();
    let third = Instant::now();
    keyboard.write_all(b"\x03").unwrap();
    keyboard.flush().unwrap();
    let out = script.finish(Duration::from_secs(10));
    let took = third.elapsed();
    let screen = &out.stdout;
    assert!(back, "exec took the terminal back:\n{screen}");
    assert!(held, "the lock is held for the leftovers:\n{screen}");
    assert!(
        screen.contains(
            "the command exited; lock \"tty-left\" is held until these processes it left end: "
        ) && screen.contains(&format!("{plain} sleep 100"))
            && screen.contains(&format!("{stubborn} sleep 101"))
            && screen.contains("(Ctrl-C stops them)"),
        "the leftovers are named:\n{screen}"
    );
    assert!(plain_stopped, "the second Ctrl-C stopped them:\n{screen}");
    assert!(
        screen.contains("stopping the processes the command left: SIGTERM now, SIGKILL in 20s"),
        "{screen}"
    );
    assert!(
        stubborn_lived && still_held,
        "SIGKILL waits for -k:\n{screen}"
    );
    assert!(!pid_alive(stubborn), "the third Ctrl-C killed it");
    assert!(took < Duration::from_secs(5), "{took:?}:\n{screen}");
    out.assert_code(1, "the command's own status after its INT trap");
    assert_gone_everywhere(&cluster, b"tty-left");
}

#[test]
fn on_a_terminal_ctrl_z_says_when_the_lock_lapses() {
    use std::io::Write as _;
    let cluster = Cluster::start(3);
    let dir = temp();
    let (bash, mut keyboard) = interactive_bash(&cluster);
    keyboard
        .write_all(second_long_command("tty-susp", dir.path()).as_bytes())
        .unwrap();
    let child = read_pid(&dir.path().join("child.pid"));
    let exec = redlock_pid_with(&cluster, "tty-susp").expect("the exec process");
    wait_for_terminal(child);
    keyboard.write_all(b"\x1a").unwrap();
    let state = |pid| crate::support::proc_state(pid);
    let stopped = wait_until(Duration::from_secs(5), || state(exec) == Some('T'));
    let screen = type_and_exit(bash, keyboard, "fg\necho status=$?\n");
    assert!(stopped, "exec stopped with its job:\n{screen}");
    assert_eq!(
        screen
            .matches("suspended: lock \"tty-susp\" expires in ")
            .count(),
        1,
        "said once:\n{screen}"
    );
    assert!(screen.contains("s unless you continue"), "{screen}");
    assert!(screen.contains("status=6"), "fg resumed it:\n{screen}");
    assert_gone_everywhere(&cluster, b"tty-susp");
}

#[test]
fn a_loss_during_a_timeout_stop_exits_79_not_124() {
    let cluster = Cluster::start(3);
    let dir = temp();
    // The command ignores the timeout's SIGTERM (but notes it), so it runs
    // on until the SIGKILL a second later; the lock is lost meanwhile, and
    // the next extension (at a third of the TTL) sees it.
    let ready = dir.path().join("ready");
    let termed = dir.path().join("termed");
    let script = format!(
        "trap 'touch {}' TERM; touch {}; while :; do sleep 0.05; done",
        termed.display(),
        ready.display()
    );
    let child = spawn_exec(
        &cluster,
        &[
            "--ttl",
            "3s",
            "-k",
            "1s",
            "--timeout",
            "300ms",
            "both",
            "-c",
            &script,
        ],
    );
    assert!(wait_until(Duration::from_secs(10), || ready.exists()));
    assert!(
        wait_until(Duration::from_secs(10), || termed.exists()),
        "the timeout's stop signal never came"
    );
    for i in 0..3 {
        let _: () = redis::cmd("DEL")
            .arg("both")
            .query(&mut cluster[i].client())
            .unwrap();
    }
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    // The work was not protected to its end: that is the news, not the
    // time limit it also ran past.
    assert_eq!(ended, Ended::Code(79), "{stderr}");
    assert!(stderr.contains("lock \"both\" was lost"), "{stderr}");
}

#[test]
fn timeout_stops_a_hung_command_releases_and_exits_124() {
    let cluster = Cluster::start(3);
    let dir = temp();
    let started = Instant::now();
    let child = spawn_exec(
        &cluster,
        &["--timeout", "1s", "hung", "-c", &family_script(dir.path())],
    );
    let (pid, grandchild) = family(dir.path());
    let Output { ended, stderr, .. } = child.finish(Duration::from_secs(10));
    let took = started.elapsed();
    assert_eq!(ended, Ended::Code(124), "{stderr}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(!pid_alive(pid) && !pid_alive(grandchild));
    assert_eq!(
        stderr.trim(),
        "redlock: lock \"hung\": the command ran past --timeout 1s; it was stopped"
    );
    assert_gone_everywhere(&cluster, b"hung");
    // Within its time limit, the command's own status stands.
    run(cluster.redlock().args([
        "exec",
        "--timeout",
        "30s",
        "quick",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]))
    .assert_code(3, "ended in time");
    let zero = run(cluster
        .redlock()
        .args(["exec", "--timeout", "0", "quick", "--", "true"]));
    zero.assert_code(64, "--timeout 0");
    assert!(
        zero.stderr.contains("--timeout must be more than 0"),
        "{}",
        zero.stderr
    );
}

#[test]
fn the_watchdog_shows_in_ps_as_the_watchdog() {
    let cluster = Cluster::start(1);
    let child = spawn_exec(&cluster, &["ps-named", "--", "sleep", "30"]);
    let exec = child.id();
    let read =
        |pid: u32, what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
    let watchdog = || {
        children_of(exec)
            .into_iter()
            .find(|&pid| read(pid, "comm") == b"redlock-watch\n")
    };
    let found = wait_until(Duration::from_secs(5), || {
        watchdog().is_some() && cluster[0].get(b"ps-named").is_some()
    });
    let watchdog = watchdog();
    let comm = read(exec, "comm");
    let cmdline = watchdog.map(|pid| read(pid, "cmdline")).unwrap_or_default();
    child.signal(Signal::SIGTERM);
    let out = child.finish(Duration::from_secs(10));
    assert!(
        found,
        "no child of exec named redlock-watch ({})",
        out.stderr
    );
    assert_eq!(comm, b"redlock\n", "exec keeps its own name");
    let title = format!("redlock-watch (the watchdog of redlock exec, pid {exec})");
    assert!(
        cmdline.starts_with(title.as_bytes()) && cmdline.ends_with(b"\0"),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
}

/// How many times `pid` has been switched out (voluntarily or not).
fn context_switches(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|line| line.contains("ctxt_switches:"))
        .filter_map(|line| line.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn the_watchdog_of_a_waiting_exec_sleeps_until_there_is_something_to_watch() {
    // Nothing to stop and no time to stop it by: the watchdog has no reason
    // to wake until exec writes to it (it woke every 20 ms before, 50 times
    // a second for every waiting exec on the host).
    let cluster = Cluster::start(1);
    let token = acquire(&cluster, "asleep", &[]);
    let waiter = spawn_exec(&cluster, &["-w", "30s", "asleep", "--", "true"]);
    let exec = waiter.id();
    let watchdog = || {
        children_of(exec).into_iter().find(|&pid| {
            std::fs::read(format!("/proc/{pid}/comm")).unwrap_or_default() == b"redlock-watch\n"
        })
    };
    let found = wait_until(Duration::from_secs(5), || watchdog().is_some());
    assert!(found, "no watchdog under exec {exec}");
    let watchdog = watchdog().unwrap();
    // The behaviour: how often it wakes in a second, once it has settled.
    std::thread::sleep(Duration::from_millis(200));
    let before = context_switches(watchdog);
    std::thread::sleep(Duration::from_secs(1));
    let woke = context_switches(watchdog) - before;
    run(cluster.redlock().args(["release", "asleep", &token])).assert_code(0, "release");
    waiter
        .finish(Duration::from_secs(10))
        .assert_code(0, "the waiter runs its command");
    assert!(
        woke <= 2,
        "the watchdog woke {woke} times in a second of waiting"
    );
}

#[test]
fn a_timeout_stop_does_not_name_as_left_behind_what_it_is_stopping() {
    // At the time limit the whole group gets SIGTERM: the shell dies at
    // once, its background job takes 300 ms to finish its trap. That job
    // is being stopped, not left behind.
    let cluster = Cluster::start(1);
    let script = "(trap 'sleep 0.3; exit 0' TERM; while :; do sleep 0.05; done) & wait";
    let out = run(cluster.redlock().args([
        "exec",
        "--timeout",
        "500ms",
        "slow-stop",
        "--",
        "sh",
        "-c",
        script,
    ]));
    out.assert_code(124, "stopped at the time limit");
    // (The job's shell may say "Terminated" of its own sleep.)
    let ours: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| line.starts_with("redlock:"))
        .collect();
    assert_eq!(
        ours,
        ["redlock: lock \"slow-stop\": the command ran past --timeout 500ms; it was stopped"]
    );
    assert_gone_everywhere(&cluster, b"slow-stop");
}
