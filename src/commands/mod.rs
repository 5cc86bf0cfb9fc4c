//! The commands, behind one registry. Each `commands/<cmd>.rs` has one
//! `run(ctx, job)` that takes the [`Ctx`] (the servers as a [`Redlock`],
//! the [`Output`], a runtime to wait on) and its validated job, and returns
//! `Result<Outcome, Error>`: data, no text. [`dispatch`] builds the context
//! for a task, [`run`] hands the job to its command, and [`finish`] renders
//! how it ended, once. What is no command lives beside what it serves:
//! `exec/` (its hand-off of the servers, its watchdog's release), `support/`
//! (what several commands do around the lock call), and the `--while`
//! keeper in `crate::keeper`.

mod acquire;
mod ctx;
mod doctor;
mod done;
mod exec;
mod extend;
pub mod generate;
mod list;
mod release;
mod status;
mod support;

use nix::sys::signal::Signal;

use crate::config::{LockJob, Servers, Task};
use crate::error::Error;
use crate::exit_code::Exit;
use crate::keeper::Keeper;
use crate::lock::Redlock;
use crate::outcome::Outcome;
use crate::output::{self, Output};
use ctx::Ctx;
use exec::handoff;

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
            exit: crate::keeper::serve(),
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
    let keeper = job
        .keep_while()
        .map(|keep| Keeper::spawn(&servers, keep))
        .transpose()?;
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
    let ctx = Ctx::new(redlock, output, handoff, keeper, servers.timeout);
    Ok(run(ctx, job))
}

/// The registry: each job to its command's `run`, once. An `acquire` that
/// took the lock still has its token to print ([`acquire::hand_over`]);
/// every other result is rendered by [`finish`].
fn run(mut ctx: Ctx<'_>, job: LockJob) -> Ending {
    let result = match job {
        LockJob::Acquire(job) => acquire::run(&ctx, job),
        LockJob::Release(job) => release::run(&ctx, job),
        LockJob::ForceRelease(job) => release::force(&ctx, job),
        LockJob::ClearDone(key) => release::clear_done(&ctx, key),
        LockJob::Extend(job) => extend::run(&ctx, job),
        LockJob::Done(job) => done::run(&ctx, job),
        LockJob::Status(job) => status::run(&ctx, job),
        LockJob::List(job) => list::run(&ctx, job),
        LockJob::Exec(spec) => exec::run(&ctx, *spec),
        LockJob::Doctor(job) => doctor::run(&ctx, job),
    };
    match &result {
        Ok(acquired @ Outcome::Acquired { lease, .. }) => {
            match acquire::hand_over(&mut ctx, acquired, lease) {
                Ok(()) => Ending {
                    exit: acquired.exit(),
                    signal: None,
                },
                Err(failure) => finish(ctx.output, &Err(failure)),
            }
        }
        _ => finish(ctx.output, &result),
    }
}
