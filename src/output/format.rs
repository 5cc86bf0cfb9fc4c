//! The one trait behind every byte a run writes: [`Format`], with one
//! implementation per format (`text::Text`, `json::Json`), chosen once
//! from the options. A format says what stdout gets (and, for `list`'s
//! end, what takes stdout's place), as [`Piece`]s; `Output` writes them,
//! with the words each outcome says on stderr, in order.

use std::io;

use crate::lock::Listing;
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
    /// A line on stdout.
    Stdout(String),
    /// Part of a line on stdout, written as it is (`list --json`'s object,
    /// a batch at a time).
    Partial(String),
    Stderr(Level, String),
}

/// How far `list`'s stdout has got while it is written in batches: whether
/// its header (or the JSON object's opening) and a lock are out, and the
/// table's column widths.
#[derive(Debug, Default)]
pub struct SoFar {
    pub opened: bool,
    pub any: bool,
    pub widths: [usize; 4],
}

/// What stdout gets, and what the format alone decides: the text for
/// people, or one JSON object.
pub trait Format {
    /// An outcome's part on stdout (`list`'s is written as it is read).
    fn outcome(&self, outcome: &Outcome) -> io::Result<Option<String>>;

    /// A failure's part on stdout.
    fn failure(&self, failed: &Failed<'_>) -> io::Result<Option<String>>;

    /// One batch of `list`'s locks, as soon as it is read; `so_far` is
    /// what the batches before wrote.
    fn list_batch(&self, batch: &Listing, so_far: &mut SoFar) -> io::Result<Vec<Piece>>;

    /// What ends `list`'s stdout after the batches: the JSON object's end,
    /// or in text, that nothing matched.
    fn list_end(&self, listing: &Listing, so_far: &SoFar) -> io::Result<Option<Piece>>;

    /// Whether every server's answer is shown (`held_on`, `released_on`
    /// in JSON; the servers under `-v`), which may cost a moment's wait.
    fn shows_every_answer(&self) -> bool;
}
