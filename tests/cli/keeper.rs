//! `redlock acquire --while PID`: a lock for a whole script, kept by a
//! keeper process while the script's shell lives. Each scenario runs as a
//! bash, dash and zsh script that takes the lock with
//! `tok=$(redlock acquire --while $$ NAME)`, started in a process group of
//! its own as a shell's job or cron's job would be.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::{
    drop_redlock_variables, pid_alive, run, temp_dir, wait_until, with_default_signals, Cluster,
    Output, Running,
};

const SHELLS: [&str; 3] = ["bash", "dash", "zsh"];
const PASSWORD: &str = "keeper-pw-7";
const LIMIT: Duration = Duration::from_secs(30);

/// Servers that need a password, so that a leak would show.
fn cluster_with_password() -> (Cluster, String) {
    let cluster = Cluster::start(3);
    let servers = cluster.acl_user("keeper", PASSWORD, &["~*", "&*", "+@all"]);
    (cluster, servers)
}

/// A directory for one script: the script, its markers, and `go`.
struct Scene {
    dir: tempfile::TempDir,
    servers: String,
}

impl Scene {
    fn new(servers: &str) -> Scene {
        Scene {
            dir: temp_dir("redlock-test-keeper-"),
            servers: servers.to_owned(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Starts `shell` on a script that traps SIGTERM and SIGUSR1 (writing
    /// the marker `trapped`), holds an extra descriptor, takes the lock
    /// with `acquire --while $$ ARGS` and writes the token to `token`, then
    /// runs `body`.
    fn start(&self, shell: &str, acquire_args: &str, body: &str) -> Running {
        let script = format!(
            "trap 'echo TERM > \"$D/trapped\"; exit 3' TERM\n\
             trap 'echo USR1 > \"$D/trapped\"; exit 4' USR1\n\
             exec 9>\"$D/fd9\"\n\
             tok=$(redlock acquire {acquire_args} --while $$ job) || exit\n\
             echo \"$tok\" > \"$D/token.tmp\" && mv \"$D/token.tmp\" \"$D/token\"\n\
             {body}\n"
        );
        self.spawn(shell, &script)
    }

    /// Starts `shell` on `script` in a process group of its own, as a shell
    /// job or a cron job runs, with `redlock` on its PATH and `$D` naming
    /// this directory.
    fn spawn(&self, shell: &str, script: &str) -> Running {
        let path = self.path("script");
        fs::write(&path, script).unwrap();
        let mut cmd = Command::new(shell);
        cmd.arg(&path)
            .env("D", self.dir.path())
            .env("PATH", path_with_redlock())
            .env("REDLOCK_SERVERS", &self.servers)
            .env("REDLOCK_RESTART_GUARD", "0")
            .env("XDG_CONFIG_HOME", "/nonexistent/redlock-tests")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        drop_redlock_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
        with_default_signals(&mut cmd);
        Running::spawn(&mut cmd)
    }

    /// The token, once `$(...)` returned: panics with what the script said
    /// if it does not within [`LIMIT`].
    fn token(&self, mut script: Running) -> (Running, String) {
        let path = self.path("token");
        let ended = |script: &mut Running| script.try_wait().is_ok_and(|status| status.is_some());
        if wait_until(LIMIT, || path.exists() || ended(&mut script)) && path.exists() {
            let token = fs::read_to_string(&path).unwrap().trim().to_owned();
            return (script, token);
        }
        let out = script.finish(Duration::from_secs(1));
        panic!("no token from $(redlock acquire --while ...) within {LIMIT:?}: {out:?}");
    }

    fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    fn redlock(&self) -> Command {
        let mut cmd = crate::support::redlock();
        cmd.env("REDLOCK_SERVERS", &self.servers);
        cmd
    }

    /// `status --json job`.
    fn status(&self) -> serde_json::Value {
        run(self.redlock().args(["status", "--json", "job"])).json()
    }

    fn is_held(&self) -> bool {
        self.status()["state"] == "held"
    }
}

fn path_with_redlock() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_redlock")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The keeper's pid and the watched pid, from the record beside the lock.
fn keeper_of(scene: &Scene) -> (i32, i32) {
    let status = scene.status();
    let holder = &status["holder"];
    let keeper = holder["keeper_pid"].as_i64();
    let pid = holder["pid"].as_i64();
    match (keeper, pid) {
        (Some(keeper), Some(pid)) => (keeper as i32, pid as i32),
        _ => panic!("no keeper in the record: {status}"),
    }
}

/// What the keeper has open, as /proc shows its descriptors' targets.
fn descriptors(pid: i32) -> Vec<String> {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
                .map(|target| target.display().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The keeper runs as `redlock keeper` in a session of its own, with no
/// password in its argv or environment and nothing of the script's open
/// (its one pipe is to its watchdog).
fn assert_keeper_is_private(keeper: i32, script: i32, scene: &Scene) {
    let cmdline = fs::read(format!("/proc/{keeper}/cmdline")).unwrap();
    assert_eq!(cmdline, b"redlock\0keeper\0", "the keeper's argv");
    // Unreadable (not dumpable, another user) is as good as empty.
    let environ = fs::read(format!("/proc/{keeper}/environ")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&environ).contains(PASSWORD) && environ.is_empty(),
        "the keeper's environment: {environ:?}"
    );
    let comm = fs::read_to_string(format!("/proc/{keeper}/comm")).unwrap();
    assert_eq!(comm.trim(), "redlock-keeper");
    let stat = fs::read_to_string(format!("/proc/{keeper}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    assert_eq!(fields[3], keeper.to_string(), "its own session: {stat}");
    let open = descriptors(keeper);
    let fd9 = scene.path("fd9").display().to_string();
    let scripts = descriptors(script);
    assert!(
        scripts.iter().any(|t| t.starts_with("pipe:")),
        "the script has no pipe to compare with: {scripts:?}"
    );
    assert!(
        !open
            .iter()
            .any(|t| (t.starts_with("pipe:") && scripts.contains(t)) || *t == fd9),
        "the keeper holds the script's pipe or descriptor: {open:?}"
    );
}

/// The whole life of a script's lock: `$(...)` returns, the lock outlives
/// several TTLs while the script sleeps, and `release` ends the keeper
/// without the script being signalled.
fn a_script_keeps_the_lock_until_it_releases_it(shell: &str) {
    let (_cluster, servers) = cluster_with_password();
    let scene = Scene::new(&servers);
    let body = "while [ ! -e \"$D/go\" ]; do sleep 0.05; done\n\
                redlock release job \"$tok\"; echo $? > \"$D/released\"\n\
                sleep 2\n\
                echo done > \"$D/done\"";
    let (script, _token) = scene.token(scene.start(shell, "--ttl 1s", body));
    let (keeper, watched) = keeper_of(&scene);
    assert_eq!(watched as u32, script.id(), "the record names the script");
    assert_keeper_is_private(keeper, watched, &scene);
    // The behaviour: past its TTL while the script sleeps, only the
    // keeper's extensions keep it (their interval is tested in
    // src/lock/keeper.rs, without a clock).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(scene.is_held(), "{shell}: the lock lapsed while kept");
    assert!(pid_alive(keeper));
    fs::write(scene.path("go"), "").unwrap();
    let ended = || scene.exists("done") || scene.exists("trapped");
    assert!(
        wait_until(LIMIT, ended),
        "{shell}: the script did not go on"
    );
    let out = script.finish(LIMIT);
    assert!(
        !scene.exists("trapped"),
        "{shell}: the keeper signalled the script after a release: {}",
        scene.read("trapped")
    );
    out.assert_code(0, &format!("{shell}: the script"));
    assert_eq!(scene.read("released").trim(), "0", "{shell}: release");
    assert!(
        !pid_alive(keeper),
        "{shell}: the keeper outlived the release"
    );
    assert!(!scene.is_held());
}

#[test]
fn bash_keeps_the_lock_until_it_releases_it() {
    a_script_keeps_the_lock_until_it_releases_it("bash");
}

#[test]
fn dash_keeps_the_lock_until_it_releases_it() {
    a_script_keeps_the_lock_until_it_releases_it("dash");
}

#[test]
fn zsh_keeps_the_lock_until_it_releases_it() {
    a_script_keeps_the_lock_until_it_releases_it("zsh");
}

/// How long after `since` the lock took to become free, at most `limit`.
fn freed_within(scene: &Scene, limit: Duration) -> Option<Duration> {
    let since = Instant::now();
    wait_until(limit, || !scene.is_held()).then(|| since.elapsed())
}

#[test]
fn a_script_that_ends_releases_its_lock_at_once() {
    let cluster = Cluster::start(3);
    for shell in SHELLS {
        let scene = Scene::new(&cluster.servers_arg());
        let body = "while [ ! -e \"$D/go\" ]; do sleep 0.05; done";
        let (script, _) = scene.token(scene.start(shell, "--ttl 3s", body));
        let (keeper, _) = keeper_of(&scene);
        fs::write(scene.path("go"), "").unwrap();
        script.finish(LIMIT).assert_code(0, shell);
        // One extension period is TTL/3: 1s.
        let freed = freed_within(&scene, Duration::from_secs(1));
        assert!(freed.is_some(), "{shell}: still held 1s after the end");
        assert!(wait_until(Duration::from_secs(1), || !pid_alive(keeper)));
        assert!(!scene.exists("trapped"), "{shell}");
    }
}

#[test]
fn a_script_killed_with_sigkill_releases_its_lock_within_one_extension_period() {
    let cluster = Cluster::start(3);
    for shell in SHELLS {
        let scene = Scene::new(&cluster.servers_arg());
        // Its foreground `sleep`, left in the group, ends soon after.
        let body = "while :; do sleep 0.2; done";
        let (script, _) = scene.token(scene.start(shell, "--ttl 3s", body));
        let (keeper, _) = keeper_of(&scene);
        script.signal(Signal::SIGKILL);
        let out = script.finish(LIMIT);
        out.assert_signal(Signal::SIGKILL, shell);
        let freed = freed_within(&scene, Duration::from_secs(1));
        assert!(freed.is_some(), "{shell}: still held 1s after SIGKILL");
        assert!(wait_until(Duration::from_secs(1), || !pid_alive(keeper)));
    }
}

#[test]
fn a_script_killed_with_sigkill_keeps_the_lock_for_what_it_left_running() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    // A job in the script's group that outlives the script by a second.
    let body = "sleep 1.5 & echo $! > \"$D/child\"\nwhile :; do sleep 0.05; done";
    let (script, _) = scene.token(scene.start("bash", "--ttl 3s", body));
    assert!(wait_until(LIMIT, || scene.read("child").ends_with('\n')));
    let child: i32 = scene.read("child").trim().parse().unwrap();
    script.signal(Signal::SIGKILL);
    // As exec's lock is its command's whole group's: the job still runs
    // in the script's group, so the lock is still its (the behaviour: a
    // while in which the keeper, had it not looked at the group, lets go).
    std::thread::sleep(Duration::from_millis(500));
    assert!(pid_alive(child), "the job ended too soon for this test");
    assert!(scene.is_held(), "released while the script's job still ran");
    // (The job holds the script's stdout: the script is done once it is.)
    script
        .finish(LIMIT)
        .assert_signal(Signal::SIGKILL, "the script");
    assert!(wait_until(LIMIT, || !pid_alive(child)));
    let freed = freed_within(&scene, Duration::from_secs(1));
    assert!(freed.is_some(), "still held 1s after the job ended");
}

#[test]
fn a_release_waits_until_the_scripts_job_has_stopped() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    // The README's recipe, whose job takes a second to clean up after
    // SIGTERM; the script itself dies of it (no TERM trap), and its EXIT
    // trap releases the lock while the job still cleans up.
    let script = "tok=$(redlock acquire --ttl 3s --while $$ job) || exit\n\
                  trap 'redlock release job \"$tok\"' EXIT\n\
                  echo \"$tok\" > \"$D/token\"\n\
                  sh -c 'trap \"sleep 1; echo done > \\\"$D/job-done\\\"; exit 0\" TERM\n\
                  echo $$ > \"$D/job\"; while :; do sleep 0.05; done'\n";
    let running = scene.spawn("bash", script);
    assert!(wait_until(LIMIT, || scene.read("job").ends_with('\n')));
    // A CI runner cancelling the step: SIGTERM to the whole group.
    let group = nix::unistd::Pid::from_raw(-(running.id() as i32));
    nix::sys::signal::kill(group, Signal::SIGTERM).unwrap();
    // The behaviour: a while in which the lock, were it the script's
    // alone, would be released.
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        !scene.exists("job-done"),
        "the job stopped too soon for this test"
    );
    assert!(
        scene.is_held(),
        "the lock was released while the script's job still cleaned up"
    );
    let out = running.finish(LIMIT);
    assert!(scene.exists("job-done"), "the job never finished: {out:?}");
    let freed = freed_within(&scene, Duration::from_secs(1));
    assert!(
        freed.is_some(),
        "still held after the job and the script ended"
    );
}

/// A script that waits on a child of its own, in its group: both get the
/// signal when the lock is lost.
const WAITS_ON_A_CHILD: &str = "sleep 60 & echo $! > \"$D/child\"\n\
                                wait $!\n\
                                echo not-signalled > \"$D/done\"";

/// Runs `shell` until `lose` made the keeper lose the lock; the script's
/// output and the child's pid.
fn lose_the_lock(
    shell: &str,
    cluster: &mut Cluster,
    args: &str,
    lose: impl FnOnce(&mut Cluster),
) -> (Output, Scene, i32) {
    let scene = Scene::new(&cluster.servers_arg());
    let (script, _) = scene.token(scene.start(shell, args, WAITS_ON_A_CHILD));
    assert!(wait_until(LIMIT, || scene.read("child").ends_with('\n')));
    let child: i32 = scene.read("child").trim().parse().unwrap();
    lose(cluster);
    (script.finish(LIMIT), scene, child)
}

fn delete_on_a_majority(cluster: &mut Cluster) {
    for i in 0..2 {
        let _: () = redis::cmd("DEL")
            .arg("job")
            .query(&mut cluster[i].client())
            .unwrap();
    }
}

#[test]
fn a_lost_lock_signals_the_scripts_process_group() {
    let mut cluster = Cluster::start(3);
    for shell in SHELLS {
        let (out, scene, child) =
            lose_the_lock(shell, &mut cluster, "--ttl 1s", delete_on_a_majority);
        out.assert_code(3, &format!("{shell}: the script's TERM trap"));
        assert_eq!(scene.read("trapped").trim(), "TERM", "{shell}");
        assert!(
            wait_until(Duration::from_secs(2), || !pid_alive(child)),
            "{shell}: the script's child did not get the signal"
        );
    }
}

#[test]
fn servers_that_restart_empty_are_a_loss_too() {
    let mut cluster = Cluster::start(3);
    let restart = |cluster: &mut Cluster| {
        for i in 0..3 {
            cluster[i].restart();
        }
    };
    let (out, scene, _) = lose_the_lock("bash", &mut cluster, "--ttl 1s", restart);
    out.assert_code(3, "the script's TERM trap");
    assert_eq!(scene.read("trapped").trim(), "TERM");
}

#[test]
fn while_signal_chooses_the_signal_or_none() {
    let mut cluster = Cluster::start(3);
    let args = "--ttl 1s --while-signal USR1";
    let (out, scene, _) = lose_the_lock("dash", &mut cluster, args, delete_on_a_majority);
    out.assert_code(4, "the script's USR1 trap");
    assert_eq!(scene.read("trapped").trim(), "USR1");

    let scene = Scene::new(&cluster.servers_arg());
    let body = "sleep 3; echo not-signalled > \"$D/done\"";
    let (script, _) = scene.token(scene.start("bash", "--ttl 1s --while-signal none", body));
    let (keeper, _) = keeper_of(&scene);
    delete_on_a_majority(&mut cluster);
    // The keeper gives up at its next extension, and says nothing.
    assert!(wait_until(Duration::from_secs(2), || !pid_alive(keeper)));
    script
        .finish(LIMIT)
        .assert_code(0, "the script under --while-signal none");
    assert!(!scene.exists("trapped") && scene.exists("done"));
}

#[test]
fn while_refuses_a_process_that_is_not_there() {
    let cluster = Cluster::start(1);
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id().to_string();
    gone.wait().unwrap();
    let out = run(cluster.redlock().args(["acquire", "--while", &pid, "job"]));
    out.assert_code(64, "--while on a pid that is gone");
    assert_eq!(
        out.stderr,
        format!("redlock: --while {pid}: there is no such process\n")
    );
    assert!(out.stdout.is_empty());
    let status = run(cluster.redlock().args(["status", "-q", "job"]));
    status.assert_code(1, "no lock left taken");

    let out = run(cluster
        .redlock()
        .args(["acquire", "--while-signal", "USR1", "job"]));
    out.assert_code(64, "--while-signal without --while");
    let out =
        run(cluster
            .redlock()
            .args(["acquire", "--while", "1", "--while-signal", "STOP", "job"]));
    out.assert_code(64, "--while-signal STOP");
    assert!(out.stderr.contains("STOP cannot stop"), "{}", out.stderr);
}

#[test]
fn json_prints_the_token_as_usual_and_the_keeper_follows_any_process() {
    let cluster = Cluster::start(3);
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let out = run(cluster
        .redlock()
        .args(["acquire", "--json", "--ttl", "3s", "--while", &pid, "job"]));
    out.assert_code(0, "acquire --json --while");
    let token = out.json()["token"].as_str().unwrap().to_owned();
    let scene = Scene::new(&cluster.servers_arg());
    let status = scene.status();
    assert_eq!(status["token"], token.as_str());
    // Whoever looks sees who keeps it alive, not a countdown.
    assert_eq!(status["holder"]["pid"], sleeper.id());
    assert_eq!(status["holder"]["kept_alive_by_keeper"], true, "{status}");
    assert_eq!(status["holder"]["kept_alive_by_exec"], false, "{status}");
    assert_eq!(status["holder"]["renew_every_ms"], 1000, "{status}");
    let text = run(scene.redlock().args(["status", "job"]));
    let said = format!("kept alive while pid {pid} lives (renewed every 1s)");
    assert!(text.stdout.contains(&said), "{}", text.stdout);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert!(
        freed_within(&scene, Duration::from_secs(1)).is_some(),
        "the lock outlived the process it was kept for"
    );
}

/// The README's recipe for a lock that lives as long as the script: the
/// first code block under its heading.
fn recipe() -> String {
    let readme = include_str!("../../README.md");
    let section = readme
        .split_once("\n### Take a lock in a shell script\n")
        .expect("the README has the shell-script recipe")
        .1;
    let code = section
        .split_once("```sh\n")
        .expect("the recipe has a code block")
        .1;
    code.split_once("```")
        .expect("the code block ends")
        .0
        .to_owned()
}

#[test]
fn the_recipe_keeps_the_lock_for_the_whole_script_and_stops_it_on_a_loss() {
    let mut cluster = Cluster::start(3);
    let dir = temp_dir("redlock-test-keeper-recipe-");
    let import = dir.path().join("import.sh");
    // The job runs until the test says `go`. The recipe's TTL (30s by
    // default) is cut to 1s, so that a few seconds see several extensions.
    fs::write(
        &import,
        "#!/bin/sh\necho $$ > \"$D/job\"\nwhile [ ! -e \"$D/go\" ]; do sleep 0.05; done\n",
    )
    .unwrap();
    let recipe = recipe();
    assert_eq!(recipe.matches("acquire --while").count(), 1, "{recipe}");
    let recipe = recipe.replace("acquire --while", "acquire --ttl 1s --while");
    let script = dir.path().join("recipe");
    fs::write(&script, recipe).unwrap();
    let start = |dir: &Path| {
        let mut cmd = Command::new("bash");
        cmd.arg(&script)
            .current_dir(dir)
            .env("D", dir)
            .env("PATH", path_with_redlock())
            .env("REDLOCK_SERVERS", cluster.servers_arg())
            .env("REDLOCK_RESTART_GUARD", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        drop_redlock_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
        with_default_signals(&mut cmd);
        Running::spawn(&mut cmd)
    };
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&import)
        .status()
        .unwrap();
    let scene = Scene::new(&cluster.servers_arg());
    let held =
        |scene: &Scene| run(scene.redlock().args(["status", "-q", "big-import"])).code() == 0;

    // The job ends: the lock is released with it, status 0.
    let running = start(dir.path());
    assert!(wait_until(LIMIT, || dir.path().join("job").exists()));
    // The behaviour: past its TTL of 1s, the recipe's keeper keeps it.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(held(&scene), "the lock lapsed under the recipe");
    fs::write(dir.path().join("go"), "").unwrap();
    running.finish(LIMIT).assert_code(0, "the recipe");
    assert!(!held(&scene));

    // The lock is lost: the script and its job are stopped.
    fs::remove_file(dir.path().join("go")).unwrap();
    fs::remove_file(dir.path().join("job")).unwrap();
    let running = start(dir.path());
    assert!(wait_until(LIMIT, || dir.path().join("job").exists()));
    let job: i32 = fs::read_to_string(dir.path().join("job"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for i in 0..2 {
        let _: () = redis::cmd("DEL")
            .arg("big-import")
            .query(&mut cluster[i].client())
            .unwrap();
    }
    let out = running.finish(LIMIT);
    assert_ne!(out.ended, crate::support::Ended::Code(0), "{out:?}");
    assert!(!pid_alive(job), "the job ran on after the loss");
    let _ = &mut cluster;
}

#[test]
fn unreachable_servers_signal_the_script_before_the_validity_runs_out() {
    let mut cluster = Cluster::start(3);
    let ttl = Duration::from_secs(2);
    let mut paused = None;
    let pause = |cluster: &mut Cluster| {
        // Right after an extension (the key's TTL jumps back up), so that
        // the validity ends a whole TTL after the pause.
        let mut last = cluster[0].pttl(b"job");
        let deadline = Instant::now() + LIMIT;
        loop {
            let now = cluster[0].pttl(b"job");
            if now > last || Instant::now() > deadline {
                break;
            }
            last = now;
            std::thread::sleep(Duration::from_millis(2));
        }
        cluster[0].pause();
        cluster[1].pause();
        paused = Some(Instant::now());
    };
    let (out, scene, _) = lose_the_lock("bash", &mut cluster, "--ttl 2s", pause);
    let signalled_after = paused.unwrap().elapsed();
    out.assert_code(3, "the script's TERM trap");
    assert_eq!(scene.read("trapped").trim(), "TERM");
    // As exec's stop signal: -k (here TTL/3) and a margin before the
    // validity ends, so that the script has time to stop while it still
    // holds the lock, not a moment before the lock lapses.
    let latest = ttl - ttl / 3;
    assert!(
        signalled_after < latest,
        "signalled {signalled_after:?} after the servers stopped answering, \
         later than {latest:?}"
    );
    cluster[0].resume();
    cluster[1].resume();
}

#[test]
fn a_keeper_told_to_stop_releases_the_lock_and_signals_the_script() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let (script, _) = scene.token(scene.start("zsh", "--ttl 3s", WAITS_ON_A_CHILD));
    let (keeper, _) = keeper_of(&scene);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(keeper), Signal::SIGTERM).unwrap();
    script
        .finish(LIMIT)
        .assert_code(3, "the script's TERM trap");
    assert!(freed_within(&scene, Duration::from_secs(1)).is_some());
}

#[test]
fn no_token_is_printed_when_the_keeper_cannot_take_over() {
    let cluster = Cluster::start(3);
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let out = run(cluster
        .redlock()
        .env("REDLOCK_TEST_KEEPER_FAILS", "1")
        .args(["acquire", "--while", &pid, "job"]));
    out.assert_code(70, "acquire whose keeper failed");
    assert_eq!(out.stdout, "", "a token without a keeper");
    assert_eq!(
        out.stderr,
        "redlock: the keeper process (--while) could not take over the lock, so it was \
         released: it was told to fail (REDLOCK_TEST_KEEPER_FAILS)\n"
    );
    let scene = Scene::new(&cluster.servers_arg());
    assert!(!scene.is_held(), "the lock was left taken");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn while_refuses_another_users_process() {
    let cluster = Cluster::start(1);
    let redlock = cluster.redlock();
    // Process 1 is root's: as root, the test runs redlock as uid 65534.
    let mut cmd = match nix::unistd::geteuid().is_root() {
        true => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(redlock.get_program());
            for (name, value) in redlock.get_envs() {
                match value {
                    Some(value) => cmd.env(name, value),
                    None => cmd.env_remove(name),
                };
            }
            cmd
        }
        false => redlock,
    };
    let out = run(cmd.args(["acquire", "--while", "1", "job"]));
    out.assert_code(64, "--while on another user's process");
    assert_eq!(
        out.stderr,
        "redlock: --while 1: the process belongs to another user\n"
    );
    run(cluster.redlock().args(["status", "-q", "job"])).assert_code(1, "no lock taken");
}

#[test]
fn a_wait_ends_when_the_process_it_was_for_exits() {
    let cluster = Cluster::start(3);
    // Someone else holds the lock for a while.
    let held = run(cluster.redlock().args(["acquire", "--ttl", "20s", "job"]));
    held.assert_code(0, "the first holder");
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let waiting = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "--ttl", "3s", "--while", &pid, "job"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    assert!(
        wait_until(LIMIT, || cluster.in_line_everywhere("job", 1)),
        "the waiter never stood in line"
    );
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let killed = Instant::now();
    let out = waiting.finish(LIMIT);
    let took = killed.elapsed();
    // Nobody is left to hold it for: the wait ends as one that ran out,
    // without a token, and the line is left.
    out.assert_code(75, "a wait whose --while process exited");
    assert_eq!(out.stdout, "", "no token for a process that is gone");
    let said = format!("gave up waiting for \"job\": process {pid} (--while) exited");
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert!(took < Duration::from_secs(2), "it waited on for {took:?}");
    assert!(
        wait_until(Duration::from_secs(2), || cluster
            .in_line_everywhere("job", 0)),
        "the ticket stayed in line"
    );
}

/// `--while 1`: a script run as PID 1 of a PID namespace (a container's
/// entrypoint, `tok=$(redlock acquire --while $$ NAME)`), leading process
/// group 1. On a loss its group gets the signal; killpg(1) would be
/// kill(-1), which reaches every process of the namespace: here a daemon in
/// a session of its own, that must be spared. Needs `unshare` (root).
#[test]
#[ignore = "needs root: unshare --pid (scripts/test runs it as root)"]
fn a_loss_never_signals_every_process_when_pid_1_is_watched() {
    let namespaces = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status();
    assert!(
        namespaces.is_ok_and(|status| status.success()),
        "needs root: `unshare --pid --fork --mount-proc` failed"
    );
    let mut cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let waits_for_marker = |marker: &str| {
        format!(
            "sh -c 'trap \"echo TERM > \\\"$D/{marker}\\\"; exit 0\" TERM; \
             echo > \"$D/{marker}-ready\"; while :; do sleep 0.1; done'"
        )
    };
    let script = format!(
        "trap 'echo TERM > \"$D/trapped\"' TERM\n\
         setsid {} &\n\
         {} &\n\
         while [ ! -e \"$D/bystander-ready\" ] || [ ! -e \"$D/member-ready\" ]; do sleep 0.05; done\n\
         tok=$(redlock acquire --ttl 1s --while $$ job) || exit\n\
         echo \"$tok\" > \"$D/token.tmp\" && mv \"$D/token.tmp\" \"$D/token\"\n\
         while [ ! -e \"$D/trapped\" ]; do sleep 0.05; done\n\
         sleep 1\n",
        waits_for_marker("bystander"),
        waits_for_marker("member"),
    );
    fs::write(scene.path("script"), script).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "setsid", "bash"])
        .arg(scene.path("script"))
        .env("D", scene.dir.path())
        .env("PATH", path_with_redlock())
        .env("REDLOCK_SERVERS", &scene.servers)
        .env("REDLOCK_RESTART_GUARD", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    drop_redlock_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
    with_default_signals(&mut cmd);
    let (script, _) = scene.token(Running::spawn(&mut cmd));
    delete_on_a_majority(&mut cluster);
    let out = script.finish(LIMIT);
    assert_eq!(scene.read("trapped").trim(), "TERM", "PID 1: {out:?}");
    assert_eq!(
        scene.read("member").trim(),
        "TERM",
        "a process of PID 1's group"
    );
    assert!(
        !scene.exists("bystander"),
        "a process outside PID 1's group got the signal (kill(-1))"
    );
}

/// `redlock acquire --while $$ NAME >&-`: nobody gets the token, so no
/// keeper may keep the lock for as long as the script lives.
#[test]
fn a_closed_stdout_leaves_no_lock_kept() {
    let cluster = Cluster::start(3);
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let mut cmd = cluster.redlock();
    cmd.args(["acquire", "--ttl", "3s", "--while", &pid, "job"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: close() is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::close(1)?;
            Ok(())
        });
    }
    let out = Running::spawn(&mut cmd).finish(LIMIT);
    out.assert_code(70, "acquire --while >&-");
    assert!(out.stderr.contains("stdout is closed"), "{}", out.stderr);
    let scene = Scene::new(&cluster.servers_arg());
    assert!(!scene.is_held(), "a lock kept for a token nobody got");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// A keeper killed with SIGKILL (by hand, by the OOM killer) renews the
/// lock no more: status and list say so, with the countdown to its expiry,
/// instead of "kept alive while pid N lives".
#[test]
fn a_keeper_that_is_gone_is_named_with_the_countdown() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let body = "while [ ! -e \"$D/go\" ]; do sleep 0.05; done\n\
                redlock release job \"$tok\"";
    // No signal, so no watchdog: the script lives on without its keeper.
    let acquire = "--ttl 20s --while-signal none";
    let (script, _) = scene.token(scene.start("bash", acquire, body));
    let (keeper, watched) = keeper_of(&scene);
    let said = format!("kept alive while pid {watched} lives");
    let first_line = || {
        let out = run(scene.redlock().args(["status", "job"]));
        out.stdout.lines().next().unwrap_or_default().to_owned()
    };
    assert!(first_line().contains(&said), "{}", first_line());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(keeper), Signal::SIGKILL).unwrap();
    assert!(wait_until(LIMIT, || !pid_alive(keeper)));
    let first = first_line();
    assert!(
        first.contains(&format!(
            "; its keeper (pid {keeper}) is gone; the lock expires in "
        )),
        "{first}"
    );
    let holder = scene.status()["holder"].clone();
    assert_eq!(holder["kept_alive_by_keeper"], false, "{holder}");
    let list = run(scene.redlock().args(["list"]));
    assert!(list.stdout.contains("(keeper gone)"), "{}", list.stdout);
    fs::write(scene.path("go"), "").unwrap();
    script.finish(LIMIT).assert_code(0, "the script's release");
}

#[test]
fn a_script_that_takes_its_own_lock_twice_is_told_at_once() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    // The second `acquire --while $$` would wait for the first one's keeper,
    // which keeps the lock for this very script: for ever.
    let body = "redlock acquire --ttl 3s --while $$ job > /dev/null 2> \"$D/second.err\"\n\
                echo $? > \"$D/second\"";
    let started = Instant::now();
    let (script, _) = scene.token(scene.start("bash", "--ttl 3s", body));
    let out = script.finish(LIMIT);
    out.assert_code(0, "the script");
    assert_eq!(
        scene.read("second").trim(),
        "75",
        "{}",
        scene.read("second.err")
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "told after {:?}",
        started.elapsed()
    );
    let said = scene.read("second.err");
    assert!(
        said.contains("\"job\" is already kept for process")
            && said.contains("by an earlier `acquire --while`"),
        "{said}"
    );
}

/// A process stopped with SIGSTOP for a test, continued whatever happens
/// to the test, so that a failure leaves nothing stopped behind.
struct Stopped(i32);

impl Stopped {
    fn stop(pid: i32) -> Stopped {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), Signal::SIGCONT);
    }
}

/// Waits until the lock's key on `cluster[0]` has just been extended (its
/// TTL jumped back up), so that its validity ends about a TTL from now.
fn just_extended(cluster: &Cluster) {
    let mut last = cluster[0].pttl(b"job");
    let deadline = Instant::now() + LIMIT;
    loop {
        let now = cluster[0].pttl(b"job");
        if now > last || Instant::now() > deadline {
            return;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// When each of `processes` ended, polled until all have or `limit` passed.
fn ends(processes: &mut [&mut Running], limit: Duration) -> Vec<Option<Instant>> {
    let mut ended = vec![None; processes.len()];
    let give_up = Instant::now() + limit;
    while ended.iter().any(Option::is_none) && Instant::now() < give_up {
        for (process, end) in processes.iter_mut().zip(&mut ended) {
            if end.is_none() && process.try_wait().is_ok_and(|status| status.is_some()) {
                *end = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    ended
}

/// The keeper is frozen (SIGSTOP) at the start of a long section, for
/// longer than the TTL: it can neither extend the lock nor tell the script.
/// Its watchdog signals the script on the keeper's own schedule, before the
/// validity ends, so that the script has stopped before a second client,
/// waiting all along, can take the lock.
#[test]
fn a_frozen_keeper_s_watchdog_stops_the_script_before_anyone_else_takes_the_lock() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let ttl = Duration::from_secs(3);
    let (mut script, _) = scene.token(scene.start("bash", "--ttl 3s", WAITS_ON_A_CHILD));
    assert!(wait_until(LIMIT, || scene.read("child").ends_with('\n')));
    let (keeper, _) = keeper_of(&scene);
    just_extended(&cluster);
    let frozen = Stopped::stop(keeper);
    let since = Instant::now();
    let mut waiter = Running::spawn(
        cluster
            .redlock()
            .args(["acquire", "-w", "20s", "--ttl", "10s", "job"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let ended = ends(&mut [&mut script, &mut waiter], ttl * 3);
    drop(frozen);
    let out = script.finish(LIMIT);
    let waited = waiter.finish(LIMIT);
    waited.assert_code(0, "the second client");
    let (Some(script_end), Some(taken)) = (ended[0], ended[1]) else {
        panic!(
            "the script ended {:?}, the second client took the lock {:?} after the keeper \
             froze: {out:?}",
            ended[0].map(|at| at - since),
            ended[1].map(|at| at - since),
        );
    };
    assert!(
        script_end < taken,
        "a second holder took the lock {:?} after the keeper froze, while the script ran \
         until {:?}",
        taken - since,
        script_end - since
    );
    out.assert_code(3, "the script's TERM trap");
    assert_eq!(scene.read("trapped").trim(), "TERM");
    // The validity the keeper last confirmed ends 2/3 of a TTL (the freeze
    // came before it read the extension's reply) to a TTL after the freeze.
    // The script was signalled on the keeper's schedule, -k (here TTL/3) and
    // a margin (TTL/20) before that, and had stopped before the lock's kill
    // time, TTL/20 before its end.
    let stopped_after = script_end - since;
    assert!(
        stopped_after > ttl / 4 && stopped_after < ttl - ttl / 20,
        "the script stopped {stopped_after:?} after the keeper froze, with a TTL of {ttl:?}"
    );
    // Continued, the keeper finds the lock gone and ends, without taking
    // the second client's lock away.
    assert!(
        wait_until(LIMIT, || !pid_alive(keeper)),
        "the keeper lives on"
    );
    assert!(scene.is_held(), "the second client's lock went");
}

/// `release` asks the keeper to stand down and waits for its answer; a
/// keeper that is stopped cannot give one. Release gives up after a bound
/// and leaves the lock alone (the keeper's watchdog still covers the
/// script), saying why with exit 70; the keeper, continued, stands down and
/// releases the lock, once what the script left running before it asked
/// has ended: not what it started after (here a job that runs until the
/// test ends, which a keeper that waited for it would never see end).
#[test]
fn a_release_does_not_wait_for_a_stopped_keeper() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let body = "sh -c 'while [ ! -e \"$D/left-end\" ]; do sleep 0.05; done' &\n\
                while [ ! -e \"$D/go\" ]; do sleep 0.05; done\n\
                redlock release job \"$tok\"; echo $? > \"$D/released\"\n\
                sh -c 'while [ ! -e \"$D/end\" ]; do sleep 0.05; done'";
    // A TTL long enough that the watchdog's stop time comes after the
    // release gave up.
    let (script, _) = scene.token(scene.start("bash", "--ttl 12s", body));
    let (keeper, _) = keeper_of(&scene);
    just_extended(&cluster);
    let frozen = Stopped::stop(keeper);
    let asked = Instant::now();
    fs::write(scene.path("go"), "").unwrap();
    let answered = wait_until(Duration::from_secs(5), || {
        scene.read("released").ends_with('\n')
    });
    let took = asked.elapsed();
    assert!(
        answered,
        "release still waits for the stopped keeper after {took:?}"
    );
    assert!(took < Duration::from_secs(4), "release took {took:?}");
    assert_eq!(scene.read("released").trim(), "70", "release's status");
    assert!(scene.is_held(), "released under a stopped keeper");
    drop(frozen);
    // Continued, the keeper finds the request and stands down without
    // signalling the script, but the job left running before the release
    // still holds the lock.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        scene.is_held(),
        "released while the job the script left running still ran"
    );
    fs::write(scene.path("left-end"), "").unwrap();
    assert!(
        freed_within(&scene, Duration::from_secs(3)).is_some(),
        "the keeper, continued, did not release the lock once the left job ended"
    );
    assert!(
        wait_until(LIMIT, || !pid_alive(keeper)),
        "the keeper lives on"
    );
    fs::write(scene.path("end"), "").unwrap();
    let out = script.finish(LIMIT);
    assert!(
        !scene.exists("trapped"),
        "the script was signalled: {out:?}"
    );
    out.assert_code(0, "the script");
    assert!(
        out.stderr.contains(
            "redlock: the lock was not released: its keeper (acquire --while, \
             process "
        ),
        "{}",
        out.stderr
    );
}

/// A keeper that dies (the OOM killer, a stray `kill -9`) extends the lock
/// no more: its watchdog signals the script at once, as exec's stops the
/// command when exec dies, instead of leaving it to run on past the lock.
#[test]
fn a_killed_keeper_s_watchdog_signals_the_script_at_once() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let (script, _) = scene.token(scene.start("dash", "--ttl 20s", WAITS_ON_A_CHILD));
    assert!(wait_until(LIMIT, || scene.read("child").ends_with('\n')));
    let (keeper, _) = keeper_of(&scene);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(keeper), Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    assert!(
        wait_until(Duration::from_secs(5), || scene.exists("trapped")),
        "the script was not signalled when its keeper died"
    );
    let signalled_after = killed.elapsed();
    script
        .finish(LIMIT)
        .assert_code(3, "the script's TERM trap");
    assert_eq!(scene.read("trapped").trim(), "TERM");
    assert!(
        signalled_after < Duration::from_secs(2),
        "signalled {signalled_after:?} after the keeper died, with 20s of validity left"
    );
}

/// The keeper and its watchdog follow one schedule; whichever comes first
/// signals, and the script gets the signal once: a keeper thawed after its
/// watchdog signalled asks it, and does not signal again (a cleanup trap
/// must not run twice).
#[test]
fn a_script_gets_the_signal_once_when_its_keeper_was_frozen() {
    let cluster = Cluster::start(3);
    let scene = Scene::new(&cluster.servers_arg());
    let script = "trap 'echo TERM >> \"$D/terms\"' TERM\n\
                  tok=$(redlock acquire --ttl 3s --while $$ job) || exit\n\
                  echo \"$tok\" > \"$D/token.tmp\" && mv \"$D/token.tmp\" \"$D/token\"\n\
                  while [ ! -e \"$D/end\" ]; do sleep 0.05; done";
    let (script, _) = scene.token(scene.spawn("bash", script));
    let (keeper, _) = keeper_of(&scene);
    just_extended(&cluster);
    let frozen = Stopped::stop(keeper);
    assert!(
        wait_until(Duration::from_secs(5), || scene.exists("terms")),
        "the frozen keeper's script was not signalled"
    );
    // Thawed once the validity is surely over: the keeper finds its lock
    // gone, which is a loss, and must not signal a second time.
    assert!(
        wait_until(LIMIT, || (0..3).all(|i| cluster[i].get(b"job").is_none())),
        "the lock never lapsed on the servers"
    );
    drop(frozen);
    assert!(
        wait_until(LIMIT, || !pid_alive(keeper)),
        "the keeper lives on"
    );
    // The behaviour: no second signal comes in a while.
    std::thread::sleep(Duration::from_millis(300));
    fs::write(scene.path("end"), "").unwrap();
    let out = script.finish(LIMIT);
    assert_eq!(scene.read("terms"), "TERM\n", "{out:?}");
}
