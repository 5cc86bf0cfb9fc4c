//! Starting the command and stopping it: its own process group (so that
//! `sh -c` grandchildren go with it), death with its supervisor, and exit
//! statuses passed through unchanged.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::ExitStatus;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{getpid, getppid, Pid};

use crate::exit_code::Exit;

/// What a stop signal is sent to: the child's whole process group, or only
/// the child when it shares the terminal's foreground group with us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub pid: i32,
    pub group: bool,
}

impl Target {
    /// Sends `signal`; a target that is already gone is not an error.
    pub fn signal(self, signal: Signal) {
        let pid = Pid::from_raw(self.pid);
        let _ = if self.group {
            killpg(pid, signal)
        } else {
            kill(pid, signal)
        };
    }

    /// Whether no process is left to stop.
    pub fn is_gone(self) -> bool {
        let pid = Pid::from_raw(self.pid);
        let probe = if self.group {
            killpg(pid, None)
        } else {
            kill(pid, None)
        };
        probe == Err(nix::errno::Errno::ESRCH)
    }
}

/// Starts `argv` with `env` added. With `own_group` the child leads a new
/// process group; either way it is SIGKILLed if this process dies, since it
/// must not run on without a supervisor (the lock would lapse under it).
///
/// The current thread must live as long as the child: PR_SET_PDEATHSIG fires
/// when the *thread* that forked exits. `exec` runs on the main thread's
/// single-threaded runtime for that reason.
pub fn spawn(
    argv: &[OsString],
    env: &[(&str, &OsString)],
    own_group: bool,
) -> io::Result<tokio::process::Child> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    if own_group {
        command.process_group(0);
    }
    let supervisor = getpid();
    // SAFETY: only async-signal-safe system calls (prctl, getppid) run
    // between fork and exec.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // The supervisor may have died before prctl took effect.
            if getppid() != supervisor {
                return Err(io::Error::other("the supervisor exited"));
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Replaces this process with `argv`: for a nested `exec` whose lock is
/// already held by the enclosing one. Returns only on failure.
pub fn exec_in_place(argv: &[OsString]) -> io::Error {
    match argv.split_first() {
        Some((program, args)) => std::process::Command::new(program).args(args).exec(),
        None => io::Error::new(io::ErrorKind::InvalidInput, "empty command"),
    }
}

/// The child's status as ours: its code unchanged, 128+N for signal N.
pub fn exit_for(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Internal,
    }
}

/// 127 when the command does not exist, 126 when it exists but cannot be run,
/// as shells do.
pub fn exit_for_spawn_error(err: &io::Error) -> Exit {
    if err.kind() == io::ErrorKind::NotFound {
        Exit::Code(127)
    } else {
        Exit::Code(126)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_like_a_shell() {
        assert_eq!(exit_for(ExitStatus::from_raw(0)), Exit::Code(0));
        assert_eq!(exit_for(ExitStatus::from_raw(7 << 8)), Exit::Code(7));
        assert_eq!(exit_for(ExitStatus::from_raw(9)), Exit::Signal(9));
        assert_eq!(exit_for(ExitStatus::from_raw(9)).code(), 137);
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(exit_for_spawn_error(&missing), Exit::Code(127));
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(exit_for_spawn_error(&denied), Exit::Code(126));
    }
}
