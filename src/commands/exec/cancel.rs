//! `exec --cancel-in-progress` (lock/cancel.rs): while it waits, `exec`
//! asks an older holder that opted in to stop; while it holds, it reads
//! whether a newer waiter asked it to, and then stops its command as for a
//! lost lock, releases, and exits 81.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::future::Future;

use crate::config::ExecSpec;
use crate::lock::{
    cancels, HeldBy, Holder, Lease, LockError, Redlock, Superseder, Take, CANCEL_POLL,
};

/// The holder that a waiting `exec --cancel-in-progress` asks to stop:
/// the token it last found holding the lock, if that holder opted in and
/// is older, and whether it was asked yet.
#[derive(Debug, Default)]
pub(super) struct ToCancel(RefCell<Option<(String, bool)>>);

impl ToCancel {
    /// Notes who holds the lock, from a failed attempt's `error`.
    pub(super) fn saw(&self, spec: &ExecSpec, error: &LockError) {
        let (true, Some(mine)) = (spec.cancel_in_progress, spec.supersede) else {
            return;
        };
        let LockError::Busy {
            held_by: Some(held_by),
            ..
        } = error
        else {
            return;
        };
        let HeldBy::Redlock(recorded) = held_by.as_ref() else {
            return;
        };
        let holder = &recorded.holder;
        let mut to_cancel = self.0.borrow_mut();
        let known = to_cancel.as_ref().is_some_and(|(t, _)| *t == holder.token);
        if cancels(mine, holder) && !known {
            *to_cancel = Some((holder.token.clone(), false));
        }
    }

    /// The token to ask about now, once each.
    fn next(&self) -> Option<String> {
        let mut to_cancel = self.0.borrow_mut();
        match to_cancel.as_mut() {
            Some((token, asked @ false)) => {
                *asked = true;
                Some(token.clone())
            }
            _ => None,
        }
    }
}

/// Asks each older cancellable holder found while waiting to stop, once,
/// as [`ToCancel`] learns of it; never ends (the wait ends it).
pub(super) async fn ask_while_waiting(
    redlock: &Redlock,
    request: &Take,
    to_cancel: &ToCancel,
) -> Infallible {
    let who = request
        .supersede
        .map(|supersede| Superseder::waiter(request.record.as_ref(), supersede));
    loop {
        if let (Some(token), Some(who)) = (to_cancel.next(), &who) {
            redlock.ask_to_cancel(request.name(), &token, who).await;
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// `lost`, or with `--cancel-in-progress` also a newer waiter's request
/// that this run stop: then `cancelled` says who asked.
pub(super) async fn lost_or_cancelled(
    lost: impl Future<Output = ()>,
    watch: Option<(&Redlock, &Lease)>,
    cancelled: &Cell<Option<Superseder>>,
) {
    let Some((redlock, lease)) = watch else {
        return lost.await;
    };
    let asked = async {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            if let Some(by) = redlock.cancelled(&lease.key, &lease.token).await {
                if crate::test_hooks::release_on_cancel() {
                    let _ = redlock.release_own(&lease.key, &lease.token, false).await;
                }
                return by;
            }
        }
    };
    tokio::select! {
        () = lost => {}
        by = asked => cancelled.set(Some(by)),
    }
}

/// What the record says of a holder that a newer waiter may cancel.
pub(super) fn opted_in(spec: &ExecSpec, holder: Holder) -> Holder {
    Holder {
        cancellable: spec.cancel_in_progress,
        serial: spec.supersede.and_then(|s| s.serial),
        ..holder
    }
}
