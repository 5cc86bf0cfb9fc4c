//! The judge of `exec --once-per` (issue 31): no period run twice.
//!
//! `exec --once-per DUR` fixes its run's period before its first attempt,
//! on the median of the servers' `TIME` (src/lock/once.rs): `floor(ms /
//! DUR)`, the periods aligned to the Unix epoch. The lock servers all run
//! on this machine, so their clock is its wall clock, read between the
//! client's `start` and the section's `enter`. A run's period is therefore
//! one of those of its `start` and its `enter` (the history's stamps on
//! CLOCK_MONOTONIC, turned into wall time by [`Periods`]): one, unless the
//! run crossed a period's edge while it waited.
//!
//! A successful run entered, left its section at its end (`exit`) and
//! returned 0; a skip returned 0 without entering. The judge gives each
//! successful run a period of its own within its range (the earliest
//! deadline first, which finds such a choice whenever there is one); a run
//! that finds none is a period run twice (`runs_per_period` counts a run
//! that may belong to two periods in the earlier one it was given, so a
//! period that shows 0 beside one that shows 1 may be the same run's
//! neighbour). That is allowed only where a
//! majority of the servers may have lost the mark (see docs/safety.md,
//! "Once per period"): where three servers were killed or paused from
//! shortly before the period began until the second run entered. A run
//! whose `exec` said its mark reached no majority does not count either
//! (`unmarked`, from the client logs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::checker::{Parsed, Run, RunId};
use crate::history::now_ns;
use crate::judge::Findings;
use crate::rig::SERVERS;

/// `exec`'s warning when a mark reached no majority (output/said.rs).
const UNMARKED: &str = "this run does not count, and the next may run it again";

/// How long before a period began a fault may have kept the mark off a
/// server: a kill is restarted within 0.5s, a pause lasts at most 2.5s.
const FAULT_REACH: Duration = Duration::from_secs(3);

/// The fewest periods a run must see (the scenario runs for several).
const LEAST_PERIODS: usize = 3;

/// Periods of `period` on the wall clock, for stamps on CLOCK_MONOTONIC.
#[derive(Clone, Copy)]
pub struct Periods {
    period_ns: u64,
    /// Wall clock minus CLOCK_MONOTONIC, in ns.
    offset_ns: i128,
}

impl Periods {
    /// Periods of `period`, with the clocks' offset read now.
    pub fn now(period: Duration) -> Periods {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the wall clock is past 1970")
            .as_nanos() as i128;
        Periods {
            period_ns: period.as_nanos() as u64,
            offset_ns: wall - now_ns() as i128,
        }
    }

    /// The period of a CLOCK_MONOTONIC stamp.
    pub fn of(&self, monotonic: u64) -> u64 {
        ((monotonic as i128 + self.offset_ns) as u64) / self.period_ns
    }

    /// When `period` began, on CLOCK_MONOTONIC.
    fn start(&self, period: u64) -> u64 {
        (period as i128 * self.period_ns as i128 - self.offset_ns).max(0) as u64
    }
}

/// How many times the client logs in `logs` say a mark reached no
/// majority.
pub fn unmarked_in(logs: &Path) -> usize {
    let entries = std::fs::read_dir(logs).into_iter().flatten().flatten();
    entries
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("client-"))
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .map(|text| text.matches(UNMARKED).count())
        .sum()
}

/// A successful run: its id, the range of periods it may have run for,
/// and when it entered.
struct Success {
    id: RunId,
    periods: (u64, u64),
    enter: u64,
}

fn succeeded(run: &Run) -> bool {
    run.enter.is_some() && run.exit.is_some() && run.status() == Some(0)
}

/// The figures and problems of a `--once-per` scenario: `control` (no
/// marks written) must show a period run twice, any other must not.
pub fn findings(
    parsed: &Parsed,
    periods: &Periods,
    window: (u64, u64),
    unmarked: usize,
    control: bool,
) -> Findings {
    let mut runs: Vec<Success> = (parsed.runs.iter())
        .filter(|(_, run)| succeeded(run))
        .filter_map(|(&id, run)| {
            let enter = run.enter?;
            let from = periods.of(run.start?);
            Some(Success {
                id,
                periods: (from, periods.of(enter).max(from)),
                enter,
            })
        })
        .collect();
    runs.sort_by_key(|run| (run.periods.1, run.periods.0, run.enter));
    let (per_period, doubles) = assign(&runs);
    // Each double with the servers that may have lost its period's mark.
    let (excused, unexcused): (Vec<_>, Vec<_>) = (doubles.into_iter())
        .map(|run| (run, faulted_servers(parsed, periods, run)))
        .partition(|(_, faulted)| faulted.len() > SERVERS / 2);
    let skips = (parsed.runs.values())
        .filter(|run| run.enter.is_none() && run.status() == Some(0))
        .count();
    let counts: Vec<String> = (periods.of(window.0)..=periods.of(window.1))
        .map(|p| per_period.get(&p).copied().unwrap_or(0).to_string())
        .collect();
    let figures = vec![
        format!("period_ms={}", periods.period_ns / 1_000_000),
        format!("runs_per_period={}", counts.join(",")),
        format!("doubles={}", excused.len() + unexcused.len()),
        format!("excused={}", excused.len()),
        format!("unmarked={unmarked}"),
        format!("skips={skips}"),
    ];
    let mut problems = Vec::new();
    if control {
        if excused.is_empty() && unexcused.is_empty() {
            problems.push(
                "no period ran twice without the done mark: the once-per judge is not to be \
                 trusted"
                    .to_string(),
            );
        }
        return Findings { figures, problems };
    }
    if unexcused.len() > unmarked {
        problems.extend(unexcused.iter().map(|(run, faulted)| {
            format!(
                "run {}/{} succeeded in period {}..={} after another run of it, with only \
                 servers {faulted:?} faulted: the period ran twice",
                run.id.0, run.id.1, run.periods.0, run.periods.1,
            )
        }));
    }
    if per_period.len() < LEAST_PERIODS {
        problems.push(format!(
            "runs in only {} period(s), fewer than {LEAST_PERIODS}: too few to judge",
            per_period.len()
        ));
    }
    Findings { figures, problems }
}

/// Gives each run (sorted by the end of its range) the earliest period of
/// its range that no run took yet: the runs in each period, and the runs
/// that found none (doubles).
fn assign(runs: &[Success]) -> (BTreeMap<u64, usize>, Vec<&Success>) {
    let mut taken = BTreeSet::new();
    let mut per_period = BTreeMap::new();
    let mut doubles = Vec::new();
    for run in runs {
        let (from, to) = run.periods;
        match (from..=to).find(|p| !taken.contains(p)) {
            Some(p) => {
                taken.insert(p);
                *per_period.entry(p).or_insert(0) += 1;
            }
            None => {
                *per_period.entry(to).or_insert(0) += 1;
                doubles.push(run);
            }
        }
    }
    (per_period, doubles)
}

/// The servers killed or paused from [`FAULT_REACH`] before the first
/// period `run` may have run for, until it entered: those that may have
/// missed, or lost, the mark of an earlier run of that period.
fn faulted_servers(parsed: &Parsed, periods: &Periods, run: &Success) -> BTreeSet<usize> {
    let from = periods
        .start(run.periods.0)
        .saturating_sub(FAULT_REACH.as_nanos() as u64);
    (parsed.faults.iter())
        .filter(|fault| (from..=run.enter).contains(&fault.at))
        .filter_map(|fault| match &fault.what[..] {
            [kind, servers, ..] if kind == "kill-server" || kind == "pause-servers" => Some(
                servers
                    .split(',')
                    .filter_map(|s| s.parse().ok())
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// Periods of 2s with CLOCK_MONOTONIC equal to the wall clock.
    fn periods() -> Periods {
        Periods {
            period_ns: 2 * SECOND,
            offset_ns: 0,
        }
    }

    /// A run of `client` launched at `start` and entering at `enter` (in
    /// seconds), that ends as `status` says (`None`: skipped, 0).
    fn history(runs: &[(u32, f64, Option<f64>)], faults: &[&str]) -> Parsed {
        let ns = |s: f64| (s * SECOND as f64) as u64;
        let mut lines = Vec::new();
        for &(client, start, enter) in runs {
            lines.push(format!("start {client} 1 {} locked", ns(start)));
            if let Some(enter) = enter {
                lines.push(format!("enter {client} 1 {}", ns(enter)));
                lines.push(format!("exit {client} 1 {}", ns(enter) + 1000));
            }
            lines.push(format!("return {client} 1 {} 0", ns(start + 0.9)));
        }
        lines.extend(faults.iter().map(|f| f.to_string()));
        Parsed::parse(&(lines.join("\n") + "\n")).unwrap()
    }

    fn judged(parsed: &Parsed, control: bool) -> Findings {
        findings(parsed, &periods(), (0, 8 * SECOND), 0, control)
    }

    #[test]
    fn one_run_per_period_passes_and_is_counted() {
        let parsed = history(
            &[
                (0, 0.1, Some(0.2)),
                (1, 0.3, None),
                (2, 2.1, Some(2.2)),
                (3, 4.5, Some(4.6)),
            ],
            &[],
        );
        let found = judged(&parsed, false);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        assert!(found
            .figures
            .contains(&"runs_per_period=1,1,1,0,0".to_string()));
        assert!(found.figures.contains(&"skips=1".to_string()));
    }

    #[test]
    fn a_run_that_waited_across_an_edge_may_take_either_period() {
        // 1 started in period 0 and entered in period 1; 2 ran in period 1.
        let parsed = history(
            &[
                (0, 0.1, Some(0.2)),
                (1, 1.9, Some(2.1)),
                (2, 2.5, Some(2.6)),
                (3, 4.2, Some(4.3)),
            ],
            &[],
        );
        let found = judged(&parsed, false);
        assert!(
            found.figures.contains(&"doubles=1".to_string()),
            "{:?}",
            found.figures
        );
        let found_without = judged(
            &history(
                &[
                    (0, 0.1, Some(0.2)),
                    (1, 1.9, Some(2.1)),
                    (2, 4.2, Some(4.3)),
                ],
                &[],
            ),
            false,
        );
        assert!(
            found_without.problems.is_empty(),
            "{:?}",
            found_without.problems
        );
    }

    #[test]
    fn two_runs_in_one_period_fail_unless_a_majority_was_faulted() {
        let runs = [
            (0, 0.1, Some(0.2)),
            (1, 1.0, Some(1.1)),
            (2, 2.1, Some(2.2)),
            (3, 4.1, Some(4.2)),
        ];
        let found = judged(&history(&runs, &["fault 500000000 kill-server 1"]), false);
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(
            found.problems[0].contains("run 1/1"),
            "{:?}",
            found.problems
        );
        let faults = [
            "fault 300000000 kill-server 1",
            "fault 600000000 pause-servers 2,4",
        ];
        let found = judged(&history(&runs, &faults), false);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        assert!(found.figures.contains(&"excused=1".to_string()));
    }

    #[test]
    fn the_control_fails_without_a_double_run() {
        let runs = [
            (0, 0.1, Some(0.2)),
            (1, 2.1, Some(2.2)),
            (2, 4.1, Some(4.2)),
        ];
        assert_eq!(judged(&history(&runs, &[]), true).problems.len(), 1);
        let doubled = [(0, 0.1, Some(0.2)), (1, 0.5, Some(0.6))];
        assert!(judged(&history(&doubled, &[]), true).problems.is_empty());
    }
}
