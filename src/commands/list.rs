//! `redlock list`: every lock on the servers, and who holds it, written a
//! batch at a time as it is read.

use crate::error::Error;
use crate::lock::{ListQuery, Redlock};
use crate::outcome::Outcome;
use crate::output::Output;

pub async fn run(redlock: &Redlock, query: ListQuery, output: &Output) -> Result<Outcome, Error> {
    let listing = redlock.list(query, &mut |batch| output.listed(batch)).await;
    Ok(Outcome::Listed(listing))
}
