//! Turns what a scenario left behind into its line and its verdict.

use crate::checker::{Analysis, Expect, Parsed, Report};
use crate::rig::{Bookkeeping, Rig};

/// The result of one scenario: its line, and why it failed (empty: passed).
pub struct Outcome {
    pub line: String,
    pub problems: Vec<String>,
}

impl Outcome {
    /// A scenario that could not run at all.
    pub fn unrunnable(scenario: &str, seed: u64, why: String) -> Outcome {
        Outcome {
            line: format!("scenario={scenario} not run seed={seed}"),
            problems: vec![why],
        }
    }

    /// A scenario this machine lacks the means for (`why`): skipped, but in
    /// CI (`ci`), where it must run, a failure.
    pub fn skipped(scenario: &str, seed: u64, why: &str, ci: bool) -> Outcome {
        Outcome {
            line: format!("scenario={scenario} skipped ({why}) seed={seed}"),
            problems: match ci {
                true => vec![format!(
                    "{scenario} must run in CI (CI=true), but cannot here: {why}"
                )],
                false => Vec::new(),
            },
        }
    }
}

/// What a scenario found beyond mutual exclusion: its own figures for the
/// line (`name=value`) and its own reasons to fail.
#[derive(Debug, Default)]
pub struct Findings {
    pub figures: Vec<String>,
    pub problems: Vec<String>,
}

impl Findings {
    pub fn problems(problems: Vec<String>) -> Findings {
        Findings {
            figures: Vec::new(),
            problems,
        }
    }
}

/// What is being judged.
pub struct Case<'a> {
    pub scenario: &'a str,
    pub clients: usize,
    pub seed: u64,
    pub expect: Expect,
    /// From the start of the clients to the return of the last one.
    pub window: (u64, u64),
}

/// Stops the rig, checks the history, and adds what `more` finds for this
/// scenario (from the history, and what the bookkeeping server counted). A failed scenario keeps its directory
/// (history, client logs) and says where.
pub fn judge(
    case: &Case,
    rig: Rig,
    more: impl FnOnce(&Parsed, &Analysis, &Bookkeeping) -> Findings,
) -> Outcome {
    let history = rig.ctx.history.path().to_owned();
    let (bookkeeping, dir) = rig.finish();
    let text = std::fs::read_to_string(&history)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", history.display()));
    let parsed = match Parsed::parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => return Outcome::unrunnable(case.scenario, case.seed, e),
    };
    let analysis = Analysis::of(&parsed, case.window);
    let report = Report {
        scenario: case.scenario,
        clients: case.clients,
        analysis: &analysis,
        occupancy_max: bookkeeping.occupancy_max,
        lost_updates: bookkeeping.lost_updates,
        seed: case.seed,
    };
    let mut problems = report.problems(case.expect);
    let findings = more(&parsed, &analysis, &bookkeeping);
    problems.extend(findings.problems);
    if !problems.is_empty() {
        let kept = dir.keep();
        problems.push(format!(
            "history and client logs kept in {}",
            kept.display()
        ));
    }
    Outcome {
        line: report.line_with(&findings.figures),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_scenario_fails_only_in_ci() {
        let why = "network namespaces need root";
        let here = Outcome::skipped("rolling-cuts", 7, why, false);
        assert_eq!(
            here.line,
            "scenario=rolling-cuts skipped (network namespaces need root) seed=7"
        );
        assert!(here.problems.is_empty(), "{:?}", here.problems);
        let ci = Outcome::skipped("rolling-cuts", 7, why, true);
        assert_eq!(ci.line, here.line);
        assert_eq!(ci.problems.len(), 1, "{:?}", ci.problems);
        assert!(
            ci.problems[0].contains("must run in CI"),
            "{:?}",
            ci.problems
        );
    }
}
