//! `redlock doctor --json`: the report as one object, its findings in the
//! words the text shows.

use serde::Serialize;

use crate::duration::millis;
use crate::outcome::report::{Finding, Level, Now, Report, ServerReport, State};
use crate::output::doctor::{state_word, verdict, words};

#[derive(Serialize)]
struct ReportJson {
    verdict: &'static str,
    exit: u8,
    strict: bool,
    total: usize,
    quorum: usize,
    answered: usize,
    /// The three kinds a monitoring check alerts on, apart: `state` (can
    /// a lock be taken now), and `unsafe` (the configuration).
    state: &'static str,
    usable: usize,
    /// `state` is `not-ready`: in how long a lock can be taken.
    ready_in_ms: Option<u64>,
    #[serde(rename = "unsafe")]
    unsafe_configuration: bool,
    degraded: bool,
    not_ready: bool,
    unavailable: bool,
    servers: Vec<ServerJson>,
    checks: Vec<CheckJson>,
}

#[derive(Serialize)]
struct ServerJson {
    server: String,
    verdict: Level,
    /// What the server says it is (`redis`, `valkey`) and its version.
    server_name: Option<String>,
    version: Option<String>,
    rtt_ms: Option<f64>,
    /// Whether a lock can count it now.
    usable: bool,
    /// The restart guard keeps it out: how long yet, and why.
    guard: Option<GuardJson>,
    checks: Vec<CheckJson>,
}

#[derive(Serialize)]
struct GuardJson {
    left_ms: u64,
    cause: &'static str,
}

#[derive(Serialize)]
struct CheckJson {
    check: &'static str,
    level: Level,
    says: String,
    fix: Option<String>,
}

fn checks(findings: &[Finding]) -> Vec<CheckJson> {
    findings
        .iter()
        .map(|finding| {
            let said = words(finding);
            CheckJson {
                check: said.check,
                level: finding.level(),
                says: said.says,
                fix: said.fix,
            }
        })
        .collect()
}

fn server_json(server: &ServerReport) -> ServerJson {
    ServerJson {
        server: server.spec.to_string(),
        verdict: server.level(),
        server_name: server.server.as_ref().map(|(name, _)| name.clone()),
        version: server.server.as_ref().map(|(_, version)| version.clone()),
        rtt_ms: server
            .rtt
            .map(|rtt| (rtt.as_secs_f64() * 1e6).round() / 1e3),
        usable: server.usable(),
        guard: server.findings.iter().find_map(|f| match f {
            Finding::Now(Now::Guarded(g)) => Some(GuardJson {
                left_ms: millis(g.left),
                cause: g.cause.as_str(),
            }),
            _ => None,
        }),
        checks: checks(&server.findings),
    }
}

/// The report as one JSON object.
pub(super) fn json(report: &Report) -> serde_json::Result<String> {
    let state = report.state();
    serde_json::to_string(&ReportJson {
        verdict: verdict(report),
        exit: report.exit().code(),
        strict: report.strict,
        total: report.total,
        quorum: report.quorum,
        answered: report.answered,
        state: state_word(state),
        usable: report.usable(),
        ready_in_ms: match state {
            State::NotReady(left) => Some(millis(left)),
            _ => None,
        },
        unsafe_configuration: report.unsafe_configuration(),
        degraded: state == State::Degraded,
        not_ready: matches!(state, State::NotReady(_)),
        unavailable: state == State::Unavailable,
        servers: report.servers.iter().map(server_json).collect(),
        checks: checks(&report.overall),
    })
}

#[cfg(test)]
mod tests {
    use super::Level;
    use crate::output::doctor::level_word;

    #[test]
    fn a_level_is_written_as_the_text_words_it() {
        for level in [Level::Ok, Level::Unknown, Level::Warning, Level::Unsafe] {
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, format!("\"{}\"", level_word(level)));
        }
    }
}
