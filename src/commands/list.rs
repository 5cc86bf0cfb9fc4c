//! `redlock list`: every lock on the servers, and who holds it.

use crate::error::Error;
use crate::lock::{ListQuery, Redlock};
use crate::outcome::Outcome;

pub async fn run(redlock: &Redlock, query: ListQuery) -> Result<Outcome, Error> {
    Ok(Outcome::Listed(redlock.list(query).await))
}
