//! The help of each subcommand, shaped after clap has the definition: its
//! own options first, then the global ones in a group of their own, each in
//! words that fit the command (`release` has no --ttl to speak of, `exec`
//! has no --json). The program shows its help and errors with [`command`],
//! as the man pages and the completions do; it parses with the same
//! definition unfitted, whose options parse the same.
//!
//! clap copies a global option into every subcommand when it builds the
//! command; each copy gets its own text here, after the build. The values
//! still reach [`super::GlobalArgs`]: clap gathers a global option's value
//! by id, wherever it was given.

use clap::{Arg, CommandFactory as _};

use super::Cli;

/// The heading of the global options in a subcommand's help.
pub const GLOBAL_HEADING: &str = "Global options";

/// How much the global options of a subcommand say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// One line each: `--help`, and the descriptions completions show.
    Line,
    /// The whole account, fitted to the command: the man pages.
    Full,
}

/// The clap command the program shows its help and errors with, at
/// `Detail::Line`.
pub fn command() -> clap::Command {
    command_with(Detail::Line)
}

/// The clap command, each subcommand's global options in words for it.
pub fn command_with(detail: Detail) -> clap::Command {
    fitted(Cli::command(), detail)
}

/// `root`, built, with every subcommand's global options in words for it.
///
/// The subcommands' own options are deferred (`#[command(defer = true)]`):
/// a run that parses builds only the subcommand it names, which is most of
/// what parsing costs, and parses without the words here, which only help
/// and errors show. So the fitting comes after the build, which makes each
/// subcommand's options and copies the global ones into it; each copy then
/// gets its words in place (`mut_args` keeps every option where the built
/// command looks for it, which `mut_arg` would move).
pub fn fitted(mut root: clap::Command, detail: Detail) -> clap::Command {
    root.build();
    let globals: Vec<clap::Id> = root
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .map(|arg| arg.get_id().clone())
        .collect();
    root.mut_subcommands(|sub| {
        let name = sub.get_name().to_owned();
        let sub = sub.mut_args(|arg| match globals.contains(arg.get_id()) {
            true => fitted_arg(arg, &name, detail),
            false => arg,
        });
        match name.as_str() {
            // An option `exec` shares with `acquire`, in words for exec.
            "exec" => sub.mut_args(|arg| match arg.get_id() == "conflict_exit_code" {
                true => arg.help(
                    "Exit with CODE instead of 75 when the lock is busy (or the -w wait ran \
                     out), without running the command; -E 0 skips quietly, the cron idiom \
                     (the default of -n with --once-per or --once)",
                ),
                false => arg,
            }),
            _ => sub,
        }
    })
}

/// The global option `arg` as the subcommand `sub` shows it.
fn fitted_arg(arg: Arg, sub: &str, detail: Detail) -> Arg {
    let id = arg.get_id().as_str();
    let text = TEXTS
        .iter()
        .find(|text| text.id == id && text.commands.is_none_or(|c| c.contains(&sub)))
        .copied();
    let mut arg = arg.help_heading(GLOBAL_HEADING);
    let Some(text) = text else {
        return arg;
    };
    arg = match (detail, text.full) {
        (Detail::Line, _) | (Detail::Full, Full::Line) => arg.help(text.line).hide_env(true),
        (Detail::Full, Full::Doc) => arg,
        (Detail::Full, Full::Text(full)) => arg.help(full),
    };
    arg.hide(text.hidden)
}

/// What a global option says in the help of some commands.
#[derive(Clone, Copy)]
struct Text {
    /// The option's id (its field in `GlobalArgs`).
    id: &'static str,
    /// The commands this text is for; `None`: every one not named in an
    /// earlier row of the same option.
    commands: Option<&'static [&'static str]>,
    /// The line of `--help`.
    line: &'static str,
    /// What the man page says.
    full: Full,
    /// Whether the option is left out of the help (it is refused there).
    hidden: bool,
}

/// What a man page says of a global option.
#[derive(Clone, Copy)]
enum Full {
    /// The option's doc comment, as `redlock --help` shows it.
    Doc,
    /// The line of `--help`.
    Line,
    /// A text of its own.
    Text(&'static str),
}

/// The commands that take a lock for a time, which --ttl sets.
const WITH_TTL: &[&str] = &["acquire", "extend", "exec"];

/// Every global option's line, and where the man page says more or else.
const TEXTS: &[Text] = &[
    row(
        "servers",
        None,
        "A Redis master, e.g. redis://host:6379; repeat it for N masters",
        Full::Doc,
    ),
    row(
        "servers_file",
        None,
        "A file of server URLs, one a line, if no -s or $REDLOCK_SERVERS",
        Full::Doc,
    ),
    row(
        "config_file",
        None,
        "A file of settings: restart-guard, server-timeout, prefix, name-key",
        Full::Doc,
    ),
    row(
        "server_timeout",
        Some(WITH_TTL),
        "Bound on each connect and reply [default: 250ms, or --ttl/5]",
        Full::Doc,
    ),
    row(
        "server_timeout",
        None,
        "Bound on each connect and reply [default: 250ms]",
        Full::Text(
            "Bound for connecting to each server and for each reply. Default: server-timeout in \
             the config file, else 250ms.",
        ),
    ),
    row(
        "restart_guard",
        Some(WITH_TTL),
        "Skip servers restarted less than DUR ago; caps --ttl [default: 30s]",
        Full::Doc,
    ),
    row(
        "restart_guard",
        None,
        "Skip servers restarted less than DUR ago [default: 30s]",
        Full::Text(
            "Do not count a server that started less than DUR ago toward a quorum: it may have \
             lost the locks it held; 0 turns the guard off. Give every client of these servers \
             the same guard (the config file). [default: restart-guard in the config file, else \
             30s]",
        ),
    ),
    row(
        "tls_ca_cert",
        None,
        "The CA certificate (PEM) of rediss:// servers",
        Full::Doc,
    ),
    row(
        "prefix",
        None,
        "Prepended to the lock names to form the Redis keys",
        Full::Doc,
    ),
    row(
        "json",
        Some(&["acquire"]),
        "Print the token and the lock's validity as one JSON object",
        Full::Line,
    ),
    row(
        "json",
        Some(&["status"]),
        "Print the holder and every server's view as one JSON object",
        Full::Line,
    ),
    row(
        "json",
        Some(&["list"]),
        "Print the locks as one JSON object",
        Full::Line,
    ),
    Text {
        hidden: true,
        ..row(
            "json",
            Some(&["exec"]),
            "Refused: exec's stdout is the command's",
            Full::Line,
        )
    },
    row(
        "json",
        None,
        "Print the result as one JSON object",
        Full::Line,
    ),
    row(
        "quiet",
        Some(&["acquire", "exec"]),
        "No message when the lock is busy or done; the exit status tells",
        Full::Line,
    ),
    row(
        "quiet",
        Some(&["release", "extend", "done"]),
        "No message when TOKEN does not hold the lock; the exit status tells",
        Full::Line,
    ),
    row(
        "quiet",
        Some(&["status"]),
        "No table; the exit status tells (0 held, 1 free)",
        Full::Line,
    ),
    row("quiet", None, "No table, only errors", Full::Line),
    row(
        "verbose",
        None,
        "Describe each step on stderr: servers, timings, validity",
        Full::Line,
    ),
];

const fn row(
    id: &'static str,
    commands: Option<&'static [&'static str]>,
    line: &'static str,
    full: Full,
) -> Text {
    Text {
        id,
        commands,
        line,
        full,
        hidden: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shaped_command_is_consistent() {
        command_with(Detail::Line).debug_assert();
        command_with(Detail::Full).debug_assert();
    }

    /// Every global option has a line for every subcommand, and each line
    /// fits on one line of an 80-column `--help` beside its flag.
    #[test]
    fn every_global_option_has_a_line_for_every_command() {
        let root = Cli::command();
        for arg in root.get_arguments().filter(|arg| arg.is_global_set()) {
            for sub in root.get_subcommands() {
                let (id, name) = (arg.get_id().as_str(), sub.get_name());
                let text = TEXTS
                    .iter()
                    .find(|t| t.id == id && t.commands.is_none_or(|c| c.contains(&name)));
                let text = text.unwrap_or_else(|| panic!("no line for {id} in {name}"));
                assert!(text.line.len() <= 70, "{id}: {}", text.line);
            }
        }
    }

    #[test]
    fn no_line_of_a_command_without_ttl_speaks_of_it() {
        let command = command();
        for name in ["release", "status", "list"] {
            let sub = command.find_subcommand(name).unwrap();
            for arg in sub.get_arguments() {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                assert!(!help.contains("--ttl"), "{name} {}: {help}", arg.get_id());
            }
        }
    }
}
