//! `redlock __watchdog`: the process `exec` starts to enforce its deadline
//! when the supervisor cannot.

use nix::sys::signal::Signal;

use crate::error::Error;
use crate::exit_code::Exit;
use crate::supervise::schedule::StopPlan;
use crate::supervise::watchdog;

pub fn run(signal: Signal, plan: StopPlan) -> Result<Exit, Error> {
    Ok(Exit::Code(watchdog::run(signal, plan)?.code()))
}
