//! The one redactor: what `redlock` shows or stores of text that may hold
//! secrets. Server URLs lose their password wherever they appear (clap's
//! messages quote the arguments they did not expect); a command line
//! recorded beside a lock loses the usual forms of secrets too. Shell
//! quoting lives here because redaction works on the quoted line.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;

use crate::lock::redact_url;

/// `message` with every word that could hold a URL's user-info redacted.
pub fn urls(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            let inner = word.trim_matches(|c| c == '\'' || c == '"');
            if inner.contains('@') || inner.contains("://") {
                word.replace(inner, &redact_url(inner))
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command line as recorded. The record is readable by anyone who can
/// read the servers (`ps` shows arguments only to this host), so the usual
/// forms of secrets in it are redacted, word by word, also inside a `sh -c`
/// string: credentials in URLs, `NAME=value` and `--name=value` when the
/// name speaks of a password, token, secret, key or auth, the word after
/// `-a` (redis-cli) or `--password` and its kind, and mysql's `-pSECRET`.
/// It is a safety net, not a guarantee: secrets belong in the environment
/// or in files, not in arguments.
pub fn command_line(argv: &[OsString]) -> String {
    let line = String::from_utf8_lossy(&quoted_command_line(argv)).into_owned();
    let mut secret_next = false;
    let mut mysql = false;
    let mut shown = Vec::new();
    for word in line.split(' ') {
        let core = word.trim_matches(|c: char| "'\"();`".contains(c));
        let redacted = if core.is_empty() {
            core.to_owned()
        } else if std::mem::take(&mut secret_next) {
            "***".to_owned()
        } else {
            mysql |= core
                .rsplit('/')
                .next()
                .is_some_and(|p| p.starts_with("mysql") || p.starts_with("mariadb"));
            redact_word(core, mysql, &mut secret_next)
        };
        shown.push(word.replacen(core, &redacted, 1));
    }
    shown.join(" ")
}

/// Flags whose next word is a secret.
const SECRET_FLAGS: [&str; 8] = [
    "-a",
    "--pass",
    "--password",
    "--passwd",
    "--token",
    "--secret",
    "--api-key",
    "--auth",
];

/// One word of a command line with what looks like a secret in it hidden;
/// sets `secret_next` when the next word is one.
fn redact_word(word: &str, mysql: bool, secret_next: &mut bool) -> String {
    if SECRET_FLAGS.contains(&word.to_ascii_lowercase().as_str()) {
        *secret_next = true;
        return word.to_owned();
    }
    if let Some((name, _)) = word.split_once('=') {
        if names_a_secret(name) {
            return format!("{name}=***");
        }
    }
    if mysql && word.starts_with("-p") && word.len() > 2 {
        return "-p***".to_owned();
    }
    if word.contains('@') || word.contains("://") {
        return redact_url(word);
    }
    word.to_owned()
}

/// Whether a variable or flag name speaks of a secret.
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
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The words of `argv`, shell-quoted where needed, joined by spaces.
pub fn quoted_command_line(argv: &[OsString]) -> Vec<u8> {
    let words: Vec<Vec<u8>> = argv
        .iter()
        .map(|word| shell_quote(word.as_bytes()))
        .collect();
    words.join(&b' ')
}

fn shell_quote(word: &[u8]) -> Vec<u8> {
    let plain = |b: &u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(b);
    if !word.is_empty() && word.iter().all(plain) {
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
}
