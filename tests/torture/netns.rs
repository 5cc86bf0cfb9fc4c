//! Rolling minority cuts (issue 28): each of the five lock servers in its
//! own network namespace, reached from the root namespace through a veth
//! pair, `198.18.X.Y+1` on the host's end and `+2` in the namespace (a /30
//! of the benchmarking range 198.18.0.0/15, RFC 2544), where the server
//! listens. A cut black-holes one to two servers at a time, so that three
//! are always reachable, and moves every 0.5-2s.
//!
//! A cut sets the namespace's end of the pair down, and the host's end
//! keeps a permanent neighbour entry for the server's address: the host
//! still sends, the pair drops every packet, nothing answers and nothing
//! fails. A connect or a read times out, as across a real partition (the
//! rig checks this before the clients start). The other ways are not
//! silent: setting the host's end down removes its route, so the packets
//! take the default route (here a proxy answered) or fail at once with
//! "network unreachable"; a `blackhole` route fails a local sender at once
//! with EINVAL; and without the permanent entry the host's ARP gives up
//! after 3s and connects fail with "no route to host".
//!
//! The names carry the test's pid (`rlt<PID>n<I>` for a namespace,
//! `rlt<PID>h<I>` and `rlt<PID>s<I>` for the host's and the server's end of
//! its pair), and the addresses are picked from the pid among the /30s no
//! interface uses, so that parallel runs do not collide. Everything is
//! removed when the [`Netns`] is dropped (also on a panic), and what a
//! killed run left behind is removed by the next one.
//!
//! `REDLOCK_TORTURE_CUTS=unreachable` (`scripts/torture --cuts
//! unreachable`) cuts with an `unreachable` route on the host instead: a
//! new connect fails at once with "no route to host" (as it does when the
//! host's end of a pair is set down and no default route takes over), and
//! only what was already connected times out. It shows what a cut costs
//! when failing fast is free.
//!
//! `REDLOCK_TORTURE_NO_LINE=1` (`scripts/torture --no-line`) makes the
//! clients log in as a user without the sorted-set commands: waiters are
//! not queued (see docs/operations.md, Permissions), the schedule stays
//! the same, and the run shows what the line costs or saves.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::history::History;
use crate::rig::SERVERS;
use crate::rng::Rng;
use crate::support;

/// How long a cut stays where it is before it moves.
const HOLD: (u64, u64) = (500, 2000);

/// The port every server listens on, in its own namespace.
const PORT: u16 = 6379;

/// The user of `REDLOCK_TORTURE_NO_LINE`: every command but the sorted
/// sets', so that waiters cannot stand in a line.
const NO_LINE_RULES: &[&str] = &["on", ">no-line", "~*", "&*", "+@all", "-@sortedset"];

/// How long a connect to a cut server is given to show that it hangs.
const SILENT_FOR: Duration = Duration::from_millis(300);

/// The prefix of every name this module gives (see the module's comment).
const PREFIX: &str = "rlt";

/// Why the scenario cannot run here.
#[derive(Debug)]
pub enum Unavailable {
    /// The machine has no namespaces for us: not root, no `ip`, no veth.
    Missing(String),
    /// The namespaces are there but a cut does not do what its kind says:
    /// the scenario would measure something else.
    WrongCut(String),
}

/// How a cut cuts a server off (see the module's comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutKind {
    /// The namespace's end of the pair down: a silent partition.
    Silent,
    /// An `unreachable` route on the host: connects fail at once.
    Unreachable,
}

impl CutKind {
    /// `REDLOCK_TORTURE_CUTS`'s value.
    pub fn from_word(word: &str) -> Option<CutKind> {
        match word {
            "silent" => Some(CutKind::Silent),
            "unreachable" => Some(CutKind::Unreachable),
            _ => None,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            CutKind::Silent => "silent",
            CutKind::Unreachable => "unreachable",
        }
    }
}

/// One server in its namespace.
struct Server {
    ns: String,
    host_end: String,
    server_end: String,
    addr: Ipv4Addr,
    process: Option<Child>,
}

/// The five servers in their namespaces, and which are cut now.
pub struct Netns {
    servers: Vec<Server>,
    kind: CutKind,
    cut: [bool; SERVERS],
    /// `user:password@` in the clients' URLs (`REDLOCK_TORTURE_NO_LINE`).
    login: String,
    /// The servers' logs.
    dir: tempfile::TempDir,
}

impl Netns {
    /// Sets up the namespaces and starts a server in each, to be cut as
    /// `kind` says; with `no_line`, a user without the sorted-set commands
    /// on each for the clients.
    pub fn start(kind: CutKind, no_line: bool) -> Result<Netns, Unavailable> {
        preflight().map_err(Unavailable::Missing)?;
        sweep_leftovers();
        let pid = std::process::id();
        // A block of addresses new to this process: a scenario's clients
        // leave closing connections behind that retransmit for a minute or
        // more (orphans, CLOSING), and on the same addresses the next
        // scenario would count them as its own (late.rs waits for none).
        // The search starts after the block the last start took (from the
        // pid's for the first).
        static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
        let start = match NEXT.load(Ordering::Relaxed) {
            u32::MAX => pid,
            next => next,
        };
        let first = free_block(start).map_err(Unavailable::Missing)?;
        NEXT.store(first / SERVERS as u32 + 1, Ordering::Relaxed);
        let mut netns = Netns {
            servers: Vec::new(),
            kind,
            cut: [false; SERVERS],
            login: String::new(),
            dir: support::temp_dir("redlock-netns-"),
        };
        for i in 0..SERVERS {
            let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + 4 * (first + i as u32);
            let log = netns.dir.path().join(format!("server-{i}.log"));
            netns.servers.push(Server {
                ns: format!("{PREFIX}{pid}n{i}"),
                host_end: format!("{PREFIX}{pid}h{i}"),
                server_end: format!("{PREFIX}{pid}s{i}"),
                addr: Ipv4Addr::from(base + 2),
                process: None,
            });
            let server = netns.servers.last_mut().expect("just pushed");
            server
                .wire(Ipv4Addr::from(base + 1))
                .map_err(Unavailable::Missing)?;
            server.spawn(&log).map_err(Unavailable::Missing)?;
        }
        if no_line {
            netns.login = netns.add_user().map_err(Unavailable::Missing)?;
        }
        netns.check_cut().map_err(Unavailable::WrongCut)?;
        Ok(netns)
    }

    /// `REDLOCK_SERVERS`: each server's address in its namespace.
    pub fn servers_arg(&self) -> String {
        let urls: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("redis://{}{}:{PORT}", self.login, s.addr))
            .collect();
        urls.join(",")
    }

    /// How many servers there are.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// The word of this rig's cut kind (`silent`, `unreachable`).
    pub fn kind_word(&self) -> &'static str {
        self.kind.word()
    }

    /// Cuts exactly the servers `which` (none: heals them all).
    pub fn cut_only(&mut self, which: &[usize]) {
        let mut wanted = [false; SERVERS];
        for &i in which {
            wanted[i] = true;
        }
        self.set_cut(&wanted, false);
        self.set_cut(&wanted, true);
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) server `i`'s process: its
    /// kernel still takes connections and requests meanwhile.
    pub fn pause(&self, i: usize, paused: bool) {
        let pid = self.servers[i].process.as_ref().map(Child::id);
        let pid = pid.unwrap_or_else(|| panic!("server {i} has no process"));
        let signal = match paused {
            true => nix::sys::signal::Signal::SIGSTOP,
            false => nix::sys::signal::Signal::SIGCONT,
        };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)
            .unwrap_or_else(|e| panic!("cannot signal server {i}: {e}"));
    }

    /// How many tickets stand in `lock`'s line on server `i`, or `None`
    /// when it does not answer.
    pub fn line_length(&self, i: usize, lock: &str) -> Option<u64> {
        let line = [lock.as_bytes(), b"\0line"].concat();
        let mut con = self.servers[i].client().ok()?;
        redis::cmd("ZCARD").arg(line).query(&mut con).ok()
    }

    /// `lock`'s PTTL on server `i` (-2: no key), or `None` when it does not
    /// answer.
    pub fn pttl(&self, i: usize, lock: &str) -> Option<i64> {
        let mut con = self.servers[i].client().ok()?;
        redis::cmd("PTTL").arg(lock).query(&mut con).ok()
    }

    /// Whether this host still has a TCP connection to server `i` that is
    /// not closed yet (TIME-WAIT aside): one that may still deliver what
    /// its queue holds.
    pub fn has_connections(&self, i: usize) -> bool {
        self.connections(i).is_none_or(|listed| !listed.is_empty())
    }

    /// `ss`'s lines for this host's connections to server `i` (state,
    /// queues, timers), for a failure's message; `None` when `ss` fails.
    pub fn connections(&self, i: usize) -> Option<String> {
        let dst = format!("dst {}", self.servers[i].addr);
        let out = Command::new("ss")
            .args(["-tnHo", "state", "connected", "exclude", "time-wait"])
            .args(dst.split(' '))
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Moves the cut every 0.5-2s until `until`: one or two servers cut at
    /// a time (`cut-servers 1,3 KIND`), then none (`uncut-servers`).
    pub fn roll(&mut self, rng: &mut Rng, until: Instant, history: &History) {
        while until.saturating_duration_since(Instant::now()) > Duration::from_millis(HOLD.0) {
            let count = 1 + rng.below(2) as usize;
            let mut chosen = rng.distinct(SERVERS, count);
            chosen.sort_unstable();
            let mut cut = [false; SERVERS];
            for &i in &chosen {
                cut[i] = true;
            }
            // Heal first, so that never more than two are cut at once.
            self.set_cut(&cut, false);
            self.set_cut(&cut, true);
            let names: Vec<String> = chosen.iter().map(usize::to_string).collect();
            let (names, kind) = (names.join(","), self.kind.word());
            history.fault(&format!("cut-servers {names} {kind}"));
            let hold = rng.millis(HOLD.0, HOLD.1);
            thread::sleep(hold.min(until.saturating_duration_since(Instant::now())));
        }
        self.set_cut(&[false; SERVERS], false);
        history.heal("uncut-servers");
    }

    /// Brings the servers to `wanted`: those it cuts, with `cutting`; else
    /// those it does not cut.
    fn set_cut(&mut self, wanted: &[bool; SERVERS], cutting: bool) {
        for (i, &wants) in wanted.iter().enumerate() {
            if self.cut[i] != wants && wants == cutting {
                let server = &self.servers[i];
                let addr = format!("{}/32", server.addr);
                let done = match (self.kind, cutting) {
                    (CutKind::Silent, true) => {
                        ip(&["-n", &server.ns, "link", "set", &server.server_end, "down"])
                    }
                    (CutKind::Silent, false) => {
                        ip(&["-n", &server.ns, "link", "set", &server.server_end, "up"])
                    }
                    (CutKind::Unreachable, true) => ip(&["route", "add", "unreachable", &addr]),
                    (CutKind::Unreachable, false) => ip(&["route", "del", "unreachable", &addr]),
                };
                done.unwrap_or_else(|e| panic!("cannot cut or heal server {i}: {e}"));
                self.cut[i] = cutting;
            }
        }
    }

    /// Cuts server 0 and checks that a connect to it neither succeeds nor
    /// fails within [`SILENT_FOR`] (it must hang), or under
    /// [`CutKind::Unreachable`] that it fails within that time.
    fn check_cut(&mut self) -> Result<(), String> {
        let mut cut = [false; SERVERS];
        cut[0] = true;
        self.set_cut(&cut, true);
        let target = SocketAddr::from((self.servers[0].addr, PORT));
        let started = Instant::now();
        let result = TcpStream::connect_timeout(&target, SILENT_FOR);
        let took = started.elapsed();
        self.set_cut(&[false; SERVERS], false);
        let timed_out = |e: &std::io::Error| e.kind() == std::io::ErrorKind::TimedOut;
        match (self.kind, result) {
            (_, Ok(_)) => Err(format!(
                "a cut server ({target}) still accepted a connection"
            )),
            (CutKind::Silent, Err(e)) if timed_out(&e) => Ok(()),
            (CutKind::Silent, Err(e)) => Err(format!(
                "a connect to a cut server ({target}) failed after {took:?} ({e}) instead of \
                 hanging: the cut is not a silent partition"
            )),
            (CutKind::Unreachable, Err(e)) if timed_out(&e) => Err(format!(
                "a connect to a server cut by an unreachable route ({target}) hung instead \
                 of failing at once"
            )),
            (CutKind::Unreachable, Err(_)) => Ok(()),
        }
    }

    /// A user without the sorted-set commands on every server; returns
    /// `user:password@` for the URLs.
    fn add_user(&self) -> Result<String, String> {
        for server in &self.servers {
            let mut con = server.client()?;
            redis::cmd("ACL")
                .arg("SETUSER")
                .arg("no-line")
                .arg(NO_LINE_RULES)
                .query::<()>(&mut con)
                .map_err(|e| format!("ACL SETUSER on {}: {e}", server.addr))?;
        }
        Ok("no-line:no-line@".to_string())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for (i, server) in self.servers.iter_mut().enumerate() {
            if self.kind == CutKind::Unreachable && self.cut[i] {
                let _ = ip(&[
                    "route",
                    "del",
                    "unreachable",
                    &format!("{}/32", server.addr),
                ]);
            }
            if let Some(mut process) = server.process.take() {
                let _ = process.kill();
                let _ = process.wait();
            }
            // Deleting the namespace deletes the pair with its end in it;
            // the host's end goes too, if the pair was never moved there.
            let _ = ip(&["netns", "delete", &server.ns]);
            let _ = ip(&["link", "delete", &server.host_end]);
        }
    }
}

impl Server {
    /// The namespace, the pair and the addresses; `host` on the host's end.
    fn wire(&self, host: Ipv4Addr) -> Result<(), String> {
        let (ns, host_end, server_end) = (&self.ns, &self.host_end, &self.server_end);
        let (host_cidr, addr_cidr) = (format!("{host}/30"), format!("{}/30", self.addr));
        ip(&["netns", "add", ns])?;
        ip(&[
            "link", "add", host_end, "type", "veth", "peer", "name", server_end, "netns", ns,
        ])?;
        ip(&["addr", "add", &host_cidr, "dev", host_end])?;
        ip(&["link", "set", host_end, "up"])?;
        ip(&["-n", ns, "addr", "add", &addr_cidr, "dev", server_end])?;
        ip(&["-n", ns, "link", "set", server_end, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        // The host knows the server's MAC for good: a cut never ends in
        // ARP giving up with "no route to host".
        let mac = link_mac(ns, server_end)?;
        let addr = self.addr.to_string();
        ip(&[
            "neigh",
            "replace",
            &addr,
            "lladdr",
            &mac,
            "dev",
            host_end,
            "nud",
            "permanent",
        ])
    }

    /// Starts `redis-server` in the namespace, on its address, in memory
    /// only, and waits until it answers.
    fn spawn(&mut self, log: &Path) -> Result<(), String> {
        let addr = self.addr.to_string();
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.ns, "redis-server", "--bind", &addr])
            .args(["--port", &PORT.to_string(), "--protected-mode", "no"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--logfile")
            .arg(log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe and allocates nothing. `ip
        // netns exec` becomes the server, which then dies with this thread
        // (the scenario's), should the test be killed.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot run ip netns exec redis-server: {e}"))?;
        self.process = Some(child);
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            match self.client() {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > give_up => {
                    return Err(format!("redis-server in {} never answered: {e}", self.ns))
                }
                Err(_) => thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// A connection as the default user, from the root namespace.
    fn client(&self) -> Result<redis::Connection, String> {
        let url = format!("redis://{}:{PORT}", self.addr);
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let mut con = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .map_err(|e| e.to_string())?;
        redis::cmd("PING")
            .query::<String>(&mut con)
            .map_err(|e| e.to_string())?;
        Ok(con)
    }
}

/// Root, `ip`, and a namespace we may make: else why not.
fn preflight() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("network namespaces need root, which CI has".to_string());
    }
    if let Err(e) = Command::new("ip").arg("-V").output() {
        return Err(format!(
            "cannot run `ip` ({e}): install iproute2 (scripts/test does)"
        ));
    }
    Ok(())
}

/// Runs `ip ARGS`; its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// The output of `ip ARGS`.
fn ip_output(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// The MAC of `link` in namespace `ns`.
fn link_mac(ns: &str, link: &str) -> Result<String, String> {
    let text = ip_output(&["-n", ns, "-o", "link", "show", link]);
    let mut words = text.split_whitespace();
    words
        .find(|&w| w == "link/ether")
        .and_then(|_| words.next())
        .map(str::to_string)
        .ok_or_else(|| format!("no MAC for {link} in {ns}: {text:?}"))
}

/// Removes the namespaces and host ends of runs whose test process is gone
/// (killed before it could clean up).
fn sweep_leftovers() {
    let dead = |name: &str| -> bool {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            return false;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        // A killed test may linger as a zombie until its parent reaps it.
        digits
            .parse::<i32>()
            .is_ok_and(|pid| support::proc_state(pid).is_none_or(|state| state == 'Z'))
    };
    for line in ip_output(&["netns", "list"]).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if dead(name) {
            let _ = ip(&["netns", "delete", name]);
        }
    }
    for line in ip_output(&["-o", "link", "show"]).lines() {
        // `7: rlt123h0@if2: <...`
        let name = line.split(": ").nth(1).unwrap_or_default();
        let name = name.split('@').next().unwrap_or_default();
        if dead(name) {
            let _ = ip(&["link", "delete", name]);
        }
    }
}

/// The index of the first of [`SERVERS`] /30s of 198.18.0.0/15 that no
/// interface uses, starting from the one `start` picks.
fn free_block(start: u32) -> Result<u32, String> {
    let blocks = (1 << 15) / SERVERS as u32; // /30s in the /15, in groups
    let used: Vec<u32> = ip_output(&["-4", "-o", "addr", "show"])
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse::<Ipv4Addr>().ok())
        .map(u32::from)
        .collect();
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    for step in 0..blocks {
        let block = start.wrapping_add(step) % blocks;
        let (from, to) = (
            base + 4 * SERVERS as u32 * block,
            base + 4 * SERVERS as u32 * (block + 1),
        );
        if !used.iter().any(|a| (from..to).contains(a)) {
            return Ok(block * SERVERS as u32);
        }
    }
    Err("every /30 of 198.18.0.0/15 is in use".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CI failure of late-requests: `rolling-cuts` and `once-per-cuts`
    /// leave connections closing for a minute or more, and on the addresses
    /// they used the next scenario's [`Netns::has_connections`] counted
    /// them, however long it waited. Each start must use addresses of its
    /// own, even once the last one's are free again.
    #[test]
    #[ignore = "needs root: network namespaces (scripts/test runs it as root)"]
    fn each_start_uses_addresses_the_last_one_did_not() {
        let start = || {
            Netns::start(CutKind::Silent, false)
                .unwrap_or_else(|e| panic!("cannot start the namespaces: {e:?}"))
        };
        let first: Vec<Ipv4Addr> = start().servers.iter().map(|s| s.addr).collect();
        let second: Vec<Ipv4Addr> = start().servers.iter().map(|s| s.addr).collect();
        assert!(
            first.iter().all(|addr| !second.contains(addr)),
            "a second start reused the first one's addresses: {first:?} then {second:?}"
        );
    }
}
