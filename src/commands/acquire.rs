//! `redlock acquire`: take the lock; its token is printed by [`hand_over`].

use std::cell::Cell;

use nix::sys::signal::Signal;
use tokio::sync::watch;

use super::ctx::Ctx;
use super::support::holder;
use super::support::waiting::acquire_showing_progress;
use crate::clock::BootInstant;
use crate::config::AcquireJob;
use crate::error::Error;
use crate::exit_code::Exit;
use crate::keeper::Keeper;
use crate::lock::{host_name, HeldBy, Holder, Lease, LockError, Redlock, Take, Tried};
use crate::outcome::Outcome;
use crate::output::{Event, Events, Output};
use crate::signals::Listener;
use crate::supervise::Watched;

/// Signals that interrupt a waiting `acquire`: what was taken is released,
/// and the process then dies of the signal. Every signal that would kill
/// it quietly is among them: without a handler, SIGUSR1 say would leave its
/// ticket in line and whatever its attempt had taken.
const INTERRUPTS: [Signal; 6] = crate::signals::QUIET_DEATHS;

/// Why a wait ended before the lock was taken.
enum Ended {
    Interrupted(Signal),
    /// The `--while` process exited: nobody is left to hold the lock for.
    WatchedExited(i32),
    /// An earlier `acquire --while` keeps the lock for the same process
    /// (this keeper's pid): the wait would never end.
    KeptAlready(u32),
}

/// The keeper's pid, when `error` says that the lock is busy because a
/// keeper on this host keeps it for `watched` itself: a script that takes
/// its own lock twice.
fn kept_for(error: &LockError, watched: &Watched) -> Option<u32> {
    let LockError::Busy {
        held_by: Some(held),
        ..
    } = error
    else {
        return None;
    };
    let HeldBy::Redlock(recorded) = held.as_ref() else {
        return None;
    };
    let holder = &recorded.holder;
    let ours = holder.pid == watched.pid().unsigned_abs() && holder.host == host_name();
    ours.then_some(holder.keeper_pid?)
        .filter(|_| !recorded.pid_gone && !recorded.keeper_gone)
}

/// Takes the lock; with `--while`, the keeper's process is the one it is
/// for, and its exit ends the wait.
pub fn run(ctx: &Ctx<'_>, job: AcquireJob) -> Result<Outcome, Error> {
    let watched = ctx.keeper.as_ref().map(Keeper::watched);
    let request = job.take(Some(record(&job, ctx.keeper.as_ref())));
    ctx.block_on(take(&ctx.redlock, (job, request), watched, ctx.events()))?
}

/// What `acquire` records beside the lock it takes: this process, or with
/// `--while` the process the keeper keeps the lock for.
fn record(job: &AcquireJob, keeper: Option<&Keeper>) -> Holder {
    // A keeper renews the lock as exec does; plain acquire does not.
    let renew_every = keeper.map(|_| crate::lock::keeper_interval(job.ttl));
    let holder = holder::this_process(job.message.clone(), None, renew_every);
    match keeper {
        Some(keeper) => keeper.describe(holder),
        None => holder,
    }
}

/// `--once-per`, `--once`: the run's period, from the servers' clocks, into
/// `request`. With --while, the wait for them ends with the process too,
/// as the wait for the lock does: that outcome.
async fn period(
    redlock: &Redlock,
    (job, request): (&AcquireJob, &mut Take),
    watched: Option<&Watched>,
) -> Result<Option<Outcome>, Error> {
    let once = super::support::once::once_run(redlock, (&job.key, job.once.as_ref()), request);
    match watched {
        Some(watched) => tokio::select! {
            run = once => run?,
            () = watched.exited() => {
                let (key, pid) = (job.key.clone(), watched.pid());
                return Ok(Some(Outcome::Abandoned { key, pid }));
            }
        },
        None => once.await?,
    }
    Ok(None)
}

/// Takes the lock; with `--while`, `watched` is the process it is for, and
/// its exit ends the wait.
async fn take(
    redlock: &Redlock,
    (job, mut request): (AcquireJob, Take),
    watched: Option<&Watched>,
    events: Events,
) -> Result<Outcome, Error> {
    if let Some(abandoned) = period(redlock, (&job, &mut request), watched).await? {
        return Ok(abandoned);
    }
    let mut interrupts = Listener::new(&INTERRUPTS)?;
    let (kept_already, mut kept) = watch::channel(None);
    let ended = async {
        let exited = async {
            match watched {
                Some(watched) => watched.exited().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            signal = interrupts.recv() => Ended::Interrupted(signal),
            () = exited => Ended::WatchedExited(watched.map_or(0, Watched::pid)),
            Ok(keeper) = kept.wait_for(Option::is_some) => Ended::KeptAlready(keeper.unwrap_or(0)),
        }
    };
    let started = BootInstant::now();
    let attempts = Cell::new(1);
    let on_retry = |attempt, error: &_| {
        attempts.set(attempt + 1);
        if let Some(keeper) = watched.and_then(|watched| kept_for(error, watched)) {
            kept_already.send_replace(Some(keeper));
        }
        events.say(Event::Retrying { attempt, error });
    };
    let acquired = acquire_showing_progress(redlock, &request, ended, events, on_retry).await;
    let tried =
        |error: &LockError| Tried::ended(attempts.get(), started.elapsed(), job.wait, error);
    match acquired {
        Ok(Ok(lease)) => Ok(Outcome::Acquired {
            lease,
            servers: redlock.len(),
        }),
        // `-E CODE`: the caller asked for CODE instead of 75.
        Ok(Err(error @ LockError::Busy { .. })) if job.conflict_exit != Exit::Busy.code() => {
            let tried = tried(&error);
            Ok(Outcome::BusyAs {
                error,
                tried,
                code: job.conflict_exit,
            })
        }
        // `--once-per`, `--once`: done already; nothing was taken.
        Ok(Err(LockError::Done { key, mark, .. })) => Ok(Outcome::Skipped {
            key,
            mark,
            exit: Exit::Done,
        }),
        Ok(Err(error)) => {
            let tried = tried(&error);
            Err(Error::lock(error, tried))
        }
        Err(Ended::Interrupted(signal)) => Ok(Outcome::Interrupted {
            key: job.key,
            signal,
        }),
        Err(Ended::WatchedExited(pid)) => Ok(Outcome::Abandoned { key: job.key, pid }),
        Err(Ended::KeptAlready(keeper)) => Ok(Outcome::KeptAlready {
            key: job.key,
            pid: watched.map_or(0, Watched::pid),
            keeper,
        }),
    }
}

/// `acquire`'s token goes to stdout. Nobody could ever release a lock whose
/// token was lost, and a token printed after the validity ran out (a full
/// pipe, Ctrl-S) is no lock: either way the lock is released, and the run
/// fails with that second message. With `--while`, the token is printed
/// only once the keeper is ready, and the keeper keeps the lock only once
/// the token was printed in time. The failure is the run's, to render.
pub fn hand_over(ctx: &mut Ctx<'_>, acquired: &Outcome, lease: &Lease) -> Result<(), Error> {
    let failure = match print_token(acquired, lease, ctx.output, ctx.keeper.take()) {
        Ok(()) => return Ok(()),
        Err(failure) => failure,
    };
    let _ = ctx.block_on(ctx.redlock.release(&lease.key, &lease.token));
    Err(failure)
}

fn print_token(
    acquired: &Outcome,
    lease: &Lease,
    output: &Output,
    mut keeper: Option<Keeper>,
) -> Result<(), Error> {
    if let Some(keeper) = &mut keeper {
        keeper.start(lease)?;
    }
    let rendered = match crate::output::stdout_was_closed() {
        true => Err(std::io::Error::other("stdout is closed")),
        false => output.render(Ok(acquired), acquired.exit()),
    };
    match rendered {
        Err(err) => Err(Error::internal(
            "could not print the token, so the lock was released",
            err,
        )),
        Ok(()) if lease.deadline <= crate::clock::BootInstant::now() => Err(Error::Expired {
            key: lease.key.clone(),
            validity: lease.validity(),
        }),
        Ok(()) => keeper.map_or(Ok(()), Keeper::commit),
    }
}
