//! `redlock list`: every lock on the servers, and who holds it, written a
//! batch at a time as it is read.

use super::ctx::Ctx;
use crate::config::ListJob;
use crate::error::Error;
use crate::lock::{ListQuery, Redlock};
use crate::outcome::Outcome;
use crate::output::Output;

pub fn run(ctx: &Ctx<'_>, job: ListJob) -> Result<Outcome, Error> {
    ctx.block_on(list(&ctx.redlock, job.query, job.names, ctx.output))?
}

/// `names`: only the names, one a line (`--names`), instead of the table.
async fn list(
    redlock: &Redlock,
    query: ListQuery,
    names: bool,
    output: &Output,
) -> Result<Outcome, Error> {
    let listing = redlock
        .list(query, &mut |batch| match names {
            true => output.listed_names(batch),
            false => output.listed(batch),
        })
        .await;
    Ok(Outcome::Listed(listing))
}
