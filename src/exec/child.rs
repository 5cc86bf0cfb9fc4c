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

/// What a stop signal is sent to: the child's whole process group, or, when
/// it shares the terminal's foreground group with us, the child and its
/// descendants. Either way, descendants the child moved to other process
/// groups (an interactive shell's jobs, say) are signalled too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub pid: i32,
    pub group: bool,
}

impl Target {
    /// Sends `signal`; processes that are already gone are not an error.
    pub fn signal(self, signal: Signal) {
        let pid = Pid::from_raw(self.pid);
        let outside_group = descendants(self.pid)
            .into_iter()
            .filter(|process| !self.group || process.pgid != self.pid);
        let outside_group: Vec<Process> = outside_group.collect();
        let _ = if self.group {
            killpg(pid, signal)
        } else {
            kill(pid, signal)
        };
        for process in outside_group {
            let _ = kill(Pid::from_raw(process.pid), signal);
        }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    pid: i32,
    pgid: i32,
}

/// Every live descendant of `ancestor`, from /proc (empty where there is no
/// /proc). A snapshot: a process may fork right after it was read.
fn descendants(ancestor: i32) -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent, process group) of every process.
    let table: Vec<(i32, i32, i32)> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name (field 2) may hold spaces and parentheses;
            // the fields after its closing parenthesis are plain numbers.
            let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
            let _state = fields.next()?;
            let parent = fields.next()?.parse().ok()?;
            let pgid = fields.next()?.parse().ok()?;
            Some((pid, parent, pgid))
        })
        .collect();
    let mut found: Vec<Process> = Vec::new();
    let mut frontier = vec![ancestor];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, pgid) in &table {
            if ppid == parent && !found.iter().any(|p| p.pid == pid) {
                found.push(Process { pid, pgid });
                frontier.push(pid);
            }
        }
    }
    found
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
    fn descendants_are_found_through_proc() {
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & sleep 5 & wait"])
            .spawn()
            .unwrap();
        let shell_pid = shell.id() as i32;
        let mut found = Vec::new();
        for _ in 0..200 {
            found = descendants(shell_pid);
            if found.len() == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Target {
            pid: shell_pid,
            group: false,
        }
        .signal(Signal::SIGKILL);
        let _ = shell.wait();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(descendants(i32::MAX).is_empty());
    }

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
