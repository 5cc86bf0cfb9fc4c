//! The man pages: clap_mangen's sections (name, synopsis, description,
//! options, commands), then sections of our own that `--help` has no room
//! for: how `exec` treats signals and terminals, the exit statuses (from
//! `exit_code::TABLE`), the environment, and the examples (from
//! `cli::examples`, which `--help` shows too). Hyphenation is off: a word
//! broken mid-word ("sepa-rate") cannot be searched for or copied.

use clap_mangen::Man;

use crate::cli;
use crate::exit_code::{EVERY, SIGNAL_ROW, TABLE};

use super::description;

/// Every variable `redlock` reads, and the commands that read it (`EVERY`:
/// all of them). A test checks that each `REDLOCK_*` name in the source is
/// on some page.
const ENVIRONMENT: [(&str, &[&str], &str); 14] = [
    (
        "REDLOCK_SERVERS",
        EVERY,
        "The server URLs, as for -s, separated by commas; used when no -s is given.",
    ),
    (
        "REDLOCK_SERVERS_FILE",
        EVERY,
        "A file of server URLs, one per line, as --servers-file; used when neither -s nor \
         REDLOCK_SERVERS names servers.",
    ),
    (
        "REDLOCK_CONFIG_FILE",
        EVERY,
        "A config file of settings for every client (restart-guard, server-timeout, prefix, \
         name-key), as --config-file.",
    ),
    (
        "REDLOCK_SERVER_TIMEOUT",
        EVERY,
        "The default of --server-timeout.",
    ),
    (
        "REDLOCK_RESTART_GUARD",
        EVERY,
        "The default of --restart-guard.",
    ),
    (
        "REDLOCK_TLS_CA_CERT",
        EVERY,
        "The default of --tls-ca-cert.",
    ),
    ("REDLOCK_PREFIX", EVERY, "The default of --prefix."),
    (
        "REDLOCK_WAKEUPS",
        &["acquire", "exec"],
        "0 turns wake-ups on release off: a waiting acquire or exec then only polls, after a \
         random pause, instead of trying again as soon as a release is announced. For \
         benchmarks and debugging; 1 or unset leaves them on.",
    ),
    (
        "REDLOCK_TOKEN",
        &["release", "extend", "done", "exec"],
        "release, extend and done: the token, when no TOKEN is given. exec: with REDLOCK_NAME, \
         the lock an outer exec holds (see REDLOCK_NAME).",
    ),
    (
        "REDLOCK_NAME",
        &["exec"],
        "The lock's name, without the prefix, that an outer exec sets for its command. A redlock \
         exec of the same NAME inside the command, with REDLOCK_TOKEN still holding the lock, \
         runs its command at once, under the lock the outer exec keeps.",
    ),
    (
        "REDLOCK_SLOT",
        &["exec"],
        "The slot, 0 to K-1, that an outer exec --limit K holds, set for its command. A redlock \
         exec --limit K of the same NAME inside it, with REDLOCK_TOKEN still holding that slot, \
         runs its command at once, under the slot the outer exec keeps.",
    ),
    (
        "REDLOCK_FENCE",
        &["exec"],
        "Not read: exec --fence sets it for its command (the fencing token), and a plain exec \
         unsets it, so that a command never sees the fence of another lock.",
    ),
    (
        "XDG_CONFIG_HOME",
        EVERY,
        "The per-user servers and config files are $XDG_CONFIG_HOME/redlock/servers and \
         $XDG_CONFIG_HOME/redlock/config.",
    ),
    (
        "HOME",
        EVERY,
        "Without XDG_CONFIG_HOME, the per-user servers and config files are \
         $HOME/.config/redlock/servers and $HOME/.config/redlock/config.",
    ),
];

/// What `exec` sets in the command's environment, so that a `redlock`
/// inside it reaches the same lock and servers (`commands/exec.rs`,
/// `commands/exec/handoff.rs`).
const EXEC_EXPORTS: [(&str, &str); 10] = [
    ("REDLOCK_NAME", "The lock's name, without the prefix."),
    (
        "REDLOCK_TOKEN",
        "The lock's token, for redlock status or a nested redlock exec of the same NAME.",
    ),
    (
        "REDLOCK_SLOT",
        "With --limit K: the slot held, 0 to K-1 (its lock is NAME#SLOT). Unset without --limit.",
    ),
    (
        "REDLOCK_FENCE",
        "With --fence: the fencing token, a number above every earlier holder's, for storage to \
         reject writes that carry a lower one. Unset without --fence.",
    ),
    (
        "REDLOCK_SERVERS",
        "The server URLs, when none has a password.",
    ),
    (
        "REDLOCK_SERVERS_FILE",
        "When a server has a password: the servers file it came from, or a file of mode 0600 \
         that only this user can read, removed when the command has ended. No password is put \
         in the environment or the command line; REDLOCK_SERVERS is then unset.",
    ),
    (
        "REDLOCK_PREFIX",
        "The prefix, set even when empty, so that a config file's prefix does not apply instead.",
    ),
    ("REDLOCK_RESTART_GUARD", "The restart guard exec used."),
    (
        "REDLOCK_CONFIG_FILE",
        "The config file given, as an absolute path.",
    ),
    (
        "REDLOCK_TLS_CA_CERT",
        "The CA file given, as an absolute path.",
    ),
];

/// What `exec` does with signals and terminals: the README's account, short.
const EXEC_SIGNALS: [(&str, &str); 6] = [
    (
        "Signals",
        "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to exec are passed on to the \
         command's process group; when the command ends, exec releases the lock and exits with \
         the command's status. If the command died of a signal that exec got and passed on, exec \
         then dies of the same signal (SIGQUIT, which would dump core: exit 131), so that a \
         script run from a shell stops at a Ctrl-C. While exec still waits for the lock, they \
         make it release what it took and die of the signal in the same way, without running \
         the command. A signal that was ignored when exec started is neither handled nor passed \
         on, and the command inherits it ignored \
         (nohup redlock exec ... protects the command from SIGHUP).",
    ),
    (
        "Losing the lock",
        "When an extension finds the lock gone, or none succeeds in time, exec sends --signal \
         (SIGTERM by default, then SIGCONT) to the command's process group, waits -k (5s by \
         default) or until the group is empty, sends SIGKILL, and exits 79. Independently of any \
         loss being seen, this stop is scheduled so that SIGKILL lands before the lock's validity \
         ends; a watchdog process enforces it even if exec itself is frozen.",
    ),
    (
        "SIGTSTP and SIGCONT",
        "SIGTSTP and SIGCONT sent to exec are passed on to the command's process group. Without \
         a terminal, kill -TSTP pauses the command while exec goes on holding and extending the \
         lock. While exec waits for the lock, SIGTSTP stops exec.",
    ),
    (
        "Terminals",
        "exec gives the command's process group the terminal, as a shell does for a job: at once \
         when exec runs alone in the foreground of a terminal, otherwise when the command stops \
         because it reads or writes the terminal. Ctrl-C and Ctrl-\\ then reach the command.",
    ),
    (
        "Ctrl-Z",
        "Ctrl-Z stops the command; exec takes the terminal back and stops its own job, so that \
         the shell gets control; fg continues both. Nothing extends the lock while the job is \
         suspended: once the validity runs out, the watchdog stops the command, and exec reports \
         79 when it is continued.",
    ),
    (
        "If exec is killed",
        "With SIGKILL, the command dies too (PR_SET_PDEATHSIG), and the watchdog stops the rest of \
         its process group. The lock then lapses after its TTL.",
    ),
];

/// `(file name, contents)` of `redlock.1` and one page per visible subcommand.
pub fn man_pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    // `redlock help CMD` is `redlock CMD --help`: no page of its own.
    let root = <cli::Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    let command = cli::fitted(root, cli::Detail::Full);
    let mut pages = vec![("redlock.1".to_owned(), render(command.clone(), "")?)];
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        // clap wants a 'static name; leaking a few short strings in a command
        // that exits right after is harmless.
        let name: &'static str = format!("redlock-{}", sub.get_name()).leak();
        let mut page = sub.clone().name(name).display_name(name);
        if let (Some(about), Some(more)) = (sub.get_about(), description::of(sub.get_name())) {
            page = page.long_about(format!("{about}.\n\n{more}"));
        }
        pages.push((format!("{name}.1"), render(page, sub.get_name())?));
    }
    Ok(pages)
}

/// The page of `command`, the subcommand `sub` ("" for redlock itself).
/// The page's VERSION is the plain version: clap_mangen would print the long
/// one (the commit, the build date), and the committed pages would change
/// with every commit.
fn render(command: clap::Command, sub: &str) -> anyhow::Result<Vec<u8>> {
    let command = command.long_version(None::<&'static str>);
    let man = Man::new(command.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    page.extend_from_slice(b".nh\n.ad l\n");
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if command.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    let mut ours = String::new();
    if sub == "exec" {
        section(&mut ours, "SIGNALS AND TERMINALS");
        for (title, text) in EXEC_SIGNALS {
            ours.push_str(&format!(".TP\n.B {}\n{}\n", escape(title), escape(text)));
        }
    }
    exit_status(&mut ours, sub);
    environment(&mut ours, sub);
    examples(&mut ours, sub);
    page.extend_from_slice(ours.as_bytes());
    man.render_version_section(&mut page)?;
    Ok(page)
}

fn section(page: &mut String, title: &str) {
    page.push_str(&format!(".SH {title}\n"));
}

/// EXIT STATUS: for `exec`, its own account first; then the fixed statuses
/// of the command (every one on redlock's own page), from the one table,
/// and 128+N where the command catches signals.
fn exit_status(page: &mut String, sub: &str) {
    section(page, "EXIT STATUS");
    if sub == "exec" {
        page.push_str(&format!("{}\n", escape(EXEC_STATUS)));
    }
    let of_page = |commands: &[&str]| sub.is_empty() || commands.contains(&sub);
    for row in TABLE.iter().filter(|row| of_page(row.commands)) {
        page.push_str(&format!(
            ".TP\n.B {}\n{}\n",
            row.exit.code(),
            escape(row.help)
        ));
    }
    let (status, meaning, commands) = SIGNAL_ROW;
    if of_page(commands) {
        page.push_str(&format!(".TP\n.B {status}\n{}\n", escape(meaning)));
    }
}

/// What `exec` exits with besides the rows of the table.
const EXEC_STATUS: &str = "The command's own status, when it ran and exited; 128+N if it died of \
    signal N (if exec got that signal itself and passed it on, exec dies of it too, unless it is \
    SIGQUIT); 126 if the command could not be run, 127 if it was not found. Otherwise one of \
    these; 75 (or the -E code) means that the command did not run, 79 that the lock was lost \
    while it ran and the command was stopped:";

/// ENVIRONMENT: the variables the command reads (every one on redlock's own
/// page); for `exec`, then those it sets for the command.
fn environment(page: &mut String, sub: &str) {
    section(page, "ENVIRONMENT");
    for (name, commands, text) in ENVIRONMENT {
        if sub.is_empty() || commands.contains(&sub) {
            page.push_str(&format!(".TP\n.B {name}\n{}\n", escape(text)));
        }
    }
    if sub == "exec" {
        page.push_str(".PP\nexec sets these for the command:\n");
        for (name, text) in EXEC_EXPORTS {
            page.push_str(&format!(".TP\n.B {name}\n{}\n", escape(text)));
        }
    }
}

/// EXAMPLES: each with what it does, then its lines as typed. The page of
/// redlock itself gathers those of every command.
fn examples(page: &mut String, sub: &str) {
    section(page, "EXAMPLES");
    let subs: Vec<&str> = match sub {
        "" => vec!["exec", "acquire", "release", "extend", "status"],
        sub => vec![sub],
    };
    for example in subs.into_iter().flat_map(cli::examples) {
        page.push_str(&format!(
            ".PP\n{}:\n.PP\n.RS 4\n.nf\n",
            escape(example.what)
        ));
        for line in example.lines {
            page.push_str(&format!("{}\n", escape(line)));
        }
        page.push_str(".fi\n.RE\n");
    }
}

/// Text for a roff line: backslashes and minus signs as roff spells them,
/// and a leading `.` or `'` kept from being read as a request.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') {
        format!("\\&{text}")
    } else {
        text
    }
}
