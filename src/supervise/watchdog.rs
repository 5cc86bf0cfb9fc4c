//! A second process that enforces the lock's deadline even when the
//! supervisor is frozen (SIGSTOP, a debugger, swap) or killed.
//!
//! `exec` forks it before it builds its async runtime, while the process is
//! still single-threaded, into its own process group (so terminal signals do
//! not reach it), and talks to it over a pipe, one line per message:
//!
//! - `group PGID`: the command's process group, what to stop, written by the
//!   command itself between fork and exec;
//! - `deadline NANOS`: the validity deadline on CLOCK_BOOTTIME, system-wide;
//! - `lease =HEX...`: what the supervisor holds, in words this module does
//!   not read (exec's lock key, token and private servers file), for its
//!   [`Settle`];
//! - `done`: the child has ended, exit quietly.
//!
//! It stops the target on the same schedule as the supervisor (see
//! [`super::schedule`]). End of file without `done` means the supervisor died: the
//! target is stopped at once, and once no process of it is left (or there
//! never was one), the lease is settled: `exec`'s lock is released at once
//! instead of lapsing a TTL later, and its private servers file removed.
//! While any process of the target lives, nothing is released: after the
//! stop signal, the grace period and SIGKILL, it waits for the last one,
//! until the lock's validity ends (when the lock lapses on its own).
//!
//! It wakes at least every [`CLOCK_CHECK`] to read the boot clock, so that
//! after a suspend it acts on resume, not a whole timeout later (poll's own
//! timeout does not count suspended time).
//!
//! It exits with its [`Report`]. It is a copy of `exec` and never executes
//! anything; so that `ps` and `pgrep` tell it from `exec`, it renames itself
//! [`NAME`] and rewrites its command line to say whose watchdog it is.
//!
//! The keeper of `acquire --while` forks one too ([`Watchdog::fork_for`]),
//! with its [`Target`] known at the fork: the script, signalled as the
//! keeper signals it on a loss. Its pipe carries only `deadline` and `done`,
//! and it does nothing before the first `deadline`: the keeper sends one
//! once the script was given the token.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{dup2_stdin, dup2_stdout, fork, pipe2, setpgid, ForkResult, Pid};

use super::child::Group;
use super::schedule::{next_action, Action, Stage, StopPlan, CLOCK_CHECK};
use crate::clock::BootInstant;
use crate::test_hooks;

/// What the watchdog tells the supervisor, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// It had nothing to do (exit 0).
    Quiet,
    /// It signalled the command, or found it gone only after the kill time
    /// (exit 3): the lock may have lapsed while the command ran, so the
    /// supervisor reports it lost whatever the command's status.
    Stopped,
    /// At the stop time it found no live process left (exit 4): the command
    /// had ended on its own while the lock was valid, so its status stands
    /// even if the supervisor, frozen, saw the end only later.
    EndedInTime,
}

impl Report {
    pub fn code(self) -> u8 {
        match self {
            Report::Quiet => 0,
            Report::Stopped => 3,
            Report::EndedInTime => 4,
        }
    }

    fn from_code(code: Option<i32>) -> Report {
        match code {
            Some(3) => Report::Stopped,
            Some(4) => Report::EndedInTime,
            _ => Report::Quiet,
        }
    }
}

/// Whom a watchdog stops, and how: `exec`'s command group, or the script
/// of `acquire --while` (see the keeper).
pub trait Target {
    /// Sends the stop signal, then SIGCONT so that a stopped process
    /// handles it.
    fn stop(&self, signal: Signal);
    /// Whether SIGKILL follows the stop signal at the kill time.
    fn kills(&self) -> bool;
    /// Sends SIGKILL, for a target that [`Self::kills`].
    fn kill(&self) {}
    /// Whether a process of the target still runs.
    fn has_live_members(&self) -> bool;
}

/// What a supervisor that died leaves its watchdog to do, given at the fork
/// (where the supervisor's settings are at hand) and used at most once,
/// after the supervisor died: for `exec`, release its lock with the same
/// compare-and-delete as `exec` itself would, and remove its private
/// servers file. This module knows no Redis: the lease is the words the
/// supervisor sent (`Watchdog::lease`).
pub trait Settle {
    /// `release`: whether the lock may go (no process of the target is
    /// left); the tidying is done either way. Bounded in time by the
    /// implementation.
    fn settle(&self, lease: &[Vec<u8>], release: bool);
}

impl Target for Group {
    fn stop(&self, signal: Signal) {
        stop(*self, signal);
    }

    fn kills(&self) -> bool {
        true
    }

    fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    fn has_live_members(&self) -> bool {
        Group::has_live_members(*self)
    }
}

/// What a watchdog is given at its fork: the target known then (the
/// keeper's script; `exec`'s command announces itself later), and what to
/// settle should the supervisor die.
type Charges = (Option<Box<dyn Target>>, Option<Box<dyn Settle>>);

/// The supervisor's handle on its watchdog.
pub struct Watchdog {
    pid: Pid,
    pipe: Option<File>,
    reaped: bool,
}

impl Watchdog {
    /// Forks the watchdog off this process. It listens from the moment it
    /// exists: whatever is written to the pipe before it reads waits there.
    ///
    /// Call it only while this process has a single thread (before any
    /// runtime is built): the child of a fork has only the thread that
    /// forked, so a lock another thread held (the allocator's, stdio's)
    /// would stay locked in it for ever. With one thread there is no such
    /// lock, and the child is a plain copy that may allocate and do I/O; it
    /// runs [`Watch::follow`] and exits without returning into the caller's code.
    /// This is checked: with more than one thread it refuses.
    ///
    /// `settle` is what it does once the supervisor died (see [`Settle`]):
    /// the parent drops its copy at once, the child keeps it.
    pub fn fork(
        signal: Signal,
        plan: StopPlan,
        settle: Option<Box<dyn Settle>>,
    ) -> io::Result<Self> {
        Self::fork_with((None, settle), signal, plan)
    }

    /// [`Self::fork`] for a `target` known now (the keeper's script), which
    /// the watchdog owns: the caller keeps its own copy. Same rules.
    pub fn fork_for(target: Box<dyn Target>, signal: Signal, plan: StopPlan) -> io::Result<Self> {
        Self::fork_with((Some(target), None), signal, plan)
    }

    fn fork_with((target, settle): Charges, signal: Signal, plan: StopPlan) -> io::Result<Self> {
        if threads_of_this_process()? != 1 {
            return Err(io::Error::other("the process is no longer single-threaded"));
        }
        // Close-on-exec: the command, which writes its group to the pipe
        // between fork and exec, does not keep it open afterwards.
        let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
        // SAFETY: the process is single-threaded (checked above), so the
        // child may run ordinary Rust code; it never returns from here.
        match unsafe { fork() }? {
            ForkResult::Child => {
                drop(write);
                let code = match watchdog_process(read, (target, settle), signal, plan) {
                    Ok(report) => report.code(),
                    Err(err) => {
                        let _ = writeln!(io::stderr(), "redlock: the watchdog failed: {err}");
                        70
                    }
                };
                // Not `exit`: nothing of the parent's (buffered output,
                // exit handlers) may run twice.
                // SAFETY: _exit ends this process at once and touches no memory.
                unsafe { nix::libc::_exit(code.into()) }
            }
            ForkResult::Parent { child } => {
                drop((target, settle));
                // The child moves to a group of its own too, but maybe only
                // after exec looks for the members of its own group (to tell
                // whether it is alone in its job and may give the command the
                // terminal): as a shell does, both sides set it. An error
                // means the child has done so or has exited.
                let _ = setpgid(child, child);
                Ok(Watchdog {
                    pid: child,
                    pipe: Some(File::from(write)),
                    reaped: false,
                })
            }
        }
    }

    /// The pipe to the watchdog, for the command to announce its own group
    /// (`group PGID`) before it runs anything; see [`super::child::spawn`].
    pub fn pipe(&self) -> io::Result<BorrowedFd<'_>> {
        match &self.pipe {
            Some(pipe) => Ok(pipe.as_fd()),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// The watchdog's pid.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    pub fn deadline(&mut self, deadline: BootInstant) -> io::Result<()> {
        self.send(&format!("deadline {}\n", deadline.as_nanos()))
    }

    /// Tells the watchdog what this process holds, for its [`Settle`] should
    /// this process die: each word hex-encoded, so any bytes go. A later
    /// lease replaces it. The pipe is this process's and its watchdog's
    /// alone: a token or a path said here is seen by no one else.
    pub fn lease(&mut self, words: &[&[u8]]) -> io::Result<()> {
        let mut line = String::from("lease");
        for word in words {
            // `=` first, so that an empty word is still one.
            line.push_str(" =");
            line.extend(word.iter().map(|b| format!("{b:02x}")));
        }
        line.push('\n');
        self.send(&line)
    }

    /// Tells the watchdog the command has ended, reaps it, and returns its
    /// report.
    pub fn done(mut self) -> Report {
        let _ = self.send("done\n");
        Report::from_code(self.reap())
    }

    /// Closes the pipe and waits for the watchdog to exit: its exit code.
    fn reap(&mut self) -> Option<i32> {
        self.pipe = None;
        self.reaped = true;
        loop {
            match waitpid(self.pid, None) {
                Ok(WaitStatus::Exited(_, code)) => return Some(code),
                Err(Errno::EINTR) => continue,
                _ => return None,
            }
        }
    }

    fn send(&mut self, message: &str) -> io::Result<()> {
        match &mut self.pipe {
            Some(pipe) => pipe.write_all(message.as_bytes()),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
}

impl Drop for Watchdog {
    /// Without `done` (exec ends before any command ran, or after an
    /// error), the closed pipe tells the watchdog the supervisor is gone: it
    /// exits at once when it has no command to stop, or stops the command;
    /// a lease it was told of is settled (released) first, as for a killed
    /// supervisor, since the error path does not release. Either way it is
    /// reaped, so that it outlives `exec` only if `exec` is killed.
    fn drop(&mut self) {
        if !self.reaped {
            self.reap();
        }
    }
}

/// How many threads this process has.
fn threads_of_this_process() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// The watchdog's process name (`ps -o comm`, `pgrep`): at most 15 bytes,
/// the kernel's limit.
pub const NAME: &std::ffi::CStr = c"redlock-watch";

/// The forked watchdog, up to its report: named for `ps`, out of the
/// terminal's signals, its output away from whatever reads `exec`'s, then
/// [`Watch::follow`].
fn watchdog_process(
    pipe: OwnedFd,
    (target, settle): Charges,
    signal: Signal,
    plan: StopPlan,
) -> io::Result<Report> {
    let parent = nix::unistd::getppid();
    // Best effort: a watchdog that `ps` shows as `exec` still works.
    let _ = nix::sys::prctl::set_name(NAME);
    let whose = match target {
        Some(_) => "the redlock keeper",
        None => "redlock exec",
    };
    let title = format!(
        "{} (the watchdog of {whose}, pid {parent})",
        NAME.to_string_lossy()
    );
    let _ = retitle(title.as_bytes());
    // Its own process group, as a spawned watchdog had: Ctrl-C and Ctrl-Z
    // on a terminal go to the foreground group, never to it.
    setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
    // A reader of `exec`'s stdout (`$(redlock exec ...)`) waits for every
    // writer to close it: the watchdog must not keep it open after `exec`
    // exits. stdin likewise goes. stderr stays, for its own failure.
    let null = File::options().read(true).write(true).open("/dev/null")?;
    dup2_stdin(&null)?;
    dup2_stdout(&null)?;
    drop(null);
    // Tests only: act this much before the supervisor's schedule, as a
    // watchdog does that wins the race to the stop time.
    let early = test_hooks::watchdog_early().unwrap_or(Duration::ZERO);
    let watch = Watch {
        signal,
        plan,
        target,
        deadline: None,
        lease: None,
        signalled: false,
        report: Report::Quiet,
        early,
    };
    watch.follow(pipe.as_fd(), settle.as_deref())
}

/// Shows this process to `ps -f` and `pgrep -f` as `title`: the area its
/// arguments were given in, which /proc/self/cmdline reads, is overwritten
/// in place, cut to fit and padded with NULs (as setproctitle(3) does).
fn retitle(title: &[u8]) -> io::Result<()> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields 48 and 49, arg_start and arg_end, counted after the command
    // name, which may hold spaces and ends at the last ')'.
    let rest = stat.get(stat.rfind(')').unwrap_or(0) + 1..).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<usize>().ok());
    let (Some(start), Some(end)) = (field(48), field(49)) else {
        return Err(io::Error::other("no argument area in /proc/self/stat"));
    };
    if end <= start || end - start > 1 << 20 {
        return Err(io::Error::other("an implausible argument area"));
    }
    // SAFETY: [start, end) is this process's argument area, set up by the
    // kernel at exec in its writable stack, holding only the argument
    // strings. Nothing in this forked, single-threaded child reads them
    // again (clap copied what it parsed before the fork), and nothing else
    // refers to the area while this slice lives.
    let area = unsafe {
        std::slice::from_raw_parts_mut(
            std::ptr::with_exposed_provenance_mut::<u8>(start),
            end - start,
        )
    };
    let shown = title.len().min(area.len() - 1);
    area.fill(0);
    area[..shown].copy_from_slice(&title[..shown]);
    Ok(())
}

/// What the supervisor said over the pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Message {
    Group(Group),
    Deadline(BootInstant),
    Lease(Vec<Vec<u8>>),
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
            ["lease", words @ ..] => words
                .iter()
                .map(|word| unhex(word.strip_prefix('=')?))
                .collect::<Option<_>>()
                .map(Message::Lease),
            _ => None,
        }
    }
}

/// Bytes from hex digits, two a byte; `None` for anything else.
fn unhex(word: &str) -> Option<Vec<u8>> {
    let digits = word.as_bytes();
    if !digits.len().is_multiple_of(2) || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// What the watchdog knows: whom to stop, by when, and how far it went.
struct Watch {
    signal: Signal,
    plan: StopPlan,
    target: Option<Box<dyn Target>>,
    deadline: Option<BootInstant>,
    /// What the supervisor holds, for a [`Settle`].
    lease: Option<Vec<Vec<u8>>>,
    /// The stop signal went out for the current deadline.
    signalled: bool,
    report: Report,
    /// Tests only: how much earlier than the supervisor it acts.
    early: Duration,
}

impl Watch {
    /// Follows the schedule at `now`; returns when to look again (`None`:
    /// only when the supervisor writes, since there is nothing to stop or
    /// no time to stop it by yet), or the final report once SIGKILL went
    /// out. A waiting `exec`'s watchdog so sleeps through the wait instead
    /// of waking every [`CLOCK_CHECK`].
    fn on_clock(&mut self, now: BootInstant) -> Result<Option<BootInstant>, Report> {
        let check = now + CLOCK_CHECK;
        let (Some(target), Some(deadline)) = (self.target.as_deref(), self.deadline) else {
            return Ok(None);
        };
        let stage = match self.signalled {
            true => Stage::Stopping {
                kill_at: self.plan.kill_at(deadline),
            },
            false => Stage::Watching,
        };
        let action = next_action(self.plan, now, deadline, stage);
        // Once it has signalled, the report stays Stopped whatever follows.
        let first_due = !self.signalled && self.report != Report::Stopped;
        if first_due && !matches!(action, Action::Sleep(_)) {
            // The first stop falls due. A command already gone ended on its
            // own: within the validity if we are not late ourselves; if we
            // are (frozen too), nobody can say, and it counts as stopped.
            // The signals go out regardless: a process this check cannot
            // see must not be spared.
            self.report = match target.has_live_members() || now >= self.plan.kill_at(deadline) {
                true => Report::Stopped,
                false => Report::EndedInTime,
            };
        }
        match action {
            Action::Kill => {
                match target.kills() {
                    true => target.kill(),
                    // Woken after the kill time, a target that gets no
                    // SIGKILL still gets the stop signal.
                    false if !self.signalled => target.stop(self.signal),
                    false => {}
                }
                Err(self.report)
            }
            Action::Signal { kill_at } => {
                target.stop(self.signal);
                self.signalled = true;
                Ok(Some(kill_at.min(check)))
            }
            Action::Sleep(until) => Ok(Some(until)),
        }
    }

    /// A line from the supervisor; the final report once it said `done`.
    fn on_message(&mut self, message: Message) -> Option<Report> {
        match message {
            Message::Done => return Some(self.report),
            Message::Group(group) => self.target = Some(Box::new(group)),
            Message::Lease(words) => self.lease = Some(words),
            Message::Deadline(new) => {
                self.deadline = Some(new - self.early);
                self.signalled = false;
            }
        }
        None
    }
}

impl Watch {
    /// The watchdog's loop: reads the supervisor's messages from `pipe` and
    /// returns its report once the command is done, or after it killed the
    /// command, or once it has stopped the command and settled for a
    /// supervisor that died.
    fn follow(mut self, pipe: BorrowedFd<'_>, settle: Option<&dyn Settle>) -> io::Result<Report> {
        let mut unread = Vec::new();
        loop {
            let now = BootInstant::now();
            let wake = match self.on_clock(now) {
                Ok(wake) => wake,
                Err(report) => return Ok(report),
            };
            let wait = wake.map(|wake| wake.saturating_since(now));
            let Some(read) = read_within(pipe, wait, &mut unread)? else {
                continue;
            };
            if read == 0 {
                return Ok(self.orphaned(settle));
            }
            while let Some(end) = unread.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = unread.drain(..=end).collect();
                if let Some(report) = Message::parse(&line).and_then(|m| self.on_message(m)) {
                    return Ok(report);
                }
            }
        }
    }

    /// The supervisor died without saying `done`: with nothing left to
    /// extend the lock, the target is stopped at once, unless there was
    /// nothing to stop yet (no deadline: `exec`'s command did not start, or
    /// the keeper's script never got the token). Then the lease is settled:
    /// released only once no process of the target is left.
    fn orphaned(&self, settle: Option<&dyn Settle>) -> Report {
        let report = match (self.target.as_deref(), self.deadline) {
            (Some(target), Some(deadline)) => {
                stop_now(target, self.signal, self.plan, deadline);
                Report::Stopped
            }
            _ => self.report,
        };
        let (Some(settle), Some(lease)) = (settle, &self.lease) else {
            return report;
        };
        let empty = match (self.target.as_deref(), self.deadline) {
            (Some(target), Some(deadline)) => wait_for_the_last(target, deadline),
            (Some(target), None) => !target.has_live_members(),
            (None, _) => true,
        };
        settle.settle(lease, empty);
        report
    }
}

/// Waits until no process of `target` is left: true then, false if one
/// still lives at `deadline`, when the lock lapses on its own (SIGKILL went
/// out before it: only a process stuck in the kernel gets there).
fn wait_for_the_last(target: &dyn Target, deadline: BootInstant) -> bool {
    loop {
        if !target.has_live_members() {
            return true;
        }
        if BootInstant::now() >= deadline {
            return false;
        }
        std::thread::sleep(deadline.remaining().min(CLOCK_CHECK));
    }
}

/// Waits up to `wait` (`None`: for as long as it takes) for input and
/// appends it to `unread`: `None` when there was none (or a signal
/// interrupted), else the bytes read, 0 at end of file.
fn read_within(
    pipe: BorrowedFd<'_>,
    wait: Option<Duration>,
    unread: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    let mut fds = [PollFd::new(pipe, PollFlags::POLLIN)];
    let timeout = match wait {
        None => PollTimeout::NONE,
        // A wait too long for poll is cut to the longest it takes: the
        // loop looks at the clock again then.
        Some(wait) => PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX),
    };
    match poll(&mut fds, timeout) {
        Ok(0) | Err(Errno::EINTR) => return Ok(None),
        Ok(_) => {}
        Err(err) => return Err(err.into()),
    }
    let mut buffer = [0u8; 1024];
    match nix::unistd::read(pipe, &mut buffer) {
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

/// Signal now, SIGKILL (for a target that gets it) after the grace period
/// or just before the deadline.
fn stop_now(target: &dyn Target, signal: Signal, plan: StopPlan, deadline: BootInstant) {
    target.stop(signal);
    if !target.kills() {
        return;
    }
    let kill_at = (BootInstant::now() + plan.grace).min(plan.kill_at(deadline));
    while BootInstant::now() < kill_at && target.has_live_members() {
        std::thread::sleep(kill_at.remaining().min(CLOCK_CHECK));
    }
    target.kill();
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
        assert_eq!(
            Message::parse(b"lease = =6b00 \n"),
            Some(Message::Lease(vec![vec![], b"k\0".to_vec()]))
        );
        assert_eq!(Message::parse(b"lease\n"), Some(Message::Lease(vec![])));
        assert_eq!(Message::parse(b"lease =6\n"), None);
        assert_eq!(Message::parse(b"lease =zz\n"), None);
        assert_eq!(Message::parse(b"lease 6b\n"), None);
        assert_eq!(Message::parse(b"group x\n"), None);
        assert_eq!(Message::parse(b"\xff\n"), None);
    }
}
