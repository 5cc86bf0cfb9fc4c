//! Job control for a command run on a terminal, done the way a shell does
//! it for a job. The command's process group gets the terminal:
//!
//! - whenever `exec`'s job has the terminal, when `exec` is alone in its job
//!   and stdin is the terminal, so that Ctrl-C and Ctrl-Z reach the command;
//! - otherwise (a script or pipeline that shares `exec`'s job, or stdin not
//!   the terminal) only when the command stops on reading or writing the
//!   terminal while `exec`'s job owns it, so that a prompt works.
//!
//! When the command is stopped from the terminal (Ctrl-Z), `exec` takes the
//! terminal back and stops its own job, so that the shell gets control;
//! continued (`fg`, `bg`), it continues the command too, and gives it the
//! terminal again when its job owns it. The terminal only ever changes hands
//! between `exec`'s job and the command's, never while someone else has it.

use std::cell::Cell;
use std::fs::File;
use std::io::IsTerminal as _;

use nix::errno::Errno;
use nix::sys::signal::{
    killpg, raise, sigaction, signal, SaFlags, SigAction, SigHandler, SigSet, Signal,
};
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use nix::unistd::{getpgrp, getpid, getsid, tcgetpgrp, tcsetpgrp, Pid};

use super::child::Group;
use super::proc;

/// Our controlling terminal.
pub struct Terminal {
    tty: File,
    /// Whether the command is to have the terminal whenever our job has it:
    /// we are alone in our job and stdin is the terminal.
    exclusive: bool,
    /// Our modes, restored when the command dies of a signal or is stopped
    /// (a full-screen program may leave the terminal raw), as shells do.
    modes: Option<Termios>,
    /// The command's modes when it was stopped, given back with the terminal
    /// once, the next time the command gets it.
    stopped_modes: Cell<Option<Termios>>,
}

/// Who has the terminal now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `exec`'s own job.
    Us,
    /// The command's process group.
    Command,
    /// Someone else: the shell, when we run in the background.
    Other,
}

impl Terminal {
    /// Our controlling terminal, if we have one (never under cron or CI).
    ///
    /// From then on this process ignores SIGTTOU: while the command has the
    /// terminal we are in the background, and must still be able to take it
    /// back and to write messages.
    pub fn open() -> Option<Terminal> {
        let tty = File::options()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let job = Job::ours();
        let stdin_is_it = std::io::stdin().is_terminal();
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) }.ok()?;
        Some(Terminal {
            exclusive: stdin_is_it && job.alone,
            modes: tcgetattr(&tty).ok(),
            tty,
            stopped_modes: Cell::new(None),
        })
    }

    /// Whether the command is to have the terminal whenever our job has it.
    /// Checked again all along, not only at the start: the shell that
    /// started us may give its job the terminal after we did (bash does it
    /// from the parent as well as from the child), and `fg` after `bg`
    /// gives it to our job.
    pub fn exclusive(&self) -> bool {
        self.exclusive
    }

    pub fn owner(&self, group: Group) -> Owner {
        match tcgetpgrp(&self.tty) {
            Ok(owner) if owner == getpgrp() => Owner::Us,
            Ok(owner) if owner.as_raw() == group.0 => Owner::Command,
            _ => Owner::Other,
        }
    }

    /// Gives the terminal to the command, with the modes it had when it was
    /// stopped, if our job has the terminal.
    pub fn give_to(&self, group: Group) {
        if self.owner(group) == Owner::Us {
            if let Some(modes) = self.stopped_modes.take() {
                let _ = tcsetattr(&self.tty, SetArg::TCSADRAIN, &modes);
            }
            let _ = tcsetpgrp(&self.tty, Pid::from_raw(group.0));
        }
    }

    /// Takes the terminal back if the command's group has it, or if it was
    /// left to a group that no longer exists (a command that failed to
    /// start). With `restore`, our own terminal modes are put back too.
    pub fn take_back(&self, group: Option<Group>, restore: bool) {
        let Ok(owner) = tcgetpgrp(&self.tty) else {
            return;
        };
        let abandoned = killpg(owner, None) == Err(Errno::ESRCH);
        if group.is_some_and(|group| owner.as_raw() == group.0) || abandoned {
            let _ = tcsetpgrp(&self.tty, getpgrp());
            if let (true, Some(modes)) = (restore, &self.modes) {
                let _ = tcsetattr(&self.tty, SetArg::TCSADRAIN, modes);
            }
        }
    }

    /// The command, which has the terminal, was stopped (Ctrl-Z): stop our
    /// job with it, so that the shell gets control; once continued, continue
    /// the command too, in the foreground if our job has the terminal, and if
    /// it may still run. `suspending` is told just before we stop.
    pub fn suspend_with(&self, group: Group, may_run: MayRun<'_>, suspending: Suspending<'_>) {
        if job_control() {
            self.stopped_modes.set(tcgetattr(&self.tty).ok());
            self.take_back(Some(group), true);
            suspending();
            stop_our_job();
            // Continued by `fg` (our job has the terminal), or by `bg` or
            // `kill %1` (it has not).
            self.give_to(group);
        }
        continue_if(group, may_run);
    }
}

/// Whether a shell can continue our job once it is stopped: our process
/// group is not orphaned. Otherwise (`script -c`, `ssh -t host cmd`, PID 1)
/// a stop from the terminal is undone, as the kernel does for orphaned
/// groups. Looked up when needed: the shell above us may be gone by then.
pub fn job_control() -> bool {
    !Job::ours().orphaned
}

/// Stops our job as a Ctrl-Z would: the other members (the shell running a
/// script, `less` at the end of a pipeline) get SIGTSTP, which they may
/// handle, as `less` does to restore the terminal first. We ignore it for
/// that moment, since our own handler would take it for a new Ctrl-Z, and
/// stop with SIGSTOP. Returns once we are continued.
fn stop_our_job() {
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: SIG_IGN installs no handler code, and the previous action is
    // put back as it was. An ignored signal is discarded when it is sent.
    if let Ok(previous) = unsafe { sigaction(Signal::SIGTSTP, &ignore) } {
        let _ = killpg(getpgrp(), Signal::SIGTSTP);
        // SAFETY: as above.
        let _ = unsafe { sigaction(Signal::SIGTSTP, &previous) };
    }
    let _ = raise(Signal::SIGSTOP);
}

/// What one scan of /proc tells about our process group.
struct Job {
    /// No other process shares our group.
    alone: bool,
    /// No member of our group has its parent in another group of our
    /// session: no job-control shell can continue the group once stopped.
    orphaned: bool,
}

impl Job {
    fn ours() -> Job {
        let (us, group, session) = (getpid().as_raw(), getpgrp().as_raw(), getsid(None));
        let table = proc::all();
        let members: Vec<&proc::Stat> = table.iter().filter(|p| p.group == group).collect();
        let outside_parent = |member: &&proc::Stat| {
            table
                .iter()
                .find(|p| p.pid == member.parent)
                .is_some_and(|parent| {
                    parent.group != group && Ok(Pid::from_raw(parent.session)) == session
                })
        };
        Job {
            alone: members.iter().all(|p| p.pid == us),
            orphaned: !members.iter().any(outside_parent),
        }
    }
}

/// The processes of `group` that are stopped (one /proc scan).
pub fn stopped_members(group: Group) -> Vec<Pid> {
    proc::all()
        .into_iter()
        .filter(|p| p.is_stopped() && p.group == group.0)
        .map(|p| Pid::from_raw(p.pid))
        .collect()
}

/// Whether the command `group` is stopped by a signal or job control: its
/// leader is, or its leader waits (state D) on a stopped child, as a shell
/// does when a Ctrl-Z stops the child it has just vforked.
pub fn is_stopped(group: Group) -> bool {
    let leader = group.0;
    match proc::stat(leader).map(|stat| stat.state) {
        Some('T') => true,
        // Only the leader's own children: a leader in D for disk I/O must
        // not cost a /proc scan every time we look.
        Some('D') => proc::children(leader)
            .into_iter()
            .any(|pid| proc::stat(pid).is_some_and(|stat| stat.is_stopped())),
        _ => false,
    }
}

/// Whether the command may run on: asked when it is about to be continued
/// after a stop, which may have outlasted the lock's stop time (nothing runs
/// under the lock after that; the stop schedule ends it instead).
pub type MayRun<'a> = &'a dyn Fn() -> bool;

/// Told just before `exec` stops its own job (Ctrl-Z): nothing extends the
/// lock while it is stopped, which the user is to hear before the shell's
/// prompt comes back.
pub type Suspending<'a> = &'a dyn Fn();

/// Continues a stopped command, if it may still run.
pub fn continue_if(group: Group, may_run: MayRun<'_>) {
    if may_run() {
        group.signal(Signal::SIGCONT);
    }
}

/// While the command runs: keep the terminal with it as a shell would. A
/// command stopped on the terminal is given it and continued when it needs
/// it (a prompt) or `fg` continued us; one stopped by Ctrl-Z stops our job
/// with it. A command whose job should own the terminal gets it back.
pub fn follow_terminal(
    terminal: &Terminal,
    group: Group,
    may_run: MayRun<'_>,
    suspending: Suspending<'_>,
) {
    if is_stopped(group) {
        match terminal.owner(group) {
            Owner::Us => {
                terminal.give_to(group);
                continue_if(group, may_run);
            }
            // Ctrl-Z. suspend_with always ends with the command continued,
            // so a command seen stopped here again has been stopped again,
            // however soon after.
            Owner::Command => terminal.suspend_with(group, may_run, suspending),
            // A background job waiting for the shell's `fg`.
            Owner::Other => {}
        }
    } else if terminal.exclusive() && terminal.owner(group) == Owner::Us {
        terminal.give_to(group);
    }
}

/// SIGTSTP reached exec itself: a Ctrl-Z while exec's job had the terminal
/// (a script or pipeline around exec, or the moment before the command got
/// the terminal), or `kill -TSTP`. The command is stopped as if it had got
/// it itself.
///
/// - On a terminal under a job-control shell, we stop too, so that the shell
///   sees the job stopped and takes the terminal; `fg` or `bg` continue us,
///   and we continue the command (in the foreground if it is ours to have).
/// - Without a terminal nobody waits for us to stop: we stay up, holding
///   and extending the lock, until SIGCONT to us continues the command.
///   Stopping ourselves there would race with that SIGCONT.
/// - On a terminal without job control (an orphaned group), it is ignored,
///   as the kernel ignores a Ctrl-Z for an orphaned group: nobody could
///   continue us.
pub fn suspend_job(
    group: Group,
    terminal: Option<&Terminal>,
    command_running: bool,
    may_run: MayRun<'_>,
    suspending: Suspending<'_>,
) {
    match terminal {
        None => group.signal(Signal::SIGTSTP),
        Some(terminal) if job_control() => {
            group.signal(Signal::SIGTSTP);
            suspending();
            let _ = raise(Signal::SIGSTOP);
            // What the command left behind after it exited stays in the
            // background.
            if command_running && terminal.exclusive() {
                terminal.give_to(group);
            }
            continue_if(group, may_run);
        }
        Some(_) => {}
    }
}

/// How often processes left behind by the command are checked for being
/// stopped on the terminal (a /proc scan each time).
const LEFTOVER_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The processes the command left in its group after it exited. They are no
/// job of the shell's: one that stops on the terminal would hold the lock
/// for good, so it is treated as the kernel treats an orphaned group.
#[derive(Debug, Default)]
pub struct Leftovers {
    /// How many times each was found stopped on the terminal.
    stops_seen: std::collections::HashMap<Pid, usize>,
    next_check: Option<crate::clock::BootInstant>,
}

impl Leftovers {
    /// Ends the stops of processes left in `group` on the terminal, at most
    /// once per [`LEFTOVER_CHECK`]. A process newly found stopped makes the
    /// whole group get SIGHUP and SIGCONT, as the kernel does when an
    /// orphaned group has a stopped member. One found stopped again (it
    /// ignores SIGHUP, under nohup) gets `signal`, then SIGKILL at the next
    /// look: the kernel would make its reads fail instead, which we cannot do
    /// for a group whose parent we are. Others, which never stopped, are left
    /// alone. Each escalation is handed to `report`.
    pub fn check(&mut self, group: Group, signal: Signal, report: &dyn Fn(Pid, Signal)) {
        let now = crate::clock::BootInstant::now();
        if self.next_check.is_some_and(|at| now < at) {
            return;
        }
        self.next_check = Some(now + LEFTOVER_CHECK);
        let mut hang_up = false;
        for pid in stopped_members(group) {
            let seen = self.stops_seen.entry(pid).or_default();
            *seen += 1;
            let escalation = match *seen {
                1 => {
                    hang_up = true;
                    continue;
                }
                2 => signal,
                _ => Signal::SIGKILL,
            };
            report(pid, escalation);
            let _ = nix::sys::signal::kill(pid, escalation);
            let _ = nix::sys::signal::kill(pid, Signal::SIGCONT);
        }
        if hang_up {
            group.signal(Signal::SIGHUP);
            group.signal(Signal::SIGCONT);
        }
    }
}
