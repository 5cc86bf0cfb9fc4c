//! The text format, for people: the token, the status table, the list
//! table a batch at a time, doctor's report. (What each outcome says on
//! stderr, in either format, is in `said.rs`.)

mod doctor;

use std::time::Duration;

use super::format::{Format, Level, Piece, SoFar};
use super::words::{self, servers as count_servers, waiters};
use crate::duration::{exact as human, rounded};
use crate::lock::{
    escape_and_cut, escape_bytes, oldest_reader, HeldBy, Inspection, KeyState, Lease, Listed,
    Listing, Standing, Verdict, SERVER_TEXT_SHOWN,
};
use crate::outcome::{Failed, LockState, Outcome, Slots};

/// Text for people: the token, the status table, the list.
pub struct Text {
    pub quiet: bool,
    pub verbose: bool,
}

impl Format for Text {
    fn outcome(&self, outcome: &Outcome) -> std::io::Result<Option<String>> {
        Ok(match outcome {
            Outcome::Acquired { lease, .. } => Some(token_line(lease)),
            Outcome::Status {
                inspection,
                verdict,
            } if !self.quiet => Some(status(inspection, verdict)),
            Outcome::Doctor(report) if !self.quiet => Some(doctor::text(report)),
            Outcome::Slots(slots) if !self.quiet => Some(self::slots(slots)),
            _ => None,
        })
    }

    fn failure(&self, _: &Failed<'_>) -> std::io::Result<Option<String>> {
        Ok(None)
    }

    /// The table's rows, under its header with the first batch; nothing
    /// under `-q`.
    fn list_batch(&self, batch: &Listing, so_far: &mut SoFar) -> std::io::Result<Vec<Piece>> {
        if self.quiet {
            return Ok(Vec::new());
        }
        let entries = batch.entries();
        let header = !so_far.opened;
        let rows = list_rows(&entries, &mut so_far.widths, header);
        so_far.opened = true;
        so_far.any |= !entries.is_empty();
        Ok(vec![Piece::Stdout(rows)])
    }

    /// That nothing matched; without a quorum, finding nothing says
    /// nothing (the locks may be on the servers that did not answer), and
    /// the no-quorum warning follows instead.
    fn list_end(&self, listing: &Listing, _: &SoFar) -> std::io::Result<Option<Piece>> {
        let empty = listing.count == 0 && listing.no_quorum().is_none();
        Ok(empty.then(|| Piece::Stderr(Level::Expected, list_empty(listing))))
    }

    fn shows_every_answer(&self) -> bool {
        self.verbose
    }
}

/// `acquire`'s stdout: the token, and with `--fence` the fencing token
/// after one space on the same line, so that `read -r tok fence` takes
/// both (a token never holds a space). Without `--fence` the line is the
/// token alone, as ever.
fn token_line(lease: &Lease) -> String {
    match lease.fence {
        Some(fence) => format!("{} {fence}", lease.token.as_str()),
        None => lease.token.as_str().to_owned(),
    }
}

/// `redlock status`: who holds it and until when, what the holder
/// recorded, the token's majority, then one line per server.
/// `status --limit K`: how many slots are held and free, then each slot
/// as `status` shows a lock.
fn slots(slots: &Slots) -> String {
    let mut text = words::slots(&slots.semaphore, slots.held(), slots.free());
    for (inspection, verdict) in &slots.slots {
        text.push_str("\n\n");
        text.push_str(&status(inspection, verdict));
    }
    text
}

fn status(inspection: &Inspection, verdict: &Verdict) -> String {
    let (total, quorum) = (inspection.servers.len(), inspection.quorum);
    let state = LockState::of(verdict, inspection.readers());
    let mut text = match (state, inspection.occupied()) {
        (LockState::Held, Some(occupied)) => {
            let mut text = words::held(&inspection.key, &occupied.held_by, occupied.expires_in);
            if let HeldBy::Redlock(recorded) = &occupied.held_by {
                if let Some(command) = &recorded.holder.command {
                    text.push_str(&format!("\n  command: {}", server_text(command.as_bytes())));
                }
            }
            text
        }
        (LockState::Shared, _) => words::shared(&inspection.key, inspection.readers(), total),
        (LockState::Free, _) => format!(
            "{} is free: nothing holds a majority of {} (quorum {quorum})",
            inspection.key,
            count_servers(total)
        ),
        _ => {
            let answered: Vec<&KeyState> = inspection
                .servers
                .iter()
                .filter_map(|s| s.state.as_ref().ok())
                .collect();
            let guarded: Vec<_> = answered.iter().filter_map(|s| s.restarting).collect();
            words::status_unknown(&inspection.key, (total, quorum), answered.len(), &guarded)
        }
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
    text.push_str(&reader_lines(inspection));
    if let Some(line) = waiters(inspection.waiters()) {
        text.push_str(&format!("\n  line:    {line}"));
    }
    if let Some(by) = inspection.superseder() {
        text.push_str(&format!(
            "\n  pending: a superseding waiter ({})",
            words::superseder(&by, "by arrival")
        ));
    }
    if let Some(fence) = inspection.fence() {
        text.push_str(&format!(
            "\n  fence:   {fence} (the last fencing token handed out)"
        ));
    }
    if let Some(broken) = inspection.broken() {
        text.push_str(&format!("\n  {}", words::broken(&broken)));
    }
    if let Some((mark, on)) = &inspection.done {
        let on = format!("on {on} of {}", count_servers(total));
        text.push_str(&format!("\n  done:    {} ({on})", words::done_mark(mark)));
    }
    text.push_str(&server_lines(inspection));
    text
}

/// Status's line for each server: what it holds for the lock.
fn server_lines(inspection: &Inspection) -> String {
    let mut text = String::new();
    let names: Vec<String> = inspection
        .servers
        .iter()
        .map(|s| s.server.to_string())
        .collect();
    let width = names.iter().map(String::len).max().unwrap_or(0);
    for (s, name) in inspection.servers.iter().zip(&names) {
        let detail = match &s.state {
            Ok(KeyState { readers, .. }) if readers.count > 0 => words::readers(readers.count),
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
                restarting: Some(guarded),
                ..
            }) => format!("{detail}  ({})", words::server_restarting(*guarded)),
            _ => detail,
        };
        text.push_str(&format!("\n  {name:width$}  {detail}"));
    }
    text
}

/// Status's line for each reader (`--shared`) on a majority.
fn reader_lines(inspection: &Inspection) -> String {
    let total = count_servers(inspection.servers.len());
    inspection
        .shared_holders()
        .iter()
        .map(|reader| {
            format!(
                "\n  reader:  {} on {} of {total}, expires in {}{}",
                server_text(&reader.token),
                reader.on,
                rounded(reader.expires_in),
                reader
                    .recorded
                    .as_ref()
                    .map(|record| format!("; {}", words::recorded(record)))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// How many characters of a name `list` pads its column to; longer names
/// are shown whole and push their line's other columns out.
const NAME_COLUMN: usize = 40;

/// `redlock list`'s lines for one batch of locks, the holder last since it
/// is the longest, under a header if `header`. The columns are as wide as
/// the widest of this batch and those before (`widths`, which grow), so a
/// listing of one batch is aligned whole and a longer one never shrinks.
fn list_rows(entries: &[Listed<'_>], widths: &mut [usize; 4], header: bool) -> String {
    let rows: Vec<[String; 5]> = entries.iter().map(list_row).collect();
    let head = ["NAME", "STATE", "AGE", "EXPIRES", "HOLDER"].map(String::from);
    for (c, width) in widths.iter_mut().enumerate() {
        let widest = rows.iter().map(|row| row[c].chars().count()).max();
        *width = (*width).max(widest.unwrap_or(0)).max(head[c].len());
    }
    widths[0] = widths[0].min(NAME_COLUMN);
    header
        .then_some(&head)
        .into_iter()
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

/// `redlock list --names`'s lines for one batch: each name escaped as in the
/// table, without its quotes.
pub(super) fn list_names(entries: &[Listed<'_>]) -> String {
    let names: Vec<String> = entries.iter().map(|e| escape_bytes(e.name)).collect();
    names.join("\n")
}

fn list_row(entry: &Listed<'_>) -> [String; 5] {
    let occupied = entry.occupied.as_ref();
    let age = match occupied.map(|o| &o.held_by) {
        Some(HeldBy::Redlock(recorded)) if recorded.ahead.is_some() => words::FUTURE.to_owned(),
        Some(HeldBy::Redlock(recorded)) => recorded.held_for.map_or("-".to_owned(), rounded),
        Some(HeldBy::Readers { .. }) => {
            oldest_reader(&entry.readers).map_or("-".to_owned(), rounded)
        }
        _ => "-".to_owned(),
    };
    let expires = match (entry.standing, occupied) {
        (Standing::Held, Some(o)) => {
            let left = o.expires_in.map_or("never".to_owned(), rounded);
            match &o.held_by {
                HeldBy::Redlock(recorded) if recorded.pid_gone => format!("{left} (pid gone)"),
                HeldBy::Redlock(recorded) if recorded.keeper_gone => {
                    format!("{left} (keeper gone)")
                }
                HeldBy::Redlock(recorded) if recorded.renewer_stopped => {
                    format!("{left} (stopped)")
                }
                HeldBy::Redlock(recorded) => match recorded.holder.renew_every_ms {
                    Some(every) => {
                        format!("renewed every {}", rounded(Duration::from_millis(every)))
                    }
                    None => left,
                },
                _ => left,
            }
        }
        (Standing::Shared, Some(o)) => o.expires_in.map_or("-".to_owned(), rounded),
        _ => "-".to_owned(),
    };
    let holder = match occupied.map(|o| &o.held_by) {
        Some(HeldBy::Redlock(recorded)) => words::holder(&recorded.holder),
        Some(HeldBy::Readers { count }) => words::readers_named(*count, &entry.readers),
        Some(other) => words::held_by(other),
        None => "-".to_owned(),
    };
    let holder = match &entry.superseder {
        Some(by) => format!(
            "{holder}; pending: a superseding waiter ({})",
            words::superseder(by, "by arrival")
        ),
        None => holder,
    };
    let holder = match (&entry.lock.done, holder.as_str()) {
        (None, _) => holder,
        (Some(done), "-") => list_done(entry.lock, done),
        (Some(done), _) => format!("{holder}; {}", list_done(entry.lock, done)),
    };
    let name = format!("\"{}\"", escape_bytes(entry.name));
    [
        name,
        words::standing(entry.standing).to_owned(),
        age,
        expires,
        holder,
    ]
}

/// `list`'s word on a lock's done mark, as `status`'s `done:` line.
fn list_done(lock: &Inspection, (mark, on): &(crate::lock::DoneMark, usize)) -> String {
    let total = lock.servers.len();
    let on = format!("on {on} of {}", count_servers(total));
    format!("done: {} ({on})", words::done_mark(mark))
}

/// `list` found nothing.
fn list_empty(listing: &Listing) -> String {
    let pattern = escape_bytes(&listing.query.pattern);
    let older = listing
        .query
        .older_than
        .map(|least| format!(" and were taken more than {} ago", human(least)))
        .unwrap_or_default();
    match listing.query.prefix.as_slice() {
        [] => format!("no locks taken by redlock match \"{pattern}\"{older}"),
        prefix => format!(
            "no locks under the prefix \"{}\" match \"{pattern}\"{older}",
            escape_bytes(prefix)
        ),
    }
}

/// A value or type a server holds, for the table: escaped and cut (the JSON
/// shows it whole).
pub(super) fn server_text(bytes: &[u8]) -> String {
    escape_and_cut(bytes, SERVER_TEXT_SHOWN)
}

fn expiry(pttl_ms: i64) -> String {
    match u64::try_from(pttl_ms) {
        Ok(ms) => format!("expires in {}", human(Duration::from_millis(ms))),
        Err(_) => "never expires".to_owned(),
    }
}
