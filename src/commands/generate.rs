//! Shell completions and man pages, generated from the clap definition so
//! they never drift from the binary. The committed copies in completions/ and
//! man/ are checked against these by `tests/cli/generated.rs`.

use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, Generated};
use crate::error::Error;
use crate::exit_code::Exit;

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
        let mut command = Cli::command();
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command, "redlock", &mut script);
        (
            clap_complete::Generator::file_name(&shell, "redlock"),
            script,
        )
    })
    .collect()
}

/// `(file name, contents)` of `redlock.1` and one page per visible subcommand.
pub fn man_pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut command = Cli::command();
    command.build();
    let mut pages = vec![("redlock.1".to_owned(), render(command.clone())?)];
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        // clap wants a 'static name; leaking a few short strings in a command
        // that exits right after is harmless.
        let name: &'static str = format!("redlock-{}", sub.get_name()).leak();
        let page = sub.clone().name(name).display_name(name);
        pages.push((format!("{name}.1"), render(page)?));
    }
    Ok(pages)
}

fn render(command: clap::Command) -> anyhow::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    Ok(page)
}

pub fn write(what: Generated, dir: &Path) -> Result<Exit, Error> {
    write_files(what, dir).map_err(Error::Internal)?;
    Ok(Exit::Success)
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
