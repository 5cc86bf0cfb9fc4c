//! Exhaustive model checks of two constructions of the protocol, over
//! explicit states and without servers: the fencing tokens
//! (src/lock/fence.rs), and the line of waiters across servers that
//! disagree (src/lock/line.rs), with its superseding waiters
//! (src/lock/supersede.rs). Each model is a self-contained description
//! of its construction, not the code itself; each has a negative control
//! that the checker must catch. docs/safety.md says what they show.
//!
//! `REDLOCK_TEST_MODEL_LONG=1` adds the fence model's larger settings
//! (minutes in a debug build). Run them alone with `cargo test --test models`.

#[path = "models/fence.rs"]
mod fence;
#[path = "models/line.rs"]
mod line;
