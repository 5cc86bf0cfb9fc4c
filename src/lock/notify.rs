//! Wake-ups on release: a waiter listens on every server for the message a
//! release publishes (release.lua, force.lua), so that it tries again as soon
//! as a lock is freed instead of at its next poll. Listening is an
//! optimisation only: a server that cannot be subscribed to (down, paused,
//! an ACL without SUBSCRIBE), a connection that drops, an expiry or a client
//! that does not publish are all left to the poll in `retry.rs`.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::key::LockKey;
use super::servers::Server;

/// Appended to a lock's key to name the channel its releases are announced
/// on, as `\0holder` names its holder record. Channels and keys live in
/// separate namespaces on a server; the suffix keeps the channel clear of
/// every other lock's channel, since no name redlock makes contains NUL.
const CHANNEL_SUFFIX: &[u8] = b"\0released";

/// The channel releases of `key` are announced on.
pub fn channel(key: &LockKey) -> Vec<u8> {
    [key.bytes(), CHANNEL_SUFFIX].concat()
}

/// How long a waiter woken by one server's announcement waits for the
/// others it listens to: a release deletes the key on every server at about
/// the same time, and an attempt that overtakes it on a server would take the
/// lock on fewer servers than it could.
const SETTLE: Duration = Duration::from_millis(10);

/// What one server's listener (by its index) reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The subscription is confirmed: every release on this server from now
    /// on is announced to us.
    Listening(usize),
    /// The subscription failed; this server is left to the poll.
    Failed,
    /// A release was announced.
    Released(usize),
}

/// The subscriptions of one waiter, one connection per server, and what
/// they reported since the current attempt started.
pub struct Wakeups {
    events: mpsc::UnboundedReceiver<Event>,
    /// The listeners; dropping them closes the connections.
    _listeners: JoinSet<()>,
    /// Subscriptions neither confirmed nor failed yet.
    unsettled: usize,
    /// The servers listened to.
    listening_on: Vec<bool>,
    /// The servers that announced a release since the attempt started.
    announced: Vec<bool>,
    /// Once one did: until when the others are waited for.
    settle_until: Option<tokio::time::Instant>,
    /// A subscription was confirmed since the attempt started: a release on
    /// that server just before it would have gone unheard.
    listening: bool,
}

impl Wakeups {
    /// Subscribes to `key`'s channel on every server, in the background.
    pub fn subscribe(servers: &[Arc<Server>], key: &LockKey) -> Self {
        let (sender, events) = mpsc::unbounded_channel();
        let mut listeners = JoinSet::new();
        let channel: Arc<[u8]> = channel(key).into();
        for (index, server) in servers.iter().enumerate() {
            let (server, sender, channel) = (server.clone(), sender.clone(), channel.clone());
            listeners.spawn(async move {
                let mut messages = match server.subscribe(&channel).await {
                    Ok(messages) => messages,
                    Err(_) => {
                        let _ = sender.send(Event::Failed);
                        return;
                    }
                };
                let _ = sender.send(Event::Listening(index));
                while poll_fn(|cx| Pin::new(&mut messages).poll_next(cx))
                    .await
                    .is_some()
                {
                    if sender.send(Event::Released(index)).is_err() {
                        return;
                    }
                }
            });
        }
        Wakeups {
            events,
            _listeners: listeners,
            unsettled: servers.len(),
            listening_on: vec![false; servers.len()],
            announced: vec![false; servers.len()],
            settle_until: None,
            listening: false,
        }
    }

    /// Called as an attempt starts: what arrived so far happened before the
    /// attempt reaches any server, so the attempt sees its effect.
    pub fn attempt_starts(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            self.note(event);
        }
        self.announced.fill(false);
        self.settle_until = None;
        self.listening = false;
    }

    /// Resolves once something arrived since the attempt started that the
    /// attempt may have missed: a release (once every server listened to
    /// announced it, or [`SETTLE`] after the first did), or the last of the
    /// subscriptions settling after one was confirmed. At once if that
    /// already happened; never if nothing more can arrive.
    pub async fn woken(&mut self) {
        loop {
            while let Ok(event) = self.events.try_recv() {
                self.note(event);
            }
            if self.due() {
                return;
            }
            let settled = async {
                match self.settle_until {
                    Some(until) => tokio::time::sleep_until(until).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(event) => self.note(event),
                    None => std::future::pending().await,
                },
                _ = settled => return,
            }
        }
    }

    fn due(&self) -> bool {
        let all_announced = self
            .listening_on
            .iter()
            .zip(&self.announced)
            .all(|(&listening, &announced)| announced || !listening);
        match self.settle_until {
            Some(until) => all_announced || tokio::time::Instant::now() >= until,
            None => self.listening && self.unsettled == 0,
        }
    }

    fn note(&mut self, event: Event) {
        match event {
            Event::Listening(index) => {
                self.unsettled -= 1;
                self.listening = true;
                self.listening_on[index] = true;
            }
            Event::Failed => self.unsettled -= 1,
            Event::Released(index) => {
                self.announced[index] = true;
                self.settle_until
                    .get_or_insert_with(|| tokio::time::Instant::now() + SETTLE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_is_the_key_and_a_suffix_no_name_contains() {
        let key = LockKey::new(b"app:deploy".to_vec());
        assert_eq!(channel(&key), b"app:deploy\0released".to_vec());
    }
}
