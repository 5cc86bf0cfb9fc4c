//! One small function per subcommand: build the request from the config,
//! call the protocol (`lock`) and the process side (`supervise`), hand what
//! happened to `output`, and return the exit status or the error.

mod acquire;
mod exec;
mod extend;
pub mod generate;
mod handoff;
mod holder;
mod list;
mod release;
mod status;
mod waiting;

use crate::config::{LockJob, Servers, Task};
use crate::error::Error;
use crate::exit_code::Exit;
use crate::lock::Redlock;
use crate::output::Reporter;
use crate::supervise::Watchdog;

/// Runs one validated task.
pub fn dispatch(task: Task, out: Reporter) -> Result<Exit, Error> {
    match task {
        Task::Generate { what, dir } => generate::write(what, &dir),
        Task::Lock { servers, job } => run_lock_job(*servers, job, out),
    }
}

fn run_lock_job(servers: Servers, job: LockJob, out: Reporter) -> Result<Exit, Error> {
    // rustls needs one process-wide crypto provider before any TLS connection;
    // an error only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let handoff = handoff::Handoff {
        specs: servers.specs.clone(),
        source: servers.source,
        prefix: servers.prefix,
        tls_ca_cert: servers.tls_ca_cert,
        restart_guard: servers.restart_guard,
        config_file: servers.config_file,
    };
    let redlock = Redlock::new(
        servers.specs,
        servers.timeout,
        servers.tls_root_cert.as_deref(),
        servers.restart_guard,
    )
    .map_err(|err| Error::Config(err.to_string()))?
    .with_prefix(&handoff.prefix)
    .with_wakeups(servers.wakeups);
    let redlock = match &job {
        LockJob::Acquire { message, .. } => {
            redlock.with_holder(holder::this_process(message.clone(), None))
        }
        LockJob::Exec(spec) => {
            redlock.with_holder(holder::this_process(spec.message.clone(), Some(&spec.argv)))
        }
        _ => redlock,
    };
    crate::signals::reset_inherited();
    // The watchdog is forked now, while this process has one thread; see
    // `Watchdog::fork`. It is a copy of this process, so it costs no second
    // start of the binary. It waits on its pipe until the command runs.
    let watchdog = match &job {
        LockJob::Exec(spec) => Some(
            Watchdog::fork(spec.signal, spec.stop)
                .map_err(|err| Error::internal("cannot start the watchdog process", err))?,
        ),
        _ => None,
    };
    // One thread is plenty for N sockets, and it keeps the process simple to
    // reason about when it later supervises a child.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(crate::supervise::child::blocking_thread_keep_alive())
        .build()?;
    runtime.block_on(async {
        match job {
            LockJob::Acquire {
                key,
                ttl,
                wait,
                conflict_exit,
                ..
            } => acquire::run(&redlock, &key, ttl, wait, conflict_exit, out).await,
            LockJob::Release { key, token } => release::run(&redlock, &key, &token, out).await,
            LockJob::ForceRelease { key } => release::force(&redlock, &key, out).await,
            LockJob::List(query) => list::run(&redlock, query, out).await,
            LockJob::Extend { key, token, ttl } => {
                extend::run(&redlock, &key, &token, ttl, out).await
            }
            LockJob::Status { key } => status::run(&redlock, &key, out).await,
            LockJob::Exec(spec) => {
                let watchdog = watchdog.expect("forked for exec");
                exec::run(&redlock, spec, &handoff, watchdog, out).await
            }
        }
    })
}
