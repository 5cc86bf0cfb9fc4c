//! `redlock exec`: take the lock, run the command under it while the keeper
//! extends it, release it, and say how the command ended.

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::time::Duration;

use tokio::sync::watch;

mod cancel;
pub(super) mod handoff;
pub(super) mod orphan;

use super::ctx::Ctx;
use super::support::waiting::acquire_showing_progress;
use super::support::{holder, once};
use crate::clock::BootInstant;
use crate::config::{ExecSpec, NameSource};
use crate::error::Error;
use crate::lock::{
    keep, Holder, Keeping, Lease, LockError, LockKey, Redlock, Semaphore, Take, Tried, Verdict,
};
use crate::outcome::{Outcome, Ran, RunEnd, Stop};
use crate::output::{Event, Events};
use crate::repeats::{Failing, Repeats};
use crate::signals::Listener;
use crate::supervise::{self, child, StopReason, Watchdog};
use handoff::{ChildEnv, Handoff};
use orphan::lease_words;

/// Forks the watchdog, then takes the lock and runs the command under it.
pub fn run(ctx: &Ctx<'_>, spec: ExecSpec) -> Result<Outcome, Error> {
    let watchdog = fork_watchdog(&spec, &ctx.redlock, ctx.timeout)?;
    let request = spec.take(Some(record(&spec)));
    ctx.block_on(exec(
        &ctx.redlock,
        (spec, request),
        &ctx.handoff,
        watchdog,
        ctx.events(),
    ))?
}

/// What `exec` records beside the lock it takes: this process, with its
/// command.
fn record(spec: &ExecSpec) -> Holder {
    let command = holder::Command {
        argv: &spec.argv,
        whole_line: spec.record_command,
    };
    let this = holder::this_process(
        spec.message.clone(),
        Some(command),
        Some(crate::lock::keeper_interval(spec.ttl)),
    );
    cancel::opted_in(spec, this)
}

/// `exec`'s watchdog, forked now, while this process has one thread; see
/// `Watchdog::fork`. It is a copy of this process, so it costs no second
/// start of the binary. It waits on its pipe until the command runs. It
/// gets the servers (answering within `timeout`) now, to release the lock
/// should exec be killed (see `orphan`).
fn fork_watchdog(spec: &ExecSpec, redlock: &Redlock, timeout: Duration) -> Result<Watchdog, Error> {
    let orphan = orphan::Orphan::new(redlock.clone(), timeout);
    Watchdog::fork(spec.signal, spec.stop, Some(Box::new(orphan)))
        .map_err(|err| Error::internal("cannot start the watchdog process", err))
}

async fn exec(
    redlock: &Redlock,
    (spec, mut request): (ExecSpec, Take),
    handoff: &Handoff,
    mut watchdog: Watchdog,
    events: Events,
) -> Result<Outcome, Error> {
    if spec.name_source != NameSource::Given {
        let keyed = spec.name_source == NameSource::Keyed;
        events.say(Event::DerivedName {
            key: &spec.key,
            keyed,
        });
    }
    if let Some(outcome) = run_nested(redlock, &spec, events).await? {
        return Ok(outcome);
    }
    let started = BootInstant::now();
    // Before the listener: nothing is taken while the servers' clocks are
    // asked for the period, maybe again and again under -w (out of the
    // same wait), and a signal then ends exec as it would have before it
    // started.
    once::once_run(redlock, (&spec.key, spec.once.as_ref()), &mut request).await?;
    // Listen from the start of the wait: a signal during the wait releases
    // what was taken; one that comes right after the lock was taken is
    // passed on to the command instead of being lost.
    let mut signals = Listener::new(&supervise::FORWARDED)?;
    let lease = match take(redlock, (&spec, &request), &mut signals, events).await {
        Ok(lease) => lease,
        Err(not_taken) => return not_taken,
    };
    let waited = started.elapsed();
    // Should exec be killed from here on, its watchdog releases the lock
    // once the command's group is empty (see `orphan`). A watchdog already
    // gone is found out, and said, before the command starts.
    let _ = watchdog.lease(&lease_words(&lease, None));
    events.say(Event::Holding {
        lease: &lease,
        servers: redlock.len(),
    });
    let extensions = Cell::new(0);
    let (end, valid_until) = supervise_under(
        redlock,
        (&spec, &request),
        handoff,
        &lease,
        (&mut signals, watchdog),
        (events, &extensions),
    )
    .await?;
    // The lock held: `spec.key`, or with `--limit` the slot taken.
    let end = with_breaker(redlock, &lease.key, end).await;
    mark_done(
        redlock,
        &request,
        (&lease, valid_until),
        (&end, &mut signals),
        events,
    )
    .await;
    let release_failed = release(redlock, (&lease, request.shared), &end, events).await;
    Ok(Outcome::Ran(Ran {
        key: lease.key.clone(),
        waited: Some(waited),
        extensions: extensions.get(),
        end,
        release_failed,
    }))
}

/// Releases the lock after the run that `end` tells of: the failure to
/// say, if any. After a loss (or a refusal) the release only tidies up;
/// after a normal end the command's status matters more than a lock that
/// lapsed at the very end, but it is said.
async fn release(
    redlock: &Redlock,
    (lease, shared): (&Lease, bool),
    end: &RunEnd,
    events: Events,
) -> Option<LockError> {
    let lost = match end {
        RunEnd::Stopped(Stop::TimedOut { .. } | Stop::Cancelled { .. }) => false,
        RunEnd::Stopped(_) | RunEnd::Refused(_) => true,
        RunEnd::Exited { .. } | RunEnd::NotStarted { .. } => false,
    };
    match redlock.release_own(&lease.key, &lease.token, shared).await {
        Ok(_) => {
            events.say(Event::Released(&lease.key));
            None
        }
        Err(err) if !lost => Some(err),
        Err(_) => None,
    }
}

/// `--once-per`, `--once`: after a command that exited 0, and before the
/// lock is released, the run's done mark goes where the lock still holds
/// its token, and is retried on the servers that could not answer while
/// the lock is valid (`valid_until`, after its extensions). A mark that
/// reaches no majority by then does not count: said, and the command's
/// status stands. A signal stops the tries (they may last the lock's
/// validity): the run does not count, and the lock is released. A run that
/// failed, was stopped or lost the lock marks nothing.
async fn mark_done(
    redlock: &Redlock,
    request: &Take,
    (lease, valid_until): (&Lease, BootInstant),
    (end, signals): (&RunEnd, &mut Listener),
    events: Events,
) {
    let Some(run) = &request.once else {
        return;
    };
    let RunEnd::Exited { status, .. } = end else {
        return;
    };
    if !status.success() || crate::test_hooks::skip_mark_done() {
        return;
    }
    let marking = redlock.mark_done(
        (&lease.key, &lease.token),
        run,
        (0, request.record.as_ref()),
        valid_until,
    );
    let marked = tokio::select! {
        marked = marking => marked,
        signal = signals.recv() => {
            return events.say(Event::MarkInterrupted {
                key: &lease.key,
                signal: signal.as_str(),
            });
        }
    };
    match marked {
        Ok(marked) => events.say(Event::MarkedDone {
            key: &lease.key,
            on: marked.on.len(),
            total: marked.total,
        }),
        Err(error) => events.say(Event::NotMarkedDone(&error)),
    }
}

/// A lock lost because someone broke it with `release --force` says who:
/// one more read, on the loss path only.
async fn with_breaker(redlock: &Redlock, key: &LockKey, end: RunEnd) -> RunEnd {
    match end {
        RunEnd::Stopped(Stop::Lost { error, .. }) => {
            let broken = redlock.inspect(key).await.broken();
            RunEnd::Stopped(Stop::Lost { error, broken })
        }
        end => end,
    }
}

/// Waits for the lock as `spec` says; what ends the run when it is not
/// taken (busy, interrupted, failed) is the `Err`.
async fn take(
    redlock: &Redlock,
    (spec, request): (&ExecSpec, &Take),
    signals: &mut Listener,
    events: Events,
) -> Result<Lease, Result<Outcome, Error>> {
    let started = BootInstant::now();
    let attempts = Cell::new(1);
    let to_cancel = cancel::ToCancel::default();
    let on_retry = |attempt, error: &_| {
        attempts.set(attempt + 1);
        to_cancel.saw(spec, error);
        events.say(Event::Retrying { attempt, error });
    };
    // A signal ends the wait; meanwhile an older holder that opted in is
    // asked to stop (`--cancel-in-progress`).
    let interrupted = async {
        tokio::select! {
            signal = signals.recv() => signal,
            never = cancel::ask_while_waiting(redlock, request, &to_cancel) => match never {},
        }
    };
    let acquired = acquire_showing_progress(redlock, request, interrupted, events, on_retry).await;
    let tried =
        |error: &LockError| Tried::ended(attempts.get(), started.elapsed(), spec.wait, error);
    match acquired {
        Ok(Ok(lease)) => Ok(lease),
        // `-E CODE` (75 unless given); `-E 0` is the cron idiom "skip
        // quietly": no message either.
        Ok(Err(error @ LockError::Busy { .. })) => {
            let tried = tried(&error);
            let code = spec.conflict_exit;
            Err(Ok(Outcome::BusyAs { error, tried, code }))
        }
        // `--once-per`, `--once`: done already; nothing was taken.
        Ok(Err(LockError::Done { key, mark, .. })) => Err(Ok(Outcome::Skipped {
            key,
            mark,
            exit: crate::exit_code::Exit::Success,
        })),
        Ok(Err(error)) => {
            let tried = tried(&error);
            Err(Err(Error::lock(error, tried)))
        }
        Err(signal) => Err(Ok(Outcome::Interrupted {
            key: spec.key.clone(),
            signal,
        })),
    }
}

/// The command to run, with the lock and the servers in its environment.
fn command_under(spec: &ExecSpec, lease: &Lease, child_env: &ChildEnv) -> supervise::Command {
    let mut env = vec![
        ("REDLOCK_NAME", spec.name.clone()),
        ("REDLOCK_TOKEN", OsString::from(lease.token.as_str())),
    ];
    let mut env_remove = child_env.remove.clone();
    // `--limit`: the slot held. `--fence`: the token for storage. Without
    // them, none: not one an enclosing exec of another lock handed down.
    match &lease.slot {
        Some(slot) => env.push(("REDLOCK_SLOT", OsString::from(slot.index.to_string()))),
        None => env_remove.push("REDLOCK_SLOT"),
    }
    match lease.fence {
        Some(fence) => env.push(("REDLOCK_FENCE", OsString::from(fence.to_string()))),
        None => env_remove.push("REDLOCK_FENCE"),
    }
    env.extend(child_env.set.iter().cloned());
    supervise::Command {
        argv: spec.argv.clone(),
        env,
        env_remove,
        signal: spec.signal,
        plan: spec.stop,
        timeout: spec.timeout,
    }
}

/// Runs the command under `lease` while the keeper extends it, counting the
/// extensions in `extensions`; how it ended, and until when the lock is
/// valid after the last extension.
async fn supervise_under(
    redlock: &Redlock,
    (spec, request): (&ExecSpec, &Take),
    handoff: &Handoff,
    lease: &Lease,
    (signals, mut watchdog): (&mut Listener, Watchdog),
    (events, extensions): (Events, &Cell<u32>),
) -> Result<(RunEnd, BootInstant), Error> {
    let child_env = handoff
        .child_env(watchdog.pid())
        .map_err(|err| Error::internal("cannot hand the servers on to the command", err))?;
    if let Some(file) = &child_env.file {
        // The watchdog removes it should exec be killed.
        let _ = watchdog.lease(&lease_words(lease, Some(&file.path())));
    }
    let command = command_under(spec, lease, &child_env);
    let (deadlines, deadline) = watch::channel(lease.deadline);
    let valid_until = deadline.clone();
    // Once the command runs, its pid joins the holder record.
    let (holder_updates, holder) = watch::channel(None);
    // Why the keeper gave up: a loss, or a refused extension.
    let loss = Cell::new(None);
    // Why the extensions since the last that succeeded failed, and how
    // many did: what a stop for want of one says.
    let failing = RefCell::new(None);
    let repeats = Cell::new(Repeats::default());
    let lost = async {
        let on_event = |event: Keeping<'_>| {
            let mut said = repeats.get();
            match event {
                Keeping::Extended => {
                    extensions.set(extensions.get() + 1);
                    failing.replace(None);
                    if let Some(failed) = said.succeeded(BootInstant::now()) {
                        events.say(Event::ExtendRecovered(failed));
                    }
                }
                Keeping::Retrying(error) => {
                    // The first failure at once, then at growing intervals.
                    if let Some(so_far) = said.failed(BootInstant::now()) {
                        events.say(Event::ExtendRetrying {
                            error,
                            failing: so_far,
                        });
                    }
                    failing.replace(Some(error.clone()));
                }
            }
            repeats.set(said);
        };
        loss.set(Some(
            keep(redlock, lease, deadlines, holder, on_event).await,
        ));
    };
    let cancelled = Cell::new(None);
    let watch = spec.cancel_in_progress.then_some((redlock, lease));
    let lost = cancel::lost_or_cancelled(lost, watch, &cancelled);
    let report = |event: supervise::Event| {
        if let (supervise::Event::Started { pid }, Some(holder)) = (&event, &request.record) {
            holder_updates.send_replace(Some(Holder {
                command_pid: Some(*pid),
                ..holder.clone()
            }));
        }
        say(events, &lease.key, &event);
    };
    let outcome = supervise::run(&command, watchdog, deadline, lost, signals, &report)
        .await
        .map_err(Error::Internal)?;
    if let (Some(by), supervise::Outcome::Stopped(StopReason::Lost)) = (cancelled.take(), &outcome)
    {
        let valid_until = *valid_until.borrow();
        return Ok((RunEnd::Stopped(Stop::Cancelled { by }), valid_until));
    }
    let failed = (failing.take(), repeats.get().so_far(BootInstant::now()));
    let end = run_end(spec, outcome, loss.take(), failed);
    let valid_until = *valid_until.borrow();
    Ok((end, valid_until))
}

/// How the run ended, from the supervisor's outcome, the keeper's loss (if
/// it found one) and the extensions that failed since the last that
/// succeeded: the last one's error, and how many over how long.
fn run_end(
    spec: &ExecSpec,
    outcome: supervise::Outcome,
    loss: Option<LockError>,
    (last_error, failing): (Option<LockError>, Option<Failing>),
) -> RunEnd {
    match outcome {
        supervise::Outcome::Ended(status) => RunEnd::Exited {
            status,
            forwarded: forwarded_and_fatal(status),
        },
        supervise::Outcome::Stopped(reason) => match (reason, loss) {
            (_, Some(refused @ LockError::Refused { .. })) => RunEnd::Refused(refused),
            (StopReason::Lost, Some(error)) => RunEnd::Stopped(Stop::Lost {
                error,
                broken: None,
            }),
            // A loss the keeper found after the stop began is the last word.
            (StopReason::NotExtended { left }, loss) => RunEnd::Stopped(Stop::NotExtended {
                left,
                last_error: loss.or(last_error),
                failing,
            }),
            (StopReason::TooLateToStart, _) => RunEnd::Stopped(Stop::TooLateToStart),
            (StopReason::TimedOut { limit }, _) => RunEnd::Stopped(Stop::TimedOut { limit }),
            (StopReason::Overdue | StopReason::Lost, _) => RunEnd::Stopped(Stop::Overdue),
        },
        supervise::Outcome::NotStarted(error) => RunEnd::NotStarted {
            argv: spec.argv.clone(),
            error,
            name_runs: name_runs(spec),
        },
    }
}

/// The signal the command died of, if this process got it too (and so
/// passed it on): the one `exec` then dies of.
fn forwarded_and_fatal(status: std::process::ExitStatus) -> Option<nix::sys::signal::Signal> {
    use std::os::unix::process::ExitStatusExt as _;
    let signal = nix::sys::signal::Signal::try_from(status.signal()?).ok()?;
    crate::signals::received(signal).then_some(signal)
}

/// Says the supervisor's event about the lock `key`.
fn say(events: Events, key: &LockKey, event: &supervise::Event) {
    let processes: Vec<(i32, &[u8])>;
    events.say(match event {
        supervise::Event::Started { pid } => Event::CommandStarted { pid: *pid },
        supervise::Event::HoldingForLeftovers {
            processes: left,
            terminal,
        } => {
            processes = left.iter().map(|p| (p.pid, p.command.as_slice())).collect();
            Event::HoldingForLeftovers {
                key,
                processes: &processes,
                terminal: *terminal,
            }
        }
        supervise::Event::LeftoverStoppedAgain { pid, signal } => Event::LeftoverStoppedAgain {
            pid: *pid,
            signal: signal.as_str(),
        },
        supervise::Event::StoppingLeftovers {
            signal,
            kill_in,
            terminal,
        } => Event::StoppingLeftovers {
            signal: signal.as_str(),
            kill_in: *kill_in,
            terminal: *terminal,
        },
        supervise::Event::KillingLeftovers => Event::KillingLeftovers,
        supervise::Event::Suspending { stop_in } => Event::Suspended {
            key,
            stop_in: *stop_in,
        },
        supervise::Event::WatchdogGone => Event::WatchdogGone,
    });
}

/// A `redlock exec` inside the command of another one for the same lock
/// (REDLOCK_NAME and REDLOCK_TOKEN set, and that token holds a majority) runs
/// its command in place instead of waiting for itself forever: the outer
/// exec already holds and extends the lock.
async fn run_nested(
    redlock: &Redlock,
    spec: &ExecSpec,
    events: Events,
) -> Result<Option<Outcome>, Error> {
    let (Some(name), Some(token)) = (
        std::env::var_os("REDLOCK_NAME"),
        std::env::var_os("REDLOCK_TOKEN"),
    ) else {
        return Ok(None);
    };
    if name != spec.name || token.is_empty() {
        return Ok(None);
    }
    let key = match &spec.semaphore {
        None => spec.key.clone(),
        // The slot the enclosing exec holds, as it told its command.
        Some(semaphore) => match nested_slot(semaphore) {
            Some(key) => key,
            None => return Ok(None),
        },
    };
    let inspection = redlock.inspect_for(&key, Some(token.as_bytes())).await;
    // The enclosing exec's hold must give the inner one all it asked for:
    // a fence if it asked for one, and exclusion unless it is shared.
    let refused = |upgrade| Err(Error::Usage(nested_refusal(&spec.key, upgrade)));
    let unfenced = spec.fence && std::env::var_os("REDLOCK_FENCE").is_none();
    match inspection.verdict() {
        Verdict::Held { value, .. } if value == token.as_bytes() => match unfenced {
            true => refused(false),
            false => Ok(Some(run_in_place(spec, events))),
        },
        // Inside a reader, only a reader rides on the outer one's token.
        _ if inspection
            .shared_holders()
            .iter()
            .any(|reader| reader.token == token.as_bytes()) =>
        {
            match spec.shared {
                true => Ok(Some(run_in_place(spec, events))),
                false => refused(true),
            }
        }
        // A stale or foreign REDLOCK_TOKEN: take the lock as usual.
        Verdict::Held { .. } | Verdict::Foreign { .. } | Verdict::Free => Ok(None),
        // Waiting for the lock could mean waiting for ourselves forever.
        Verdict::Unknown => Err(inspection.no_quorum().into()),
    }
}

/// Why a nested exec cannot ride on the enclosing exec's hold of `key`: an
/// exclusive one inside a shared one (an upgrade, which would wait for
/// itself), or a fenced one inside one without a fence.
fn nested_refusal(key: &LockKey, upgrade: bool) -> String {
    match upgrade {
        true => format!(
            "an enclosing exec --shared holds {key}: an exclusive exec of it inside would wait \
             for itself (a shared hold is never upgraded); add --shared, or take it exclusively \
             outside"
        ),
        false => format!(
            "an enclosing exec holds {key} without --fence, so there is no fencing token to \
             give: add --fence to the outer exec"
        ),
    }
}

/// The slot of `semaphore` that REDLOCK_SLOT names, if it is one of them.
fn nested_slot(semaphore: &Semaphore) -> Option<LockKey> {
    let slot: u32 = std::env::var("REDLOCK_SLOT").ok()?.parse().ok()?;
    (slot < semaphore.limit).then(|| semaphore.slot_key(slot))
}

/// The NAME given, when it names a command itself, spelled so that it
/// runs: said when the command cannot be run, as the one likely meant.
fn name_runs(spec: &ExecSpec) -> Option<OsString> {
    if spec.name_source != NameSource::Given {
        return None;
    }
    child::command_named(&spec.name)
}

/// Runs the nested exec's command in place of this process.
fn run_in_place(spec: &ExecSpec, events: Events) -> Outcome {
    events.say(Event::Nested(&spec.key));
    let error = child::exec_in_place(&spec.argv);
    Outcome::Ran(Ran {
        key: spec.key.clone(),
        waited: None,
        extensions: 0,
        end: RunEnd::NotStarted {
            argv: spec.argv.clone(),
            error,
            name_runs: name_runs(spec),
        },
        release_failed: None,
    })
}
