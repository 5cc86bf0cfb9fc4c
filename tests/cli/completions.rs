//! What the generated completions offer: the visible subcommands and never
//! the hidden ones, signal names for `--signal`, and commands for the command
//! of `exec`. The bash script is run by bash, as a shell would on Tab.

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
    assert!(
        zsh.lines()
            .any(|line| line.starts_with("'*::argv -- ") && line.ends_with(":_cmdambivalent' \\")),
        "zsh completes exec's command as a command line"
    );
    let fish = script("redlock.fish");
    // The possible values of one option span lines, up to the next `complete`.
    let start = fish
        .find("using_subcommand exec\" -l signal")
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
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(&file)
        .env("PATH", "/usr/bin:/bin")
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
