//! `redlock exec`: run a command only while holding the lock, keep extending
//! the lock while it runs, and stop the command before the lock can lapse.
//!
//! Three parties keep the child inside the lock's validity:
//! - the keeper (a future on the supervisor's runtime) extends the lock every
//!   TTL/3 and publishes each new deadline;
//! - the supervisor stops the child when a loss is *seen* (a majority says
//!   the token is gone) and, independently, on a schedule against the
//!   deadline ([`StopPlan`]), even while extensions are still being retried;
//! - the watchdog process enforces the same schedule when the supervisor is
//!   frozen or dead.

mod child;
mod terminal;
mod watchdog;

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::sync::watch;

use crate::commands::acquire_unless_interrupted;
use crate::config::Output;
use crate::exit_code::Exit;
use crate::lock::{BootInstant, Lease, LockError, LockKey, Redlock, Verdict, Wait};
use crate::output::{human, note};
use crate::signals::{Latest, Listener};
use child::Group;
use terminal::{Owner, Terminal};
use watchdog::Watchdog;

pub use watchdog::{run as watchdog_main, ACTED as WATCHDOG_ACTED};

/// A validated `redlock exec` invocation.
#[derive(Debug)]
pub struct ExecSpec {
    pub key: LockKey,
    /// The name as given or derived, exported to the child as REDLOCK_NAME.
    pub name: OsString,
    pub derived_name: bool,
    pub ttl: Duration,
    pub wait: Wait,
    pub conflict_exit: u8,
    pub stop: StopPlan,
    pub signal: Signal,
    pub argv: Vec<OsString>,
}

/// When the child is stopped, relative to the lock's validity deadline: the
/// stop signal `grace + margin` before it, SIGKILL `margin` before it, so
/// that the child and its group are gone before the lock can lapse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopPlan {
    /// Time between the stop signal and SIGKILL: `-k`, capped at TTL/3 so
    /// that a successful extension every TTL/3 always comes first.
    pub grace: Duration,
    /// How long before the deadline SIGKILL is sent: TTL/20, within 5–200ms.
    pub margin: Duration,
}

impl StopPlan {
    pub fn new(ttl: Duration, kill_after: Duration) -> Self {
        // Whole milliseconds, the unit the watchdog receives them in, so
        // that both processes follow exactly the same schedule.
        let whole_ms =
            |d: Duration| Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        StopPlan {
            grace: whole_ms(kill_after.min(ttl / 3)),
            margin: whole_ms(
                (ttl / 20).clamp(Duration::from_millis(5), Duration::from_millis(200)),
            ),
        }
    }

    pub fn term_at(self, deadline: BootInstant) -> BootInstant {
        deadline - self.margin - self.grace
    }

    pub fn kill_at(self, deadline: BootInstant) -> BootInstant {
        deadline - self.margin
    }
}

/// The longest the supervisor sleeps before it looks at the boot clock again
/// (tokio's timers do not count time spent suspended).
const CLOCK_CHECK: Duration = Duration::from_millis(50);

/// How often processes left behind by the command are checked for being
/// stopped on the terminal (a /proc scan each time).
const ORPHAN_CHECK: Duration = Duration::from_secs(1);

/// Signals sent to `redlock exec` that are passed on to the child.
const FORWARDED: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

pub async fn run(redlock: &Redlock, spec: ExecSpec, out: Output) -> anyhow::Result<Exit> {
    if out.verbose && spec.derived_name {
        note(&format!("lock name derived from the command: {}", spec.key));
    }
    if let Some(exit) = run_nested(redlock, &spec, out).await? {
        return Ok(exit);
    }
    // Listen from the start: a signal during the wait releases what was
    // taken; one that comes right after the lock was taken is passed on to
    // the command instead of being lost.
    let mut signals = Listener::new(&FORWARDED)?;
    let acquired = match acquire_unless_interrupted(
        redlock,
        &spec.key,
        spec.ttl,
        spec.wait,
        &mut signals,
        out,
    )
    .await
    {
        Ok(acquired) => acquired,
        Err(signal) => return Ok(Exit::Signal(signal as i32)),
    };
    let lease = match acquired {
        Ok(lease) => lease,
        Err(err @ LockError::Busy { .. }) => {
            // `-E 0` is the cron idiom "skip quietly": no message either.
            if !out.quiet && spec.conflict_exit != 0 {
                note(&err.to_string());
            }
            return Ok(Exit::Code(spec.conflict_exit));
        }
        Err(err) => return Err(err.into()),
    };
    if out.verbose {
        note(&format!(
            "acquired {} on {} of {} servers; valid for {}",
            spec.key,
            lease.held_on.len(),
            redlock.len(),
            human(lease.validity)
        ));
    }
    let exit = supervise(redlock, &spec, &lease, &mut signals, out).await;
    match redlock.release(&spec.key, &lease.token).await {
        Ok(_) if out.verbose => note(&format!("released {}", spec.key)),
        Ok(_) => {}
        // After a loss the release only tidies up; after a normal end the
        // child's status matters more than a lock that lapsed at the very end.
        Err(err) if !out.quiet && !matches!(exit, Ok(Exit::Lost)) => {
            note(&format!("release after the command ended: {err}"));
        }
        Err(_) => {}
    }
    exit
}

/// A `redlock exec` inside the command of another one for the same lock
/// (REDLOCK_NAME and REDLOCK_TOKEN set, and that token holds a majority) runs
/// its command in place instead of waiting for itself forever: the outer
/// exec already holds and extends the lock.
async fn run_nested(
    redlock: &Redlock,
    spec: &ExecSpec,
    out: Output,
) -> anyhow::Result<Option<Exit>> {
    let (Some(name), Some(token)) = (
        std::env::var_os("REDLOCK_NAME"),
        std::env::var_os("REDLOCK_TOKEN"),
    ) else {
        return Ok(None);
    };
    if name != spec.name || token.is_empty() {
        return Ok(None);
    }
    let inspection = redlock.inspect(&spec.key).await;
    match inspection.verdict() {
        Verdict::Held { value, .. } if value == token.as_bytes() => {
            if out.verbose {
                note(&format!(
                    "{} is already held by the enclosing redlock exec; running the command under it",
                    spec.key
                ));
            }
            let err = child::exec_in_place(&spec.argv);
            note(&format!("cannot run {}: {err}", shown(&spec.argv)));
            Ok(Some(child::exit_for_spawn_error(&err)))
        }
        // A stale or foreign REDLOCK_TOKEN: take the lock as usual.
        Verdict::Held { .. } | Verdict::Free => Ok(None),
        // Waiting for the lock could mean waiting for ourselves forever.
        Verdict::Unknown => Err(inspection.no_quorum().into()),
    }
}

/// Why the child had to be stopped, and when SIGKILL follows the signal.
struct Loss {
    reason: String,
    kill_at: BootInstant,
}

/// Runs the child under the lease until it and the processes it left in its
/// group have ended; returns its status, or `Exit::Lost` when the lock was
/// lost while they ran.
async fn supervise(
    redlock: &Redlock,
    spec: &ExecSpec,
    lease: &Lease,
    signals: &mut Listener,
    out: Output,
) -> anyhow::Result<Exit> {
    let terminal = Terminal::open();
    // From here on SIGTSTP no longer stops exec alone (see `suspend_job`),
    // and SIGCONT is passed on.
    let mut job_signals = Latest::new(&[Signal::SIGTSTP, Signal::SIGCONT])?;
    child::adopt_orphans();
    let mut watchdog = Watchdog::spawn(spec.signal, spec.stop)
        .map_err(|err| anyhow::anyhow!("cannot start the watchdog process: {err}"))?;
    let token = OsString::from(lease.token.as_str());
    let env = [("REDLOCK_NAME", &spec.name), ("REDLOCK_TOKEN", &token)];
    let exclusive_terminal = terminal.as_ref().is_some_and(Terminal::exclusive);
    // The deadline goes first and the command announces its group itself,
    // so that the watchdog is never without either once the command runs.
    // Without a watchdog the command does not start (the lock is released).
    const NO_WATCHDOG: &str = "the watchdog process is gone; not starting the command without it";
    watchdog.deadline(lease.deadline).context(NO_WATCHDOG)?;
    let spawned = watchdog
        .pipe()
        .and_then(|pipe| child::spawn(&spec.argv, &env, exclusive_terminal, pipe));
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            watchdog.done();
            return Err(err).context(NO_WATCHDOG);
        }
        Err(err) => {
            if let Some(terminal) = &terminal {
                // The child may have taken the terminal before exec failed.
                terminal.take_back(None, false);
            }
            watchdog.done();
            note(&format!("cannot run {}: {err}", shown(&spec.argv)));
            return Ok(child::exit_for_spawn_error(&err));
        }
    };
    // A spawned child keeps its pid until it is reaped, which only we do.
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        let _ = child.start_kill();
        watchdog.done();
        anyhow::bail!("the command started without a process id");
    };
    let group = Group(pid);
    if let (Some(terminal), true) = (&terminal, exclusive_terminal) {
        // The child does this too; whichever comes first wins the race.
        terminal.give_to(group);
    }
    let mut watchdog_alive = true;
    let (deadlines, mut new_deadline) = watch::channel(lease.deadline);
    let keeper = keep(redlock, lease, deadlines, out);
    tokio::pin!(keeper);
    let plan = spec.stop;
    let mut loss: Option<Loss> = None;
    let mut killed_at: Option<BootInstant> = None;
    // The command's own status, once it has exited. We go on holding the
    // lock until the processes it left in its group have ended too.
    let mut exited: Option<std::process::ExitStatus> = None;
    let mut next_orphan_check = BootInstant::now();
    // How many times each leftover was found stopped on the terminal.
    let mut stops_seen: HashMap<Pid, usize> = HashMap::new();
    let status = loop {
        let deadline = *new_deadline.borrow();
        let now = BootInstant::now();
        if let Some(status) = exited {
            group.reap_adopted();
            // What the command left behind is no job of the shell's: one
            // that stops on the terminal would hold the lock for good. Treat
            // it as the kernel treats an orphaned group: SIGHUP, SIGCONT.
            if terminal.is_some() && now >= next_orphan_check {
                next_orphan_check = now + ORPHAN_CHECK;
                stop_stopped_leftovers(group, spec.signal, &mut stops_seen, out);
            }
            let unkillable =
                killed_at.is_some_and(|at| now.saturating_since(at) > Duration::from_secs(1));
            if group.is_gone() || unkillable {
                break status;
            }
        } else if let Some(terminal) = &terminal {
            if terminal::is_stopped(group) {
                match terminal.owner(group) {
                    // It needs the terminal (a prompt), or `fg` continued
                    // us after a Ctrl-Z: the command gets it and goes on.
                    Owner::Us => {
                        terminal.give_to(group);
                        group.signal(Signal::SIGCONT);
                    }
                    // Ctrl-Z. suspend_with always ends with the command
                    // continued, so a command seen stopped here again has
                    // been stopped again, however soon after.
                    Owner::Command => terminal.suspend_with(group),
                    // A background job waiting for the shell's `fg`.
                    _ => {}
                }
            } else if terminal.exclusive() && terminal.owner(group) == Owner::Us {
                terminal.give_to(group);
            }
        }
        if loss.is_none() && now >= plan.term_at(deadline) {
            let reason = if now >= plan.kill_at(deadline) {
                // We were frozen or suspended past the point of stopping.
                "ran out of validity while redlock itself was not running".to_owned()
            } else {
                format!(
                    "could not be extended in time; its validity ends in {}",
                    human(deadline.saturating_since(now))
                )
            };
            loss = Some(Loss {
                reason,
                kill_at: plan.kill_at(deadline),
            });
            stop(group, spec.signal);
        }
        if let Some(loss) = &loss {
            if killed_at.is_none() && now >= loss.kill_at {
                group.signal(Signal::SIGKILL);
                killed_at = Some(now);
            }
        }
        let next_step = match &loss {
            None => plan.term_at(deadline),
            Some(loss) if killed_at.is_none() => loss.kill_at,
            Some(_) => now + CLOCK_CHECK,
        };
        let nap = next_step.saturating_since(now).min(CLOCK_CHECK);
        tokio::select! {
            status = child.wait(), if exited.is_none() => match status {
                Ok(status) => {
                    exited = Some(status);
                    // What the command left behind runs on in the
                    // background; the terminal goes back to our job.
                    if let Some(terminal) = &terminal {
                        terminal.take_back(Some(group), status.signal().is_some());
                    }
                    if !group.is_gone() && out.verbose {
                        note("the command exited; holding the lock until the processes it left behind end");
                    }
                }
                Err(err) => {
                    group.signal(Signal::SIGKILL);
                    if let Some(terminal) = &terminal {
                        terminal.take_back(Some(group), true);
                    }
                    watchdog.done();
                    return Err(anyhow::Error::from(err).context("waiting for the command"));
                }
            },
            lost = &mut keeper, if loss.is_none() => {
                loss = Some(Loss {
                    reason: format!("was lost ({lost})"),
                    kill_at: (BootInstant::now() + plan.grace).min(plan.kill_at(deadline)),
                });
                stop(group, spec.signal);
            }
            Ok(()) = new_deadline.changed() => {
                let sent = watchdog.deadline(*new_deadline.borrow_and_update());
                if sent.is_err() && watchdog_alive {
                    watchdog_alive = false;
                    note("the watchdog process is gone; a frozen redlock could not stop the command in time");
                }
            }
            signal = job_signals.recv() => match signal {
                Signal::SIGTSTP => suspend_job(group, terminal.as_ref(), exited.is_none()),
                _ => group.signal(Signal::SIGCONT),
            },
            signal = signals.recv() => {
                group.signal(signal);
                // A stopped command would keep these pending forever.
                if matches!(signal, Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT) {
                    group.signal(Signal::SIGCONT);
                }
            }
            () = tokio::time::sleep(nap) => {}
        }
    };
    if let Some(terminal) = &terminal {
        terminal.take_back(Some(group), loss.is_some() || status.signal().is_some());
    }
    let watchdog_acted = watchdog.done();
    // The watchdog acts only when we did not in time: when we were frozen,
    // or woke up right at the deadline.
    if loss.is_none()
        && (watchdog_acted || BootInstant::now() >= plan.term_at(*new_deadline.borrow()))
    {
        loss = Some(Loss {
            reason: "ran out of validity while redlock itself was not running".into(),
            kill_at: BootInstant::now(),
        });
    }
    match loss {
        Some(loss) => {
            note(&format!(
                "lock {} {}; the command was stopped",
                spec.key, loss.reason
            ));
            Ok(Exit::Lost)
        }
        None => Ok(child::exit_for(status)),
    }
}

/// SIGTSTP reached exec itself: a Ctrl-Z while exec's job had the terminal
/// (a script or pipeline around exec, or the moment before the command got
/// the terminal), or `kill -TSTP`. The command is stopped as if it had got
/// it itself.
///
/// - On a terminal under a job-control shell, we stop too, so that the shell
///   sees the job stopped and takes the terminal; `fg` or `bg` continue us,
///   and we continue the command (in the foreground if it is ours to have).
/// - Without a terminal nobody waits for us to stop: we stay up, holding
///   and extending the lock, until SIGCONT to us continues the command.
///   Stopping ourselves there would race with that SIGCONT.
/// - On a terminal without job control (an orphaned group), it is ignored,
///   as the kernel ignores a Ctrl-Z for an orphaned group: nobody could
///   continue us.
fn suspend_job(group: Group, terminal: Option<&Terminal>, command_running: bool) {
    match terminal {
        None => group.signal(Signal::SIGTSTP),
        Some(terminal) if terminal::job_control() => {
            group.signal(Signal::SIGTSTP);
            let _ = nix::sys::signal::raise(Signal::SIGSTOP);
            // What the command left behind after it exited stays in the
            // background.
            if command_running && terminal.exclusive() {
                terminal.give_to(group);
            }
            group.signal(Signal::SIGCONT);
        }
        Some(_) => {}
    }
}

/// Ends the stops of processes left in `group` on the terminal. A process
/// newly found stopped makes the whole group get SIGHUP and SIGCONT, as the
/// kernel does when an orphaned group has a stopped member. One found
/// stopped again (it ignores SIGHUP, under nohup) gets `signal`, then
/// SIGKILL at the next look: the kernel would make its reads fail instead,
/// which we cannot do for a group whose parent we are. Others, which never
/// stopped, are left alone.
fn stop_stopped_leftovers(
    group: Group,
    signal: Signal,
    stops_seen: &mut HashMap<Pid, usize>,
    out: Output,
) {
    let mut hang_up = false;
    for pid in terminal::stopped_members(group) {
        let seen = stops_seen.entry(pid).or_default();
        *seen += 1;
        let escalation = match *seen {
            1 => {
                hang_up = true;
                continue;
            }
            2 => signal,
            _ => Signal::SIGKILL,
        };
        if !out.quiet {
            note(&format!(
                "process {pid}, left behind by the command, stopped on the terminal again: sending it {}",
                escalation.as_str()
            ));
        }
        let _ = kill(pid, escalation);
        let _ = kill(pid, Signal::SIGCONT);
    }
    if hang_up {
        group.signal(Signal::SIGHUP);
        group.signal(Signal::SIGCONT);
    }
}

/// Sends the stop `signal`, then SIGCONT, so that stopped processes (Ctrl-Z,
/// a background read from the terminal) wake up to handle it.
fn stop(group: Group, signal: Signal) {
    group.signal(signal);
    if signal != Signal::SIGCONT {
        group.signal(Signal::SIGCONT);
    }
}

/// Extends the lease every TTL/3 and publishes each new deadline; retries a
/// failed extension after a short pause. Returns only when a majority says
/// the token is gone.
async fn keep(
    redlock: &Redlock,
    lease: &Lease,
    deadlines: watch::Sender<BootInstant>,
    out: Output,
) -> LockError {
    let interval = lease.ttl / 3;
    let retry = (lease.ttl / 20).clamp(Duration::from_millis(10), Duration::from_millis(250));
    let mut pause = interval;
    loop {
        tokio::time::sleep(pause).await;
        match redlock.extend(&lease.key, &lease.token, lease.ttl).await {
            Ok(extended) => {
                deadlines.send_replace(extended.deadline);
                pause = interval;
            }
            Err(err @ LockError::NotHeld { .. }) => return err,
            Err(err) => {
                if !out.quiet {
                    note(&format!("extending failed, retrying: {err}"));
                }
                pause = retry;
            }
        }
    }
}

/// The command line for messages, each word escaped.
fn shown(argv: &[OsString]) -> String {
    argv.iter()
        .map(|word| crate::lock::escape_bytes(word.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lock name used when none is given: `exec:` and the command line, each
/// word shell-quoted where needed, so that the same command on any host
/// contends for the same lock.
pub fn derived_name(argv: &[OsString]) -> OsString {
    let words: Vec<Vec<u8>> = argv
        .iter()
        .map(|word| shell_quote(word.as_bytes()))
        .collect();
    let mut name = b"exec:".to_vec();
    name.extend(words.join(&b' '));
    std::os::unix::ffi::OsStringExt::from_vec(name)
}

fn shell_quote(word: &[u8]) -> Vec<u8> {
    let plain = |b: &u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(b);
    if !word.is_empty() && word.iter().all(plain) {
        return word.to_vec();
    }
    let mut quoted = vec![b'\''];
    for &b in word {
        if b == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(b);
        }
    }
    quoted.push(b'\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn stop_plan_lands_the_kill_before_the_deadline() {
        let plan = StopPlan::new(MS(30_000), MS(5_000));
        assert_eq!(
            plan,
            StopPlan {
                grace: MS(5_000),
                margin: MS(200)
            }
        );
        let short = StopPlan::new(MS(1_000), MS(5_000));
        assert_eq!(
            short,
            StopPlan {
                grace: MS(333),
                margin: MS(50)
            }
        );
        let deadline = BootInstant::from_nanos(10_000_000_000);
        assert_eq!(
            short.kill_at(deadline),
            BootInstant::from_nanos(9_950_000_000)
        );
        assert_eq!(
            short.term_at(deadline),
            BootInstant::from_nanos(10_000_000_000 - 50_000_000 - 333_000_000)
        );
        assert_eq!(StopPlan::new(MS(20), MS(0)).margin, MS(5));
    }

    #[test]
    fn derived_names_are_stable_and_readable() {
        let argv = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(derived_name(&argv(&["cron-job.sh"])), "exec:cron-job.sh");
        assert_eq!(
            derived_name(&argv(&["sh", "-c", "echo 'hi' there"])),
            "exec:sh -c 'echo '\\''hi'\\'' there'"
        );
        assert_eq!(derived_name(&argv(&["a", ""])), "exec:a ''");
        assert_ne!(
            derived_name(&argv(&["a b"])),
            derived_name(&argv(&["a", "b"]))
        );
    }
}
