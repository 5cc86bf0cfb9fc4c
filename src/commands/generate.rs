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
        let script = match shell {
            Shell::Bash | Shell::Zsh | Shell::Fish => with_exec_command(shell, &command, script),
            _ => script,
        };
        (
            clap_complete::Generator::file_name(&shell, "redlock"),
            script,
        )
    })
    .collect()
}

/// What clap's completions lack, added to bash's, zsh's and fish's: the
/// command of `exec` is completed as a command line, after NAME or `--`
/// (clap's zsh script does it after `--` only, fish's never), and a lock
/// NAME from `redlock list --names`. The scripts need the options that take
/// a value, to know which words are arguments, and the global ones among
/// them, which choose the servers to list.
fn with_exec_command(shell: Shell, command: &clap::Command, script: Vec<u8>) -> Vec<u8> {
    let takes_value: Vec<String> = command
        .get_subcommands()
        .flat_map(|sub| sub.get_opts())
        .chain(command.get_opts())
        .flat_map(flags)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let global_value: Vec<String> = command.get_opts().flat_map(flags).collect();
    let ours = match shell {
        Shell::Bash => include_str!("generate/exec_command.bash"),
        Shell::Zsh => include_str!("generate/exec_command.zsh"),
        _ => include_str!("generate/exec_command.fish"),
    }
    .replace("@TAKES_VALUE@", &takes_value.join(" "))
    .replace("@GLOBAL_VALUE@", &global_value.join(" "));
    let script = String::from_utf8(script).expect("clap writes UTF-8");
    let script = match shell {
        // clap's _redlock becomes _redlock_clap, called by ours, and the
        // file's last lines (which call or register _redlock) come after it.
        Shell::Zsh => {
            let at = script
                .rfind("\nif [ \"$funcstack[1]\" = \"_redlock\" ]")
                .expect("clap's zsh script ends by calling _redlock");
            let (functions, dispatch) = script.split_at(at + 1);
            let functions = functions.replacen("\n_redlock() {\n", "\n_redlock_clap() {\n", 1);
            let functions = zsh_arguments(&functions);
            format!("{functions}{}\n{dispatch}", ours.trim_start())
        }
        // clap's completions of exec stand aside inside its command.
        Shell::Fish => {
            let exec = "-n \"__fish_redlock_using_subcommand exec\"";
            let apart = "-n \"__fish_redlock_using_subcommand exec; and not \
                         __fish_redlock_in_exec_command\"";
            format!("{}{ours}", script.replace(exec, apart))
        }
        _ => format!("{script}{ours}"),
    };
    script.into_bytes()
}

/// clap's `_arguments` specs, with NAME completed from the servers and
/// exec's command left to our `_redlock` (which completes it before clap's
/// specs are reached, wherever it starts; clap's spec would offer commands
/// in NAME's place).
fn zsh_arguments(functions: &str) -> String {
    let lines = functions.split_inclusive('\n').map(|line| {
        let is_name = line.starts_with("':name -- ") || line.starts_with("'::name -- ");
        if is_name && line.ends_with(":_default' \\\n") {
            line.replace(":_default' \\\n", ":_redlock_lock_names' \\\n")
        } else if line.starts_with("'*::argv -- ") {
            line.replace(":_cmdambivalent' \\\n", ": ' \\\n")
        } else {
            line.to_owned()
        }
    });
    lines.collect()
}

/// `-s` and `--server` for the option of those flags.
fn flags(arg: &clap::Arg) -> Vec<String> {
    let shorts = arg.get_short_and_visible_aliases().into_iter().flatten();
    let longs = arg.get_long_and_visible_aliases().into_iter().flatten();
    shorts
        .map(|c| format!("-{c}"))
        .chain(longs.map(|l| format!("--{l}")))
        .collect()
}

/// `command` with only its visible subcommands and options: clap_complete
/// offers every subcommand and option, hidden or not (exec's refused
/// --json), and clap cannot remove one, so the command is rebuilt around
/// the visible ones. Each subcommand has its own copy of the global options
/// already (`cli::command`), so the root's are no longer global: clap would
/// copy a hidden one back. Only what completions use is carried over, and
/// not what clap's build added (`help`, `--help`, `--version`), which the
/// copy's build adds again.
fn without_hidden_subcommands(command: clap::Command) -> clap::Command {
    let own = |arg: &&clap::Arg| !matches!(arg.get_id().as_str(), "help" | "version");
    let subcommands = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| {
            // clap wants a 'static name; leaking a few short strings in a
            // command that exits right after is harmless.
            let name: &'static str = sub.get_name().to_owned().leak();
            let args = sub.get_arguments().filter(|arg| !arg.is_hide_set());
            let copy = clap::Command::new(name).args(args.filter(own).cloned());
            match sub.get_about() {
                Some(about) => copy.about(about.clone()),
                None => copy,
            }
        });
    let root_args = (command.get_arguments().filter(own)).map(|arg| arg.clone().global(false));
    let mut copy = clap::Command::new("redlock")
        .args(root_args)
        .subcommands(subcommands)
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
