//! `redlock doctor`: asks every server what Redlock's safety rests on, and
//! turns the answers into findings (`outcome::report`).

use std::time::Duration;

use super::ctx::Ctx;
use crate::config::DoctorJob;
use crate::error::Error;
use crate::lock::{
    Facts, Info, KeyState, LockKey, Probe, Redlock, ServerError, ServerSpec, Unknown,
};
use crate::outcome::report::{Finding, Now, Ready, Report, ServerReport};
use crate::outcome::Outcome;

/// The settings the checks weigh the answers against.
struct Against {
    guard: Duration,
    timeout: Duration,
    clock_bound: Duration,
    /// `--accept-replicas`.
    accept_replicas: bool,
}

pub fn run(ctx: &Ctx<'_>, job: DoctorJob) -> Result<Outcome, Error> {
    ctx.block_on(check(&ctx.redlock, job, &ctx.handoff.prefix))?
}

async fn check(redlock: &Redlock, job: DoctorJob, prefix: &[u8]) -> Result<Outcome, Error> {
    let probes = redlock.probe(prefix).await;
    let against = Against {
        guard: redlock.restart_guard(),
        timeout: redlock.server_timeout(),
        // The drift Redlock allows for (1% of the TTL, and 2 ms), which a
        // clock read over the network cannot tell apart from less than
        // a few ms.
        clock_bound: (job.ttl / 100).max(Duration::from_millis(5)),
        accept_replicas: job.accept_replicas,
    };
    let median = median_offset(&probes);
    // The restart guard's word on each server, as `status` asks it (this
    // writes the marker, as any acquire does): the key of a name without a
    // hash tag shares the fleet's marker.
    let guard = redlock
        .inspect(&LockKey::prefixed(prefix, b"redlock-doctor"))
        .await;
    let mut servers: Vec<ServerReport> = Vec::with_capacity(probes.len());
    for (i, probe) in probes.iter().enumerate() {
        let duplicate = earlier_with_run_id(&probes[..i], probe);
        let mut report = server_report(probe, duplicate, median, &against);
        if let Some(now) = now(&report, probe, guard.servers.get(i).map(|s| &s.state)) {
            report.findings.push(Finding::Now(now));
        }
        servers.push(report);
    }
    let ready = ready(&servers, redlock.quorum());
    let answered = probes.iter().filter(|p| p.answer.is_ok()).count();
    let masters = servers
        .iter()
        .zip(&probes)
        .filter(|(report, probe)| {
            probe.answer.is_ok()
                && !report.findings.iter().any(|f| {
                    matches!(
                        f,
                        Finding::Replica { .. } | Finding::Duplicate { .. } | Finding::Refused(_)
                    )
                })
        })
        .count();
    let overall = vec![
        Finding::Count {
            servers: probes.len(),
            single: job.single,
        },
        Finding::Quorum {
            masters,
            answered,
            quorum: redlock.quorum(),
        },
        Finding::Ready(ready),
    ];
    Ok(Outcome::Doctor(Report {
        servers,
        overall,
        total: probes.len(),
        quorum: redlock.quorum(),
        answered,
        strict: job.strict,
    }))
}

/// Whether a lock can count a server that answered at this moment (`None`:
/// it did not answer, which its findings say): it is a distinct master,
/// serving slots if in a cluster, and the lock's script runs there outside
/// the restart guard (`inspected`: what the script said).
fn now(
    report: &ServerReport,
    probe: &Probe,
    inspected: Option<&Result<KeyState, ServerError>>,
) -> Option<Now> {
    let facts = probe.answer.as_ref().ok()?;
    for finding in &report.findings {
        match finding {
            Finding::Replica { .. } => return Some(Now::Out("a replica")),
            Finding::Duplicate { .. } => return Some(Now::Out("listed twice")),
            _ => {}
        }
    }
    let cluster = facts.cluster.as_ref();
    if let Some(Ok(node)) = cluster {
        if !node.serves() {
            return Some(Now::NoSlots(node.clone()));
        }
    }
    Some(match inspected {
        Some(Ok(state)) => match state.restarting {
            Some(guarded) => Now::Guarded(guarded),
            None => Now::Usable,
        },
        // A cluster node that serves slots takes locks of the names whose
        // slot it serves: their guard markers are per hash tag.
        Some(Err(err)) if cluster.is_some() => Now::GuardUnknown(err.clone()),
        Some(Err(err)) => Now::Fails(err.clone()),
        None => Now::Fails(ServerError::Failed("no reply".into())),
    })
}

/// The servers usable now, and how long the guard keeps out the others it
/// alone keeps out.
fn ready(servers: &[ServerReport], quorum: usize) -> Ready {
    let now = |s: &ServerReport| {
        s.findings.iter().find_map(|f| match f {
            Finding::Now(now) => Some(now.clone()),
            _ => None,
        })
    };
    let usable = servers.iter().filter(|s| s.usable()).count();
    let mut guarded: Vec<Duration> = servers
        .iter()
        .filter_map(|s| match now(s) {
            Some(Now::Guarded(g)) => Some(g.left),
            _ => None,
        })
        .collect();
    guarded.sort_unstable();
    Ready {
        usable,
        guarded,
        total: servers.len(),
        quorum,
    }
}

/// The findings of one server.
fn server_report(
    probe: &Probe,
    duplicate: Option<ServerSpec>,
    median: Option<i64>,
    against: &Against,
) -> ServerReport {
    let facts = match &probe.answer {
        Ok(facts) => facts,
        Err(err) => {
            let finding = match err {
                crate::lock::ServerError::Refused(why) => Finding::Refused(why.clone()),
                err => Finding::Unreachable(err.clone()),
            };
            return ServerReport {
                spec: probe.spec.clone(),
                server: None,
                rtt: None,
                findings: vec![finding],
            };
        }
    };
    let info = facts.info.as_ref().map_err(Clone::clone);
    let mut findings = vec![role(&info)];
    findings.extend(duplicate.map(|of| Finding::Duplicate { of }));
    if let (Finding::Master, Ok(info)) = (&findings[0], &info) {
        findings.extend(replicas(info, against.accept_replicas));
    }
    findings.push(match &facts.reached {
        Ok(reached) => Finding::Address(reached.clone()),
        Err(why) => Finding::AddressUnknown(why.clone()),
    });
    findings.push(eviction(&info));
    findings.push(persistence(&info, facts, against.guard));
    if let Ok(Some(uptime)) = info.as_ref().map(|i| i.uptime) {
        findings.push(Finding::Uptime {
            uptime,
            guard: against.guard,
        });
    }
    findings.push(clock(facts, median, against.clock_bound));
    findings.push(Finding::RoundTrip {
        rtt: facts.rtt,
        timeout: against.timeout,
    });
    if let Ok(Some(cluster)) = info.as_ref().map(|i| i.cluster_enabled) {
        findings.push(Finding::Cluster(cluster));
    }
    findings.push(acl(facts, !against.guard.is_zero()));
    findings.push(debug(&info, facts));
    if let Ok(info) = &info {
        findings.push(shared(info, facts));
    }
    ServerReport {
        spec: probe.spec.clone(),
        server: info.as_ref().ok().and_then(|i| i.server.clone()),
        rtt: Some(facts.rtt),
        findings,
    }
}

fn role(info: &Result<&Info, Unknown>) -> Finding {
    match info {
        Ok(info) if info.is_replica() => Finding::Replica {
            master: info.master.clone(),
            read_only: info.read_only,
        },
        Ok(info) if info.role.is_some() => Finding::Master,
        Ok(_) => Finding::RoleUnknown(Unknown("INFO has no role".into())),
        Err(why) => Finding::RoleUnknown(why.clone()),
    }
}

/// A master's replicas, if INFO says how many.
fn replicas(info: &Info, accepted: bool) -> Option<Finding> {
    Some(Finding::Replicas {
        attached: info.connected_replicas?,
        replicas: info.replicas.clone(),
        accepted,
    })
}

/// `enable-debug-command`: before Redis 7 there is none, and DEBUG is
/// always enabled.
fn debug(info: &Result<&Info, Unknown>, facts: &Facts) -> Finding {
    let version = info.as_ref().ok().and_then(|i| i.version.clone());
    let major = version
        .as_deref()
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
    match (&facts.debug_command, major, version) {
        (_, Some(major), Some(version)) if major < 7 => Finding::DebugAlways(version),
        (Ok(setting), _, _) => Finding::Debug(setting.clone()),
        (Err(why), _, _) => Finding::DebugUnknown(why.clone()),
    }
}

/// Other dbs with keys (INFO keyspace), and other prefixes' markers here.
fn shared(info: &Info, facts: &Facts) -> Finding {
    Finding::Shared {
        db: facts.db,
        other_dbs: info
            .keyspace
            .iter()
            .filter(|(db, _)| i64::from(*db) != facts.db)
            .copied()
            .collect(),
        markers: facts.markers.clone(),
    }
}

fn eviction(info: &Result<&Info, Unknown>) -> Finding {
    match info.as_ref().map(|i| i.maxmemory_policy.clone()) {
        Ok(Some(policy)) => Finding::Eviction {
            evicts: crate::lock::evicts_locks(&policy),
            policy,
        },
        Ok(None) => Finding::EvictionUnknown(Unknown("INFO has no maxmemory_policy".into())),
        Err(why) => Finding::EvictionUnknown(why.clone()),
    }
}

fn persistence(info: &Result<&Info, Unknown>, facts: &Facts, guard: Duration) -> Finding {
    match info.as_ref().map(|i| i.aof_enabled) {
        Ok(Some(aof)) => Finding::Persistence {
            aof,
            fsync: facts.appendfsync.clone(),
            guard,
        },
        Ok(None) => Finding::PersistenceUnknown(Unknown("INFO has no aof_enabled".into())),
        Err(why) => Finding::PersistenceUnknown(why.clone()),
    }
}

fn clock(facts: &Facts, median: Option<i64>, bound: Duration) -> Finding {
    match (&facts.clock_offset_ms, median) {
        (Ok(offset), Some(median)) => {
            let diff = offset - median;
            // What the network could add to the reading: half a round trip.
            let blur = i64::try_from(facts.rtt.as_millis() / 2).unwrap_or(i64::MAX);
            let off = diff.unsigned_abs().saturating_sub(blur.unsigned_abs());
            Finding::Clock {
                off: Duration::from_millis(off),
                ahead: diff > 0,
                bound,
            }
        }
        (Err(why), _) => Finding::ClockUnknown(why.clone()),
        (Ok(_), None) => Finding::ClockUnknown(Unknown("no clock to compare with".into())),
    }
}

/// The ACL check: what `ACL DRYRUN` said, and INFO refused outright (a user
/// without +info, whose ACL may not allow DRYRUN either).
fn acl(facts: &Facts, guard_on: bool) -> Finding {
    let refused = |answer: Result<(), &Unknown>, command| {
        matches!(answer, Err(why) if why.is_not_permitted()).then_some(crate::lock::Missing {
            command,
            feature: crate::lock::Feature::RestartGuard,
        })
    };
    let refused: Vec<_> = [
        refused(facts.info.as_ref().map(|_| ()), "INFO"),
        refused(facts.clock_offset_ms.as_ref().map(|_| ()), "TIME"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match &facts.missing {
        Ok(missing) => {
            let mut missing = missing.clone();
            for command in refused.into_iter().rev() {
                if !missing.iter().any(|m| m.command == command.command) {
                    missing.insert(0, command);
                }
            }
            Finding::Acl {
                missing,
                guard_on,
                complete: true,
            }
        }
        Err(_) if !refused.is_empty() => Finding::Acl {
            missing: refused,
            guard_on,
            complete: false,
        },
        Err(why) => Finding::AclUnknown(why.clone()),
    }
}

/// An earlier server of the list that is the same process (its run_id).
fn earlier_with_run_id(earlier: &[Probe], probe: &Probe) -> Option<ServerSpec> {
    let run_id = |p: &Probe| -> Option<String> {
        p.answer.as_ref().ok()?.info.as_ref().ok()?.run_id.clone()
    };
    let ours = run_id(probe)?;
    earlier
        .iter()
        .find(|p| run_id(p).as_ref() == Some(&ours))
        .map(|p| p.spec.clone())
}

/// The median of the servers' clock offsets from ours.
fn median_offset(probes: &[Probe]) -> Option<i64> {
    let mut offsets: Vec<i64> = probes
        .iter()
        .filter_map(|p| {
            p.answer
                .as_ref()
                .ok()?
                .clock_offset_ms
                .as_ref()
                .ok()
                .copied()
        })
        .collect();
    offsets.sort_unstable();
    offsets.get(offsets.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(debug_command: Result<String, Unknown>) -> Facts {
        let refused = || Unknown("not asked".into());
        Facts {
            rtt: Duration::ZERO,
            info: Err(refused()),
            clock_offset_ms: Err(refused()),
            appendfsync: Err(refused()),
            missing: Err(refused()),
            db: 0,
            debug_command,
            reached: Err(refused()),
            markers: Err(refused()),
            cluster: None,
        }
    }

    fn version(v: &str) -> Info {
        Info {
            version: Some(v.into()),
            ..Info::default()
        }
    }

    #[test]
    fn before_redis_7_debug_is_always_enabled() {
        // Redis 6 has no enable-debug-command: CONFIG GET gives nothing.
        let none = facts(Err(Unknown(
            "CONFIG GET enable-debug-command gave no value".into(),
        )));
        let finding = debug(&Ok(&version("6.2.14")), &none);
        assert!(matches!(&finding, Finding::DebugAlways(v) if v == "6.2.14"));
        assert_eq!(finding.level(), crate::outcome::report::Level::Warning);
        let no = facts(Ok("no".into()));
        let finding = debug(&Ok(&version("7.2.4")), &no);
        assert!(matches!(&finding, Finding::Debug(s) if s == "no"));
        assert_eq!(finding.level(), crate::outcome::report::Level::Ok);
        // Refused, with no version known: unknown, not an error.
        let refused = facts(Err(Unknown("not permitted: the user lacks +config".into())));
        let finding = debug(&Err(Unknown("no INFO".into())), &refused);
        assert!(matches!(finding, Finding::DebugUnknown(_)));
    }
}
