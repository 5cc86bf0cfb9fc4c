//! A second process that enforces the lock's deadline even when the
//! supervisor is frozen (SIGSTOP, a debugger, swap) or killed.
//!
//! The supervisor starts it as `redlock __watchdog` in its own process group
//! (so terminal signals do not reach it) and talks to it over a pipe, one
//! line per message:
//!
//! - `group PGID`: the command's process group, what to stop, written by the
//!   command itself between fork and exec;
//! - `deadline NANOS`: the validity deadline on CLOCK_BOOTTIME, system-wide;
//! - `done`: the child has ended, exit quietly.
//!
//! It stops the target on the same schedule as the supervisor (see
//! [`StopPlan`]). End of file without `done` means the supervisor died: the
//! target is stopped at once. It wakes at least every [`CLOCK_CHECK`] to read the
//! boot clock, so that after a suspend it acts on resume, not a whole timeout
//! later (poll's own timeout does not count suspended time).
//!
//! It says `ready` on stdout once it listens, and exits with [`ACTED`] when
//! it had to signal the command.

use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd as _, BorrowedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;

use super::child::Group;
use super::StopPlan;
use crate::lock::BootInstant;

/// The longest the watchdog sleeps before it looks at the boot clock again.
const CLOCK_CHECK: Duration = Duration::from_millis(20);

/// The watchdog's exit status when it signalled the command: the supervisor
/// then reports the lock as lost, whatever the command's status.
pub const ACTED: u8 = 3;

/// This process's own binary, on Linux.
const SELF_EXE: &str = "/proc/self/exe";

/// What the watchdog writes on stdout once it is running and listening.
const READY: &[u8] = b"ready\n";

/// The supervisor's handle on its watchdog.
pub struct Watchdog {
    process: Child,
    pipe: Option<ChildStdin>,
}

impl Watchdog {
    /// Starts the watchdog and waits until it says it is ready, so that no
    /// command ever runs unguarded.
    pub fn spawn(signal: Signal, plan: StopPlan) -> io::Result<Self> {
        // /proc/self/exe is this very binary even after it was replaced or
        // deleted on disk (an upgrade while `exec -w` waited for the lock);
        // its path is not.
        let mut command = Command::new(SELF_EXE);
        command
            .arg0("redlock")
            .arg("__watchdog")
            .args(["--signal", &(signal as i32).to_string()])
            .args(["--grace-ms", &plan.grace.as_millis().to_string()])
            .args(["--margin-ms", &plan.margin.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0);
        // It takes nothing from the environment; a REDLOCK_* variable that
        // this exec overrode with a flag must not make it fail.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("REDLOCK_") {
                command.env_remove(name);
            }
        }
        let mut process = command.spawn()?;
        let mut ready = [0u8; READY.len()];
        let said_ready = match process.stdout.take() {
            Some(mut stdout) => stdout.read_exact(&mut ready).is_ok() && ready == READY,
            None => false,
        };
        if !said_ready {
            let _ = process.kill();
            let _ = process.wait();
            return Err(io::Error::other("it exited before it was ready"));
        }
        let pipe = process.stdin.take();
        Ok(Watchdog { process, pipe })
    }

    /// The pipe to the watchdog, for the command to announce its own group
    /// (`group PGID`) before it runs anything; see [`super::child::spawn`].
    pub fn pipe(&self) -> io::Result<BorrowedFd<'_>> {
        match &self.pipe {
            Some(pipe) => Ok(pipe.as_fd()),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    pub fn deadline(&mut self, deadline: BootInstant) -> io::Result<()> {
        self.send(&format!("deadline {}\n", deadline.as_nanos()))
    }

    /// Tells the watchdog the command has ended, reaps it, and says whether
    /// it had to signal the command.
    pub fn done(mut self) -> bool {
        let _ = self.send("done\n");
        self.pipe = None;
        self.process
            .wait()
            .is_ok_and(|status| status.code() == Some(i32::from(ACTED)))
    }

    fn send(&mut self, message: &str) -> io::Result<()> {
        match &mut self.pipe {
            Some(pipe) => pipe.write_all(message.as_bytes()),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
}

/// The watchdog process itself: returns when the command is done (false) or
/// after it signalled the command (true).
pub fn run(signal: Signal, plan: StopPlan) -> anyhow::Result<bool> {
    // Started from /proc/self/exe, we would show as `exe` in ps and top.
    let _ = nix::sys::prctl::set_name(c"redlock");
    {
        let mut stdout = io::stdout().lock();
        stdout.write_all(READY)?;
        stdout.flush()?;
    }
    let stdin = io::stdin();
    let mut target: Option<Group> = None;
    let mut deadline: Option<BootInstant> = None;
    // `signalled` follows the current deadline; `acted` remembers for good.
    let mut signalled = false;
    let mut acted = false;
    let mut unread = Vec::new();
    loop {
        let now = BootInstant::now();
        let mut next_step = now + CLOCK_CHECK;
        if let (Some(target), Some(deadline)) = (target, deadline) {
            if now >= plan.kill_at(deadline) {
                target.signal(Signal::SIGKILL);
                return Ok(true);
            }
            if now >= plan.term_at(deadline) && !signalled {
                target.signal(signal);
                target.signal(Signal::SIGCONT);
                signalled = true;
                acted = true;
            }
            next_step = if signalled {
                plan.kill_at(deadline)
            } else {
                plan.term_at(deadline)
            };
        }
        let wait = next_step.saturating_since(now).min(CLOCK_CHECK);
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(
            &mut fds,
            PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO),
        ) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(err) => return Err(err.into()),
        }
        let mut buffer = [0u8; 1024];
        let read = match nix::unistd::read(stdin.as_fd(), &mut buffer) {
            Ok(read) => read,
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Err(err) => return Err(err.into()),
        };
        if read == 0 {
            // The supervisor died without saying `done`.
            if let Some(target) = target {
                stop_now(target, signal, plan, deadline);
            }
            return Ok(target.is_some());
        }
        unread.extend_from_slice(&buffer[..read]);
        while let Some(end) = unread.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = unread.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["done"] => return Ok(acted),
                ["group", pgid] => {
                    if let Ok(pgid) = pgid.parse() {
                        target = Some(Group(pgid));
                    }
                }
                ["deadline", nanos] => {
                    if let Ok(nanos) = nanos.parse() {
                        deadline = Some(BootInstant::from_nanos(nanos));
                        signalled = false;
                    }
                }
                _ => {}
            }
        }
    }
}

/// Signal now, SIGKILL after the grace period or just before the deadline.
fn stop_now(target: Group, signal: Signal, plan: StopPlan, deadline: Option<BootInstant>) {
    target.signal(signal);
    target.signal(Signal::SIGCONT);
    let now = BootInstant::now();
    let kill_at = match deadline {
        Some(deadline) => (now + plan.grace).min(plan.kill_at(deadline)),
        None => now + plan.grace,
    };
    while BootInstant::now() < kill_at && !target.is_gone() {
        std::thread::sleep(kill_at.remaining().min(CLOCK_CHECK));
    }
    target.signal(Signal::SIGKILL);
}
