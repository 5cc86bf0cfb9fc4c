//! `acquire`'s end of the keeper: it starts the keeper, hands it the
//! lease, and commits once the token was printed in time (the
//! conversation is in the module doc of [`super`]).

use std::io::{self, Write as _};
use std::os::fd::{AsRawFd as _, BorrowedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

use nix::libc;

use super::{json_line, millis, Handed, Lines, Setup};
use crate::clock::BootInstant;
use crate::config::{KeepWhile, Servers};
use crate::error::Error;
use crate::lock::{Holder, Lease};
use crate::supervise::{WatchError, Watched};
use crate::test_hooks;

/// How long `acquire` waits for the keeper's `keeping`.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// `acquire`'s handle on the keeper it started.
pub struct Keeper {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<ChildStdout>,
    /// The process the lock is for: if it exits while `acquire` still
    /// waits, nothing is taken for it.
    watched: Watched,
    committed: bool,
}

impl Keeper {
    /// Opens a pidfd on `keep.pid` (it must be alive and ours: a usage
    /// error otherwise) and starts the keeper with it and the servers.
    pub fn spawn(servers: &Servers, keep: KeepWhile) -> Result<Keeper, Error> {
        let watched = Watched::open(keep.pid).map_err(|err| match err {
            WatchError::Failed { error, .. } => {
                Error::internal("cannot watch the --while process", error)
            }
            err => Error::Usage(format!("--while {}: {err}", keep.pid)),
        })?;
        let setup = Setup {
            servers: servers
                .specs
                .iter()
                .map(|spec| spec.secret_url().to_owned())
                .collect(),
            timeout_ms: millis(servers.timeout),
            restart_guard_ms: millis(servers.restart_guard),
            tls_root_cert: servers.tls_root_cert.clone(),
            prefix: servers.prefix.clone(),
            pid: keep.pid,
            pidfd: watched.fd().as_raw_fd(),
            signal: keep.signal.map(|signal| signal as i32),
            fails: test_hooks::keeper_fails(),
        };
        let mut child = keeper_command(watched.fd())
            .spawn()
            .map_err(|err| Error::internal("cannot start the keeper process (--while)", err))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Internal(anyhow::anyhow!("the keeper has no pipes")));
        };
        let mut keeper = Keeper {
            child,
            stdin: Some(stdin),
            stdout: Lines::new(stdout),
            watched,
            committed: false,
        };
        keeper
            .send(&json_line(&setup))
            .map_err(|err| Error::internal("cannot start the keeper process (--while)", err))?;
        Ok(keeper)
    }

    /// The record beside the lock names the watched process as the holder
    /// (with its start time, so that a reused pid reads as gone), kept by
    /// this keeper.
    pub fn describe(&self, holder: Holder) -> Holder {
        let pid = self.watched.pid().unsigned_abs();
        Holder {
            pid,
            pid_started: crate::lock::process_started(pid),
            keeper_pid: Some(self.child.id()),
            ..holder
        }
    }

    /// The process the lock is kept for.
    pub fn watched(&self) -> &Watched {
        &self.watched
    }

    /// Hands `lease` over and waits, within its validity, until the keeper
    /// is ready to keep it.
    pub fn start(&mut self, lease: &Lease) -> Result<(), Error> {
        let handed = Handed {
            key: lease.key.bytes().to_vec(),
            token: lease.token.as_str().to_owned(),
            ttl_ms: millis(lease.ttl),
            deadline_ns: lease.deadline.as_nanos(),
            slot: lease
                .slot
                .as_ref()
                .map(|slot| (slot.semaphore.bytes().to_vec(), slot.index, slot.limit)),
        };
        // A keeper that already failed has said why: read it either way.
        let _ = self.send(&json_line(&handed));
        self.expect(b"ready", lease.deadline)
    }

    /// The token was printed: the keeper keeps the lock from now on, and
    /// outlives this process.
    pub fn commit(mut self) -> Result<(), Error> {
        let sent = self.send(b"commit\n");
        self.stdin = None;
        sent.map_err(|err| Error::internal(NOT_KEPT, err))?;
        self.expect(b"keeping", BootInstant::now() + ANSWER_WITHIN)?;
        self.committed = true;
        Ok(())
    }

    fn send(&mut self, line: &[u8]) -> io::Result<()> {
        match &mut self.stdin {
            Some(stdin) => stdin.write_all(line),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Reads the keeper's answer: `word`, or `error WHY`.
    fn expect(&mut self, word: &[u8], until: BootInstant) -> Result<(), Error> {
        let answer = self
            .stdout
            .next(Some(until))
            .map_err(|err| Error::internal(NOT_KEPT, err))?;
        match answer {
            Some(line) if line == word => Ok(()),
            Some(line) => {
                let why = String::from_utf8_lossy(line.strip_prefix(b"error ").unwrap_or(&line));
                Err(Error::internal(
                    NOT_KEPT,
                    io::Error::other(why.into_owned()),
                ))
            }
            None => Err(Error::internal(
                NOT_KEPT,
                io::Error::other("it did not answer in time"),
            )),
        }
    }
}

const NOT_KEPT: &str =
    "the keeper process (--while) could not take over the lock, so it was released";

impl Drop for Keeper {
    /// Without `commit`, end of file tells the keeper to let go: it releases
    /// what it was handed and exits, and is reaped here.
    fn drop(&mut self) {
        if !self.committed {
            self.stdin = None;
            let _ = self.child.wait();
        }
    }
}

/// `redlock keeper` from this very binary (also after an upgrade replaced
/// its file), with nothing of the caller's but the pidfd.
fn keeper_command(pidfd: BorrowedFd<'_>) -> std::process::Command {
    let mut command = std::process::Command::new("/proc/self/exe");
    command
        .arg0("redlock")
        .arg("keeper")
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let pidfd = pidfd.as_raw_fd();
    // SAFETY: setsid and fcntl are async-signal-safe and allocate nothing.
    unsafe {
        command.pre_exec(move || {
            // Out of the caller's session: no terminal, no job-control
            // signals, no SIGHUP when the terminal goes.
            nix::unistd::setsid()?;
            // The pidfd, and only it, stays open across exec.
            match libc::fcntl(pidfd, libc::F_SETFD, 0) {
                -1 => Err(io::Error::last_os_error()),
                _ => Ok(()),
            }
        });
    }
    command
}
