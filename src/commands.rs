//! The lock subcommands: each runs the protocol once and reports its outcome
//! through `output`, returning the exit status or a typed error.

use anyhow::Context as _;

use crate::config::{LockTask, Output};
use crate::exit_code::Exit;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::lock::{
    InFlight, Inspection, KeyState, Lease, LockError, LockKey, Redlock, Verdict, Wait,
};
use crate::output::{self, human, note, Json};
use crate::signals::Listener;

pub async fn run(redlock: &Redlock, task: LockTask, out: Output) -> anyhow::Result<Exit> {
    match task {
        LockTask::Acquire { key, ttl, wait } => {
            let mut interrupts = Listener::new(&[Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP])?;
            let outcome =
                match acquire_unless_interrupted(redlock, &key, ttl, wait, &mut interrupts, out)
                    .await
                {
                    Ok(outcome) => outcome,
                    Err(signal) => return Ok(Exit::Signal(signal as i32)),
                };
            let lease = outcome.or_else(|err| fail(out, &key, err))?;
            if out.verbose {
                note(&format!(
                    "acquired {key} on {} of {} servers ({}) after {} attempt(s); valid for {}",
                    lease.held_on.len(),
                    redlock.len(),
                    lease.held_on.join(", "),
                    lease.attempts,
                    human(lease.validity)
                ));
            }
            let printed = if out.json {
                output::line(&lease_json(&lease).finish())
            } else {
                output::line(lease.token.as_str())
            };
            if let Err(err) = printed {
                // Nobody could ever release a lock whose token was lost.
                let _ = redlock.release(&key, &lease.token).await;
                return Err(err).context("could not print the token, so the lock was released");
            }
            Ok(Exit::Success)
        }
        LockTask::Release { key, token } => {
            let released = redlock
                .release(&key, &token)
                .await
                .or_else(|err| fail(out, &key, err))?;
            if out.verbose {
                note(&format!(
                    "released {key} on {} of {} servers",
                    released.released_on, released.total
                ));
            }
            if out.json {
                output::line(
                    &Json::new()
                        .bytes("name", key.bytes())
                        .bool("released", true)
                        .num("released_on", released.released_on as i128)
                        .num("servers", released.total as i128)
                        .finish(),
                )?;
            }
            Ok(Exit::Success)
        }
        LockTask::Extend { key, token, ttl } => {
            let lease = redlock
                .extend(&key, &token, ttl)
                .await
                .or_else(|err| fail(out, &key, err))?;
            if out.verbose {
                note(&format!(
                    "extended {key} on {} of {} servers; valid for {}",
                    lease.held_on.len(),
                    redlock.len(),
                    human(lease.validity)
                ));
            }
            if out.json {
                output::line(&lease_json(&lease).finish())?;
            }
            Ok(Exit::Success)
        }
        LockTask::Status { key } => {
            let inspection = redlock.inspect(&key).await;
            let verdict = inspection.verdict();
            if out.json {
                output::line(&status_json(&inspection, &verdict).finish())?;
            } else if !out.quiet {
                output::line(&status_text(&inspection, &verdict))?;
            }
            match verdict {
                Verdict::Held { .. } => Ok(Exit::Success),
                Verdict::Free => Ok(Exit::Free),
                Verdict::Unknown => Err(inspection.no_quorum().into()),
            }
        }
        LockTask::Exec(spec) => crate::exec::run(redlock, spec, out).await,
    }
}
/// Takes the lock unless a signal from `interrupts` arrives first; then
/// whatever the attempt in flight took is released, so that an interrupted
/// acquire never leaves a lock behind, and the signal is returned.
pub async fn acquire_unless_interrupted(
    redlock: &Redlock,
    key: &LockKey,
    ttl: Duration,
    wait: Wait,
    interrupts: &mut Listener,
    out: Output,
) -> Result<Result<Lease, LockError>, Signal> {
    let in_flight = InFlight::default();
    tokio::select! {
        outcome = redlock.acquire(key, ttl, wait, &in_flight) => Ok(outcome),
        signal = interrupts.recv() => {
            if let Some(token) = in_flight.token() {
                let _ = redlock.release(key, &token).await;
            }
            if out.verbose {
                note(&format!("interrupted by {signal}; released what was taken of {key}"));
            }
            Err(signal)
        }
    }
}

/// With `--json`, a failure is a result too: one object on stdout naming it.
fn fail<T>(out: Output, key: &LockKey, err: LockError) -> anyhow::Result<T> {
    if out.json {
        let kind = match err {
            LockError::Busy { .. } => "busy",
            LockError::NoQuorum { .. } => "no_quorum",
            LockError::TooSlow { .. } => "too_slow",
            LockError::NotHeld { .. } => "not_held",
            LockError::Refused { .. } => "refused",
        };
        output::line(
            &Json::new()
                .bytes("name", key.bytes())
                .str("error", kind)
                .str("message", &err.to_string())
                .finish(),
        )?;
    }
    Err(err.into())
}

fn lease_json(lease: &Lease) -> Json {
    Json::new()
        .bytes("name", lease.key.bytes())
        .str("token", lease.token.as_str())
        .millis("ttl_ms", lease.ttl)
        .millis("validity_ms", lease.validity)
        .strs("held_on", &lease.held_on)
        .num("attempts", lease.attempts)
}

fn status_json(inspection: &Inspection, verdict: &Verdict) -> Json {
    let servers = inspection
        .servers
        .iter()
        .map(|s| {
            let json = Json::new().str("server", &s.server);
            match &s.state {
                Ok(KeyState {
                    kind,
                    value,
                    pttl_ms,
                }) => json
                    .bool("exists", kind != "none")
                    .str("type", kind)
                    .opt_bytes("token", value.as_deref())
                    .num("ttl_ms", *pttl_ms)
                    .raw("error", "null"),
                Err(err) => json.str("error", &err.to_string()),
            }
        })
        .collect();
    let (state, token) = match verdict {
        Verdict::Held { value, .. } => ("held", Some(value.as_slice())),
        Verdict::Free => ("free", None),
        Verdict::Unknown => ("unknown", None),
    };
    // The same shape as acquire's `held_on`: the servers holding the token.
    let held_on: Vec<String> = inspection
        .servers
        .iter()
        .filter(|s| matches!((&s.state, token), (Ok(KeyState { value: Some(v), .. }), Some(t)) if v == t))
        .map(|s| s.server.clone())
        .collect();
    Json::new()
        .bytes("name", inspection.key.bytes())
        .str("state", state)
        .bool("held", state == "held")
        .opt_bytes("token", token)
        .strs("held_on", &held_on)
        .num("quorum", inspection.quorum as i128)
        .objects("servers", servers)
}

fn status_text(inspection: &Inspection, verdict: &Verdict) -> String {
    let total = inspection.servers.len();
    let mut text = match verdict {
        Verdict::Held { value, on } => format!(
            "{} is held: token {} on {on} of {total} servers (quorum {})",
            inspection.key,
            crate::lock::escape_bytes(value),
            inspection.quorum
        ),
        Verdict::Free => format!(
            "{} is free: no token holds a majority of {total} servers (quorum {})",
            inspection.key, inspection.quorum
        ),
        Verdict::Unknown => format!(
            "{} is unknown: too few of {total} servers answered (quorum {})",
            inspection.key, inspection.quorum
        ),
    };
    let width = inspection
        .servers
        .iter()
        .map(|s| s.server.len())
        .max()
        .unwrap_or(0);
    for s in &inspection.servers {
        let detail = match &s.state {
            Ok(KeyState { kind, .. }) if kind == "none" => "free".to_owned(),
            Ok(KeyState {
                value: Some(value),
                pttl_ms,
                ..
            }) => {
                format!(
                    "token {}  {}",
                    crate::lock::escape_bytes(value),
                    expiry(*pttl_ms)
                )
            }
            Ok(KeyState { kind, pttl_ms, .. }) => {
                format!("foreign {kind} value  {}", expiry(*pttl_ms))
            }
            Err(err) => format!("error: {err}"),
        };
        text.push_str(&format!("\n  {:width$}  {detail}", s.server));
    }
    text
}

fn expiry(pttl_ms: i64) -> String {
    match u64::try_from(pttl_ms) {
        Ok(ms) => format!("expires in {}", human(std::time::Duration::from_millis(ms))),
        Err(_) => "never expires".to_owned(),
    }
}
