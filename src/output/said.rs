//! What each outcome and event says on stderr, in either format: the
//! words around the format's own part (see [`pieces`]), in order and at
//! their level (`-q` and `-v` choose which are written). Only stdout
//! differs between text and JSON, and only through `format::Format`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::time::Duration;

use super::event::Event;
use super::format::{Level, Piece};
use super::text::server_text;
use super::words::{self, servers as count_servers, waiters};
use crate::config::Notice;
use crate::duration::{exact as human, rounded};
use crate::lock::{
    escape_and_cut, escape_bytes, Lease, Listing, LockError, LockKey, ServerPart, Verdict,
    MAX_TOKEN,
};
use crate::outcome::{Did, Failed, Forcing, NotALock, Outcome, Ran, RunEnd, Stop};
use crate::repeats::Failing;

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
        Outcome::Released { key, released } => {
            vec![said(Verbose, self::released(key, released)), stdout]
        }
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
        Outcome::MarkedDone { .. } | Outcome::Skipped { .. } | Outcome::ClearedDone { .. } => {
            once(outcome, stdout)
        }
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
        Stop::Cancelled { by } => format!(
            "was given up: a newer waiter ({}) asked this run to stop \
             (--cancel-in-progress); the command was stopped: cancelled",
            words::superseder(by, "arrived later")
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
        Event::MarkedDone { key, on, total } => (Verbose, marked_done(key, *on, *total)),
        Event::NotMarkedDone(error) => (Warning, not_marked_done(error)),
        Event::MarkInterrupted { key, signal } => (Warning, mark_interrupted(key, signal)),
    }
}

/// `release`, under `-v`.
fn released(key: &LockKey, released: &crate::lock::Released) -> String {
    format!(
        "released {key} on {} of {}",
        released.released_on.len(),
        count_servers(released.total)
    )
}

/// `done` (under `-v`: where the mark is) and a run once skipped (who did
/// it, when; not under `-q`).
fn once(outcome: &Outcome, stdout: Option<Piece>) -> Vec<Option<Piece>> {
    let said = match outcome {
        Outcome::MarkedDone { key, marked, .. } => Piece::Stderr(
            Level::Verbose,
            marked_done(key, marked.on.len(), marked.total),
        ),
        Outcome::Skipped { key, mark, exit } => Piece::Stderr(
            Level::Expected,
            words::skipped(key, mark, *exit == crate::exit_code::Exit::Success),
        ),
        Outcome::ClearedDone {
            key,
            cleared_on,
            servers,
        } => Piece::Stderr(Level::Expected, cleared(key, *cleared_on, *servers)),
        _ => return vec![stdout],
    };
    vec![Some(said), stdout]
}

/// `release --force --done`: whether there was a mark to clear.
fn cleared(key: &LockKey, on: usize, servers: usize) -> String {
    match on {
        0 => format!("{key} had no done mark; nothing was deleted"),
        on => format!(
            "deleted the done mark of {key} from {on} of {}: the job can run again",
            count_servers(servers)
        ),
    }
}

/// `--once-per`, `--once`: the done mark written, under `-v`.
fn marked_done(key: &LockKey, on: usize, total: usize) -> String {
    format!("marked {key} done on {on} of {}", count_servers(total))
}

/// The done mark of a run that succeeded reached no majority: the run
/// does not count, and another may run in this period.
fn not_marked_done(error: &LockError) -> String {
    format!("{}; {NOT_COUNTED}", words::lock_error(error))
}

/// A signal stopped the tries of a done mark.
fn mark_interrupted(key: &LockKey, signal: &str) -> String {
    format!("{signal} while {key}'s done mark was tried again; {NOT_COUNTED}")
}

/// What a run whose done mark reached no majority is.
const NOT_COUNTED: &str = "this run does not count, and the next may run it again";

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
    let failed: Vec<String> = forcing
        .not_reached
        .iter()
        .map(|(server, err)| format!("{server}: {err}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_escaped() {
        let argv = [OsString::from("echo"), OsString::from("a\nb")];
        assert_eq!(command_line(&argv), "echo a\\nb");
    }
}
