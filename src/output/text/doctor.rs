//! `redlock doctor`'s report for people: a block per server, one for the
//! list, the verdict.

use crate::outcome::report::{Finding, Level, Report};
use crate::output::doctor::{level_word, ms, verdict, words};

/// The report for people: a block per server, one for the list, the
/// verdict.
pub(super) fn text(report: &Report) -> String {
    let mut out = String::new();
    for server in &report.servers {
        let mut about: Vec<String> = server
            .server
            .iter()
            .map(|(name, version)| format!("{name} {version}"))
            .collect();
        about.extend(server.rtt.map(|rtt| format!("round trip {}", ms(rtt))));
        let about = match about.is_empty() {
            true => String::new(),
            false => format!(" ({})", about.join(", ")),
        };
        out.push_str(&format!(
            "{}: {}{about}\n",
            server.spec,
            level_word(server.level())
        ));
        lines(&mut out, &server.findings);
    }
    out.push_str(&match report.total {
        1 => "the 1 server:\n".to_owned(),
        n => format!("the {n} servers:\n"),
    });
    lines(&mut out, &report.overall);
    let counted = |level| report.count(level);
    out.push_str(&format!(
        "verdict: {} ({} unsafe, {} warnings, {} unknown{})",
        verdict(report),
        counted(Level::Unsafe),
        counted(Level::Warning),
        counted(Level::Unknown),
        if report.strict { "; --strict" } else { "" }
    ));
    out
}

fn lines(out: &mut String, findings: &[Finding]) {
    for finding in findings {
        let said = words(finding);
        let level = match finding.level() {
            Level::Unsafe => "UNSAFE",
            level => level_word(level),
        };
        let fix = said.fix.map(|f| format!("; fix: {f}")).unwrap_or_default();
        out.push_str(&format!(
            "  {level:<8} {:<12} {}{fix}\n",
            said.check, said.says
        ));
    }
}
