//! What this process records about itself beside a lock it takes: enough for
//! whoever finds the lock busy to know who to ask, and whether it is stale.

use std::ffi::OsString;

use std::time::Duration;

use crate::lock::{process_started, Holder};
use crate::redact;

/// What the record says of `exec`'s command.
#[derive(Debug, Clone, Copy)]
pub struct Command<'a> {
    pub argv: &'a [OsString],
    /// The whole line (redacted) rather than the program and the number
    /// of its arguments (`--record-command`).
    pub whole_line: bool,
}

/// This process, with the user's note and, for `exec`, the command. The pid
/// is the process that holds the lock: `exec` itself, or for `acquire`
/// (which exits once it printed the token) the process that ran it. The
/// record is readable by anyone who can read the servers: by default it
/// holds no argument of the command, and the job URL holds no credentials.
/// `exec` says how often it renews the lock (`renew_every`), so that
/// whoever finds it busy knows that its countdown restarts.
pub fn this_process(
    message: Option<String>,
    command: Option<Command<'_>>,
    renew_every: Option<Duration>,
) -> Holder {
    let pid = match command {
        Some(_) => std::process::id(),
        None => nix::unistd::getppid().as_raw().unsigned_abs(),
    };
    Holder {
        token: String::new(),
        host: host_name(),
        pid,
        pid_started: process_started(pid),
        renew_every_ms: renew_every
            .map(|every| u64::try_from(every.as_millis()).unwrap_or(u64::MAX)),
        user: user_name(),
        command: command.map(|c| match c.whole_line {
            true => redact::command_line(c.argv),
            false => redact::command_summary(c.argv),
        }),
        command_pid: None,
        keeper_pid: None,
        message,
        job: job_url(|name| std::env::var(name).ok()),
        cancellable: false,
        serial: None,
        once: None,
    }
}

/// `user@host`: who breaks a lock, as recorded beside it.
pub fn who() -> String {
    format!("{}@{}", user_name(), host_name())
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown host".to_owned())
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
        .map(|url| without_credentials(&url))
        .filter(|url| !url.is_empty())
}

/// A URL without its user-info (`https://admin:pw@ci/…`), query
/// (`?private_token=…`) and fragment: a job is found by its path.
fn without_credentials(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}{host}{path}")
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
    fn job_urls_lose_credentials_and_queries() {
        let url = |value: &'static str, name: &'static str| {
            job_url(move |n: &str| (n == name).then(|| value.to_owned())).unwrap()
        };
        assert_eq!(
            url("https://admin:hunter2@jenkins/job/3/", "BUILD_URL"),
            "https://jenkins/job/3/"
        );
        assert_eq!(
            url("https://gitlab/j/1?private_token=hunter2#x", "CI_JOB_URL"),
            "https://gitlab/j/1"
        );
        assert_eq!(
            url("https://a@b:pw@bk/b/2?x=1", "BUILDKITE_BUILD_URL"),
            "https://bk/b/2"
        );
    }
}
