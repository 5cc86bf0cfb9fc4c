//! Job control for a command run from an interactive terminal. The command's
//! process group gets the terminal, as a shell gives it to a job, so that
//! Ctrl-C and Ctrl-Z reach the command. When the command is stopped (Ctrl-Z),
//! `redlock exec` takes the terminal back and stops its own job, so that the
//! shell that started it gets control; when the shell continues it, the
//! command is continued too, and given the terminal again if we have it
//! (`fg`), not if we run in the background (`bg`).
//!
//! The terminal only ever changes hands between our own group and the
//! command's: never while the shell (or anyone else) has it.

use std::io::IsTerminal as _;

use nix::errno::Errno;
use nix::sys::signal::{killpg, signal, SigHandler, Signal};
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use nix::unistd::{getpgid, getpgrp, getpid, getppid, getsid, tcgetpgrp, tcsetpgrp, Pid};

use super::child::Group;

/// The terminal we run in the foreground of.
pub struct Terminal {
    stdin: std::io::Stdin,
    /// Our modes, restored when the command dies of a signal or is stopped
    /// (a full-screen program may leave the terminal raw), as shells do.
    modes: Option<Termios>,
    /// The command's modes when it was stopped, given back on `fg`.
    stopped_modes: Option<Termios>,
    /// Whether a job-control shell can continue us: our parent is in the
    /// same session but another process group. Otherwise (`script -c`,
    /// `ssh -t cmd`) our group is orphaned and cannot be stopped.
    job_control: bool,
}

impl Terminal {
    /// Some when stdin is a terminal whose foreground process group is ours
    /// and we are alone in it; None for cron, CI, pipes, jobs in the
    /// background, and pipelines or scripts that share our group (their
    /// other members must keep Ctrl-C and Ctrl-Z as they were).
    ///
    /// From then on this process ignores SIGTTOU: while the command has the
    /// terminal we are in the background, and must still be able to take it
    /// back and to write messages.
    pub fn foreground() -> Option<Terminal> {
        let stdin = std::io::stdin();
        let ours = stdin.is_terminal()
            && tcgetpgrp(&stdin).is_ok_and(|group| group == getpgrp())
            && alone_in_our_group();
        if !ours {
            return None;
        }
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) }.ok()?;
        let parent = getppid();
        let job_control = getsid(Some(parent)) == getsid(None)
            && getpgid(Some(parent)).is_ok_and(|group| group != getpgrp());
        Some(Terminal {
            modes: tcgetattr(&stdin).ok(),
            stdin,
            stopped_modes: None,
            job_control,
        })
    }

    fn foreground_group(&self) -> Option<Pid> {
        tcgetpgrp(&self.stdin).ok()
    }

    /// Gives the terminal to the command, if we have it.
    pub fn give_to(&self, group: Group) {
        if self.foreground_group() == Some(getpgrp()) {
            let _ = tcsetpgrp(&self.stdin, Pid::from_raw(group.0));
        }
    }

    /// Takes the terminal back if the command's group has it, or if it was
    /// left to a group that no longer exists (a command that failed to
    /// start). With `restore`, our own terminal modes are put back too.
    pub fn take_back(&self, group: Option<Group>, restore: bool) {
        let Some(foreground) = self.foreground_group() else {
            return;
        };
        let abandoned = killpg(foreground, None) == Err(Errno::ESRCH);
        if group.is_some_and(|group| foreground.as_raw() == group.0) || abandoned {
            let _ = tcsetpgrp(&self.stdin, getpgrp());
            if let (true, Some(modes)) = (restore, &self.modes) {
                let _ = tcsetattr(&self.stdin, SetArg::TCSADRAIN, modes);
            }
        }
    }

    /// The command was stopped (Ctrl-Z): stop our job with it, so that the
    /// shell gets control; when continued, continue the command as well.
    /// Without a job-control shell the stop is left as it is.
    pub fn suspend_with(&mut self, group: Group) {
        if !self.job_control {
            return;
        }
        self.stopped_modes = tcgetattr(&self.stdin).ok();
        self.take_back(Some(group), true);
        let _ = killpg(getpgrp(), Signal::SIGTSTP);
        // Continued: in the foreground (`fg`), or in the background (`bg`,
        // or `kill %1`, which continues its target to deliver the signal).
        if self.foreground_group() == Some(getpgrp()) {
            if let Some(modes) = &self.stopped_modes {
                let _ = tcsetattr(&self.stdin, SetArg::TCSADRAIN, modes);
            }
            self.give_to(group);
        }
        group.signal(Signal::SIGCONT);
    }
}

/// Whether no other process shares our process group (one /proc scan).
fn alone_in_our_group() -> bool {
    let (us, group) = (getpid().as_raw(), getpgrp().as_raw());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    !entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != us)
        .any(|pid| stat_field(pid, 2).is_some_and(|pgrp| pgrp == group.to_string()))
}

/// Field `index` after the command name of /proc/PID/stat (0: state,
/// 1: parent, 2: process group).
fn stat_field(pid: i32, index: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; what follows its
    // closing parenthesis is plain.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(index).map(str::to_owned)
}

/// Whether the process `pid` is stopped by a signal or job control.
pub fn is_stopped(pid: i32) -> bool {
    stat_field(pid, 0).is_some_and(|state| state == "T")
}
