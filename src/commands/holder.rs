//! What this process records about itself beside a lock it takes: enough for
//! whoever finds the lock busy to know who to ask, and whether it is stale.

use std::ffi::OsString;

use crate::config::quoted_command_line;
use crate::lock::{redact_url, Holder};

/// This process, with the user's note and, for `exec`, the command. The pid
/// is the process that holds the lock: `exec` itself, or for `acquire`
/// (which exits once it printed the token) the process that ran it.
pub fn this_process(message: Option<String>, argv: Option<&[OsString]>) -> Holder {
    let pid = match argv {
        Some(_) => std::process::id(),
        None => nix::unistd::getppid().as_raw().unsigned_abs(),
    };
    Holder {
        token: String::new(),
        host: nix::unistd::gethostname()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown host".to_owned()),
        pid,
        user: user_name(),
        command: argv.map(command_line),
        command_pid: None,
        message,
        job: job_url(|name| std::env::var(name).ok()),
    }
}

/// The login name: as the session says ($USER, $LOGNAME), else as the
/// password database says, else the uid.
fn user_name() -> String {
    let from_env = ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()));
    from_env.unwrap_or_else(|| {
        let uid = nix::unistd::getuid();
        match nix::unistd::User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => format!("uid {uid}"),
        }
    })
}

/// The command line as recorded. The record is readable by anyone who can
/// read the servers (`ps` shows arguments only to this host), so the usual
/// forms of secrets in it are redacted, word by word, also inside a `sh -c`
/// string: credentials in URLs, `NAME=value` and `--name=value` when the
/// name speaks of a password, token, secret, key or auth, the word after
/// `-a` (redis-cli) or `--password` and its kind, and mysql's `-pSECRET`.
/// It is a safety net, not a guarantee: secrets belong in the environment
/// or in files, not in arguments.
fn command_line(argv: &[OsString]) -> String {
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

/// The CI job's URL, from the variables each CI sets: GitHub Actions,
/// GitLab CI, Buildkite, Jenkins.
fn job_url(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let github = || {
        Some(format!(
            "{}/{}/actions/runs/{}",
            var("GITHUB_SERVER_URL")?,
            var("GITHUB_REPOSITORY")?,
            var("GITHUB_RUN_ID")?
        ))
    };
    github()
        .or_else(|| var("CI_JOB_URL"))
        .or_else(|| var("BUILDKITE_BUILD_URL"))
        .or_else(|| var("BUILD_URL"))
        .filter(|url| !url.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ci_names_its_job() {
        let env = |pairs: &'static [(&str, &str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            job_url(env(&[
                ("GITHUB_SERVER_URL", "https://github.com"),
                ("GITHUB_REPOSITORY", "o/r"),
                ("GITHUB_RUN_ID", "42"),
            ])),
            Some("https://github.com/o/r/actions/runs/42".into())
        );
        assert_eq!(
            job_url(env(&[("CI_JOB_URL", "https://gitlab/j/1")])),
            Some("https://gitlab/j/1".into())
        );
        assert_eq!(
            job_url(env(&[("BUILDKITE_BUILD_URL", "https://bk/b/2")])),
            Some("https://bk/b/2".into())
        );
        assert_eq!(
            job_url(env(&[("BUILD_URL", "https://jenkins/job/3/")])),
            Some("https://jenkins/job/3/".into())
        );
        assert_eq!(job_url(env(&[("GITHUB_RUN_ID", "42")])), None);
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
