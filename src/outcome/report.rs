//! `redlock doctor`'s report, as data: a finding per check, per server and
//! for the whole list, each with its level; the exit status follows from
//! the levels. `output` words the findings.

use std::time::Duration;

use crate::exit_code::Exit;
use crate::lock::{
    ClusterNode, Guarded, Markers, Missing, Reached, ServerError, ServerSpec, Unknown,
};

/// How much a finding matters, in order; as JSON, the documented `level`
/// (and a server's `verdict`): "ok", "unknown", "warning", "unsafe".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    /// The server would not say (a managed Redis refuses CONFIG or ACL).
    Unknown,
    /// Safe as configured, but weaker than it could be; `--strict`
    /// counts it.
    Warning,
    /// A lock can be lost, or handed to two holders.
    Unsafe,
}

/// The whole report.
#[derive(Debug)]
pub struct Report {
    pub servers: Vec<ServerReport>,
    /// The checks of the list as a whole.
    pub overall: Vec<Finding>,
    pub total: usize,
    pub quorum: usize,
    /// Servers that answered at all.
    pub answered: usize,
    /// `--strict`: warnings count as unsafe for the exit status.
    pub strict: bool,
}

/// What one server came to.
#[derive(Debug)]
pub struct ServerReport {
    pub spec: ServerSpec,
    /// What the server is and its version (`valkey`, `9.1.2`), by INFO.
    pub server: Option<(String, String)>,
    pub rtt: Option<Duration>,
    pub findings: Vec<Finding>,
}

/// One check's result.
#[derive(Debug)]
pub enum Finding {
    /// It did not answer.
    Unreachable(ServerError),
    /// It answered, but refuses us (credentials, ACL on PING).
    Refused(String),
    Master,
    Replica {
        master: Option<String>,
        read_only: Option<bool>,
    },
    RoleUnknown(Unknown),
    /// The same server (run_id) as an earlier one in the list.
    Duplicate {
        of: ServerSpec,
    },
    /// Its maxmemory-policy.
    Eviction {
        policy: String,
        evicts: bool,
    },
    EvictionUnknown(Unknown),
    /// AOF and its fsync policy, against the restart guard.
    Persistence {
        aof: bool,
        fsync: Result<String, Unknown>,
        guard: Duration,
    },
    PersistenceUnknown(Unknown),
    /// How long ago it started, against the restart guard.
    Uptime {
        uptime: Duration,
        guard: Duration,
    },
    /// Its clock against the others' (the median), and the bound.
    Clock {
        off: Duration,
        ahead: bool,
        bound: Duration,
    },
    ClockUnknown(Unknown),
    /// The measured round trip against the server timeout.
    RoundTrip {
        rtt: Duration,
        timeout: Duration,
    },
    Cluster(bool),
    /// The commands its ACL lacks (none: every one is allowed).
    Acl {
        missing: Vec<Missing>,
        guard_on: bool,
        /// Whether every command was checked (ACL DRYRUN answered), not
        /// only those refused outright.
        complete: bool,
    },
    AclUnknown(Unknown),
    /// A master's replicas (`connected_slaves`), what a failover promotes;
    /// `accepted`: `--accept-replicas`.
    Replicas {
        attached: u64,
        replicas: Vec<String>,
        accepted: bool,
    },
    /// Who answered on several new connections to this address.
    Address(Reached),
    AddressUnknown(Unknown),
    /// `enable-debug-command` (Redis ≥ 7).
    Debug(String),
    /// Before Redis 7 (this version), DEBUG is always enabled.
    DebugAlways(String),
    DebugUnknown(Unknown),
    /// Other dbs that hold keys, and other prefixes' guard markers in
    /// this one (`db`).
    Shared {
        db: i64,
        other_dbs: Vec<(u32, u64)>,
        markers: Result<Markers, Unknown>,
    },
    /// N servers; `single`: the user accepts single-instance semantics.
    Count {
        servers: usize,
        single: bool,
    },
    /// Distinct masters that answered, against the quorum.
    Quorum {
        masters: usize,
        answered: usize,
        quorum: usize,
    },
    /// Whether a lock can count this server at this moment.
    Now(Now),
    /// Whether a lock can be taken at this moment: the servers usable now
    /// against the quorum.
    Ready(Ready),
}

/// Whether a lock can count one server at this moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Now {
    Usable,
    /// Usable as far as doctor can tell, but the restart guard's word
    /// could not be read (a cluster node: the guard is kept per hash tag).
    GuardUnknown(ServerError),
    /// The restart guard keeps it out: for how long yet, and why.
    Guarded(Guarded),
    /// A cluster node that is down or serves no slots: every lock fails
    /// on it.
    NoSlots(ClusterNode),
    /// It cannot count: a replica, or the same server as another.
    Out(&'static str),
    /// The lock's script fails on it.
    Fails(ServerError),
}

/// The servers usable now, against the quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub usable: usize,
    /// How long the restart guard keeps each server out that only it
    /// keeps out, shortest first.
    pub guarded: Vec<Duration>,
    pub total: usize,
    pub quorum: usize,
}

/// What the servers usable now allow, the three kinds a monitoring check
/// tells apart from an unsafe configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Every server is usable.
    Ready,
    /// A majority is usable, not every server: a lock can be taken.
    Degraded,
    /// Too few usable now, but the restart guard is why: ready in this
    /// long, when enough servers come out of it.
    NotReady(Duration),
    /// Too few usable, and waiting for the guard would not be enough.
    Unavailable,
}

impl Ready {
    pub fn state(&self) -> State {
        let needed = self.quorum.saturating_sub(self.usable);
        match needed {
            0 if self.usable >= self.total => State::Ready,
            0 => State::Degraded,
            n => match self.guarded.get(n - 1) {
                Some(left) => State::NotReady(*left),
                None => State::Unavailable,
            },
        }
    }
}

impl Finding {
    pub fn level(&self) -> Level {
        use Level::{Ok, Unknown, Unsafe, Warning};
        match self {
            Finding::Unreachable(_) => Warning,
            Finding::Refused(_) | Finding::Replica { .. } | Finding::Duplicate { .. } => Unsafe,
            Finding::Master | Finding::Cluster(false) => Ok,
            Finding::RoleUnknown(_)
            | Finding::EvictionUnknown(_)
            | Finding::PersistenceUnknown(_)
            | Finding::ClockUnknown(_)
            | Finding::AclUnknown(_)
            | Finding::AddressUnknown(_)
            | Finding::DebugUnknown(_) => Unknown,
            Finding::Replicas {
                attached, accepted, ..
            } => level_if(*attached > 0 && !accepted, Unsafe),
            Finding::Address(reached) => level_if(reached.run_ids.len() > 1, Unsafe),
            Finding::Debug(setting) => level_if(setting != "no", Warning),
            Finding::DebugAlways(_) => Warning,
            Finding::Shared {
                other_dbs, markers, ..
            } => match markers {
                Result::Ok(m) if other_dbs.is_empty() && m.others.is_empty() => Ok,
                Err(_) if other_dbs.is_empty() => Unknown,
                _ => Warning,
            },
            Finding::Eviction { evicts, .. } => level_if(*evicts, Unsafe),
            Finding::Persistence { aof, fsync, guard } => {
                match (*aof, fsync.as_deref(), guard.is_zero()) {
                    (true, Result::Ok("always"), _) => Ok,
                    (true, Err(_), true) => Unknown,
                    // The restart guard covers what a restart can lose.
                    (_, _, false) => Ok,
                    (_, _, true) => Unsafe,
                }
            }
            Finding::Uptime { uptime, guard } => level_if(uptime < guard, Warning),
            Finding::Clock { off, bound, .. } => level_if(off > bound, Warning),
            Finding::RoundTrip { rtt, timeout } => level_if(*rtt >= *timeout / 2, Warning),
            Finding::Cluster(true) => Warning,
            Finding::Acl {
                missing, guard_on, ..
            } => missing
                .iter()
                .map(|m| match m.feature {
                    crate::lock::Feature::Lock => Unsafe,
                    crate::lock::Feature::RestartGuard if *guard_on => Unsafe,
                    crate::lock::Feature::RestartGuard => Ok,
                    _ => Warning,
                })
                .max()
                .unwrap_or(Ok),
            Finding::Count { servers, single } => match (*servers, *single) {
                (1, true) => Ok,
                (n, _) if n < 3 => Unsafe,
                (n, _) if n % 2 == 0 => Warning,
                _ => Ok,
            },
            Finding::Quorum {
                masters, quorum, ..
            } => level_if(masters < quorum, Unsafe),
            Finding::Now(Now::Usable) => Ok,
            Finding::Now(Now::GuardUnknown(_)) => Unknown,
            Finding::Now(_) => Warning,
            Finding::Ready(ready) => level_if(ready.state() != State::Ready, Warning),
        }
    }
}

fn level_if(bad: bool, level: Level) -> Level {
    if bad {
        level
    } else {
        Level::Ok
    }
}

impl ServerReport {
    /// The worst of its findings.
    pub fn level(&self) -> Level {
        worst(&self.findings)
    }

    /// Whether a lock can count it now (as far as doctor can tell).
    pub fn usable(&self) -> bool {
        self.findings
            .iter()
            .any(|f| matches!(f, Finding::Now(Now::Usable | Now::GuardUnknown(_))))
    }
}

fn worst(findings: &[Finding]) -> Level {
    findings
        .iter()
        .map(Finding::level)
        .max()
        .unwrap_or(Level::Ok)
}

impl Report {
    /// The worst finding of all.
    pub fn level(&self) -> Level {
        self.servers
            .iter()
            .map(ServerReport::level)
            .chain([worst(&self.overall)])
            .max()
            .unwrap_or(Level::Ok)
    }

    /// Whether too few servers answered for any quorum.
    pub fn too_few(&self) -> bool {
        self.answered < self.quorum
    }

    /// How many servers a lock can count now.
    pub fn usable(&self) -> usize {
        self.servers.iter().filter(|s| s.usable()).count()
    }

    /// What the servers usable now allow.
    pub fn state(&self) -> State {
        self.overall
            .iter()
            .find_map(|f| match f {
                Finding::Ready(ready) => Some(ready.state()),
                _ => None,
            })
            .unwrap_or(State::Unavailable)
    }

    /// Whether anything Redlock's safety rests on is unsafe, as set up
    /// (too few masters answering is the state's to say).
    pub fn unsafe_configuration(&self) -> bool {
        self.servers
            .iter()
            .flat_map(|s| &s.findings)
            .chain(&self.overall)
            .any(|f| f.level() == Level::Unsafe && !matches!(f, Finding::Quorum { .. }))
    }

    /// How many findings of `level` there are.
    pub fn count(&self, level: Level) -> usize {
        self.servers
            .iter()
            .flat_map(|s| &s.findings)
            .chain(&self.overall)
            .filter(|f| f.level() == level)
            .count()
    }

    /// 69 when too few servers are usable now and waiting for the restart
    /// guard would not help; 1 when something is unsafe (it needs a person,
    /// where the guard passes by itself); 75 when too few are usable until
    /// the guard lets them count (not ready yet); 2 when a majority is
    /// usable but not every server (degraded); 1 for a warning with
    /// `--strict`; else 0.
    pub fn exit(&self) -> Exit {
        match self.state() {
            State::Unavailable => Exit::NoQuorum,
            _ if self.unsafe_configuration() => Exit::Free,
            State::NotReady(_) => Exit::Busy,
            State::Degraded => Exit::Degraded,
            _ if self.strict && self.level() >= Level::Warning => Exit::Free,
            _ => Exit::Success,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(usable: usize, guarded: &[u64], total: usize) -> Ready {
        Ready {
            usable,
            guarded: guarded.iter().map(|s| Duration::from_secs(*s)).collect(),
            total,
            quorum: total / 2 + 1,
        }
    }

    #[test]
    fn the_state_counts_the_usable_servers_and_when_the_guard_lets_enough_in() {
        assert_eq!(ready(3, &[], 3).state(), State::Ready);
        assert_eq!(ready(2, &[], 3).state(), State::Degraded);
        assert_eq!(ready(2, &[10], 3).state(), State::Degraded);
        // Two more needed: the second shortest guard.
        assert_eq!(
            ready(1, &[5, 20, 30], 5).state(),
            State::NotReady(Duration::from_secs(20))
        );
        assert_eq!(
            ready(0, &[3, 9, 29], 3).state(),
            State::NotReady(Duration::from_secs(9))
        );
        assert_eq!(ready(1, &[], 3).state(), State::Unavailable);
        assert_eq!(ready(0, &[7], 3).state(), State::Unavailable);
    }

    fn report(ready: Ready, extra: Finding, strict: bool) -> Report {
        Report {
            servers: Vec::new(),
            overall: vec![Finding::Ready(ready), extra],
            total: 3,
            quorum: 2,
            answered: 3,
            strict,
        }
    }

    #[test]
    fn the_exit_puts_unavailable_then_unsafe_then_not_ready_then_degraded() {
        let unsafe_count = || Finding::Count {
            servers: 2,
            single: false,
        };
        let fine = || Finding::Count {
            servers: 3,
            single: false,
        };
        let even = || Finding::Count {
            servers: 4,
            single: false,
        };
        let exit = |r: Ready, f: Finding, strict| report(r, f, strict).exit();
        assert_eq!(
            exit(ready(1, &[], 3), unsafe_count(), false),
            Exit::NoQuorum
        );
        assert_eq!(
            exit(ready(0, &[1, 2], 3), unsafe_count(), false),
            Exit::Free
        );
        assert_eq!(exit(ready(0, &[1, 2], 3), fine(), false), Exit::Busy);
        assert_eq!(exit(ready(2, &[], 3), unsafe_count(), false), Exit::Free);
        assert_eq!(exit(ready(2, &[], 3), even(), true), Exit::Degraded);
        assert_eq!(exit(ready(3, &[], 3), even(), true), Exit::Free);
        assert_eq!(exit(ready(3, &[], 3), even(), false), Exit::Success);
        assert!(!report(ready(1, &[], 3), fine(), false).unsafe_configuration());
        assert!(report(ready(3, &[], 3), unsafe_count(), false).unsafe_configuration());
    }
}
