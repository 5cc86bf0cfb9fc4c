//! `exec --cancel-in-progress` (issue 31): a newer superseding waiter asks
//! an older holder that opted in to stop. The waiter writes its request
//! beside the lock on every server where the lock still holds that
//! holder's token (cancel.lua); the holder reads it every [`POLL`] while
//! its command runs (cancelled.lua), stops the command, releases and exits
//! 81. The waiter takes the lock only through its normal attempts, once
//! the holder released it or it lapsed: asking never lets anyone take the
//! lock, so two holders are never possible by construction. A holder
//! without the flag never reads the request.

use std::time::Duration;

use super::core::redlock::Redlock;
use super::core::round::{round, Progress};
use super::core::servers::Connection;
use super::holder::Holder;
use super::key::{cancel_key, LockKey, Token};
use super::scripts::{AskCancel, Cancelled};
use super::supersede::{Supersede, Superseder};

/// How often a cancellable holder reads whether it was asked to stop: it
/// learns within a second, a round on every server included.
pub const POLL: Duration = Duration::from_millis(250);

/// How long a request to stop is kept: far longer than [`POLL`], so that
/// a holder that was slow to read still finds it; it names its holder's
/// token, so it never stops the next one.
const KEPT: Duration = Duration::from_secs(60);

/// Whether a waiter passing `mine` (`--cancel-in-progress`) asks `holder`
/// to stop: the holder opted in, and is older. By arrival a holder always
/// is (it took the lock before the waiter came, or stood ahead of it);
/// with serials on both, a higher serial is newer; a serial counts as
/// older than an arrival, as for superseding waiters.
pub fn cancels(mine: Supersede, holder: &Holder) -> bool {
    holder.cancellable
        && match (mine.serial, holder.serial) {
            (Some(mine), Some(theirs)) => mine > theirs,
            (Some(_), None) => false,
            (None, _) => true,
        }
}

impl Redlock {
    /// Asks the holder of `key` with `token` to stop, for the waiter `who`;
    /// returns on how many servers the lock still held that token.
    pub async fn ask_to_cancel(&self, key: &LockKey, token: &str, who: &Superseder) -> usize {
        let call = AskCancel {
            keys: [key.bytes().to_vec(), cancel_key(key)],
            token: token.to_owned(),
            who: who.encode(),
            keep_ms: u64::try_from(KEPT.as_millis()).unwrap_or(u64::MAX),
        };
        let request =
            move |mut connection: Connection| async move { connection.invoke(&call).await };
        let replies = round(&self.servers, request, |replies| match replies.pending() {
            0 => Progress::Settled,
            _ => Progress::Undecided,
        })
        .await;
        answers(&replies.answers).filter(|asked| **asked).count()
    }

    /// Who asked the holder of `key` with `token` to stop, if any server
    /// says one did: stopping is always safe, so one is enough.
    pub async fn cancelled(&self, key: &LockKey, token: &Token) -> Option<Superseder> {
        let call = Cancelled {
            key: cancel_key(key),
            token: token.as_str().to_owned(),
        };
        let request =
            move |mut connection: Connection| async move { connection.invoke(&call).await };
        let replies = round(&self.servers, request, |replies| {
            match answers(&replies.answers).any(Option::is_some) || replies.pending() == 0 {
                true => Progress::Settled,
                false => Progress::Undecided,
            }
        })
        .await;
        let who = answers(&replies.answers)
            .flatten()
            .find_map(|who| Superseder::decode(who));
        who
    }
}

/// The replies of the servers that answered.
fn answers<T>(
    answers: &[Option<Result<T, super::core::servers::ServerError>>],
) -> impl Iterator<Item = &T> {
    answers.iter().filter_map(|a| a.as_ref()?.as_ref().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_older_holder_that_opted_in_is_asked() {
        let holder = |cancellable, serial| Holder {
            cancellable,
            serial,
            ..Holder::default()
        };
        let by_arrival = Supersede { serial: None };
        let serial = |n| Supersede { serial: Some(n) };
        assert!(cancels(by_arrival, &holder(true, None)));
        assert!(!cancels(by_arrival, &holder(false, None)), "not opted in");
        assert!(cancels(serial(12), &holder(true, Some(11))));
        assert!(
            !cancels(serial(11), &holder(true, Some(12))),
            "newer holder"
        );
        assert!(!cancels(serial(12), &holder(true, Some(12))));
        assert!(!cancels(serial(12), &holder(true, None)));
    }
}
