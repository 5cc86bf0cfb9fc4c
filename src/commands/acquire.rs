//! `redlock acquire`: take the lock and print its token.

use std::cell::Cell;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::waiting::acquire_showing_progress;
use crate::clock::BootInstant;
use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{LockError, LockKey, Redlock, Wait};
use crate::output::{Reporter, Tried};
use crate::signals::Listener;

/// Signals that interrupt a waiting `acquire`; what was taken is released.
const INTERRUPTS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

pub async fn run(
    redlock: &Redlock,
    key: &LockKey,
    ttl: Duration,
    wait: Wait,
    conflict_exit: u8,
    out: Reporter,
) -> Result<Exit, Error> {
    let mut interrupts = Listener::new(&INTERRUPTS)?;
    let started = BootInstant::now();
    let attempts = Cell::new(1);
    let on_retry = |attempt, err: &_| {
        attempts.set(attempt + 1);
        out.retrying(attempt, err);
    };
    let acquired =
        acquire_showing_progress(redlock, key, (ttl, wait), interrupts.recv(), out, on_retry).await;
    let lease = match acquired {
        Ok(Ok(lease)) => lease,
        Ok(Err(err)) => {
            let tried = Tried {
                attempts: attempts.get(),
                waited: started.elapsed(),
            };
            if matches!(err, LockError::Busy { .. }) && conflict_exit != Exit::Busy.code() {
                return Ok(busy(key, err, tried, conflict_exit, out));
            }
            return out.failed_after(key, err, tried);
        }
        Err(signal) => return Ok(out.interrupted(key, signal)),
    };
    if let Err(err) = out.acquired(&lease, redlock.len()) {
        // Nobody could ever release a lock whose token was lost.
        let _ = redlock.release(key, &lease.token).await;
        return Err(Error::internal(
            "could not print the token, so the lock was released",
            err,
        ));
    }
    // A stalled reader (a full pipe, Ctrl-S) can hold the write past the
    // validity: a token printed after that is no lock, so it is released and
    // the status says so.
    if lease.deadline <= BootInstant::now() {
        let _ = redlock.release(key, &lease.token).await;
        return Err(Error::Expired {
            key: key.clone(),
            validity: lease.validity(),
        });
    }
    Ok(Exit::Success)
}

/// `-E CODE`: the lock is busy, and the caller asked for CODE instead of 75.
/// As under `exec`, `-E 0` says nothing on stderr; `--json` still prints the
/// failure on stdout, and stdout has no token either way.
fn busy(key: &LockKey, err: LockError, tried: Tried, conflict_exit: u8, out: Reporter) -> Exit {
    if conflict_exit != 0 {
        out.outcome(&err.to_string());
    }
    let _ = out.failed_after::<()>(key, err, tried);
    Exit::Code(conflict_exit)
}
