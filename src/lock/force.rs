//! `release --force`: break a lock whoever holds it, for a holder known to
//! be dead. One script per server reads what the key holds and deletes it
//! with its holder record in the same step, so what is reported is exactly
//! what was deleted.

use super::error::{Failures, LockError};
use super::inspection::{Inspection, KeyState};
use super::key::LockKey;
use super::mutex::Redlock;
use super::notify;
use super::quorum::no_quorum;
use super::scripts::Force;
use super::server_url::ServerSpec;

/// What a forced release found and did.
#[derive(Debug, Clone)]
pub struct Forced {
    /// What every server held just before the delete, or why it did not
    /// answer: who held the lock is judged from it as `status` would.
    pub before: Inspection,
}

impl Forced {
    /// The servers where a lock (a string) was deleted, in configuration
    /// order.
    pub fn deleted_on(&self) -> Vec<ServerSpec> {
        self.answers()
            .filter(|(_, state)| state.kind == "string")
            .map(|(server, _)| server.clone())
            .collect()
    }

    /// The servers where the key is of another type, which is not a lock and
    /// was left alone, with that type.
    pub fn left_alone(&self) -> Vec<(ServerSpec, String)> {
        self.answers()
            .filter(|(_, state)| state.kind != "string" && state.kind != "none")
            .map(|(server, state)| (server.clone(), state.kind.clone()))
            .collect()
    }

    /// Why the result cannot be relied on, when fewer than a majority of the
    /// servers answered: a lock may live on among those that did not.
    pub fn no_quorum(&self) -> Option<LockError> {
        let before = &self.before;
        if self.answers().count() >= before.quorum {
            return None;
        }
        let failures = before
            .servers
            .iter()
            .filter_map(|s| Some((s.server.clone(), s.state.clone().err()?)))
            .collect();
        // The script does not look at the restart guard: nobody is kept out.
        let servers = (before.servers.len(), before.quorum);
        Some(no_quorum(&before.key, servers, None, Failures(failures)))
    }

    fn answers(&self) -> impl Iterator<Item = (&ServerSpec, &KeyState)> {
        self.before
            .servers
            .iter()
            .filter_map(|s| Some((&s.server, s.state.as_ref().ok()?)))
    }
}

impl Redlock {
    /// Deletes `key` and its holder record on every server where it is a
    /// string, whoever holds it, waiting for every server (each bounded by
    /// the server timeout). Waiters hear of each delete (notify.rs).
    pub async fn force_release(&self, key: &LockKey) -> Forced {
        let call = Force {
            keys: self.keys_of(key),
            channel: notify::channel(key),
        };
        let servers = self.occupant_round(call).await;
        Forced {
            before: Inspection {
                key: key.clone(),
                quorum: self.quorum,
                servers,
                restart_guard: None,
            },
        }
    }
}
