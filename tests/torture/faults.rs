//! The faults: one episode at a time, each undone before the next, with a
//! pause of at least 1.5s between them.
//!
//! The episodes never overlap, and a restart never follows a restart or a
//! pause within 1.5s, for a reason: a holder loses a server's copy of its
//! key to each restart (and to a pause that outlasts the key), and a
//! section lasts at most about 1s in the scenarios with restarts. So a holder
//! keeps at least 3 of its 5 copies, and every scenario is safe even on a
//! binary without the restart guard. Where the guard is on, the harness
//! tests it on top of that; the negative control shows what it is for.

use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::clients::{Slots, TTL};
use crate::history::{now_ns, History};
use crate::rig::SERVERS;
use crate::rng::Rng;
use crate::support::Cluster;
use crate::witness::Witness;

#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// kill -9 one server, and restart it (empty) up to 0.5s later.
    KillRestart,
    /// SIGSTOP one or two servers for longer than the server timeout (250ms).
    PauseMinority,
    /// SIGSTOP three servers for longer than the TTL: no lock can be
    /// extended, so a holder whose section would outlast its validity must
    /// stop it in time, and exit 79.
    PauseMajority,
    /// SIGSTOP a client's `redlock exec` (not its section) for longer than
    /// the TTL: its watchdog must stop the section in time.
    FreezeExec,
}

/// What the faults act on.
pub struct Targets<'a> {
    pub cluster: &'a mut Cluster,
    pub history: &'a History,
    pub slots: &'a Slots,
    pub witness: &'a Witness,
    /// Whether sections can outlast the TTL (`Lengths::WithOverruns`).
    pub overruns: bool,
}

/// Room an episode needs before the end of the scenario, so that it is
/// undone while the clients still run.
const EPISODE_ROOM: Duration = Duration::from_millis(3500);

/// Runs episodes of the faults in `kinds` (picked at random) until `until`.
pub fn inject(kinds: &[Fault], rng: &mut Rng, until: Instant, targets: &mut Targets) {
    if kinds.is_empty() {
        return;
    }
    // Let the clients queue up first.
    thread::sleep(Duration::from_millis(500));
    while until.saturating_duration_since(Instant::now()) > EPISODE_ROOM {
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        match kind {
            Fault::KillRestart => kill_restart(rng, targets),
            Fault::PauseMinority => {
                let count = 1 + rng.below(2) as usize;
                let pause = rng.millis(400, 2500);
                pause_servers(rng, targets, count, pause);
            }
            Fault::PauseMajority => {
                let pause = rng.millis(1800, 2500);
                pause_servers(rng, targets, 3, pause);
            }
            Fault::FreezeExec => freeze_exec(rng, targets),
        }
        let gap = rng.millis(1500, 3000);
        thread::sleep(gap.min(until.saturating_duration_since(Instant::now())));
    }
}

fn kill_restart(rng: &mut Rng, targets: &mut Targets) {
    let server = rng.below(SERVERS as u64) as usize;
    let down = rng.millis(0, 500);
    targets.history.fault(&format!("kill-server {server}"));
    targets.cluster[server].kill();
    thread::sleep(down);
    targets.cluster[server].restart();
    targets.history.heal(&format!("restart-server {server}"));
}

/// Pauses `count` servers for `pause`. A majority is paused, where sections
/// can outlast the TTL, while one has more than a TTL to go: its `exec` can
/// extend no more, must stop it before the lock's validity ends, and exit 79.
fn pause_servers(rng: &mut Rng, targets: &mut Targets, count: usize, pause: Duration) {
    let servers = rng.distinct(SERVERS, count);
    let mut what = format!(
        "pause-servers {}",
        servers
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    if count > SERVERS / 2 && targets.overruns {
        if let Some((client, seq, verdict)) = pick_section(targets) {
            what = format!("{what} holder {client} {seq} {verdict}");
        }
    }
    targets.history.fault(&what);
    for &server in &servers {
        targets.cluster[server].pause();
    }
    thread::sleep(pause);
    for &server in &servers {
        targets.cluster[server].resume();
    }
    targets.history.heal(&what.replacen("pause", "resume", 1));
}

/// Freezes the `exec` of a section that is inside, for longer than the TTL.
fn freeze_exec(rng: &mut Rng, targets: &mut Targets) {
    let Some((client, seq, verdict)) = pick_section(targets) else {
        return;
    };
    let freeze = TTL + rng.millis(500, 1500);
    let slot = targets.slots.lock(client);
    let Some(active) = slot.filter(|a| a.seq == seq) else {
        return; // it ended meanwhile
    };
    let pid = Pid::from_raw(active.pid);
    targets
        .history
        .fault(&format!("freeze-exec {client} {seq} {verdict}"));
    kill(pid, Signal::SIGSTOP).expect("SIGSTOP to a client's exec");
    // Holding the slot keeps the client from reaping: the pid stays its own.
    thread::sleep(freeze);
    kill(pid, Signal::SIGCONT).expect("SIGCONT to a client's exec");
    drop(slot);
    targets.history.heal(&format!("thaw-exec {client} {seq}"));
}

/// A section inside now, to be cut short by a fault. Where sections can
/// outlast the TTL, one with more than a TTL (and a margin) to go, so that
/// its `exec` must lose the lock and exit 79 (`must-lose`), waiting up to 3s
/// for one. Otherwise, or after that, any section inside (`may-finish`).
fn pick_section(targets: &Targets) -> Option<(u32, u32, &'static str)> {
    let need = TTL + Duration::from_millis(300);
    let give_up = Instant::now() + Duration::from_secs(3);
    loop {
        let mut live: Vec<_> = targets.witness.live().into_iter().collect();
        live.sort();
        let overrun = live.iter().find(|&&((client, seq), entered)| {
            let slot = *targets.slots.lock(client);
            slot.is_some_and(|a| a.seq == seq && left(entered, a.section) >= need)
        });
        if let Some(&((client, seq), _)) = overrun {
            return Some((client, seq, "must-lose"));
        }
        if !targets.overruns || Instant::now() >= give_up {
            if let Some(&((client, seq), _)) = live.first() {
                return Some((client, seq, "may-finish"));
            }
        }
        if Instant::now() >= give_up {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// How long a section that entered at `entered` and lasts `length` has to go.
fn left(entered: u64, length: Duration) -> Duration {
    let inside = Duration::from_nanos(now_ns().saturating_sub(entered));
    length.saturating_sub(inside)
}
