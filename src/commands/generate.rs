//! Shell completions and man pages, generated from the clap definition so
//! they never drift from the binary. The committed copies in completions/ and
//! man/ are checked against these by `tests/cli/generated.rs`.

use std::path::Path;

use anyhow::Context as _;
use clap_complete::Shell;

use crate::cli::Generated;
use crate::error::Error;
use crate::outcome::Outcome;

mod description;
mod man;

pub use man::man_pages;

/// `(file name, contents)` of every completion script.
pub fn completions() -> Vec<(String, Vec<u8>)> {
    [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ]
    .into_iter()
    .map(|shell| {
        let mut command = without_hidden_subcommands(crate::cli::command());
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command, "redlock", &mut script);
        if shell == Shell::Bash {
            script.extend(bash_exec_command(&command).into_bytes());
        }
        (
            clap_complete::Generator::file_name(&shell, "redlock"),
            script,
        )
    })
    .collect()
}

/// What clap's bash completion lacks for `exec`: the command after NAME or
/// `--` is completed as a command line (zsh gets it from the value hint).
/// The script needs the options that take a value, to know which words are
/// positional.
fn bash_exec_command(command: &clap::Command) -> String {
    let exec = command
        .find_subcommand("exec")
        .expect("exec is a subcommand");
    let mut takes_value = Vec::new();
    for arg in exec.get_opts() {
        takes_value.extend(
            arg.get_short_and_visible_aliases()
                .into_iter()
                .flatten()
                .map(|c| format!("-{c}")),
        );
        takes_value.extend(
            arg.get_long_and_visible_aliases()
                .into_iter()
                .flatten()
                .map(|l| format!("--{l}")),
        );
    }
    include_str!("generate/exec_command.bash").replace("@TAKES_VALUE@", &takes_value.join(" "))
}

/// `command` with only its visible subcommands: clap_complete offers every
/// subcommand, hidden or not, and clap cannot remove one, so the command is
/// rebuilt around the same options. Only what completions use is carried over.
fn without_hidden_subcommands(command: clap::Command) -> clap::Command {
    let visible = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned();
    let mut copy = clap::Command::new("redlock")
        .args(command.get_arguments().cloned())
        .subcommands(visible)
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true);
    if let Some(about) = command.get_about() {
        copy = copy.about(about.clone());
    }
    copy
}

pub fn write(what: Generated, dir: &Path) -> Result<Outcome, Error> {
    write_files(what, dir).map_err(Error::Internal)?;
    Ok(Outcome::Generated)
}

fn write_files(what: Generated, dir: &Path) -> anyhow::Result<()> {
    let files = match what {
        Generated::Completions => completions(),
        Generated::Man => man_pages()?,
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, contents) in files {
        let path = dir.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
