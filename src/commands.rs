//! The lock subcommands: each runs the protocol once and reports its outcome
//! through `output`, returning the exit status or a typed error.

use anyhow::Context as _;

use crate::config::{Output, Task};
use crate::exit_code::Exit;
use crate::lock::{Inspection, KeyState, Lease, LockError, LockKey, Redlock, Token, Verdict};
use crate::output::{self, human, note, Json};

pub async fn run(redlock: &Redlock, task: Task, out: Output) -> anyhow::Result<Exit> {
    match task {
        Task::Acquire { key, ttl, wait } => {
            let token = Token::generate();
            let outcome = tokio::select! {
                outcome = redlock.acquire(&key, &token, ttl, wait) => outcome,
                signal = interrupted() => {
                    // Whatever the interrupted round took must not outlive us.
                    let _ = redlock.release(&key, &token).await;
                    if out.verbose {
                        note(&format!("interrupted by signal {signal}; released {key}"));
                    }
                    return Ok(Exit::Signal(signal));
                }
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
                let _ = redlock.release(&key, &token).await;
                return Err(err).context("could not print the token, so the lock was released");
            }
            Ok(Exit::Success)
        }
        Task::Release { key, token } => {
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
        Task::Extend { key, token, ttl } => {
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
        Task::Status { key } => {
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
                Verdict::Unknown => Err(LockError::NoQuorum {
                    answered: inspection
                        .servers
                        .iter()
                        .filter(|s| s.state.is_ok())
                        .count(),
                    total: inspection.servers.len(),
                    quorum: inspection.quorum,
                    failures: crate::lock::Failures(
                        inspection
                            .servers
                            .iter()
                            .filter_map(|s| s.state.clone().err().map(|e| (s.server.clone(), e)))
                            .collect(),
                    ),
                    key,
                }
                .into()),
            }
        }
        Task::Generate { .. } => unreachable!("generate runs without servers"),
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
                    .opt_str(
                        "token",
                        value.as_deref().map(crate::lock::escape_bytes).as_deref(),
                    )
                    .num("ttl_ms", *pttl_ms)
                    .raw("error", "null"),
                Err(err) => json.str("error", &err.to_string()),
            }
        })
        .collect();
    let (state, token, held_on) = match verdict {
        Verdict::Held { value, on } => ("held", Some(crate::lock::escape_bytes(value)), *on),
        Verdict::Free => ("free", None, 0),
        Verdict::Unknown => ("unknown", None, 0),
    };
    Json::new()
        .bytes("name", inspection.key.bytes())
        .str("state", state)
        .bool("held", state == "held")
        .opt_str("token", token.as_deref())
        .num("held_on", held_on as i128)
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

/// Resolves with the number of the first INT, TERM or HUP signal received.
async fn interrupted() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let listen = |kind: SignalKind| signal(kind).ok();
    let (mut int, mut term, mut hup) = (
        listen(SignalKind::interrupt()),
        listen(SignalKind::terminate()),
        listen(SignalKind::hangup()),
    );
    async fn next(signal: &mut Option<tokio::signal::unix::Signal>) {
        match signal {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    tokio::select! {
        () = next(&mut int) => libc_signal::SIGINT,
        () = next(&mut term) => libc_signal::SIGTERM,
        () = next(&mut hup) => libc_signal::SIGHUP,
    }
}

mod libc_signal {
    use nix::sys::signal::Signal;
    pub const SIGINT: i32 = Signal::SIGINT as i32;
    pub const SIGTERM: i32 = Signal::SIGTERM as i32;
    pub const SIGHUP: i32 = Signal::SIGHUP as i32;
}
