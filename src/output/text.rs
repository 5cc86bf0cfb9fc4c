//! The human side: messages, the status table, durations and command lines
//! shown safely.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::time::Duration;

use crate::lock::{
    count_servers, escape_and_cut, escape_bytes, held_sentence, rounded, Forced, HeldBy,
    Inspection, KeyState, Lease, Listed, Listing, ServerPart, Standing, Verdict, SERVER_TEXT_SHOWN,
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
        human(lease.validity())
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
    if let Some(line) = waiters(inspection.waiters()) {
        text.push_str(&format!("\n  line:    {line}"));
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

/// The state column of `list` and the `state` of its JSON.
pub fn standing(standing: Standing) -> &'static str {
    match standing {
        Standing::Held => "held",
        Standing::Minority => "minority",
        Standing::Unknown => "unknown",
    }
}

/// How many characters of a name `list` pads its column to; longer names
/// are shown whole and push their line's other columns out.
const NAME_COLUMN: usize = 40;

/// `redlock list`: a header and one line per lock, the holder last since it
/// is the longest.
pub fn list(entries: &[Listed<'_>]) -> String {
    let rows: Vec<[String; 5]> = entries.iter().map(list_row).collect();
    let header = ["NAME", "STATE", "AGE", "EXPIRES", "HOLDER"].map(String::from);
    let width = |column: usize| {
        let widest = rows.iter().map(|row| row[column].chars().count()).max();
        widest.unwrap_or(0).max(header[column].len())
    };
    let widths = [width(0).min(NAME_COLUMN), width(1), width(2), width(3)];
    std::iter::once(&header)
        .chain(&rows)
        .map(|row| {
            let padded: Vec<String> = (0..4)
                .map(|c| format!("{:<w$}", row[c], w = widths[c]))
                .collect();
            format!("{}  {}", padded.join("  "), row[4])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn list_row(entry: &Listed<'_>) -> [String; 5] {
    let occupied = entry.occupied.as_ref();
    let age = match occupied.map(|o| &o.held_by) {
        Some(HeldBy::Redlock(recorded)) => recorded.held_for.map_or("-".to_owned(), rounded),
        _ => "-".to_owned(),
    };
    let expires = match (entry.standing, occupied) {
        (Standing::Held, Some(o)) => o.expires_in.map_or("never".to_owned(), rounded),
        _ => "-".to_owned(),
    };
    let holder = match occupied.map(|o| &o.held_by) {
        Some(HeldBy::Redlock(recorded)) => recorded.holder.summary(),
        Some(other) => other.to_string(),
        None => "-".to_owned(),
    };
    let name = format!("\"{}\"", escape_bytes(entry.name));
    [
        name,
        standing(entry.standing).to_owned(),
        age,
        expires,
        holder,
    ]
}

/// What `list` says on stderr about a server whose locks it could not read.
pub fn list_server(part: &ServerPart) -> Option<String> {
    match &part.state {
        Ok(None) => None,
        Ok(Some(left)) => Some(format!(
            "{} may have lost locks recently and does not count (restart guard; counted again in {})",
            part.server,
            human(*left)
        )),
        Err(err) => Some(format!(
            "{} failed, its locks are not known: {err}",
            part.server
        )),
    }
}

/// `list` found nothing.
pub fn list_empty(listing: &Listing) -> String {
    let pattern = escape_bytes(&listing.query.pattern);
    match listing.query.prefix.as_slice() {
        [] => format!("no locks taken by redlock match \"{pattern}\""),
        prefix => format!(
            "no locks under the prefix \"{}\" match \"{pattern}\"",
            escape_bytes(prefix)
        ),
    }
}

/// What `release --force` broke, in one line; `None` when it deleted
/// nothing because the key is not a lock (see [`not_a_lock`]).
pub fn forced(forced: &Forced) -> Option<String> {
    let before = &forced.before;
    let (key, total) = (&before.key, before.servers.len());
    let deleted = forced.deleted_on().len();
    let answered = before.servers.iter().filter(|s| s.state.is_ok()).count();
    let on = format!("{deleted} of {}", count_servers(total));
    let cleared = waiters(before.waiters())
        .map(|line| format!("; took the {line} out of it"))
        .unwrap_or_default();
    let text = match (
        before.verdict(),
        before.occupied().or_else(|| before.seen()),
    ) {
        _ if deleted == 0 && !forced.left_alone().is_empty() => return None,
        _ if deleted == 0 && !cleared.is_empty() => {
            format!(
                "{key} was free; took the {} out of its line",
                waiters(before.waiters()).unwrap_or_default()
            )
        }
        _ if deleted == 0 => format!(
            "{key} was already free on the {answered} of {} that answered; nothing deleted",
            count_servers(total)
        ),
        (Verdict::Held { .. }, Some(occupied)) => {
            format!("broke {key}: held by {}; deleted on {on}", occupied.held_by)
        }
        (Verdict::Unknown, seen) => format!(
            "deleted {key} on {on}{}; too few servers answered to tell whether a majority \
             held it",
            seen.map(|o| format!(" (held by {})", o.held_by))
                .unwrap_or_default()
        ),
        (_, seen) => format!(
            "deleted leftovers of {key} on {on}{}; no majority held it",
            seen.map(|o| format!(" (held by {})", o.held_by))
                .unwrap_or_default()
        ),
    };
    let text = match deleted {
        0 => text,
        _ => text + &cleared,
    };
    let failed: Vec<String> = before
        .servers
        .iter()
        .filter_map(|s| Some(format!("{}: {}", s.server, s.state.as_ref().err()?)))
        .collect();
    Some(match failed.as_slice() {
        [] => text,
        failed => format!("{text}; not reached: {}", failed.join("; ")),
    })
}

/// "N waiters in line", or `None` for none.
fn waiters(count: u64) -> Option<String> {
    match count {
        0 => None,
        1 => Some("1 waiter in line".into()),
        n => Some(format!("{n} waiters in line")),
    }
}

/// Why `release --force` left a key alone: it is of another type than a
/// lock's on some server.
pub fn not_a_lock(forced: &Forced) -> Option<String> {
    let left = forced.left_alone();
    let (_, kind) = left.first()?;
    let before = &forced.before;
    Some(format!(
        "{} is not a lock: a {} on {} of {}, left alone (release --force deletes only locks, \
         which are strings{})",
        before.key,
        server_text(kind.as_bytes()),
        left.len(),
        count_servers(before.servers.len()),
        match forced.deleted_on().len() {
            0 => String::new(),
            n => format!("; the lock was deleted on {n}"),
        }
    ))
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
