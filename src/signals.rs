//! Waiting for any of several Unix signals at once. Once a signal is listened
//! for here, its default action (usually: die) no longer applies, so the
//! process can clean up (release the lock, stop the child) before it exits.
//!
//! A signal that was ignored when we started is never listened for: it stays
//! ignored, for us and for the command `exec` runs, as a shell leaves it.
//! That is how `nohup` (SIGHUP) and a script's `cmd &` (SIGINT, SIGQUIT)
//! protect a command.
//!
//! Once the clean-up is done, a process interrupted by SIGINT, SIGTERM or
//! SIGHUP dies of that signal ([`end`]) rather than exiting 128+N: a shell
//! stops a script only when its child *died* of SIGINT ("wait and
//! cooperative exit"), and a parent can tell "killed" from "exited 143".

use std::future::poll_fn;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use nix::libc;
use nix::sys::signal::{signal, SigHandler, SigSet, Signal};
use signal_hook_registry::SigId;
use tokio::signal::unix::SignalKind;

/// The signals whose default action ends a process without a core dump,
/// among those redlock listens for: a waiting `acquire` is interrupted by
/// any of them, and `redlock` dies of one that ended its wait or its
/// command (see `Outcome::dies_of`).
pub const QUIET_DEATHS: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
];

/// One bit per signal number: the signals a [`Listener`] listens for.
static RECORDING: AtomicU64 = AtomicU64::new(0);
/// One bit per signal number: those of them delivered to this process.
/// Set by a handler at delivery, not when a [`Listener`] reads the signal:
/// a Ctrl-C that also ends the command under `exec` counts even if the
/// command's end is seen first.
static RECEIVED: AtomicU64 = AtomicU64::new(0);

pub struct Listener {
    streams: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Listener {
    pub fn new(signals: &[Signal]) -> std::io::Result<Self> {
        let streams = signals
            .iter()
            .filter(|&&sig| !ignored(sig))
            .map(|&sig| {
                record(sig)?;
                Ok((sig, stream(sig)?))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Listener { streams })
    }

    /// The next signal received, in no particular order among simultaneous ones.
    pub async fn recv(&mut self) -> Signal {
        poll_fn(|cx| {
            for (sig, stream) in &mut self.streams {
                if let Poll::Ready(Some(())) = stream.poll_recv(cx) {
                    return Poll::Ready(*sig);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Waits for any of a few signals and tells which of them came *last*.
/// tokio merges repeats of a signal and keeps no order between two of them,
/// which matters for a pair like SIGTSTP and SIGCONT: acting on them in the
/// wrong order would leave a command stopped that was meant to run.
pub struct Latest {
    signals: Vec<Signal>,
    streams: Vec<tokio::signal::unix::Signal>,
    /// `sequence << 8 | index into signals` of the latest signal received.
    latest: Arc<AtomicU64>,
    /// The value of `latest` last returned.
    seen: u64,
    actions: Vec<SigId>,
}

impl Latest {
    pub fn new(signals: &[Signal]) -> std::io::Result<Self> {
        let signals: Vec<Signal> = signals
            .iter()
            .copied()
            .filter(|&sig| !ignored(sig))
            .collect();
        let latest = Arc::new(AtomicU64::new(0));
        let sequence = Arc::new(AtomicU64::new(0));
        let mut actions = Vec::new();
        for (index, &sig) in (0u64..).zip(&signals) {
            let (latest, sequence) = (Arc::clone(&latest), Arc::clone(&sequence));
            let action = move || {
                let number = sequence.fetch_add(1, Ordering::SeqCst) + 1;
                // A handler interrupted by the other signal's must not undo it.
                latest.fetch_max(number << 8 | index, Ordering::SeqCst);
            };
            // SAFETY: the action only updates atomics, which is
            // async-signal-safe, and allocates nothing.
            actions.push(unsafe { signal_hook_registry::register(sig as i32, action) }?);
        }
        let streams = signals
            .iter()
            .map(|&sig| stream(sig))
            .collect::<std::io::Result<_>>()?;
        Ok(Latest {
            signals,
            streams,
            latest,
            seen: 0,
            actions,
        })
    }

    /// The latest of the signals received since the previous call.
    pub async fn recv(&mut self) -> Signal {
        poll_fn(|cx| {
            for stream in &mut self.streams {
                while let Poll::Ready(Some(())) = stream.poll_recv(cx) {}
            }
            let latest = self.latest.load(Ordering::SeqCst);
            if latest <= self.seen {
                return Poll::Pending;
            }
            self.seen = latest;
            let index = usize::try_from(latest & 0xff).unwrap_or_default();
            match self.signals.get(index) {
                Some(&sig) => Poll::Ready(sig),
                None => Poll::Pending,
            }
        })
        .await
    }
}

impl Drop for Latest {
    fn drop(&mut self) {
        for &action in &self.actions {
            signal_hook_registry::unregister(action);
        }
    }
}

fn bit(sig: Signal) -> u64 {
    1u64 << (sig as u32 % 64)
}

/// From now on, a delivery of `sig` is remembered for [`received`].
fn record(sig: Signal) -> std::io::Result<()> {
    let bit = bit(sig);
    if RECORDING.fetch_or(bit, Ordering::SeqCst) & bit != 0 {
        return Ok(());
    }
    let action = move || {
        RECEIVED.fetch_or(bit, Ordering::SeqCst);
    };
    // SAFETY: the action only updates an atomic, which is async-signal-safe,
    // and allocates nothing.
    unsafe { signal_hook_registry::register(sig as i32, action) }?;
    Ok(())
}

/// Whether `sig` was delivered to this process since a [`Listener`] started
/// listening for it: `exec` dies of a signal its command died of only if it
/// got that signal itself (a Ctrl-C, a kill of exec).
pub fn received(sig: Signal) -> bool {
    RECEIVED.load(Ordering::SeqCst) & bit(sig) != 0
}

/// Dies of `sig`, as a process without a handler for it would have (fd's
/// `exit_codes.rs` does the same): output flushed, its default action
/// restored, unblocked, raised. Should the process somehow survive that, it
/// exits 128+N, what a shell would have shown.
pub fn die_of(sig: Signal) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: SIG_DFL installs no handler code; the handlers it replaces
    // (tokio's, ours) are not needed once the process ends.
    let _ = unsafe { signal(sig, SigHandler::SigDfl) };
    let mut only = SigSet::empty();
    only.add(sig);
    let _ = only.thread_unblock();
    let _ = nix::sys::signal::raise(sig);
    std::process::exit(128 + sig as i32)
}

/// Undoes what a parent may have left behind that would break supervision.
/// A signal mask survives exec: with the signals we wait for blocked, `exec`
/// would never see a SIGTERM or its command's end, so none stays blocked,
/// as in a process started normally. With SIGCHLD ignored, the
/// kernel reaps children itself and their exit status is lost (tokio waits
/// for a child through a pidfd, which then fails). Called before any thread
/// starts, since threads inherit the mask. A signal left pending while it
/// was blocked takes its default action here, before we hold anything.
pub fn reset_inherited() {
    let _ = SigSet::all().thread_unblock();
    // SAFETY: SIG_DFL installs no handler code, and nothing has installed a
    // handler for SIGCHLD.
    let _ = unsafe { signal(Signal::SIGCHLD, SigHandler::SigDfl) };
}

/// Whether `sig` is ignored now. Asked before we listen for it, that is
/// whether it was ignored when we started. SIGCONT never counts: it
/// continues a process whatever its disposition, so ignoring it protects
/// nothing, and a command paused by SIGTSTP must still be continued.
fn ignored(sig: Signal) -> bool {
    // Zeroed: some C libraries fill in only part of the struct.
    let mut action = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `action`.
    let read =
        unsafe { libc::sigaction(sig as libc::c_int, std::ptr::null(), action.as_mut_ptr()) };
    // SAFETY: all-zero bytes are a valid sigaction, and sigaction writes
    // only valid values over them.
    let action = unsafe { action.assume_init() };
    sig != Signal::SIGCONT && read == 0 && action.sa_sigaction == libc::SIG_IGN
}

fn stream(sig: Signal) -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(SignalKind::from_raw(sig as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next signal `latest` reports within 200ms.
    async fn next(latest: &mut Latest) -> Option<Signal> {
        tokio::time::timeout(std::time::Duration::from_millis(200), latest.recv())
            .await
            .ok()
    }

    #[test]
    fn latest_tells_the_last_of_two_signals_and_only_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // Whatever the test runner's parent ignored, this test listens.
            for sig in [Signal::SIGUSR1, Signal::SIGUSR2] {
                // SAFETY: SIG_DFL installs no handler code.
                unsafe { signal(sig, SigHandler::SigDfl) }.unwrap();
            }
            let mut latest = Latest::new(&[Signal::SIGUSR1, Signal::SIGUSR2]).unwrap();
            // Both delivered before anyone looks: the order is kept.
            nix::sys::signal::raise(Signal::SIGUSR2).unwrap();
            nix::sys::signal::raise(Signal::SIGUSR1).unwrap();
            assert_eq!(next(&mut latest).await, Some(Signal::SIGUSR1));
            assert_eq!(next(&mut latest).await, None, "reported twice");
            nix::sys::signal::raise(Signal::SIGUSR1).unwrap();
            nix::sys::signal::raise(Signal::SIGUSR2).unwrap();
            assert_eq!(next(&mut latest).await, Some(Signal::SIGUSR2));
        });
    }
}
