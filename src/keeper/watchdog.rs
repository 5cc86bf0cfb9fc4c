//! The keeper's watchdog: `exec`'s ([`Watchdog::fork_for`]), aimed at the
//! script instead of a command's group, on the keeper's own schedule. If
//! no extension comes, it signals the script before the validity ends; if
//! the keeper dies, at once.

use std::cell::RefCell;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::clock::BootInstant;
use crate::supervise::schedule::StopPlan;
use crate::supervise::watchdog::Target;
use crate::supervise::{Watchdog, Watched};

/// `exec`'s default `-k`: how long before SIGKILL its command gets the stop
/// signal, and so how long before the lock's end a keeper signals.
const EXEC_KILL_AFTER: Duration = Duration::from_secs(5);

/// The script, as the watchdog sees it: signalled as [`Holding::lose`]
/// signals it, through the same pidfd, and never killed.
struct Script(Watched);

impl Target for Script {
    fn stop(&self, signal: Signal) {
        self.0.signal(signal);
    }

    fn kills(&self) -> bool {
        false
    }

    fn has_live_members(&self) -> bool {
        self.0.is_alive() || !self.0.others_in_group(&[], u64::MAX).is_empty()
    }
}

/// The keeper's watchdog, on the schedule the keeper itself follows.
pub(super) fn fork_watchdog(
    watched: &Watched,
    signal: Signal,
    ttl: Duration,
) -> Result<Watchdog, String> {
    let script = watched
        .try_clone()
        .map_err(|err| format!("cannot watch the --while process: {err}"))?;
    Watchdog::fork_for(Box::new(Script(script)), signal, stop_plan(ttl))
        .map_err(|err| format!("cannot start the watchdog process: {err}"))
}

/// The keeper's watchdog, if it has one: fed each new deadline while the
/// lock is kept, and told `done` once it is not.
pub(super) type Dog = RefCell<Option<Watchdog>>;

/// How long before the validity ends a keeper that could not extend the
/// lock signals the script: when exec would send its command the stop
/// signal, exec's default -k (at most TTL/3) and a margin before, so that
/// a script that handles the signal has that long to stop before anyone
/// else can take the lock. No SIGKILL follows: the process is the caller's
/// shell (--while-signal KILL asks for a hard stop).
pub(super) fn stop_lead(ttl: Duration) -> Duration {
    let plan = stop_plan(ttl);
    plan.margin + plan.grace
}

/// The schedule the keeper and its watchdog both follow: the stop signal
/// at the plan's stop time (see [`stop_lead`]); its SIGKILL is never sent.
fn stop_plan(ttl: Duration) -> StopPlan {
    StopPlan::new(ttl, EXEC_KILL_AFTER)
}

/// Tells the watchdog the lock's new deadline. One that cannot hear it
/// (it died) is left be: the keeper still signals on its own schedule.
pub(super) fn feed(watchdog: &Dog, deadline: BootInstant) {
    if let Some(watchdog) = watchdog.borrow_mut().as_mut() {
        let _ = watchdog.deadline(deadline);
    }
}
