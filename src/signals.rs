//! Waiting for any of several Unix signals at once. Once a signal is listened
//! for here, its default action (usually: die) no longer applies, so the
//! process can clean up (release the lock, stop the child) before it exits.

use std::future::poll_fn;
use std::task::Poll;

use nix::sys::signal::Signal;
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
