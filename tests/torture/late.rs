//! `late-requests`: a request that a fault holds up until after its caller
//! gave up must not take the lock when the fault ends.
//!
//! Every step waits for what it needs, not for a lucky schedule. A takes
//! the lock (TTL 3s) on the five servers, each in its own network namespace
//! (netns.rs), and exits. B waits for it (`-w 2s`, TTL 30s); once B stands
//! in line on all five, so that each has answered it, two servers are held
//! up, and B's attempts to them stay unanswered. B gives up (exit 75) and
//! exits. After A's keys have expired everywhere the fault ends, and the
//! requests still on their way arrive. Two faults, one after the other:
//!
//! - a silent partition: B's requests stay in its sockets' queues, and TCP
//!   delivers them after the heal, although B closed the sockets. The first
//!   one through takes the free lock for B's 30s TTL, and its reply meets
//!   the closed socket, whose reset drops the compare-and-delete B wrote
//!   behind it. The build before acquire's deadline (fdefd9d) left the lock
//!   on both healed servers for 30s: with any other server down, nobody
//!   could take it.
//! - a paused server (SIGSTOP): its kernel holds B's requests and the
//!   compare-and-deletes behind them, and runs them in order once it goes
//!   on. The old build passes this one by that order alone; an abortive
//!   close of B's sockets would drop the compare-and-deletes and fail it.
//!
//! Each fails when a server the fault held holds the lock once no
//! connection to it is left (so everything was delivered, or given up).
//!
//! A third round holds up an extension: `exec --ttl 3s` runs a long
//! command; two servers are cut 0.3s in, so its extension at 1s stays in
//! its sockets' queues, and at 1.3s it is killed (`kill -9`). Its watchdog
//! releases the lock on the three reachable servers, on connections of its
//! own. The cut heals at 2.2s, before the key exec took at 0 expires on the
//! cut servers (3s). Delivered then, the extension would keep that key a
//! whole TTL from the heal. It fails when a healed server's key outlives
//! the 3s it was taken for (the build before the deadline kept it 3s
//! more).

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::judge::Outcome;
use crate::netns::{Netns, Unavailable};
use crate::rig::{redlock_binary, LOCK};
use crate::settings::Settings;
use crate::support;

pub const NAME: &str = "late-requests";

const HOLDER_TTL: &str = "3s";
const HOLDER_TTL_MS: u64 = 3000;
const WAITER_WAIT: &str = "2s";
const WAITER_TTL: &str = "30s";
/// The servers held up while B waits.
const HELD_UP: [usize; 2] = [3, 4];
/// Far beyond TCP's retransmissions after a heal (0.2s, doubling).
const DELIVERY: Duration = Duration::from_secs(30);

/// How the servers in [`HELD_UP`] are held up.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Partition,
    Pause,
}

pub fn run(settings: &Settings) -> Outcome {
    let mut netns = match Netns::start(settings.cuts, false) {
        Ok(netns) => netns,
        Err(Unavailable::Missing(why)) => {
            return Outcome::skipped(NAME, settings.seed, &why, settings.ci)
        }
        Err(Unavailable::WrongCut(why)) => return Outcome::unrunnable(NAME, settings.seed, why),
    };
    let mut problems = Vec::new();
    let mut late_keys = 0;
    for (fault, lock) in [
        (Fault::Partition, format!("{LOCK}-cut")),
        (Fault::Pause, format!("{LOCK}-paused")),
    ] {
        match phase(&mut netns, fault, &lock) {
            Ok(found) => {
                late_keys += found.len();
                problems.extend(found);
            }
            Err(why) => problems.push(format!("{fault:?}: {why}")),
        }
    }
    match extension_phase(&mut netns, &format!("{LOCK}-extended")) {
        Ok(found) => {
            late_keys += found.len();
            problems.extend(found);
        }
        Err(why) => problems.push(format!("Extension: {why}")),
    }
    Outcome {
        line: format!(
            "scenario={NAME} cut={} late_keys={late_keys} seed={}",
            netns.kind_word(),
            settings.seed
        ),
        problems,
    }
}

/// One round under `fault`, on `lock`: the servers that hold B's lock
/// after it, or why the round could not be played.
fn phase(netns: &mut Netns, fault: Fault, lock: &str) -> Result<Vec<String>, String> {
    let taken_at = Instant::now();
    let holder = redlock(netns)
        .args(["acquire", "--ttl", HOLDER_TTL, lock])
        .output()
        .map_err(|e| format!("cannot run redlock: {e}"))?;
    if !holder.status.success() {
        let said = String::from_utf8_lossy(&holder.stderr);
        return Err(format!("A could not take the lock: {}", said.trim()));
    }
    let mut waiter = redlock(netns)
        .args(["acquire", "-w", WAITER_WAIT, "--ttl", WAITER_TTL, lock])
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run redlock: {e}"))?;
    let in_line = support::wait_until(Duration::from_secs(2), || {
        (0..netns.len()).all(|i| netns.line_length(i, lock) == Some(1))
    });
    if !in_line {
        let _ = waiter.kill();
        return Err("B never stood in line on all five servers".to_string());
    }
    hold_up(netns, fault, true);
    let status = waiter.wait().map_err(|e| e.to_string())?;
    let mut said = String::new();
    let _ = waiter
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut said));
    // End the fault only once A's keys are gone everywhere, so that B's
    // held-up requests would find the lock free.
    let expired = taken_at + Duration::from_millis(HOLDER_TTL_MS + 300);
    thread::sleep(expired.saturating_duration_since(Instant::now()));
    hold_up(netns, fault, false);
    if status.code() != Some(75) {
        return Err(format!(
            "B ended with {status} instead of 75: {}",
            said.trim()
        ));
    }
    let mut found: Vec<String> = undelivered(netns, &format!("{fault:?}"))
        .into_iter()
        .collect();
    for i in HELD_UP {
        if let Some(pttl) = netns.pttl(i, lock).filter(|&pttl| pttl > 0) {
            found.push(format!(
                "{fault:?}: server {i} holds the lock for {pttl}ms more for B, which gave up \
                 before the fault ended: a request held up by it ran after its caller \
                 stopped waiting for it"
            ));
        }
    }
    Ok(found)
}

/// The third round (see the module's comment): the servers whose key
/// outlives the TTL it was taken with.
fn extension_phase(netns: &mut Netns, lock: &str) -> Result<Vec<String>, String> {
    let started = Instant::now();
    let mut holder = redlock(netns)
        .args(["exec", "--ttl", HOLDER_TTL, lock, "--", "sleep", "10"])
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run redlock: {e}"))?;
    let held = support::wait_until(Duration::from_secs(2), || {
        (0..netns.len()).all(|i| netns.pttl(i, lock).is_some_and(|pttl| pttl > 0))
    });
    // The key's end on the servers about to be cut: no later than this.
    let expires = Instant::now() + Duration::from_millis(HOLDER_TTL_MS);
    if !held {
        let _ = holder.kill();
        return Err("exec never held the lock on all five servers".to_string());
    }
    sleep_until(started + Duration::from_millis(300));
    netns.cut_only(&HELD_UP);
    // Past its first extension (a third of the TTL), which the cut holds up.
    sleep_until(started + Duration::from_millis(1300));
    let _ = holder.kill();
    let _ = holder.wait();
    let released = support::wait_until(Duration::from_secs(3), || {
        (0..3).all(|i| netns.pttl(i, lock) == Some(-2))
    });
    sleep_until(started + Duration::from_millis(2200));
    netns.cut_only(&[]);
    if !released {
        return Err("exec's watchdog did not release the lock after the kill".to_string());
    }
    let mut found: Vec<String> = undelivered(netns, "Extension").into_iter().collect();
    // A little slack for the time between seeing the key and its SET.
    let most = expires.saturating_duration_since(Instant::now()) + Duration::from_millis(300);
    for i in HELD_UP {
        let pttl = netns.pttl(i, lock).unwrap_or(-2);
        if pttl > 0 && Duration::from_millis(pttl as u64) > most {
            found.push(format!(
                "Extension: server {i} keeps the released lock {pttl}ms more, past the \
                 {}ms it was taken for: an extension held up by the partition ran after \
                 its holder was gone",
                HOLDER_TTL_MS
            ));
        }
    }
    Ok(found)
}

/// Waits until no connection to the held-up servers is left, so that
/// whatever was on its way arrived (or was given up); `round`'s problem
/// when some are still open after [`DELIVERY`].
fn undelivered(netns: &Netns, round: &str) -> Option<String> {
    let delivered = support::wait_until(DELIVERY, || {
        HELD_UP.iter().all(|&i| !netns.has_connections(i))
    });
    (!delivered).then(|| {
        let listed: Vec<String> = HELD_UP
            .iter()
            .filter_map(|&i| netns.connections(i))
            .collect();
        format!(
            "{round}: connections to servers {HELD_UP:?} still open {DELIVERY:?} after the \
             fault:\n{}",
            listed.join("\n")
        )
    })
}

fn sleep_until(at: Instant) {
    thread::sleep(at.saturating_duration_since(Instant::now()));
}

fn hold_up(netns: &mut Netns, fault: Fault, held: bool) {
    match (fault, held) {
        (Fault::Partition, true) => netns.cut_only(&HELD_UP),
        (Fault::Partition, false) => netns.cut_only(&[]),
        (Fault::Pause, _) => HELD_UP.iter().for_each(|&i| netns.pause(i, held)),
    }
}

fn redlock(netns: &Netns) -> Command {
    let mut command = support::redlock_at(&redlock_binary());
    command
        .env("REDLOCK_SERVERS", netns.servers_arg())
        .env("REDLOCK_RESTART_GUARD", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}
