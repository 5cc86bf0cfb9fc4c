//! `redlock doctor`'s report, as data: a finding per check, per server and
//! for the whole list, each with its level; the exit status follows from
//! the levels. `output` words the findings.

use std::time::Duration;

use crate::exit_code::Exit;
use crate::lock::{Markers, Missing, Reached, ServerError, ServerSpec, Unknown};

/// How much a finding matters, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    pub version: Option<String>,
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
                    (_, _, false) => Warning,
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

    /// How many findings of `level` there are.
    pub fn count(&self, level: Level) -> usize {
        self.servers
            .iter()
            .flat_map(|s| &s.findings)
            .chain(&self.overall)
            .filter(|f| f.level() == level)
            .count()
    }

    /// 69 when too few servers answer, 1 when something is unsafe (a
    /// warning too with `--strict`), else 0.
    pub fn exit(&self) -> Exit {
        match self.level() {
            _ if self.too_few() => Exit::NoQuorum,
            Level::Unsafe => Exit::Free,
            Level::Warning if self.strict => Exit::Free,
            _ => Exit::Success,
        }
    }
}
