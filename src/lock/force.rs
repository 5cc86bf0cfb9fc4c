//! `release --force`: break a lock whoever holds it, for a holder known to
//! be dead. One script per server reads what the key holds and deletes it
//! with its holder record in the same step, so what is reported is exactly
//! what was deleted.

use super::core::quorum::no_quorum;
use super::core::redlock::Redlock;
use super::error::{Failures, LockError};
use super::inspection::{Inspection, KeyState, ServerState};
use super::key::LockKey;
use super::key::Token;
use super::notify;
use super::scripts::{Force, ForceVerdict};
use super::server_url::ServerSpec;

/// What a forced release found and did.
#[derive(Debug, Clone)]
pub struct Forced {
    /// What every server held just before the delete, or why it did not
    /// answer: who held the lock is judged from it as `status` would.
    pub before: Inspection,
    /// What was done on each server of `before.servers` that answered.
    pub verdicts: Vec<Option<ForceVerdict>>,
}

/// How `release --force` may break a lock.
#[derive(Debug, Clone, Default)]
pub struct Breaking {
    /// Only while this token holds it (`--if-token`).
    pub if_token: Option<Token>,
    /// Also a string that does not look like a lock (`--any-key`).
    pub any_key: bool,
    /// Who breaks it, recorded beside it for its holder and `status`.
    pub who: String,
}

impl Forced {
    /// The servers where a lock was deleted, in configuration order.
    pub fn deleted_on(&self) -> Vec<ServerSpec> {
        self.where_(|verdict| verdict == ForceVerdict::Deleted)
    }

    /// The servers where the key is not a lock and was left alone, with
    /// why (another type, no expiry, a value longer than any token, a value
    /// that is no redlock token without a holder record) and the key's
    /// type.
    pub fn left_alone(&self) -> Vec<(ServerSpec, ForceVerdict, String)> {
        let not_a_lock = [
            ForceVerdict::OtherType,
            ForceVerdict::NoExpiry,
            ForceVerdict::TooLong,
            ForceVerdict::NotAToken,
        ];
        self.before
            .servers
            .iter()
            .zip(&self.verdicts)
            .filter_map(|(s, verdict)| {
                let verdict = verdict.filter(|v| not_a_lock.contains(v))?;
                let kind = s.state.as_ref().ok()?.kind.clone();
                Some((s.server.clone(), verdict, kind))
            })
            .collect()
    }

    /// The servers where readers (`--shared`) were broken, and how many
    /// live ones on each.
    pub fn readers_broken(&self) -> Vec<(ServerSpec, u64)> {
        self.answers()
            .filter(|(_, state)| state.readers.count > 0)
            .map(|(server, state)| (server.clone(), state.readers.count))
            .collect()
    }

    /// How many live readers were broken: as many as a majority had, or
    /// when no majority had any, the most any server had.
    pub fn readers_broken_count(&self) -> u64 {
        match self.before.readers() {
            0 => self
                .readers_broken()
                .iter()
                .map(|(_, count)| *count)
                .max()
                .unwrap_or(0),
            on_majority => on_majority,
        }
    }

    /// The servers where `--if-token`'s token no longer held it.
    pub fn held_by_another(&self) -> Vec<ServerSpec> {
        self.where_(|verdict| verdict == ForceVerdict::OtherToken)
    }

    fn where_(&self, wanted: impl Fn(ForceVerdict) -> bool) -> Vec<ServerSpec> {
        self.with_verdicts()
            .filter(|(_, verdict)| wanted(*verdict))
            .map(|(server, _)| server)
            .collect()
    }

    fn with_verdicts(&self) -> impl Iterator<Item = (ServerSpec, ForceVerdict)> + '_ {
        self.before
            .servers
            .iter()
            .zip(&self.verdicts)
            .filter_map(|(s, verdict)| Some((s.server.clone(), (*verdict)?)))
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
    pub async fn force_release(&self, key: &LockKey, breaking: &Breaking) -> Forced {
        let call = Force {
            keys: self.keys_of(key),
            channel: notify::channel(key),
            if_token: breaking.if_token.as_ref().map(|t| t.as_str().to_owned()),
            any_key: breaking.any_key,
            who: breaking.who.clone(),
        };
        let (servers, verdicts) = self
            .script_round(call)
            .await
            .into_iter()
            .map(|(server, reply)| {
                let verdict = reply.as_ref().ok().map(|reply| reply.verdict);
                let state = reply.map(KeyState::from);
                (ServerState { server, state }, verdict)
            })
            .unzip();
        Forced {
            before: Inspection {
                key: key.clone(),
                quorum: self.quorum,
                servers,
                restart_guard: None,
                done: None,
            },
            verdicts,
        }
    }
}
