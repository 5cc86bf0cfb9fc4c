//! Every sentence about a lock, written once from typed data: busy, not
//! held, no quorum, restarting, refused and too slow, who holds a lock and
//! until when, and counts of servers. Messages, the progress line and the
//! JSON `message` all take their words from here; each sentence has a form
//! for an error ("KEY is …") and one for a wait ("waiting for KEY …").

use std::time::Duration;

use crate::duration::{exact, rounded};
use crate::lock::{
    escape_and_cut, Broken, DoneMark, Failures, GuardCause, Guarded, HeldBy, Holder, LockError,
    LockKey, Recorded, Said, Semaphore, ServerError, ServerSpec, SharedHolder, Standing,
    Superseder, TokenOp, TokenRound, Tried, MAX_FENCE,
};

/// How many characters of each recorded field a one-line summary shows.
const SHOWN: usize = 120;

/// Which sentence a situation is said in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The message of a failure: "KEY is held by …".
    Failure,
    /// What a wait shows after "waiting for KEY": ", held by …".
    Waiting,
}

/// `exec` could not run `command` (escaped); when the lock's NAME (`name`,
/// escaped) names a command itself, the command line that was likely
/// meant: `exec ./deploy.sh staging` takes ./deploy.sh as the NAME, and so
/// does `exec ./report.sh -- --full`, where clap's tip for an option after
/// NAME leads.
pub fn cannot_run(command: &str, error: &std::io::Error, name: Option<&str>) -> String {
    let text = format!("cannot run {command}: {error}");
    match name {
        Some(name) => format!(
            "{text}; {name}, taken as the lock's NAME, is a command itself: did you mean \
             `redlock exec -- {name} {command}` (the lock is then named after the command), or \
             `redlock exec NAME {name} {command}`?"
        ),
        None => text,
    }
}

/// "1 server", "3 servers".
pub fn servers(count: usize) -> String {
    if count == 1 {
        "1 server".to_owned()
    } else {
        format!("{count} servers")
    }
}

/// "N waiters in line", or `None` for none.
pub fn waiters(count: u64) -> Option<String> {
    match count {
        0 => None,
        1 => Some("1 waiter in line".into()),
        n => Some(format!("{n} waiters in line")),
    }
}

/// A recorded text fit for one line of a terminal.
fn shown(text: &str) -> String {
    escape_and_cut(text.as_bytes(), SHOWN)
}

/// `user@host (pid N, command pid M, job URL, "message")`, and
/// `cancellable` (with its serial) for a holder a newer waiter may stop.
pub fn holder(holder: &Holder) -> String {
    let mut details = vec![format!("pid {}", holder.pid)];
    details.extend(holder.command_pid.map(|pid| format!("command pid {pid}")));
    if holder.cancellable {
        details.push(match holder.serial {
            Some(serial) => format!("cancellable, serial {serial}"),
            None => "cancellable".to_owned(),
        });
    }
    details.extend(
        holder
            .job
            .as_deref()
            .map(|job| format!("job {}", shown(job))),
    );
    details.extend(
        holder
            .message
            .as_deref()
            .map(|message| format!("\"{}\"", shown(message))),
    );
    format!(
        "{}@{} ({})",
        shown(&holder.user),
        shown(&holder.host),
        details.join(", ")
    )
}

/// "N readers" (shared holders), for one server's line in status.
pub fn readers(count: u64) -> String {
    match count {
        1 => "1 reader (shared)".to_owned(),
        n => format!("{n} readers (shared)"),
    }
}

/// Who holds a lock that readers hold: "2 shared holders (--shared)".
pub fn readers_holding(count: u64) -> String {
    match count {
        1 => "1 shared holder (--shared)".to_owned(),
        n => format!("{n} shared holders (--shared)"),
    }
}

/// Status's first line when readers hold a lock on a majority.
pub fn shared(key: &LockKey, count: u64, total: usize) -> String {
    format!(
        "{key} is held shared by {}: at least {count} on a majority of {}; a --shared \
         acquire may join them, an exclusive one must wait",
        match count {
            1 => "1 reader".to_owned(),
            n => format!("{n} readers"),
        },
        servers(total)
    )
}

/// A redlock holder with how long it has held, from its record:
/// `user@host (pid N, …) for 2m`, or, when the record starts after the
/// server's clock, `user@host (pid N, …) since a start in the future
/// (clock skew?)`.
pub fn recorded(recorded: &Recorded) -> String {
    match (recorded.held_for, recorded.ahead) {
        (Some(age), _) => format!("{} for {}", holder(&recorded.holder), rounded(age)),
        (None, Some(_)) => format!("{} since a start {FUTURE}", holder(&recorded.holder)),
        (None, None) => holder(&recorded.holder),
    }
}

/// The age of a holder record whose start is after the server's clock
/// (it went back, or another hand wrote the record): unknown, not 0.
pub const FUTURE: &str = "in the future (clock skew?)";

/// How many readers of a lock `list` names before "and N more".
const READERS_NAMED: usize = 3;

/// `list`'s holder for a lock that readers hold: how many, then who the
/// first of them are by their records (`readers`, those on a majority),
/// a reader without a record by its token.
pub fn readers_named(count: u64, readers: &[SharedHolder]) -> String {
    let named: Vec<String> = readers
        .iter()
        .take(READERS_NAMED)
        .map(|reader| match &reader.recorded {
            Some(record) => recorded(record),
            None => format!("token {}", escape_and_cut(&reader.token, SHOWN)),
        })
        .collect();
    let more = count.saturating_sub(named.len() as u64);
    let mut text = self::readers(count);
    if !named.is_empty() {
        text.push_str(": ");
        text.push_str(&named.join("; "));
    }
    if more > 0 && !named.is_empty() {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

/// Who holds it, for "… is held by {}": one line, escaped.
pub fn held_by(held_by: &HeldBy) -> String {
    match held_by {
        HeldBy::Redlock(record) => recorded(record),
        HeldBy::OtherClient { token } => {
            format!("another client (token {})", escape_and_cut(token, SHOWN))
        }
        HeldBy::NonRedlock { kind } => format!(
            "a non-redlock value (a {})",
            escape_and_cut(kind.as_bytes(), SHOWN)
        ),
        HeldBy::Readers { count } => readers_holding(*count),
    }
}

/// "held by WHO; expires in D": after "KEY is " or "waiting for KEY, ".
/// A lock `exec` keeps alive has no countdown worth showing: its expiry
/// moves on at every renewal; one whose holder's process or keeper is gone
/// does.
fn held_clause(who: &HeldBy, expires_in: Option<Duration>) -> String {
    let expiry = match expires_in {
        Some(left) => format!("expires in {}", rounded(left)),
        None => "it never expires (no TTL)".to_owned(),
    };
    let expiry = match who {
        HeldBy::Redlock(recorded) if recorded.pid_gone => format!(
            "holder pid {} is gone; the lock {}",
            recorded.holder.pid,
            expiry.replace("it never", "never")
        ),
        HeldBy::Redlock(recorded) if recorded.keeper_gone => format!(
            "its keeper (pid {}) is gone; the lock {}",
            recorded.holder.keeper_pid.unwrap_or_default(),
            expiry.replace("it never", "never")
        ),
        HeldBy::Redlock(recorded) if recorded.renewer_stopped => {
            renewer_stopped(&recorded.holder, &expiry)
        }
        HeldBy::Redlock(recorded) => kept_alive(&recorded.holder).unwrap_or(expiry),
        _ => expiry,
    };
    format!("held by {}; {expiry}", held_by(who))
}

/// The process that renews a lock is stopped on this host (Ctrl-Z,
/// SIGSTOP): "exec (pid N) is stopped: nothing renews the lock, which
/// expires in 9s unless it is continued (kill -CONT N)".
fn renewer_stopped(holder: &Holder, expiry: &str) -> String {
    let (who, pid) = match holder.keeper_pid {
        Some(keeper) => (format!("its keeper (pid {keeper})"), keeper),
        None => (format!("exec (pid {})", holder.pid), holder.pid),
    };
    let expiry = expiry.replace("it never", "never");
    format!(
        "{who} is stopped: nothing renews the lock, which {expiry} unless it is continued \
         (kill -CONT {pid})"
    )
}

/// "kept alive by exec (renewed every 10s)" when `exec` holds the lock
/// (older records say that it does, not how often), "kept alive while pid
/// N lives (renewed every 10s)" when an `acquire --while` keeper does.
pub fn kept_alive(holder: &Holder) -> Option<String> {
    let by = match holder.keeper_pid {
        Some(_) => format!("kept alive while pid {} lives", holder.pid),
        None => "kept alive by exec".to_owned(),
    };
    match (holder.renew_every_ms, &holder.command) {
        (Some(every), _) => Some(format!(
            "{by} (renewed every {})",
            rounded(Duration::from_millis(every))
        )),
        (None, Some(_)) => Some(by),
        (None, None) => None,
    }
}

/// "KEY is held by WHO; expires in D": status's first line, and the busy
/// message.
pub fn held(key: &LockKey, who: &HeldBy, expires_in: Option<Duration>) -> String {
    format!("{key} is {}", held_clause(who, expires_in))
}

/// The message of a failed lock operation, with advice in terms of this
/// command line where there is some.
pub fn lock_error(error: &LockError) -> String {
    match error {
        LockError::Busy { failures, .. } => {
            format!("{}{}", busy(error, Form::Failure), list(failures))
        }
        LockError::NoQuorum {
            key,
            total,
            quorum,
            token: Some(round),
            ..
        } => format!(
            "no quorum for lock {key}: {}",
            token_round(round, *total, *quorum)
        ),
        LockError::NoQuorum {
            key,
            failed,
            total,
            quorum,
            failures,
            token: None,
        } => format!(
            "no quorum for lock {key}: {}{}",
            no_quorum(*failed, *total, *quorum, Form::Failure),
            list(failures)
        ),
        LockError::Refused { key, .. } => format!("lock {key}: {}", refused(error)),
        LockError::Done { key, mark, .. } => skipped(key, mark, false),
        LockError::TooSlow { .. } => format!(
            "{}; use a longer --ttl or faster servers",
            too_slow(error, Form::Failure)
        ),
        LockError::Restarting { failures, .. } => format!(
            "{}{}; {}",
            restarting(error, Form::Failure),
            list(failures),
            counts_by_itself(error)
        ),
        LockError::NoFenceLeft { key, on } => format!(
            "no fencing token is left for lock {key}: the last one handed out is {MAX_FENCE} \
             (2^63-2, the highest redlock hands out) on {}; use another name, or delete \
             the counter on every server once nobody uses the name",
            on.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        LockError::Superseded { key, by } => superseded(key, by.as_deref()),
        LockError::NotHeld {
            key,
            total,
            quorum,
            round,
            ..
        } => format!(
            "lock {key} is not held by this token: {}",
            token_round(round, *total, *quorum)
        ),
    }
}

/// "superseded by a newer waiter (serial 12, pid 345 on ci-7): cancelled":
/// a `--supersede` waiter that a newer one replaced, and who that is.
fn superseded(key: &LockKey, by: Option<&Superseder>) -> String {
    let who = by.map_or_else(String::new, |by| {
        format!(" ({})", superseder(by, "arrived later"))
    });
    format!("lock {key}: superseded by a newer waiter{who}: cancelled, left the line")
}

/// "serial 12, pid 345 on ci-7": a superseding waiter; `arrival` stands
/// for a waiter ordered by when it arrived.
pub fn superseder(by: &Superseder, arrival: &str) -> String {
    let order = match by.by_serial {
        true => format!("serial {}", by.order),
        false => arrival.to_owned(),
    };
    format!(
        "{order}, pid {} on {}",
        by.pid,
        escape_and_cut(by.host.as_bytes(), SHOWN)
    )
}

/// "extended on 1 of 3 servers, and a majority is 2: SERVER no longer
/// holds the token (…); SERVER unreachable (…)": how a round on a token
/// counted, and why each server that did not confirm it did not.
fn token_round(round: &TokenRound, total: usize, quorum: usize) -> String {
    let done = match round.op {
        TokenOp::Extend => "extended",
        TokenOp::Release => "released",
        TokenOp::Fence => "fenced",
        TokenOp::MarkDone => "marked done",
    };
    format!(
        "{done} on {} of {}, and a majority is {quorum}{}",
        round.confirmed(),
        servers(total),
        token_causes(round)
    )
}

/// ": SERVER no longer holds the token (…); SERVER unreachable (…)" for
/// the servers of a round on a token that did not confirm it (not those
/// that had not answered when it was decided: they had no part in it).
fn token_causes(round: &TokenRound) -> String {
    let causes: Vec<String> = round
        .said
        .iter()
        .filter_map(|(server, said)| {
            let cause = match said {
                Said::Holds | Said::Failed(ServerError::NoAnswerYet) => return None,
                Said::Gone => "no longer holds the token (its key is gone: expired, released, \
                     or the server restarted or was flushed?)"
                    .to_owned(),
                Said::Taken => "holds another token (another holder)".to_owned(),
                Said::Failed(err) => server_failure(err),
            };
            Some(format!("{server} {cause}"))
        })
        .collect();
    match causes.is_empty() {
        true => String::new(),
        false => format!(": {}", causes.join("; ")),
    }
}

/// Why one server gave no answer, after its name: "unreachable (…)",
/// "refused us (…)", "did not answer (…)".
pub fn server_failure(err: &ServerError) -> String {
    match err {
        ServerError::Unreachable(why) => format!("unreachable ({why})"),
        ServerError::Refused(why) => format!("refused us ({why})"),
        ServerError::Timeout(_) => format!("did not answer ({err})"),
        ServerError::NoAnswerYet => err.to_string(),
        ServerError::Failed(why) => format!("failed ({why})"),
        other => format!("failed ({other})"),
    }
}

/// The message of a failed lock operation after `tried`: with "gave up
/// after 20m: " in front when a wait (`-w`) ran out, so that a log tells a
/// long wait from one attempt.
pub fn failure(error: &LockError, tried: Tried) -> String {
    match tried.gave_up_after {
        Some(limit) => format!("gave up after {}: {}", exact(limit), lock_error(error)),
        None => lock_error(error),
    }
}

/// What a failed attempt met, after "waiting for KEY".
pub fn waiting(error: &LockError) -> String {
    match error {
        LockError::Busy { .. } => busy(error, Form::Waiting),
        LockError::NoQuorum {
            failed,
            total,
            quorum,
            ..
        } => {
            format!(": {}", no_quorum(*failed, *total, *quorum, Form::Waiting))
        }
        LockError::Restarting { .. } => restarting(error, Form::Waiting),
        LockError::TooSlow { .. } => too_slow(error, Form::Waiting),
        other => format!(": {}", lock_error(other)),
    }
}

/// "N of M servers cannot be used as configured, …": why no majority is
/// possible.
fn refused(error: &LockError) -> String {
    let LockError::Refused {
        refused,
        total,
        failures,
        ..
    } = error
    else {
        return String::new();
    };
    format!(
        "{refused} of {} cannot be used as configured, so no majority is possible{}",
        servers(*total),
        list(failures)
    )
}

/// Why `list` cannot tell which locks match its pattern (`shown`, the
/// prefix and the pattern as given): too few servers answered or count.
pub fn unlisted(shown: &str, error: &LockError) -> String {
    let why = match error {
        LockError::NoQuorum {
            failed,
            total,
            quorum,
            failures,
            ..
        } => format!(
            "{}{}",
            no_quorum(*failed, *total, *quorum, Form::Failure),
            list(failures)
        ),
        LockError::Refused { .. } => refused(error),
        LockError::Restarting { failures, .. } => format!(
            "{}{}; {}",
            restarting_why(error),
            list(failures),
            counts_by_itself(error)
        ),
        other => lock_error(other),
    };
    format!("no quorum to list the locks matching \"{shown}\": {why}")
}

/// The lock is taken, or others are first in line for it.
fn busy(error: &LockError, form: Form) -> String {
    let LockError::Busy {
        key,
        held_elsewhere,
        total,
        in_line,
        waiters: count,
        held_by,
        expires_in,
        every_slot,
        ..
    } = error
    else {
        return String::new();
    };
    if let (Some(semaphore), Form::Failure) = (every_slot, form) {
        let slots = match semaphore.limit {
            1 => format!("the only slot of {} is busy", semaphore.key),
            k => format!("all {k} slots of {} are busy", semaphore.key),
        };
        return format!("{slots}; {}", busy(&without_semaphore(error), form));
    }
    let total = servers(*total);
    match (held_by, form) {
        (Some(who), Form::Failure) => held(key, who, *expires_in),
        (Some(who), Form::Waiting) => format!(", {}", held_clause(who, *expires_in)),
        (None, _) if in_line > held_elsewhere => {
            let line = match count {
                1 => "1 waiter is".to_string(),
                n => format!("{n} waiters are"),
            };
            match form {
                Form::Failure => {
                    format!("{key} is free, but {line} in line for it (on at least {in_line} of {total})")
                }
                Form::Waiting => format!(
                    ": it is free, but earlier waiters in line go first ({count} in line on at \
                     least {in_line} of {total})"
                ),
            }
        }
        (None, Form::Failure) => format!(
            "{key} is busy: at least {held_elsewhere} of {total} hold it for others, no one \
             holder on a majority (leftovers, which keep it busy until they expire)"
        ),
        (None, Form::Waiting) => {
            format!(", held by another holder on at least {held_elsewhere} of {total}")
        }
    }
}

/// `error` without its semaphore: what the last busy slot says.
fn without_semaphore(error: &LockError) -> LockError {
    let mut error = error.clone();
    if let LockError::Busy { every_slot, .. } = &mut error {
        *every_slot = None;
    }
    error
}

/// Why too few servers answered, in words that fit one server as well as
/// five.
fn no_quorum(failed: usize, total: usize, quorum: usize, form: Form) -> String {
    match form {
        Form::Failure if total == 1 => "its only server failed".to_owned(),
        Form::Failure => format!(
            "{failed} of {} failed, and a majority is {quorum}",
            servers(total)
        ),
        Form::Waiting => format!(
            "{failed} of {} unreachable, and a majority is {quorum}",
            servers(total)
        ),
    }
}

/// Servers that may have lost locks recently do not count.
fn restarting(error: &LockError, form: Form) -> String {
    let LockError::Restarting {
        key,
        restarting,
        total,
        again_in,
        ..
    } = error
    else {
        return String::new();
    };
    match form {
        Form::Failure => format!("lock {key}: {}", restarting_why(error)),
        Form::Waiting if first_sight_only(error) => format!(
            ": first sight of {} (or lost data; restart guard): {} in {}, once per server and \
             prefix",
            some_of(*restarting, *total),
            they_count(*restarting),
            rounded(*again_in)
        ),
        Form::Waiting => format!(
            ": {restarting} of {} may have lost locks recently (restart guard), counted again in {}",
            servers(*total),
            rounded(*again_in)
        ),
    }
}

/// Whether every server the guard keeps out is one it has no marker on:
/// first sight (which looks the same as a server that lost its data).
fn first_sight_only(error: &LockError) -> bool {
    matches!(error, LockError::Restarting { causes, .. }
        if !causes.is_empty() && causes.iter().all(|(_, c)| *c == GuardCause::Unseen))
}

/// "3 servers" when that is all of them, else "2 of 3 servers".
fn some_of(count: usize, total: usize) -> String {
    match count == total {
        true => servers(total),
        false => format!("{count} of {}", servers(total)),
    }
}

/// "it counts" or "they count".
fn they_count(count: usize) -> &'static str {
    match count {
        1 => "it counts",
        _ => "they count",
    }
}

/// What follows a restart guard's message: that waiting ends it.
fn counts_by_itself(error: &LockError) -> &'static str {
    match first_sight_only(error) {
        true => "-w waits for it",
        false => "it counts again by itself (-w waits for it)",
    }
}

/// The guard's message when it keeps out only servers it sees for the
/// first time: what a new user meets, named as it is, with the time left
/// and that it happens once. `restarting` of `total` servers are kept out
/// by a guard of `guard`, the first counted again in `again_in`.
fn first_sight(
    (restarting, total): (usize, usize),
    (guard, again_in): (Duration, Duration),
    causes: &[(ServerSpec, GuardCause)],
) -> String {
    let named: Vec<String> = causes.iter().map(|(s, _)| s.to_string()).collect();
    let they = match restarting {
        1 => "it lost its",
        _ => "they lost their",
    };
    format!(
        "first sight of {} ({}), or {they} data (a restart without persistence, a flush: \
         the same to redlock): {} in {}, when the restart guard ({}) has passed; first sight \
         happens once per server and prefix",
        some_of(restarting, total),
        named.join(", "),
        they_count(restarting),
        exact(again_in),
        exact(guard)
    )
}

/// "N of M servers may have lost locks less than G ago (…)".
fn restarting_why(error: &LockError) -> String {
    let LockError::Restarting {
        restarting,
        total,
        guard,
        again_in,
        causes,
        ..
    } = error
    else {
        return String::new();
    };
    if first_sight_only(error) {
        return first_sight((*restarting, *total), (*guard, *again_in), causes);
    }
    // Grouped by cause, each naming its servers: "a, b: why; c: why".
    let mut by_cause: Vec<(GuardCause, Vec<String>)> = Vec::new();
    for (server, cause) in causes {
        match by_cause.iter_mut().find(|(c, _)| c == cause) {
            Some((_, servers)) => servers.push(server.to_string()),
            None => by_cause.push((*cause, vec![server.to_string()])),
        }
    }
    by_cause.sort_by_key(|(cause, _)| *cause);
    let causes: Vec<String> = by_cause
        .iter()
        .map(|(cause, servers)| format!("{}: {}", servers.join(", "), guard_cause(*cause)))
        .collect();
    format!(
        "{restarting} of {} may have lost locks less than {} ago ({}; restart guard, counted \
         again in {})",
        servers(*total),
        exact(*guard),
        causes.join("; "),
        exact(*again_in)
    )
}

/// "broken by root@ops1 with release --force 12s ago".
pub fn broken(broken: &Broken) -> String {
    let ago = broken
        .ago
        .map(|ago| format!(" {} ago", rounded(ago)))
        .unwrap_or_default();
    format!(
        "broken by {} with release --force{ago}",
        escape_and_cut(&broken.by, SHOWN)
    )
}

/// `release` found the keeper of `acquire --while` stopped.
pub fn keeper_stopped(pid: i32, waited: Duration) -> String {
    format!(
        "the lock was not released: its keeper (acquire --while, process {pid}) has been \
         stopped for {} and cannot stand down; it releases the lock once continued \
         (kill -CONT {pid}); until then nothing extends the lock, and the script gets \
         --while-signal before it runs out",
        rounded(waited)
    )
}

/// One server that the restart guard keeps out (it may have lost locks
/// recently), for `status` and `list`: what happened to it in a word, and
/// when it counts: "first sight, or data lost: counts in 28s; restart
/// guard", "evicted keys: counts again in 3s; restart guard".
pub fn server_restarting(guarded: Guarded) -> String {
    let again = match guarded.cause {
        GuardCause::Unseen => "",
        _ => " again",
    };
    format!(
        "{}: counts{again} in {}; restart guard",
        guard_word(guarded.cause),
        exact(guarded.left)
    )
}

/// What the restart guard saw, in a few words: a server's line in `status`
/// and `list` (the whole story is [`guard_cause`]).
pub fn guard_word(cause: GuardCause) -> &'static str {
    match cause {
        GuardCause::Unseen => "first sight, or data lost",
        GuardCause::Unreadable => "marker unreadable",
        GuardCause::AnotherDb => "another db's data (SWAPDB)",
        GuardCause::AnotherProcess => "restarted or replaced",
        GuardCause::Replication => "was a replica",
        GuardCause::Eviction => "evicted keys",
        GuardCause::StatsReset => "statistics reset",
        GuardCause::Clock => "clock went back",
    }
}

/// Status's first line when too few servers count to tell who holds `key`:
/// how many answered, and, when the restart guard is why, that they did,
/// for how long yet and why (`guarded`: each server it keeps out).
pub fn status_unknown(
    key: &LockKey,
    (total, quorum): (usize, usize),
    answered: usize,
    guarded: &[Guarded],
) -> String {
    let heard = match (answered, total) {
        (1, 1) => "its only server answered".to_owned(),
        (a, t) if a == t => format!("all {} answered", servers(t)),
        (a, t) => format!("{a} of {} answered", servers(t)),
    };
    let Some(soonest) = guarded.iter().map(|g| g.left).min() else {
        return format!(
            "{key} is unknown: too few of {} answered (quorum {quorum})",
            servers(total)
        );
    };
    let n = guarded.len();
    let them = match (n, answered) {
        (1, 1) => "it is".to_owned(),
        (n, a) if n == a => "they are".to_owned(),
        (1, _) => "1 of them is".to_owned(),
        (n, _) => format!("{n} of them are"),
    };
    let unseen = guarded.iter().all(|g| g.cause == GuardCause::Unseen);
    let why = match unseen {
        true => format!(
            "{them} seen for the first time (or lost {} data): the restart guard counts {} in \
             {}, once per server and prefix",
            if n == 1 { "its" } else { "their" },
            if n == 1 { "it" } else { "them" },
            exact(soonest)
        ),
        false => {
            let mut words: Vec<&str> = guarded.iter().map(|g| guard_word(g.cause)).collect();
            words.sort_unstable();
            words.dedup();
            format!(
                "{them} inside the restart guard ({}): the first counts again in {}",
                words.join("; "),
                exact(soonest)
            )
        }
    };
    format!("{key} is unknown: {heard}, but {why} (quorum {quorum})")
}

/// Why the restart guard keeps a server out: what its marker saw change in
/// the data behind the address (guard.lua).
pub fn guard_cause(cause: GuardCause) -> &'static str {
    match cause {
        GuardCause::Unseen => {
            "first sight, or its data was lost: a restart without persistence or a flush"
        }
        GuardCause::Unreadable => "its restart guard marker could not be read",
        GuardCause::AnotherDb => "it now holds another db's data: SWAPDB",
        GuardCause::AnotherProcess => {
            "another server process holds its data: a restart, a failover, or another \
             server behind the address"
        }
        GuardCause::Replication => {
            "it was a replica in between: REPLICAOF or a failover replaced its data"
        }
        GuardCause::Eviction => "it evicted keys",
        GuardCause::StatsReset => {
            "its statistics were reset (CONFIG RESETSTAT), so evictions cannot be counted"
        }
        GuardCause::Clock => "its clock went back",
    }
}

/// A majority agreed, but too late to leave any validity.
fn too_slow(error: &LockError, form: Form) -> String {
    let LockError::TooSlow { key, elapsed, ttl } = error else {
        return String::new();
    };
    match form {
        Form::Failure => format!(
            "lock {key}: a majority agreed only after {}, which leaves none of the {} TTL valid",
            exact(*elapsed),
            exact(*ttl)
        ),
        Form::Waiting => format!(
            ": a majority answered only after {}, too late for the TTL",
            rounded(*elapsed)
        ),
    }
}

/// Why a held lock was lost, after "lock KEY was lost (…)": without the
/// name again.
pub fn loss(error: &LockError) -> String {
    match error {
        LockError::NotHeld {
            total,
            quorum,
            round,
            ..
        } => format!(
            "{} of {} still hold its token, {quorum} needed{}",
            round.confirmed(),
            servers(*total),
            token_causes(round)
        ),
        other => lock_error(other),
    }
}

/// " (SERVER unreachable (why); SERVER refused us (why))", or nothing when
/// no server failed.
/// The servers that failed, each with why, in parentheses. One that had
/// not answered when the round was decided did not fail, and had no part in
/// the outcome: it is left out (JSON's `causes` keeps it, as `no_answer`).
pub fn list(failures: &Failures) -> String {
    let each: Vec<String> = failures
        .0
        .iter()
        .filter(|(_, err)| !matches!(err, ServerError::NoAnswerYet))
        .map(|(server, err)| format!("{server} {}", server_failure(err)))
        .collect();
    if each.is_empty() {
        return String::new();
    }
    format!(" ({})", each.join("; "))
}

/// The state column of `list` and the `state` of its JSON.
pub fn standing(standing: Standing) -> &'static str {
    match standing {
        Standing::Held => "held",
        Standing::Shared => "shared",
        Standing::Minority => "minority",
        Standing::Unknown => "unknown",
        Standing::Free => "free",
    }
}

/// The first line of `status --limit K`: how many of the semaphore's
/// slots are held and how many free (the rest are unknown).
pub fn slots(semaphore: &Semaphore, held: usize, free: usize) -> String {
    let limit = semaphore.limit as usize;
    let unknown = match limit - held - free {
        0 => String::new(),
        n => format!(", {n} unknown"),
    };
    let plural = if limit == 1 { "" } else { "s" };
    format!(
        "{} is a semaphore of {limit} slot{plural}: {held} held, {free} free{unknown}",
        semaphore.key
    )
}

/// `--once-per`, `--once`: who did the run this caller skips, when and
/// how it ended.
/// What a done mark says: which run, who did it, when, and its status.
pub fn done_mark(mark: &DoneMark) -> String {
    let what = match mark.id.strip_prefix("key:") {
        Some(once) => format!("for --once {}", escape_and_cut(once.as_bytes(), 200)),
        None => match crate::lock::OnceRun::from_id(&mark.id, std::time::Duration::ZERO) {
            Some(run) => format!(
                "the period ending {}",
                run.ends_at_ms.map(utc).unwrap_or_default()
            ),
            None => escape_and_cut(mark.id.as_bytes(), 200),
        },
    };
    format!("{what}{}", done_by(mark))
}

/// Who did a run once, when, and how it ended.
fn done_by(mark: &DoneMark) -> String {
    format!("{}, exit status {}", who_when(mark), mark.status)
}

/// Who did a run once, and when.
fn who_when(mark: &DoneMark) -> String {
    let who = match &mark.holder {
        Some(holder) => format!(
            " by {} (pid {})",
            escape_and_cut(holder.host.as_bytes(), 255),
            holder.pid
        ),
        None => String::new(),
    };
    let when = mark
        .finished_ms
        .map(|ms| format!(" at {}", utc(ms)))
        .unwrap_or_default();
    format!("{who}{when}")
}

/// `exec` (`ran`: its command is not run) or `acquire` (nothing taken)
/// skips a run once done already.
pub fn skipped(key: &LockKey, mark: &DoneMark, ran: bool) -> String {
    let what = match mark.id.strip_prefix("key:") {
        Some(once) => format!("for --once {}", escape_and_cut(once.as_bytes(), 200)),
        None => "this period".into(),
    };
    format!(
        "skipped: {key} was done {what}{} (exit status {}); {}",
        who_when(mark),
        mark.status,
        if ran { "not run" } else { "nothing taken" }
    )
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{Recorded, ServerSpec};

    #[test]
    fn a_holder_reads_on_one_line() {
        let holder = Holder {
            host: "ci-7".into(),
            pid: 4242,
            user: "deploy".into(),
            message: Some("roll\nout \u{1b}[2J".into()),
            job: Some("https://ci/1".into()),
            ..Holder::default()
        };
        let who = HeldBy::Redlock(Box::new(Recorded {
            holder,
            held_for: Some(Duration::from_millis(252_345)),
            ahead: None,
            pid_gone: false,
            keeper_gone: false,
            renewer_stopped: false,
        }));
        assert_eq!(
            held_by(&who),
            r#"deploy@ci-7 (pid 4242, job https://ci/1, "roll\nout \u{1b}[2J") for 4m 12s"#
        );
    }

    #[test]
    fn a_holder_from_the_future_has_no_age() {
        let recorded = Recorded {
            holder: Holder {
                host: "ci-7".into(),
                pid: 4242,
                user: "deploy".into(),
                ..Holder::default()
            },
            held_for: None,
            ahead: Some(Duration::from_secs(3600)),
            pid_gone: false,
            keeper_gone: false,
            renewer_stopped: false,
        };
        assert_eq!(
            super::recorded(&recorded),
            "deploy@ci-7 (pid 4242) since a start in the future (clock skew?)"
        );
    }

    fn busy_error(held_elsewhere: usize, in_line: usize, waiters: u64) -> LockError {
        LockError::Busy {
            key: LockKey::new(b"tp".to_vec()),
            held_elsewhere,
            total: 5,
            in_line,
            waiters,
            held_by: None,
            expires_in: None,
            held_on: Vec::new(),
            failures: Failures::default(),
            every_slot: None,
        }
    }

    #[test]
    fn a_lock_kept_by_its_line_is_free_in_both_forms() {
        let in_line = busy_error(0, 3, 2);
        assert_eq!(
            lock_error(&in_line),
            "\"tp\" is free, but 2 waiters are in line for it (on at least 3 of 5 servers)"
        );
        assert_eq!(
            waiting(&in_line),
            ": it is free, but earlier waiters in line go first (2 in line on at least 3 of 5 \
             servers)"
        );
        let leftovers = busy_error(3, 0, 0);
        assert!(lock_error(&leftovers).starts_with("\"tp\" is busy: at least 3 of 5 servers"));
        assert_eq!(
            waiting(&leftovers),
            ", held by another holder on at least 3 of 5 servers"
        );
    }

    #[test]
    fn failures_say_what_to_do_where_something_can_be_done() {
        let key = LockKey::new(b"k".to_vec());
        let one = LockError::NoQuorum {
            key: key.clone(),
            failed: 1,
            total: 1,
            quorum: 1,
            failures: Failures::default(),
            token: None,
        };
        assert_eq!(
            lock_error(&one),
            "no quorum for lock \"k\": its only server failed"
        );
        assert_eq!(
            waiting(&one),
            ": 1 of 1 server unreachable, and a majority is 1"
        );
        let too_slow = LockError::TooSlow {
            key: key.clone(),
            elapsed: Duration::from_secs(2),
            ttl: Duration::from_secs(1),
        };
        assert!(lock_error(&too_slow).ends_with("; use a longer --ttl or faster servers"));
        let server = |port: u16| ServerSpec::parse(&format!("127.0.0.1:{port}")).unwrap();
        let restarting = LockError::Restarting {
            key: key.clone(),
            restarting: 2,
            total: 3,
            guard: Duration::from_secs(30),
            again_in: Duration::from_millis(1500),
            causes: vec![
                (server(7001), GuardCause::Eviction),
                (server(7000), GuardCause::AnotherProcess),
            ],
            failures: Failures::default(),
        };
        assert_eq!(
            lock_error(&restarting),
            "lock \"k\": 2 of 3 servers may have lost locks less than 30s ago \
             (redis://127.0.0.1:7000: another server process holds its data: a restart, a \
             failover, or another server behind the address; redis://127.0.0.1:7001: it evicted \
             keys; restart guard, counted again in 1s 500ms); it counts again by itself (-w waits \
             for it)"
        );
        let round = TokenRound {
            op: TokenOp::Extend,
            said: vec![
                (server(7000), Said::Holds),
                (server(7001), Said::Gone),
                (server(7002), Said::Taken),
            ],
        };
        let lost = LockError::NotHeld {
            key,
            held: 1,
            total: 3,
            quorum: 2,
            failures: Failures::default(),
            round: Box::new(round),
        };
        let causes = "redis://127.0.0.1:7001 no longer holds the token (its key is gone: \
                      expired, released, or the server restarted or was flushed?); \
                      redis://127.0.0.1:7002 holds another \
                      token (another holder)";
        assert_eq!(
            lock_error(&lost),
            format!(
                "lock \"k\" is not held by this token: extended on 1 of 3 servers, and a \
                 majority is 2: {causes}"
            )
        );
        assert_eq!(
            loss(&lost),
            format!("1 of 3 servers still hold its token, 2 needed: {causes}")
        );
    }

    #[test]
    fn servers_never_seen_are_named_first_sight_with_the_time_left() {
        let server = |port: u16| ServerSpec::parse(&format!("127.0.0.1:{port}")).unwrap();
        let unseen = |ports: &[u16]| LockError::Restarting {
            key: LockKey::new(b"k".to_vec()),
            restarting: ports.len(),
            total: 3,
            guard: Duration::from_secs(30),
            again_in: Duration::from_millis(28_400),
            causes: ports
                .iter()
                .map(|&p| (server(p), GuardCause::Unseen))
                .collect(),
            failures: Failures::default(),
        };
        assert_eq!(
            lock_error(&unseen(&[7000, 7001, 7002])),
            "lock \"k\": first sight of 3 servers (redis://127.0.0.1:7000, \
             redis://127.0.0.1:7001, redis://127.0.0.1:7002), or they lost their data (a \
             restart without persistence, a flush: the same to redlock): they count in 28s \
             400ms, when the restart guard (30s) has passed; first sight happens once per \
             server and prefix; -w waits for it"
        );
        assert!(lock_error(&unseen(&[7001]))
            .starts_with("lock \"k\": first sight of 1 of 3 servers (redis://127.0.0.1:7001), or it lost its data"));
        assert_eq!(
            waiting(&unseen(&[7000, 7001, 7002])),
            ": first sight of 3 servers (or lost data; restart guard): they count in 28s, once \
             per server and prefix"
        );
    }

    #[test]
    fn status_tells_the_guard_from_silence() {
        let key = LockKey::new(b"x".to_vec());
        let guarded = |cause, secs| Guarded {
            left: Duration::from_secs(secs),
            cause,
        };
        assert_eq!(
            status_unknown(&key, (5, 3), 2, &[]),
            "\"x\" is unknown: too few of 5 servers answered (quorum 3)"
        );
        let unseen = [guarded(GuardCause::Unseen, 28); 5];
        assert_eq!(
            status_unknown(&key, (5, 3), 5, &unseen),
            "\"x\" is unknown: all 5 servers answered, but they are seen for the first time (or \
             lost their data): the restart guard counts them in 28s, once per server and prefix \
             (quorum 3)"
        );
        let mixed = [
            guarded(GuardCause::Eviction, 4),
            guarded(GuardCause::AnotherProcess, 3),
        ];
        assert_eq!(
            status_unknown(&key, (3, 2), 3, &mixed),
            "\"x\" is unknown: all 3 servers answered, but 2 of them are inside the restart guard \
             (evicted keys; restarted or replaced): the first counts again in 3s (quorum 2)"
        );
        assert_eq!(
            server_restarting(guarded(GuardCause::Unseen, 28)),
            "first sight, or data lost: counts in 28s; restart guard"
        );
    }
}
