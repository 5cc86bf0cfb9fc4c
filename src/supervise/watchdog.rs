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
//! [`super::schedule`]). End of file without `done` means the supervisor died: the
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
use super::schedule::{next_action, Action, Stage, StopPlan, CLOCK_CHECK};
use crate::clock::BootInstant;

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

/// What the supervisor said over the pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    Group(Group),
    Deadline(BootInstant),
    Done,
}

impl Message {
    fn parse(line: &[u8]) -> Option<Message> {
        let line = std::str::from_utf8(line).ok()?;
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["done"] => Some(Message::Done),
            ["group", pgid] => Some(Message::Group(Group(pgid.parse().ok()?))),
            ["deadline", nanos] => Some(Message::Deadline(BootInstant::from_nanos(
                nanos.parse().ok()?,
            ))),
            _ => None,
        }
    }
}

/// The watchdog process itself: returns when the command is done (false) or
/// after it signalled the command (true).
pub fn run(signal: Signal, plan: StopPlan) -> io::Result<bool> {
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
    let (mut signalled, mut acted) = (false, false);
    let mut unread = Vec::new();
    loop {
        let now = BootInstant::now();
        let mut wake = now + CLOCK_CHECK;
        if let (Some(target), Some(deadline)) = (target, deadline) {
            let stage = if signalled {
                Stage::Stopping {
                    kill_at: plan.kill_at(deadline),
                }
            } else {
                Stage::Watching
            };
            match next_action(plan, now, deadline, stage) {
                Action::Kill => {
                    target.signal(Signal::SIGKILL);
                    return Ok(true);
                }
                Action::Signal { kill_at } => {
                    stop(target, signal);
                    (signalled, acted) = (true, true);
                    wake = kill_at.min(wake);
                }
                Action::Sleep(until) => wake = until,
            }
        }
        let Some(read) = read_within(&stdin, wake.saturating_since(now), &mut unread)? else {
            continue;
        };
        if read == 0 {
            // The supervisor died without saying `done`.
            if let Some(target) = target {
                stop_now(target, signal, plan, deadline);
            }
            return Ok(target.is_some());
        }
        while let Some(end) = unread.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = unread.drain(..=end).collect();
            match Message::parse(&line) {
                Some(Message::Done) => return Ok(acted),
                Some(Message::Group(group)) => target = Some(group),
                Some(Message::Deadline(new)) => {
                    deadline = Some(new);
                    signalled = false;
                }
                None => {}
            }
        }
    }
}

/// Waits up to `wait` for input and appends it to `unread`: `None` when
/// there was none (or a signal interrupted), else the bytes read, 0 at end
/// of file.
fn read_within(
    stdin: &io::Stdin,
    wait: Duration,
    unread: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    match poll(
        &mut fds,
        PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO),
    ) {
        Ok(0) | Err(Errno::EINTR) => return Ok(None),
        Ok(_) => {}
        Err(err) => return Err(err.into()),
    }
    let mut buffer = [0u8; 1024];
    match nix::unistd::read(stdin.as_fd(), &mut buffer) {
        Ok(read) => {
            unread.extend_from_slice(&buffer[..read]);
            Ok(Some(read))
        }
        Err(Errno::EINTR | Errno::EAGAIN) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// The stop signal, then SIGCONT so that a stopped command handles it.
pub fn stop(target: Group, signal: Signal) {
    target.signal(signal);
    if signal != Signal::SIGCONT {
        target.signal(Signal::SIGCONT);
    }
}

/// Signal now, SIGKILL after the grace period or just before the deadline.
fn stop_now(target: Group, signal: Signal, plan: StopPlan, deadline: Option<BootInstant>) {
    stop(target, signal);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_parse_and_garbage_is_ignored() {
        assert_eq!(Message::parse(b"done\n"), Some(Message::Done));
        assert_eq!(
            Message::parse(b"group 42\n"),
            Some(Message::Group(Group(42)))
        );
        assert_eq!(
            Message::parse(b"deadline 7\n"),
            Some(Message::Deadline(BootInstant::from_nanos(7)))
        );
        assert_eq!(Message::parse(b"group x\n"), None);
        assert_eq!(Message::parse(b"\xff\n"), None);
    }
}
