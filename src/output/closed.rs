//! Whether stdout was closed when the process started (`redlock acquire
//! NAME >&-`). Rust's runtime puts /dev/null on a closed stdin, stdout or
//! stderr before `main`, so that every later write "succeeds": a token
//! printed then would reach nobody. A constructor, which runs before the
//! runtime does that, looks first.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Run by the C runtime before `main` and before Rust's own start-up.
extern "C" fn look_at_stdout() {
    // SAFETY: F_GETFD reads a descriptor's flags and changes nothing.
    let closed = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1;
    STDOUT_CLOSED.store(closed, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static LOOK_AT_STDOUT: extern "C" fn() = look_at_stdout;

/// stdout was closed when the process started: what is written to it now
/// goes to /dev/null.
pub fn stdout_was_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}
