//! What the generated completions offer: the visible subcommands and never
//! the hidden ones, signal names for `--signal`, commands for the command of
//! `exec` and lock names from the servers. Each script is run by its shell's
//! own completion engine, as on Tab: bash's function with COMP_WORDS set,
//! fish's `complete -C`, zsh's compsys in a pseudo-terminal (zpty).

use std::process::Command;

/// The generated script for the file `name`, as text.
fn script(name: &str) -> String {
    let (_, contents) = redlock::generate::completions()
        .into_iter()
        .find(|(file, _)| file == name)
        .unwrap_or_else(|| panic!("no completion file {name}"));
    String::from_utf8(contents).unwrap()
}

const VISIBLE: [&str; 5] = ["acquire", "release", "extend", "status", "exec"];

#[test]
fn no_completion_offers_a_hidden_subcommand() {
    for (name, contents) in redlock::generate::completions() {
        let text = String::from_utf8(contents).unwrap();
        for hidden in [
            "generate",
            "__watchdog",
            "watchdog",
            "grace-ms",
            "margin-ms",
        ] {
            assert!(!text.contains(hidden), "{name} offers {hidden}");
        }
        for visible in VISIBLE {
            assert!(text.contains(visible), "{name} lacks {visible}");
        }
    }
}

#[test]
fn zsh_and_fish_offer_signal_names_and_commands() {
    let zsh = script("_redlock");
    let signal = zsh
        .lines()
        .find(|line| line.starts_with("'--signal="))
        .expect("zsh completes --signal");
    assert!(signal.ends_with(":SIG:(TERM INT HUP QUIT KILL USR1 USR2 ILL TRAP ABRT BUS FPE SEGV PIPE ALRM STKFLT XCPU XFSZ VTALRM PROF IO PWR SYS)' \\"), "{signal}");
    let fish = script("redlock.fish");
    // The possible values of one option span lines, up to the next `complete`.
    let start = fish
        .find("__fish_redlock_in_exec_command\" -l signal")
        .expect("fish completes --signal");
    let signal = fish[start..].split("\ncomplete ").next().unwrap();
    for name in ["TERM", "INT", "HUP", "KILL", "USR1"] {
        assert!(signal.contains(&format!("{name}\\t")), "{signal}");
    }
    assert!(
        !signal.contains("STOP") && !signal.contains("CONT"),
        "{signal}"
    );
}

/// What the bash script offers for the command line `words` (the last one
/// being completed), with the script loaded as bash loads it and no
/// bash-completion package, which the script does not need.
fn bash_offers(words: &[&str]) -> Vec<String> {
    bash_offers_with(words, &[])
}

/// [`bash_offers`] with the variables `env` set.
fn bash_offers_with(words: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("redlock.bash");
    std::fs::write(&file, script("redlock.bash")).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        r#"source "$1" || exit 99
        complete -p redlock | grep -q -- '-F _redlock_with_exec_command' || exit 98
        COMP_WORDS=({words})
        COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
        COMP_LINE="${{COMP_WORDS[*]}}"
        COMP_POINT=${{#COMP_LINE}}
        _redlock_with_exec_command redlock "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
        printf '%s\n' "${{COMPREPLY[@]}}""#,
        words = quoted.join(" ")
    );
    let out = shell_command("bash", env)
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{words:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[track_caller]
fn assert_offers(words: &[&str], present: &[&str], absent: &[&str]) {
    let offered = bash_offers(words);
    for word in present {
        assert!(
            offered.iter().any(|o| o == word),
            "{words:?}: no {word} in {offered:?}"
        );
    }
    for word in absent {
        assert!(
            !offered.iter().any(|o| o == word),
            "{words:?}: {word} in {offered:?}"
        );
    }
}

#[test]
fn bash_offers_subcommands_but_not_the_hidden_ones() {
    assert_offers(&["redlock", ""], &VISIBLE, &["generate", "__watchdog"]);
    assert_offers(
        &["redlock", "help", ""],
        &["exec"],
        &["generate", "__watchdog"],
    );
    assert_offers(&["redlock", "gen"], &[], &["generate"]);
    assert_offers(&["redlock", "__"], &[], &["__watchdog"]);
}

#[test]
fn bash_offers_signal_names_for_signal() {
    assert_offers(
        &["redlock", "exec", "--signal", ""],
        &["TERM", "INT", "KILL"],
        &["STOP", "--ttl"],
    );
    assert_offers(
        &["redlock", "exec", "--signal", "US"],
        &["USR1", "USR2"],
        &["TERM"],
    );
}

#[test]
fn bash_offers_commands_where_execs_command_starts() {
    let ls = &["ls"][..];
    // After `--`, or after NAME: the command's first word.
    assert_offers(&["redlock", "exec", "--", "ls"], ls, &[]);
    assert_offers(&["redlock", "exec", "nightly", "ls"], ls, &[]);
    // Options and their values before NAME and between NAME and the command,
    // also where bash split a word at `=` or `:`.
    assert_offers(
        &[
            "redlock", "-s", "redis", ":", "//h", ":", "1", "exec", "-n", "nightly", "-w", "5s",
            "ls",
        ],
        ls,
        &[],
    );
    assert_offers(
        &[
            "redlock", "exec", "--ttl", "=", "5s", "-nw5s", "nightly", "ls",
        ],
        ls,
        &[],
    );
    // Not in NAME's place, not in an option's value, and not with -c.
    assert_offers(&["redlock", "exec", "ls"], &[], ls);
    assert_offers(&["redlock", "exec", ""], &["--ttl"], ls);
    assert_offers(&["redlock", "exec", "-w", "ls"], &[], ls);
    assert_offers(&["redlock", "exec", "nightly", "-c", "ls"], &[], ls);
    // An option where the command would start is redlock's.
    assert_offers(&["redlock", "exec", "nightly", "--tt"], &["--ttl"], &[]);
}

/// `shell` with a clean environment but `env`: no REDLOCK_* of the machine,
/// no servers or config file of the user, and `redlock` on PATH (the
/// scripts run it to list lock names).
fn shell_command(shell: &str, env: &[(&str, &str)]) -> Command {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_redlock"));
    let home = std::env::temp_dir().join("redlock-completion-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(shell);
    cmd.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", bin.parent().unwrap().display()),
        )
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("TERM", "dumb")
        .envs(env.iter().copied());
    cmd
}

/// What fish offers for `line` (the word being completed last), with the
/// script sourced as fish loads it: fish's own `complete -C`.
fn fish_offers(line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("redlock.fish");
    std::fs::write(&file, script("redlock.fish")).unwrap();
    let out = shell_command("fish", env)
        .args([
            "--no-config",
            "-c",
            "source $argv[1]; or exit 99; complete -C $argv[2]",
        ])
        .arg(&file)
        .arg(line)
        .output()
        .expect("fish (Debian: fish; scripts/test installs it)");
    assert!(
        out.status.success(),
        "fish {line:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_owned())
        .collect()
}

/// Drives zsh's completion system as a terminal would: an interactive
/// `zsh -f` in a pseudo-terminal (zpty), compinit with the script's
/// directory first in fpath, the line typed and a Tab. `compadd` is wrapped
/// to print each match it adds, between two NUL lines that the completion
/// hooks print before and after.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 99
zpty z zsh -f -i
zpty -w z "PROMPT= RPROMPT=; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'bindkey "^I" complete-word; null-line() { echo -E - $'"'"'\0'"'"' }'
zpty -w z 'compprefuncs=( null-line ); comppostfuncs=( null-line exit )'
zpty -w z "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' insert-tab false"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do echo -E - "<<$h>>"; done }'
zpty -w z "$2"$'\t'
integer nul=0
local line
while zpty -r z line; do
  [[ $line == *$'\0'* ]] && { (( nul++ )); (( nul == 2 )) && break; continue; }
  (( nul == 1 )) && print -r -- "$line"
done
zpty -d z
(( nul == 2 )) || exit 98
"#;

/// What zsh offers for `line` (the word being completed last).
fn zsh_offers(line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("_redlock"), script("_redlock")).unwrap();
    let driver = dir.path().join("driver.zsh");
    std::fs::write(&driver, ZSH_DRIVER).unwrap();
    let out = shell_command("timeout", env)
        .args(["20", "zsh", "-f"])
        .arg(&driver)
        .arg(dir.path())
        .arg(line)
        .output()
        .expect("zsh (Debian: zsh; scripts/test installs it)");
    assert!(
        out.status.success(),
        "zsh {line:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some(l.split_once("<<")?.1.rsplit_once(">>")?.0.to_owned()))
        .collect()
}

type Offers = fn(&str, &[(&str, &str)]) -> Vec<String>;

/// The shells whose completion engines are driven here; bash's words are
/// split at spaces.
fn shells() -> [(&'static str, Offers); 3] {
    fn bash(line: &str, env: &[(&str, &str)]) -> Vec<String> {
        let mut words: Vec<&str> = line.split(' ').collect();
        if line.ends_with(' ') {
            words.pop();
            words.push("");
        }
        bash_offers_with(&words, env)
    }
    [("bash", bash), ("zsh", zsh_offers), ("fish", fish_offers)]
}

#[track_caller]
fn assert_shell_offers(
    shell: (&str, Offers),
    line: &str,
    env: &[(&str, &str)],
    present: &[&str],
    absent: &[&str],
) {
    let (name, offers) = shell;
    let offered = offers(line, env);
    for word in present {
        assert!(
            offered.iter().any(|o| o == word),
            "{name} {line:?}: no {word} in {offered:?}"
        );
    }
    for word in absent {
        assert!(
            !offered.iter().any(|o| o == word),
            "{name} {line:?}: {word} in {offered:?}"
        );
    }
}

/// The README's promise: after `redlock exec NAME ` and after `--`, the
/// command is completed as a command of its own, in every shell; before
/// NAME, redlock's options.
#[test]
fn every_shell_completes_execs_command_after_name_or_double_dash() {
    for shell in shells() {
        let ls = &["ls"][..];
        assert_shell_offers(shell, "redlock exec nightly l", &[], ls, &[]);
        assert_shell_offers(shell, "redlock exec -- l", &[], ls, &[]);
        assert_shell_offers(shell, "redlock exec -n nightly -w 5s l", &[], ls, &[]);
        assert_shell_offers(shell, "redlock exec --ttl 5s -- l", &[], ls, &[]);
        assert_shell_offers(shell, "redlock exec --t", &[], &["--ttl"], ls);
        // NAME's place is not the command's.
        assert_shell_offers(shell, "redlock exec l", &[], &[], ls);
        // exec refuses --json: not offered.
        assert_shell_offers(shell, "redlock exec --j", &[], &[], &["--json"]);
    }
}

/// A NAME is completed from `redlock list --names` on the servers the
/// command line or the environment names.
#[test]
fn every_shell_completes_lock_names_from_the_servers() {
    let cluster = crate::support::Cluster::start(1);
    crate::support::acquire(&cluster, "nightly-report", &[]);
    crate::support::acquire(&cluster, "deploy", &[]);
    let servers = cluster.servers_arg();
    let env = [("REDLOCK_SERVERS", servers.as_str())];
    for shell in shells() {
        assert_shell_offers(
            shell,
            "redlock status nig",
            &env,
            &["nightly-report"],
            &["deploy"],
        );
        assert_shell_offers(shell, "redlock exec -n de", &env, &["deploy"], &[]);
        assert_shell_offers(
            shell,
            "redlock release ",
            &env,
            &["deploy", "nightly-report"],
            &[],
        );
        // Not in another argument's place, nor without the servers.
        assert_shell_offers(shell, "redlock exec nightly de", &env, &[], &["deploy"]);
        assert_shell_offers(shell, "redlock status de", &[], &[], &["deploy"]);
    }
    // The servers named on the command line, not in the environment (the
    // URL without a colon, which bash splits words at).
    let port = cluster.servers[0].port();
    let alias = format!(
        "redlock --servers-file {}/servers status nig",
        write_servers_file(port)
    );
    for shell in shells() {
        assert_shell_offers(shell, &alias, &[], &["nightly-report"], &[]);
    }
}

/// A directory holding a servers file that names 127.0.0.1:`port`.
fn write_servers_file(port: u16) -> String {
    let dir = std::env::temp_dir().join(format!("redlock-completion-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("servers"), format!("127.0.0.1:{port}\n")).unwrap();
    dir.display().to_string()
}
