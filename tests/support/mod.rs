//! Test support: real `redis-server` processes on 127.0.0.1, and the one way
//! integration tests run the `redlock` binary.
//!
//! Nothing here is a mock. Every [`RedisServer`] is a real `redis-server` child
//! process with its own temporary directory (log file, unix socket, TLS files).
//! Its data lives only in memory (`--save "" --appendonly no`), so a
//! [`RedisServer::restart`] always comes back empty.
//!
//! When the fixture itself fails, the panic message carries the exact command
//! line and the server's log, so a failure on CI can be diagnosed from the
//! test output alone.

pub mod assertions;
pub mod fake_server;
pub mod forwarder;
pub mod round_robin;

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::{CommandExt as _, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long a freshly spawned server may take to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many fresh ports [`RedisServer::start_with`] tries when a racing
/// process grabs the port between our probe and the server's bind.
const PORT_ATTEMPTS: usize = 5;
/// How long [`RedisServer::restart`] keeps retrying to bind the same port.
const RESTART_BIND_TIMEOUT: Duration = Duration::from_secs(5);
/// Connect, read and write timeout of [`RedisServer::client`].
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

const LOG_FILE: &str = "redis.log";
/// stdout/stderr of the server: configuration errors are printed there,
/// before the log file is opened.
const STDIO_FILE: &str = "redis.stdio";
const SOCKET_FILE: &str = "redis.sock";

// ---------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------

/// Ports owned by a live [`RedisServer`] of this test process (tests run as
/// threads of one process). A killed server keeps its port reserved so that
/// another test cannot pick it while the server waits to be restarted on it.
static RESERVED_PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

fn reserved_ports() -> MutexGuard<'static, Option<HashSet<u16>>> {
    // A test that panicked while holding the lock does not make the set wrong.
    RESERVED_PORTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A port that is free right now on 127.0.0.1 and not reserved by another
/// server of this process; the caller owns the reservation.
fn reserve_free_port() -> u16 {
    for _ in 0..100 {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0 to find a free port: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("cannot read the address of a bound listener: {e}"))
            .port();
        drop(listener);
        if reserved_ports()
            .get_or_insert_with(HashSet::new)
            .insert(port)
        {
            return port;
        }
    }
    panic!("could not find a free port on 127.0.0.1 in 100 tries")
}

fn release_port(port: u16) {
    if let Some(set) = reserved_ports().as_mut() {
        set.remove(&port);
    }
}

/// A free port on 127.0.0.1 that no server of this process takes until it
/// is dropped: for a server that a test's script starts itself.
pub struct ReservedPort(pub u16);

impl ReservedPort {
    pub fn new() -> Self {
        ReservedPort(reserve_free_port())
    }
}

impl Drop for ReservedPort {
    fn drop(&mut self) {
        release_port(self.0);
    }
}

// ---------------------------------------------------------------------------
// RedisServer
// ---------------------------------------------------------------------------

/// The TLS material of a server started with [`RedisServer::start_tls`]:
/// the CA, and a client certificate it signed that [`RedisServer::client`]
/// presents (redlock itself has none).
struct Tls {
    ca_cert: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

/// One real `redis-server` process listening on 127.0.0.1.
///
/// Dropping it kills the process (`SIGCONT` first if it is paused) and waits
/// for it, then removes its temporary directory.
pub struct RedisServer {
    port: u16,
    /// `None` once killed.
    child: Option<Child>,
    paused: bool,
    extra_args: Vec<String>,
    /// Password from `--requirepass` in `extra_args`, used by [`Self::client`].
    password: Option<String>,
    unix_socket: Option<PathBuf>,
    tls: Option<Tls>,
    /// The command line of the last spawn, for failure messages.
    command_line: String,
    dir: tempfile::TempDir,
}

/// How a spawned server ended up.
enum Startup {
    Ready,
    /// Exited before it was ready because its port was taken.
    PortBusy,
    /// Exited before it was ready for another reason, or never got ready.
    Failed(String),
}

impl RedisServer {
    /// A server on a free port of 127.0.0.1.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server on a free port with extra `redis-server` arguments, e.g.
    /// `&["--requirepass", "s3cret"]`.
    pub fn start_with(extra_args: &[&str]) -> Self {
        Self::start_inner(extra_args, false, None)
    }

    /// A server that also listens on a unix socket in its temporary directory
    /// (`--unixsocket PATH --unixsocketperm 700`); see [`Self::unix_socket`].
    pub fn start_unix() -> Self {
        Self::start_inner(&[], true, None)
    }

    /// A TLS-only server (`--port 0 --tls-port P --tls-auth-clients no`) with
    /// a throwaway CA and a server certificate for `127.0.0.1` and `localhost`
    /// made by the `openssl` CLI. Connect to [`Self::tls_url`] and trust
    /// [`Self::tls_ca_cert`]. [`Self::client`] and the data helpers speak TLS
    /// to it.
    pub fn start_tls() -> Self {
        Self::start_tls_with(&[])
    }

    /// [`Self::start_tls`] with extra `redis-server` arguments, which come
    /// last and so override the defaults, e.g. `&["--tls-auth-clients",
    /// "yes"]`: [`Self::client`] presents a client certificate.
    pub fn start_tls_with(extra_args: &[&str]) -> Self {
        let dir = temp_dir("redlock-test-redis-");
        let tls = make_tls_files(dir.path());
        Self::start_inner(extra_args, false, Some((dir, tls)))
    }

    fn start_inner(extra_args: &[&str], unix: bool, tls: Option<(tempfile::TempDir, Tls)>) -> Self {
        let (dir, tls) = match tls {
            Some((dir, tls)) => (dir, Some(tls)),
            None => (temp_dir("redlock-test-redis-"), None),
        };
        let unix_socket = unix.then(|| dir.path().join(SOCKET_FILE));
        let extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let password = extra_args
            .iter()
            .position(|a| a == "--requirepass")
            .and_then(|i| extra_args.get(i + 1))
            .cloned();
        let mut server = RedisServer {
            port: 0,
            child: None,
            paused: false,
            extra_args,
            password,
            unix_socket,
            tls,
            command_line: String::new(),
            dir,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            server.port = reserve_free_port();
            match server.spawn_and_wait() {
                Startup::Ready => return server,
                Startup::PortBusy if attempt < PORT_ATTEMPTS => {
                    release_port(server.port);
                    server.append_to_log(&format!(
                        "--- fixture: port {} was taken, retrying with a new port ---",
                        server.port
                    ));
                }
                Startup::PortBusy => {
                    release_port(server.port);
                    server.fail(&format!(
                        "redis-server found its port taken {PORT_ATTEMPTS} times in a row"
                    ))
                }
                Startup::Failed(why) => {
                    release_port(server.port);
                    server.fail(&why)
                }
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// The TCP port: the plain port, or the TLS port of a [`Self::start_tls`]
    /// server.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`; for a [`Self::start_tls`] server, which has no
    /// plain port, the same as [`Self::tls_url`].
    pub fn url(&self) -> String {
        if self.tls.is_some() {
            self.tls_url()
        } else {
            format!("redis://127.0.0.1:{}", self.port)
        }
    }

    /// `rediss://localhost:PORT`. Panics unless started with [`Self::start_tls`].
    pub fn tls_url(&self) -> String {
        assert!(
            self.tls.is_some(),
            "tls_url() on a server that was not started with RedisServer::start_tls()"
        );
        format!("rediss://localhost:{}", self.port)
    }

    /// The PEM file of the CA that signed the server's certificate, for a
    /// [`Self::start_tls`] server.
    pub fn tls_ca_cert(&self) -> Option<PathBuf> {
        self.tls.as_ref().map(|t| t.ca_cert.clone())
    }

    /// The process id of the running server. Panics if it was killed.
    pub fn pid(&self) -> u32 {
        match &self.child {
            Some(child) => child.id(),
            None => self.fail("pid() on a killed server"),
        }
    }

    /// The unix socket path, for a [`Self::start_unix`] server.
    pub fn unix_socket(&self) -> Option<PathBuf> {
        self.unix_socket.clone()
    }

    /// The server's temporary directory (log file, socket, TLS files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the process is running (not killed; it may be paused).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Whether the process is stopped by [`Self::pause`].
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// A plain synchronous client with 2s connect, read and write timeouts,
    /// authenticated with the `--requirepass` password if one was given.
    /// Panics with the server's log if it cannot connect.
    pub fn client(&self) -> redis::Connection {
        self.try_client(CLIENT_TIMEOUT)
            .unwrap_or_else(|e| self.fail(&format!("cannot connect a client: {e}")))
    }

    /// Like [`Self::client`] but with the given timeouts, and the error
    /// returned instead of a panic.
    pub fn try_client(&self, timeout: Duration) -> redis::RedisResult<redis::Connection> {
        let con = self.redis_client()?.get_connection_with_timeout(timeout)?;
        con.set_read_timeout(Some(timeout))?;
        con.set_write_timeout(Some(timeout))?;
        Ok(con)
    }

    fn redis_client(&self) -> redis::RedisResult<redis::Client> {
        use redis::IntoConnectionInfo;
        let mut info = self.url().into_connection_info()?;
        if let Some(password) = &self.password {
            let settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(settings);
        }
        match &self.tls {
            None => redis::Client::open(info),
            Some(tls) => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: Some(redis::ClientTlsConfig {
                        client_cert: fs::read(&tls.client_cert)?,
                        client_key: fs::read(&tls.client_key)?,
                    }),
                    root_cert: Some(fs::read(&tls.ca_cert)?),
                },
            ),
        }
    }

    /// Runs one command on a fresh [`Self::client`]; panics with the log on
    /// any error.
    fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd, what: &str) -> T {
        let mut con = self.client();
        cmd.query(&mut con)
            .unwrap_or_else(|e| self.fail(&format!("{what} failed: {e}")))
    }

    /// Plain `GET`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.query(redis::cmd("GET").arg(key), "GET")
    }

    /// Plain `SET` without a TTL.
    pub fn set(&self, key: &[u8], value: &[u8]) {
        self.query::<()>(redis::cmd("SET").arg(key).arg(value), "SET")
    }

    /// `SET key value PX ms`.
    pub fn set_px(&self, key: &[u8], value: &[u8], ms: u64) {
        self.query::<()>(
            redis::cmd("SET").arg(key).arg(value).arg("PX").arg(ms),
            "SET PX",
        )
    }

    /// `PTTL`: milliseconds left, -2 if the key is missing, -1 if it has no TTL.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        self.query(redis::cmd("PTTL").arg(key), "PTTL")
    }

    /// `PUBSUB NUMSUB channel`: how many clients listen on `channel`.
    pub fn subscribers(&self, channel: &[u8]) -> i64 {
        let (_, count): (Vec<u8>, i64) = self.query(
            redis::cmd("PUBSUB").arg("NUMSUB").arg(channel),
            "PUBSUB NUMSUB",
        );
        count
    }

    /// The ids of the clients subscribed to a channel (`CLIENT LIST`:
    /// those with `sub=` above 0), in RESP2 or RESP3.
    pub fn subscribed_clients(&self) -> Vec<i64> {
        let list: String = self.query(redis::cmd("CLIENT").arg("LIST"), "CLIENT LIST");
        let field = |line: &str, name: &str| -> Option<i64> {
            line.split(' ')
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?
                .parse()
                .ok()
        };
        list.lines()
            .filter(|line| field(line, "sub").is_some_and(|subs| subs > 0))
            .filter_map(|line| field(line, "id"))
            .collect()
    }

    /// `CLIENT KILL` with the new-style filter `args` (`TYPE pubsub`,
    /// `ID 12`): how many clients it closed.
    pub fn kill_clients(&self, args: &[&str]) -> i64 {
        self.query(redis::cmd("CLIENT").arg("KILL").arg(args), "CLIENT KILL")
    }

    /// How many other clients are connected (`CLIENT LIST`, less the
    /// connection that asks).
    pub fn other_clients(&self) -> usize {
        let mut con = self.client();
        let id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query(&mut con)
            .unwrap_or_else(|e| self.fail(&format!("CLIENT ID failed: {e}")));
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut con)
            .unwrap_or_else(|e| self.fail(&format!("CLIENT LIST failed: {e}")));
        let own = format!("id={id} ");
        list.lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with(&own))
            .count()
    }

    /// `REPLICAOF` `master`, waiting until the link is up (the first full
    /// sync done) unless `synced` is false.
    pub fn replicate(&self, master: &RedisServer, synced: bool) {
        let _: () = self.query(
            redis::cmd("REPLICAOF").arg("127.0.0.1").arg(master.port()),
            "REPLICAOF",
        );
        let up = || {
            self.info_field("replication", "master_link_status")
                .as_deref()
                == Some("up")
        };
        assert!(
            !synced || wait_until(Duration::from_secs(10), up),
            "{} never followed {}",
            self.port(),
            master.port()
        );
    }

    /// The field `name` of `INFO section` (`uptime_in_seconds` of
    /// `server`, `cmdstat_set` of `commandstats`), as text.
    pub fn info_field(&self, section: &str, name: &str) -> Option<String> {
        let info: String = self.query(redis::cmd("INFO").arg(section), "INFO");
        let prefix = format!("{name}:");
        info.lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .map(|value| value.trim().to_owned())
    }

    /// Script calls (EVAL and EVALSHA) this server has served since it
    /// started or its last [`Self::reset_stats`].
    pub fn script_calls(&self) -> u64 {
        ["cmdstat_evalsha", "cmdstat_eval"]
            .iter()
            .filter_map(|name| self.info_field("commandstats", name))
            .map(|stats| {
                let calls = stats.split(',').find_map(|f| f.strip_prefix("calls="));
                calls.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0)
            })
            .sum()
    }

    /// `CONFIG RESETSTAT`: the command counts start again from zero.
    pub fn reset_stats(&self) {
        let _: String = self.query(redis::cmd("CONFIG").arg("RESETSTAT"), "CONFIG RESETSTAT");
    }

    /// Puts a waiter's ticket `id` (arrived at `score` ms) in the line of
    /// the lock `name`, lapsing far in the future: a waiter in line as
    /// redlock's acquire script keeps it (lock/scripts/queue.lua).
    pub fn stand_in_line(&self, name: &str, score: u64, id: &str) {
        let line = [name.as_bytes(), b"\0line"].concat();
        let lapse = [name.as_bytes(), b"\0lapse"].concat();
        let _: i64 = self.query(redis::cmd("ZADD").arg(&line).arg(score).arg(id), "ZADD");
        let _: i64 = self.query(
            redis::cmd("ZADD").arg(&lapse).arg(u64::MAX >> 12).arg(id),
            "ZADD",
        );
    }

    /// How many tickets stand in the line of the lock `name` (lock/queue.lua).
    pub fn in_line(&self, name: &str) -> usize {
        let line = [name.as_bytes(), b"\0line"].concat();
        self.query(redis::cmd("ZCARD").arg(&line), "ZCARD")
    }

    /// Creates (or resets) the ACL user `name` with password `password` and
    /// the ACL `rules` (e.g. `["~*", "+@all", "-get"]`) and returns the URL
    /// that logs in as that user: `redis://name:password@127.0.0.1:PORT`.
    pub fn acl_user(&self, name: &str, password: &str, rules: &[&str]) -> String {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER")
            .arg(name)
            .arg("reset")
            .arg("on")
            .arg(format!(">{password}"))
            .arg(rules);
        self.query::<()>(&cmd, "ACL SETUSER");
        format!("redis://{name}:{password}@127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL and waits for it. Does nothing if it is
    /// already killed. The port stays reserved for [`Self::restart`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL also ends a stopped process.
            if let Err(e) = child.kill() {
                self.child = Some(child);
                self.fail(&format!("cannot SIGKILL redis-server: {e}"));
            }
            if let Err(e) = child.wait() {
                self.fail(&format!("cannot wait for the killed redis-server: {e}"));
            }
        }
        self.paused = false;
    }

    /// Stops the server with SIGSTOP and waits until the kernel reports it
    /// stopped. Connections to it are still accepted by the kernel but never
    /// answered.
    pub fn pause(&mut self) {
        self.signal(Signal::SIGSTOP);
        self.paused = true;
        let pid = self.pid() as i32;
        if !wait_until(Duration::from_secs(5), || proc_state(pid) == Some('T')) {
            self.fail("redis-server did not stop within 5s of SIGSTOP");
        }
    }

    /// Continues a server stopped by [`Self::pause`] with SIGCONT.
    pub fn resume(&mut self) {
        self.signal(Signal::SIGCONT);
        self.paused = false;
        let pid = self.pid() as i32;
        if !wait_until(Duration::from_secs(5), || proc_state(pid) != Some('T')) {
            self.fail("redis-server did not continue within 5s of SIGCONT");
        }
    }

    fn signal(&self, signal: Signal) {
        let pid = self.pid();
        if let Err(e) = kill(Pid::from_raw(pid as i32), signal) {
            self.fail(&format!("cannot send {signal} to redis-server {pid}: {e}"));
        }
    }

    /// Kills the server (if running) and starts it again on the same port
    /// with the same arguments; its data is gone. Retries binding for a few
    /// seconds while the port is still busy.
    pub fn restart(&mut self) {
        self.kill();
        self.append_to_log("--- fixture: restarting on the same port ---");
        let deadline = Instant::now() + RESTART_BIND_TIMEOUT;
        loop {
            match self.spawn_and_wait() {
                Startup::Ready => return,
                Startup::PortBusy if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(50));
                }
                Startup::PortBusy => self.fail(&format!(
                    "port {} was still busy {RESTART_BIND_TIMEOUT:?} after the kill",
                    self.port
                )),
                Startup::Failed(why) => self.fail(&why),
            }
        }
    }

    /// The contents of the server's log file (all runs, if restarted).
    pub fn log(&self) -> String {
        read_lossy(&self.dir.path().join(LOG_FILE))
    }

    /// The log plus whatever the server printed on stdout/stderr (where
    /// configuration errors go), for failure messages.
    fn diagnostics(&self) -> String {
        let mut out = format!("command line: {}\n--- {LOG_FILE} ---\n", self.command_line);
        let log = self.log();
        out.push_str(&log);
        if !log.ends_with('\n') {
            out.push('\n');
        }
        let stdio = read_lossy(&self.dir.path().join(STDIO_FILE));
        if !stdio.trim().is_empty() {
            let _ = write!(out, "--- stdout/stderr ---\n{stdio}");
        }
        out
    }

    /// Panics with `what`, the command line and the log.
    fn fail(&self, what: &str) -> ! {
        panic!(
            "redis-server fixture on port {}: {what}\n{}",
            self.port,
            self.diagnostics()
        )
    }

    fn append_to_log(&self, line: &str) {
        use std::io::Write;
        if let Ok(mut f) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(LOG_FILE))
        {
            let _ = writeln!(f, "{line}");
        }
    }

    fn args(&self) -> Vec<OsString> {
        let dir = self.dir.path();
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |a: &dyn AsRef<std::ffi::OsStr>| args.push(a.as_ref().to_owned());
        match &self.tls {
            None => {
                push(&"--port");
                push(&self.port.to_string());
            }
            Some(_) => {
                push(&"--port");
                push(&"0");
                push(&"--tls-port");
                push(&self.port.to_string());
                push(&"--tls-cert-file");
                push(&dir.join("server.crt"));
                push(&"--tls-key-file");
                push(&dir.join("server.key"));
                push(&"--tls-ca-cert-file");
                push(&dir.join("ca.crt"));
                push(&"--tls-auth-clients");
                push(&"no");
            }
        }
        for a in [
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ] {
            push(&a);
        }
        push(&"--logfile");
        push(&dir.join(LOG_FILE));
        push(&"--dir");
        push(&dir);
        if let Some(socket) = &self.unix_socket {
            push(&"--unixsocket");
            push(socket);
            push(&"--unixsocketperm");
            push(&"700");
        }
        for a in &self.extra_args {
            push(a);
        }
        args
    }

    /// Spawns `redis-server` on `self.port` and waits until it answers PING,
    /// exits, or [`READY_TIMEOUT`] passes.
    fn spawn_and_wait(&mut self) -> Startup {
        let args = self.args();
        self.command_line = std::iter::once("redis-server".to_string())
            .chain(args.iter().map(|a| shell_quote(&a.to_string_lossy())))
            .collect::<Vec<_>>()
            .join(" ");
        let stdio = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(STDIO_FILE))
            .unwrap_or_else(|e| self.fail(&format!("cannot create {STDIO_FILE}: {e}")));
        let stderr = stdio
            .try_clone()
            .unwrap_or_else(|e| self.fail(&format!("cannot clone a file handle: {e}")));
        let log_len_before = self.log().len();
        let child = Command::new("redis-server")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(stdio)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| self.fail(&format!("cannot spawn redis-server: {e}")));
        self.child = Some(child);
        self.paused = false;

        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let exited = match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => Some(format!("{status}")),
                Some(Ok(None)) => None,
                Some(Err(e)) => Some(format!("cannot poll the process: {e}")),
                None => Some("gone".to_string()),
            };
            if let Some(status) = exited {
                self.child = None;
                let this_run = self.log().get(log_len_before..).unwrap_or("").to_string();
                return if this_run.contains("Address already in use") {
                    Startup::PortBusy
                } else {
                    Startup::Failed(format!(
                        "redis-server exited before it was ready ({status})"
                    ))
                };
            }
            if self.answers_ping() {
                return Startup::Ready;
            }
            if Instant::now() >= deadline {
                self.kill();
                return Startup::Failed(format!(
                    "redis-server did not answer PING within {READY_TIMEOUT:?}"
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn answers_ping(&self) -> bool {
        let Ok(mut con) = self.try_client(Duration::from_millis(500)) else {
            return false;
        };
        matches!(
            redis::cmd("PING").query::<String>(&mut con).as_deref(),
            Ok("PONG")
        )
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if self.paused {
                let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGCONT);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        release_port(self.port);
    }
}

/// A directory of our own under /tmp, whatever TMPDIR says: its path goes
/// unquoted into shell scripts and into unix socket addresses (at most 107
/// bytes), so it must be short and free of spaces.
pub fn temp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"))
}

/// A [`temp_dir`] that every user may enter (mode 755), for the tests that
/// run the binary as another user.
pub fn open_temp_dir(prefix: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir(prefix);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("cannot open up {}: {e}", dir.path().display()));
    dir
}

/// Writes `text` to `dir/relative`, creating the directories on the way,
/// and returns the path.
pub fn write_file(dir: &Path, relative: &str, text: &str) -> PathBuf {
    let path = dir.join(relative);
    let parent = path.parent().expect("a file has a directory");
    fs::create_dir_all(parent)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

fn read_lossy(path: &Path) -> String {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Writes `ca.crt`, `server.crt`, `server.key`, `client.crt` and
/// `client.key` into `dir` with the `openssl` CLI: a throwaway CA, and a
/// server certificate for `IP:127.0.0.1, DNS:localhost` and a client
/// certificate signed by it. P-256 keys, because RSA key generation would
/// make every TLS test half a second slower.
fn make_tls_files(dir: &Path) -> Tls {
    for (file, usage, names) in [
        (
            "server.ext",
            "serverAuth",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        ),
        ("client.ext", "clientAuth", ""),
    ] {
        fs::write(
            dir.join(file),
            format!(
                "{names}basicConstraints=CA:FALSE\n\
                 keyUsage=digitalSignature\n\
                 extendedKeyUsage={usage}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("cannot write {file} in {}: {e}", dir.display()));
    }
    // One command per line, split on spaces: no argument contains a space.
    let steps = [
        "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 2 \
         -subj /CN=redlock-test-CA -keyout ca.key -out ca.crt",
        "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
         -subj /CN=localhost -keyout server.key -out server.csr",
        "x509 -req -sha256 -days 2 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
         -extfile server.ext -out server.crt",
        "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
         -subj /CN=redlock-test-client -keyout client.key -out client.csr",
        "x509 -req -sha256 -days 2 -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
         -extfile client.ext -out client.crt",
    ];
    for step in steps {
        let out = Command::new("openssl")
            .args(step.split_whitespace())
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run openssl: {e}"));
        assert!(
            out.status.success(),
            "openssl {step} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Tls {
        ca_cert: dir.join("ca.crt"),
        client_cert: dir.join("client.crt"),
        client_key: dir.join("client.key"),
    }
}

// ---------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------

/// N independent Redis masters on unique ports: the Redlock setting, not a
/// Redis Cluster.
pub struct Cluster {
    pub servers: Vec<RedisServer>,
}

impl Cluster {
    /// `n` servers on unique free ports.
    pub fn start(n: usize) -> Self {
        Self::start_with(n, &[])
    }

    /// `n` servers on unique free ports, each with the same extra arguments.
    pub fn start_with(n: usize, extra_args: &[&str]) -> Self {
        let servers: Vec<RedisServer> = (0..n)
            .map(|_| RedisServer::start_with(extra_args))
            .collect();
        let ports: HashSet<u16> = servers.iter().map(RedisServer::port).collect();
        assert_eq!(ports.len(), n, "cluster ports are not unique: {ports:?}");
        Cluster { servers }
    }

    /// Every server's [`RedisServer::url`], in order.
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(RedisServer::url).collect()
    }

    /// The urls joined with `,`, the value of `REDLOCK_SERVERS`.
    pub fn servers_arg(&self) -> String {
        self.urls().join(",")
    }

    /// Every server's log, labelled by port, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.servers.iter().enumerate() {
            let state = match (s.is_running(), s.is_paused()) {
                (false, _) => "killed",
                (true, true) => "paused",
                (true, false) => "running",
            };
            let _ = writeln!(
                out,
                "===== server {i}, port {} ({state}) =====\n{}",
                s.port(),
                s.log()
            );
        }
        out
    }

    /// The script calls (EVAL and EVALSHA) each server served since its
    /// stats were reset, in order.
    pub fn script_calls(&self) -> Vec<u64> {
        self.servers.iter().map(RedisServer::script_calls).collect()
    }

    /// Asserts that the servers served one round of script calls since
    /// their stats were reset: at most one each, and a majority reached.
    #[track_caller]
    pub fn assert_one_round(&self, what: &str) {
        let calls = self.script_calls();
        assert!(
            calls.iter().all(|&n| n <= 1) && calls.iter().sum::<u64>() as usize > calls.len() / 2,
            "{what}: script calls per server {calls:?}; exactly one round expected"
        );
    }

    /// `GET key` on every server, in order. Killed and paused servers are
    /// skipped and give `None`.
    pub fn get_all(&self, key: &[u8]) -> Vec<Option<Vec<u8>>> {
        self.servers
            .iter()
            .map(|s| {
                if s.is_running() && !s.is_paused() {
                    s.get(key)
                } else {
                    None
                }
            })
            .collect()
    }

    /// [`RedisServer::acl_user`] on every server; returns the URLs joined
    /// with `,`, a value for `REDLOCK_SERVERS`.
    pub fn acl_user(&self, name: &str, password: &str, rules: &[&str]) -> String {
        self.servers
            .iter()
            .map(|s| s.acl_user(name, password, rules))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `DBSIZE` of every server, in order: what a test compares to see that
    /// nothing was left behind.
    pub fn dbsizes(&self) -> Vec<i64> {
        self.servers
            .iter()
            .map(|s| redis::cmd("DBSIZE").query(&mut s.client()).unwrap())
            .collect()
    }

    /// [`redlock`] with `REDLOCK_SERVERS` set to [`Self::servers_arg`].
    pub fn redlock(&self) -> Command {
        let mut cmd = redlock();
        cmd.env("REDLOCK_SERVERS", self.servers_arg());
        cmd
    }

    /// Whether every server has `count` tickets in the line of `name`.
    pub fn in_line_everywhere(&self, name: &str, count: usize) -> bool {
        self.servers.iter().all(|s| s.in_line(name) == count)
    }
}

impl std::ops::Index<usize> for Cluster {
    type Output = RedisServer;
    fn index(&self, i: usize) -> &RedisServer {
        &self.servers[i]
    }
}

impl std::ops::IndexMut<usize> for Cluster {
    fn index_mut(&mut self, i: usize) -> &mut RedisServer {
        &mut self.servers[i]
    }
}

/// `127.0.0.1:PORT` of server `i`, as messages name it (inside its URL).
pub fn port_of(cluster: &Cluster, i: usize) -> String {
    format!("127.0.0.1:{}", cluster[i].port())
}

// ---------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------

/// The one way integration tests run the binary: no inherited REDLOCK_* variables.
pub fn redlock() -> Command {
    redlock_at(Path::new(env!("CARGO_BIN_EXE_redlock")))
}

/// Removes from `cmd`'s environment every REDLOCK_* variable among
/// `inherited`, so that the machine's settings never reach the binary.
pub fn drop_redlock_variables(cmd: &mut Command, inherited: impl IntoIterator<Item = OsString>) {
    for name in inherited {
        if name.as_encoded_bytes().starts_with(b"REDLOCK_") {
            cmd.env_remove(&name);
        }
    }
}

/// The binary at `path`, run as [`redlock`] runs it: without inherited
/// REDLOCK_* variables, with default signal actions, and in a session of its
/// own, without a terminal, wherever the tests were started. From a
/// terminal, `exec` would otherwise share the test runner's job and
/// terminal, and act on them as a shell's job would (a SIGTSTP would stop
/// the whole job, cargo included). The tests that are about terminals give
/// `exec` a pseudo-terminal of its own.
pub fn redlock_at(path: &Path) -> Command {
    let mut cmd = Command::new(path);
    drop_redlock_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
    // The user's servers and config files (~/.config/redlock/) must not
    // reach the tests either; a test of those files sets its own
    // XDG_CONFIG_HOME.
    cmd.env("XDG_CONFIG_HOME", "/nonexistent/redlock-tests");
    // Every server here was started a moment ago, so the restart guard
    // (on by default) would not count it; the tests of the guard set it.
    cmd.env("REDLOCK_RESTART_GUARD", "0");
    with_default_signals(&mut cmd);
    // SAFETY: setsid() is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            Ok(())
        });
    }
    cmd
}

/// Starts `cmd` with every signal at its default action, as a process
/// normally starts. A signal ignored by whatever started the tests
/// (`cargo test &` in a script ignores SIGINT and SIGQUIT) stays ignored for
/// redlock and its command, by design; the tests must not depend on it.
/// (std clears the signal mask of every child already.)
pub fn with_default_signals(cmd: &mut Command) -> &mut Command {
    use nix::sys::signal::{signal, SigHandler};
    // SAFETY: signal() with SIG_DFL is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            for sig in Signal::iterator() {
                // SIGKILL and SIGSTOP cannot be changed, and are not asked to.
                let _ = signal(sig, SigHandler::SigDfl);
            }
            Ok(())
        })
    }
}

/// A process a test started. If the test ends, or fails, before it waited
/// for it, it is SIGKILLed and reaped: a failing test must not leave `exec`,
/// its command or a shell running into the next tests.
///
/// [`Running::finish`] is the one way to wait for it: bounded, and what it
/// wrote comes back as an [`Output`].
pub struct Running {
    /// `None` once waited for.
    child: Option<Child>,
    /// The program and its pid, for failure messages.
    what: String,
}

impl Running {
    /// Spawns `cmd` as it is configured (stdin, stdout and stderr included).
    /// Panics if it cannot be spawned.
    #[track_caller]
    pub fn spawn(cmd: &mut Command) -> Running {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {program}: {e}"));
        let what = format!("{program} (pid {})", child.id());
        Running {
            child: Some(child),
            what,
        }
    }

    /// Sends `signal` to the process; panics if that fails. Until it is
    /// reaped by [`Self::finish`] its pid cannot belong to another process.
    #[track_caller]
    pub fn signal(&self, signal: Signal) {
        if let Err(e) = kill(Pid::from_raw(self.id() as i32), signal) {
            panic!("cannot send {signal} to {}: {e}", self.what);
        }
    }

    /// Closes its stdin (if piped) and waits until it has exited and its
    /// piped stdout and stderr are closed, for at most `limit`; streams that
    /// were not piped come back empty. If that takes longer, it is
    /// SIGKILLed and reaped, and the test fails with what it wrote so far.
    #[track_caller]
    pub fn finish(self, limit: Duration) -> Output {
        self.finish_or_explain(limit, String::new)
    }

    /// [`Self::finish`], and if `limit` passes, `explain` runs before the
    /// kill (the processes are still as they were) and its text heads the
    /// failure message.
    #[track_caller]
    pub fn finish_or_explain(
        mut self,
        limit: Duration,
        explain: impl FnOnce() -> String,
    ) -> Output {
        // The child stays in `self` until it is reaped, so that a panic on
        // the way (in `explain`, say) still kills it.
        let what = self.what.clone();
        let child = self.child.as_mut().expect("a process is waited for once");
        let deadline = Instant::now() + limit;
        drop(child.stdin.take());

        // Read both pipes in threads so that neither can fill up and block
        // the child, and so that a pipe held open by a stray grandchild
        // cannot hang the test past the deadline.
        let (done_tx, done) = mpsc::channel();
        let stdout = capture(child.stdout.take(), &done_tx);
        let stderr = capture(child.stderr.take(), &done_tx);
        drop(done_tx);
        let pipes = usize::from(stdout.is_some()) + usize::from(stderr.is_some());
        let written = || {
            // Whatever the readers got: give them a moment to drain the pipes.
            for _ in 0..pipes {
                if done.recv_timeout(Duration::from_secs(1)).is_err() {
                    break;
                }
            }
            format!(
                "--- stdout ---\n{}\n--- stderr ---\n{}",
                captured(&stdout),
                captured(&stderr)
            )
        };

        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let why = explain();
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{why}\n{what} still running after {limit:?}; killed it\n{}",
                        written()
                    );
                }
                Err(e) => panic!("cannot wait for {what}: {e}"),
            }
        };
        for _ in 0..pipes {
            let left = deadline.saturating_duration_since(Instant::now());
            if done.recv_timeout(left).is_err() {
                panic!(
                    "{what} exited ({status}) but its stdout/stderr stayed open for \
                     {limit:?} (a child process left running?)\n{}",
                    written()
                );
            }
        }
        self.child = None;
        Output {
            ended: Ended::of(status),
            stdout: captured(&stdout),
            stderr: captured(&stderr),
        }
    }
}

/// What a reader thread has read from a pipe so far.
type Captured = Option<Arc<Mutex<Vec<u8>>>>;

/// Reads `pipe` to its end in a thread of its own, then sends on `done`.
fn capture(pipe: Option<impl Read + Send + 'static>, done: &mpsc::Sender<()>) -> Captured {
    let mut pipe = pipe?;
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let (filled, done) = (Arc::clone(&buffer), done.clone());
    thread::spawn(move || {
        let mut chunk = [0; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => filled
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    Some(buffer)
}

fn captured(buffer: &Captured) -> String {
    buffer.as_ref().map_or_else(String::new, |buffer| {
        let bytes = buffer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl From<Child> for Running {
    fn from(child: Child) -> Self {
        let what = format!("pid {}", child.id());
        Running {
            child: Some(child),
            what,
        }
    }
}

impl std::ops::Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.child.as_ref().expect("a process is waited for once")
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.child.as_mut().expect("a process is waited for once")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How a finished process ended: an exit with a code, or a death by a
/// signal. Kept apart on purpose: "exited 143" is not "killed by SIGTERM",
/// and a shell treats the two differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(Signal),
}

impl Ended {
    fn of(status: std::process::ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Code(code),
            (None, Some(signal)) => Ended::Signal(
                Signal::try_from(signal)
                    .unwrap_or_else(|_| panic!("an unknown signal {signal}: {status}")),
            ),
            (None, None) => unreachable!("a finished process has a code or a signal: {status}"),
        }
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Code(code) => write!(f, "exit code {code}"),
            Ended::Signal(signal) => write!(f, "death by {signal}"),
        }
    }
}

/// What a finished command left behind.
#[derive(Debug, Clone)]
pub struct Output {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Panics, showing stdout and stderr, unless it exited with `code`
    /// (a death by signal N is not code 128+N).
    #[track_caller]
    pub fn assert_code(&self, code: i32, context: &str) -> &Self {
        self.assert_ended(Ended::Code(code), context)
    }

    /// Panics, showing stdout and stderr, unless it died of `signal`.
    #[track_caller]
    pub fn assert_signal(&self, signal: Signal, context: &str) -> &Self {
        self.assert_ended(Ended::Signal(signal), context)
    }

    #[track_caller]
    fn assert_ended(&self, expected: Ended, context: &str) -> &Self {
        if self.ended != expected {
            panic!(
                "{context}: expected {expected}, got {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.ended, self.stdout, self.stderr
            );
        }
        self
    }

    /// The exit code; panics, showing stdout and stderr, if it died of a
    /// signal instead.
    #[track_caller]
    pub fn code(&self) -> i32 {
        match self.ended {
            Ended::Code(code) => code,
            Ended::Signal(_) => panic!(
                "expected an exit code, got {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.ended, self.stdout, self.stderr
            ),
        }
    }

    /// stdout parsed as JSON. Panics, showing stdout and stderr, unless it is
    /// exactly one JSON value (surrounding whitespace allowed).
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON value ({e})\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// How long [`run`] lets the binary run before it kills it and fails the
/// test; also a bound for tests that [`Running::finish`] a process they
/// started themselves.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `cmd` to completion with stdin from /dev/null and stdout/stderr
/// captured, through [`Running::finish`]. Panics if it cannot be spawned,
/// or if it (or a process holding its stdout/stderr) is still running after
/// [`RUN_TIMEOUT`].
#[track_caller]
pub fn run(cmd: &mut Command) -> Output {
    Running::spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .finish(RUN_TIMEOUT)
}

/// Runs `cmd` with [`run`] under `/usr/bin/time`, and returns its output
/// (stderr without time's line) with its peak RSS in KiB.
#[track_caller]
pub fn with_peak_rss(cmd: &Command) -> (Output, u64) {
    let mut timed = Command::new("/usr/bin/time");
    timed.args(["-f", "peak_rss_kb=%M"]).arg(cmd.get_program());
    timed.args(cmd.get_args());
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => timed.env(name, value),
            None => timed.env_remove(name),
        };
    }
    let mut out = run(&mut timed);
    let (stderr, peak) = out
        .stderr
        .rsplit_once("peak_rss_kb=")
        .map(|(rest, kb)| (rest.to_owned(), kb.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no peak RSS from /usr/bin/time: {}", out.stderr));
    out.stderr = stderr;
    let peak = peak.unwrap_or_else(|| panic!("an unreadable peak RSS: {}", out.stderr));
    (out, peak)
}

/// Runs `cmd` with [`run`] and also returns how long it took.
#[track_caller]
pub fn timed(cmd: &mut Command) -> (Output, Duration) {
    let started = Instant::now();
    let out = run(cmd);
    (out, started.elapsed())
}

/// `acquire -n NAME EXTRA...` on `cluster`; asserts exit 0 and that stdout is
/// exactly one token line, and returns the token.
#[track_caller]
pub fn acquire(cluster: &Cluster, name: &str, extra: &[&str]) -> String {
    let out = run(cluster.redlock().args(["acquire", "-n", name]).args(extra));
    out.assert_code(0, &format!("acquire -n {name:?} {extra:?}"));
    assertions::token_of(&out)
}

// ---------------------------------------------------------------------------
// Polling and processes
// ---------------------------------------------------------------------------

/// Polls `f` every 10ms until it returns true (then true) or `deadline` has
/// passed (then false, after one last try).
pub fn wait_until(deadline: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` exists and is not a zombie.
pub fn pid_alive(pid: i32) -> bool {
    let exists = match kill(Pid::from_raw(pid), None) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    };
    exists && matches!(proc_state(pid), Some(state) if state != 'Z' && state != 'X')
}

/// The state letter of `/proc/PID/stat` (R, S, D, T, Z, ...), or `None` if
/// the process is gone.
pub fn proc_state(pid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may itself contain ") ".
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.trim_start().chars().next()
}

/// A TCP proxy in front of servers that delays every request by `delay_ms`
/// (scripts/delay-proxy.py); killed on drop.
pub struct DelayProxy {
    child: std::process::Child,
    pub ports: Vec<u16>,
}

impl DelayProxy {
    pub fn start(delay_ms: u32, upstreams: &[u16]) -> DelayProxy {
        let ports: Vec<u16> = upstreams
            .iter()
            .map(|_| {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap().port()
            })
            .collect();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/delay-proxy.py");
        let pairs = ports.iter().zip(upstreams).map(|(l, u)| format!("{l}:{u}"));
        let child = std::process::Command::new("python3")
            .arg(script)
            .arg(delay_ms.to_string())
            .args(pairs)
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs the delay proxy");
        let up = ports.iter().all(|&port| {
            wait_until(Duration::from_secs(10), || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            })
        });
        assert!(up, "the delay proxy does not listen on {ports:?}");
        DelayProxy { child, ports }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Debian `faketime` package's library (scripts/test installs it).
pub fn faketime_library() -> Option<PathBuf> {
    fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("faketime/libfaketime.so.1"))
        .find(|lib| lib.is_file())
}
