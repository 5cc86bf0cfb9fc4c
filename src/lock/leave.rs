//! Leaving the line (queue.rs): a waiter's ticket comes out of a lock's
//! line however its wait ended, and the next waiter hears of it.

use std::sync::Arc;

use super::core::redlock::Redlock;
use super::core::round::{round, Progress};
use super::core::servers::{Connection, Server};
use super::key::LockKey;
use super::notify;
use super::queue::Ticket;
use super::scripts::Leave;
use super::server_url::ServerSpec;

impl Redlock {
    /// Takes `ticket` out of `key`'s line on every server but those in
    /// `left_on`, where the attempt that took the lock took it out
    /// already (acquire.lua). Like a decided
    /// round, it waits for a majority's replies and then only for the
    /// requests to be written: a hung minority must not cost every waiter
    /// that got the lock, gave up or was interrupted a server timeout, and
    /// a majority without the ticket lets the next waiter go first.
    ///
    /// A waiter that gave up or was interrupted tells the next one where
    /// it leaves the lock free. One that took the lock (`left_on` not
    /// empty) does not: where it leaves a line, its attempt came before
    /// the release there, and the lock it holds on a majority is free on
    /// that server only; the next waiter, told, would wake for an attempt
    /// that cannot win, and its undo. Its turn comes with this holder's
    /// release, which is announced.
    pub async fn leave_line(&self, key: &LockKey, ticket: &Ticket, left_on: &[ServerSpec]) {
        let servers: Vec<Arc<Server>> = self
            .servers
            .iter()
            .filter(|server| !left_on.iter().any(|spec| spec.is(server.spec())))
            .cloned()
            .collect();
        if servers.is_empty() {
            return;
        }
        let call = Leave {
            keys: self.keys_of(key),
            ticket: ticket.id.clone(),
            channel: if self.wakeups && left_on.is_empty() {
                notify::channel(key)
            } else {
                Vec::new()
            },
        };
        let request =
            move |mut connection: Connection| async move { connection.invoke(&call).await };
        // The servers the ticket already left count as answered.
        let enough = self
            .quorum
            .saturating_sub(self.servers.len() - servers.len());
        round(&servers, request, move |replies| {
            if replies.answers.len() - replies.pending() >= enough {
                Progress::Settled
            } else {
                Progress::Undecided
            }
        })
        .await;
    }
}
