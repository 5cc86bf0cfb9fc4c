//! The torture harness (issue 9): fault injection against real servers, with
//! a checker of mutual exclusion, and bounds on liveness and fairness.
//!
//! Eight clients run `redlock exec torture -- torture-section ...` in loops
//! against one lock with a 1.5s TTL, on five in-memory `redis-server`s,
//! while faults are injected: servers killed and restarted empty (also just
//! before the wall clock's second ticks over), servers paused or hung,
//! `redlock exec` itself frozen (also between taking the lock and spawning)
//! or killed while it waits in line, the keeper of a script's
//! `acquire --while` frozen, the wall clock shifted. Every section
//! writes when it entered and left into one history, on the machine-wide
//! CLOCK_MONOTONIC, and keeps count on a sixth server that is never faulted.
//! The checker then looks for two sections inside at once, and prints one
//! line per scenario:
//!
//! ```text
//! scenario=NAME clients=8 sections=N overlaps=N max_overlap_ms=F occupancy_max=N lost_updates=N
//!   exits=0:N,75:N,79:N,... availability=P% longest_gap_ms=F faults=N [FIGURES] seed=S
//! ```
//!
//! where FIGURES are a scenario's own (`free_while_waiting_ms`, `shares`,
//! `handoff_ms`, `frozen_before_spawn`, `readers_max`, `writer_wait_ms`,
//! `holders_max`, `keepers_frozen`, `median_wait_ms`, `mean_wait_ms`, `cuts`,
//! `cut`, `bounds`, `held_while_wanted`, `late_keys`, `runs_per_period`,
//! `doubles`, `excused`, `cancelled`, ...),
//! checked against its bounds (see `torture/checks.rs`).
//!
//! `rolling-cuts` (issue 28) puts each of the five servers in its own
//! network namespace and black-holes one or two at a time (`torture/netns.rs`).
//! It needs root: without, it says why and is skipped, unless `CI=true`,
//! where that is a failure. Its liveness bounds are reported
//! (`bounds=met|missed`) and fail it where `checks::ENFORCE_CUT_BOUNDS` says
//! (the gap does, availability does not); overlaps always do.
//!
//! Two scenarios share the lock on purpose. In `shared`, six clients run
//! `exec --shared` (readers) and two plain `exec` (writers): readers may be
//! inside together, and must be at some point; a reader beside a writer is
//! an overlap; and writers must get in within a bound while readers keep
//! arriving. In `semaphore`, all eight run `exec --limit 3`: never more than
//! three inside, three at some point. Their sections say `sharing`, count
//! themselves in a set of their own on the bookkeeping server, and leave
//! the read-modify-write counter to the exclusive ones.
//!
//! In CI each scenario runs for 6-20s; `scripts/torture --long` soaks each
//! for 30-45s. The settings come from the environment:
//! `REDLOCK_TORTURE_LONG=1`, `REDLOCK_TORTURE_SEED=N` (replays the random
//! choices of a printed seed), `REDLOCK_TORTURE_SCENARIO=NAME[,NAME...]`,
//! `REDLOCK_TORTURE_BIN=PATH` (the `redlock` the clients run, e.g. an older
//! build; the section program stays the one built here),
//! `REDLOCK_TORTURE_NO_LINE=1` (in `rolling-cuts`, clients without the
//! sorted-set commands: no line of waiters), `REDLOCK_TORTURE_CUTS=unreachable`
//! (in `rolling-cuts`, connects to a cut server fail at once instead of
//! hanging).
//!
//! Three scenarios come from issue 31. In `once-per`, the clients run
//! `exec --once-per 2s` while a minority is killed and restarted (with the
//! restart guard) or paused: no period may run twice unless a majority may
//! have lost its done mark (`torture/once.rs`; `runs_per_period`,
//! `doubles`, `excused`, `skips`). In `cancel-in-progress`, they run
//! `exec --cancel-in-progress --serial N` with N rising at every launch, and
//! sections that ignore the stop signal until SIGKILL: never two holders,
//! and holders cancelled (`cancelled`, exit 81). `once-per-cuts` runs
//! `once-per`'s clients and judge on `rolling-cuts`' namespaces, one or two
//! servers cut off at a time.
//!
//! Four scenarios are controls: `checker-self-test` runs the sections without
//! any lock, and `negative-control-guard-off` defeats Redlock on purpose by
//! restarting a majority of the servers under a holder. In both the checker
//! must report an overlap, or it is not to be trusted. `once-per-unmarked`
//! runs `once-per`'s clients with no done mark written
//! (`REDLOCK_TEST_SKIP_MARK_DONE`): its judge must see a period run twice.
//! `cancel-in-progress-early-release` runs `cancel-in-progress`'s clients
//! with holders that release as soon as they are asked to stop, while their
//! command runs on until SIGKILL (`REDLOCK_TEST_RELEASE_ON_CANCEL`): the
//! checker must see the newer run inside beside it.

// The fixture is shared with tests/cli, and this target uses only part of
// it (no TLS, no fake server, no output assertions). Dead code is judged per
// target, so the rest would warn here.
#[allow(dead_code)]
#[path = "support/mod.rs"]
mod support;

#[path = "torture/checker.rs"]
mod checker;
#[path = "torture/checks.rs"]
mod checks;
#[path = "torture/clients.rs"]
mod clients;
#[path = "torture/failover.rs"]
mod failover;
#[path = "torture/faults.rs"]
mod faults;
#[path = "torture/history.rs"]
mod history;
#[path = "torture/judge.rs"]
mod judge;
#[path = "torture/late.rs"]
mod late;
#[path = "torture/negative.rs"]
mod negative;
#[path = "torture/netns.rs"]
mod netns;
#[path = "torture/once.rs"]
mod once;
#[path = "torture/rig.rs"]
mod rig;
#[path = "torture/rng.rs"]
mod rng;
#[path = "torture/scenarios.rs"]
mod scenarios;
#[path = "torture/settings.rs"]
mod settings;
#[path = "torture/witness.rs"]
mod witness;

use std::time::Instant;

/// Every scenario in one test, one after another: they measure timing and
/// must not compete for the CPU with each other. A failed scenario does not
/// stop the others; the test fails at the end with all their reasons.
#[test]
fn torture() {
    let settings = settings::Settings::from_env();
    let section = rig::section_program();
    eprintln!(
        "torture: seed={} (replay with REDLOCK_TORTURE_SEED={}), {} run of {}",
        settings.seed,
        settings.seed,
        if settings.long { "long" } else { "short" },
        rig::redlock_binary().display()
    );
    let started = Instant::now();
    let mut failures = Vec::new();
    // The lines also go to a report that scripts/test prints, so that CI
    // shows them although cargo test keeps a passing test's output.
    let report_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("torture-report.txt");
    let mut report = Vec::new();
    scenarios::run(&settings, &section, |outcome| {
        println!("{}", outcome.line);
        report.push(outcome.line.clone());
        if !outcome.problems.is_empty() {
            failures.push(format!(
                "{}\n  - {}",
                outcome.line,
                outcome.problems.join("\n  - ")
            ));
        }
    });
    println!("torture: done in {:.1}s", started.elapsed().as_secs_f64());
    report.push(format!(
        "torture: done in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    let _ = std::fs::write(&report_path, report.join("\n") + "\n");
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
