//! A process watched through a pidfd (`acquire --while PID`): opened while
//! the process is known to be alive, so that its end is seen at once and a
//! signal never reaches another process that later got the same pid.

use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};

use nix::errno::Errno;
use nix::libc;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{getpgid, Pid};

/// Why a pid cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("there is no such process")]
    NoSuchProcess(i32),
    #[error("the process has already exited")]
    Exited(i32),
    #[error("the process belongs to another user")]
    NotYours(i32),
    #[error("that is this redlock process itself")]
    Itself(i32),
    #[error("cannot watch the process: {error}")]
    Failed { pid: i32, error: io::Error },
}

/// When `pid` started, in clock ticks since boot, if it exists.
pub fn started(pid: i32) -> Option<u64> {
    super::proc::stat(pid).map(|stat| stat.started)
}

/// `pid` and its ancestors, from /proc: the process that asked for a
/// release and the shell (or subshells) it runs under, which wait for it.
pub fn with_ancestors(pid: i32) -> Vec<i32> {
    let mut chain = vec![pid];
    let mut at = pid;
    // A bound, not a walk to init: a chain deeper than this is no shell's.
    while chain.len() < 64 {
        match super::proc::stat(at) {
            Some(stat) if stat.parent > 1 => {
                at = stat.parent;
                chain.push(at);
            }
            _ => break,
        }
    }
    chain
}

/// A live process of ours, held by a pidfd.
#[derive(Debug)]
pub struct Watched {
    pid: i32,
    fd: OwnedFd,
    /// It led its process group when it was opened: the group is what a
    /// signal goes to.
    leads_group: bool,
}

impl Watched {
    /// Opens `pid`, which must be alive, ours, and not this process.
    pub fn open(pid: i32) -> Result<Watched, WatchError> {
        if pid == std::process::id() as i32 {
            return Err(WatchError::Itself(pid));
        }
        // SAFETY: pidfd_open takes two integers and returns a new fd or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if raw < 0 {
            return Err(match Errno::last() {
                Errno::ESRCH | Errno::EINVAL => WatchError::NoSuchProcess(pid),
                errno => WatchError::Failed {
                    pid,
                    error: errno.into(),
                },
            });
        }
        // SAFETY: a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
        if kill(Pid::from_raw(pid), None) == Err(Errno::EPERM) {
            return Err(WatchError::NotYours(pid));
        }
        Watched::adopt(pid, fd)
    }

    /// A pidfd handed over by the process that opened it (as fd `fd`),
    /// said to be of `pid`: checked against the kernel's own record.
    pub fn adopt(pid: i32, fd: OwnedFd) -> Result<Watched, WatchError> {
        let fdinfo = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))
            .map_err(|error| WatchError::Failed { pid, error })?;
        let of = fdinfo
            .lines()
            .find_map(|line| line.strip_prefix("Pid:"))
            .and_then(|n| n.trim().parse::<i32>().ok());
        if of != Some(pid) {
            let error = io::Error::other("the descriptor is not a pidfd of that process");
            return Err(WatchError::Failed { pid, error });
        }
        let leads_group = getpgid(Some(Pid::from_raw(pid))).is_ok_and(|g| g.as_raw() == pid);
        let watched = Watched {
            pid,
            fd,
            leads_group,
        };
        // Alive after the group was read: what was read is this process's.
        match watched.is_alive() {
            true => Ok(watched),
            false => Err(WatchError::Exited(pid)),
        }
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// A second handle on the same process, with a descriptor of its own
    /// (for a watchdog forked off the keeper).
    pub fn try_clone(&self) -> io::Result<Watched> {
        Ok(Watched {
            pid: self.pid,
            fd: self.fd.try_clone()?,
            leads_group: self.leads_group,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Whether it has not exited yet (a pidfd turns readable when it does).
    pub fn is_alive(&self) -> bool {
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
    }

    /// Resolves when the process has exited (also when killed by SIGKILL).
    pub async fn exited(&self) {
        let registered = self.fd.try_clone().ok().and_then(|fd| {
            // SAFETY: the AsyncFd owns this copy of the descriptor, which
            // stays open and the same until it is dropped.
            unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            }
            .ok()
        });
        let Some(fd) = registered else {
            // Cannot be polled: look every 100ms instead.
            while self.is_alive() {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            return;
        };
        while self.is_alive() {
            if let Ok(mut ready) = fd.readable().await {
                ready.clear_ready();
            }
        }
    }

    /// Sends `signal` to the process, then to its process group if it leads
    /// one (its job: what it started too), then SIGCONT the same way so that
    /// a stopped job handles it. Nothing goes out once it has exited.
    pub fn signal(&self, signal: Signal) {
        for signal in [signal, Signal::SIGCONT] {
            if !self.send(signal) {
                return;
            }
            if self.leads_group {
                // The leader is alive (just signalled through its pidfd),
                // so the group is still its group.
                signal_group(self.pid, signal);
            }
        }
    }

    /// The live processes of its process group, when it leads one, other
    /// than itself and `except`: what it started and left running. The lock
    /// is theirs too, as `exec`'s is its command's whole group's. Zombies do
    /// not count: they run nothing, and an orphan's may never be reaped.
    /// Nor do processes started after `started_by` (clock ticks since
    /// boot, as [`started`] gives): what the script ran after it asked
    /// for the release is not under the lock.
    pub fn others_in_group(&self, except: &[i32], started_by: u64) -> Vec<i32> {
        if !self.leads_group {
            return Vec::new();
        }
        super::proc::all()
            .into_iter()
            .filter(|stat| stat.group == self.pid && stat.pid != self.pid)
            .filter(|stat| stat.state != 'Z' && !except.contains(&stat.pid))
            .filter(|stat| stat.started <= started_by)
            .map(|stat| stat.pid)
            .collect()
    }

    /// pidfd_send_signal: never reaches a process that reused the pid.
    fn send(&self, signal: Signal) -> bool {
        // SAFETY: pidfd_send_signal takes a descriptor, a signal number, a
        // null siginfo and flags 0.
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                signal as libc::c_int,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        sent == 0
    }
}

/// Sends `signal` to the members of process group `group`. Group 1 is
/// signalled member by member: killpg(1) is kill(-1), which reaches every
/// process this one may signal. Its leader, PID 1 (a container's script
/// run as `--while $$`), was signalled through its pidfd already.
fn signal_group(group: i32, signal: Signal) {
    if group != 1 {
        let _ = killpg(Pid::from_raw(group), signal);
        return;
    }
    for member in super::proc::all() {
        if member.group == 1 && member.pid != 1 && member.pid != std::process::id() as i32 {
            let _ = kill(Pid::from_raw(member.pid), signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_that_is_gone_or_this_process_is_refused() {
        assert!(matches!(
            Watched::open(std::process::id() as i32),
            Err(WatchError::Itself(_))
        ));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(matches!(
            Watched::open(pid),
            Err(WatchError::NoSuchProcess(_))
        ));
    }

    #[test]
    fn a_live_child_is_watched_until_it_ends() {
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let watched = Watched::open(child.id() as i32).unwrap();
        assert!(watched.is_alive());
        watched.signal(Signal::SIGTERM);
        child.wait().unwrap();
        assert!(!watched.is_alive());
    }
}
