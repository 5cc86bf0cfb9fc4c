//! Scenario 10, the negative control of the restart guard.
//!
//! Client A holds the lock with a long TTL and a long section. Right after
//! one of A's extensions, a majority of the five servers is killed and
//! restarted, empty. Only then does client B ask for the lock. Without the
//! guard B takes it at once on the three empty servers while A's section
//! still runs (A learns of the loss only at its next extension, a third of
//! its TTL later): the checker must see that overlap. With the guard at A's
//! TTL, a restarted server does not count toward a quorum until A's lease
//! has surely ended, so there must be no overlap.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::checker::{Analysis, Expect, Parsed};
use crate::clients::{run_one, Launch, Slots, TTL};
use crate::history::{now_ns, Mode};
use crate::judge::{judge, Case, Findings, Outcome};
use crate::rig::{Guard, Rig, LOCK, SERVERS};
use crate::settings::Settings;
use crate::support::{wait_until, Cluster, RedisServer};

pub const GUARDED: &str = "negative-control";
pub const UNGUARDED: &str = "negative-control-guard-off";

/// A's TTL, and the guard: A extends every 2s, so the restart and B's
/// entry have 2s to happen before A can notice the loss.
const HOLDER_TTL: Duration = Duration::from_secs(6);
const HOLDER_SECTION: Duration = Duration::from_secs(5);
const CONTENDER_SECTION: Duration = Duration::from_millis(500);
/// B's `-w`: shorter than the guard, so with the guard B gives up.
const CONTENDER_WAIT: Duration = Duration::from_secs(3);
/// The soak repeats the round for this long.
const LONG: Duration = Duration::from_secs(30);

pub fn run(name: &str, guarded: bool, settings: &Settings, section: &Path) -> Outcome {
    let guard = if guarded {
        Guard::Env(HOLDER_TTL)
    } else {
        Guard::Off
    };
    let mut rig = Rig::start(section, guard, None);
    let slots = Slots::new(2);
    let start = now_ns();
    let deadline = Instant::now() + if settings.long { LONG } else { Duration::ZERO };
    let (mut rounds, mut failed_round) = (0, None);
    while failed_round.is_none() && (rounds == 0 || Instant::now() < deadline) {
        rounds += 1;
        failed_round = one_round(&mut rig, &slots, rounds).err();
    }
    let case = Case {
        scenario: name,
        clients: 2,
        seed: settings.seed,
        expect: if guarded {
            Expect::Safe
        } else {
            Expect::Overlap
        },
        window: (start, now_ns()),
    };
    judge(&case, rig, |_: &Parsed, analysis: &Analysis, _| {
        let mut problems: Vec<String> = failed_round.into_iter().collect();
        if !guarded && analysis.overlaps.len() < rounds as usize {
            problems.push(format!(
                "only {} overlap(s) in {rounds} round(s) without the guard",
                analysis.overlaps.len()
            ));
        }
        if guarded && !analysis.overlaps.is_empty() {
            problems.push(
                "B took the lock on restarted servers while A still held it: \
                 does this redlock implement REDLOCK_RESTART_GUARD?"
                    .to_string(),
            );
        }
        Findings::problems(problems)
    })
}

/// One round: A enters, a majority restarts right after an extension of
/// A's, then B runs. Both are waited for.
fn one_round(rig: &mut Rig, slots: &Slots, seq: u32) -> Result<(), String> {
    let (ctx, witness, cluster) = (&rig.ctx, &rig.witness, &mut rig.cluster);
    let launch = |client, section, ttl, wait| Launch {
        client,
        seq,
        section,
        mode: Mode::Locked,
        ttl,
        wait,
        spawn_pause: None,
        slow_stop: false,
        clock_shift: None,
        once: None,
        hook: None,
    };
    thread::scope(|scope| {
        // With the guard, A waits for the servers restarted last round.
        let holder = launch(0, HOLDER_SECTION, HOLDER_TTL, HOLDER_TTL * 4);
        let holder = scope.spawn(move || run_one(ctx, slots, &holder));
        if !wait_until(HOLDER_TTL * 4, || witness.live().contains_key(&(0, seq))) {
            return Err(format!("round {seq}: A never entered its section"));
        }
        if !await_extension(&cluster.servers, HOLDER_TTL) {
            return Err(format!("round {seq}: no extension of A's lock seen"));
        }
        restart_majority(cluster, &ctx.history);
        let contender = launch(1, CONTENDER_SECTION, TTL, CONTENDER_WAIT);
        let contender = scope.spawn(move || run_one(ctx, slots, &contender));
        let statuses = (holder.join(), contender.join());
        match statuses {
            (Ok(_), Ok(_)) => Ok(()),
            _ => Err(format!("round {seq}: a client thread panicked")),
        }
    })
}

/// Waits until the lock's expiry on any of `servers` jumps up: A just
/// extended it.
fn await_extension(servers: &[RedisServer], limit: Duration) -> bool {
    // Any server: A's lock need not be on every one (under load one may
    // still have been in the restart guard's first look when A took it).
    let pttls = || -> Vec<i64> { servers.iter().map(|s| s.pttl(LOCK.as_bytes())).collect() };
    let mut last = pttls();
    wait_until(limit, || {
        let now = pttls();
        let extended = now.iter().zip(&last).any(|(now, last)| *now > last + 200);
        last = now;
        extended
    })
}

/// Kills servers 0, 1 and 2 together, then brings them back empty.
fn restart_majority(cluster: &mut Cluster, history: &crate::history::History) {
    let majority = 0..SERVERS / 2 + 1;
    history.fault("restart-majority 0,1,2");
    for server in majority.clone() {
        cluster[server].kill();
    }
    for server in majority {
        cluster[server].restart();
    }
    history.heal("restarted 0,1,2");
}
