//! `redlock exec`: take the lock, run the command under it while the keeper
//! extends it, release it, and exit with the command's status.

use std::cell::Cell;
use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;

use tokio::sync::watch;

use super::handoff::{ChildEnv, Handoff};
use super::waiting::acquire_showing_progress;
use crate::clock::BootInstant;
use crate::config::ExecSpec;
use crate::error::{describe, Error};
use crate::exit_code::Exit;
use crate::lock::{count_servers, keep, Holder, Keeping, Lease, LockError, Redlock, Verdict};
use crate::output::{text, Held, Reporter};
use crate::signals::Listener;
use crate::supervise::{self, child, Outcome, Watchdog};

pub async fn run(
    redlock: &Redlock,
    spec: ExecSpec,
    handoff: &Handoff,
    watchdog: Watchdog,
    out: Reporter,
) -> Result<Exit, Error> {
    if spec.derived_name {
        out.verbose(|| format!("lock name derived from the command: {}", spec.key));
    }
    if let Some(exit) = run_nested(redlock, &spec, out).await? {
        return Ok(exit);
    }
    // Listen from the start: a signal during the wait releases what was
    // taken; one that comes right after the lock was taken is passed on to
    // the command instead of being lost.
    let mut signals = Listener::new(&supervise::FORWARDED)?;
    let started = BootInstant::now();
    let on_retry = |attempt, err: &_| out.retrying(attempt, err);
    let acquired = acquire_showing_progress(
        redlock,
        &spec.key,
        (spec.ttl, spec.wait),
        signals.recv(),
        out,
        on_retry,
    )
    .await;
    let lease = match acquired {
        Ok(Ok(lease)) => lease,
        Ok(Err(err @ LockError::Busy { .. })) => {
            // `-E 0` is the cron idiom "skip quietly": no message either.
            if spec.conflict_exit != 0 {
                out.outcome(&err.to_string());
            }
            return Ok(Exit::Code(spec.conflict_exit));
        }
        Ok(Err(err)) => return Err(err.into()),
        Err(signal) => return Ok(out.interrupted(&spec.key, signal)),
    };
    let waited = started.elapsed();
    out.holding(&lease, redlock.len());
    let extensions = Cell::new(0);
    let outcome = supervise_under(
        redlock,
        &spec,
        handoff,
        &lease,
        (&mut signals, watchdog),
        (out, &extensions),
    )
    .await;
    let lost = matches!(
        outcome,
        Ok(Exit::Lost) | Err(Error::Lock(LockError::Refused { .. }))
    );
    match redlock.release(&spec.key, &lease.token).await {
        Ok(_) => out.verbose(|| format!("released {}", spec.key)),
        // After a loss (or a refusal) the release only tidies up; after a
        // normal end the command's status matters more than a lock that
        // lapsed at the very end.
        Err(err) if !lost => out.outcome(&format!("release after the command ended: {err}")),
        Err(_) => {}
    }
    out.held(&Held {
        key: &spec.key,
        waited,
        extensions: extensions.get(),
        lost,
    });
    outcome
}

/// The command to run, with the lock and the servers in its environment.
fn command_under(spec: &ExecSpec, lease: &Lease, child_env: &ChildEnv) -> supervise::Command {
    let mut env = vec![
        ("REDLOCK_NAME", spec.name.clone()),
        ("REDLOCK_TOKEN", OsString::from(lease.token.as_str())),
    ];
    env.extend(child_env.set.iter().cloned());
    supervise::Command {
        argv: spec.argv.clone(),
        env,
        env_remove: child_env.remove.clone(),
        inherit: child_env
            .file
            .as_ref()
            .map(|file| file.as_raw_fd())
            .into_iter()
            .collect(),
        signal: spec.signal,
        plan: spec.stop,
    }
}

/// Runs the command under `lease` while the keeper extends it, counting the
/// extensions in `extensions`.
async fn supervise_under(
    redlock: &Redlock,
    spec: &ExecSpec,
    handoff: &Handoff,
    lease: &Lease,
    (signals, watchdog): (&mut Listener, Watchdog),
    (out, extensions): (Reporter, &Cell<u32>),
) -> Result<Exit, Error> {
    let child_env = handoff
        .child_env()
        .map_err(|err| Error::internal("cannot hand the servers on to the command", err))?;
    let command = command_under(spec, lease, &child_env);
    let (deadlines, deadline) = watch::channel(lease.deadline);
    // Once the command runs, its pid joins the holder record.
    let (holder_updates, holder) = watch::channel(None);
    // A refused extension ends the run as a refusal (78), not as a loss.
    let refused = Cell::new(None);
    let lost = async {
        let on_event = |event: Keeping<'_>| match event {
            Keeping::Extended(_) => extensions.set(extensions.get() + 1),
            Keeping::Retrying(err) => {
                out.outcome(&format!("extending failed, retrying: {}", describe(err)));
            }
        };
        let err = keep(redlock, lease, deadlines, holder, on_event).await;
        let account = loss_account(&err);
        if matches!(err, LockError::Refused { .. }) {
            refused.set(Some(err));
        }
        account
    };
    let report = |event: supervise::Event| {
        if let (supervise::Event::Started { pid }, Some(holder)) = (&event, redlock.holder()) {
            holder_updates.send_replace(Some(Holder {
                command_pid: Some(*pid),
                ..holder.clone()
            }));
        }
        out.supervision(&event)
    };
    let outcome = supervise::run(&command, watchdog, deadline, lost, signals, &report)
        .await
        .map_err(Error::Internal)?;
    Ok(match outcome {
        Outcome::Ended(status) => exit_for(status),
        Outcome::Stopped(reason) => {
            if let Some(refused) = refused.take() {
                out.warning(&format!(
                    "lock {} could not be extended; the command was stopped",
                    spec.key
                ));
                return Err(refused.into());
            }
            out.warning(&format!("lock {} {}", spec.key, text::stop_reason(&reason)));
            Exit::Lost
        }
        Outcome::NotStarted(err) => cannot_run(&spec.argv, &err, out),
    })
}

/// Why the lock was lost, after "lock NAME was lost (…)": without the name
/// again.
fn loss_account(err: &LockError) -> String {
    match err {
        LockError::NotHeld {
            held,
            total,
            quorum,
            failures,
            ..
        } => format!(
            "{held} of {} still hold its token, {quorum} needed{failures}",
            count_servers(*total)
        ),
        other => other.to_string(),
    }
}

/// A `redlock exec` inside the command of another one for the same lock
/// (REDLOCK_NAME and REDLOCK_TOKEN set, and that token holds a majority) runs
/// its command in place instead of waiting for itself forever: the outer
/// exec already holds and extends the lock.
async fn run_nested(
    redlock: &Redlock,
    spec: &ExecSpec,
    out: Reporter,
) -> Result<Option<Exit>, Error> {
    let (Some(name), Some(token)) = (
        std::env::var_os("REDLOCK_NAME"),
        std::env::var_os("REDLOCK_TOKEN"),
    ) else {
        return Ok(None);
    };
    if name != spec.name || token.is_empty() {
        return Ok(None);
    }
    let inspection = redlock.inspect(&spec.key).await;
    match inspection.verdict() {
        Verdict::Held { value, .. } if value == token.as_bytes() => {
            out.verbose(|| {
                format!(
                    "{} is already held by the enclosing redlock exec; running the command under it",
                    spec.key
                )
            });
            let err = child::exec_in_place(&spec.argv);
            Ok(Some(cannot_run(&spec.argv, &err, out)))
        }
        // A stale or foreign REDLOCK_TOKEN: take the lock as usual.
        Verdict::Held { .. } | Verdict::Foreign { .. } | Verdict::Free => Ok(None),
        // Waiting for the lock could mean waiting for ourselves forever.
        Verdict::Unknown => Err(inspection.no_quorum().into()),
    }
}

/// The command could not be run: 127 when it does not exist, 126 when it
/// exists but cannot be run, as shells do.
fn cannot_run(argv: &[OsString], err: &io::Error, out: Reporter) -> Exit {
    out.warning(&format!("cannot run {}: {err}", text::command_line(argv)));
    if err.kind() == io::ErrorKind::NotFound {
        Exit::Code(127)
    } else {
        Exit::Code(126)
    }
}

/// The command's status as ours: its code unchanged, 128+N for signal N.
fn exit_for(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_like_a_shell() {
        assert_eq!(exit_for(ExitStatus::from_raw(0)), Exit::Code(0));
        assert_eq!(exit_for(ExitStatus::from_raw(7 << 8)), Exit::Code(7));
        assert_eq!(exit_for(ExitStatus::from_raw(9)), Exit::Signal(9));
        assert_eq!(exit_for(ExitStatus::from_raw(9)).code(), 137);
    }
}
