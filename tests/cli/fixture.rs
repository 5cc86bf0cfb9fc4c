//! Tests of the test fixture itself, against real `redis-server` processes:
//! if these fail, every other integration test is suspect.

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::support::{
    self, pid_alive, proc_state, run, wait_until, Cluster, Ended, RedisServer, Running,
};

#[test]
fn fixture_cluster_has_unique_ports_and_independent_data() {
    let cluster = Cluster::start(3);
    let ports: HashSet<u16> = cluster.servers.iter().map(|s| s.port()).collect();
    assert_eq!(ports.len(), 3, "ports: {ports:?}");

    let urls = cluster.urls();
    for (url, server) in urls.iter().zip(&cluster.servers) {
        assert_eq!(*url, format!("redis://127.0.0.1:{}", server.port()));
    }
    assert_eq!(cluster.servers_arg(), urls.join(","));

    // Each server is its own process with its own data.
    cluster[1].set(b"k", b"only-on-1");
    assert_eq!(
        cluster.get_all(b"k"),
        vec![None, Some(b"only-on-1".to_vec()), None],
        "{}",
        cluster.logs()
    );
    let pids: HashSet<u32> = cluster.servers.iter().map(|s| s.pid()).collect();
    assert_eq!(pids.len(), 3);

    let logs = cluster.logs();
    for server in &cluster.servers {
        assert!(
            logs.contains(&format!("port {}", server.port())),
            "logs are not labelled by port:\n{logs}"
        );
    }
    assert!(
        cluster[0].log().contains("Ready to accept connections"),
        "{}",
        cluster[0].log()
    );
}

#[test]
fn fixture_set_get_pttl() {
    let server = RedisServer::start();
    assert_eq!(server.get(b"missing"), None);
    assert_eq!(server.pttl(b"missing"), -2);

    server.set(b"plain", b"\x00binary\xff");
    assert_eq!(server.get(b"plain"), Some(b"\x00binary\xff".to_vec()));
    assert_eq!(server.pttl(b"plain"), -1);

    server.set_px(b"ttl", b"v", 60_000);
    let pttl = server.pttl(b"ttl");
    assert!((59_000..=60_000).contains(&pttl), "pttl = {pttl}");

    server.set_px(b"short", b"v", 50);
    assert!(
        wait_until(Duration::from_secs(2), || server.get(b"short").is_none()),
        "a 50ms key did not expire"
    );
}

#[test]
fn fixture_pause_stops_answers_and_resume_restores_them() {
    let mut server = RedisServer::start();
    server.set(b"k", b"v");
    let mut con = server
        .try_client(Duration::from_millis(200))
        .expect("connect before pause");

    server.pause();
    assert!(server.is_paused());
    assert_eq!(proc_state(server.pid() as i32), Some('T'));
    let started = Instant::now();
    let err = redis::cmd("GET")
        .arg("k")
        .query::<Option<Vec<u8>>>(&mut con)
        .expect_err("a paused server answered");
    let waited = started.elapsed();
    assert!(err.is_timeout(), "expected a timeout, got {err}");
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(2),
        "read timeout took {waited:?}"
    );
    // get_all skips the paused server instead of hanging on it.
    let cluster = Cluster {
        servers: vec![server],
    };
    let started = Instant::now();
    assert_eq!(cluster.get_all(b"k"), vec![None]);
    assert!(started.elapsed() < Duration::from_millis(100));
    let mut server = cluster.servers.into_iter().next().unwrap();

    server.resume();
    assert!(!server.is_paused());
    let mut con = server
        .try_client(Duration::from_millis(200))
        .expect("connect after resume");
    let value: Option<Vec<u8>> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(value, Some(b"v".to_vec()), "data survives a pause");
}

#[test]
fn fixture_kill_makes_connecting_fail_and_is_idempotent() {
    let mut server = RedisServer::start();
    let pid = server.pid() as i32;
    assert!(pid_alive(pid));

    server.kill();
    assert!(!server.is_running());
    assert!(!pid_alive(pid), "redis-server {pid} still alive after kill");
    let err = server
        .try_client(Duration::from_millis(200))
        .map(|_| ())
        .expect_err("connected to a killed server");
    assert!(err.is_connection_refusal(), "expected refusal, got {err}");
    server.kill(); // idempotent
    assert_eq!(
        Cluster {
            servers: vec![server]
        }
        .get_all(b"k"),
        vec![None]
    );
}

#[test]
fn fixture_paused_server_can_be_killed_and_dropped() {
    let mut server = RedisServer::start();
    let pid = server.pid() as i32;
    server.pause();
    server.kill();
    assert!(!pid_alive(pid));

    let mut server = RedisServer::start();
    let pid = server.pid() as i32;
    server.pause();
    drop(server);
    assert!(!pid_alive(pid), "drop left a paused redis-server {pid}");
}

#[test]
fn fixture_restart_comes_back_on_the_same_port_empty() {
    let mut server = RedisServer::start();
    let port = server.port();
    let old_pid = server.pid();
    server.set(b"k", b"v");
    // The kill leaves the server's side of this open connection in
    // FIN_WAIT/TIME_WAIT on the same port; the restart must still bind.
    let _con = server.client();

    let started = Instant::now();
    server.restart();
    let took = started.elapsed();
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), old_pid);
    assert!(!pid_alive(old_pid as i32));
    assert_eq!(server.get(b"k"), None, "data survived a restart");
    assert!(took < Duration::from_secs(5), "restart took {took:?}");
    let log = server.log();
    assert_eq!(
        log.matches("Ready to accept connections").count(),
        2,
        "log should show both runs:\n{log}"
    );

    // Restarting a killed server works too, and keeps working.
    server.kill();
    server.restart();
    server.set(b"k", b"again");
    assert_eq!(server.get(b"k"), Some(b"again".to_vec()));
}

#[test]
fn fixture_requirepass_refuses_unauthenticated_clients() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let client = redis::Client::open(server.url()).unwrap();
    // Depending on the client's handshake the refusal comes at connect time
    // or on the first command; either way nothing is answered without AUTH.
    let refused = match client.get_connection_with_timeout(Duration::from_secs(2)) {
        Err(e) => e.to_string(),
        Ok(mut con) => redis::cmd("GET")
            .arg("k")
            .query::<Option<String>>(&mut con)
            .expect_err("unauthenticated GET was answered")
            .to_string(),
    };
    assert!(refused.contains("NOAUTH"), "unexpected error: {refused}");

    server.set(b"k", b"v");
    assert_eq!(server.get(b"k"), Some(b"v".to_vec()));
}

#[test]
fn fixture_unix_socket_answers() {
    let server = RedisServer::start_unix();
    let socket = server.unix_socket().expect("start_unix sets a socket");
    assert!(socket.starts_with(server.dir()));
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let meta = std::fs::metadata(&socket).expect("socket file exists");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);

    server.set(b"k", b"over-tcp");
    let url = format!("unix://{}", socket.display());
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(2))
        .unwrap();
    let value: Option<String> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("over-tcp"));

    assert_eq!(RedisServer::start().unix_socket(), None);
}

#[test]
fn fixture_tls_server_speaks_only_tls() {
    let server = RedisServer::start_tls();
    let ca = server.tls_ca_cert().expect("start_tls sets a CA");
    assert!(ca.is_file());
    assert_eq!(
        server.tls_url(),
        format!("rediss://localhost:{}", server.port())
    );
    // client() goes over TLS, verifying the certificate against the CA.
    server.set(b"k", b"secret");
    assert_eq!(server.get(b"k"), Some(b"secret".to_vec()));

    // Without trusting the CA the handshake fails.
    let untrusted = redis::Client::open(server.tls_url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(2));
    assert!(untrusted.is_err(), "connected without trusting the CA");
    // And a plain-text client gets nothing sensible from the TLS port.
    let plain = format!("redis://127.0.0.1:{}", server.port());
    let answered = redis::Client::open(plain)
        .unwrap()
        .get_connection_with_timeout(Duration::from_millis(500))
        .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con));
    assert!(answered.is_err(), "plain text PING answered: {answered:?}");
    assert_eq!(RedisServer::start().tls_ca_cert(), None);
}

#[test]
fn fixture_fails_loudly_with_the_log() {
    let panic = std::panic::catch_unwind(|| RedisServer::start_with(&["--no-such-option", "x"]))
        .map(|_| ())
        .expect_err("a bad option should fail the fixture");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("--no-such-option") && message.contains("Bad directive"),
        "panic message lacks the command line or the server's complaint:\n{message}"
    );
}

#[test]
fn fixture_redlock_command_drops_inherited_redlock_variables() {
    let cluster = Cluster::start(1);
    let cmd = cluster.redlock();
    let envs: Vec<_> = cmd.get_envs().collect();
    assert!(envs.iter().any(|(k, v)| *k == "REDLOCK_SERVERS"
        && v.map(|v| v.to_string_lossy().into_owned()) == Some(cluster.servers_arg())));
    // Every inherited REDLOCK_* variable is removed (`None` = env_remove),
    // whatever the environment the tests run in has: here, a made-up one.
    let mut cmd = std::process::Command::new("true");
    let inherited = ["REDLOCK_PREFIX", "REDLOCK_TOKEN", "PATH", "XREDLOCK_X"];
    support::drop_redlock_variables(&mut cmd, inherited.map(std::ffi::OsString::from));
    let removed: Vec<_> = cmd
        .get_envs()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k)
        .collect();
    assert_eq!(removed, ["REDLOCK_PREFIX", "REDLOCK_TOKEN"]);
    assert_eq!(
        support::redlock().get_program(),
        std::ffi::OsStr::new(env!("CARGO_BIN_EXE_redlock"))
    );
}

#[test]
fn fixture_run_reports_exit_codes_and_signals() {
    let out = run(std::process::Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]));
    out.assert_code(3, "sh exit 3");
    assert_eq!(out.stdout, "out\n");
    assert_eq!(out.stderr, "err\n");

    // SIGKILL, which no parent of the test runner can have made ignored.
    let out = run(std::process::Command::new("sh").args(["-c", "kill -KILL $$"]));
    assert_eq!(out.ended, Ended::Signal(Signal::SIGKILL));
    // A death by signal N is not an exit with 128+N, and the reverse.
    let dead = std::panic::catch_unwind(|| out.assert_code(137, "killed"));
    assert!(dead.is_err(), "a death by SIGKILL passed for exit code 137");
    let out = run(std::process::Command::new("sh").args(["-c", "exit 137"]));
    assert_eq!(out.ended, Ended::Code(137));
    let exited = std::panic::catch_unwind(|| out.assert_signal(Signal::SIGKILL, "exited"));
    assert!(
        exited.is_err(),
        "an exit with 137 passed for a death by SIGKILL"
    );

    // stdin is /dev/null, so cat ends at once.
    run(&mut std::process::Command::new("cat")).assert_code(0, "cat");

    let wrong = std::panic::catch_unwind(|| {
        run(std::process::Command::new("sh").args(["-c", "echo visible >&2; exit 1"]))
            .assert_code(0, "ctx");
    })
    .expect_err("assert_code(0) on exit 1 should panic");
    let message = wrong.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("ctx") && message.contains("visible"),
        "{message}"
    );
}

#[test]
fn fixture_finish_kills_what_outlives_its_limit_and_shows_its_output() {
    let sleeper = Running::spawn(
        std::process::Command::new("sh")
            .args(["-c", "echo started; echo on-stderr >&2; exec sleep 60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let pid = sleeper.id() as i32;
    let started = Instant::now();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sleeper.finish_or_explain(Duration::from_millis(300), || "the why".to_owned())
    }))
    .map(|_| ())
    .expect_err("finish should fail past its limit");
    assert!(started.elapsed() < Duration::from_secs(5));
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.starts_with("the why\n")
            && message.contains("still running after 300ms")
            && message.contains("started")
            && message.contains("on-stderr"),
        "{message}"
    );
    assert!(!pid_alive(pid), "finish left {pid} running");

    // A process that ends in time: its code and both streams.
    let out = Running::spawn(
        std::process::Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 4"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .finish(Duration::from_secs(10));
    assert_eq!(
        (out.code(), &*out.stdout, &*out.stderr),
        (4, "out\n", "err\n")
    );
}

#[test]
fn fixture_wait_until_and_pid_alive() {
    let started = Instant::now();
    assert!(!wait_until(Duration::from_millis(50), || false));
    assert!(started.elapsed() >= Duration::from_millis(50));
    let mut n = 0;
    assert!(wait_until(Duration::from_secs(1), || {
        n += 1;
        n == 3
    }));

    assert!(pid_alive(std::process::id() as i32));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    // Exited but not yet reaped: a zombie is not alive.
    assert!(wait_until(Duration::from_secs(5), || !pid_alive(pid)));
    assert_eq!(proc_state(pid), Some('Z'));
    child.wait().unwrap();
    assert!(!pid_alive(pid));
}
