//! Running a command under a deadline: it runs only while the lock's
//! validity lasts, and is stopped before the validity can end. This module
//! knows processes, terminals and signals, and no Redis: the caller hands it
//! the deadlines as they are extended and a future that resolves when the
//! lock is known to be lost.
//!
//! Three parties keep the command inside the lock's validity:
//! - the caller's keeper extends the lock and publishes each new deadline;
//! - the supervisor stops the command when a loss is *seen* and,
//!   independently, on a schedule against the deadline ([`schedule`]), even
//!   while extensions are still being retried;
//! - the watchdog process enforces the same schedule when the supervisor is
//!   frozen or dead.

pub mod child;
mod job_control;
mod proc;
pub mod schedule;
mod state;
pub mod watchdog;
mod watched;

use std::future::Future;
use std::os::unix::process::ExitStatusExt as _;

use anyhow::Context as _;
use nix::sys::signal::Signal;
use tokio::process::Child;
use tokio::sync::watch;

use crate::clock::BootInstant;
use crate::signals::{Latest, Listener};
use crate::test_hooks;
use child::Group;
use job_control::{Leftovers, Terminal};
use state::{Effect, State};

pub use child::Command;
pub use state::{Event, Outcome, StopReason};
pub use watchdog::{Settle, Watchdog};
pub use watched::{started, with_ancestors, WatchError, Watched};

/// Signals sent to `redlock exec` that are passed on to the command.
pub const FORWARDED: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// Why the watchdog's absence stops everything: without it a frozen
/// supervisor could not stop the command in time.
const NO_WATCHDOG: &str = "the watchdog process is gone; not starting the command without it";

/// Runs `command` until it and the processes it left in its group have
/// ended, within the validity `deadlines` publish, guarded by `watchdog`
/// (forked with `command`'s signal and plan), stopping it when `lost`
/// resolves. `signals` (listened
/// for since before the lock was taken) are passed on to the command.
pub async fn run(
    command: &Command,
    mut watchdog: Watchdog,
    deadlines: watch::Receiver<BootInstant>,
    lost: impl Future<Output = ()>,
    signals: &mut Listener,
    report: &dyn Fn(Event),
) -> anyhow::Result<Outcome> {
    let terminal = Terminal::open();
    // From here on SIGTSTP no longer stops exec alone (see `suspend_job`),
    // and SIGCONT is passed on.
    let job_signals = Latest::new(&[Signal::SIGTSTP, Signal::SIGCONT])?;
    child::adopt_orphans();
    // The deadline goes first and the command announces its group itself,
    // so that the watchdog is never without either once the command runs.
    watchdog
        .deadline(*deadlines.borrow())
        .context(NO_WATCHDOG)?;
    test_hooks::pause_before_spawn();
    // Nothing under the lock may start once the stop time has passed: we may
    // have been frozen since the lock was taken. The child checks again,
    // just before it becomes the command.
    let start_by = command.plan.term_at(*deadlines.borrow());
    let child = match start(command, terminal.as_ref(), &watchdog, start_by) {
        Ok(child) => child,
        Err(err) => {
            watchdog.done();
            return match err.kind() {
                std::io::ErrorKind::BrokenPipe => Err(err).context(NO_WATCHDOG),
                _ if err.raw_os_error() == Some(child::TOO_LATE) => {
                    Ok(Outcome::Stopped(StopReason::TooLateToStart))
                }
                _ => Ok(Outcome::NotStarted(err)),
            };
        }
    };
    if let Some(pid) = child.process.id() {
        report(Event::Started { pid });
    }
    let state = State::new(command.plan).with_timeout(BootInstant::now(), command.timeout);
    let supervisor = Supervisor {
        group: child.group,
        deadline: *deadlines.borrow(),
        terminal,
        signal: command.signal,
        state,
        watchdog,
        watchdog_alive: true,
        leftovers: Leftovers::default(),
        report,
    };
    supervisor
        .supervise(child.process, deadlines, lost, signals, job_signals)
        .await
}

/// Whether process `pid` is stopped (SIGSTOP, or a debugger's stop), as
/// /proc says now.
pub fn is_stopped(pid: i32) -> bool {
    proc::stat(pid).is_some_and(|stat| matches!(stat.state, 'T' | 't'))
}

/// The processes left in `group` that still run, as `ps` shows them.
fn leftovers(group: Group) -> Vec<state::Leftover> {
    group
        .live_members()
        .into_iter()
        .map(|pid| state::Leftover {
            pid,
            command: proc::command_line(pid).unwrap_or_default(),
        })
        .collect()
}

/// Tests only (debug builds): sleeps for the milliseconds the variable
/// `name` gives, so that a test can freeze exec at a point that matters.
/// A command that has started, and its process group.
struct Started {
    process: Child,
    group: Group,
}

fn start(
    command: &Command,
    terminal: Option<&Terminal>,
    watchdog: &Watchdog,
    start_by: BootInstant,
) -> std::io::Result<Started> {
    if BootInstant::now() >= start_by {
        return Err(std::io::Error::from_raw_os_error(child::TOO_LATE));
    }
    let exclusive_terminal = terminal.is_some_and(Terminal::exclusive);
    let spawned = watchdog
        .pipe()
        .and_then(|pipe| child::spawn(command, exclusive_terminal, pipe, start_by));
    let mut process = match spawned {
        Ok(process) => process,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => return Err(err),
        Err(err) => {
            if let Some(terminal) = terminal {
                // The child may have taken the terminal before exec failed.
                terminal.take_back(None, false);
            }
            return Err(err);
        }
    };
    // A spawned child keeps its pid until it is reaped, which only we do.
    let Some(pid) = process.id().and_then(|id| i32::try_from(id).ok()) else {
        let _ = process.start_kill();
        return Err(std::io::Error::other(
            "the command started without a process id",
        ));
    };
    let group = Group(pid);
    if let (Some(terminal), true) = (terminal, exclusive_terminal) {
        // The child does this too; whichever comes first wins the race.
        terminal.give_to(group);
    }
    Ok(Started { process, group })
}

/// The supervisor of one running command: its state, and the processes and
/// terminal it acts on. One method per event.
struct Supervisor<'a> {
    group: Group,
    /// The latest validity deadline.
    deadline: BootInstant,
    terminal: Option<Terminal>,
    signal: Signal,
    state: State,
    watchdog: Watchdog,
    watchdog_alive: bool,
    leftovers: Leftovers,
    report: &'a dyn Fn(Event),
}

impl Supervisor<'_> {
    async fn supervise(
        mut self,
        mut process: Child,
        mut deadlines: watch::Receiver<BootInstant>,
        lost: impl Future<Output = ()>,
        signals: &mut Listener,
        mut job_signals: Latest,
    ) -> anyhow::Result<Outcome> {
        tokio::pin!(lost);
        let status = loop {
            let deadline = *deadlines.borrow();
            self.deadline = deadline;
            let now = BootInstant::now();
            if let Some(status) = self.tend(now) {
                break status;
            }
            let wake = self.on_clock(now, deadline);
            tokio::select! {
                status = process.wait(), if self.state.is_running() => {
                    if let Err(err) = self.on_exit(status) {
                        self.watchdog.done();
                        return Err(anyhow::Error::from(err).context("waiting for the command"));
                    }
                }
                () = &mut lost, if self.state.is_watching() => {
                    if let Some(effect) = self.state.on_loss(BootInstant::now(), deadline) {
                        self.apply(effect);
                    }
                }
                Ok(()) = deadlines.changed() => self.on_deadline(*deadlines.borrow_and_update()),
                signal = job_signals.recv() => self.on_job_signal(signal),
                signal = signals.recv() => self.on_forwarded(signal),
                () = tokio::time::sleep(wake.saturating_since(now)) => {}
            }
        };
        Ok(self.finish(status, *deadlines.borrow()))
    }

    /// Looks after the command between events: its terminal while it runs;
    /// once it exited, what it left behind. Returns its status once it and
    /// its group are done.
    fn tend(&mut self, now: BootInstant) -> Option<std::process::ExitStatus> {
        if self.state.is_running() {
            if let Some(terminal) = &self.terminal {
                let (may_run, suspending) = (self.may_run(), self.suspending());
                job_control::follow_terminal(terminal, self.group, &may_run, &suspending);
            }
            return None;
        }
        self.group.reap_adopted();
        if self.terminal.is_some() {
            let report = self.report;
            self.leftovers
                .check(self.group, self.signal, &|pid, signal| {
                    report(Event::LeftoverStoppedAgain {
                        pid: pid.as_raw(),
                        signal,
                    })
                });
        }
        self.state.finished(now, self.group.is_gone())
    }

    /// Follows the stop schedule; returns when to look again.
    fn on_clock(&mut self, now: BootInstant, deadline: BootInstant) -> BootInstant {
        let group = self.group;
        let (effects, wake) = self
            .state
            .on_clock(now, deadline, || group.has_live_members());
        for effect in effects {
            self.apply(effect);
        }
        wake
    }

    fn apply(&self, effect: Effect) {
        match effect {
            Effect::Stop => watchdog::stop(self.group, self.signal),
            Effect::Kill => self.group.signal(Signal::SIGKILL),
        }
    }

    fn on_exit(
        &mut self,
        status: std::io::Result<std::process::ExitStatus>,
    ) -> std::io::Result<()> {
        let status = match status {
            Ok(status) => status,
            Err(err) => {
                self.group.signal(Signal::SIGKILL);
                if let Some(terminal) = &self.terminal {
                    terminal.take_back(Some(self.group), true);
                }
                return Err(err);
            }
        };
        self.state.on_exit(status);
        // What the command left behind runs on in the background; the
        // terminal goes back to our job.
        if let Some(terminal) = &self.terminal {
            terminal.take_back(Some(self.group), status.signal().is_some());
        }
        // During a stop the whole group has had the stop signal: what is
        // still there is on its way out (or gets SIGKILL on schedule), and
        // the stop's own message says what happened. Naming it as left
        // behind, with "SIGINT or SIGTERM to redlock stops them", would
        // mislead.
        let processes = match self.state.is_stopping() {
            true => Vec::new(),
            false => leftovers(self.group),
        };
        if !processes.is_empty() {
            (self.report)(Event::HoldingForLeftovers {
                processes,
                terminal: self.terminal.is_some(),
            });
        }
        Ok(())
    }

    fn on_deadline(&mut self, deadline: BootInstant) {
        let sent = self.watchdog.deadline(deadline);
        if sent.is_err() && self.watchdog_alive {
            self.watchdog_alive = false;
            (self.report)(Event::WatchdogGone);
        }
    }

    fn on_job_signal(&self, signal: Signal) {
        let (may_run, suspending) = (self.may_run(), self.suspending());
        match signal {
            Signal::SIGTSTP => job_control::suspend_job(
                self.group,
                self.terminal.as_ref(),
                self.state.is_running(),
                &may_run,
                &suspending,
            ),
            _ => job_control::continue_if(self.group, &may_run),
        }
    }

    /// Whether the command may be continued now: not after the stop time of
    /// the latest deadline, asked when it is about to be continued.
    fn may_run(&self) -> impl Fn() -> bool + use<'_> {
        let (state, deadline) = (&self.state, self.deadline);
        move || state.may_run(BootInstant::now(), deadline)
    }

    /// Says, just before our job stops (Ctrl-Z), how long the command may
    /// still be continued: nothing extends the lock meanwhile.
    fn suspending(&self) -> impl Fn() + use<'_> {
        let (state, deadline, report) = (&self.state, self.deadline, self.report);
        move || {
            let stop_in = state
                .stop_time(deadline)
                .saturating_since(BootInstant::now());
            report(Event::Suspending { stop_in });
        }
    }

    /// A signal to pass on; or, once the command has exited and only what it
    /// left holds the lock, a request to end them (see
    /// [`State::on_interrupt`]).
    fn on_forwarded(&mut self, signal: Signal) {
        let ending = matches!(
            signal,
            Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT
        );
        let effect = match ending {
            true => self.state.on_interrupt(BootInstant::now(), self.deadline),
            false => None,
        };
        let Some(effect) = effect else {
            return self.forward(signal);
        };
        (self.report)(match effect {
            Effect::Stop => Event::StoppingLeftovers {
                signal: self.signal,
                kill_in: self.state.grace(),
                terminal: self.terminal.is_some(),
            },
            Effect::Kill => Event::KillingLeftovers,
        });
        self.apply(effect);
    }

    fn forward(&self, signal: Signal) {
        self.group.signal(signal);
        // A stopped command would keep these pending forever.
        if matches!(
            signal,
            Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT
        ) {
            self.group.signal(Signal::SIGCONT);
        }
    }

    fn finish(self, status: std::process::ExitStatus, deadline: BootInstant) -> Outcome {
        if let Some(terminal) = &self.terminal {
            let restore = self.state.is_stopping() || status.signal().is_some();
            terminal.take_back(Some(self.group), restore);
        }
        let report = self.watchdog.done();
        self.state
            .outcome(status, report, BootInstant::now(), deadline)
    }
}
