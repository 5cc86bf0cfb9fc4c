//! The human side: what each outcome says on stderr (and, as text, on
//! stdout), what each event says, the status and list tables, and command
//! lines shown safely.

mod doctor;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::time::Duration;

use super::event::Event;
use super::format::{Format, Level, Piece, SoFar};
use super::words::{self, servers as count_servers, waiters};
use crate::config::Notice;
use crate::duration::{exact as human, rounded};
use crate::lock::{
    escape_and_cut, escape_bytes, oldest_reader, HeldBy, Inspection, KeyState, Lease, Listed,
    Listing, LockError, LockKey, ServerPart, Standing, Verdict, MAX_TOKEN, SERVER_TEXT_SHOWN,
};
use crate::outcome::{
    Did, Failed, Forcing, LockState, NotALock, Outcome, Ran, RunEnd, Slots, Stop,
};
use crate::repeats::Failing;

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

/// What an outcome writes, in order, in either format: the words it says
/// on stderr, around `stdout`, the format's own part.
pub(super) fn pieces(outcome: &Outcome, stdout: Option<Piece>) -> Vec<Piece> {
    use Level::{Expected, Verbose, Warning};
    let said = |level, text: String| Some(Piece::Stderr(level, text));
    let pieces: Vec<Option<Piece>> = match outcome {
        Outcome::Acquired { lease, servers } => {
            vec![said(Verbose, acquired(lease, *servers, true)), stdout]
        }
        Outcome::BusyAs { error, code, tried } => {
            let message = (*code != 0).then(|| words::failure(error, *tried));
            vec![message.and_then(|m| said(Expected, m)), stdout]
        }
        Outcome::Released { key, released } => vec![
            said(
                Verbose,
                format!(
                    "released {key} on {} of {}",
                    released.released_on.len(),
                    count_servers(released.total)
                ),
            ),
            stdout,
        ],
        Outcome::Extended { lease, servers } => vec![
            said(
                Verbose,
                format!(
                    "extended {} on {} of {}; valid for {}",
                    lease.key,
                    lease.held_on.len(),
                    count_servers(*servers),
                    human(lease.validity())
                ),
            ),
            stdout,
        ],
        Outcome::Status {
            inspection,
            verdict,
        } => {
            let unknown = matches!(verdict, Verdict::Unknown)
                .then(|| words::lock_error(&inspection.no_quorum()));
            vec![stdout, unknown.and_then(|m| said(Warning, m))]
        }
        Outcome::Slots(slots) => {
            let unknown = slots.unknown().map(|e| words::lock_error(&e));
            vec![stdout, unknown.and_then(|m| said(Warning, m))]
        }
        Outcome::Listed(listing) => listed(listing, stdout),
        Outcome::Forced(forcing) => {
            let broke = self::forced(forcing).and_then(|m| said(Expected, m));
            let failed = match forcing.forced.no_quorum() {
                Some(err) => Some(words::lock_error(&err)),
                None => not_a_lock(forcing),
            };
            vec![broke, stdout, failed.and_then(|m| said(Warning, m))]
        }
        Outcome::Ran(ran) => self::ran(ran),
        Outcome::Interrupted { key, signal } => vec![said(
            Verbose,
            format!("interrupted by {signal} while waiting for {key}; it is not held"),
        )],
        Outcome::Abandoned { key, pid } => vec![said(
            Expected,
            format!("gave up waiting for {key}: process {pid} (--while) exited; nothing was taken"),
        )],
        Outcome::KeptAlready { key, pid, keeper } => vec![said(
            Warning,
            format!(
                "{key} is already kept for process {pid} by an earlier `acquire --while` \
                 (keeper pid {keeper}): waiting for it would never end; release it first, or \
                 use that token"
            ),
        )],
        Outcome::Generated => Vec::new(),
        Outcome::Doctor(_) => vec![stdout],
    };
    pieces.into_iter().flatten().collect()
}

/// `list`: the servers that could not be read, always; the format's end
/// (the JSON object's, or that nothing matched); and no quorum when too few
/// could be read.
fn listed(listing: &Listing, end: Option<Piece>) -> Vec<Option<Piece>> {
    let mut pieces: Vec<Option<Piece>> = listing
        .servers
        .iter()
        .filter_map(list_server)
        .map(|m| Some(Piece::Stderr(Level::Warning, m)))
        .collect();
    pieces.push(end);
    if let Some(err) = listing.no_quorum() {
        let shown =
            escape_bytes(&[listing.query.prefix.as_slice(), &listing.query.pattern].concat());
        pieces.push(Some(Piece::Stderr(
            Level::Warning,
            words::unlisted(&shown, &err),
        )));
    }
    pieces
}

/// `exec`: why the command was stopped or not run, and under `-v` how the
/// lock was held.
fn ran(ran: &Ran) -> Vec<Option<Piece>> {
    let said = |level, text: String| Some(Piece::Stderr(level, text));
    let key = &ran.key;
    let (first, last) = match &ran.end {
        RunEnd::Exited { .. } => (released_after(ran), None),
        RunEnd::Stopped(stop @ Stop::TimedOut { .. }) => (
            said(Level::Expected, format!("lock {key}{}", stop_reason(stop))),
            released_after(ran),
        ),
        RunEnd::Stopped(stop) => (
            said(Level::Warning, format!("lock {key} {}", stop_reason(stop))),
            extension_failures(stop).and_then(|m| said(Level::Warning, m)),
        ),
        RunEnd::Refused(err) => (
            said(
                Level::Warning,
                format!("lock {key} could not be extended; the command was stopped"),
            ),
            said(Level::Warning, words::lock_error(err)),
        ),
        RunEnd::NotStarted {
            argv,
            error,
            name_runs,
        } => {
            let name = name_runs.as_ref().map(|name| escape_bytes(name.as_bytes()));
            let text = words::cannot_run(&command_line(argv), error, name.as_deref());
            (said(Level::Warning, text), None)
        }
    };
    let held = ran
        .waited
        .and_then(|waited| said(Level::Verbose, held(ran, waited)));
    vec![first, held, last]
}

/// A release that failed after the command ended (or was stopped for its
/// time limit): said, but the command's status stands.
fn released_after(ran: &Ran) -> Option<Piece> {
    let err = ran.release_failed.as_ref()?;
    Some(Piece::Stderr(
        Level::Expected,
        format!(
            "release after the command ended: {}",
            words::lock_error(err)
        ),
    ))
}

/// Under `-v`, as `exec` ends: how it got and held the lock.
fn held(ran: &Ran, waited: Duration) -> String {
    let times = if ran.extensions == 1 { "time" } else { "times" };
    let lost = match &ran.end {
        RunEnd::Stopped(Stop::TimedOut { .. }) => false,
        end => matches!(end, RunEnd::Stopped(_) | RunEnd::Refused(_)),
    };
    let end = if lost {
        "lost it before the command ended"
    } else {
        "kept it to the end"
    };
    format!(
        "lock {}: waited {} for it, extended it {} {times}, {end}",
        ran.key,
        rounded(waited),
        ran.extensions
    )
}

/// The message of a failed run.
pub(super) fn failure(failed: &Failed<'_>) -> String {
    match failed {
        Failed::Lock { error, tried } => words::failure(error, *tried),
        Failed::Expired { key, validity } => format!(
            "lock {key} expired while its token was being written (it was valid for {}); \
             the lock was released: the token printed is no lock",
            human(*validity)
        ),
        Failed::KeeperStopped { pid, waited } => words::keeper_stopped(*pid, *waited),
        Failed::Said(message) => message.clone(),
    }
}

/// "acquired NAME on n of N servers …; valid for V", with the servers and
/// the number of attempts when `detail` is asked for.
fn acquired(lease: &Lease, servers: usize, detail: bool) -> String {
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
fn command_line(argv: &[OsString]) -> String {
    argv.iter()
        .map(|word| escape_bytes(word.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why `exec` stopped its command, or did not start it, after "lock NAME ".
fn stop_reason(reason: &Stop) -> String {
    match reason {
        Stop::NotExtended { left, .. } => format!(
            "could not be extended in time; its validity ends in {}; the command was stopped",
            human(*left)
        ),
        Stop::Overdue => {
            "ran out of validity while redlock itself was not running; the command was stopped"
                .into()
        }
        Stop::Lost { error, broken } => format!(
            "was lost ({}{}); the command was stopped",
            words::loss(error),
            broken
                .as_ref()
                .map(|b| format!("; {}", words::broken(b)))
                .unwrap_or_default()
        ),
        Stop::TooLateToStart => "ran out of validity before the command could start \
            (redlock was not running); the command was not started"
            .into(),
        Stop::TimedOut { limit } => format!(
            ": the command ran past --timeout {}; it was stopped",
            human(*limit)
        ),
    }
}

/// Why the extensions failed, after a stop for want of one: the true cause,
/// unless redlock was not running.
fn extension_failures(reason: &Stop) -> Option<String> {
    match reason {
        Stop::NotExtended {
            last_error: Some(err),
            failing,
            ..
        } => Some(format!(
            "extending it kept failing{}; the last attempt: {}",
            failing
                .map(|f| format!(" ({} in {})", failed_tries(f.tries), rounded(f.lasted)))
                .unwrap_or_default(),
            words::loss(err)
        )),
        Stop::NotExtended {
            last_error: None, ..
        } => Some("no extension was answered in time".into()),
        _ => None,
    }
}

/// What an event says, and how loud.
pub(super) fn event(event: &Event<'_>) -> (Level, String) {
    use Level::{Expected, Verbose, Warning};
    match event {
        Event::Notice(Notice::Unresolved(name)) => (
            Warning,
            format!("{}; it counts as a server that is down", name.describe()),
        ),
        Event::Notice(notice) => (Expected, self::notice(notice)),
        Event::Concern(concern) => super::doctor::concern(concern),
        Event::DerivedName { key, keyed } => (
            Verbose,
            format!(
                "lock name derived from the command: {key} (its program and a {}hash of all \
                 its words: the same command gives this name on every host{})",
                if *keyed { "keyed " } else { "" },
                if *keyed {
                    " with the same name-key"
                } else {
                    ""
                }
            ),
        ),
        Event::Retrying { attempt, error } => (
            Verbose,
            format!(
                "attempt {attempt} failed, retrying: {}",
                words::lock_error(error)
            ),
        ),
        Event::Holding { lease, servers } => (Verbose, acquired(lease, *servers, false)),
        Event::Nested(key) => (
            Verbose,
            format!(
                "{key} is already held by the enclosing redlock exec; running the command under it"
            ),
        ),
        Event::CommandStarted { pid } => (Verbose, format!("the command runs as process {pid}")),
        Event::HoldingForLeftovers {
            key,
            processes,
            terminal,
        } => (Expected, holding_for_leftovers(key, processes, *terminal)),
        Event::StoppingLeftovers {
            signal,
            kill_in,
            terminal,
        } => (Expected, stopping_leftovers(signal, *kill_in, *terminal)),
        Event::KillingLeftovers => (
            Expected,
            "killing the processes the command left (SIGKILL); the lock is released once they \
             are gone"
                .into(),
        ),
        Event::Suspended { key, stop_in } => (
            Expected,
            format!(
                "suspended: lock {key} expires in {} unless you continue",
                rounded(*stop_in)
            ),
        ),
        Event::LeftoverStoppedAgain { pid, signal } => (
            Expected,
            format!(
                "process {pid}, left behind by the command, stopped on the terminal again: \
                 sending it {signal}"
            ),
        ),
        Event::WatchdogGone => (
            Warning,
            "the watchdog process is gone; a frozen redlock could not stop the command in time"
                .into(),
        ),
        Event::ExtendRetrying { error, failing } => (Expected, extending(failing, Some(*error))),
        Event::ExtendRecovered(failing) => (Expected, extending(failing, None)),
        Event::Released(key) => (Verbose, format!("released {key}")),
    }
}

/// How `exec`'s extensions fare after `failing` failed: still failing
/// with `error` (said for the first failure, then at growing intervals),
/// or working again (`None`).
fn extending(failing: &Failing, error: Option<&LockError>) -> String {
    match (error, failing.tries) {
        (Some(error), 1) => format!("extending failed, retrying: {}", words::lock_error(error)),
        (Some(error), tries) => format!(
            "extending still fails after {} ({tries} tries), retrying: {}",
            rounded(failing.lasted),
            words::lock_error(error)
        ),
        (None, tries) => format!(
            "extending works again after {}, {}",
            rounded(failing.lasted),
            failed_tries(tries)
        ),
    }
}

/// "1 failed try", "12 failed tries".
fn failed_tries(tries: u32) -> String {
    match tries {
        1 => "1 failed try".to_owned(),
        n => format!("{n} failed tries"),
    }
}

/// How many leftover processes a message names; the rest are counted.
const LEFTOVERS_NAMED: usize = 5;

/// The command exited and left processes that hold the lock: which, and how
/// to end them.
fn holding_for_leftovers(key: &LockKey, processes: &[(i32, &[u8])], terminal: bool) -> String {
    let mut named: Vec<String> = processes
        .iter()
        .take(LEFTOVERS_NAMED)
        .map(|(pid, command)| format!("{pid} {}", escape_and_cut(command, 80)))
        .collect();
    if processes.len() > LEFTOVERS_NAMED {
        named.push(format!("and {} more", processes.len() - LEFTOVERS_NAMED));
    }
    let how = match terminal {
        true => "Ctrl-C stops them",
        false => "SIGINT or SIGTERM to redlock stops them",
    };
    format!(
        "the command exited; lock {key} is held until these processes it left end: {} ({how})",
        named.join(", ")
    )
}

/// Asked to end, exec stops what the command left.
fn stopping_leftovers(signal: &str, kill_in: Duration, terminal: bool) -> String {
    let again = match terminal {
        true => "; Ctrl-C again kills them now",
        false => "",
    };
    format!(
        "stopping the processes the command left: {signal} now, SIGKILL in {}{again}",
        human(kill_in)
    )
}

/// What the user should hear about how the command was given.
fn notice(notice: &Notice) -> String {
    match notice {
        Notice::PasswordOnCommandLine => "a password given with -s can be read by every user of \
            this host (ps, /proc/PID/cmdline) while redlock runs; put the servers in a file only \
            you can read (--servers-file, ~/.config/redlock/servers) or in REDLOCK_SERVERS"
            .into(),
        Notice::ReadableSecretFile(path) => {
            let path = escape_bytes(path.as_os_str().as_encoded_bytes());
            format!(
                "servers file {path} holds a password and can be read by group or others; \
                 chmod 600 {path}"
            )
        }
        Notice::Unresolved(name) => name.describe(),
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
    if let Some(fence) = inspection.fence() {
        text.push_str(&format!(
            "\n  fence:   {fence} (the last fencing token handed out)"
        ));
    }
    if let Some(broken) = inspection.broken() {
        text.push_str(&format!("\n  {}", words::broken(&broken)));
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
    let name = format!("\"{}\"", escape_bytes(entry.name));
    [
        name,
        words::standing(entry.standing).to_owned(),
        age,
        expires,
        holder,
    ]
}

/// What `list` says on stderr about a server whose locks it could not read.
fn list_server(part: &ServerPart) -> Option<String> {
    match &part.state {
        Ok(None) => None,
        Ok(Some(guarded)) => Some(format!(
            "{} does not count yet: {}",
            part.server,
            words::server_restarting(*guarded)
        )),
        Err(err) => Some(format!(
            "{} failed, its locks are not known: {err}",
            part.server
        )),
    }
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

/// What `release --force` broke, in one line; `None` when it deleted
/// nothing because the key is not a lock (see [`not_a_lock`]), or when no
/// server answered (the no-quorum error says so).
fn forced(forcing: &Forcing) -> Option<String> {
    let before = &forcing.forced.before;
    let (key, total) = (&before.key, before.servers.len());
    let deleted = forcing.deleted_on.len();
    let on = format!("{deleted} of {}", count_servers(total));
    let cleared = waiters(before.waiters())
        .map(|line| format!("; took the {line} out of it"))
        .unwrap_or_default();
    let seen = forcing.occupied.as_ref();
    let seen_held = |before: &str| {
        seen.map(|o| format!(" ({before}{})", words::held_by(&o.held_by)))
            .unwrap_or_default()
    };
    let text = match forcing.did {
        Did::NotALock | Did::NobodyAnswered => return None,
        Did::KeptByAnother => format!(
            "left {key} alone: another token holds it now{} on {} of {}, not the one given \
             (--if-token); nothing deleted",
            seen_held(""),
            forcing.held_by_another.len(),
            count_servers(total)
        ),
        Did::RemovedReaders => format!(
            "broke {key}: {} removed on {} of {}, with their holder records",
            words::readers(forcing.readers_removed()),
            forcing.readers_removed_on.len(),
            count_servers(total)
        ),
        Did::ClearedLine => format!(
            "{key} was free; took the {} out of its line",
            waiters(before.waiters()).unwrap_or_default()
        ),
        Did::AlreadyFree => format!(
            "{key} was already free on the {} of {} that answered; nothing deleted",
            forcing.answered,
            count_servers(total)
        ),
        Did::Broke => format!(
            "broke {key}: held by {}; deleted on {on}",
            seen.map(|o| words::held_by(&o.held_by)).unwrap_or_default()
        ),
        Did::DeletedUnknown => format!(
            "deleted {key} on {on}{}; too few servers answered to tell whether a majority \
             held it",
            seen_held("held by ")
        ),
        Did::DeletedLeftovers => format!(
            "deleted leftovers of {key} on {on}{}; no majority held it",
            seen_held("held by ")
        ),
    };
    let text = match deleted + forcing.readers_removed_on.len() {
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
        failed => format!("{text}; not reached: {failed}", failed = failed.join("; ")),
    })
}

/// Why `release --force` left a key alone: it is of another type than a
/// lock's on some server.
fn not_a_lock(forcing: &Forcing) -> Option<String> {
    let first = forcing.left_alone.first()?;
    let before = &forcing.forced.before;
    let (what, rule) = match first.why {
        NotALock::NoExpiry => (
            "a string without expiry".to_owned(),
            "which always expire; --any-key breaks it anyway",
        ),
        NotALock::TooLong => (
            format!("a string longer than {MAX_TOKEN} bytes"),
            "whose values are tokens; --any-key breaks it anyway",
        ),
        NotALock::NotAToken => (
            "a string that is no redlock token, with no holder record".to_owned(),
            "whose values are redlock tokens; --any-key breaks it anyway, as it must a lock \
             another Redlock client took",
        ),
        NotALock::OtherType => (
            format!("a {}", server_text(first.kind.as_bytes())),
            "which are strings",
        ),
    };
    Some(format!(
        "{} is not a lock: {what} on {} of {}, left alone (release --force deletes only locks, \
         {rule}{})",
        before.key,
        forcing.left_alone.len(),
        count_servers(before.servers.len()),
        match forcing.deleted_on.len() {
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
    fn command_lines_are_escaped() {
        let argv = [OsString::from("echo"), OsString::from("a\nb")];
        assert_eq!(command_line(&argv), "echo a\\nb");
    }
}
