//! What a run writes, in order, and the format (text or JSON) that decides
//! what stdout gets.

use std::io;

use crate::outcome::{Failed, Outcome};

/// How loud a line on stderr is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Under `-v` only.
    Verbose,
    /// An outcome a script expects (busy, a retry): silenced by `-q`.
    Expected,
    /// Something that went wrong: always said.
    Warning,
}

/// One part of what a run writes, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    Stdout(String),
    Stderr(Level, String),
}

/// What stdout gets: the text for people, or one JSON object.
pub trait Format {
    fn outcome(&self, outcome: &Outcome) -> io::Result<Option<String>>;
    fn failure(&self, failed: &Failed<'_>) -> io::Result<Option<String>>;
}
