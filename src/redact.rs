//! The one redactor: what `redlock` shows or stores of text that may hold
//! secrets. Server URLs lose their password wherever they appear (clap's
//! messages quote the arguments they did not expect); a value echoed in a
//! message is redacted and escaped; a command line recorded beside a lock
//! (only with `exec --record-command`) loses the usual forms of secrets too.
//! Shell quoting lives here because redaction works on the quoted line.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;

use crate::lock::{escape_and_cut, redact_url, SERVER_TEXT_SHOWN};

/// `message` with every word that could hold a URL's user-info redacted.
/// Words are split at any whitespace, which is kept as it was.
pub fn urls(message: &str) -> String {
    let mut shown = String::with_capacity(message.len());
    let mut word = String::new();
    for c in message.chars() {
        if c.is_whitespace() {
            shown.push_str(&url_word(&word));
            word.clear();
            shown.push(c);
        } else {
            word.push(c);
        }
    }
    shown.push_str(&url_word(&word));
    shown
}

fn url_word(word: &str) -> String {
    let inner = word.trim_matches(|c| c == '\'' || c == '"');
    if !inner.is_empty() && (inner.contains('@') || inner.contains("://")) {
        word.replace(inner, &redact_url(inner))
    } else {
        word.to_owned()
    }
}

/// A value given by the user (a flag's, a variable's) as a message may
/// echo it: URL passwords redacted, then escaped and cut to one line, so
/// that neither a secret nor a terminal control sequence gets through.
pub fn value(value: &OsStr) -> String {
    let text = String::from_utf8_lossy(value.as_bytes());
    escape_and_cut(urls(&text).as_bytes(), SERVER_TEXT_SHOWN)
}

/// What the holder record says of the command by default: the program's
/// base name and how many arguments follow it, never an argument itself.
pub fn command_summary(argv: &[OsString]) -> String {
    let program = argv.first().map(|p| program_name(p)).unwrap_or_default();
    match argv.len().saturating_sub(1) {
        0 => format!("{program} (no arguments)"),
        1 => format!("{program} (1 argument)"),
        n => format!("{program} ({n} arguments)"),
    }
}

/// The base name of a program, reduced to characters that are safe in a
/// lock name and on a terminal (others become `_`), at most 40 of them.
pub fn program_name(program: &OsStr) -> String {
    let base = program
        .as_bytes()
        .rsplit(|&b| b == b'/')
        .find(|part| !part.is_empty())
        .unwrap_or_default();
    let name: String = base
        .iter()
        .take(40)
        .map(|&b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'+' | b'-' => char::from(b),
            _ => '_',
        })
        .collect();
    if name.is_empty() {
        "command".to_owned()
    } else {
        name
    }
}

/// The command line as recorded with `exec --record-command`. The record is
/// readable by anyone who can read the servers (`ps` shows arguments only
/// to this host), so the usual forms of secrets in it are redacted: in each
/// argument, and in each word of an argument that is itself a command line
/// (`sh -c '…'`), words split at any whitespace and kept whole when quoted.
/// A secret word is replaced whole, spaces and all. It is a safety net, not
/// a guarantee: secrets belong in the environment or in files.
pub fn command_line(argv: &[OsString]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|word| String::from_utf8_lossy(word.as_bytes()).into_owned())
        .collect();
    let mut context = Context::default();
    let shown = redact_words(&words, &mut context, 0);
    let quoted: Vec<String> = shown.iter().map(|word| recorded_word(word)).collect();
    quoted.join(" ")
}

/// Whether the command line holds what looks like a secret: a word that
/// [`command_line`] would redact. `exec` derives no lock name from such a
/// line without a key (see `config::derived_name`).
pub fn holds_secret(argv: &[OsString]) -> bool {
    let words: Vec<String> = argv
        .iter()
        .map(|word| String::from_utf8_lossy(word.as_bytes()).into_owned())
        .collect();
    redact_words(&words, &mut Context::default(), 0) != words
}

/// What the words so far say about the ones to come.
#[derive(Debug, Default, Clone)]
struct Context {
    /// What the next word is, after a flag that takes a secret.
    next: Next,
    /// Programs seen on this line whose `-p` takes a password.
    mysql: bool,
    sshpass_or_docker: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Next {
    #[default]
    Plain,
    /// The whole word is a secret.
    Secret,
    /// `user:password` (`curl -u`): the part after the first ':' is.
    UserPassword,
    /// An HTTP header (`curl -H`): its value is, if its name says so.
    Header,
}

/// How deep command lines inside command lines are looked into.
const MAX_DEPTH: usize = 4;

fn redact_words(words: &[String], context: &mut Context, depth: usize) -> Vec<String> {
    words
        .iter()
        .map(|word| redact_word(word, context, depth))
        .collect()
}

/// One word, with what the words before it said.
fn redact_word(word: &str, context: &mut Context, depth: usize) -> String {
    match std::mem::take(&mut context.next) {
        Next::Secret if !word.is_empty() => return "***".to_owned(),
        Next::UserPassword => return user_password(word),
        Next::Header => {
            if let Some(shown) = header(word) {
                return shown;
            }
        }
        _ => {}
    }
    if let Some(shown) = secret_in_word(word, context) {
        return shown;
    }
    if depth < MAX_DEPTH && word.contains(|c: char| c.is_whitespace() || ";&|`$(".contains(c)) {
        return redact_script(word, context, depth + 1);
    }
    note_program(word, context);
    context.next = flag_takes(word, context);
    word.to_owned()
}

/// `-u user:password` (curl, and `redis-cli -u URL`).
fn user_password(word: &str) -> String {
    if word.contains("://") || word.contains('@') {
        return redact_url(word);
    }
    match word.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => word.to_owned(),
    }
}

/// An HTTP header whose name speaks of a secret, with its value hidden:
/// `Authorization: Bearer …`, `Cookie: …`, `X-Api-Key: …`.
fn header(word: &str) -> Option<String> {
    let (name, _) = word.split_once(':')?;
    let name = name.trim();
    let lower = name.to_ascii_lowercase();
    let secret = ["authorization", "cookie"]
        .iter()
        .any(|n| lower.ends_with(n))
        || names_a_secret(&lower);
    let is_name = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (secret && is_name).then(|| format!("{name}: ***"))
}

/// A word that is or holds a secret by its own form, whatever came before.
fn secret_in_word(word: &str, context: &Context) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    if lower.starts_with("pass:") {
        // openssl's `-pass pass:SECRET`, `-passin pass:SECRET`.
        return Some("pass:***".to_owned());
    }
    if let Some(shown) = header(word) {
        return Some(shown);
    }
    let one_word = !word.contains(char::is_whitespace);
    if one_word && word.contains("://") {
        return Some(url(word)).filter(|shown| shown != word);
    }
    if let Some((name, _)) = word.split_once('=') {
        if !name.contains(char::is_whitespace) && names_a_secret(name) {
            // The whole value, spaces and all.
            return Some(format!("{name}=***"));
        }
    }
    if one_word && word.contains('@') && word.contains(':') {
        return Some(redact_url(word)).filter(|shown| shown != word);
    }
    let attached_p = word.len() > 2 && word.starts_with("-p") && !word.starts_with("-p=");
    if attached_p && (context.mysql || context.sshpass_or_docker) {
        // mysql's `-pSECRET`, sshpass's `-pSECRET`.
        return Some("-p***".to_owned());
    }
    None
}

/// A URL without its user-info's password and without its query, which
/// may carry a token (`?private_token=…`).
fn url(word: &str) -> String {
    let redacted = redact_url(word);
    match redacted.split_once('?') {
        Some((base, _)) => format!("{base}?***"),
        None => redacted,
    }
}

/// Remembers the programs whose flags mean something else elsewhere.
fn note_program(word: &str, context: &mut Context) {
    let program = word.rsplit('/').next().unwrap_or(word);
    context.mysql |= ["mysql", "mariadb"].iter().any(|p| program.starts_with(p));
    context.sshpass_or_docker |= ["sshpass", "docker", "podman", "nerdctl"].contains(&program);
}

/// What the word after this one is, if this one is a flag that takes a
/// secret: `--password X`, `--client-secret X`, `-a X` (redis-cli),
/// `-p X` (sshpass, docker login), `-u user:pw` and `-H 'Header: …'`
/// (curl), `Bearer X`.
fn flag_takes(word: &str, context: &Context) -> Next {
    let lower = word.to_ascii_lowercase();
    match lower.as_str() {
        "-a" | "--auth" | "bearer" | "basic" | "token" => return Next::Secret,
        "-p" if context.sshpass_or_docker => return Next::Secret,
        "-u" | "--user" | "--proxy-user" => return Next::UserPassword,
        "-h" | "--header" | "--proxy-header" if word != "-h" => return Next::Header,
        _ => {}
    }
    let is_flag = lower.starts_with('-') && !lower.contains('=') && lower.len() > 2;
    if is_flag && names_a_secret(&lower) && !lower.ends_with("-stdin") && !lower.ends_with("-file")
    {
        return Next::Secret;
    }
    Next::Plain
}

/// Whether a variable, flag or header name speaks of a secret.
fn names_a_secret(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "secret",
        "token",
        "key",
        "auth",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// A word that is a command line itself: each of its words redacted in
/// place, quotes and all, the rest kept as written.
fn redact_script(script: &str, outer: &Context, depth: usize) -> String {
    let mut context = Context {
        next: Next::Plain,
        ..outer.clone()
    };
    let mut shown = String::with_capacity(script.len());
    let mut last = 0;
    for word in shell_words(script) {
        let redacted = redact_word(&word.value, &mut context, depth);
        if redacted != word.value {
            shown.push_str(&script[last..word.start]);
            shown.push_str(&recorded_word(&redacted));
            last = word.end;
        }
    }
    shown.push_str(&script[last..]);
    shown
}

/// A word of a command line, where it is and what it says unquoted.
struct ShellWord {
    start: usize,
    end: usize,
    value: String,
}

/// The words of a command line, as a shell would split them: at any
/// unquoted whitespace (space, tab, newline) and at `;&|()` and backquotes;
/// quotes and backslashes group and are removed.
fn shell_words(script: &str) -> Vec<ShellWord> {
    let separator = |c: char| c.is_whitespace() || ";&|()`".contains(c);
    let mut words = Vec::new();
    let mut chars = script.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if separator(c) {
            chars.next();
            continue;
        }
        let mut value = String::new();
        let mut end = script.len();
        while let Some(&(at, c)) = chars.peek() {
            if separator(c) {
                end = at;
                break;
            }
            chars.next();
            match c {
                '\'' => value.extend(chars.by_ref().map(|(_, c)| c).take_while(|&c| c != '\'')),
                '"' => {
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => value.extend(chars.next().map(|(_, c)| c)),
                            _ => value.push(c),
                        }
                    }
                }
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                _ => value.push(c),
            }
        }
        words.push(ShellWord { start, end, value });
    }
    words
}

/// A word as the record shows it: shell-quoted where needed, except that
/// `***` needs no quotes (the record is read, not run).
fn recorded_word(word: &str) -> String {
    let plain = |b: u8| b == b'*' || is_plain(b);
    if !word.is_empty() && word.bytes().all(plain) {
        return word.to_owned();
    }
    String::from_utf8_lossy(&shell_quote(word.as_bytes())).into_owned()
}

fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b)
}

fn shell_quote(word: &[u8]) -> Vec<u8> {
    if !word.is_empty() && word.iter().all(|&b| is_plain(b)) {
        return word.to_vec();
    }
    let mut quoted = vec![b'\''];
    for &b in word {
        if b == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(b);
        }
    }
    quoted.push(b'\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_usage_errors_are_redacted() {
        assert_eq!(
            urls("unexpected argument 'redis://:pw@h:2' found"),
            "unexpected argument 'redis://:***@h:2' found"
        );
        assert_eq!(urls("'u:pw@h:1'"), "'u:***@h:1'");
        assert_eq!(
            urls("invalid value '-5s' for '--ttl <DUR>'"),
            "invalid value '-5s' for '--ttl <DUR>'"
        );
        assert_eq!(urls("a\tredis://:pw@h\nb"), "a\tredis://:***@h\nb");
    }

    #[test]
    fn echoed_values_are_redacted_and_escaped() {
        let shown = value(OsStr::new("redis://:hunter2@h\x1b[31m\x07"));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains(['\x1b', '\x07']), "{shown}");
    }

    #[test]
    fn the_default_record_names_the_program_and_counts_the_arguments() {
        let argv = ["/usr/bin/mysql", "-phunter3", "db"].map(OsString::from);
        assert_eq!(command_summary(&argv), "mysql (2 arguments)");
        assert_eq!(command_summary(&argv[..1]), "mysql (no arguments)");
        assert_eq!(command_summary(&argv[..2]), "mysql (1 argument)");
        assert_eq!(program_name(OsStr::new("./a b\x1b/")), "a_b_");
        assert_eq!(program_name(OsStr::new("/")), "command");
    }

    #[test]
    fn credentials_in_the_command_line_are_not_recorded() {
        let argv = ["psql", "redis://:hunter2@db:5432", "two words"].map(OsString::from);
        let line = command_line(&argv);
        assert!(!line.contains("hunter2"), "{line}");
        assert!(line.contains("'two words'"), "{line}");
        let script = "redis-cli -a s1 -u redis://:s2@db:6379; PGPASSWORD=s3 psql; \
                      mysql -ps4 db; deploy --api-key=s5 --token s6 --verbose";
        let argv = ["sh", "-c", script].map(OsString::from);
        let line = command_line(&argv);
        for secret in ["s1", "s2", "s3", "s4", "s5", "s6"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        assert_eq!(
            line,
            "sh -c 'redis-cli -a *** -u redis://:***@db:6379; PGPASSWORD=*** psql; \
             mysql -p*** db; deploy --api-key=*** --token *** --verbose'"
        );
        let plain = ["make", "-j4", "deploy", "ENV=prod"].map(OsString::from);
        assert_eq!(command_line(&plain), "make -j4 deploy ENV=prod");
    }

    /// Each form, as separate arguments and inside `sh -c` with a space, a
    /// tab or a newline before it.
    #[test]
    fn every_listed_form_of_secret_is_redacted() {
        let forms: &[&[&str]] = &[
            &["curl", "-u", "admin:hunter2", "https://h/"],
            &["curl", "-H", "Authorization: Bearer hunter2", "https://h/"],
            &["curl", "--header", "X-Api-Key: hunter2"],
            &["curl", "https://admin:hunter2@h/x?private_token=hunter2"],
            &["tool", "--access-token", "hunter2"],
            &["tool", "--client-secret", "hunter2"],
            &["tool", "--api_key", "hunter2"],
            &["tool", "--apikey", "hunter2"],
            &["tool", "--password", "hunter2 with spaces"],
            &["tool", "--password=hunter2 with spaces"],
            &["tool", "PASSWORD=hunter2 with spaces"],
            &["sshpass", "-p", "hunter2", "ssh", "host"],
            &["sshpass", "-phunter2", "ssh", "host"],
            &["docker", "login", "-p", "hunter2", "registry"],
            &["openssl", "enc", "-pass", "pass:hunter2"],
            &["openssl", "enc", "-passin", "pass:hunter2"],
            &["mysql", "-phunter2"],
            &["redis-cli", "-a", "hunter2"],
        ];
        for form in forms {
            let argv: Vec<OsString> = form.iter().map(OsString::from).collect();
            let line = command_line(&argv);
            assert!(!line.contains("hunter2"), "{form:?}: {line}");
            for separator in [" ", "\t", "\n", " \t\n "] {
                let script: Vec<String> = form.iter().map(|w| quoted(w)).collect();
                let script = format!("true;{separator}{}", script.join(separator));
                let argv = ["sh", "-c", &script].map(OsString::from);
                let line = command_line(&argv);
                assert!(!line.contains("hunter2"), "{script:?}: {line}");
                assert!(!line.contains("spaces"), "{script:?}: {line}");
            }
        }
    }

    fn quoted(word: &str) -> String {
        String::from_utf8(shell_quote(word.as_bytes())).unwrap()
    }

    #[test]
    fn a_quoted_secret_is_hidden_whole_and_the_rest_kept() {
        let script = "mysql --password 'a b c' db\n\tcurl -H \"Authorization: Bearer x y\" u";
        let argv = ["sh", "-c", script].map(OsString::from);
        assert_eq!(
            command_line(&argv),
            "sh -c 'mysql --password *** db\n\tcurl -H '\\''Authorization: ***'\\'' u'"
        );
    }
}
