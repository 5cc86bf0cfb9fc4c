//! The test hooks, all of them: environment variables `REDLOCK_TEST_*` that
//! the tests set to slow, stop or fail the program at a point that matters,
//! which no option reaches. One function per hook, named after its
//! variable; each says what it does and which tests set it.
//!
//! Only debug builds read them (`cfg!(debug_assertions)`, the build that
//! `cargo test` runs): in a release build every function here is a
//! constant "not set", and the variables do nothing. A new hook goes here
//! too, under a name that starts with `REDLOCK_TEST_` (the man pages' list
//! of variables leaves those out, tests/cli/generated.rs).
//!
//! (`REDLOCK_TEST_MODEL_LONG`, read by the model checks in tests/models/, is
//! a switch of those tests, not a hook of the program.)

use std::time::Duration;

/// The variable `name` as a whole number, read by a debug build only;
/// `None` when it is not set or not a number.
fn number(name: &str) -> Option<u64> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var(name).ok()?.parse().ok()
}

/// The variable `name` as milliseconds (see [`number`]).
fn millis(name: &str) -> Option<Duration> {
    number(name).map(Duration::from_millis)
}

/// `REDLOCK_TEST_POLL_DELAY_MS`: the pause between a waiter's attempts,
/// fixed instead of random and short (lock/retry.rs), so that a test tells
/// a wake-up from a poll, or keeps waiters in line without coming back.
/// Set by tests/cli/wakeup.rs, `queue::a_waiter_keeps_its_place_where_its_attempt_won`,
/// `semaphore::a_waiter_stands_in_every_line_and_is_woken_by_the_release_of_any_slot`,
/// `shared::the_readers_at_the_head_of_the_line_enter_together`,
/// `server_errors::the_documented_least_privileged_user_can_run_every_command`,
/// `supersede::an_older_waiter_that_polls_rarely_is_woken_when_superseded`
/// and tests/cli/server_work.rs.
pub fn poll_delay() -> Option<Duration> {
    millis("REDLOCK_TEST_POLL_DELAY_MS")
}

/// `REDLOCK_TEST_LINGER_MS`: how long a ticket stays in line after its
/// waiter's last attempt, instead of `queue::LINGER` (lock/queue.rs): with
/// a long linger and a long poll, waiters stand in line without coming
/// back, and a test counts what a release alone makes the servers do; the
/// line then also keeps a free lock from callers that long (acquire.lua).
/// Set by `queue::a_waiter_goes_past_a_line_split_between_servers_at_once`,
/// `queue::a_waiter_in_line_says_it_waits_its_turn`,
/// `supersede::an_older_waiter_that_polls_rarely_is_woken_when_superseded` and
/// `server_work::a_hand_off_among_eight_waiters_costs_each_server_two_script_calls`.
pub fn linger() -> Option<Duration> {
    millis("REDLOCK_TEST_LINGER_MS")
}

/// `REDLOCK_TEST_STOP_BEFORE_FENCE` (any value): stops this process with
/// SIGSTOP between the acquire round and the fencing round (lock/fence.rs),
/// so that a test faults the servers at exactly that point and then
/// continues it with SIGCONT. Set by
/// `fence::a_fence_that_cannot_reach_a_majority_releases_the_lock_and_exits_69`.
pub fn stop_before_fence() {
    if cfg!(debug_assertions) && std::env::var_os("REDLOCK_TEST_STOP_BEFORE_FENCE").is_some() {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
}

/// `REDLOCK_TEST_STOP_BEFORE_DONE_MARK` (any value): `redlock done` stops
/// itself with SIGSTOP after it read the lock and before the mark's first
/// round (commands/done.rs), so that a test stops servers at exactly that
/// point and then continues it with SIGCONT. Set by
/// `once::done_retries_a_mark_that_misses_a_majority_while_the_lock_holds`.
pub fn stop_before_done_mark() {
    if cfg!(debug_assertions) && std::env::var_os("REDLOCK_TEST_STOP_BEFORE_DONE_MARK").is_some() {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
    }
}

/// `REDLOCK_TEST_LIST_DEADLINE_MS`: the longest a listing may take, lower
/// than a minute (lock/listing.rs). Set by
/// `hostile::list_gives_up_on_a_scan_cursor_that_never_ends`.
pub fn list_deadline() -> Option<Duration> {
    millis("REDLOCK_TEST_LIST_DEADLINE_MS")
}

/// `REDLOCK_TEST_LIST_MOST_KEYS`: the most keys one server's SCAN may
/// return, lower than two million (lock/listing.rs). Set by
/// `hostile::list_refuses_a_scan_that_never_stops_sending_keys`.
pub fn list_most_keys() -> Option<usize> {
    number("REDLOCK_TEST_LIST_MOST_KEYS").and_then(|n| usize::try_from(n).ok())
}

/// `REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS`: `exec` sleeps this long after
/// taking the lock and before spawning its command (supervise/mod.rs), as
/// a process frozen there would. Set by
/// `faults::a_command_is_not_started_once_the_stop_time_has_passed`,
/// `takeover::an_exec_killed_before_its_command_started_is_taken_over_within_a_second`
/// and the torture harness (tests/torture/clients.rs).
pub fn pause_before_spawn() {
    if let Some(pause) = millis("REDLOCK_TEST_PAUSE_BEFORE_SPAWN_MS") {
        std::thread::sleep(pause);
    }
}

/// `REDLOCK_TEST_SKIP_MARK_DONE` (any value): `exec --once-per` and
/// `--once` write no done mark after a command that exited 0
/// (commands/exec.rs), as a build without the mark would: every caller of
/// the period runs the command again. Set by the torture harness's control
/// `once-per-unmarked` (tests/torture/scenarios.rs), which must see a
/// period run twice, or its judge is not to be trusted.
pub fn skip_mark_done() -> bool {
    cfg!(debug_assertions) && std::env::var_os("REDLOCK_TEST_SKIP_MARK_DONE").is_some()
}

/// `REDLOCK_TEST_RELEASE_ON_CANCEL` (any value): a holder of `exec
/// --cancel-in-progress` that a newer waiter asks to stop releases the lock
/// at once, before its command has stopped (commands/exec/cancel.rs), as a
/// build that gave the lock up early would: the newer one enters beside a
/// command still running. Set by the torture harness's control
/// `cancel-in-progress-early-release` (tests/torture/scenarios.rs), which
/// must see that overlap.
pub fn release_on_cancel() -> bool {
    cfg!(debug_assertions) && std::env::var_os("REDLOCK_TEST_RELEASE_ON_CANCEL").is_some()
}

/// `REDLOCK_TEST_PAUSE_IN_CHILD_MS`: how long the command's process
/// pauses between fork and exec, before anyone knows its group
/// (supervise/child.rs). Set by
/// `faults::a_command_frozen_between_fork_and_exec_is_not_started`.
pub fn pause_in_child() -> Option<Duration> {
    millis("REDLOCK_TEST_PAUSE_IN_CHILD_MS")
}

/// `REDLOCK_TEST_THREAD_KEEP_ALIVE_MS`: how long the runtime keeps an idle
/// blocking thread, shorter than tokio's 10 s (supervise/child.rs), so
/// that a test sees a child outlive the thread it was spawned from. Set by
/// `exec::a_child_outlives_the_first_ten_seconds`.
pub fn thread_keep_alive() -> Option<Duration> {
    millis("REDLOCK_TEST_THREAD_KEEP_ALIVE_MS")
}

/// `REDLOCK_TEST_WATCHDOG_EARLY_MS`: `exec`'s watchdog acts this much
/// before the supervisor's schedule (supervise/watchdog.rs), as a watchdog
/// does that wins the race to the stop time. Set by
/// `exec::extensions_failing_while_exec_runs_are_said_as_such_not_as_a_freeze`.
pub fn watchdog_early() -> Option<Duration> {
    millis("REDLOCK_TEST_WATCHDOG_EARLY_MS")
}

/// `REDLOCK_TEST_PROGRESS_EVERY_MS`: how often a wait writes a progress
/// line to a pipe, instead of every 10 s (output/progress.rs). Set by
/// `progress::the_pipe_gets_a_line_every_interval` and
/// `queue::a_waiter_in_line_says_it_waits_its_turn`.
pub fn progress_every() -> Option<Duration> {
    millis("REDLOCK_TEST_PROGRESS_EVERY_MS")
}

/// `REDLOCK_TEST_KEEPER_FAILS` (a number, e.g. 1): the keeper of
/// `acquire --while` fails instead of taking over (keeper/mod.rs), so
/// that a test sees `acquire` print no token and release the lock. Set by
/// `keeper::no_token_is_printed_when_the_keeper_cannot_take_over`.
pub fn keeper_fails() -> bool {
    number("REDLOCK_TEST_KEEPER_FAILS").is_some()
}

/// `REDLOCK_TEST_ONCE_MARGIN_MS`: the least a period's done mark outlives
/// its period by, instead of a minute (lock/done_mark.rs), so that a test
/// sees a job outlast its period's end and margin in seconds. Set by
/// `once::a_run_that_ends_after_its_periods_margin_still_leaves_its_mark`.
pub fn once_margin() -> Option<Duration> {
    millis("REDLOCK_TEST_ONCE_MARGIN_MS")
}

/// `REDLOCK_TEST_BROKEN_PIPE_ON_FIRST_REQUEST` (any value): the first
/// request on every new connection fails with a broken pipe, as it does
/// when a TLS 1.3 server that requires a client certificate closes while
/// it is written (lock/core/servers.rs), so that a test sees the probe that
/// follows hear the server's alert. Set by
/// `server_errors::a_broken_pipe_from_a_server_that_wants_a_client_certificate_is_a_refusal`.
pub fn broken_pipe_on_first_request() -> bool {
    cfg!(debug_assertions)
        && std::env::var_os("REDLOCK_TEST_BROKEN_PIPE_ON_FIRST_REQUEST").is_some()
}
