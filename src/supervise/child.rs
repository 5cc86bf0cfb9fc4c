//! Starting the command: it always leads a process group of its own, so that
//! `sh -c` grandchildren and background jobs go with it, and it dies with its
//! supervisor. Each spawn hook does one thing to the child between fork and
//! exec, in the manner of process-wrap's wrappers.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd as _, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;

use nix::errno::Errno;
use nix::sys::signal::{killpg, signal, SigHandler, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, getpid, getppid, Pid};

use crate::clock::BootInstant;
use crate::test_hooks;

/// What to run, and how to stop it.
#[derive(Debug)]
pub struct Command {
    pub argv: Vec<OsString>,
    /// Variables added to the command's environment.
    pub env: Vec<(&'static str, OsString)>,
    /// Variables taken out of it.
    pub env_remove: Vec<&'static str>,
    /// The signal that asks the command to stop.
    pub signal: Signal,
    pub plan: super::schedule::StopPlan,
    /// The command's time limit (`exec --timeout`), from its start.
    pub timeout: Option<std::time::Duration>,
}

/// The command's process group: what a stop is sent to. Its id is the
/// command's pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group(pub i32);

impl Group {
    /// Sends `signal` to every process in the group; an empty group is not
    /// an error.
    pub fn signal(self, signal: Signal) {
        let _ = killpg(Pid::from_raw(self.0), signal);
    }

    /// Whether a process of the group is still running: one that is not a
    /// zombie waiting to be reaped (by a supervisor that may be frozen).
    /// A process whose main thread exited shows as a zombie while its other
    /// threads run, so a zombie with threads left counts as live.
    pub fn has_live_members(self) -> bool {
        !self.is_gone() && super::proc::all().iter().any(|p| self.is_live_member(p))
    }

    /// The pids of the group's live members (see [`Self::has_live_members`]).
    /// An empty group costs one system call, not a walk through /proc: the
    /// common end of a command that left nothing behind.
    pub fn live_members(self) -> Vec<i32> {
        if self.is_gone() {
            return Vec::new();
        }
        super::proc::all()
            .iter()
            .filter(|p| self.is_live_member(p))
            .map(|p| p.pid)
            .collect()
    }

    fn is_live_member(self, p: &super::proc::Stat) -> bool {
        p.group == self.0 && (!matches!(p.state, 'Z' | 'X') || super::proc::threads(p.pid) > 1)
    }

    /// Whether no process is left in the group.
    pub fn is_gone(self) -> bool {
        killpg(Pid::from_raw(self.0), None) == Err(Errno::ESRCH)
    }

    /// Reaps members of the group that ended and are our children: the ones
    /// we adopted as a subreaper after their parent exited. Without this a
    /// zombie would keep the group, and so the lock, alive.
    pub fn reap_adopted(self) {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
        while let Ok(status) = waitid(Id::PGid(Pid::from_raw(self.0)), flags) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
    }
}

/// Makes this process the parent of every orphan among its descendants, so
/// that processes the command leaves behind stay in reach and are reaped by
/// us (also when we run as PID 1 in a container).
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// Starts `argv` with `env` added, as the leader of a new process group.
/// With `terminal`, that group becomes the terminal's foreground group, as a
/// shell does for a job, so that Ctrl-C and Ctrl-Z reach it. The command is
/// SIGKILLed if this process dies: it must not run on without a supervisor.
///
/// The current thread must live as long as the child: PR_SET_PDEATHSIG fires
/// when the *thread* that forked exits. `exec` runs on the main thread's
/// single-threaded runtime for that reason.
///
/// Before it runs anything, the child writes `group PGID` to `watchdog` (the
/// watchdog's pipe) itself: a supervisor killed between the fork and its own
/// next step would otherwise leave the watchdog without a target, and the
/// command's background processes running for good.
pub fn spawn(
    spec: &Command,
    terminal: bool,
    watchdog: BorrowedFd<'_>,
    start_by: BootInstant,
) -> io::Result<tokio::process::Child> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).process_group(0);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    let (supervisor, supervisor_group) = (getpid(), getpgrp());
    let watchdog = watchdog.as_raw_fd();
    // SAFETY: every hook makes only async-signal-safe system calls (prctl,
    // getppid, signal, write, tcgetpgrp, tcsetpgrp) and allocates nothing, as
    // is required between fork and exec. The hooks run in this order.
    let pause = test_hooks::pause_in_child();
    unsafe {
        command.pre_exec(move || die_with(supervisor));
        if let Some(pause) = pause {
            command.pre_exec(move || pause_in_child(pause));
        }
        // Also before the group is announced: past the kill time the
        // watchdog SIGKILLs a group the moment it learns it, and a child
        // killed before its last check could fail the spawn would look
        // started (the spawn sees only the exec pipe close), then stopped.
        command.pre_exec(move || not_after(start_by));
        command.pre_exec(move || announce_group(watchdog));
        if terminal {
            command.pre_exec(move || take_terminal_from(supervisor_group));
        }
        command.pre_exec(default_job_signals);
        command.pre_exec(move || not_after(start_by));
    }
    command.spawn()
}

/// The error a spawn fails with when the stop time had passed before the
/// command could start.
pub const TOO_LATE: i32 = nix::libc::ETIME;

/// Hook, the last before exec: fail if the stop time has passed, so that
/// nothing runs under a lock whose validity may be gone (we may have been
/// frozen between the fork and here). clock_gettime is async-signal-safe.
fn not_after(start_by: BootInstant) -> io::Result<()> {
    match BootInstant::now() >= start_by {
        true => Err(io::Error::from_raw_os_error(TOO_LATE)),
        false => Ok(()),
    }
}

/// How long the runtime keeps an idle blocking thread: tokio's default,
/// 10s. A child whose PR_SET_PDEATHSIG was set from such a thread would die
/// when it exits (see [`spawn`]); a test may shorten the wait for that
/// ([`test_hooks::thread_keep_alive`]).
pub fn blocking_thread_keep_alive() -> std::time::Duration {
    test_hooks::thread_keep_alive().unwrap_or(std::time::Duration::from_secs(10))
}

/// Hook for tests ([`test_hooks::pause_in_child`]): a freeze between fork
/// and exec, before anyone knows the command's group. nanosleep is
/// async-signal-safe.
fn pause_in_child(pause: std::time::Duration) -> io::Result<()> {
    let pause = nix::sys::time::TimeSpec::from_duration(pause);
    let _ = nix::time::clock_nanosleep(
        nix::time::ClockId::CLOCK_MONOTONIC,
        nix::time::ClockNanosleepFlags::empty(),
        &pause,
    );
    Ok(())
}

/// Hook: SIGKILL us when the supervisor dies, and fail the spawn if it died
/// before that took effect.
fn die_with(supervisor: Pid) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if getppid() != supervisor {
        return Err(Errno::ESRCH.into());
    }
    Ok(())
}

/// Hook: take the terminal for our new group, but only from our supervisor's
/// job, never from a shell that took it back meanwhile (Ctrl-Z and `bg`).
fn take_terminal_from(supervisor_group: Pid) -> io::Result<()> {
    let stdin = std::io::stdin();
    if nix::unistd::tcgetpgrp(&stdin) == Ok(supervisor_group) {
        nix::unistd::tcsetpgrp(&stdin, getpid())?;
    }
    Ok(())
}

/// Hook: our supervisor ignores SIGTTOU when it has a terminal (see
/// `Terminal`), and so did we until here. The command gets the default back,
/// and SIGTTIN's too, as a shell's job does: a read from the terminal in the
/// background must stop it, so that it can be given the terminal, not fail
/// with EIO.
fn default_job_signals() -> io::Result<()> {
    // SAFETY: SIG_DFL installs no handler code.
    unsafe {
        signal(Signal::SIGTTOU, SigHandler::SigDfl)?;
        signal(Signal::SIGTTIN, SigHandler::SigDfl)?;
    }
    Ok(())
}

/// Hook: writes `group PID\n` to the watchdog, in one write (a pipe takes up to
/// PIPE_BUF bytes at once), without allocating: we are between fork and exec.
fn announce_group(watchdog: RawFd) -> io::Result<()> {
    // SAFETY: the supervisor keeps the pipe open until the spawn returns,
    // and it stays open in the child until exec closes it (CLOEXEC).
    let watchdog = unsafe { BorrowedFd::borrow_raw(watchdog) };
    let mut line = [0u8; 32];
    let mut len = 0;
    for &byte in b"group " {
        line[len] = byte;
        len += 1;
    }
    let pid = getpid().as_raw().unsigned_abs();
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = pid;
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &digit in digits[..count].iter().rev() {
        line[len] = digit;
        len += 1;
    }
    line[len] = b'\n';
    len += 1;
    // A dead watchdog must fail the spawn with EPIPE, not kill us by SIGPIPE.
    // SAFETY: SIG_IGN and the default install no handler code.
    let pipe_default = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) }?;
    let written = nix::unistd::write(watchdog, &line[..len]);
    // SAFETY: as above; this is what std left there for the command.
    unsafe { signal(Signal::SIGPIPE, pipe_default) }?;
    match written {
        Ok(n) if n == len => Ok(()),
        Ok(_) => Err(Errno::EIO.into()),
        Err(errno) => Err(errno.into()),
    }
}

/// The command `word` names, spelled so that it runs: an executable file
/// when it holds a '/', else one in a directory of PATH (as execvp looks
/// for it), else an executable file in this directory (`./word`). `None`
/// when it names none. For the hint when the command cannot be run and
/// the lock's NAME is a command itself.
pub fn command_named(word: &OsStr) -> Option<OsString> {
    if word.is_empty() {
        return None;
    }
    if word.as_bytes().contains(&b'/') {
        return is_executable_file(Path::new(word)).then(|| word.to_owned());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let on_path = std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .any(|dir| is_executable_file(&dir.join(word)));
    if on_path {
        return Some(word.to_owned());
    }
    let here = Path::new(".").join(word);
    is_executable_file(&here).then(|| here.into_os_string())
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
        && nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// Replaces this process with `argv`: for a nested `exec` whose lock is
/// already held by the enclosing one. Returns only on failure.
pub fn exec_in_place(argv: &[OsString]) -> io::Error {
    match argv.split_first() {
        Some((program, args)) => std::process::Command::new(program).args(args).exec(),
        None => io::Error::new(io::ErrorKind::InvalidInput, "empty command"),
    }
}
