//! Waiting for any of several Unix signals at once. Once a signal is listened
//! for here, its default action (usually: die) no longer applies, so the
//! process can clean up (release the lock, stop the child) before it exits.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use nix::sys::signal::Signal;
use signal_hook_registry::SigId;
use tokio::signal::unix::{signal, SignalKind};

pub struct Listener {
    streams: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Listener {
    pub fn new(signals: &[Signal]) -> std::io::Result<Self> {
        let streams = signals
            .iter()
            .map(|&sig| Ok((sig, signal(SignalKind::from_raw(sig as i32))?)))
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
        let latest = Arc::new(AtomicU64::new(0));
        let sequence = Arc::new(AtomicU64::new(0));
        let mut actions = Vec::new();
        for (index, &sig) in (0u64..).zip(signals) {
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
            .map(|&sig| signal(SignalKind::from_raw(sig as i32)))
            .collect::<std::io::Result<_>>()?;
        Ok(Latest {
            signals: signals.to_vec(),
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
