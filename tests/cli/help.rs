//! What each subcommand's help shows: its own options first, then the
//! global ones in a group of their own, one line each, in words that fit the
//! command; and usage errors that point to the help of the subcommand given.

use crate::support::{self, run};

/// The visible subcommands (not `help`, which is clap's).
fn visible_subcommands() -> Vec<String> {
    use clap::CommandFactory as _;
    redlock::cli::Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
        .map(|sub| sub.get_name().to_owned())
        .collect()
}

/// The long names of the global options, from the clap definition.
fn global_flags() -> Vec<String> {
    use clap::CommandFactory as _;
    redlock::cli::Cli::command()
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}

/// `redlock ARGS` at 100 columns: its stdout, after asserting exit 0.
fn help_of(args: &[&str]) -> String {
    let out = run(support::redlock().env("COLUMNS", "100").args(args));
    out.assert_code(0, &format!("{args:?}"));
    out.stdout
}

/// The lines of the block under `heading` ("Options:"), up to a blank line.
fn block<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    help.lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect()
}

#[test]
fn a_commands_own_options_come_first_and_the_global_ones_one_line_each() {
    let globals = global_flags();
    assert!(globals.len() >= 8, "{globals:?}");
    for name in visible_subcommands() {
        for flag in ["--help", "-h"] {
            let help = help_of(&[&name, flag]);
            let own = block(&help, "Options:");
            let global = block(&help, "Global options:");
            let (own_at, global_at) = (help.find("\nOptions:\n"), help.find("\nGlobal options:\n"));
            assert!(
                own_at.is_some() && global_at.is_some() && own_at < global_at,
                "{name} {flag}: its own options, then the global ones:\n{help}"
            );
            for line in &own {
                // The flags of the line, before the help text.
                let spec = line.trim_start().split("  ").next().unwrap_or("");
                assert!(
                    !globals
                        .iter()
                        .any(|g| spec.split([' ', ',']).any(|w| w == g)),
                    "{name} {flag}: a global option among its own: {line}"
                );
            }
            for line in &global {
                assert!(
                    line.trim_start().starts_with('-'),
                    "{name} {flag}: a global option on more than one line: {line:?}\n{help}"
                );
            }
            let shown = globals.iter().filter(|g| help.contains(g.as_str())).count();
            assert_eq!(global.len(), shown, "{name} {flag}:\n{help}");
        }
    }
}

#[test]
fn no_help_speaks_of_what_its_command_does_not_have() {
    // No --ttl to speak of.
    for name in ["release", "status", "list"] {
        let help = help_of(&[name, "--help"]);
        assert!(
            !help.contains("--ttl"),
            "{name} --help speaks of --ttl:\n{help}"
        );
    }
    // exec refuses --json (exit 64): its help does not offer it.
    let help = help_of(&["exec", "--help"]);
    assert!(
        !help.contains("--json"),
        "exec --help offers --json:\n{help}"
    );
    assert!(!help.contains("acquire then prints"), "{help}");
    // Where there is a --ttl, the server timeout says how it bounds it.
    let help = help_of(&["acquire", "--help"]);
    let line = block(&help, "Global options:")
        .into_iter()
        .find(|line| line.contains("--server-timeout"))
        .unwrap();
    assert!(line.contains("--ttl"), "{line}");
}

/// A usage error names the help of the subcommand that was given, whether
/// clap or the configuration found it; without one, the program's help.
#[test]
fn usage_errors_point_to_the_help_of_the_subcommand_given() {
    let cases: [(&[&str], &str); 7] = [
        (&["exec", "--bogus", "x"], "exec"),
        (&["exec", "-w", "soon", "nightly", "ls"], "exec"),
        (&["-s", "redis://127.0.0.1:1", "status"], "status"),
        (&["release", "x", "t", "--ttl", "5s"], "release"),
        (&["list", "--names", "--json"], "list"),
        // Found by the configuration, not by clap.
        (&["-s", "redis://127.0.0.1:1", "exec", "nightly"], "exec"),
        (&["-s", "redis://127.0.0.1:1", "acquire", ""], "acquire"),
    ];
    for (args, name) in cases {
        let out = run(support::redlock().args(args));
        out.assert_code(64, &format!("{args:?}"));
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr
                .trim_end()
                .ends_with(&format!("; see 'redlock {name} --help'")),
            "{args:?}: {}",
            out.stderr
        );
    }
    for args in [&["--bogus", "status", "x"][..], &["bogus"]] {
        let out = run(support::redlock().args(args));
        out.assert_code(64, &format!("{args:?}"));
        assert!(
            out.stderr.trim_end().ends_with("; see 'redlock --help'"),
            "{args:?}: {}",
            out.stderr
        );
    }
}
