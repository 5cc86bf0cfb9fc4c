//! One server's subscription for a waiter (notify.rs): the messages
//! published on its channels, whichever way the server could carry them.
//!
//! On Redis 6 and later the subscription shares the connection the waiter's
//! attempts use: the connection speaks RESP3 (HELLO 3), where messages come
//! as push frames between replies. A server that does not take HELLO 3
//! (Redis 5, a renamed command, a proxy) gets a connection of its own for
//! the subscription, as RESP2 requires. `Server::subscribe` decides which.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use redis::aio::{MultiplexedConnection, PubSubStream};
use redis::{Msg, PushInfo, PushKind};
use tokio::sync::mpsc::UnboundedReceiver;

/// The messages of one server's subscription. Dropping it ends the
/// subscription: its own connection closes, or a shared one unsubscribes.
pub struct Listening {
    messages: Messages,
}

enum Messages {
    /// Push frames of the RESP3 connection the attempts use, subscribed to
    /// `channels`; what unsubscribes from them when dropped.
    Shared {
        pushed: UnboundedReceiver<PushInfo>,
        connection: MultiplexedConnection,
        channels: Vec<Vec<u8>>,
        timeout: Duration,
    },
    /// A connection of its own, subscribed (RESP2).
    Own(PubSubStream),
}

impl Listening {
    /// Messages pushed on `connection` (RESP3) to `pushed`, which is
    /// subscribed to `channels`.
    pub(super) fn shared(
        pushed: UnboundedReceiver<PushInfo>,
        connection: MultiplexedConnection,
        channels: Vec<Vec<u8>>,
        timeout: Duration,
    ) -> Self {
        Listening {
            messages: Messages::Shared {
                pushed,
                connection,
                channels,
                timeout,
            },
        }
    }

    /// Messages of a connection of their own.
    pub(super) fn own(stream: PubSubStream) -> Self {
        Listening {
            messages: Messages::Own(stream),
        }
    }

    /// The payload of the next message published, or `None` once the
    /// connection is gone.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        match &mut self.messages {
            Messages::Shared { pushed, .. } => loop {
                let push = pushed.recv().await?;
                match push.kind {
                    PushKind::Disconnection => return None,
                    // Confirmations of (un)subscribing, and anything else
                    // the server pushes, are no release.
                    PushKind::Message => {
                        if let Some(message) = Msg::from_push_info(push) {
                            return Some(message.get_payload_bytes().to_vec());
                        }
                    }
                    _ => {}
                }
            },
            Messages::Own(stream) => {
                let message = poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await?;
                Some(message.get_payload_bytes().to_vec())
            }
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let Messages::Shared {
            connection,
            channels,
            timeout,
            ..
        } = &mut self.messages
        else {
            return;
        };
        // The connection goes on carrying requests (a waiter that took the
        // lock extends and releases on it): it stops listening, in the
        // background. A user whose ACL lacks UNSUBSCRIBE stays subscribed
        // until the connection closes; what is pushed then goes nowhere.
        let (mut connection, channels, timeout) =
            (connection.clone(), std::mem::take(channels), *timeout);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(timeout, connection.unsubscribe(channels)).await;
            });
        }
    }
}
