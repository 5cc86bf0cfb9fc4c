//! The commands. Each `commands/<cmd>.rs` has one `run` that takes what it
//! needs (the servers as a [`Redlock`], the validated job, the [`Events`]
//! sink) and returns `Result<Outcome, Error>`: data, no text. [`dispatch`]
//! picks the command for a task and [`finish`] renders how it ended, once.

mod acquire;
mod doctor;
mod exec;
mod extend;
pub mod generate;
mod handoff;
mod hold;
mod holder;
mod list;
mod orphan;
mod release;
mod rendezvous;
mod status;
mod waiting;

use nix::sys::signal::Signal;

use crate::config::{AcquireJob, ExecSpec, LockJob, Servers, Task};
use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::{Holder, Lease, Redlock};
use crate::outcome::Outcome;
use crate::output::{self, Output};
use crate::supervise::Watchdog;

/// How the process must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    pub exit: Exit,
    /// A signal to die of instead of exiting (one that interrupted us).
    pub signal: Option<Signal>,
}

/// Renders how the run ended, once, and says how the process ends. A result
/// that could not be written to stdout (a closed pipe) keeps its status:
/// what was done is done, and this is said on stderr.
pub fn finish(output: &Output, result: &Result<Outcome, Error>) -> Ending {
    let (exit, signal, written) = match result {
        Ok(outcome) => {
            let exit = outcome.exit();
            (exit, outcome.dies_of(), output.render(Ok(outcome), exit))
        }
        Err(err) => {
            let exit = err.exit();
            (exit, None, output.render(Err(&err.failed()), exit))
        }
    };
    if let Err(err) = written {
        output::unwritten(&err);
    }
    Ending { exit, signal }
}

/// Runs one validated task and renders how it ended.
pub fn dispatch(task: Task, output: &Output) -> Ending {
    match task {
        Task::Generate { what, dir } => finish(output, &generate::write(what, &dir)),
        Task::Keeper => Ending {
            exit: hold::serve(),
            signal: None,
        },
        Task::Lock { servers, job } => match lock_job(*servers, job, output) {
            Ok(ending) => ending,
            Err(err) => finish(output, &Err(err)),
        },
    }
}

fn lock_job(servers: Servers, job: LockJob, output: &Output) -> Result<Ending, Error> {
    // rustls needs one process-wide crypto provider before any TLS connection;
    // an error only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    crate::lock::Token::random_source().map_err(|err| {
        Error::internal(
            "the operating system gives no random numbers for lock tokens",
            anyhow::anyhow!("{err}"),
        )
    })?;
    let handoff = handoff::Handoff::new(&servers);
    // `--while PID`: the pid is checked and the keeper started first, so
    // that the record beside the lock names it.
    let keeper = match &job {
        LockJob::Acquire(AcquireJob {
            keep_while: Some(keep),
            ..
        }) => Some(hold::Keeper::spawn(&servers, *keep)?),
        _ => None,
    };
    let redlock = Redlock::new(
        servers.specs,
        servers.timeout,
        servers.tls_root_cert.as_deref(),
        servers.restart_guard,
    )
    .map_err(|err| Error::Config(err.to_string()))?
    .with_prefix(&handoff.prefix)
    .with_wakeups(servers.wakeups)
    .with_every_answer_shown(output.events().shows_every_answer());
    crate::signals::reset_inherited();
    let watchdog = fork_watchdog(&job, &redlock, servers.timeout)?;
    // One thread is plenty for N sockets, and it keeps the process simple to
    // reason about when it later supervises a child.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(crate::supervise::child::blocking_thread_keep_alive())
        .build()?;
    let events = output.events();
    Ok(runtime.block_on(async {
        let result = match job {
            LockJob::Acquire(job) => {
                let watched = keeper.as_ref().map(hold::Keeper::watched);
                let request = job.take(Some(acquire_record(&job, keeper.as_ref())));
                acquire::run(&redlock, (job, request), watched, events).await
            }
            LockJob::ForceRelease { key, breaking } => {
                release::force(&redlock, &key, breaking).await
            }
            LockJob::List { query, names } => list::run(&redlock, query, names, output).await,
            LockJob::Doctor(job) => doctor::run(&redlock, job, &handoff.prefix).await,
            LockJob::Exec(spec) => {
                let watchdog = watchdog.expect("forked for exec");
                let request = spec.take(Some(exec_record(&spec)));
                exec::run(&redlock, (spec, request), &handoff, watchdog, events).await
            }
            named => on_name(&redlock, named).await,
        };
        match &result {
            Ok(acquired @ Outcome::Acquired { lease, .. }) => {
                hand_over(&redlock, acquired, lease, output, keeper).await
            }
            _ => finish(output, &result),
        }
    }))
}

/// `exec`'s watchdog, forked now, while this process has one thread; see
/// `Watchdog::fork`. It is a copy of this process, so it costs no second
/// start of the binary. It waits on its pipe until the command runs. It
/// gets the servers (answering within `timeout`) now, to release the lock
/// should exec be killed (see `orphan`).
fn fork_watchdog(
    job: &LockJob,
    redlock: &Redlock,
    timeout: std::time::Duration,
) -> Result<Option<Watchdog>, Error> {
    let LockJob::Exec(spec) = job else {
        return Ok(None);
    };
    let orphan = orphan::Orphan::new(redlock.clone(), timeout);
    Watchdog::fork(spec.signal, spec.stop, Some(Box::new(orphan)))
        .map(Some)
        .map_err(|err| Error::internal("cannot start the watchdog process", err))
}

/// `release`, `extend` and `status`: on the lock NAME, or with `--limit K`
/// on the semaphore NAME's slots.
async fn on_name(redlock: &Redlock, job: LockJob) -> Result<Outcome, Error> {
    match job {
        LockJob::Release {
            key,
            token,
            semaphore: None,
        } => release::run(redlock, &key, &token).await,
        LockJob::Release {
            token,
            semaphore: Some(semaphore),
            ..
        } => release::slot(redlock, &semaphore, &token).await,
        LockJob::Extend {
            key,
            token,
            ttl,
            semaphore,
        } => extend::run(redlock, (&key, semaphore.as_ref()), &token, ttl).await,
        LockJob::Status {
            key,
            semaphore: None,
        } => status::run(redlock, &key).await,
        LockJob::Status {
            semaphore: Some(semaphore),
            ..
        } => status::slots(redlock, semaphore).await,
        other => Err(Error::Internal(anyhow::anyhow!(
            "not a job on a name: {other:?}"
        ))),
    }
}

/// What `acquire` records beside the lock it takes: this process, or with
/// `--while` the process the keeper keeps the lock for.
fn acquire_record(job: &AcquireJob, keeper: Option<&hold::Keeper>) -> Holder {
    // A keeper renews the lock as exec does; plain acquire does not.
    let renew_every = keeper.map(|_| crate::lock::keeper_interval(job.ttl));
    let holder = holder::this_process(job.message.clone(), None, renew_every);
    match keeper {
        Some(keeper) => keeper.describe(holder),
        None => holder,
    }
}

/// What `exec` records beside the lock it takes: this process, with its
/// command.
fn exec_record(spec: &ExecSpec) -> Holder {
    let command = holder::Command {
        argv: &spec.argv,
        whole_line: spec.record_command,
    };
    holder::this_process(
        spec.message.clone(),
        Some(command),
        Some(crate::lock::keeper_interval(spec.ttl)),
    )
}

/// `acquire`'s token goes to stdout. Nobody could ever release a lock whose
/// token was lost, and a token printed after the validity ran out (a full
/// pipe, Ctrl-S) is no lock: either way the lock is released, and the run
/// fails with that second message. With `--while`, the token is printed
/// only once the keeper is ready, and the keeper keeps the lock only once
/// the token was printed in time.
async fn hand_over(
    redlock: &Redlock,
    acquired: &Outcome,
    lease: &Lease,
    output: &Output,
    keeper: Option<hold::Keeper>,
) -> Ending {
    let failure = match print_token(acquired, lease, output, keeper) {
        Ok(()) => {
            return Ending {
                exit: acquired.exit(),
                signal: None,
            }
        }
        Err(failure) => failure,
    };
    let _ = redlock.release(&lease.key, &lease.token).await;
    finish(output, &Err(failure))
}

fn print_token(
    acquired: &Outcome,
    lease: &Lease,
    output: &Output,
    mut keeper: Option<hold::Keeper>,
) -> Result<(), Error> {
    if let Some(keeper) = &mut keeper {
        keeper.start(lease)?;
    }
    let rendered = match crate::output::stdout_was_closed() {
        true => Err(std::io::Error::other("stdout is closed")),
        false => output.render(Ok(acquired), acquired.exit()),
    };
    match rendered {
        Err(err) => Err(Error::internal(
            "could not print the token, so the lock was released",
            err,
        )),
        Ok(()) if lease.deadline <= crate::clock::BootInstant::now() => Err(Error::Expired {
            key: lease.key.clone(),
            validity: lease.validity(),
        }),
        Ok(()) => keeper.map_or(Ok(()), hold::Keeper::commit),
    }
}
