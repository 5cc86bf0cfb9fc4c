//! When a command running under a lock is stopped, relative to the lock's
//! validity deadline. One pure schedule, followed by the supervisor and by
//! the watchdog process alike.

use std::time::Duration;

use crate::clock::BootInstant;

/// The longest either process sleeps before it looks at the boot clock
/// again: timers and poll(2) do not count time spent suspended, so after a
/// resume a stop is due at once, not a whole sleep later.
pub const CLOCK_CHECK: Duration = Duration::from_millis(20);

/// When the child is stopped, relative to the lock's validity deadline: the
/// stop signal `grace + margin` before it, SIGKILL `margin` before it, so
/// that the child and its group are gone before the lock can lapse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopPlan {
    /// Time between the stop signal and SIGKILL: `-k`, capped at TTL/3 so
    /// that a successful extension every TTL/3 always comes first.
    pub grace: Duration,
    /// How long before the deadline SIGKILL is sent: TTL/20, within 5–200ms.
    pub margin: Duration,
}

impl StopPlan {
    pub fn new(ttl: Duration, kill_after: Duration) -> Self {
        // Whole milliseconds, the unit the watchdog receives them in, so
        // that both processes follow exactly the same schedule.
        let whole_ms =
            |d: Duration| Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        StopPlan {
            grace: whole_ms(kill_after.min(ttl / 3)),
            margin: whole_ms(
                (ttl / 20).clamp(Duration::from_millis(5), Duration::from_millis(200)),
            ),
        }
    }

    pub fn term_at(self, deadline: BootInstant) -> BootInstant {
        deadline - self.margin - self.grace
    }

    pub fn kill_at(self, deadline: BootInstant) -> BootInstant {
        deadline - self.margin
    }
}

/// How far a stop has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Nothing sent: the command runs while the deadline allows.
    Watching,
    /// The stop signal was sent; SIGKILL follows at `kill_at`.
    Stopping { kill_at: BootInstant },
    /// SIGKILL was sent.
    Killed,
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing before this instant (never more than [`CLOCK_CHECK`] away).
    Sleep(BootInstant),
    /// Send the stop signal now; SIGKILL is due at `kill_at`.
    Signal { kill_at: BootInstant },
    /// Send SIGKILL now.
    Kill,
}

/// The next step of `plan` at `now`, for a lock valid until `deadline`.
pub fn next_action(
    plan: StopPlan,
    now: BootInstant,
    deadline: BootInstant,
    stage: Stage,
) -> Action {
    let check = now + CLOCK_CHECK;
    match stage {
        Stage::Watching if now >= plan.kill_at(deadline) => Action::Kill,
        Stage::Watching if now >= plan.term_at(deadline) => Action::Signal {
            kill_at: plan.kill_at(deadline),
        },
        Stage::Watching => Action::Sleep(plan.term_at(deadline).min(check)),
        Stage::Stopping { kill_at } if now >= kill_at => Action::Kill,
        Stage::Stopping { kill_at } => Action::Sleep(kill_at.min(check)),
        Stage::Killed => Action::Sleep(check),
    }
}

/// Which deadline an action of [`next_action_within`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// The lock's validity deadline: the schedule of [`next_action`].
    Lock,
    /// The command's own time limit (`exec --timeout`).
    Timeout,
}

/// [`next_action`] with a second deadline, the command's own time limit
/// `timeout_at` (`exec --timeout`). When it passes before the lock's schedule
/// has begun a stop, the command is stopped on the same plan: the stop
/// signal now, SIGKILL after the grace period and never later than the
/// lock's kill time. The lock's schedule, once begun, is never put off by
/// it. The watchdog does not follow this one: a time limit is the job's,
/// not the lock's safety.
pub fn next_action_within(
    plan: StopPlan,
    now: BootInstant,
    deadline: BootInstant,
    timeout_at: Option<BootInstant>,
    stage: Stage,
) -> (Action, Due) {
    let action = next_action(plan, now, deadline, stage);
    match (stage, timeout_at, action) {
        (Stage::Watching, Some(at), Action::Sleep(_)) if now >= at => (
            Action::Signal {
                kill_at: (now + plan.grace).min(plan.kill_at(deadline)),
            },
            Due::Timeout,
        ),
        (Stage::Watching, Some(at), Action::Sleep(until)) => {
            (Action::Sleep(until.min(at)), Due::Lock)
        }
        _ => (action, Due::Lock),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn stop_plan_lands_the_kill_before_the_deadline() {
        let plan = StopPlan::new(MS(30_000), MS(5_000));
        assert_eq!(
            plan,
            StopPlan {
                grace: MS(5_000),
                margin: MS(200)
            }
        );
        let short = StopPlan::new(MS(1_000), MS(5_000));
        assert_eq!(
            short,
            StopPlan {
                grace: MS(333),
                margin: MS(50)
            }
        );
        let deadline = BootInstant::from_nanos(10_000_000_000);
        assert_eq!(
            short.kill_at(deadline),
            BootInstant::from_nanos(9_950_000_000)
        );
        assert_eq!(
            short.term_at(deadline),
            BootInstant::from_nanos(10_000_000_000 - 50_000_000 - 333_000_000)
        );
        assert_eq!(StopPlan::new(MS(20), MS(0)).margin, MS(5));
    }

    #[test]
    fn the_schedule_signals_then_kills_before_the_deadline() {
        let plan = StopPlan::new(MS(1_000), MS(5_000));
        let deadline = BootInstant::from_nanos(10_000_000_000);
        let (term_at, kill_at) = (plan.term_at(deadline), plan.kill_at(deadline));
        let watching = Stage::Watching;
        // Long before: sleep, but never past a clock check.
        let early = term_at - MS(500);
        assert_eq!(
            next_action(plan, early, deadline, watching),
            Action::Sleep(early + CLOCK_CHECK)
        );
        // Just before the stop: sleep until exactly then.
        let near = term_at - MS(5);
        assert_eq!(
            next_action(plan, near, deadline, watching),
            Action::Sleep(term_at)
        );
        assert_eq!(
            next_action(plan, term_at, deadline, watching),
            Action::Signal { kill_at }
        );
        let stopping = Stage::Stopping { kill_at };
        assert_eq!(
            next_action(plan, kill_at - MS(1), deadline, stopping),
            Action::Sleep(kill_at)
        );
        assert_eq!(next_action(plan, kill_at, deadline, stopping), Action::Kill);
        // Woken after the kill point (frozen, suspended): kill at once.
        assert_eq!(
            next_action(plan, deadline + MS(1), deadline, watching),
            Action::Kill
        );
        let killed = next_action(plan, deadline, deadline, Stage::Killed);
        assert_eq!(killed, Action::Sleep(deadline + CLOCK_CHECK));
    }

    #[test]
    fn an_earlier_kill_time_of_a_seen_loss_is_kept() {
        let plan = StopPlan::new(MS(30_000), MS(5_000));
        let deadline = BootInstant::from_nanos(100_000_000_000);
        let kill_at = BootInstant::from_nanos(1_000_000_000);
        let now = kill_at - MS(100);
        let stage = Stage::Stopping { kill_at };
        assert_eq!(
            next_action(plan, now, deadline, stage),
            Action::Sleep(now + CLOCK_CHECK)
        );
        assert_eq!(next_action(plan, kill_at, deadline, stage), Action::Kill);
    }
    #[test]
    fn a_timeout_stops_on_the_same_plan_unless_the_lock_came_first() {
        let plan = StopPlan::new(MS(30_000), MS(5_000));
        let deadline = BootInstant::from_nanos(100_000_000_000);
        let watching = Stage::Watching;
        let timeout_at = BootInstant::from_nanos(50_000_000_000);
        // Before it: sleep no later than the time limit.
        let near = timeout_at - MS(5);
        assert_eq!(
            next_action_within(plan, near, deadline, Some(timeout_at), watching),
            (Action::Sleep(timeout_at), Due::Lock)
        );
        // At it: the stop signal, SIGKILL after the grace period.
        assert_eq!(
            next_action_within(plan, timeout_at, deadline, Some(timeout_at), watching),
            (
                Action::Signal {
                    kill_at: timeout_at + plan.grace
                },
                Due::Timeout
            )
        );
        // Just before the lock's own stop, SIGKILL still lands before its
        // kill time.
        let late = plan.term_at(deadline) - MS(1);
        let (action, due) = next_action_within(plan, late, deadline, Some(timeout_at), watching);
        assert_eq!(due, Due::Timeout);
        assert!(
            matches!(action, Action::Signal { kill_at } if kill_at <= plan.kill_at(deadline)),
            "{action:?}"
        );
        // The lock's schedule first: it is the lock's stop.
        let term_at = plan.term_at(deadline);
        assert_eq!(
            next_action_within(plan, term_at, deadline, Some(timeout_at), watching).1,
            Due::Lock
        );
        // A stop under way is not started again.
        let stopping = Stage::Stopping {
            kill_at: timeout_at + plan.grace,
        };
        assert_eq!(
            next_action_within(
                plan,
                timeout_at + MS(1),
                deadline,
                Some(timeout_at),
                stopping
            ),
            (Action::Sleep(timeout_at + MS(1) + CLOCK_CHECK), Due::Lock)
        );
        // Without a time limit, it is the lock's schedule alone.
        assert_eq!(
            next_action_within(plan, near, deadline, None, watching),
            (next_action(plan, near, deadline, watching), Due::Lock)
        );
    }

    /// What following the schedule does from `start`: when the stop signal
    /// and SIGKILL go out, as a supervisor that wakes exactly when told
    /// (and never later than a clock check) would send them.
    fn follow(
        plan: StopPlan,
        start: BootInstant,
        deadline: BootInstant,
        timeout_at: Option<BootInstant>,
    ) -> (Option<(BootInstant, Due)>, BootInstant) {
        let (mut now, mut stage, mut signalled) = (start, Stage::Watching, None);
        loop {
            match next_action_within(plan, now, deadline, timeout_at, stage) {
                (Action::Sleep(until), _) => {
                    assert!(until > now && until.saturating_since(now) <= CLOCK_CHECK);
                    now = until;
                }
                (Action::Signal { kill_at }, due) => {
                    assert!(signalled.is_none(), "a second stop signal at {now:?}");
                    signalled = Some((now, due));
                    stage = Stage::Stopping { kill_at };
                }
                (Action::Kill, _) => return (signalled, now),
            }
        }
    }

    /// The lock's stop, end to end: one stop signal `-k` before SIGKILL,
    /// SIGKILL the margin before the validity runs out (tests/cli/exec.rs
    /// keeps one run of it against real servers and a real child).
    #[test]
    fn followed_through_the_lock_stop_signals_once_then_kills_before_the_lapse() {
        let start = BootInstant::from_nanos(1_000_000_000);
        for (ttl, kill_after) in [(1_000, 5_000), (3_000, 1_000), (30_000, 5_000), (60, 10)] {
            let plan = StopPlan::new(MS(ttl), MS(kill_after));
            let deadline = start + MS(ttl);
            let (signalled, killed) = follow(plan, start, deadline, None);
            let (term, due) = signalled.expect("a stop signal before SIGKILL");
            assert_eq!((term, due), (plan.term_at(deadline), Due::Lock), "{ttl}");
            assert_eq!(killed, plan.kill_at(deadline), "{ttl}");
            assert_eq!(killed.saturating_since(term), MS(kill_after.min(ttl / 3)));
            assert!(killed < deadline, "{ttl}");
        }
        // With no grace at all (`-k 0`), SIGKILL is the stop.
        let plan = StopPlan::new(MS(1_000), MS(0));
        let deadline = start + MS(1_000);
        assert_eq!(
            follow(plan, start, deadline, None),
            (None, plan.kill_at(deadline))
        );
    }

    /// `exec --ttl 3s -k 1s --timeout 300ms`: the stop signal at 300ms, and
    /// SIGKILL a second later, long before the lock's own stop.
    #[test]
    fn followed_through_a_timeout_kills_after_the_grace_period() {
        let start = BootInstant::from_nanos(1_000_000_000);
        let plan = StopPlan::new(MS(3_000), MS(1_000));
        let deadline = start + MS(3_000);
        let timeout_at = start + MS(300);
        let (signalled, killed) = follow(plan, start, deadline, Some(timeout_at));
        assert_eq!(signalled, Some((timeout_at, Due::Timeout)));
        assert_eq!(killed, timeout_at + MS(1_000));
        // A time limit later than the lock's stop changes nothing.
        let late = Some(deadline + MS(1));
        assert_eq!(
            follow(plan, start, deadline, late),
            follow(plan, start, deadline, None)
        );
    }

    /// A supervisor frozen past the kill time (SIGSTOP, a suspend) kills
    /// at once when it wakes, without a stop signal first.
    #[test]
    fn woken_past_the_kill_time_the_schedule_kills_at_once() {
        let plan = StopPlan::new(MS(3_000), MS(1_000));
        let deadline = BootInstant::from_nanos(10_000_000_000);
        let woken = deadline + MS(500);
        assert_eq!(follow(plan, woken, deadline, None), (None, woken));
        let between = plan.term_at(deadline) + MS(10);
        let (signalled, killed) = follow(plan, between, deadline, None);
        assert_eq!(signalled, Some((between, Due::Lock)));
        assert_eq!(killed, plan.kill_at(deadline));
    }
}
