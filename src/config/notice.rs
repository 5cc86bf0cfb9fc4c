//! What the user should hear about how the command was given: secrets
//! where others can read them (a file others can change is refused, not
//! noticed: config/file.rs), and servers whose names do not resolve. Data
//! only: `output` words it, but for [`Unresolved::describe`], which the
//! configuration error for too many such servers says too.

use crate::lock::{escape_and_cut, ServerSpec};

/// Something about how the command was given that the user should hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A `-s` URL holds a password, which every user can read in `ps`.
    PasswordOnCommandLine,
    /// This servers file holds a password and is readable by others.
    ReadableSecretFile(std::path::PathBuf),
    /// A server whose host name does not resolve, while enough others do
    /// for a majority: it counts as a server that is down.
    Unresolved(Unresolved),
}

/// A server whose host name the resolver says does not exist.
#[derive(Debug, Clone)]
pub struct Unresolved {
    pub server: ServerSpec,
    /// The resolver's words (`gai_strerror`).
    pub why: String,
    /// How messages name the source of the server list.
    pub source: String,
    /// Whether it was given with `-s`.
    pub flag: bool,
}

impl PartialEq for Unresolved {
    fn eq(&self, other: &Self) -> bool {
        self.server.is(&other.server) && self.why == other.why
    }
}

impl Eq for Unresolved {}

impl Unresolved {
    /// `-s deploy: taken as the server redis://deploy:6379, whose name does
    /// not resolve (…)`, or for a URL `--server redis://db9:6379: the name
    /// db9 does not resolve (…)` (`REDLOCK_SERVERS: redis://…` from
    /// elsewhere); with a hint when the name ends in what
    /// looks like a port without its ':' (`host6379`).
    pub fn describe(&self) -> String {
        let host = self.server.host().unwrap_or_default();
        let shown_host = escape_and_cut(host.as_bytes(), 80);
        let why = escape_and_cut(self.why.as_bytes(), 80);
        let port = self.server.port().unwrap_or_default();
        let taken_as = format!("redis://{shown_host}:{port}");
        let mut text = match (self.server.is_bare_host(), self.flag) {
            (true, true) => format!(
                "-s {shown_host}: taken as the server {taken_as}, whose name does not resolve \
                 ({why})"
            ),
            (true, false) => format!(
                "{}: {shown_host}: taken as the server {taken_as}, whose name does not resolve \
                 ({why})",
                self.source
            ),
            (false, true) => format!(
                "--server {}: the name {shown_host} does not resolve ({why})",
                self.server
            ),
            (false, false) => format!(
                "{}: {}: the name {shown_host} does not resolve ({why})",
                self.source, self.server
            ),
        };
        if let Some((name, port)) = port_without_colon(host) {
            text.push_str(&format!(
                "; if {port} is the port, it goes after a ':' ({name}:{port})"
            ));
        }
        text
    }
}

/// `host6379` as `("host", "6379")`: a name that ends in four or five
/// digits after a letter, which may be a port that lost its ':'.
fn port_without_colon(host: &str) -> Option<(String, &str)> {
    let digits = host.len() - host.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (name, port) = host.split_at(host.len() - digits);
    let letter_before = name.ends_with(|c: char| c.is_ascii_alphabetic());
    (letter_before && (4..=5).contains(&digits) && port.parse::<u16>().is_ok())
        .then(|| (escape_and_cut(name.as_bytes(), 80), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unresolved(url: &str, flag: bool) -> Unresolved {
        Unresolved {
            server: ServerSpec::parse(url).unwrap(),
            why: "Name or service not known".into(),
            source: if flag { "--server" } else { "REDLOCK_SERVERS" }.into(),
            flag,
        }
    }

    #[test]
    fn a_bare_name_says_what_it_was_taken_as() {
        assert_eq!(
            unresolved("deploy", true).describe(),
            "-s deploy: taken as the server redis://deploy:6379, whose name does not resolve \
             (Name or service not known)"
        );
        assert_eq!(
            unresolved("deploy", false).describe(),
            "REDLOCK_SERVERS: deploy: taken as the server redis://deploy:6379, whose name does \
             not resolve (Name or service not known)"
        );
        assert_eq!(
            unresolved("redis://db9.example:7000", true).describe(),
            "--server redis://db9.example:7000: the name db9.example does not resolve (Name or \
             service not known)"
        );
    }

    #[test]
    fn a_port_that_lost_its_colon_is_pointed_at() {
        let text = unresolved("redis://host6379/", true).describe();
        assert!(
            text.ends_with("; if 6379 is the port, it goes after a ':' (host:6379)"),
            "{text}"
        );
        assert_eq!(port_without_colon("db1"), None);
        assert_eq!(port_without_colon("123456"), None);
        assert_eq!(port_without_colon("web99999"), None);
        assert_eq!(port_without_colon("cache7000").unwrap().1, "7000");
    }
}
