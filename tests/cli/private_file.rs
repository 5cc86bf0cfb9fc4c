//! The private servers file `exec` writes for its command when the
//! servers have a password (src/commands/exec/handoff.rs) never outlives the
//! processes that keep it: `exec` removes it, its watchdog does when `exec`
//! was killed, and the next `exec` sweeps one that both left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::{pid_alive, run, temp_dir, wait_until, Cluster, Running};

/// A password-protected cluster, and `exec`'s private files under `runtime`
/// (`XDG_RUNTIME_DIR`, a directory of mode 0700 of this user, as
/// /run/user/UID is).
struct Scene {
    /// Kept running for the test.
    _cluster: Cluster,
    servers: String,
    runtime: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Scene {
        use std::os::unix::fs::PermissionsExt as _;
        let cluster = Cluster::start(3);
        let servers = cluster.acl_user("locker", "s3cretPW", &["~*", "&*", "+@all"]);
        let runtime = temp_dir("redlock-test-runtime-");
        std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        Scene {
            _cluster: cluster,
            servers,
            runtime,
            dir: temp_dir("redlock-test-private-"),
        }
    }

    fn redlock(&self) -> Command {
        let mut redlock = crate::support::redlock();
        redlock
            .env("REDLOCK_SERVERS", &self.servers)
            .env("XDG_RUNTIME_DIR", self.runtime.path());
        redlock
    }

    /// Starts `exec NAME` on a command that says where its servers file is
    /// and sleeps; returns it, the file, and the command's pid.
    fn exec_holding_a_file(&self, name: &str) -> (Running, PathBuf, i32) {
        let said = self.dir.path().join(format!("{name}.said"));
        let script = format!(
            "echo \"$$ $REDLOCK_SERVERS_FILE\" > {}.tmp && mv {0}.tmp {0}; exec sleep 60",
            said.display()
        );
        let exec = Running::spawn(
            self.redlock()
                .args(["exec", name, "-c", &script])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        assert!(
            wait_until(Duration::from_secs(10), || said.exists()),
            "the command never said where its servers file is"
        );
        let said = std::fs::read_to_string(&said).unwrap();
        let (pid, file) = said.trim().split_once(' ').unwrap();
        let file = PathBuf::from(file);
        assert!(
            file.starts_with(self.runtime.path()) && file.exists(),
            "{}",
            file.display()
        );
        (exec, file, pid.parse().unwrap())
    }

    /// The directories in the runtime directory.
    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.runtime.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// The pid of `parent`'s child named `comm`.
fn child_named(parent: i32, comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: i32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent && name == comm).then_some(pid)
    })
}

/// This process's pid namespace, as `/proc/self/ns/pid` names it.
fn pid_namespace() -> String {
    let link = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let link = link.to_str().unwrap();
    link.trim_start_matches("pid:[")
        .trim_end_matches(']')
        .to_owned()
}

/// A pid that no process has: one that just exited and was reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    child.id() as i32
}

/// A private directory as `exec` names it, with a servers file in it.
fn leftover(runtime: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt as _;
    let dir = runtime.join(name);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    std::fs::write(dir.join("servers"), "redis://:old@127.0.0.1:1\n").unwrap();
    dir
}

#[test]
fn a_killed_exec_s_file_is_gone_within_a_second() {
    let scene = Scene::new();
    let (exec, file, command) = scene.exec_holding_a_file("killed");
    exec.signal(Signal::SIGKILL);
    exec.finish(Duration::from_secs(5));
    assert!(
        wait_until(Duration::from_secs(1), || !file.exists()
            && !file.parent().unwrap().exists()),
        "{} is still there a second after exec was killed",
        file.display()
    );
    assert!(!pid_alive(command), "the command ended with exec");
}

#[test]
fn a_file_whose_exec_and_watchdog_were_both_killed_is_swept_by_the_next_exec() {
    let scene = Scene::new();
    let (exec, file, command) = scene.exec_holding_a_file("both-killed");
    let exec_pid = exec.id() as i32;
    let watchdog = child_named(exec_pid, "redlock-watch").expect("exec has a watchdog");
    // Both at once, as a cgroup's kill or `pkill -9 redlock` does: the
    // watchdog first, so that it cannot tidy up.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(watchdog), Signal::SIGKILL).unwrap();
    assert!(wait_until(Duration::from_secs(5), || !pid_alive(watchdog)));
    exec.signal(Signal::SIGKILL);
    exec.finish(Duration::from_secs(5));
    assert!(wait_until(Duration::from_secs(5), || !pid_alive(command)));
    assert!(file.exists(), "nobody was left to remove it");
    // Beside it: one whose keepers live (this test), one made in another
    // pid namespace, and one of another shape: all stay.
    let namespace = pid_namespace();
    let me = std::process::id();
    let dead = dead_pid();
    let alive = leftover(
        scene.runtime.path(),
        &format!("redlock-{namespace}-{me}-{me}-Alive1"),
    );
    let elsewhere = leftover(
        scene.runtime.path(),
        &format!("redlock-1{namespace}-{dead}-{dead}-Other1"),
    );
    let unknown = leftover(scene.runtime.path(), "redlock-Shape1");
    // A stale one made up the same way is swept too.
    let stale = leftover(
        scene.runtime.path(),
        &format!("redlock-{namespace}-{dead}-{dead}-Stale1"),
    );
    let out = run(scene.redlock().args(["exec", "next", "--", "true"]));
    out.assert_code(0, "the next exec");
    assert!(
        !file.exists() && !file.parent().unwrap().exists(),
        "{} was not swept: {:?}",
        file.display(),
        scene.entries()
    );
    assert!(!stale.exists(), "{} was not swept", stale.display());
    for kept in [&alive, &elsewhere, &unknown] {
        assert!(
            kept.join("servers").exists(),
            "{} was swept: {:?}",
            kept.display(),
            scene.entries()
        );
    }
    // The next exec's own file went with it.
    assert_eq!(scene.entries().len(), 3, "{:?}", scene.entries());
}
