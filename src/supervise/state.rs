//! The supervisor's explicit state: whether the command runs, how far a stop
//! has gone and why, with one method per event. Pure: it decides what to do
//! to the command's group and leaves the doing to the supervisor, so that it
//! is tested without processes.

use std::process::ExitStatus;
use std::time::Duration;

use super::schedule::{next_action, Action, Stage, StopPlan};
use super::watchdog::Report;
use crate::clock::BootInstant;

/// How a supervised command ended.
#[derive(Debug)]
pub enum Outcome {
    /// It ended on its own (with what it left in its group), with this status.
    Ended(ExitStatus),
    /// It was stopped because the lock was lost or could have lapsed.
    Stopped(StopReason),
    /// It could not be started: not found, not executable.
    NotStarted(std::io::Error),
}

/// Why the command was stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// No extension came in time; the validity ended this much later.
    NotExtended { left: Duration },
    /// The stop was due while this process was not running (frozen,
    /// suspended), or the watchdog had to act.
    Overdue,
    /// A majority said the token is gone (the caller knows why).
    Lost,
    /// The stop time passed before the command could start (we were frozen
    /// between taking the lock and starting it): it was not started.
    TooLateToStart,
}

/// Something the supervisor did that the user may want to hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The command runs, as process `pid`.
    Started { pid: u32 },
    /// The command exited; the lock is held until what it left behind ends.
    HoldingForLeftovers,
    /// A process left behind stopped on the terminal again and gets `signal`.
    LeftoverStoppedAgain {
        pid: i32,
        signal: nix::sys::signal::Signal,
    },
    /// The watchdog process died: nothing would stop a frozen supervisor's
    /// command in time.
    WatchdogGone,
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
        }
    }

    pub fn is_running(&self) -> bool {
        self.exited.is_none()
    }

    /// No stop has begun: a loss of the lock is still news.
    pub fn is_watching(&self) -> bool {
        self.stage == Stage::Watching
    }

    pub fn is_stopping(&self) -> bool {
        self.reason.is_some()
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
        let mut effects = Vec::new();
        let mut alive = Some(alive);
        loop {
            let action = next_action(self.plan, now, deadline, self.stage);
            let due = !matches!(action, Action::Sleep(_));
            if due && self.stage == Stage::Watching && alive.take().is_some_and(|alive| !alive()) {
                self.found_ended = true;
            }
            match action {
                Action::Sleep(until) => return (effects, until),
                Action::Signal { kill_at } => {
                    if !self.found_ended {
                        self.reason = Some(StopReason::NotExtended {
                            left: deadline.saturating_since(now),
                        });
                    }
                    self.stage = Stage::Stopping { kill_at };
                    effects.push(Effect::Stop);
                }
                Action::Kill => {
                    if self.stage == Stage::Watching {
                        // We were frozen or suspended past the point of
                        // stopping: signal and kill at once.
                        if !self.found_ended {
                            self.reason = Some(StopReason::Overdue);
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

    /// A majority said the token is gone: stop now, SIGKILL after the grace
    /// period, and in any case before the deadline.
    pub fn on_loss(&mut self, now: BootInstant, deadline: BootInstant) -> Effect {
        let kill_at = (now + self.plan.grace).min(self.plan.kill_at(deadline));
        self.stage = Stage::Stopping { kill_at };
        self.reason = Some(StopReason::Lost);
        Effect::Stop
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
    /// when we did not in time, when we were frozen: then the lock may have
    /// lapsed while the command ran. If it found the command already ended
    /// at the stop time, the command's status stands, however late we saw
    /// the end. Without its word, an end seen after the stop time is taken
    /// as a stop.
    pub fn outcome(
        self,
        status: ExitStatus,
        watchdog: Report,
        now: BootInstant,
        deadline: BootInstant,
    ) -> Outcome {
        match (self.reason, watchdog) {
            (Some(reason), _) => Outcome::Stopped(reason),
            (None, Report::Stopped) => Outcome::Stopped(StopReason::Overdue),
            (None, Report::EndedInTime) => Outcome::Ended(status),
            (None, Report::Quiet) if now >= self.plan.term_at(deadline) => {
                Outcome::Stopped(StopReason::Overdue)
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
        let (mut state, deadline, _) = setup();
        let (effects, _) = state.on_clock(deadline + MS(1), deadline, || true);
        assert_eq!(effects, [Effect::Stop, Effect::Kill]);
        assert_eq!(state.reason, Some(StopReason::Overdue));
    }

    #[test]
    fn a_seen_loss_kills_after_the_grace_or_before_the_deadline() {
        let (mut state, deadline, plan) = setup();
        let now = deadline - MS(900);
        assert_eq!(state.on_loss(now, deadline), Effect::Stop);
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
        assert!(matches!(
            State::new(plan).outcome(status, Report::Stopped, before, deadline),
            Outcome::Stopped(StopReason::Overdue)
        ));
        assert!(matches!(
            State::new(plan).outcome(status, Report::Quiet, plan.term_at(deadline), deadline),
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
        assert!(matches!(
            State::new(plan).outcome(status, Report::Quiet, late, deadline),
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
