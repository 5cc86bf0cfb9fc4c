//! The faults: one episode at a time, each undone before the next.
//!
//! The first kinds (kill-restart, pauses, freezing `exec`) come at least
//! 1.5s apart and never overlap, for a reason: a holder loses a server's
//! copy of its key to each restart (and to a pause that outlasts the key),
//! and a section lasts at most about 1s in the scenarios with those
//! restarts. So a holder keeps at least 3 of its 5 copies, and those
//! scenarios are safe even on a binary without the restart guard.
//!
//! [`Fault::RestartNow`] is the opposite: restarts aimed at the holder, one
//! right after another, each just before the wall clock's second ticks
//! over, under sections that span several of them. Only a restart guard
//! that keeps every restarted server out of the quorum for as long as a
//! lock it held could live keeps those scenarios safe; a guard that reads
//! Redis's `uptime_in_seconds` (whole seconds) lets a server restarted late
//! in a second count up to 1s early.

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::clients::{Active, Slots, TTL};
use crate::failover::Vips;
use crate::history::{now_ns, History};
use crate::netns::Netns;
use crate::rig::{LOCK, SERVERS};
use crate::rng::Rng;
use crate::support::{proc_state, wait_until, Cluster, RedisServer};
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
    /// kill -9 from `.0` to `.1` servers and restart them empty at once,
    /// late in a wall-clock second, aimed at the holder (see `restart_now`).
    RestartNow(usize, usize),
    /// SIGKILL the `exec` first in the line of waiters (the oldest one that
    /// waits and does not hold the lock), every 0.7-2s.
    KillHeadWaiter,
    /// SIGSTOP an `exec` that holds the lock and has not spawned its section
    /// (its holder record, on a majority, names its pid and no command pid)
    /// for longer than the TTL: once resumed it must not start the section.
    FreezeBeforeSpawn,
    /// SIGSTOP one server from the middle of the run to its end.
    HangOne,
    /// Fail a majority over, behind their addresses, to replicas that
    /// missed the last writes (failover.rs), every 0.3-1s.
    Failover,
    /// SIGSTOP the keeper of a script (`acquire --while`) whose section has
    /// just started and would outlast the lock, for longer than the TTL:
    /// the keeper can neither extend the lock nor tell the script, so its
    /// watchdog must stop the section before the validity ends.
    FreezeKeeper,
    /// Black-hole one or two servers at a time in their network
    /// namespaces, the cut moving every 0.5-2s, from the start to the end
    /// of the run (netns.rs).
    RollingCuts,
}

impl Fault {
    /// The pause after an episode.
    fn gap(self, rng: &mut Rng) -> Duration {
        match self {
            // The episode itself waits for its moment and edge.
            Fault::RestartNow(..) => rng.millis(0, 300),
            Fault::KillHeadWaiter => rng.millis(700, 2000),
            Fault::HangOne | Fault::RollingCuts => Duration::ZERO,
            Fault::KillRestart
            | Fault::PauseMinority
            | Fault::PauseMajority
            | Fault::FreezeExec
            | Fault::FreezeBeforeSpawn
            | Fault::FreezeKeeper => rng.millis(1500, 3000),
            Fault::Failover => rng.millis(300, 1000),
        }
    }
}

/// What the faults act on.
pub struct Targets<'a> {
    pub cluster: &'a mut Cluster,
    /// The replicas and addresses of a failover scenario.
    pub vips: Option<&'a mut Vips>,
    /// The namespaces of a rolling-cuts scenario.
    pub netns: Option<&'a mut Netns>,
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
    let mut restarted = Vec::new();
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
            Fault::RestartNow(lo, hi) => {
                restarted = restart_now(rng, targets, (lo, hi), &restarted);
            }
            Fault::KillHeadWaiter => kill_head_waiter(targets),
            Fault::FreezeBeforeSpawn => freeze_before_spawn(rng, targets),
            Fault::HangOne => hang_one(rng, targets, until),
            Fault::Failover => {
                let vips = targets.vips.as_mut().expect("a failover scenario has VIPs");
                vips.episode(targets.cluster, rng, targets.history);
            }
            Fault::FreezeKeeper => freeze_keeper(rng, targets),
            Fault::RollingCuts => {
                let netns = targets
                    .netns
                    .as_mut()
                    .expect("a cuts scenario has namespaces");
                netns.roll(rng, until, targets.history);
            }
        }
        let gap = kind.gap(rng);
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

/// Freezes the keeper of a script whose section started within the last
/// [`FRESH`] and has more than a TTL and [`OUTLASTS`] to go, found through
/// the holder record (it names the script and its keeper), for longer than
/// the TTL: `freeze-keeper CLIENT SEQ`, then `thaw-keeper CLIENT SEQ`.
/// Waits up to 3s for such a section.
fn freeze_keeper(rng: &mut Rng, targets: &mut Targets) {
    let give_up = Instant::now() + Duration::from_secs(3);
    let (client, active, keeper) = loop {
        if let Some(found) = fresh_kept_section(targets) {
            break found;
        }
        if Instant::now() >= give_up {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    };
    // Holding the slot keeps the client from reaping its script.
    let slot = targets.slots.lock(client);
    if slot.is_none_or(|a| a.seq != active.seq) {
        return; // it ended meanwhile
    }
    let comm = std::fs::read_to_string(format!("/proc/{keeper}/comm")).unwrap_or_default();
    if comm.trim() != "redlock-keeper" || !stop(Pid::from_raw(keeper)) {
        return; // the keeper is gone
    }
    let id = format!("{client} {}", active.seq);
    targets.history.fault(&format!("freeze-keeper {id}"));
    thread::sleep(TTL + rng.millis(500, 1500));
    kill(Pid::from_raw(keeper), Signal::SIGCONT).expect("SIGCONT to a keeper");
    targets.history.heal(&format!("thaw-keeper {id}"));
    drop(slot);
}

/// How recently a section entered for [`freeze_keeper`] to take it as just
/// started.
const FRESH: Duration = Duration::from_millis(1000);

/// How much longer than the TTL a section must still have to go for
/// [`freeze_keeper`]: it surely outlasts a lock nobody extends.
const OUTLASTS: Duration = Duration::from_millis(1000);

/// A client whose script's section entered within [`FRESH`] and has more
/// than TTL + [`OUTLASTS`] to go, and the pid of its keeper, named beside
/// the script's pid in the holder record on a majority.
fn fresh_kept_section(targets: &Targets) -> Option<(u32, Active, i32)> {
    let records = holder_records(&*targets.cluster);
    let now = now_ns();
    targets
        .witness
        .live()
        .into_iter()
        .find_map(|((client, seq), entered)| {
            let active = (*targets.slots.lock(client)).filter(|a| a.seq == seq)?;
            let fresh = Duration::from_nanos(now.saturating_sub(entered)) <= FRESH;
            if !fresh || left(entered, active.section) < TTL + OUTLASTS {
                return None;
            }
            let keepers: Vec<i32> = records
                .values()
                .filter(|r| r.pid == active.pid)
                .filter_map(|r| r.keeper_pid)
                .collect();
            let keeper = *keepers.first()?;
            let votes = keepers.iter().filter(|&&k| k == keeper).count();
            (votes > SERVERS / 2).then_some((client, active, keeper))
        })
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

/// Kills `lo..=hi` servers and restarts them, empty, at once, just before the
/// wall clock's next second ticks over: a restarted server's
/// `uptime_in_seconds` then reads 1 a few milliseconds after it started.
///
/// Aimed to hurt: right after the holder extended its lock late in a second
/// (see [`await_moment`]), so that it learns of the loss as late as it can,
/// and at as many of the servers that hold its key as take its majority
/// (within `lo..=hi`), others than `last` (the last episode's) first. A
/// minority takes it from a holder left with 3 or 4 by the last episode, or
/// that took the lock while the last ones did not count yet. Restarts
/// nothing when the moment does not come. Notes whether the restart was aimed
/// (`after-extension`) or only prepared the next (`preparing`). Returns the
/// servers restarted last.
fn restart_now(
    rng: &mut Rng,
    targets: &mut Targets,
    (lo, hi): (usize, usize),
    last: &[usize],
) -> Vec<usize> {
    let holding = |cluster: &Cluster| -> Vec<usize> {
        let values = cluster.get_all(LOCK.as_bytes());
        (0..SERVERS).filter(|&s| values[s].is_some()).collect()
    };
    // A holder that `hi` restarts would leave a majority is first cut down
    // to a bare one, at .93-.95s, when its section has long enough to go
    // for the next episode to aim at it.
    let prepare = holding(targets.cluster).len().saturating_sub(hi) > SERVERS / 2;
    let ready = if prepare {
        wait_until(Duration::from_secs(5), || {
            inside_for(targets, |a| a.section >= PREPARE_SPAN, PREPARE_SPAN)
        })
    } else {
        await_moment(targets)
    };
    if !ready {
        return last.to_vec(); // no holder to aim at: the next episode looks again
    }
    if prepare {
        sleep_to_second(rng.millis(930, 950));
    }
    let held = holding(targets.cluster);
    // As many as take the holder's majority, within `lo..=hi`.
    let count = held.len().saturating_sub(SERVERS / 2).clamp(lo, hi);
    // The holder's servers not restarted last, then its others, then the rest.
    let mut order: Vec<usize> = Vec::new();
    for tier in [
        held.iter()
            .filter(|s| !last.contains(s))
            .copied()
            .collect::<Vec<_>>(),
        held.iter().filter(|s| last.contains(s)).copied().collect(),
        (0..SERVERS).filter(|s| !held.contains(s)).collect(),
    ] {
        let picked = rng.distinct(tier.len(), tier.len());
        order.extend(picked.into_iter().map(|i| tier[i]));
    }
    let servers: Vec<usize> = order.into_iter().take(count).collect();
    let listed = list(&servers);
    let how = if prepare {
        "preparing"
    } else {
        "after-extension"
    };
    targets
        .history
        .fault(&format!("restart-now {listed} {how}"));
    // All at once, so that every one starts before the second ticks over.
    thread::scope(|scope| {
        for (i, server) in targets.cluster.servers.iter_mut().enumerate() {
            if servers.contains(&i) {
                scope.spawn(move || server.restart());
            }
        }
    });
    targets.history.heal(&format!("restarted-now {listed}"));
    servers
}

/// Waits (up to 5s) for the moment a restart hurts most, and returns at
/// once then (whether it came): the lock's expiry on a server just jumped
/// up (an extension, or a new holder) late in a wall-clock second, so that
/// the servers restarted now start before it ticks over. The holder learns
/// of the loss only at its next extension, TTL/3 after the jump, and kills a
/// section that ignores the stop signal another TTL/3 later; a guard that
/// counts a server again once `uptime_in_seconds` reads 2 lets a newcomer in
/// 1.01s after the next tick. The moment is one when that comes first, with
/// [`WAITER_ROOM`] to spare, and the section has [`SPAN_AFTER_EDGE`] to go
/// after the tick.
fn await_moment(targets: &Targets) -> bool {
    let expiries = || -> Vec<i64> {
        let servers = &targets.cluster.servers;
        let live = |s: &&RedisServer| s.is_running() && !s.is_paused();
        servers
            .iter()
            .map(|s| Some(s).filter(live).map_or(-2, |s| s.pttl(LOCK.as_bytes())))
            .collect()
    };
    let mut last = expiries();
    wait_until(Duration::from_secs(5), || {
        let now = expiries();
        let jumped = now
            .iter()
            .zip(&last)
            .any(|(now, before)| *now > before + 100);
        last = now;
        let past = wall_past_second();
        if !jumped || past > LAST_RESTART {
            return false;
        }
        let to_tick = Duration::from_secs(1) - past;
        let counted = to_tick + Duration::from_millis(1010) + WAITER_ROOM;
        inside_for(
            targets,
            |a| counted < a.ttl * 2 / 3,
            SPAN_AFTER_EDGE + to_tick,
        )
    })
}

/// The latest a restart may begin, past a whole second: the servers have
/// started before the next.
const LAST_RESTART: Duration = Duration::from_millis(965);

/// Time for a waiter to come back and enter once the servers count again.
const WAITER_ROOM: Duration = Duration::from_millis(60);

/// Whether a section is inside with at least `need` to go, whose `exec`
/// passes `test`.
fn inside_for(targets: &Targets, test: impl Fn(&Active) -> bool, need: Duration) -> bool {
    targets
        .witness
        .live()
        .into_iter()
        .any(|((client, seq), entered)| {
            let slot = *targets.slots.lock(client);
            slot.is_some_and(|a| a.seq == seq && test(&a) && left(entered, a.section) >= need)
        })
}

/// How long the section of a holder that an episode only prepares must
/// still have to go: the next episode is to find it inside, and aim at it.
const PREPARE_SPAN: Duration = Duration::from_millis(3200);

/// How long a section must still have to go after a restart for a newcomer
/// let in by a guard that counts the server again 1.01s later to meet it.
const SPAN_AFTER_EDGE: Duration = Duration::from_millis(1200);

/// How far the wall clock is past its last whole second.
fn wall_past_second() -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Duration::from_nanos(u64::from(now.subsec_nanos()))
}

/// Sleeps until the wall clock (the one Redis's uptime counts in whole
/// seconds) is `into` past a whole second, at least 20ms from now.
fn sleep_to_second(into: Duration) {
    let past = wall_past_second();
    let wait = if into > past + Duration::from_millis(20) {
        into - past
    } else {
        Duration::from_secs(1) - past + into
    };
    thread::sleep(wait);
}

fn list(servers: &[usize]) -> String {
    servers
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// SIGKILLs the `exec` that is first in line: of the clients' execs that
/// wait (no section inside, no holder record naming them), the one spawned
/// first, since the line serves waiters in the order they came. The victim
/// is stopped before the last look, so that it cannot take the lock
/// meanwhile: one that turns out to hold it is resumed and spared.
fn kill_head_waiter(targets: &mut Targets) {
    let live = targets.witness.live();
    let holders = holder_records(&*targets.cluster);
    let mut waiting: Vec<(Instant, u32, Active)> = (0..targets.slots.len())
        .filter_map(|client| {
            let active = (*targets.slots.lock(client))?;
            let holds = live.contains_key(&(client, active.seq))
                || holders.values().any(|h| h.pid == active.pid);
            (!holds).then_some((active.spawned, client, active))
        })
        .collect();
    waiting.sort_by_key(|&(spawned, client, _)| (spawned, client));
    for (_, client, active) in waiting.into_iter().take(2) {
        let slot = targets.slots.lock(client);
        if slot.is_none_or(|a| a.seq != active.seq) {
            continue; // it returned meanwhile
        }
        // Holding the slot keeps the client from reaping: the pid stays its own.
        let pid = Pid::from_raw(active.pid);
        if !stop(pid) {
            continue;
        }
        // A request it sent before it stopped has reached the servers by now.
        thread::sleep(Duration::from_millis(20));
        let holds = targets.witness.live().contains_key(&(client, active.seq))
            || holder_records(&*targets.cluster)
                .values()
                .any(|h| h.pid == active.pid);
        if holds {
            let _ = kill(pid, Signal::SIGCONT);
            continue;
        }
        targets
            .history
            .fault(&format!("kill-waiter {client} {}", active.seq));
        kill(pid, Signal::SIGKILL).expect("SIGKILL to a client's exec");
        drop(slot);
        return;
    }
}

/// SIGSTOPs `pid` and waits until the kernel reports it stopped.
fn stop(pid: Pid) -> bool {
    if kill(pid, Signal::SIGSTOP).is_err() {
        return false;
    }
    wait_until(Duration::from_secs(2), || {
        proc_state(pid.as_raw()).is_none_or(|state| state == 'T')
    })
}

/// Freezes an `exec` found in the window between taking the lock and
/// spawning its section, through the holder record: its pid and token with
/// no command pid on a majority, for [`SETTLED`] on end (the record is
/// written as each server takes the lock, a moment before the `exec` has
/// its majority). Checked again once it is stopped: an `exec` that spawned
/// meanwhile is resumed at once and noted as `freeze-missed`. One caught in
/// the window stays frozen for longer than the TTL (`freeze-before-spawn
/// CLIENT SEQ`, then `thaw-before-spawn CLIENT SEQ`).
fn freeze_before_spawn(rng: &mut Rng, targets: &mut Targets) {
    let give_up = Instant::now() + Duration::from_secs(3);
    let mut since: Option<(Instant, (u32, u32, String))> = None;
    let found = loop {
        let now = in_spawn_window(targets);
        let key = now.as_ref().map(|(c, a, token)| (*c, a.seq, token.clone()));
        since = match (since, key) {
            (Some((at, seen)), Some(key)) if seen == key => Some((at, seen)),
            (_, key) => key.map(|key| (Instant::now(), key)),
        };
        if let (Some(found), Some((at, _))) = (now, &since) {
            if at.elapsed() >= SETTLED {
                break found;
            }
        }
        if Instant::now() >= give_up {
            return;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let (client, active, token) = found;
    let slot = targets.slots.lock(client);
    if slot.is_none_or(|a| a.seq != active.seq) {
        return; // it returned meanwhile
    }
    let pid = Pid::from_raw(active.pid);
    if !stop(pid) {
        return;
    }
    let id = format!("{client} {}", active.seq);
    if !window_holds(targets, client, &active, &token) {
        targets.history.fault(&format!("freeze-missed {id}"));
        let _ = kill(pid, Signal::SIGCONT);
        targets.history.heal(&format!("thaw-missed {id}"));
        return;
    }
    let freeze = TTL + rng.millis(500, 1500);
    targets.history.fault(&format!("freeze-before-spawn {id}"));
    thread::sleep(freeze);
    kill(pid, Signal::SIGCONT).expect("SIGCONT to a client's exec");
    targets.history.heal(&format!("thaw-before-spawn {id}"));
    drop(slot);
}

/// How long the record must have named an `exec`, unchanged, before the
/// harness takes it to hold the lock: far longer than an acquire round on
/// this machine, far shorter than [`crate::clients::SPAWN_WINDOW`].
const SETTLED: Duration = Duration::from_millis(40);

/// A client whose `exec` holds the lock and has not spawned its section,
/// and its token: a majority of the servers show its pid and token in the
/// holder record, with no command pid, and the witness has not seen its
/// section.
fn in_spawn_window(targets: &Targets) -> Option<(u32, Active, String)> {
    let records = holder_records(&*targets.cluster);
    let mut votes: HashMap<(i32, &str), usize> = HashMap::new();
    for record in records.values().filter(|r| r.command_pid.is_none()) {
        *votes.entry((record.pid, &record.token)).or_default() += 1;
    }
    let live = targets.witness.live();
    votes
        .into_iter()
        .filter(|&(_, n)| n > SERVERS / 2)
        .find_map(|((pid, token), _)| {
            (0..targets.slots.len()).find_map(|client| {
                let active = (*targets.slots.lock(client))?;
                let spawned = live.contains_key(&(client, active.seq));
                (active.pid == pid && !spawned).then(|| (client, active, token.to_string()))
            })
        })
}

/// Whether `client`'s `active` exec (whose slot the caller holds) is still
/// in the window: the record on a majority names its pid and `token` and no
/// command pid, and the witness has not seen its section.
fn window_holds(targets: &Targets, client: u32, active: &Active, token: &str) -> bool {
    let records = holder_records(&*targets.cluster);
    let votes = records
        .values()
        .filter(|r| r.pid == active.pid && r.token == token && r.command_pid.is_none())
        .count();
    votes > SERVERS / 2 && !targets.witness.live().contains_key(&(client, active.seq))
}

/// What a holder record (`<lock>\0holder`: "<server ms> <json>") says.
struct Record {
    pid: i32,
    token: String,
    command_pid: Option<i64>,
    /// The keeper of `acquire --while`, which holds the lock for `pid`.
    keeper_pid: Option<i32>,
}

/// The holder record on every running server, by server.
fn holder_records(cluster: &Cluster) -> HashMap<usize, Record> {
    let key = [LOCK.as_bytes(), b"\0holder"].concat();
    cluster
        .get_all(&key)
        .into_iter()
        .enumerate()
        .filter_map(|(server, value)| Some((server, parse_record(&value?)?)))
        .collect()
}

fn parse_record(value: &[u8]) -> Option<Record> {
    let text = std::str::from_utf8(value).ok()?;
    let (_, json) = text.split_once(' ')?;
    let json: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(Record {
        pid: i32::try_from(json.get("pid")?.as_i64()?).ok()?,
        // The lock's token, where the record names it: a new one is a new
        // acquisition by the same exec.
        token: json
            .get("token")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string(),
        command_pid: json.get("command_pid").and_then(serde_json::Value::as_i64),
        keeper_pid: json
            .get("keeper_pid")
            .and_then(serde_json::Value::as_i64)
            .and_then(|pid| i32::try_from(pid).ok()),
    })
}

/// Lets the clients run healthy for half of what is left, then SIGSTOPs one
/// server until `until` (`hang-server N`, `unhang-server N`).
fn hang_one(rng: &mut Rng, targets: &mut Targets, until: Instant) {
    thread::sleep(until.saturating_duration_since(Instant::now()) / 2);
    let server = rng.below(SERVERS as u64) as usize;
    targets.history.fault(&format!("hang-server {server}"));
    targets.cluster[server].pause();
    thread::sleep(until.saturating_duration_since(Instant::now()));
    targets.cluster[server].resume();
    targets.history.heal(&format!("unhang-server {server}"));
}
