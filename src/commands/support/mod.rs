//! What more than one command does around the lock call, and is no command
//! itself.

pub mod holder;
pub mod once;
pub mod waiting;
