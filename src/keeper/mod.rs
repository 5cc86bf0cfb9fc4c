//! `redlock acquire --while PID`: the lock lives while process PID does, as
//! flock's lives while its descriptor's shell does. `acquire` starts a
//! keeper, a second `redlock` (`redlock keeper`, hidden) that outlives it,
//! extends the lock every TTL/3 ([`keep`]) and:
//!
//! - releases it as soon as PID exits, whatever killed it (a pidfd, opened
//!   by `acquire` while PID was known to be alive, turns readable), once
//!   what PID left in its process group (when it leads one) has ended too;
//! - stops quietly when `redlock release NAME TOKEN` asks it to first (see
//!   [`rendezvous`]), once the rest of that group has ended;
//! - sends the `--while-signal` to PID (and to its process group if it
//!   leads one) when the lock is lost: a majority says the token is gone,
//!   or the validity is about to run out with no extension confirmed; the
//!   lock is then released once the group is gone or the validity over.
//!
//! A keeper that stops extending because it is frozen (SIGSTOP, a
//! debugger, starved of CPU) or killed cannot signal anyone. So that the
//! script never outlives the lock unwarned, the keeper forks a watchdog
//! (`exec`'s, [`Watchdog::fork_for`]; see [`watchdog`]) before it builds
//! its runtime, and sends it each new deadline once the script holds the
//! token. If no
//! extension comes, the watchdog sends the `--while-signal` on the keeper's
//! own schedule ([`stop_lead`] before the validity ends), to the same
//! processes, and SIGCONT after it; if the keeper dies, it sends it at once.
//! Like the keeper, it sends no SIGKILL: PID is the caller's shell. Whoever
//! comes first signals; the keeper asks the watchdog before it does, so
//! that the script gets the signal once. With `--while-signal none` there
//! is nothing to send and no watchdog.
//!
//! The keeper is spawned from `/proc/self/exe` with an empty environment
//! and `redlock keeper` as its whole command line; the servers (passwords
//! included) come over a pipe on its stdin. It gets a session of its own
//! and keeps no descriptor of the caller's: once it has taken over, its
//! stdio is /dev/null, so `$(redlock acquire --while $$ NAME)` returns at
//! once. It runs in `/` and cannot be dumped or read by ptrace (main()).
//!
//! The conversation over its stdin and stdout, one JSON or word a line:
//! `acquire` writes the [`Setup`] at once, then the [`Handed`] lease once
//! it holds the lock; the keeper answers `ready` (or `error WHY`). Then
//! `acquire` prints the token and, only if that worked within the validity,
//! writes `commit`; the keeper answers `keeping` and detaches. Without
//! `commit` (end of file, the validity gone) the keeper releases the lock
//! and exits: no token is left running that nobody was given.

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, FromRawFd as _, OwnedFd};
use std::pin::Pin;
use std::time::Duration;

use nix::errno::Errno;
use nix::libc;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

mod handle;
pub mod rendezvous;
mod watchdog;

pub use handle::Keeper;
use rendezvous::Rendezvous;
use watchdog::{feed, fork_watchdog, stop_lead, Dog};

use crate::clock::BootInstant;
use crate::exit_code::Exit;
use crate::lock::{keep, Keeping, Lease, LockKey, Redlock, ServerSpec, Slot, Token};
use crate::signals::Listener;
use crate::supervise::watchdog::Report;
use crate::supervise::{Watchdog, Watched};

/// What the keeper needs besides the lease: the servers and what to watch.
#[derive(Debug, Serialize, Deserialize)]
struct Setup {
    /// The URLs as given, secrets included.
    servers: Vec<String>,
    timeout_ms: u64,
    restart_guard_ms: u64,
    tls_root_cert: Option<Vec<u8>>,
    prefix: Vec<u8>,
    /// The process to watch, and the number of the pidfd on it that the
    /// keeper inherits.
    pid: i32,
    pidfd: i32,
    signal: Option<i32>,
    /// Tests only: the keeper fails instead of taking over
    /// ([`crate::test_hooks::keeper_fails`]).
    #[serde(default)]
    fails: bool,
}

/// The lease, once `acquire` holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Handed {
    key: Vec<u8>,
    token: String,
    ttl_ms: u64,
    /// The validity's end on CLOCK_BOOTTIME, which is system-wide.
    deadline_ns: u64,
    /// `--limit`: the semaphore's key, the slot and K, so that the keeper's
    /// extensions keep K recorded on the servers.
    #[serde(default)]
    slot: Option<(Vec<u8>, u32, u32)>,
}

/// Longer lines are not ours (a PEM bundle is a few hundred kilobytes at most).
const MAX_LINE: usize = 4 << 20;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn json_line(value: &impl Serialize) -> Vec<u8> {
    // Plain strings, numbers and byte arrays always serialize.
    let mut line = serde_json::to_vec(value).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Lines read from a pipe, each waited for until a deadline.
struct Lines<F> {
    fd: F,
    unread: Vec<u8>,
}

impl<F: AsFd> Lines<F> {
    fn new(fd: F) -> Self {
        Lines {
            fd,
            unread: Vec::new(),
        }
    }

    /// The next line without its newline; `None` at end of file, or once
    /// `until` has passed.
    fn next(&mut self, until: Option<BootInstant>) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(end) = self.unread.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.unread.drain(..=end).collect();
                line.pop();
                return Ok(Some(line));
            }
            if self.unread.len() > MAX_LINE {
                return Err(io::Error::other("a line too long"));
            }
            if let Some(until) = until {
                if BootInstant::now() >= until {
                    return Ok(None);
                }
                // Every 20ms at most, against the boot clock, which counts
                // a suspend where poll's timeout does not.
                let wait = until.remaining().min(Duration::from_millis(20));
                let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
                match poll(
                    &mut fds,
                    PollTimeout::try_from(wait).unwrap_or(PollTimeout::ZERO),
                ) {
                    Ok(0) | Err(Errno::EINTR) => continue,
                    Ok(_) => {}
                    Err(err) => return Err(err.into()),
                }
            }
            let mut buffer = [0u8; 8192];
            match nix::unistd::read(self.fd.as_fd(), &mut buffer) {
                Ok(0) => return Ok(None),
                Ok(read) => self.unread.extend_from_slice(&buffer[..read]),
                Err(Errno::EINTR | Errno::EAGAIN) => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The keeper process
// ---------------------------------------------------------------------------

/// `redlock keeper`: the process `acquire --while` started. Its exit status
/// is seen by no one; what matters is what it does to the lock and to PID.
pub fn serve() -> Exit {
    let _ = nix::sys::prctl::set_name(c"redlock-keeper");
    let _ = rustls::crypto::ring::default_provider().install_default();
    crate::signals::reset_inherited();
    match take_over() {
        Ok(()) => Exit::Success,
        Err(why) => {
            let _ = io::stdout().write_all(format!("error {why}\n").as_bytes());
            Exit::Internal
        }
    }
}

/// Reads the setup and the lease, then keeps the lock until it ends.
fn take_over() -> Result<(), String> {
    let mut stdin = Lines::new(io::stdin());
    let setup: Setup = match stdin.next(None) {
        Ok(Some(line)) => serde_json::from_slice(&line).map_err(|err| err.to_string())?,
        _ => return Err("no settings on stdin (this command is for acquire --while)".into()),
    };
    close_other_descriptors(setup.pidfd);
    // SAFETY: `acquire` left exactly this descriptor open for us.
    let pidfd = unsafe { OwnedFd::from_raw_fd(setup.pidfd) };
    let watched = Watched::adopt(setup.pid, pidfd).map_err(|err| err.to_string())?;
    if setup.fails {
        return Err("it was told to fail (REDLOCK_TEST_KEEPER_FAILS)".into());
    }
    let redlock = redlock_of(&setup)?;
    // End of file instead of a lease: `acquire` did not get the lock.
    let Ok(Some(line)) = stdin.next(None) else {
        return Ok(());
    };
    let handed: Handed = serde_json::from_slice(&line).map_err(|err| err.to_string())?;
    let lease = Lease {
        key: LockKey::new(handed.key),
        token: Token::from_user(&handed.token),
        ttl: Duration::from_millis(handed.ttl_ms),
        deadline: BootInstant::from_nanos(handed.deadline_ns),
        held_on: Vec::new(),
        attempts: 1,
        slot: handed.slot.map(|(semaphore, index, limit)| Slot {
            semaphore: LockKey::new(semaphore),
            index,
            limit,
        }),
        fence: None,
    };
    let signal = setup.signal.and_then(|n| Signal::try_from(n).ok());
    // Forked now, while the keeper has one thread (see `Watchdog::fork`);
    // it does nothing until it gets a deadline, once the token is given.
    let watchdog = match signal {
        Some(signal) => Some(fork_watchdog(&watched, signal, lease.ttl)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    let watchdog = RefCell::new(watchdog);
    runtime.block_on(hold(&redlock, &lease, (&watched, signal, &watchdog), stdin))
}

fn redlock_of(setup: &Setup) -> Result<Redlock, String> {
    let specs = setup
        .servers
        .iter()
        .map(|url| ServerSpec::parse(url))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())?;
    let redlock = Redlock::new(
        specs,
        Duration::from_millis(setup.timeout_ms),
        setup.tls_root_cert.as_deref(),
        Duration::from_millis(setup.restart_guard_ms),
    )
    .map_err(|err| err.to_string())?;
    Ok(redlock.with_prefix(&setup.prefix))
}

/// Nothing of the caller's stays open (a descriptor a script opened would
/// stay in use as long as the keeper runs), but stdio and the pidfd.
fn close_other_descriptors(keep: i32) {
    let close_range = |first: i32, last: u32| {
        // SAFETY: close_range closes descriptors by number; none below is
        // owned by anything in this process yet.
        unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    };
    if keep > 3 {
        close_range(3, keep.unsigned_abs() - 1);
    }
    close_range(keep + 1, u32::MAX);
}

/// How the keeping ended.
enum End {
    /// The watched process exited.
    Exited,
    /// `redlock release` (this process) asked for the lock: it deletes it
    /// itself.
    Released(rendezvous::Asked),
    /// A majority said the token is gone, or the validity ran out.
    Lost,
    /// The keeper itself was told to stop.
    Stopped,
}

/// Says `ready`, waits for `commit`, detaches, and keeps the lock.
async fn hold(
    redlock: &Redlock,
    lease: &Lease,
    (watched, signal, watchdog): (&Watched, Option<Signal>, &Dog),
    mut stdin: Lines<io::Stdin>,
) -> Result<(), String> {
    let rendezvous = Rendezvous::listen(&lease.key, &lease.token)
        .map_err(|err| format!("cannot listen for the release: {err}"))?;
    let mut signals = Listener::new(&[Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP])
        .map_err(|err| err.to_string())?;
    if !watched.is_alive() {
        return Err(format!("process {} has exited", watched.pid()));
    }
    answer(b"ready\n")?;
    if !matches!(stdin.next(Some(lease.deadline)), Ok(Some(line)) if line == b"commit") {
        // The token was not handed out: nobody else can release it.
        let _ = redlock.release(&lease.key, &lease.token).await;
        return Ok(());
    }
    answer(b"keeping\n")?;
    detach().map_err(|err| err.to_string())?;
    let (deadlines, deadline) = watch::channel(lease.deadline);
    // The script holds the token from now on: the watchdog is armed.
    feed(watchdog, lease.deadline);
    let (_holder, no_new_holder) = watch::channel(None);
    let extended = deadline.clone();
    let keeping = keep(redlock, lease, deadlines, no_new_holder, |event| {
        if let Keeping::Extended = event {
            feed(watchdog, *extended.borrow());
        }
    });
    tokio::pin!(keeping);
    let mut holding = Holding {
        watched,
        watchdog,
        rendezvous: &rendezvous,
        deadline,
        lead: stop_lead(lease.ttl),
        signal,
        lost: false,
        asked: Vec::new(),
        excepted: Vec::new(),
        asked_since: u64::MAX,
    };
    let end = holding.until_end(&mut keeping, &mut signals).await;
    holding.drain(end, &mut keeping).await;
    // Nothing extends the lock any more, and the script was signalled if
    // it had to be: the watchdog's work is over.
    if let Some(watchdog) = watchdog.borrow_mut().take() {
        watchdog.done();
    }
    let Holding { asked, lost, .. } = holding;
    // The one who asked deletes the key once answered; else the keeper
    // (also when the asker gave up waiting for a stopped keeper).
    let mut deleted_by_asker = false;
    for stream in asked {
        deleted_by_asker |= rendezvous::acknowledge(stream).await && !lost;
    }
    if !deleted_by_asker {
        let _ = redlock.release(&lease.key, &lease.token).await;
    }
    Ok(())
}

/// The keeper's state once it keeps the lock.
struct Holding<'a> {
    watched: &'a Watched,
    watchdog: &'a Dog,
    rendezvous: &'a Rendezvous,
    deadline: watch::Receiver<BootInstant>,
    lead: Duration,
    signal: Option<Signal>,
    /// The lock is lost (or the keeper was told to stop): the script was
    /// signalled, and nothing extends the lock any more.
    lost: bool,
    /// Releases asked for, answered once the script's group is done.
    asked: Vec<tokio::net::UnixStream>,
    /// Those who asked and their shells: they wait for the answer, so the
    /// group is done without them.
    excepted: Vec<i32>,
    /// When the first who asked started (clock ticks since boot): what the
    /// script started after that is not waited for.
    asked_since: u64,
}

impl Holding<'_> {
    /// Extends the lock every TTL/3 until one of the ways it ends.
    async fn until_end<F: Future>(
        &mut self,
        keeping: &mut Pin<&mut F>,
        signals: &mut Listener,
    ) -> End {
        tokio::select! {
            _ = keeping.as_mut() => End::Lost,
            () = runs_out(self.deadline.clone(), self.lead) => End::Lost,
            () = self.watched.exited() => End::Exited,
            asked = self.rendezvous.release_asked() => End::Released(asked),
            _ = signals.recv() => End::Stopped,
        }
    }

    /// After `end`, the lock stays the script's while processes it left in
    /// its process group run, as `exec` holds its lock until its command's
    /// group is gone: extended while it can be; once lost, until they are
    /// gone or the validity ends.
    async fn drain<F: Future>(&mut self, end: End, keeping: &mut Pin<&mut F>) {
        match end {
            End::Released(asked) => self.asked_by(asked),
            End::Lost | End::Stopped => self.lose(),
            End::Exited => {}
        }
        loop {
            let done = self
                .watched
                .others_in_group(&self.excepted, self.asked_since)
                .is_empty();
            let lapsed = self.lost && *self.deadline.borrow() <= BootInstant::now();
            if done || lapsed {
                return;
            }
            tokio::select! {
                _ = keeping.as_mut(), if !self.lost => self.lose(),
                () = runs_out(self.deadline.clone(), self.lead), if !self.lost => self.lose(),
                asked = self.rendezvous.release_asked() => self.asked_by(asked),
                () = tokio::time::sleep(GROUP_POLL) => {}
            }
        }
    }

    fn asked_by(&mut self, asked: rendezvous::Asked) {
        self.asked.push(asked.stream);
        self.excepted
            .extend(crate::supervise::with_ancestors(asked.pid));
        if let Some(started) = asked.started {
            self.asked_since = self.asked_since.min(started);
        }
    }

    /// Signals the script, once, and stops extending. The watchdog is told
    /// first: if it signalled already (the keeper was late, frozen or
    /// starved), the script has had the signal.
    fn lose(&mut self) {
        if !self.lost {
            self.lost = true;
            let watchdog = self.watchdog.borrow_mut().take().map(Watchdog::done);
            if matches!(watchdog, Some(Report::Stopped | Report::EndedInTime)) {
                return;
            }
            if let Some(signal) = self.signal {
                self.watched.signal(signal);
            }
        }
    }
}

/// How often the keeper looks whether the script's group is done.
const GROUP_POLL: Duration = Duration::from_millis(20);

fn answer(line: &[u8]) -> Result<(), String> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(line)
        .and_then(|()| stdout.flush())
        .map_err(|err| err.to_string())
}

/// stdin and stdout to /dev/null (stderr is already): nothing of the
/// caller's pipes stays open.
fn detach() -> io::Result<()> {
    let null = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    nix::unistd::dup2_stdin(&null)?;
    nix::unistd::dup2_stdout(&null)?;
    Ok(())
}

/// Resolves `margin` before the latest deadline, on the boot clock.
async fn runs_out(mut deadline: watch::Receiver<BootInstant>, margin: Duration) {
    loop {
        let stop_at = *deadline.borrow_and_update() - margin;
        if BootInstant::now() >= stop_at {
            return;
        }
        let nap = stop_at.remaining().min(Duration::from_secs(1));
        if let Ok(Err(_)) = tokio::time::timeout(nap, deadline.changed()).await {
            tokio::time::sleep(nap).await;
        }
    }
}
