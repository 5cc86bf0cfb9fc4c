//! What every command runs with: the servers, the output, a runtime.

use std::cell::OnceCell;
use std::future::Future;
use std::time::Duration;

use tokio::runtime::Runtime;

use super::exec::handoff::Handoff;
use crate::error::Error;
use crate::keeper::Keeper;
use crate::lock::Redlock;
use crate::output::{Events, Output};

/// What a command runs with.
pub struct Ctx<'a> {
    /// Built on first use: `exec` forks its watchdog before, while this
    /// process has one thread. Dropped first, as it always was.
    runtime: OnceCell<Runtime>,
    /// The servers.
    pub redlock: Redlock,
    pub output: &'a Output,
    /// What `exec` tells its command about the servers; its prefix is the
    /// servers' (`doctor` probes under it).
    pub handoff: Handoff,
    /// `acquire --while`'s keeper, started before the [`Redlock`] so that
    /// the record beside the lock names it.
    pub keeper: Option<Keeper>,
    /// How long a server has to answer.
    pub timeout: Duration,
}

impl<'a> Ctx<'a> {
    pub fn new(
        redlock: Redlock,
        output: &'a Output,
        handoff: Handoff,
        keeper: Option<Keeper>,
        timeout: Duration,
    ) -> Self {
        Ctx {
            runtime: OnceCell::new(),
            redlock,
            output,
            handoff,
            keeper,
            timeout,
        }
    }

    /// Runs `work` to its end. One thread is plenty for N sockets, and it
    /// keeps the process simple to reason about when it later supervises a
    /// child. On the heap: a command's future is 10-18 KB, which the
    /// runtime would otherwise copy from frame to frame, each copy on
    /// stack pages the process touches for the first time.
    pub fn block_on<F: Future>(&self, work: F) -> Result<F::Output, Error> {
        let runtime = match self.runtime.get() {
            Some(runtime) => runtime,
            None => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .thread_keep_alive(crate::supervise::child::blocking_thread_keep_alive())
                    .build()?;
                self.runtime.get_or_init(|| runtime)
            }
        };
        Ok(runtime.block_on(Box::pin(work)))
    }

    pub fn events(&self) -> Events {
        self.output.events()
    }
}
