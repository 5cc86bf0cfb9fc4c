//! Job control for a command run from an interactive terminal. The command's
//! process group gets the terminal, as a shell gives it to a job, so that
//! Ctrl-C and Ctrl-Z reach the command (and only it). When the command is
//! stopped (Ctrl-Z), `redlock exec` takes the terminal back and stops itself,
//! so that the shell that started it gets control; when the shell continues
//! it (`fg`), it gives the terminal back to the command and continues it.

use std::io::IsTerminal as _;

use nix::sys::signal::{raise, signal, SigHandler, Signal};
use nix::unistd::{getpgrp, tcgetpgrp, tcsetpgrp, Pid};

use super::child::Group;

/// The terminal we run in the foreground of.
pub struct Terminal {
    stdin: std::io::Stdin,
}

impl Terminal {
    /// Some when stdin is a terminal whose foreground process group is ours;
    /// None for cron, CI, pipes, and jobs in the background.
    ///
    /// From then on this process ignores SIGTTOU: once the command's group
    /// has the terminal, we are in the background, and must still be able to
    /// take the terminal back and to write messages.
    pub fn foreground() -> Option<Terminal> {
        let stdin = std::io::stdin();
        let ours = stdin.is_terminal() && tcgetpgrp(&stdin).is_ok_and(|group| group == getpgrp());
        if !ours {
            return None;
        }
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) }.ok()?;
        Some(Terminal { stdin })
    }

    pub fn give_to(&self, group: Group) {
        let _ = tcsetpgrp(&self.stdin, Pid::from_raw(group.0));
    }

    pub fn take_back(&self) {
        let _ = tcsetpgrp(&self.stdin, getpgrp());
    }

    /// The command was stopped from the terminal: stop with it until the
    /// shell continues us, then continue the command in the foreground.
    pub fn suspend_with(&self, group: Group) {
        self.take_back();
        let _ = raise(Signal::SIGTSTP);
        // Continued (`fg`); or never stopped, if our group is orphaned.
        self.give_to(group);
        group.signal(Signal::SIGCONT);
    }
}

/// Whether the process `pid` is stopped (by a signal or job control).
pub fn is_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|end| stat.get(end + 1..))
            .and_then(|rest| rest.split_whitespace().next())
            == Some("T")
    })
}
