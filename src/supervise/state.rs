//! The supervisor's explicit state: whether the command runs, how far a stop
//! has gone and why, with one method per event. Pure: it decides what to do
//! to the command's group and leaves the doing to the supervisor, so that it
//! is tested without processes.

use std::process::ExitStatus;
use std::time::Duration;

use super::schedule::{next_action_within, Action, Due, Stage, StopPlan, CLOCK_CHECK};
use super::watchdog::Report;
use crate::clock::BootInstant;

/// How a supervised command ended.
#[derive(Debug)]
pub enum Outcome {
    /// It ended on its own (with what it left in its group), with this status.
    Ended(ExitStatus),
    /// It was stopped because the lock was lost or could have lapsed, or it
    /// ran past its time limit.
    Stopped(StopReason),
    /// It could not be started: not found, not executable.
    NotStarted(std::io::Error),
}

/// Why the command was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// No extension came in time; the validity ended this much later. The
    /// supervisor was running all along: the extensions failed.
    NotExtended { left: Duration },
    /// The stop fell due while this process was not running (frozen by
    /// SIGSTOP or a debugger, suspended with the machine, or its job stopped
    /// from the terminal): nothing could extend the lock then.
    Overdue,
    /// A majority said the token is gone (the caller knows why).
    Lost,
    /// The stop time passed before the command could start (we were frozen
    /// between taking the lock and starting it): it was not started.
    TooLateToStart,
    /// It ran past its time limit (`exec --timeout`), this long.
    TimedOut { limit: Duration },
}

/// Something the supervisor did that the user may want to hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The command runs, as process `pid`.
    Started { pid: u32 },
    /// The command exited; the lock is held until these processes it left
    /// in its group end. `terminal`: a Ctrl-C can reach us.
    HoldingForLeftovers {
        processes: Vec<Leftover>,
        terminal: bool,
    },
    /// A process left behind stopped on the terminal again and gets `signal`.
    LeftoverStoppedAgain {
        pid: i32,
        signal: nix::sys::signal::Signal,
    },
    /// Asked to end while only what the command left runs: they get the stop
    /// `signal` now and SIGKILL `kill_in` later; asked again, SIGKILL at once.
    StoppingLeftovers {
        signal: nix::sys::signal::Signal,
        kill_in: Duration,
        terminal: bool,
    },
    /// Asked again: what the command left gets SIGKILL now.
    KillingLeftovers,
    /// Our job is about to be stopped from the terminal (Ctrl-Z): nothing
    /// extends the lock until it is continued, and the command may be
    /// continued only within `stop_in`.
    Suspending { stop_in: Duration },
    /// The watchdog process died: nothing would stop a frozen supervisor's
    /// command in time.
    WatchdogGone,
}

/// A process the command left in its group, as `ps` would show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: i32,
    /// Its command line (words joined by spaces), or `[comm]` when it has
    /// none to show; raw bytes, escaped when shown.
    pub command: Vec<u8>,
}

/// What the supervisor must send to the command's group now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The stop signal, then SIGCONT so that a stopped command handles it.
    Stop,
    /// SIGKILL.
    Kill,
}

/// How long a group may outlive its SIGKILL before we stop waiting for it
/// (a process in uninterruptible sleep, or one that escaped the group).
const UNKILLABLE_AFTER: Duration = Duration::from_secs(1);

/// A gap between two looks at the clock longer than this means this process
/// did not run in between: it looks at least every [`CLOCK_CHECK`], and the
/// rest is slack for a loaded machine.
pub const FROZEN_AFTER: Duration = CLOCK_CHECK.saturating_add(Duration::from_millis(230));

#[derive(Debug)]
pub struct State {
    plan: StopPlan,
    /// The command's own status, once it has exited. The lock is held until
    /// the processes it left in its group have ended too.
    exited: Option<ExitStatus>,
    stage: Stage,
    reason: Option<StopReason>,
    killed_at: Option<BootInstant>,
    /// When the first stop fell due, the command had already ended.
    found_ended: bool,
    /// The command's time limit (`--timeout`): when it ends, and how long.
    timeout: Option<(BootInstant, Duration)>,
    /// When we last looked at the clock.
    last_look: Option<BootInstant>,
    /// The stop time of the deadline fell between two looks too far apart:
    /// we were not running when the stop fell due.
    frozen_at_stop: bool,
    /// Requests to end (SIGINT, SIGTERM...) since only leftovers run.
    leftover_stops: u32,
}

impl State {
    pub fn new(plan: StopPlan) -> Self {
        State {
            plan,
            exited: None,
            stage: Stage::Watching,
            reason: None,
            killed_at: None,
            found_ended: false,
            timeout: None,
            last_look: None,
            frozen_at_stop: false,
            leftover_stops: 0,
        }
    }

    /// With a time limit: the command, and what it leaves behind, are
    /// stopped `limit` after `started` if they still run.
    pub fn with_timeout(mut self, started: BootInstant, limit: Option<Duration>) -> Self {
        self.timeout = limit.map(|limit| (started + limit, limit));
        self
    }

    pub fn is_running(&self) -> bool {
        self.exited.is_none()
    }

    /// No stop for the lock has begun: a loss of the lock is still news.
    /// A stop for `--timeout` is not one: a loss during it wins (79), since
    /// the work was not protected to its end, and may bring the kill closer.
    pub fn is_watching(&self) -> bool {
        let for_the_lock = !matches!(self.reason, None | Some(StopReason::TimedOut { .. }));
        !for_the_lock && !self.found_ended
    }

    pub fn is_stopping(&self) -> bool {
        self.reason.is_some()
    }

    /// When the command must stop for `deadline` (the stop signal's time):
    /// it may not be continued after that.
    pub fn stop_time(&self, deadline: BootInstant) -> BootInstant {
        self.plan.term_at(deadline)
    }

    /// Notes a look at the clock at `now`: if the stop time of `deadline`
    /// passed since the last look, and that was too long ago for us to have
    /// been running, the stop fell due while we were not.
    fn look(&mut self, now: BootInstant, deadline: BootInstant) {
        if let Some(last) = self.last_look {
            let stop = self.plan.term_at(deadline);
            let gap = now.saturating_since(last);
            if last < stop && stop <= now && gap > FROZEN_AFTER {
                self.frozen_at_stop = true;
            }
        }
        self.last_look = Some(now);
    }

    /// Why a stop that fell due without our doing (the watchdog's, or one we
    /// came to late) happened: we were not running then, or we were and no
    /// extension had come.
    fn late_stop(&self, deadline: BootInstant) -> StopReason {
        match self.frozen_at_stop {
            true => StopReason::Overdue,
            false => StopReason::NotExtended {
                left: deadline.saturating_since(self.plan.term_at(deadline)),
            },
        }
    }

    /// The clock moved on: what the stop schedule asks for at `now`, and when
    /// to look again. The schedule's signals always go out (to a group that
    /// has ended they do no harm, and a liveness check that cannot see a
    /// process must never spare it). `alive` is asked when the first stop
    /// falls due: a command found ended then (we were frozen and have not
    /// reaped it yet) was not stopped by us, and its end is judged by
    /// [`Self::outcome`].
    pub fn on_clock(
        &mut self,
        now: BootInstant,
        deadline: BootInstant,
        alive: impl FnOnce() -> bool,
    ) -> (Vec<Effect>, BootInstant) {
        self.look(now, deadline);
        let mut effects = Vec::new();
        let mut alive = Some(alive);
        let timeout_at = self.timeout.map(|(at, _)| at);
        loop {
            let (action, due) =
                next_action_within(self.plan, now, deadline, timeout_at, self.stage);
            let due_lock = due == Due::Lock && !matches!(action, Action::Sleep(_));
            if due_lock
                && self.stage == Stage::Watching
                && alive.take().is_some_and(|alive| !alive())
            {
                self.found_ended = true;
            }
            match action {
                Action::Sleep(until) => return (effects, until),
                Action::Signal { kill_at } => {
                    self.signalled(now, deadline, due);
                    self.stage = Stage::Stopping { kill_at };
                    effects.push(Effect::Stop);
                }
                Action::Kill => {
                    if self.stage == Stage::Watching {
                        // We were frozen or suspended past the point of
                        // stopping, or kept from running: signal and kill
                        // at once.
                        if !self.found_ended && self.reason.is_none() {
                            self.reason = Some(self.late_stop(deadline));
                        }
                        effects.push(Effect::Stop);
                    }
                    self.stage = Stage::Killed;
                    self.killed_at = Some(now);
                    effects.push(Effect::Kill);
                }
            }
        }
    }

    /// The stop signal goes out at `now` for `due`: the reason it is said in.
    fn signalled(&mut self, now: BootInstant, deadline: BootInstant, due: Due) {
        if self.reason.is_some() || self.found_ended {
            return;
        }
        self.reason = match (due, self.timeout) {
            (Due::Timeout, Some((_, limit))) => Some(StopReason::TimedOut { limit }),
            _ if self.frozen_at_stop => Some(StopReason::Overdue),
            _ => Some(StopReason::NotExtended {
                left: deadline.saturating_since(now),
            }),
        };
    }

    /// A majority said the token is gone: stop now, SIGKILL after the grace
    /// period, and in any case before the deadline. A stop already under way
    /// keeps its earlier SIGKILL; after SIGKILL, nothing more is sent.
    pub fn on_loss(&mut self, now: BootInstant, deadline: BootInstant) -> Option<Effect> {
        let kill_at = (now + self.plan.grace).min(self.plan.kill_at(deadline));
        self.reason = Some(StopReason::Lost);
        match self.stage {
            Stage::Killed => None,
            Stage::Stopping { kill_at: sooner } => {
                self.stage = Stage::Stopping {
                    kill_at: sooner.min(kill_at),
                };
                Some(Effect::Stop)
            }
            Stage::Watching => {
                self.stage = Stage::Stopping { kill_at };
                Some(Effect::Stop)
            }
        }
    }

    /// Someone asks us to end (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) after the
    /// command exited, while what it left in its group holds the lock: the
    /// first time, the stop signal, then SIGKILL after the grace period (and
    /// before the deadline); any time after, SIGKILL at once. We then end
    /// once they are gone, and release the lock. While the command runs,
    /// `None`: the signal is the command's.
    pub fn on_interrupt(&mut self, now: BootInstant, deadline: BootInstant) -> Option<Effect> {
        if self.is_running() {
            return None;
        }
        self.leftover_stops += 1;
        match self.stage {
            Stage::Watching if self.leftover_stops == 1 => {
                let kill_at = (now + self.plan.grace).min(self.plan.kill_at(deadline));
                self.stage = Stage::Stopping { kill_at };
                Some(Effect::Stop)
            }
            _ => {
                self.stage = Stage::Killed;
                self.killed_at = Some(now);
                Some(Effect::Kill)
            }
        }
    }

    /// The grace period between the stop signal and SIGKILL.
    pub fn grace(&self) -> Duration {
        self.plan.grace
    }

    /// Whether the command may run (be started or continued) at `now`: not
    /// once the stop time for `deadline` has passed.
    pub fn may_run(&self, now: BootInstant, deadline: BootInstant) -> bool {
        now < self.plan.term_at(deadline)
    }

    pub fn on_exit(&mut self, status: ExitStatus) {
        self.exited = Some(status);
    }

    /// The command's status once it and its group are done, or its group
    /// outlived SIGKILL for too long to wait for.
    pub fn finished(&self, now: BootInstant, group_gone: bool) -> Option<ExitStatus> {
        let unkillable = self
            .killed_at
            .is_some_and(|at| now.saturating_since(at) > UNKILLABLE_AFTER);
        self.exited.filter(|_| group_gone || unkillable)
    }

    /// The outcome once the command has finished. The watchdog acts only
    /// when we did not in time: then the lock may have lapsed while the
    /// command ran. If it found the command already ended at the stop time,
    /// the command's status stands, however late we saw the end. Without its
    /// word, an end seen after the stop time is taken as a stop. A stop we
    /// did not make ourselves is said as [`StopReason::Overdue`] only if we
    /// were not running when it fell due; otherwise the extensions failed.
    pub fn outcome(
        mut self,
        status: ExitStatus,
        watchdog: Report,
        now: BootInstant,
        deadline: BootInstant,
    ) -> Outcome {
        self.look(now, deadline);
        match (self.reason.take(), watchdog) {
            (Some(reason), _) => Outcome::Stopped(reason),
            (None, Report::Stopped) => Outcome::Stopped(self.late_stop(deadline)),
            (None, Report::EndedInTime) => Outcome::Ended(status),
            (None, Report::Quiet) if now >= self.plan.term_at(deadline) => {
                Outcome::Stopped(self.late_stop(deadline))
            }
            (None, Report::Quiet) => Outcome::Ended(status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn setup() -> (State, BootInstant, StopPlan) {
        let plan = StopPlan::new(MS(1_000), MS(5_000));
        (
            State::new(plan),
            BootInstant::from_nanos(10_000_000_000),
            plan,
        )
    }

    #[test]
    fn a_missed_extension_signals_then_kills() {
        let (mut state, deadline, plan) = setup();
        let early = plan.term_at(deadline) - MS(1);
        assert_eq!(state.on_clock(early, deadline, || true).0, []);
        assert!(state.is_watching());
        let term_at = plan.term_at(deadline);
        let (effects, wake) = state.on_clock(term_at, deadline, || true);
        assert_eq!(effects, [Effect::Stop]);
        assert_eq!(wake, term_at + crate::supervise::schedule::CLOCK_CHECK);
        assert_eq!(
            state.reason,
            Some(StopReason::NotExtended {
                left: plan.grace + plan.margin
            })
        );
        assert_eq!(
            state.on_clock(plan.kill_at(deadline), deadline, || true).0,
            [Effect::Kill]
        );
        assert_eq!(
            state.on_clock(deadline, deadline, || true).0,
            [],
            "killed once"
        );
    }

    #[test]
    fn waking_up_past_the_kill_point_is_overdue() {
        let (mut state, deadline, plan) = setup();
        state.on_clock(plan.term_at(deadline) - MS(10), deadline, || true);
        let (effects, _) = state.on_clock(deadline + MS(1), deadline, || true);
        assert_eq!(effects, [Effect::Stop, Effect::Kill]);
        assert_eq!(state.reason, Some(StopReason::Overdue));
    }

    #[test]
    fn waking_up_late_but_before_the_kill_point_is_overdue_too() {
        let (mut state, deadline, plan) = setup();
        state.on_clock(plan.term_at(deadline) - MS(300), deadline, || true);
        let (effects, _) = state.on_clock(plan.term_at(deadline) + MS(10), deadline, || true);
        assert_eq!(effects, [Effect::Stop]);
        assert_eq!(state.reason, Some(StopReason::Overdue));
    }

    #[test]
    fn a_watchdog_stop_while_we_ran_is_a_failed_extension_not_a_freeze() {
        // The watchdog signalled at the stop time, the command died, and we
        // saw its end before our own schedule said anything: we were looking
        // every clock check all along.
        let (mut state, deadline, plan) = setup();
        let term_at = plan.term_at(deadline);
        let mut now = term_at - MS(200);
        while now < term_at {
            state.on_clock(now, deadline, || true);
            now = now + CLOCK_CHECK;
        }
        state.on_exit(ExitStatus::from_raw(15));
        let end = term_at + MS(3);
        assert!(matches!(
            state.outcome(ExitStatus::from_raw(15), Report::Stopped, end, deadline),
            Outcome::Stopped(StopReason::NotExtended { left }) if left == plan.grace + plan.margin
        ));
        // The same, with a gap over the stop time: we were not running.
        let (mut frozen, deadline, plan) = setup();
        frozen.on_clock(plan.term_at(deadline) - MS(10), deadline, || true);
        let late = plan.term_at(deadline) + FROZEN_AFTER;
        assert!(matches!(
            frozen.outcome(ExitStatus::from_raw(15), Report::Stopped, late, deadline),
            Outcome::Stopped(StopReason::Overdue)
        ));
    }

    #[test]
    fn a_timeout_stops_the_command_and_says_so() {
        let (state, deadline, plan) = setup();
        let started = deadline - MS(5_000);
        let mut state = state.with_timeout(started, Some(MS(2_000)));
        let at = started + MS(2_000);
        assert_eq!(state.on_clock(at - MS(1), deadline, || true).0, []);
        let (effects, _) = state.on_clock(at, deadline, || true);
        assert_eq!(effects, [Effect::Stop]);
        assert_eq!(
            state.reason,
            Some(StopReason::TimedOut { limit: MS(2_000) })
        );
        assert_eq!(
            state.on_clock(at + plan.grace, deadline, || true).0,
            [Effect::Kill]
        );
    }

    #[test]
    fn a_loss_during_a_timeout_stop_wins() {
        let (state, deadline, plan) = setup();
        let started = deadline - MS(5_000);
        let mut state = state.with_timeout(started, Some(MS(2_000)));
        let at = started + MS(2_000);
        assert_eq!(state.on_clock(at, deadline, || true).0, [Effect::Stop]);
        assert!(
            state.is_watching(),
            "a loss during the timeout's stop is news"
        );
        state.on_loss(at + MS(10), deadline);
        assert_eq!(state.reason, Some(StopReason::Lost));
        assert!(!state.is_watching());
        assert_eq!(
            state.on_clock(at + plan.grace, deadline, || true).0,
            [Effect::Kill],
            "still SIGKILL after the grace period"
        );
    }

    #[test]
    fn asked_to_end_while_leftovers_run_stop_then_kill() {
        let (mut state, deadline, plan) = setup();
        let now = deadline - MS(900);
        assert_eq!(state.on_interrupt(now, deadline), None, "the command's");
        state.on_exit(ExitStatus::from_raw(1 << 8));
        assert_eq!(state.on_interrupt(now, deadline), Some(Effect::Stop));
        assert!(state.is_watching(), "a loss is still news");
        assert_eq!(state.reason, None, "no stop of the lock's");
        assert_eq!(
            state.on_clock(now + plan.grace, deadline, || true).0,
            [Effect::Kill],
            "SIGKILL after the grace period"
        );
        let (mut again, deadline, _) = setup();
        again.on_exit(ExitStatus::from_raw(1 << 8));
        again.on_interrupt(now, deadline);
        assert_eq!(
            again.on_interrupt(now + MS(1), deadline),
            Some(Effect::Kill)
        );
        assert_eq!(
            again.finished(now + MS(2), true),
            Some(ExitStatus::from_raw(1 << 8))
        );
        assert!(matches!(
            again.outcome(
                ExitStatus::from_raw(1 << 8),
                Report::Quiet,
                now + MS(3),
                deadline
            ),
            Outcome::Ended(_)
        ));
    }

    #[test]
    fn a_seen_loss_kills_after_the_grace_or_before_the_deadline() {
        let (mut state, deadline, plan) = setup();
        let now = deadline - MS(900);
        assert_eq!(state.on_loss(now, deadline), Some(Effect::Stop));
        assert!(!state.is_watching());
        // The grace (333ms) ends before kill_at (deadline - 50ms).
        assert_eq!(
            state
                .on_clock(now + plan.grace - MS(1), deadline, || true)
                .0,
            []
        );
        assert_eq!(
            state.on_clock(now + plan.grace, deadline, || true).0,
            [Effect::Kill]
        );
        let (mut late, deadline, plan) = setup();
        let now = deadline - MS(100);
        late.on_loss(now, deadline);
        assert_eq!(
            late.on_clock(plan.kill_at(deadline), deadline, || true).0,
            [Effect::Kill]
        );
    }

    #[test]
    fn the_outcome_is_the_status_unless_a_stop_was_due() {
        let (mut state, deadline, plan) = setup();
        let status = ExitStatus::from_raw(7 << 8);
        state.on_exit(status);
        assert_eq!(
            state.finished(deadline - MS(900), false),
            None,
            "leftovers run"
        );
        assert_eq!(state.finished(deadline - MS(900), true), Some(status));
        let before = plan.term_at(deadline) - MS(1);
        assert!(matches!(
            State::new(plan).outcome(status, Report::Quiet, before, deadline),
            Outcome::Ended(s) if s == status
        ));
        // Stops we did not make: without a gap in our looks, the extensions
        // failed; with one over the stop time, we were not running.
        assert!(matches!(
            State::new(plan).outcome(status, Report::Stopped, before, deadline),
            Outcome::Stopped(StopReason::NotExtended { .. })
        ));
        let mut looked = State::new(plan);
        looked.on_clock(before - MS(1), deadline, || true);
        assert!(matches!(
            looked.outcome(status, Report::Quiet, plan.term_at(deadline), deadline),
            Outcome::Stopped(StopReason::NotExtended { .. })
        ));
        let mut frozen = State::new(plan);
        frozen.on_clock(before - MS(1), deadline, || true);
        assert!(matches!(
            frozen.outcome(status, Report::Stopped, deadline, deadline),
            Outcome::Stopped(StopReason::Overdue)
        ));
    }

    #[test]
    fn a_command_that_ended_while_we_were_frozen_keeps_its_status() {
        let (mut state, deadline, plan) = setup();
        // We wake up past the kill time; the command had already ended.
        let (effects, _) = state.on_clock(deadline + MS(500), deadline, || false);
        // The signals go out all the same (harmless to an ended group, and a
        // liveness check must never spare a process it cannot see), but
        // they are no stop of ours.
        assert_eq!(effects, [Effect::Stop, Effect::Kill]);
        assert_eq!(state.reason, None);
        let status = ExitStatus::from_raw(3 << 8);
        state.on_exit(status);
        let late = deadline + MS(600);
        assert!(matches!(
            state.outcome(status, Report::EndedInTime, late, deadline),
            Outcome::Ended(s) if s == status
        ));
        // Without the watchdog's word, an end seen that late counts as a stop.
        let mut looked = State::new(plan);
        looked.on_clock(plan.term_at(deadline) - MS(1), deadline, || true);
        assert!(matches!(
            looked.outcome(status, Report::Quiet, late, deadline),
            Outcome::Stopped(StopReason::Overdue)
        ));
    }

    #[test]
    fn nothing_is_continued_after_the_stop_time() {
        let (state, deadline, plan) = setup();
        assert!(state.may_run(plan.term_at(deadline) - MS(1), deadline));
        assert!(!state.may_run(plan.term_at(deadline), deadline));
        assert!(!state.may_run(deadline + MS(1), deadline));
    }

    #[test]
    fn a_group_that_outlives_sigkill_is_given_up_on() {
        let (mut state, deadline, _) = setup();
        state.on_clock(deadline, deadline, || true);
        state.on_exit(ExitStatus::from_raw(9));
        assert_eq!(state.finished(deadline + MS(500), false), None);
        assert!(state.finished(deadline + MS(1_001), false).is_some());
    }
}
