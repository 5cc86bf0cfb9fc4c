//! Secrets in what `exec` is given: its command line never reaches the
//! servers unless asked for (and then redacted), the servers' password
//! never reaches a descendant of another user, a core dump, or a message.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{run, wait_until, Cluster, Running};

/// A command line with a secret in every usual form.
const SECRET_ARGV: [&str; 7] = [
    "sh",
    "-c",
    "sleep 3",
    "--password=hunter2",
    "mysql",
    "-phunter3",
    "redis://:hunter4@db",
];

/// Every key and every value of every server, as bytes.
fn everything_stored(cluster: &Cluster) -> Vec<u8> {
    let mut all = Vec::new();
    for i in 0..3 {
        let mut client = cluster[i].client();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut client).unwrap();
        for key in keys {
            let kind: String = redis::cmd("TYPE").arg(&key).query(&mut client).unwrap();
            let values: Vec<Vec<u8>> = match kind.as_str() {
                "string" => vec![redis::cmd("GET").arg(&key).query(&mut client).unwrap()],
                "hash" => redis::cmd("HGETALL").arg(&key).query(&mut client).unwrap(),
                "zset" => redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query(&mut client)
                    .unwrap(),
                other => panic!("unexpected type {other} of {key:?}"),
            };
            all.extend(key);
            for value in values {
                all.extend(value);
            }
        }
        let channels: Vec<Vec<u8>> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .query(&mut client)
            .unwrap();
        all.extend(channels.concat());
    }
    all
}

fn assert_no_secret(text: &[u8], what: &str) {
    let text = String::from_utf8_lossy(text);
    for secret in ["hunter2", "hunter3", "hunter4"] {
        assert!(!text.contains(secret), "{secret} in {what}: {text}");
    }
}

fn spawn(cmd: &mut Command) -> Running {
    Running::spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// A config file with a `name-key`: without one, `exec` derives no name
/// from a command line that holds a secret (tests/cli/derived_names.rs).
struct NameKey(tempfile::TempDir);

impl NameKey {
    fn new() -> NameKey {
        let dir = crate::support::temp_dir("redlock-test-name-key-");
        std::fs::write(
            dir.path().join("config"),
            "name-key = 5d41402abc4b2a76b9719d911017c592\n",
        )
        .unwrap();
        NameKey(dir)
    }

    fn on<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("REDLOCK_CONFIG_FILE", self.0.path().join("config"))
    }
}

/// The secret argv under `exec` without NAME, and the name it was given.
fn exec_secret_argv(cluster: &Cluster, key: &NameKey, extra: &[&str]) -> (Running, String) {
    let running = spawn(
        key.on(&mut cluster.redlock())
            .args(["exec", "-n"])
            .args(extra)
            .arg("--")
            .args(SECRET_ARGV),
    );
    let mut name = String::new();
    let listed = wait_until(Duration::from_secs(5), || {
        let json = run(cluster.redlock().args(["list", "--json"])).json();
        match json["locks"][0]["name"].as_str() {
            Some(found) => {
                name = found.to_owned();
                true
            }
            None => false,
        }
    });
    assert!(listed, "the lock never showed up in list");
    (running, name)
}

#[test]
fn a_derived_name_and_the_default_record_hold_no_argument() {
    let cluster = Cluster::start(3);
    let key = NameKey::new();
    let (running, name) = exec_secret_argv(&cluster, &key, &[]);
    assert!(
        name.starts_with("exec:sh:") && name.len() == "exec:sh:".len() + 16,
        "{name}"
    );
    // A second process with the same argv contends for the same lock; while
    // it waits it listens on the lock's channel.
    let waiter = spawn(
        key.on(&mut cluster.redlock())
            .args(["exec", "-w", "1s", "-v", "--"])
            .args(SECRET_ARGV),
    );
    assert!(wait_until(Duration::from_secs(5), || {
        let mut client = cluster[0].client();
        let channels: Vec<Vec<u8>> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .query(&mut client)
            .unwrap();
        !channels.is_empty()
    }));
    assert_no_secret(&everything_stored(&cluster), "the servers");
    let list = run(cluster.redlock().arg("list"));
    assert_no_secret(list.stdout.as_bytes(), "list");
    let status = run(cluster.redlock().args(["status", &name]));
    status.assert_code(0, "status of the derived name");
    assert_no_secret(status.stdout.as_bytes(), "status");
    let json = run(cluster.redlock().args(["status", "--json", &name])).json();
    assert_eq!(json["holder"]["command"], "sh (6 arguments)");
    let waited = waiter.finish(Duration::from_secs(10));
    waited.assert_code(75, "the same argv is the same lock");
    assert!(waited.stderr.contains(&name), "{}", waited.stderr);
    assert_no_secret(waited.stderr.as_bytes(), "-v");
    running
        .finish(Duration::from_secs(10))
        .assert_code(0, "exec");
}

/// The name does not depend on the host: another host (another UTS
/// namespace, root only) with the same argv finds the lock busy.
#[test]
#[ignore = "needs root: unshare --uts (scripts/test runs it as root)"]
fn the_same_argv_on_another_host_contends_for_the_same_lock() {
    let unshared = Command::new("unshare")
        .args(["--uts", "sh", "-c", "hostname other-host && hostname"])
        .output();
    let Some(out) = unshared.ok().filter(|out| out.status.success()) else {
        panic!("needs root: cannot make a second host with `unshare --uts`");
    };
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "other-host");
    let cluster = Cluster::start(3);
    let key = NameKey::new();
    let (running, _) = exec_secret_argv(&cluster, &key, &[]);
    let mut other = under(
        &cluster.redlock(),
        &[
            "unshare",
            "--uts",
            "sh",
            "-c",
            "hostname other-host && exec \"$@\"",
            "sh",
        ],
    );
    key.on(&mut other)
        .args(["exec", "-n", "--"])
        .args(SECRET_ARGV);
    run(&mut other).assert_code(75, "the same argv on another host");
    running
        .finish(Duration::from_secs(10))
        .assert_code(0, "exec");
}

#[test]
fn record_command_records_the_redacted_line() {
    let cluster = Cluster::start(3);
    let key = NameKey::new();
    let (running, name) = exec_secret_argv(&cluster, &key, &["--record-command"]);
    let json = run(cluster.redlock().args(["status", "--json", &name])).json();
    let command = json["holder"]["command"].as_str().unwrap().to_owned();
    assert_eq!(
        command,
        "sh -c 'sleep 3' --password=*** mysql -p*** redis://:***@db"
    );
    assert_no_secret(&everything_stored(&cluster), "the servers");
    running
        .finish(Duration::from_secs(10))
        .assert_code(0, "exec");
}

#[test]
fn job_urls_are_recorded_without_credentials() {
    let cluster = Cluster::start(3);
    let mut cmd = cluster.redlock();
    for name in ["GITHUB_RUN_ID", "CI_JOB_URL", "BUILDKITE_BUILD_URL"] {
        cmd.env_remove(name);
    }
    cmd.env(
        "BUILD_URL",
        "https://admin:hunter2@ci.example/job/7/?token=hunter3",
    );
    let out = run(cmd.args(["acquire", "-n", "job"]));
    out.assert_code(0, "acquire");
    let json = run(cluster.redlock().args(["status", "--json", "job"])).json();
    assert_eq!(json["holder"]["job"], "https://ci.example/job/7/");
    assert_no_secret(&everything_stored(&cluster), "the servers");
}

/// `redlock` (with its environment) run by the command `wrapper`.
fn under(redlock: &Command, wrapper: &[&str]) -> Command {
    let mut cmd = Command::new(wrapper[0]);
    cmd.args(&wrapper[1..])
        .arg(redlock.get_program())
        .args(redlock.get_args());
    for (name, value) in redlock.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd
}

const AS_NOBODY: [&str; 4] = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

/// A Python every user can run (not a shim in root's home).
const PYTHON: &str = "/usr/bin/python3";

/// Fails unless this test can make a process of another user: root with
/// `setpriv`, and `python3` to read descriptors from their start.
fn assert_can_drop_privileges() {
    let root = nix::unistd::geteuid().is_root();
    let tools = ["setpriv", PYTHON].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    });
    assert!(
        root && tools,
        "needs root: dropping to uid 65534 needs root, setpriv and python3"
    );
}

/// What a process reads, run as uid 65534 by the command: every descriptor
/// it holds, from its start, the file REDLOCK_SERVERS_FILE names, and what
/// /proc shows of `exec` (EXEC_PID).
const SNOOP: &str = r#"
import os
seen, tried = [], 0
for fd in os.listdir("/proc/self/fd"):
    tried += 1
    try: seen.append(os.pread(int(fd), 1 << 16, 0))
    except OSError: pass
exec_pid = os.environ["EXEC_PID"]
paths = [os.environ.get("REDLOCK_SERVERS_FILE", "")]
paths += ["/proc/%s/%s" % (exec_pid, f) for f in ("environ", "cmdline", "mem")]
try: paths += ["/proc/%s/fd/%s" % (exec_pid, fd) for fd in os.listdir("/proc/%s/fd" % exec_pid)]
except OSError: pass
for path in paths:
    tried += 1
    try:
        with open(path, "rb") as f: seen.append(f.read(1 << 16))
    except OSError: pass
print("tried", tried, "uid", os.getuid(), repr(seen))
"#;

#[test]
#[ignore = "needs root: runs a process as uid 65534 (scripts/test runs it as root)"]
fn a_descendant_that_drops_privileges_cannot_read_the_password() {
    assert_can_drop_privileges();
    let cluster = Cluster::start(3);
    let urls: Vec<String> = (0..3)
        .map(|i| cluster[i].acl_user("locker", "s3cretPW", &["~*", "&*", "+@all"]))
        .collect();
    let script = r#"
        redlock status "$REDLOCK_NAME" >/dev/null && echo "nested status works"
        EXEC_PID=$PPID $AS_NOBODY /usr/bin/python3 -c "$SNOOP"
        test -r "$REDLOCK_SERVERS_FILE" && echo "the servers file is there for this user"
    "#;
    let redlock = crate::support::redlock();
    let bin_dir = std::path::Path::new(redlock.get_program())
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(crate::support::redlock()
        .env("REDLOCK_SERVERS", urls.join(","))
        .env("SNOOP", SNOOP)
        .env("AS_NOBODY", AS_NOBODY.join(" "))
        .env("PATH", path)
        .args(["exec", "snooped", "--", "sh", "-c", script]));
    out.assert_code(0, "exec with a snooping descendant");
    assert!(out.stdout.contains("nested status works"), "{}", out.stdout);
    assert!(
        out.stdout.contains("tried") && out.stdout.contains("uid 65534"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout
            .contains("the servers file is there for this user"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("s3cretPW"), "{}", out.stdout);
    assert!(!out.stderr.contains("s3cretPW"), "{}", out.stderr);
}

/// `exec` cannot dump core or be read through /proc by others (it holds the
/// password): its /proc files belong to root, not to its user. The command
/// it runs is dumpable as usual. Run as uid 65534, where the two differ.
#[test]
#[ignore = "needs root: runs exec as uid 65534 (scripts/test runs it as root)"]
fn exec_is_not_dumpable_and_its_command_is() {
    assert_can_drop_privileges();
    let cluster = Cluster::start(3);
    let mut cmd = under(&cluster.redlock(), &AS_NOBODY);
    cmd.args(["exec", "dumpable", "--", "sh", "-c"])
        .arg("stat -c 'exec %u' /proc/$PPID/environ; stat -c 'command %u' /proc/$$/environ")
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir("/");
    let out = run(&mut cmd);
    out.assert_code(0, "exec as uid 65534");
    assert!(out.stdout.contains("exec 0\n"), "{}", out.stdout);
    assert!(out.stdout.contains("command 65534\n"), "{}", out.stdout);
}

/// A value echoed in an error loses its password and its control bytes,
/// from every flag and variable config reads itself.
#[test]
fn configuration_errors_echo_values_redacted_and_escaped() {
    let cluster = Cluster::start(1);
    let bad = "redis://:hunter2@h\x1b[31m\x07";
    let cases = [
        "--server-timeout",
        "--restart-guard",
        "REDLOCK_SERVER_TIMEOUT",
        "REDLOCK_RESTART_GUARD",
        "REDLOCK_WAKEUPS",
    ];
    for given in cases {
        let mut cmd = cluster.redlock();
        cmd.args(["status", "x"]);
        match given.starts_with("--") {
            true => cmd.args([given, bad]),
            false => cmd.env(given, bad),
        };
        let out = run(&mut cmd);
        out.assert_code(64, given);
        assert!(
            out.stderr.contains("redis://:***@h"),
            "{given}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("hunter2"), "{given}: {}", out.stderr);
        assert!(
            !out.stderr.contains(['\x1b', '\x07']),
            "{given}: {:?}",
            out.stderr
        );
    }
}

/// `redis://:p@ss,w0rd@h` would be two servers, `p` sent to host `ss`.
#[test]
fn a_password_cut_at_a_comma_is_refused_with_the_encoding() {
    let cluster = Cluster::start(1);
    let url = format!("redis://:p@ss,w0rd@127.0.0.1:{}", cluster[0].port());
    for how in ["-s", "REDLOCK_SERVERS"] {
        let mut cmd = crate::support::redlock();
        cmd.args(["status", "x"]);
        match how {
            "-s" => cmd.args(["-s", &url]),
            _ => cmd.env(how, &url),
        };
        let out = run(&mut cmd);
        out.assert_code(78, how);
        assert!(out.stderr.contains("%2C"), "{how}: {}", out.stderr);
        assert!(!out.stderr.contains("w0rd"), "{how}: {}", out.stderr);
    }
}

/// Servers files: a byte order mark and trailing comments are fine, a NUL
/// is refused by line number, and what is wrong with the permissions is
/// said as it is.
#[test]
fn servers_files_say_what_is_wrong_with_them() {
    use std::os::unix::fs::PermissionsExt as _;
    let cluster = Cluster::start(1);
    let dir = crate::support::temp_dir("servers-file");
    let path = dir.path().join("servers");
    let url = cluster[0].url();
    let with_file = |text: &str, mode: u32| {
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut cmd = crate::support::redlock();
        run(cmd
            .args(["acquire", "-n", "--ttl", "1s", "f"])
            .arg("--servers-file")
            .arg(&path))
    };
    let out = with_file(&format!("\u{feff}{url} # the main one\n"), 0o600);
    out.assert_code(0, "a BOM and a trailing comment");
    assert_eq!(out.stderr, "");
    let out = with_file(&format!("# servers\n{url}\0\n"), 0o600);
    out.assert_code(78, "a NUL");
    assert!(
        out.stderr.contains("line 2 holds a control character"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("***"), "{}", out.stderr);
    // A servers file others can write is refused (it once only warned):
    // whoever writes it picks the servers.
    let secret = format!("redis://:pw@127.0.0.1:{}\n", cluster[0].port());
    let out = with_file(&secret, 0o622);
    out.assert_code(78, "a servers file others can write");
    assert!(
        out.stderr
            .contains("it can be written by its group and others (mode 0622)"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pw"), "{}", out.stderr);
    let out = with_file(&format!("{url}\n"), 0o666);
    out.assert_code(78, "refused, whatever it holds");
    assert!(out.stderr.contains("chmod go-w"), "{}", out.stderr);
    let out = with_file(&format!("{url}\n"), 0o644);
    out.assert_code(75, "the lock is still held");
    let out = run(crate::support::redlock()
        .args(["status", "x"])
        .env("REDLOCK_SERVERS_FILE", ""));
    assert!(
        out.stderr.contains("REDLOCK_SERVERS_FILE"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("--servers-file"), "{}", out.stderr);
}
