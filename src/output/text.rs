//! The human side: messages, the status table, durations and command lines
//! shown safely.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::time::Duration;

use crate::lock::{
    count_servers, escape_and_cut, escape_bytes, held_sentence, HeldBy, Inspection, KeyState,
    Lease, Verdict, SERVER_TEXT_SHOWN,
};
use crate::supervise::{Event, StopReason};

/// `1.234s`-style durations for messages, rounded to milliseconds.
pub fn human(duration: Duration) -> String {
    let millis = Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    humantime::format_duration(millis).to_string()
}

/// "acquired NAME on n of N servers …; valid for V", with the servers and
/// the number of attempts when `detail` is asked for.
pub fn acquired(lease: &Lease, servers: usize, detail: bool) -> String {
    let detail = if detail {
        let held_on: Vec<String> = lease.held_on.iter().map(ToString::to_string).collect();
        format!(
            " ({}) after {} attempt(s)",
            held_on.join(", "),
            lease.attempts
        )
    } else {
        String::new()
    };
    format!(
        "acquired {} on {} of {}{detail}; valid for {}",
        lease.key,
        lease.held_on.len(),
        count_servers(servers),
        human(lease.validity)
    )
}

/// A command line for messages, each word escaped.
pub fn command_line(argv: &[OsString]) -> String {
    argv.iter()
        .map(|word| escape_bytes(word.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why `exec` stopped its command, or did not start it, after "lock NAME ".
pub fn stop_reason(reason: &StopReason) -> String {
    match reason {
        StopReason::NotExtended { left } => format!(
            "could not be extended in time; its validity ends in {}; the command was stopped",
            human(*left)
        ),
        StopReason::Overdue => {
            "ran out of validity while redlock itself was not running; the command was stopped"
                .into()
        }
        StopReason::Lost(account) => format!("was lost ({account}); the command was stopped"),
        StopReason::TooLateToStart => "ran out of validity before the command could start \
            (redlock was not running); the command was not started"
            .into(),
    }
}

/// What the supervisor tells about its work.
pub fn event(event: &Event) -> String {
    match event {
        Event::Started { pid } => format!("the command runs as process {pid}"),
        Event::HoldingForLeftovers => {
            "the command exited; holding the lock until the processes it left behind end".into()
        }
        Event::LeftoverStoppedAgain { pid, signal } => format!(
            "process {pid}, left behind by the command, stopped on the terminal again: sending it {}",
            signal.as_str()
        ),
        Event::WatchdogGone => {
            "the watchdog process is gone; a frozen redlock could not stop the command in time"
                .into()
        }
    }
}

/// `redlock status`: who holds it and until when, what the holder
/// recorded, the token's majority, then one line per server.
pub fn status(inspection: &Inspection, verdict: &Verdict) -> String {
    let (total, quorum) = (inspection.servers.len(), inspection.quorum);
    let mut text = match (verdict, inspection.occupied()) {
        (Verdict::Held { .. } | Verdict::Foreign { .. }, Some(occupied)) => {
            let mut text = held_sentence(&inspection.key, &occupied.held_by, occupied.expires_in);
            if let HeldBy::Redlock(recorded) = &occupied.held_by {
                if let Some(command) = &recorded.holder.command {
                    text.push_str(&format!("\n  command: {}", server_text(command.as_bytes())));
                }
            }
            text
        }
        (Verdict::Free, _) => format!(
            "{} is free: nothing holds a majority of {} (quorum {quorum})",
            inspection.key,
            count_servers(total)
        ),
        _ => format!(
            "{} is unknown: too few of {} answered (quorum {quorum})",
            inspection.key,
            count_servers(total)
        ),
    };
    match verdict {
        Verdict::Held { value, on } => text.push_str(&format!(
            "\n  token:   {} on {on} of {} (quorum {quorum})",
            server_text(value),
            count_servers(total)
        )),
        Verdict::Foreign { kind, on } => text.push_str(&format!(
            "\n  a {} on {on} of {} (quorum {quorum})",
            server_text(kind.as_bytes()),
            count_servers(total)
        )),
        Verdict::Free | Verdict::Unknown => {}
    }
    let names: Vec<String> = inspection
        .servers
        .iter()
        .map(|s| s.server.to_string())
        .collect();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    for (s, name) in inspection.servers.iter().zip(&names) {
        let detail = match &s.state {
            Ok(KeyState { kind, .. }) if kind == "none" => "free".to_owned(),
            Ok(KeyState {
                value: Some(value),
                pttl_ms,
                ..
            }) => format!("token {}  {}", server_text(value), expiry(*pttl_ms)),
            Ok(KeyState { kind, pttl_ms, .. }) => format!(
                "foreign {} value  {}",
                server_text(kind.as_bytes()),
                expiry(*pttl_ms)
            ),
            Err(err) => format!("error: {err}"),
        };
        let detail = match &s.state {
            Ok(KeyState {
                restarting: Some(left),
                ..
            }) => format!("{detail}  (restarting, counted again in {})", human(*left)),
            _ => detail,
        };
        text.push_str(&format!("\n  {name:width$}  {detail}"));
    }
    text
}

/// A value or type a server holds, for the table: escaped and cut (the JSON
/// shows it whole).
fn server_text(bytes: &[u8]) -> String {
    escape_and_cut(bytes, SERVER_TEXT_SHOWN)
}

fn expiry(pttl_ms: i64) -> String {
    match u64::try_from(pttl_ms) {
        Ok(ms) => format!("expires in {}", human(Duration::from_millis(ms))),
        Err(_) => "never expires".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(human(Duration::from_micros(29_734_567)), "29s 734ms");
    }

    #[test]
    fn command_lines_are_escaped() {
        let argv = [OsString::from("echo"), OsString::from("a\nb")];
        assert_eq!(command_line(&argv), "echo a\\nb");
    }
}
