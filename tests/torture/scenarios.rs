//! The scenarios of issue 9, how long each runs, and what each must show.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::checker::{Analysis, Expect, Parsed};
use crate::clients::{self, client_loop, Lengths, Plan, Slots, PAUSE_BEFORE_SPAWN, TTL};
use crate::faults::{self, Fault, Targets};
use crate::history::{now_ns, Mode};
use crate::judge::{judge, Case, Outcome};
use crate::negative;
use crate::rig::{self, Rig, LOCK, SERVERS};
use crate::rng::Rng;
use crate::settings::Settings;
use crate::support::wait_until;

/// Concurrent clients of every scenario but the negative control.
pub const CLIENTS: usize = 8;

/// How the clients of a scenario are set up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    Plain,
    /// Client 0 starts alone with a section far longer than the TTL: the
    /// first fault surely finds a section that it must cut short.
    OverrunningLeader,
    /// Client 0 starts alone, and every `exec` of it sleeps longer than the
    /// TTL between taking the lock and spawning: at least one takes it.
    PausingLeader,
    /// The clients' wall clocks run 1h ahead (even clients) or behind (odd).
    ClockShift,
    /// Bare sections without a lock: the checker must see them overlap.
    Unlocked,
}

struct Scenario {
    name: &'static str,
    /// Seconds of clients running: in CI, and with `REDLOCK_TORTURE_LONG`.
    seconds: (u64, u64),
    faults: &'static [Fault],
    lengths: Lengths,
    /// The restart guard at the TTL (and a wait for it after the servers
    /// start), where restarts are the point; off elsewhere.
    guard: bool,
    setup: Setup,
}

const SCENARIOS: [Scenario; 9] = [
    Scenario {
        name: "no-faults",
        seconds: (8, 30),
        faults: &[],
        lengths: Lengths::Bounded,
        guard: false,
        setup: Setup::Plain,
    },
    Scenario {
        name: "kill-restart-minority",
        seconds: (12, 40),
        faults: &[Fault::KillRestart],
        lengths: Lengths::Bounded,
        guard: true,
        setup: Setup::Plain,
    },
    Scenario {
        name: "pause-minority",
        seconds: (10, 35),
        faults: &[Fault::PauseMinority],
        lengths: Lengths::Bounded,
        guard: false,
        setup: Setup::Plain,
    },
    Scenario {
        name: "pause-majority",
        seconds: (10, 35),
        faults: &[Fault::PauseMajority],
        lengths: Lengths::WithOverruns,
        guard: false,
        setup: Setup::OverrunningLeader,
    },
    Scenario {
        name: "freeze-supervisor",
        seconds: (12, 40),
        faults: &[Fault::FreezeExec],
        lengths: Lengths::WithOverruns,
        guard: false,
        setup: Setup::OverrunningLeader,
    },
    Scenario {
        name: "freeze-before-spawn",
        seconds: (8, 30),
        faults: &[],
        lengths: Lengths::Bounded,
        guard: false,
        setup: Setup::PausingLeader,
    },
    Scenario {
        name: "wall-clock-shift",
        seconds: (8, 30),
        faults: &[],
        lengths: Lengths::Bounded,
        guard: false,
        setup: Setup::ClockShift,
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
        guard: true,
        setup: Setup::Plain,
    },
    Scenario {
        name: "checker-self-test",
        seconds: (6, 30),
        faults: &[],
        lengths: Lengths::Overlapping,
        guard: false,
        setup: Setup::Unlocked,
    },
];

pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    names.extend([negative::GUARDED, negative::UNGUARDED]);
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
    for (name, guarded) in [(negative::GUARDED, true), (negative::UNGUARDED, false)] {
        if settings.wants(name) {
            done(&negative::run(name, guarded, settings, section));
        }
    }
}

fn run_scenario(scenario: &Scenario, settings: &Settings, section: &Path) -> Outcome {
    let mut rng = Rng::for_scenario(settings.seed, scenario.name);
    let faketime = match scenario.setup {
        Setup::ClockShift => match rig::faketime_library().and_then(|lib| check_shift(&lib)) {
            Ok(lib) => Some(lib),
            Err(why) => return Outcome::unrunnable(scenario.name, settings.seed, why),
        },
        _ => None,
    };
    let guard = if scenario.guard { TTL } else { Duration::ZERO };
    let mut rig = Rig::start(section, guard, faketime);
    let slots = Slots::new(CLIENTS);
    let seconds = if settings.long {
        scenario.seconds.1
    } else {
        scenario.seconds.0
    };
    let plans = plans(scenario, &mut rng);
    let start = now_ns();
    let until = Instant::now() + Duration::from_secs(seconds);
    thread::scope(|scope| {
        let mut clients = Vec::new();
        for plan in plans {
            let (ctx, slots) = (&rig.ctx, &slots);
            let leader = plan.client == 0 && has_leader(scenario.setup);
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
            Setup::Unlocked => Expect::Overlap,
            _ => Expect::Safe,
        },
        window: (start, now_ns()),
    };
    let setup = scenario.setup;
    judge(&case, rig, |parsed, _: &Analysis| {
        setup_problems(setup, parsed)
    })
}

fn has_leader(setup: Setup) -> bool {
    matches!(setup, Setup::OverrunningLeader | Setup::PausingLeader)
}

fn plans(scenario: &Scenario, rng: &mut Rng) -> Vec<Plan> {
    (0..CLIENTS as u32)
        .map(|client| {
            let setup = scenario.setup;
            let leads = client == 0 && has_leader(setup);
            Plan {
                client,
                rng: rng.split(),
                lengths: scenario.lengths,
                mode: match setup {
                    Setup::Unlocked => Mode::Unlocked,
                    Setup::PausingLeader if leads => Mode::PausedBeforeSpawn,
                    _ => Mode::Locked,
                },
                clock_shift: match setup {
                    Setup::ClockShift if client % 2 == 0 => Some("+1h"),
                    Setup::ClockShift => Some("-1h"),
                    _ => None,
                },
                first_section: match setup {
                    // Still more than a TTL to go when the first fault comes.
                    Setup::OverrunningLeader if leads => Some(Duration::from_millis(3000)),
                    // All inside at once from the start: an overlap for sure.
                    Setup::Unlocked => Some(Duration::from_millis(1000)),
                    _ => None,
                },
            }
        })
        .collect()
}

/// What a scenario's own setup must show, beyond mutual exclusion.
fn setup_problems(setup: Setup, parsed: &Parsed) -> Vec<String> {
    let mut problems = lost_problems(parsed);
    if setup == Setup::OverrunningLeader && parsed.must_lose().is_empty() {
        problems.push("no fault hit a section with more than a TTL to go".to_string());
    }
    if setup == Setup::PausingLeader {
        problems.extend(paused_problems(parsed));
    }
    problems
}

/// Every `exec` frozen, or under paused servers, with more than a TTL of its
/// section to go must have lost its lock and stopped the section: exit 79.
fn lost_problems(parsed: &Parsed) -> Vec<String> {
    parsed
        .must_lose()
        .into_iter()
        .filter_map(|id| {
            let status = parsed.runs.get(&id).and_then(|run| run.status());
            (status != Some(79)).then(|| {
                format!(
                    "exec {}/{} was cut off past its lock's validity but exited {status:?}, not 79",
                    id.0, id.1
                )
            })
        })
        .collect()
}

/// An `exec` that slept longer than the TTL between taking the lock and
/// spawning must not start its section, and must exit 79.
fn paused_problems(parsed: &Parsed) -> Vec<String> {
    let paused: Vec<_> = parsed
        .runs
        .iter()
        .filter(|(_, run)| run.mode == Some(Mode::PausedBeforeSpawn))
        .collect();
    let started: Vec<String> = paused
        .iter()
        .filter(|(_, run)| run.enter.is_some())
        .map(|((client, seq), run)| format!("{client}/{seq} (exit {:?})", run.status()))
        .collect();
    let mut problems = Vec::new();
    if !started.is_empty() {
        problems.push(format!(
            "{} exec(s) paused {}ms (> TTL {}ms) between taking the lock and spawning still \
             started their section: {}. Does this redlock read REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS?",
            started.len(),
            PAUSE_BEFORE_SPAWN.as_millis(),
            TTL.as_millis(),
            started.join(", ")
        ));
    }
    let statuses: Vec<Option<i32>> = paused.iter().map(|(_, run)| run.status()).collect();
    if !statuses.contains(&Some(79)) {
        problems.push(format!(
            "no paused exec exited 79 (statuses {statuses:?}): none was shown to lose its lock"
        ));
    }
    problems
}

/// Checks that libfaketime shifts the wall clock as the scenario needs,
/// with `date`, and passes the library on.
fn check_shift(library: &Path) -> Result<std::path::PathBuf, String> {
    for (shift, hours) in [("+1h", 1), ("-1h", -1)] {
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
        let off_by = shifted - now.as_secs() as i64 - hours * 3600;
        if off_by.abs() > 60 {
            return Err(format!(
                "FAKETIME={shift} moved the wall clock by {}s instead of {}s",
                shifted - now.as_secs() as i64,
                hours * 3600
            ));
        }
    }
    Ok(library.to_owned())
}
