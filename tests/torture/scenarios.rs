//! The scenarios of issue 9, how long each runs, and what each must show.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::checker::{Analysis, Expect, Parsed};
use crate::checks::{self, Also};
use crate::clients::{self, client_loop, Lengths, Plan, Slots, SPAWN_WINDOW, TTL};
use crate::faults::{self, Fault, Targets};
use crate::history::{now_ns, Mode};
use crate::judge::{judge, Case, Outcome};
use crate::late;
use crate::negative;
use crate::netns::{Netns, Unavailable};
use crate::once::{self, Periods};
use crate::rig::{self, Guard, Rig, LOCK, SERVERS};
use crate::rng::Rng;
use crate::settings::Settings;
use crate::support::wait_until;

/// Concurrent clients of every scenario but the negative control.
pub const CLIENTS: usize = 8;

/// The longer TTL of half the clients of `mixed-ttls`, and the fleet's
/// restart guard there.
const LONG_TTL: Duration = Duration::from_secs(4);

/// The TTL, and the restart guard, of the `restart-now` scenarios. A holder
/// learns that restarts took its majority at its next extension (within
/// TTL/3) and kills a command that ignores the stop signal a grace period
/// (TTL/3) later; a guard that reads `uptime_in_seconds` counts a server
/// restarted at .99s again 1.01s after the restart when the guard is over
/// 1s and at most 2s. At 1.5s, 2*TTL/3 = 1s: a build with that flaw is saved
/// by 10ms of its stop plan. Near 2s the flaw leaves a holder up to 0.3s
/// inside after a newcomer could enter, which a sound guard never does.
/// 50ms short of 2s, so that a holder's extensions (every 650ms) fall on
/// every twentieth of a wall-clock second in turn, not on the same three:
/// each holder soon extends late in a second, when a restart hurts most.
const RESTART_TTL: Duration = Duration::from_millis(1950);

/// How the clients of a scenario are set up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    Plain,
    /// Client 0 starts alone with a section far longer than the TTL: the
    /// first fault surely finds a section that it must cut short.
    OverrunningLeader,
    /// The clients' wall clocks run 1h ahead (even clients) or behind (odd).
    ClockShift,
    /// Client 0's wall clock runs 5s behind, client 1's 5s ahead; the
    /// others' are true.
    SkewedClocks,
    /// Even clients lock with the TTL, odd ones with [`LONG_TTL`].
    MixedTtls,
    /// Every `exec` waits [`SPAWN_WINDOW`] between taking the lock and
    /// spawning, so that the harness can find one there.
    SpawnWindow,
    /// Bash scripts hold the lock with `acquire --while $$` and run the
    /// section as their job ([`Mode::Kept`]).
    KeptByScripts,
    /// Bare sections without a lock: the checker must see them overlap.
    Unlocked,
    /// `exec --fence` on servers that keep their data across restarts: the
    /// sections' fencing tokens must increase strictly in entry order.
    Fenced,
    /// [`READERS`] clients run `exec --shared` (readers, sections of
    /// `Lengths::Reading`), the others plain `exec` (writers).
    Shared,
    /// Every client runs `exec --limit SLOTS` (`clients::SLOTS`).
    Semaphore,
    /// Each server a master with a replica behind a forwarder, the address
    /// the clients know ([`Fault::Failover`], failover.rs).
    BehindVips,
    /// Each server in its own network namespace ([`Fault::RollingCuts`],
    /// netns.rs); skipped where there are none, but in CI.
    Netns,
    /// [`Setup::Netns`], with clients that pause [`PACED_THINK`] between
    /// runs, as cron jobs and pipelines do: the lock is wanted most of the
    /// time, not always, so that a wait is not just the sections of the
    /// seven others in line.
    NetnsPaced,
    /// Every client runs `exec --once-per` [`ONCE_PERIOD`], pausing
    /// [`ONCE_THINK`] between runs: a period must run at most once
    /// (once.rs).
    OncePer,
    /// [`Setup::OncePer`] with no done mark written
    /// (`REDLOCK_TEST_SKIP_MARK_DONE`): the once judge's control, which
    /// must see a period run twice.
    OncePerUnmarked,
    /// [`Setup::OncePer`]'s clients on [`Setup::Netns`]'s servers: a period
    /// must run at most once while one or two servers are cut off.
    OncePerCuts,
    /// Every client runs `exec --cancel-in-progress --serial N`, N rising
    /// with every launch, pausing [`CANCEL_THINK`] between runs: each
    /// newer run cancels the holder and supersedes the waiters before it.
    CancelInProgress,
    /// [`Setup::CancelInProgress`] with holders that release the lock as
    /// soon as they are asked to stop, before their command has stopped
    /// (`REDLOCK_TEST_RELEASE_ON_CANCEL`): a control that must overlap.
    CancelReleasingEarly,
}

/// The period of [`Setup::OncePer`]: 2s, so that a short run sees five.
const ONCE_PERIOD: Duration = Duration::from_secs(2);

/// The pause of a client of [`Setup::OncePer`] between runs, in ms: most
/// runs skip at once, and clients that skip need not hammer the servers.
const ONCE_THINK: (u64, u64) = (100, 400);

/// The pause of a client of [`Setup::CancelInProgress`] between runs, in
/// ms: long enough that some runs end before a newer one cancels them.
const CANCEL_THINK: (u64, u64) = (200, 1500);

/// The pause of a client of [`Setup::NetnsPaced`] between its runs, in ms:
/// 5.5s on average, beside sections of 0.49s on average, so that eight
/// clients want the lock about 70 % of the time.
const PACED_THINK: (u64, u64) = (2000, 9000);

/// The readers of [`Setup::Shared`]: clients `0..READERS`; the other two
/// are writers.
const READERS: u32 = 6;

struct Scenario {
    name: &'static str,
    /// Seconds of clients running: in CI, and with `REDLOCK_TORTURE_LONG`.
    seconds: (u64, u64),
    faults: &'static [Fault],
    lengths: Lengths,
    /// `--ttl` of the clients (of the even ones under [`Setup::MixedTtls`]).
    ttl: Duration,
    /// The restart guard (and a wait for it after the servers start): at
    /// the TTL where restarts are the point, off elsewhere.
    guard: Guard,
    /// Sections ignore SIGTERM and end only at SIGKILL (see
    /// [`Plan::slow_stop`]).
    slow_stop: bool,
    setup: Setup,
    /// What the scenario must show beyond mutual exclusion.
    also: Also,
}

/// A restart of one server in a second (its pair restarts a majority).
const RESTART_NOW_MINORITY: Scenario = Scenario {
    name: "restart-now-minority",
    seconds: (20, 45),
    faults: &[Fault::RestartNow(1, 2)],
    lengths: Lengths::Spanning,
    ttl: RESTART_TTL,
    guard: Guard::Env(RESTART_TTL),
    slow_stop: true,
    setup: Setup::Plain,
    also: Also::Nothing,
};

/// Rolling network cuts with saturating clients (its pair: paced ones).
const ROLLING_CUTS: Scenario = Scenario {
    name: "rolling-cuts",
    seconds: (15, 40),
    faults: &[Fault::RollingCuts],
    lengths: Lengths::Bounded,
    ttl: TTL,
    guard: Guard::Off,
    slow_stop: false,
    setup: Setup::Netns,
    also: Also::CutBounds,
};

const SCENARIOS: [Scenario; 28] = [
    Scenario {
        name: "no-faults",
        seconds: (8, 30),
        faults: &[],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::Nothing,
    },
    Scenario {
        name: "kill-restart-minority",
        seconds: (12, 40),
        faults: &[Fault::KillRestart],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::Nothing,
    },
    // The guard at the TTL, the tightest it may be (see RESTART_TTL);
    // restarts late in a second, so that `uptime_in_seconds` ticks to 1 a
    // few milliseconds after the start; sections that take all the grace
    // period the stop plan gives them.
    RESTART_NOW_MINORITY,
    Scenario {
        name: "restart-now-majority",
        faults: &[Fault::RestartNow(3, 3)],
        ..RESTART_NOW_MINORITY
    },
    // Holders with a 4s lease beside callers of 1.5s: the guard must cover
    // the longest, so the fleet sets it in the config file.
    Scenario {
        name: "mixed-ttls",
        seconds: (15, 40),
        faults: &[Fault::RestartNow(1, 3)],
        lengths: Lengths::Spanning,
        ttl: TTL,
        guard: Guard::ConfigFile(LONG_TTL),
        slow_stop: true,
        setup: Setup::MixedTtls,
        also: Also::Nothing,
    },
    Scenario {
        name: "pause-minority",
        seconds: (10, 35),
        faults: &[Fault::PauseMinority],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::Nothing,
    },
    Scenario {
        name: "pause-majority",
        seconds: (10, 35),
        faults: &[Fault::PauseMajority],
        lengths: Lengths::WithOverruns,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::OverrunningLeader,
        also: Also::Nothing,
    },
    Scenario {
        name: "freeze-supervisor",
        seconds: (12, 40),
        faults: &[Fault::FreezeExec],
        lengths: Lengths::WithOverruns,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::OverrunningLeader,
        also: Also::Nothing,
    },
    Scenario {
        name: "freeze-before-spawn",
        seconds: (10, 30),
        faults: &[Fault::FreezeBeforeSpawn],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::SpawnWindow,
        also: Also::NoStartAfterFreeze,
    },
    Scenario {
        name: "kill-head-waiter",
        seconds: (15, 40),
        faults: &[Fault::KillHeadWaiter],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::BoundedIdle,
    },
    Scenario {
        name: "skewed-waiters",
        seconds: (12, 40),
        faults: &[],
        lengths: Lengths::Short,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::SkewedClocks,
        also: Also::FairShares,
    },
    Scenario {
        name: "hung-server-handoff",
        seconds: (12, 40),
        faults: &[Fault::HangOne],
        lengths: Lengths::Short,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::QuickHandoffs,
    },
    Scenario {
        name: "wall-clock-shift",
        seconds: (8, 30),
        faults: &[],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::ClockShift,
        also: Also::Nothing,
    },
    Scenario {
        name: "mixed",
        seconds: (15, 40),
        faults: &[
            Fault::KillRestart,
            Fault::PauseMinority,
            Fault::PauseMajority,
            Fault::FreezeExec,
        ],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::Plain,
        also: Also::Nothing,
    },
    // The README's script recipe (`acquire --while $$`, the section as its
    // job, which takes 300ms to stop after SIGTERM) under the faults a
    // keeper must survive: a majority restarted at once under the holder
    // (the keeper must signal the script early enough for its job to stop
    // before the guard lets anyone in; the script dies of that SIGTERM), a
    // majority paused, and scripts killed while they wait (their wait ends).
    Scenario {
        name: "kept-by-scripts",
        seconds: (20, 45),
        faults: &[
            Fault::RestartNow(2, 3),
            Fault::PauseMajority,
            Fault::KillHeadWaiter,
        ],
        lengths: Lengths::Spanning,
        ttl: RESTART_TTL,
        guard: Guard::Env(RESTART_TTL),
        slow_stop: false,
        setup: Setup::KeptByScripts,
        also: Also::Nothing,
    },
    // The same recipe, its keeper frozen (SIGSTOP) for longer than the TTL
    // at the start of a section that outlasts the lock: the keeper can
    // neither extend the lock nor tell the script, so its watchdog must
    // signal the script in time for its job to stop (300ms) before the
    // validity ends, while the keeper is still frozen. The script's EXIT
    // trap then asks the frozen keeper for the release.
    Scenario {
        name: "keeper-frozen",
        seconds: (10, 35),
        faults: &[Fault::FreezeKeeper],
        lengths: Lengths::Spanning,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::KeptByScripts,
        also: Also::StoppedWhileKeeperFrozen,
    },
    // Fencing tokens (`exec --fence`) on servers with AOF and `appendfsync
    // always`: a minority killed and restarted (counters kept), paused, and
    // holders frozen past their validity (stale tokens). Every section's
    // REDLOCK_FENCE must be above the one before it.
    Scenario {
        name: "fenced",
        seconds: (8, 45),
        faults: &[Fault::KillRestart, Fault::PauseMinority, Fault::FreezeExec],
        lengths: Lengths::Short,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::Fenced,
        also: Also::Nothing,
    },
    // Shared locks: six readers (`exec --shared`) and two writers on one
    // lock, a minority killed and restarted (its readers' set lost with
    // it), paused, and an `exec` frozen past its validity (a reader's too:
    // its section must end before a writer may enter). No reader may be
    // inside beside a writer, readers must be inside together, and the
    // writers must get in while readers keep arriving.
    Scenario {
        name: "shared",
        seconds: (8, 40),
        faults: &[Fault::KillRestart, Fault::PauseMinority, Fault::FreezeExec],
        lengths: Lengths::Short,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::Shared,
        also: Also::ReadersAndWriters,
    },
    // A counting semaphore (`exec --limit 3`) for all eight clients, a
    // minority killed and restarted and paused: never more than three
    // inside, three at times, and every client gets in.
    Scenario {
        name: "semaphore",
        seconds: (6, 30),
        faults: &[Fault::KillRestart, Fault::PauseMinority],
        lengths: Lengths::Short,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::Semaphore,
        also: Also::Slots,
    },
    // Issue 27: a majority fails over behind its addresses, at once, to
    // replicas that missed the last writes and have been up for longer
    // than the guard. Sections span several failovers.
    Scenario {
        name: "failover-behind-address",
        seconds: (16, 45),
        faults: &[Fault::Failover],
        lengths: Lengths::Bounded,
        ttl: RESTART_TTL,
        guard: Guard::Env(RESTART_TTL),
        slow_stop: false,
        setup: Setup::BehindVips,
        also: Also::Nothing,
    },
    // Issue 28: one or two of the five servers black-holed at a time in
    // their network namespaces, the cut moving every 0.5-2s, so that three
    // are always reachable. Availability, the longest free lock while a
    // live exec waits, and the median wait are its figures; its bounds are
    // off until the line is redesigned (checks::ENFORCE_CUT_BOUNDS).
    ROLLING_CUTS,
    // Issue 28: the same cuts, with clients that pause between runs. Its
    // median wait, against the same run with `--no-line`, is what the line
    // costs a caller; the saturated run above cannot show that (served in
    // order, every wait there is the sections of the others).
    Scenario {
        name: "rolling-cuts-paced",
        setup: Setup::NetnsPaced,
        ..ROLLING_CUTS
    },
    // Issue 31: `exec --once-per 2s`, a minority killed and restarted
    // (with the restart guard) and paused: every period runs at most once
    // unless a majority may have lost its mark (once.rs).
    Scenario {
        name: "once-per",
        seconds: (10, 40),
        faults: &[Fault::KillRestart, Fault::PauseMinority],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: false,
        setup: Setup::OncePer,
        also: Also::Nothing,
    },
    // Issue 31: `exec --cancel-in-progress --serial N` with N rising, a
    // minority killed and restarted and paused, sections that ignore the
    // stop signal until SIGKILL: a newer run stops the holder, and must
    // never be inside beside it.
    Scenario {
        name: "cancel-in-progress",
        seconds: (10, 40),
        faults: &[Fault::KillRestart, Fault::PauseMinority],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Env(TTL),
        slow_stop: true,
        setup: Setup::CancelInProgress,
        also: Also::Cancels,
    },
    // Issue 31: `exec --once-per 2s` under rolling-cuts' partitions, one
    // or two of five servers cut at a time: a mark on a majority is always
    // seen by the next run's majority, so no period may run twice.
    Scenario {
        name: "once-per-cuts",
        seconds: (8, 35),
        setup: Setup::OncePerCuts,
        also: Also::Nothing,
        ..ROLLING_CUTS
    },
    // The once judge's control: `--once-per` with no mark written must
    // show a period run twice.
    Scenario {
        name: "once-per-unmarked",
        seconds: (8, 20),
        faults: &[],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::OncePerUnmarked,
        also: Also::Nothing,
    },
    // The cancel scenario's control: holders that release as soon as they
    // are asked to stop, while their command still runs until its SIGKILL,
    // must let a newer run in beside them.
    Scenario {
        name: "cancel-in-progress-early-release",
        seconds: (8, 20),
        faults: &[],
        lengths: Lengths::Bounded,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: true,
        setup: Setup::CancelReleasingEarly,
        also: Also::Cancels,
    },
    Scenario {
        name: "checker-self-test",
        seconds: (6, 30),
        faults: &[],
        lengths: Lengths::Overlapping,
        ttl: TTL,
        guard: Guard::Off,
        slow_stop: false,
        setup: Setup::Unlocked,
        also: Also::Nothing,
    },
];

pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    names.extend([late::NAME, negative::GUARDED, negative::UNGUARDED]);
    names
}

/// Runs the scenarios `settings` asks for, one after another (they measure
/// timing, so they must not compete for the CPU), and reports each outcome
/// to `done` as it comes.
pub fn run(settings: &Settings, section: &Path, mut done: impl FnMut(&Outcome)) {
    for name in settings.only.iter().flatten() {
        assert!(
            names().contains(&name.as_str()),
            "REDLOCK_TORTURE_SCENARIO: no scenario {name:?}; there are {}",
            names().join(", ")
        );
    }
    for scenario in SCENARIOS.iter().filter(|s| settings.wants(s.name)) {
        done(&run_scenario(scenario, settings, section));
    }
    if settings.wants(late::NAME) {
        done(&late::run(settings));
    }
    for (name, guarded) in [(negative::GUARDED, true), (negative::UNGUARDED, false)] {
        if settings.wants(name) {
            done(&negative::run(name, guarded, settings, section));
        }
    }
}

fn run_scenario(scenario: &Scenario, settings: &Settings, section: &Path) -> Outcome {
    let mut rng = Rng::for_scenario(settings.seed, scenario.name);
    let shifts: &[(&str, i64)] = match scenario.setup {
        Setup::ClockShift => &[("+1h", 3600), ("-1h", -3600)],
        Setup::SkewedClocks => &[("-5s", -5), ("+5s", 5)],
        _ => &[],
    };
    let faketime = if shifts.is_empty() {
        None
    } else {
        match rig::faketime_library().and_then(|lib| check_shift(&lib, shifts)) {
            Ok(lib) => Some(lib),
            Err(why) => return Outcome::unrunnable(scenario.name, settings.seed, why),
        }
    };
    let fenced = scenario.setup == Setup::Fenced;
    let mut rig = match scenario.setup {
        Setup::BehindVips => Rig::start_behind_vips(section, scenario.guard),
        Setup::Netns | Setup::NetnsPaced | Setup::OncePerCuts => {
            match Netns::start(settings.cuts, settings.no_line) {
                Ok(netns) => Rig::start_in_netns(section, scenario.guard, netns),
                Err(Unavailable::Missing(why)) => {
                    return Outcome::skipped(scenario.name, settings.seed, &why, settings.ci)
                }
                Err(Unavailable::WrongCut(why)) => {
                    return Outcome::unrunnable(scenario.name, settings.seed, why)
                }
            }
        }
        _ => Rig::start_with(section, scenario.guard, faketime, fenced),
    };
    let slots = Slots::new(CLIENTS);
    let seconds = match settings.seconds {
        Some(seconds) => seconds,
        None if settings.long => scenario.seconds.1,
        None => scenario.seconds.0,
    };
    let plans = plans(scenario, &mut rng);
    let periods = Periods::now(ONCE_PERIOD);
    let start = now_ns();
    let until = Instant::now() + Duration::from_secs(seconds);
    thread::scope(|scope| {
        let mut clients = Vec::new();
        for plan in plans {
            let (ctx, slots) = (&rig.ctx, &slots);
            let leader = plan.client == 0 && scenario.setup == Setup::OverrunningLeader;
            clients.push(scope.spawn(move || client_loop(ctx, slots, plan, until)));
            if leader {
                // The leader's first exec takes the lock before anyone competes.
                let held = || {
                    rig.cluster
                        .get_all(LOCK.as_bytes())
                        .iter()
                        .flatten()
                        .count()
                };
                wait_until(Duration::from_secs(10), || held() > SERVERS / 2);
            }
        }
        let mut targets = Targets {
            cluster: &mut rig.cluster,
            vips: rig.vips.as_mut(),
            netns: rig.netns.as_mut(),
            history: &rig.ctx.history,
            slots: &slots,
            witness: &rig.witness,
            overruns: matches!(scenario.lengths, Lengths::WithOverruns),
        };
        faults::inject(scenario.faults, &mut rng, until, &mut targets);
        for client in clients {
            client.join().expect("a client thread panicked");
        }
    });
    let case = Case {
        scenario: scenario.name,
        clients: CLIENTS,
        seed: settings.seed,
        expect: match scenario.setup {
            Setup::Unlocked | Setup::CancelReleasingEarly => Expect::Overlap,
            _ => Expect::Safe,
        },
        window: (start, now_ns()),
    };
    let (setup, also) = (scenario.setup, scenario.also);
    let unmarked = once::unmarked_in(&rig.ctx.logs);
    judge(&case, rig, |parsed, analysis: &Analysis, books| {
        let mut findings = also.check(parsed, analysis, books, CLIENTS);
        findings.problems.extend(setup_problems(setup, parsed));
        if setup == Setup::Fenced {
            findings
                .problems
                .extend(checks::fence_problems(parsed, analysis.window));
        }
        if once_per(setup).is_some() {
            let (window, control) = (analysis.window, setup == Setup::OncePerUnmarked);
            let more = once::findings(parsed, &periods, window, unmarked, control);
            findings.figures.extend(more.figures);
            findings.problems.extend(more.problems);
        }
        findings
    })
}

/// `--once-per` of the clients of `setup`.
fn once_per(setup: Setup) -> Option<Duration> {
    let once = [Setup::OncePer, Setup::OncePerUnmarked, Setup::OncePerCuts];
    once.contains(&setup).then_some(ONCE_PERIOD)
}

/// The test hook that defeats the clients of a control on purpose.
fn hook(setup: Setup) -> Option<&'static str> {
    match setup {
        Setup::OncePerUnmarked => Some("REDLOCK_TEST_SKIP_MARK_DONE"),
        Setup::CancelReleasingEarly => Some("REDLOCK_TEST_RELEASE_ON_CANCEL"),
        _ => None,
    }
}

fn plans(scenario: &Scenario, rng: &mut Rng) -> Vec<Plan> {
    (0..CLIENTS as u32)
        .map(|client| {
            let setup = scenario.setup;
            let leads = client == 0 && setup == Setup::OverrunningLeader;
            Plan {
                client,
                rng: rng.split(),
                lengths: match setup {
                    Setup::Shared if client < READERS => Lengths::Reading,
                    _ => scenario.lengths,
                },
                mode: match setup {
                    Setup::Unlocked => Mode::Unlocked,
                    Setup::KeptByScripts => Mode::Kept,
                    Setup::Shared if client < READERS => Mode::Shared,
                    Setup::Semaphore => Mode::Slot,
                    Setup::CancelInProgress | Setup::CancelReleasingEarly => Mode::Cancellable,
                    _ => Mode::Locked,
                },
                ttl: match setup {
                    Setup::MixedTtls if client % 2 == 1 => LONG_TTL,
                    _ => scenario.ttl,
                },
                clock_shift: match setup {
                    Setup::ClockShift if client % 2 == 0 => Some("+1h"),
                    Setup::ClockShift => Some("-1h"),
                    Setup::SkewedClocks if client == 0 => Some("-5s"),
                    Setup::SkewedClocks if client == 1 => Some("+5s"),
                    _ => None,
                },
                first_section: match setup {
                    // Still more than a TTL to go when the first fault comes.
                    Setup::OverrunningLeader if leads => Some(Duration::from_millis(3000)),
                    // All inside at once from the start: an overlap for sure.
                    Setup::Unlocked => Some(Duration::from_millis(1000)),
                    _ => None,
                },
                spawn_pause: (setup == Setup::SpawnWindow).then_some(SPAWN_WINDOW),
                think: match setup {
                    Setup::NetnsPaced => Some(PACED_THINK),
                    _ if once_per(setup).is_some() => Some(ONCE_THINK),
                    Setup::CancelInProgress | Setup::CancelReleasingEarly => Some(CANCEL_THINK),
                    _ => None,
                },
                once: once_per(setup),
                hook: hook(setup),
                slow_stop: scenario.slow_stop,
            }
        })
        .collect()
}

/// What a scenario's own setup must show, beyond mutual exclusion.
fn setup_problems(setup: Setup, parsed: &Parsed) -> Vec<String> {
    let mut problems = checks::lost_problems(parsed);
    if setup == Setup::OverrunningLeader && parsed.must_lose().is_empty() {
        problems.push("no fault hit a section with more than a TTL to go".to_string());
    }
    problems
}

/// Checks that libfaketime shifts the wall clock by each of `shifts`
/// (`FAKETIME`, seconds) as the scenario needs, with `date`, and passes the
/// library on.
fn check_shift(library: &Path, shifts: &[(&str, i64)]) -> Result<std::path::PathBuf, String> {
    for &(shift, seconds) in shifts {
        let mut date = Command::new("date");
        date.arg("+%s");
        clients::with_clock_shift(&mut date, library, shift);
        let out = date
            .output()
            .map_err(|e| format!("cannot run date under libfaketime: {e}"))?;
        let shifted: i64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| format!("date under libfaketime printed {:?}", out.stdout))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        // date read the clock a moment before we did, and whole seconds.
        let moved = shifted - now.as_secs() as i64;
        if (moved - seconds).abs() > 2 {
            return Err(format!(
                "FAKETIME={shift} moved the wall clock by {moved}s instead of {seconds}s"
            ));
        }
    }
    Ok(library.to_owned())
}
