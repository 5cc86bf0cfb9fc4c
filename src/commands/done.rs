//! `redlock done`: mark the run of `acquire --once-per` or `--once` done,
//! while TOKEN still holds the lock, so that later runs in its period (or
//! for its key) are done already. The run is the one `acquire` recorded
//! beside the lock; the mark names the holder that took it.

use super::ctx::Ctx;
use crate::config::DoneJob;
use crate::error::Error;
use crate::lock::{LockKey, OnceHeld, Redlock, Token};
use crate::outcome::Outcome;

pub fn run(ctx: &Ctx<'_>, job: DoneJob) -> Result<Outcome, Error> {
    ctx.block_on(done(&ctx.redlock, &job.key, &job.token))?
}

async fn done(redlock: &Redlock, key: &LockKey, token: &Token) -> Result<Outcome, Error> {
    let Some(OnceHeld { run, holder, until }) = redlock.once_of(key, token).await? else {
        return Err(Error::Usage(format!(
            "{key} was not taken with --once-per or --once, so there is no run to mark done: \
             take it with `redlock acquire --once-per DUR` (or --once KEY)"
        )));
    };
    crate::test_hooks::stop_before_done_mark();
    // Retried while the lock holds, as the servers' PTTLs said.
    let marked = redlock
        .mark_done((key, token), &run, (0, Some(&holder)), until)
        .await?;
    Ok(Outcome::MarkedDone {
        key: key.clone(),
        id: run.id,
        marked,
    })
}
