//! The mutual-exclusion checker: reads a scenario's history (see
//! `history.rs`) and finds every pair of sections of different clients that
//! were inside at the same time.
//!
//! Sections of a sharing mode (readers under `exec --shared`, slot holders
//! under `exec --limit`) may be inside with others of their mode: such
//! pairs are counted, not reported; how many may be inside at once is the
//! scenario's own check (`checks.rs`). Any other pair is an overlap.
//!
//! A section lasts from its `enter` to its `exit`. A section that never
//! wrote `exit` (killed by `exec`'s stop or by the watchdog) ended no later
//! than the first sign that its process was gone: the witness's `gone`, or
//! else the client's `return` (an upper bound: a frozen `exec` returns long
//! after its section was killed, which is why the witness exists). Without
//! either, it is taken to have lasted to the end of the scenario.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::history::Mode;

/// Which exit statuses of `exec` a healthy run can show: the section's 0,
/// busy (75, the `-w` wait ran out at the end of the scenario), no quorum
/// (69) and lost (79). Anything else means the harness or redlock broke.
const EXPECTED_STATUSES: [i32; 4] = [0, 69, 75, 79];
/// `exec --cancel-in-progress`'s "cancelled": superseded by a newer waiter,
/// or stopped by one while it held the lock. Expected of
/// [`Mode::Cancellable`] runs only.
pub const CANCELLED: i32 = 81;

/// One `exec` of one client (or one bare section run), by `(client, seq)`.
#[derive(Debug, Default, Clone)]
pub struct Run {
    pub mode: Option<Mode>,
    /// When the client launched it.
    pub start: Option<u64>,
    pub enter: Option<u64>,
    pub exit: Option<u64>,
    pub gone: Option<u64>,
    pub returned: Option<(u64, i32)>,
    /// The fencing token the section got (`exec --fence`).
    pub fence: Option<u64>,
}

impl Run {
    /// When the section ended at the latest (see the module's comment).
    fn end(&self, window_end: u64) -> u64 {
        let after_death = match (self.gone, self.returned) {
            (Some(gone), Some((ret, _))) => gone.min(ret),
            (Some(gone), None) => gone,
            (None, Some((ret, _))) => ret,
            (None, None) => window_end,
        };
        self.exit.unwrap_or(after_death)
    }

    pub fn status(&self) -> Option<i32> {
        self.returned.map(|(_, status)| status)
    }

    /// The status of a run that lost its lock: `exec`'s 79, or for a
    /// script kept by `acquire --while`, death by the keeper's SIGTERM.
    pub fn lost_status(&self) -> i32 {
        match self.mode {
            Some(Mode::Kept) => 128 + 15,
            _ => 79,
        }
    }

    /// When it stopped waiting for the lock: its section entered, or it
    /// returned without one.
    pub fn waited_until(&self, window_end: u64) -> u64 {
        self.enter
            .or(self.returned.map(|(at, _)| at))
            .unwrap_or(window_end)
    }
}

pub type RunId = (u32, u32);

/// A `fault` or `heal` line: its stamp and the words after it.
#[derive(Debug, Clone)]
pub struct Noted {
    pub at: u64,
    pub what: Vec<String>,
}

impl Noted {
    /// The words after the first, e.g. `CLIENT SEQ` of `kill-waiter CLIENT SEQ`.
    pub fn run(&self, kind: &str) -> Option<RunId> {
        match &self.what[..] {
            [first, client, seq, ..] if first == kind => {
                Some((client.parse().ok()?, seq.parse().ok()?))
            }
            _ => None,
        }
    }
}

/// What a history says.
#[derive(Debug, Default)]
pub struct Parsed {
    pub runs: BTreeMap<RunId, Run>,
    pub faults: Vec<Noted>,
    pub heals: Vec<Noted>,
}

impl Parsed {
    pub fn parse(text: &str) -> Result<Parsed, String> {
        let mut parsed = Parsed::default();
        for (n, line) in text.lines().enumerate() {
            parsed
                .add(line)
                .ok_or_else(|| format!("history line {}: cannot read {line:?}", n + 1))?;
        }
        Ok(parsed)
    }

    fn add(&mut self, line: &str) -> Option<()> {
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            [kind @ ("fault" | "heal"), at, ref what @ ..] => {
                let noted = Noted {
                    at: at.parse().ok()?,
                    what: what.iter().map(|w| w.to_string()).collect(),
                };
                match kind {
                    "fault" => self.faults.push(noted),
                    _ => self.heals.push(noted),
                }
            }
            [kind, client, seq, at, ref rest @ ..] => {
                let id = (client.parse().ok()?, seq.parse().ok()?);
                let at: u64 = at.parse().ok()?;
                let run = self.runs.entry(id).or_default();
                match (kind, rest) {
                    ("start", [mode]) => {
                        run.mode = Some(Mode::from_word(mode)?);
                        run.start = Some(at);
                    }
                    ("enter", []) => run.enter = Some(at),
                    ("exit", []) => run.exit = Some(at),
                    ("gone", []) => run.gone = Some(at),
                    // `fence CLIENT SEQ N`: N where the stamp would be.
                    ("fence", []) => run.fence = Some(at),
                    ("return", [status]) => run.returned = Some((at, status.parse().ok()?)),
                    _ => return None,
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// The runs that a fault must have cut short: its line ends with
    /// `CLIENT SEQ must-lose` (an `exec` frozen, or the servers paused under
    /// it, while its section had more than a TTL to go), so they exit 79.
    pub fn must_lose(&self) -> Vec<RunId> {
        self.faults
            .iter()
            .filter_map(|fault| match &fault.what[..] {
                [.., client, seq, must] if must == "must-lose" => {
                    Some((client.parse().ok()?, seq.parse().ok()?))
                }
                _ => None,
            })
            .collect()
    }

    /// The runs the harness itself killed (`kill-waiter CLIENT SEQ`): their
    /// 137 is expected.
    pub fn killed(&self) -> BTreeSet<RunId> {
        self.faults
            .iter()
            .filter_map(|fault| fault.run("kill-waiter"))
            .collect()
    }

    /// Every section, `(enter, end, id)`, sorted by entry.
    pub fn sections(&self, window: (u64, u64)) -> Vec<(u64, u64, RunId)> {
        let mut sections: Vec<(u64, u64, RunId)> = self
            .runs
            .iter()
            .filter_map(|(&id, run)| Some((run.enter?, run.end(window.1), id)))
            .collect();
        sections.sort();
        sections
    }

    /// The longest stretch of `window` in which no section was inside
    /// while at least one live `exec` waited for the lock: an `exec` waits
    /// from its launch until its section enters or it returns (also when
    /// the harness killed it). Every free moment with a waiter counts, the
    /// hand-offs' few milliseconds too.
    pub fn longest_free_while_waiting(&self, window: (u64, u64)) -> u64 {
        self.free_gaps(window).longest
    }

    /// Every stretch of `window` free while a live `exec` waited (see
    /// [`Self::longest_free_while_waiting`]): the longest, when it began,
    /// and their total.
    pub fn free_gaps(&self, window: (u64, u64)) -> FreeGaps {
        let mut steps = Vec::new();
        for run in self.runs.values() {
            let waits = run.mode.is_some_and(|mode| mode != Mode::Unlocked);
            if let (true, Some(start)) = (waits, run.start) {
                steps.push(Step::waiter(start, 1));
                steps.push(Step::waiter(run.waited_until(window.1).max(start), -1));
            }
        }
        for (enter, end, _) in self.sections(window) {
            steps.push(Step::section(enter, 1));
            steps.push(Step::section(end.max(enter), -1));
        }
        free_with_waiters(steps, window)
    }

    /// The most sections of `mode` inside at once within `window`.
    pub fn most_inside(&self, mode: Mode, window: (u64, u64)) -> u32 {
        let mut steps = Vec::new();
        for (enter, end, id) in self.sections(window) {
            if self.runs[&id].mode == Some(mode) {
                steps.push(Step::section(enter, 1));
                steps.push(Step::section(end.max(enter), -1));
            }
        }
        steps.sort();
        let (mut inside, mut most) = (0, 0);
        for step in steps {
            inside += step.inside;
            most = most.max(inside);
        }
        most as u32
    }

    /// Whether the run `id` is of a sharing mode (see [`Mode::shares`]).
    fn shares(&self, id: RunId) -> Option<Mode> {
        self.runs[&id].mode.filter(|mode| mode.shares())
    }
}

/// A change in the number of waiters or of sections inside, at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Step {
    at: u64,
    /// Ends (0) sort before starts (1) of the same instant: a hand-off at
    /// one instant leaves the lock free for no time.
    start: u8,
    waiters: i32,
    inside: i32,
}

impl Step {
    fn waiter(at: u64, delta: i32) -> Step {
        Step {
            at,
            start: u8::from(delta > 0),
            waiters: delta,
            inside: 0,
        }
    }

    fn section(at: u64, delta: i32) -> Step {
        Step {
            at,
            start: u8::from(delta > 0),
            waiters: 0,
            inside: delta,
        }
    }
}

/// The longest stretch of `window` with a waiter and no section inside.
/// The longest time with a waiter and nobody inside, and when it began.
fn free_with_waiters(mut steps: Vec<Step>, window: (u64, u64)) -> FreeGaps {
    steps.sort();
    let (mut waiters, mut inside) = (0, 0);
    let (mut since, mut longest, mut total) = (None::<u64>, (0, window.0), 0);
    for step in steps {
        let at = step.at.clamp(window.0, window.1);
        waiters += step.waiters;
        inside += step.inside;
        match (waiters > 0 && inside == 0, since) {
            (true, None) => since = Some(at),
            (false, Some(from)) => {
                longest = longest.max((at - from, from));
                total += at - from;
                since = None;
            }
            _ => {}
        }
    }
    if let Some(from) = since {
        longest = longest.max((window.1 - from, from));
        total += window.1 - from;
    }
    FreeGaps {
        longest: longest.0,
        from: longest.1,
        total,
    }
}

/// What [`Parsed::free_gaps`] found: in ns, the longest stretch free while
/// a live caller waited, when it began, and all such stretches together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeGaps {
    pub longest: u64,
    pub from: u64,
    pub total: u64,
}

/// Two sections of different clients inside at once, from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub first: RunId,
    pub second: RunId,
    pub from: u64,
    pub to: u64,
}

#[derive(Debug)]
pub struct Analysis {
    pub sections: usize,
    pub overlaps: Vec<Overlap>,
    /// Pairs of sections of one sharing mode inside at once: allowed.
    pub shared_overlaps: usize,
    pub exits: BTreeMap<i32, usize>,
    /// Statuses none of [`EXPECTED_STATUSES`], but 137 of a run the harness
    /// killed itself.
    unexpected: BTreeSet<i32>,
    /// Nanoseconds of the window covered by at least one section.
    pub covered: u64,
    pub window: (u64, u64),
    pub longest_gap: u64,
    pub faults: usize,
}

impl Analysis {
    /// `window` is the scenario's wall time, from the start of its clients
    /// to the return of the last one.
    pub fn of(parsed: &Parsed, window: (u64, u64)) -> Analysis {
        let sections = parsed.sections(window);
        let mut exits = BTreeMap::new();
        let mut unexpected = BTreeSet::new();
        let killed = parsed.killed();
        for (id, run) in &parsed.runs {
            let Some(status) = run.status() else { continue };
            *exits.entry(status).or_insert(0) += 1;
            let killed_here = killed.contains(id) && status == 128 + 9;
            let lost = status == run.lost_status();
            let cancelled = status == CANCELLED && run.mode == Some(Mode::Cancellable);
            if !EXPECTED_STATUSES.contains(&status) && !killed_here && !lost && !cancelled {
                unexpected.insert(status);
            }
        }
        let (covered, longest_gap) = coverage(&sections, window);
        let (overlaps, shared_overlaps) = overlaps(&sections, |a, b| {
            parsed.shares(a).is_some() && parsed.shares(a) == parsed.shares(b)
        });
        Analysis {
            sections: sections.len(),
            overlaps,
            shared_overlaps,
            exits,
            unexpected,
            covered,
            window,
            longest_gap,
            faults: parsed.faults.len(),
        }
    }

    pub fn max_overlap(&self) -> u64 {
        self.overlaps
            .iter()
            .map(|o| o.to - o.from)
            .max()
            .unwrap_or(0)
    }

    pub fn unexpected_statuses(&self) -> Vec<i32> {
        self.unexpected.iter().copied().collect()
    }
}

/// Every pair of sections of different clients that intersect, but those
/// that `may_share`; `sections` sorted by their start. Also how many pairs
/// that may share did.
fn overlaps(
    sections: &[(u64, u64, RunId)],
    may_share: impl Fn(RunId, RunId) -> bool,
) -> (Vec<Overlap>, usize) {
    let (mut found, mut shared) = (Vec::new(), 0);
    for (i, &(_, end, id)) in sections.iter().enumerate() {
        for &(later_start, later_end, later_id) in &sections[i + 1..] {
            if later_start >= end {
                break;
            }
            if later_id.0 == id.0 {
                continue;
            }
            if may_share(id, later_id) {
                shared += 1;
            } else {
                found.push(Overlap {
                    first: id,
                    second: later_id,
                    from: later_start,
                    to: end.min(later_end),
                });
            }
        }
    }
    (found, shared)
}

/// How much of `window` the sections cover, and the longest stretch of it
/// that none covers.
fn coverage(sections: &[(u64, u64, RunId)], window: (u64, u64)) -> (u64, u64) {
    let (mut covered, mut longest_gap) = (0, 0);
    let mut reached = window.0;
    for &(start, end, _) in sections {
        let (start, end) = (
            start.clamp(window.0, window.1),
            end.clamp(window.0, window.1),
        );
        if start > reached {
            longest_gap = longest_gap.max(start - reached);
        }
        if end > reached {
            covered += end - start.max(reached);
            reached = end;
        }
    }
    longest_gap = longest_gap.max(window.1 - reached);
    (covered, longest_gap)
}

/// What a scenario must show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// No two sections inside at once, no occupancy above 1, no lost update.
    Safe,
    /// The clients were not excluded: the checker must see an overlap.
    Overlap,
}

/// The checker's line and verdict for one scenario.
pub struct Report<'a> {
    pub scenario: &'a str,
    pub clients: usize,
    pub analysis: &'a Analysis,
    pub occupancy_max: i64,
    pub lost_updates: i64,
    pub seed: u64,
}

pub fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

impl Report<'_> {
    /// `scenario=NAME clients=8 sections=N overlaps=N max_overlap_ms=F occupancy_max=N
    /// lost_updates=N exits=0:N,75:N,79:N,... availability=P% longest_gap_ms=F faults=N seed=S`
    pub fn line(&self) -> String {
        self.line_with(&[])
    }

    /// [`Self::line`] with a scenario's own figures (`name=value`) before
    /// the seed.
    pub fn line_with(&self, figures: &[String]) -> String {
        let a = self.analysis;
        let mut exits = BTreeMap::from([(0, 0), (75, 0), (79, 0)]);
        exits.extend(a.exits.iter().map(|(&status, &n)| (status, n)));
        let mut shown: Vec<String> = [0, 75, 79]
            .iter()
            .map(|s| format!("{s}:{}", exits[s]))
            .collect();
        shown.extend(
            exits
                .iter()
                .filter(|(s, _)| ![0, 75, 79].contains(*s))
                .map(|(s, n)| format!("{s}:{n}")),
        );
        let window = a.window.1.saturating_sub(a.window.0).max(1);
        format!(
            "scenario={} clients={} sections={} overlaps={} max_overlap_ms={:.1} occupancy_max={} \
             lost_updates={} exits={} availability={:.1}% longest_gap_ms={:.1} faults={}{} seed={}",
            self.scenario,
            self.clients,
            a.sections,
            a.overlaps.len(),
            ms(a.max_overlap()),
            self.occupancy_max,
            self.lost_updates,
            shown.join(","),
            100.0 * a.covered as f64 / window as f64,
            ms(a.longest_gap),
            a.faults,
            figures.iter().map(|f| format!(" {f}")).collect::<String>(),
            self.seed,
        )
    }

    /// Why the scenario failed, one sentence each; empty when it passed.
    pub fn problems(&self, expect: Expect) -> Vec<String> {
        let a = self.analysis;
        let mut problems = Vec::new();
        if a.sections == 0 {
            problems.push("no section ran at all: the harness tested nothing".to_string());
        }
        if !a.unexpected_statuses().is_empty() {
            problems.push(format!(
                "exec exited with {:?}, none of the expected {EXPECTED_STATUSES:?} (see the client logs)",
                a.unexpected_statuses()
            ));
        }
        match expect {
            Expect::Safe => self.safety_problems(&mut problems),
            Expect::Overlap if a.overlaps.is_empty() => problems.push(
                "the checker found no overlap where the clients were not excluded: \
                 the checker cannot be trusted"
                    .to_string(),
            ),
            Expect::Overlap => {}
        }
        problems
    }

    fn safety_problems(&self, problems: &mut Vec<String>) {
        let a = self.analysis;
        if !a.overlaps.is_empty() {
            let mut text = format!("{} overlap(s) of sections:", a.overlaps.len());
            for o in a.overlaps.iter().take(5) {
                let _ = write!(
                    text,
                    " client {} seq {} and client {} seq {} for {:.1}ms (from {});",
                    o.first.0,
                    o.first.1,
                    o.second.0,
                    o.second.1,
                    ms(o.to - o.from),
                    o.from
                );
            }
            problems.push(text);
        }
        if self.occupancy_max > 1 {
            problems.push(format!(
                "occupancy reached {} on the bookkeeping server",
                self.occupancy_max
            ));
        }
        if self.lost_updates > 0 {
            problems.push(format!(
                "{} lost update(s) of the counter",
                self.lost_updates
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn analyze(history: &str, window: (u64, u64)) -> Analysis {
        Analysis::of(&Parsed::parse(history).unwrap(), window)
    }

    #[test]
    fn sections_of_two_clients_inside_at_once_overlap() {
        let a = analyze(
            "start 0 1 0 locked\nenter 0 1 10000000\nexit 0 1 50000000\nreturn 0 1 51000000 0\n\
             enter 1 1 40000000\nexit 1 1 90000000\nreturn 1 1 91000000 0\n",
            (0, 100 * MS),
        );
        assert_eq!(a.sections, 2);
        assert_eq!(
            a.overlaps,
            vec![Overlap {
                first: (0, 1),
                second: (1, 1),
                from: 40 * MS,
                to: 50 * MS
            }]
        );
        assert_eq!(a.max_overlap(), 10 * MS);
        assert_eq!(a.covered, 80 * MS);
        assert_eq!(a.longest_gap, 10 * MS);
    }

    #[test]
    fn readers_may_overlap_each_other_but_not_a_writer() {
        let a = analyze(
            "start 0 1 0 shared\nenter 0 1 10\nexit 0 1 50\n\
             start 1 1 0 shared\nenter 1 1 20\nexit 1 1 60\n\
             start 2 1 0 locked\nenter 2 1 55\nexit 2 1 70\n\
             start 3 1 0 slot\nenter 3 1 65\nexit 3 1 80\n",
            (0, 100),
        );
        // 0/1 with 1/1 is allowed; 1/1 with the writer 2/1 is not, nor a
        // slot holder beside either kind.
        assert_eq!(a.shared_overlaps, 1);
        let pairs: Vec<_> = a.overlaps.iter().map(|o| (o.first, o.second)).collect();
        assert_eq!(pairs, vec![((1, 1), (2, 1)), ((2, 1), (3, 1))]);
    }

    #[test]
    fn the_most_inside_counts_one_mode() {
        let parsed = Parsed::parse(
            "start 0 1 0 slot\nenter 0 1 10\nexit 0 1 50\n\
             start 1 1 0 slot\nenter 1 1 20\nexit 1 1 30\n\
             start 2 1 0 slot\nenter 2 1 30\nexit 2 1 40\n\
             start 3 1 0 slot\nenter 3 1 25\nexit 3 1 35\n\
             start 4 1 0 locked\nenter 4 1 26\nexit 4 1 27\n",
        )
        .unwrap();
        // 0, 1 and 3 at 25-30; 1 leaves at 30 as 2 enters: still 3.
        assert_eq!(parsed.most_inside(Mode::Slot, (0, 100)), 3);
        assert_eq!(parsed.most_inside(Mode::Locked, (0, 100)), 1);
        assert_eq!(parsed.most_inside(Mode::Shared, (0, 100)), 0);
    }

    #[test]
    fn a_handover_at_the_same_instant_is_no_overlap() {
        let a = analyze(
            "enter 0 1 10\nexit 0 1 20\nenter 1 1 20\nexit 1 1 30\nenter 0 2 25\nexit 0 2 28\n",
            (0, 40),
        );
        // 0/2 is inside 1/1: different clients; 0/1 ends as 1/1 starts.
        assert_eq!(a.overlaps.len(), 1);
        assert_eq!(a.overlaps[0].first, (1, 1));
    }

    #[test]
    fn a_killed_section_ends_when_the_witness_saw_it_go() {
        let history = "enter 0 1 10\ngone 0 1 30\nreturn 0 1 90 79\nenter 1 1 40\nexit 1 1 50\n";
        assert!(analyze(history, (0, 100)).overlaps.is_empty());
        // Without the witness, the late return of a frozen exec is all there is.
        let no_witness = history.replace("gone 0 1 30\n", "");
        assert_eq!(analyze(&no_witness, (0, 100)).overlaps.len(), 1);
        // With neither, the section lasts to the end of the window.
        let nothing = "enter 0 1 10\nenter 1 1 40\nexit 1 1 50\n";
        assert_eq!(analyze(nothing, (0, 100)).overlaps.len(), 1);
    }

    #[test]
    fn the_line_has_the_documented_shape() {
        let parsed = Parsed::parse(
            "start 0 1 0 locked\nenter 0 1 0\nexit 0 1 500000000\nreturn 0 1 500000000 0\n\
             start 1 1 0 locked\nreturn 1 1 1000000000 75\nreturn 2 1 1000000000 137\n\
             fault 5 kill server 2\nheal 6 restart server 2\n",
        )
        .unwrap();
        let analysis = Analysis::of(&parsed, (0, 1_000_000_000));
        let report = Report {
            scenario: "demo",
            clients: 3,
            analysis: &analysis,
            occupancy_max: 1,
            lost_updates: 0,
            seed: 42,
        };
        assert_eq!(
            report.line(),
            "scenario=demo clients=3 sections=1 overlaps=0 max_overlap_ms=0.0 occupancy_max=1 \
             lost_updates=0 exits=0:1,75:1,79:0,137:1 availability=50.0% longest_gap_ms=500.0 \
             faults=1 seed=42"
        );
        let problems = report.problems(Expect::Safe);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("[137]"), "{problems:?}");
        assert_eq!(report.problems(Expect::Overlap).len(), 2);
    }

    #[test]
    fn runs_cut_short_by_a_fault_are_listed() {
        let parsed = Parsed::parse(
            "fault 1 freeze-exec 3 7 must-lose\nfault 2 freeze-exec 4 1 may-finish\n\
             fault 3 pause-servers 0,1,2 holder 5 2 must-lose\nfault 4 pause-servers 3,4\n",
        )
        .unwrap();
        assert_eq!(parsed.must_lose(), vec![(3, 7), (5, 2)]);
    }

    #[test]
    fn a_free_lock_counts_only_while_a_live_waiter_waits() {
        // 0/1 holds 10-50; 1/1 waits from 20, is killed at 60; 2/1 waits
        // from 30 and enters at 100; nobody waits after 100's exit at 120.
        let parsed = Parsed::parse(
            "start 0 1 0 locked\nenter 0 1 10\nexit 0 1 50\nreturn 0 1 51 0\n\
             start 1 1 20 locked\nfault 60 kill-waiter 1 1\nreturn 1 1 60 137\n\
             start 2 1 30 locked\nenter 2 1 100\nexit 2 1 120\nreturn 2 1 121 0\n",
        )
        .unwrap();
        assert_eq!(parsed.longest_free_while_waiting((0, 200)), 50);
        // Before anyone waits, and after, the lock is merely idle.
        let idle = Parsed::parse("start 0 1 100 locked\nenter 0 1 110\nexit 0 1 120\n").unwrap();
        assert_eq!(idle.longest_free_while_waiting((0, 300)), 10);
    }

    #[test]
    fn the_harness_kills_are_expected_and_others_are_not() {
        let parsed = Parsed::parse(
            "start 0 1 0 locked\nfault 5 kill-waiter 0 1\nreturn 0 1 6 137\n\
             start 1 1 0 locked\nreturn 1 1 6 137\n",
        )
        .unwrap();
        assert_eq!(
            parsed.killed().into_iter().collect::<Vec<_>>(),
            vec![(0, 1)]
        );
        let analysis = Analysis::of(&parsed, (0, 10));
        assert_eq!(analysis.exits.get(&137), Some(&2));
        assert_eq!(analysis.unexpected_statuses(), vec![137]);
    }

    #[test]
    fn a_scenarios_figures_come_before_the_seed() {
        let analysis = Analysis::of(&Parsed::default(), (0, 1));
        let report = Report {
            scenario: "demo",
            clients: 1,
            analysis: &analysis,
            occupancy_max: 0,
            lost_updates: 0,
            seed: 3,
        };
        let line = report.line_with(&["shares=1,2".to_string()]);
        assert!(line.ends_with(" faults=0 shares=1,2 seed=3"), "{line}");
    }

    #[test]
    fn garbage_in_the_history_is_an_error() {
        let err = Parsed::parse("enter 0 1 10\nenter zero 1 10\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
    }
}
