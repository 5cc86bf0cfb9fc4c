//! What every server holds for one lock, and who holds it as far as a
//! majority can tell.

use super::error::{Failures, LockError};
use super::key::LockKey;
use super::server_url::ServerSpec;
use super::servers::ServerError;

/// What one server holds under a lock's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyState {
    /// Redis' TYPE: "none" for a missing key, "string" for a lock.
    pub kind: String,
    /// The value, when the key is a string (the holder's token).
    pub value: Option<Vec<u8>>,
    /// Remaining milliseconds; -1 for a key without expiry, -2 for none.
    pub pttl_ms: i64,
    /// The server started within the restart guard: it counts again after
    /// this long. What it holds is not evidence either way until then.
    pub restarting: Option<std::time::Duration>,
}

#[derive(Debug, Clone)]
pub struct ServerState {
    pub server: ServerSpec,
    pub state: Result<KeyState, ServerError>,
}

/// Every server's view of one lock, in configuration order.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub key: LockKey,
    pub quorum: usize,
    pub servers: Vec<ServerState>,
    /// The restart guard the servers were judged by (`None`: off).
    pub restart_guard: Option<std::time::Duration>,
}

/// Who holds a lock, as far as a majority can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One value holds at least a quorum of servers.
    Held { value: Vec<u8>, on: usize },
    /// No value can hold a quorum, even counting the servers that did not answer.
    Free,
    /// Too few servers answered to tell.
    Unknown,
}

impl Inspection {
    pub fn verdict(&self) -> Verdict {
        let unanswered = self
            .servers
            .iter()
            .filter(|s| !matches!(&s.state, Ok(state) if state.restarting.is_none()))
            .count();
        let mut best: Option<(&[u8], usize)> = None;
        for value in self.values() {
            let on = self.values().filter(|v| *v == value).count();
            if best.is_none_or(|(_, most)| on > most) {
                best = Some((value, on));
            }
        }
        match best {
            Some((value, on)) if on >= self.quorum => Verdict::Held {
                value: value.to_vec(),
                on,
            },
            _ if best.map_or(0, |(_, on)| on) + unanswered < self.quorum => Verdict::Free,
            _ => Verdict::Unknown,
        }
    }

    /// The servers that count and whose value is `value`, in configuration
    /// order.
    pub fn holding(&self, value: &[u8]) -> Vec<ServerSpec> {
        self.servers
            .iter()
            .filter(|s| matches!(&s.state, Ok(KeyState { value: Some(v), restarting: None, .. }) if v == value))
            .map(|s| s.server.clone())
            .collect()
    }

    /// The error for an inspection whose verdict is [`Verdict::Unknown`]:
    /// restarting when servers kept out by the restart guard are why.
    pub fn no_quorum(&self) -> LockError {
        let again_in: Vec<std::time::Duration> = self
            .servers
            .iter()
            .filter_map(|s| s.state.as_ref().ok()?.restarting)
            .collect();
        if let (Some(&soonest), Some(guard)) = (again_in.iter().min(), self.restart_guard) {
            return LockError::Restarting {
                key: self.key.clone(),
                restarting: again_in.len(),
                total: self.servers.len(),
                guard,
                again_in: soonest,
                failures: self.failures(),
            };
        }
        self.failures()
            .into_error(&self.key, self.servers.len(), self.quorum)
    }

    fn failures(&self) -> Failures {
        Failures(
            self.servers
                .iter()
                .filter_map(|s| s.state.clone().err().map(|e| (s.server.clone(), e)))
                .collect(),
        )
    }

    /// The values of the servers that count.
    fn values(&self) -> impl Iterator<Item = &[u8]> {
        self.servers.iter().filter_map(|s| match &s.state {
            Ok(KeyState {
                value: Some(v),
                restarting: None,
                ..
            }) => Some(v.as_slice()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::quorum::quorum;
    use super::*;

    fn inspection(states: Vec<Result<Option<&str>, ()>>) -> Inspection {
        let quorum = quorum(states.len());
        Inspection {
            key: LockKey::new(b"k".to_vec()),
            quorum,
            restart_guard: None,
            servers: states
                .into_iter()
                .enumerate()
                .map(|(i, s)| ServerState {
                    server: ServerSpec::parse(&format!("127.0.0.1:{}", 7000 + i)).unwrap(),
                    state: s
                        .map(|v| KeyState {
                            kind: if v.is_some() { "string" } else { "none" }.into(),
                            value: v.map(|v| v.as_bytes().to_vec()),
                            pttl_ms: if v.is_some() { 1000 } else { -2 },
                            restarting: None,
                        })
                        .map_err(|()| ServerError::Failed("down".into())),
                })
                .collect(),
        }
    }

    #[test]
    fn verdict_needs_a_majority_and_admits_uncertainty() {
        let held = inspection(vec![Ok(Some("a")), Ok(Some("a")), Ok(None)]);
        assert_eq!(
            held.verdict(),
            Verdict::Held {
                value: b"a".to_vec(),
                on: 2
            }
        );
        assert_eq!(held.holding(b"a").len(), 2);
        let split = inspection(vec![Ok(Some("a")), Ok(Some("b")), Ok(None)]);
        assert_eq!(split.verdict(), Verdict::Free);
        let unsure = inspection(vec![Ok(Some("a")), Err(()), Ok(None)]);
        assert_eq!(unsure.verdict(), Verdict::Unknown);
        let free = inspection(vec![Ok(None), Err(()), Ok(None)]);
        assert_eq!(free.verdict(), Verdict::Free);
        let down = inspection(vec![Err(()), Err(()), Ok(None)]);
        assert_eq!(down.verdict(), Verdict::Unknown);
        // A restarted server's emptiness is no evidence that the lock is free.
        let mut restarted = inspection(vec![Ok(Some("a")), Ok(None), Ok(None)]);
        for s in &mut restarted.servers[1..] {
            if let Ok(state) = &mut s.state {
                state.restarting = Some(std::time::Duration::from_secs(1));
            }
        }
        assert_eq!(restarted.verdict(), Verdict::Unknown);
    }
}
