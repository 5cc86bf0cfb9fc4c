//! Server URLs: parsing them, telling when two name the same master, and
//! showing them without secrets.

use std::fmt;
use std::sync::Arc;

use redis::{ConnectionAddr, IntoConnectionInfo};

/// A server URL that was parsed and may be shown: its display form never
/// contains the password.
/// Cheap to clone: `list` names the servers of every lock it shows.
#[derive(Clone)]
pub struct ServerSpec(Arc<Spec>);

struct Spec {
    info: redis::ConnectionInfo,
    /// The URL as given (with `redis://` put in front of a bare host:port),
    /// secrets and all: never shown.
    url: String,
    shown: String,
    password: Option<String>,
    /// Given as a bare host name, without a scheme or a port (`-s deploy`):
    /// messages say what it was taken as.
    bare: bool,
}

/// Why a server URL or its TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub(super) String);

impl ServerSpec {
    /// Whether `other` is this very server of the configuration (a clone
    /// of its spec), not another entry that happens to read the same.
    pub fn is(&self, other: &ServerSpec) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Parses `redis://`, `rediss://` (TLS) and `redis+unix://` URLs, with
    /// `user:password@` and a `/db` number; a bare `host:port` means `redis://`.
    pub fn parse(raw: &str) -> Result<Self, SpecError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(SpecError("empty server URL".into()));
        }
        let url = if raw.contains("://") {
            raw.to_owned()
        } else {
            check_scheme_slashes(raw)?;
            format!("redis://{raw}")
        };
        let shown = shown_url(&url);
        check_scheme(&url, &shown)?;
        check_tcp_parts(&url, &shown)?;
        let info = url.as_str().into_connection_info().map_err(|err| {
            SpecError(format!(
                "invalid server URL {shown}: {}",
                scrub(&err.to_string(), None)
            ))
        })?;
        check_addr(info.addr(), &shown)?;
        reject_query_password(&url, info.addr(), &shown)?;
        if info.redis_settings().db() < 0 {
            return Err(SpecError(format!(
                "invalid server URL {shown}: database index {} is negative",
                info.redis_settings().db()
            )));
        }
        let password = info.redis_settings().password().map(str::to_owned);
        // One round trip fewer on every connect: we never need CLIENT SETINFO.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        Ok(ServerSpec(Arc::new(Spec {
            info,
            bare: !raw.contains([':', '/', '@', '?', '#']),
            url,
            shown,
            password,
        })))
    }

    /// The host name of a TCP server (an IP address too), as the resolver
    /// is given it; `None` for a Unix socket.
    pub fn host(&self) -> Option<&str> {
        match self.0.info.addr() {
            ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => Some(host),
            _ => None,
        }
    }

    /// Whether it was given as a bare host name (`-s deploy`), which is
    /// taken as `redis://deploy:6379`.
    pub fn is_bare_host(&self) -> bool {
        self.0.bare
    }

    /// The port of a TCP server (6379 when the URL gives none).
    pub fn port(&self) -> Option<u16> {
        match self.0.info.addr() {
            ConnectionAddr::Tcp(_, port) | ConnectionAddr::TcpTls { port, .. } => Some(*port),
            _ => None,
        }
    }

    /// What to add to "Password authentication failed" for a URL with a
    /// user name: a server older than Redis 6 has no ACL users, and is
    /// given the password alone (redis-rs tries it so after the server
    /// refused `AUTH user password`), which then must be its requirepass.
    pub(super) fn auth_hint(&self) -> Option<&'static str> {
        let user = self.0.info.redis_settings().username()?;
        (!user.is_empty() && user != "default").then_some(AUTH_WITH_USER)
    }

    /// Whether the URL holds a secret: a user-info part or a password
    /// parameter, which the shown form hides.
    pub fn has_secret(&self) -> bool {
        redact_url(&self.0.url) != self.0.url
    }

    /// The URL as given, secret included, for handing the server on to a
    /// process that needs it; never for showing.
    pub fn secret_url(&self) -> &str {
        &self.0.url
    }

    /// Which server process this is, as far as the URL can tell: the same
    /// host and port (or socket) is the same master whatever the database,
    /// user or spelling of the URL.
    pub fn identity(&self) -> String {
        match self.0.info.addr() {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                let host = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_ascii_lowercase();
                // One address has many spellings: ::ffff:10.0.0.1 is
                // 10.0.0.1, and so are 167772161, 0xa000001 and 10.1 to
                // the resolver, which reads IPv4 as inet_aton(3) does.
                let ip = host
                    .parse::<std::net::IpAddr>()
                    .ok()
                    .or_else(|| inet_aton(&host).map(std::net::IpAddr::V4))
                    .map(|ip| ip.to_canonical());
                let host = match ip {
                    // `localhost` is 127.0.0.1 or ::1; other loopback
                    // addresses (127.0.0.2) can be other servers.
                    Some(ip)
                        if ip == std::net::Ipv4Addr::LOCALHOST
                            || ip == std::net::Ipv6Addr::LOCALHOST =>
                    {
                        "loopback".to_owned()
                    }
                    Some(ip) => ip.to_string(),
                    None if host == "localhost" => "loopback".to_owned(),
                    None => host,
                };
                format!("tcp {host} {port}")
            }
            ConnectionAddr::Unix(path) => {
                let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                format!("unix {}", path.display())
            }
            _ => self.0.shown.clone(),
        }
    }

    pub(super) fn connection_info(&self) -> &redis::ConnectionInfo {
        &self.0.info
    }

    pub fn is_tls(&self) -> bool {
        matches!(self.0.info.addr(), ConnectionAddr::TcpTls { .. })
    }

    /// Removes this server's password from a message that may have quoted it.
    pub fn scrub(&self, message: &str) -> String {
        scrub(message, self.0.password.as_deref())
    }
}

impl fmt::Display for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.shown)
    }
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerSpec({})", self.0.shown)
    }
}

/// What [`ServerSpec::auth_hint`] says.
const AUTH_WITH_USER: &str = "the URL names a user: if the server is older than Redis 6, it \
     has no ACL users and checks the password alone, against its requirepass";

/// Refuses what the address says that can never work: port 0, and a
/// `rediss://…#insecure` URL, which asks to skip the certificate check.
fn check_addr(addr: &ConnectionAddr, shown: &str) -> Result<(), SpecError> {
    match addr {
        ConnectionAddr::Tcp(_, 0) | ConnectionAddr::TcpTls { port: 0, .. } => {
            Err(SpecError(format!("invalid server URL {shown}: port 0")))
        }
        ConnectionAddr::TcpTls { insecure: true, .. } => Err(SpecError(format!(
            "{shown}: redlock does not skip the check of a server's certificate (#insecure); \
             give the CA that signed it with --tls-ca-cert FILE (or REDLOCK_TLS_CA_CERT), and \
             drop #insecure"
        ))),
        _ if !addr.is_supported() => Err(SpecError(format!("unsupported server URL {shown}"))),
        _ => Ok(()),
    }
}

/// A scheme without its `://` (`redis//host:6379`, `redis:/host`), which
/// would be read as a bare host named after the scheme, with a path.
fn check_scheme_slashes(raw: &str) -> Result<(), SpecError> {
    let lower = raw.to_ascii_lowercase();
    for scheme in SCHEMES {
        let Some(rest) = lower.strip_prefix(scheme) else {
            continue;
        };
        if rest.starts_with("//") || rest.starts_with(":/") {
            let after = &raw[scheme.len()..];
            let after = after
                .strip_prefix(':')
                .unwrap_or(after)
                .trim_start_matches('/');
            let meant = shown_url(&format!("{scheme}://{after}"));
            return Err(SpecError(format!(
                "invalid server URL {}: the scheme lacks its \"://\" (did you mean {meant}?)",
                shown_url(raw)
            )));
        }
    }
    Ok(())
}

/// The host, port and path of a TCP URL, checked in redlock's words before
/// redis-rs reads it: a port that is no number from 1 to 65535, and a path
/// that is no database number (`redis://host/6379`: a port without its ':').
fn check_tcp_parts(url: &str, shown: &str) -> Result<(), SpecError> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(());
    };
    let tcp = ["redis", "rediss", "valkey", "valkeys"];
    if !tcp.contains(&scheme.to_ascii_lowercase().as_str()) {
        return Ok(());
    }
    // The last '@' ends the user-info part, as in `redact_url`; with one,
    // what follows the host's ':' cannot be a password.
    let (rest, user_info) = match rest.rsplit_once('@') {
        Some((_, host)) => (host, true),
        None => (rest, false),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let port = port_of(authority);
    if let Some(port) = port.filter(|port| !port.is_empty()) {
        check_port(port, user_info, shown)?;
    }
    let path = tail.split(['?', '#']).next().unwrap_or_default();
    let db = path.trim_matches('/');
    if db.is_empty() {
        return Ok(());
    }
    let Ok(number) = db.parse::<i64>() else {
        return Err(SpecError(format!(
            "invalid server URL {shown}: the path /{} is no database number; a Redis URL's \
             path is the database index (/0, /1 ...), and a port goes after the host and a ':' \
             (redis://host:6379)",
            super::key::escape_and_cut(db.as_bytes(), 40)
        )));
    };
    if port.is_none() && number >= 1024 {
        let host = super::key::escape_and_cut(authority.as_bytes(), 80);
        return Err(SpecError(format!(
            "invalid server URL {shown}: database {number}, which looks like a port without its \
             ':' ({scheme}://{host}:{number}); if it is a database index, give the port too \
             ({scheme}://{host}:6379/{number})"
        )));
    }
    Ok(())
}

/// The port part of a URL's host and port (`None`: no port given).
fn port_of(authority: &str) -> Option<&str> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (_, after) = bracketed.split_once(']')?;
        return after.strip_prefix(':');
    }
    match authority.split_once(':') {
        // More than one ':' unbracketed: an IPv6 address, which redis-rs
        // refuses in its own words.
        Some((_, port)) if !port.contains(':') => Some(port),
        _ => None,
    }
}

/// A port: a number from 1 to 65535. One that is not is shown when the URL
/// has a user-info part or it looks like a mistyped port
/// ([`looks_like_port`]); else it stays hidden, as `redact_url` hides it:
/// it may be a password without its `@host`.
fn check_port(port: &str, user_info: bool, shown: &str) -> Result<(), SpecError> {
    if port.bytes().all(|b| b.is_ascii_digit()) {
        return match port.parse::<u32>() {
            Ok(1..=65535) => Ok(()),
            Ok(0) => Err(SpecError(format!("invalid server URL {shown}: port 0"))),
            _ => Err(SpecError(format!(
                "invalid server URL {shown}: port {} is out of range (1 to 65535)",
                super::key::escape_and_cut(port.as_bytes(), 40)
            ))),
        };
    }
    if user_info || looks_like_port(port) {
        return Err(SpecError(format!(
            "invalid server URL {shown}: the port {} is not a number (1 to 65535)",
            super::key::escape_and_cut(port.as_bytes(), 40)
        )));
    }
    Err(SpecError(format!(
        "invalid server URL {shown}: what follows the host's ':' is no port number (a \
         password belongs before the host: redis://:PASSWORD@host:port)"
    )))
}

/// Whether what follows a host's ':' reads as a port, mistyped or not,
/// rather than as a password written without its `@host`: digits with a
/// sign (`-1`), or up to 8 characters that start with a digit and hold at
/// most two others (`6379x`, `63 79`). Such a port is shown; anything
/// else is hidden.
fn looks_like_port(port: &str) -> bool {
    let unsigned = port.trim_start_matches(['-', '+']);
    if unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let others = port.bytes().filter(|b| !b.is_ascii_digit()).count();
    port.len() <= 8 && port.starts_with(|c: char| c.is_ascii_digit()) && others <= 2
}

/// A password in the query of a TCP URL: redis-rs reads `pass=` and
/// `password=` only for `redis+unix://`, so it would be ignored while shown
/// as used. Rejected, with the way that works.
fn reject_query_password(url: &str, addr: &ConnectionAddr, shown: &str) -> Result<(), SpecError> {
    let tcp = matches!(
        addr,
        ConnectionAddr::Tcp(..) | ConnectionAddr::TcpTls { .. }
    );
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let query = query.split('#').next().unwrap_or(query);
    let has_password = query.split('&').any(|pair| {
        let key = pair.split('=').next().unwrap_or(pair);
        key.eq_ignore_ascii_case("pass") || key.eq_ignore_ascii_case("password")
    });
    if tcp && has_password {
        return Err(SpecError(format!(
            "{shown}: a password in the query is read only for redis+unix:// URLs; put it in \
             the user-info part: redis://:PASSWORD@host:port or redis://USER:PASSWORD@host:port"
        )));
    }
    Ok(())
}

/// An IPv4 address as inet_aton(3) reads it: one to four parts separated by
/// dots, each decimal, octal (leading 0) or hex (leading 0x); the last part
/// fills the remaining bytes. `127.1` and `2130706433` are 127.0.0.1.
fn inet_aton(text: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<u32> = text
        .split('.')
        .map(|part| {
            let (digits, radix) = match part.strip_prefix("0x").or_else(|| part.strip_prefix("0X"))
            {
                Some(hex) => (hex, 16),
                None if part.len() > 1 && part.starts_with('0') => (&part[1..], 8),
                None => (part, 10),
            };
            if digits.is_empty() && radix != 8 {
                return None;
            }
            u32::from_str_radix(digits, radix).ok()
        })
        .collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|&byte| byte > 255) {
        return None;
    }
    let room = 32 - 8 * leading.len() as u32;
    if room < 32 && *last >= 1 << room {
        return None;
    }
    let high = leading.iter().enumerate().fold(0u32, |value, (i, &byte)| {
        value | byte << (24 - 8 * i as u32)
    });
    Some(std::net::Ipv4Addr::from(high | last))
}

/// The URL as messages show it: redacted, escaped, and cut to a length that
/// fits a line.
fn shown_url(url: &str) -> String {
    let redacted = redact_url(url);
    super::key::escape_and_cut(redacted.as_bytes(), super::key::SERVER_TEXT_SHOWN)
}

/// The URL with any password replaced by `***`: in the user-info part, and in
/// `pass=`/`password=` query parameters (the `redis+unix://` form).
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    // The last '@' ends the user-info part, even when an unencoded password
    // holds '?', '/' or '@' itself.
    let (user_info, rest) = match rest.rfind('@') {
        Some(at) => {
            let (user_info, host) = rest.split_at(at);
            let shown = match user_info.split_once(':') {
                Some((user, _password)) => format!("{user}:***"),
                // `redis://secret@host`: a lone user-info part may well be a
                // password written in the wrong place, so it is hidden too.
                None => "***".to_owned(),
            };
            (shown, host)
        }
        // `redis://user:secret`, with no host: a ':' in the host part that
        // is not followed by a port number may be followed by a password.
        None => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            // A port, mistyped or not (shown so that it can be fixed), and
            // an IPv6 address (more than one ':') are not passwords.
            match authority.split_once(':') {
                Some((user, port))
                    if !authority.starts_with('[')
                        && !port.contains(':')
                        && !looks_like_port(port) =>
                {
                    (format!("{user}:***"), tail)
                }
                _ => (String::new(), rest),
            }
        }
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let query = query.map(|query| {
        query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _))
                    if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") =>
                {
                    format!("{k}=***")
                }
                _ => pair.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    match query {
        Some(query) => format!("{scheme}{user_info}{path}?{query}"),
        None => format!("{scheme}{user_info}{path}"),
    }
}

fn scrub(message: &str, password: Option<&str>) -> String {
    match password {
        Some(p) if !p.is_empty() => message.replace(p, "***"),
        _ => message.to_owned(),
    }
}

/// The schemes redis-rs connects with: the documented three, `unix://`,
/// and Valkey's spellings of them.
const SCHEMES: [&str; 7] = [
    "redis",
    "rediss",
    "redis+unix",
    "unix",
    "valkey",
    "valkeys",
    "valkey+unix",
];

/// Refuses a URL of another scheme (`http://`, a typo) in words that say
/// which ones work, rather than redis-rs's "did not parse".
fn check_scheme(url: &str, shown: &str) -> Result<(), SpecError> {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    if SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
        return Ok(());
    }
    Err(SpecError(format!(
        "{shown} is no Redis URL: use redis://host[:port], rediss:// (TLS) or \
         redis+unix:///path (a socket); a bare host[:port] means redis://"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_every_form_of_password() {
        let cases = [
            ("redis://:hunter2@h:6379/0", "redis://:***@h:6379/0"),
            ("redis://alice:hunter2@h:6379", "redis://alice:***@h:6379"),
            ("rediss://alice:p@ss@h", "rediss://alice:***@h"),
            ("redis://hunter2@h", "redis://***@h"),
            ("redis://h:6379/2", "redis://h:6379/2"),
            (
                "redis+unix:///tmp/r.sock?db=1&pass=hunter2",
                "redis+unix:///tmp/r.sock?db=1&pass=***",
            ),
            (
                "redis+unix:///tmp/r.sock?PASSWORD=hunter2",
                "redis+unix:///tmp/r.sock?PASSWORD=***",
            ),
            ("redis://:hun?ter2@h:1", "redis://:***@h:1"),
            ("redis://:hu/n@ter2@h:1/0", "redis://:***@h:1/0"),
            ("redis://alice:hunter2", "redis://alice:***"),
            ("redis://admin:hunter2/0", "redis://admin:***/0"),
            ("redis://h:6379", "redis://h:6379"),
            (
                "redis://127.0.0.1:7000?protocol=resp3",
                "redis://127.0.0.1:7000?protocol=resp3",
            ),
            ("rediss://h:1#insecure", "rediss://h:1#insecure"),
            ("redis://[::1]:6379/1", "redis://[::1]:6379/1"),
            // A URL parser reads host "user", port 12 and path "/ss@host"
            // here, and would leave "ss" of the password "12/ss" on show:
            // the last '@' rule is why this is not the `url` crate.
            ("redis://user:12/ss@host", "redis://user:***@host"),
            // Only what can be user-info is hidden: the real mistake shows.
            ("redis://127.0.0.1:-1", "redis://127.0.0.1:-1"),
            ("redis://::1:6379", "redis://::1:6379"),
        ];
        for (raw, shown) in cases {
            assert_eq!(redact_url(raw), shown);
            assert!(!redact_url(raw).contains("ter2"));
            assert!(!redact_url(raw).contains("ss@"));
        }
    }

    #[test]
    fn parses_supported_schemes_and_bare_host_port() {
        for url in [
            "redis://127.0.0.1:6379",
            "redis://:pw@127.0.0.1:6379/3",
            "rediss://user:pw@example.com:6380",
            "redis+unix:///tmp/redis.sock?db=2",
            "127.0.0.1:7000",
        ] {
            let spec = ServerSpec::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(!spec.to_string().contains("pw@"), "{spec}");
        }
        assert_eq!(
            ServerSpec::parse("10.0.0.1:7000").unwrap().to_string(),
            "redis://10.0.0.1:7000"
        );
        assert!(ServerSpec::parse("rediss://h:1").unwrap().is_tls());
        let same = [
            "redis://LocalHost:7000/1",
            "127.0.0.1:7000",
            "redis://:pw@127.0.0.1:7000/",
            "redis://[::ffff:127.0.0.1]:7000",
            "redis://[::1]:7000",
        ];
        let ids: Vec<_> = same
            .iter()
            .map(|u| ServerSpec::parse(u).unwrap().identity())
            .collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        assert_ne!(
            ServerSpec::parse("127.0.0.2:7000").unwrap().identity(),
            ids[0],
            "another loopback address can be another server"
        );
        assert_ne!(
            ServerSpec::parse("h:1").unwrap().identity(),
            ServerSpec::parse("h:2").unwrap().identity()
        );
    }

    #[test]
    fn ipv4_is_read_as_inet_aton_reads_it() {
        for same in [
            "127.0.0.1",
            "127.1",
            "127.0.1",
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
        ] {
            assert_eq!(
                inet_aton(same),
                Some(std::net::Ipv4Addr::LOCALHOST),
                "{same}"
            );
        }
        for not_ipv4 in [
            "",
            "a.b",
            "1.2.3.4.5",
            "256.1",
            "1.2.3.256",
            "0x",
            "09",
            "host",
        ] {
            assert_eq!(inet_aton(not_ipv4), None, "{not_ipv4}");
        }
        let id = |url: &str| ServerSpec::parse(url).unwrap().identity();
        assert_eq!(id("127.1:7000"), id("127.0.0.1:7000"));
        assert_eq!(id("0x0a000001:7000"), id("10.0.0.1:7000"));
    }

    #[test]
    fn a_password_in_a_tcp_query_is_rejected_not_ignored() {
        for url in ["redis://h:1?pass=pw", "rediss://h:1/0?db=1&PASSWORD=pw"] {
            let err = ServerSpec::parse(url).expect_err(url).to_string();
            assert!(err.contains("redis+unix://"), "{err}");
            assert!(!err.contains("pw"), "{err}");
        }
        assert!(ServerSpec::parse("redis+unix:///tmp/r.sock?pass=pw").is_ok());
        assert!(ServerSpec::parse("redis://:pw@h:1?protocol=resp3").is_ok());
    }

    #[test]
    fn secrets_are_known_and_kept_for_handing_on_only() {
        let spec = ServerSpec::parse("redis://:pw@h:1").unwrap();
        assert!(spec.has_secret());
        assert_eq!(spec.secret_url(), "redis://:pw@h:1");
        assert!(!spec.to_string().contains("pw"));
        assert!(!ServerSpec::parse("h:1").unwrap().has_secret());
        assert!(ServerSpec::parse("redis+unix:///s?pass=pw")
            .unwrap()
            .has_secret());
        let weird = ServerSpec::parse("h:1/\u{1b}[2J").map(|s| s.to_string());
        assert!(weird.is_err() || !weird.unwrap().contains('\u{1b}'));
    }

    #[test]
    fn another_scheme_is_refused_with_the_ones_that_work() {
        for url in [
            "http://h:1",
            "HTTPS://h",
            "ftp://:hunter2@h:1",
            "://",
            "redis:/h:1://x",
        ] {
            let err = ServerSpec::parse(url).expect_err(url).to_string();
            assert!(err.contains("is no Redis URL: use redis://"), "{err}");
            assert!(
                err.contains("rediss://") && err.contains("redis+unix://"),
                "{err}"
            );
            assert!(!err.contains("hunter2") && !err.contains('\n'), "{err}");
        }
        for url in ["REDIS://h:1", "unix:///tmp/r.sock", "valkey://h:1"] {
            assert!(ServerSpec::parse(url).is_ok(), "{url}");
        }
    }

    #[test]
    fn a_mistyped_port_is_shown_and_said_a_password_is_not() {
        assert_eq!(redact_url("redis://h:6379x"), "redis://h:6379x");
        assert_eq!(redact_url("redis://h:63 79/0"), "redis://h:63 79/0");
        assert_eq!(redact_url("redis://admin:hunter2"), "redis://admin:***");
        assert_eq!(redact_url("redis://admin:1hunter2"), "redis://admin:***");
        let err = |url: &str| ServerSpec::parse(url).expect_err(url).to_string();
        assert_eq!(
            err("h:6379x"),
            "invalid server URL redis://h:6379x: the port 6379x is not a number (1 to 65535)"
        );
        assert_eq!(
            err("redis://h:70000/1"),
            "invalid server URL redis://h:70000/1: port 70000 is out of range (1 to 65535)"
        );
        assert_eq!(err("redis://h:0"), "invalid server URL redis://h:0: port 0");
        let text = err("redis://admin:hunter2");
        assert!(text.contains("redis://admin:***: what follows"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(ServerSpec::parse("redis://:pw@h:6379/2").is_ok());
        assert!(ServerSpec::parse("redis://[::1]:6379").is_ok());
        assert!(ServerSpec::parse("redis://h:/0").is_ok());
    }

    #[test]
    fn a_url_that_lost_a_colon_is_said_so() {
        let err = |url: &str| ServerSpec::parse(url).expect_err(url).to_string();
        for (url, meant) in [
            ("redis//h:6379", "redis://h:6379"),
            ("redis:/h:6379/1", "redis://h:6379/1"),
            ("rediss//:pw@h", "rediss://:***@h"),
        ] {
            let text = err(url);
            assert!(
                text.contains(&format!(
                    "the scheme lacks its \"://\" (did you mean {meant}?)"
                )),
                "{text}"
            );
            assert!(!text.contains("pw@"), "{text}");
        }
        let text = err("redis://h/6379");
        assert!(
            text.ends_with(
                "database 6379, which looks like a port without its ':' (redis://h:6379); if it \
                 is a database index, give the port too (redis://h:6379/6379)"
            ),
            "{text}"
        );
        assert!(ServerSpec::parse("redis://h:6379/6379").is_ok());
        assert!(ServerSpec::parse("redis://h/15").is_ok());
        let text = err("redis://h:1/x");
        assert!(text.contains("the path /x is no database number"), "{text}");
        assert!(!text.contains("Invalid database number"), "{text}");
        // A host named like a scheme, with a port, is a host.
        assert!(ServerSpec::parse("redis:6379").is_ok());
        assert!(ServerSpec::parse("redis/0").is_ok());
    }

    #[test]
    fn an_insecure_tls_url_is_refused_in_our_words() {
        let text = ServerSpec::parse("rediss://:pw@h:6380/#insecure")
            .expect_err("#insecure")
            .to_string();
        assert!(
            text.starts_with("rediss://:***@h:6380/#insecure: redlock does not skip the check"),
            "{text}"
        );
        assert!(text.contains("--tls-ca-cert FILE"), "{text}");
    }

    #[test]
    fn a_user_name_gets_the_hint_about_servers_without_users() {
        let hint = |url: &str| ServerSpec::parse(url).unwrap().auth_hint();
        assert_eq!(hint("redis://alice:pw@h:1"), Some(AUTH_WITH_USER));
        assert_eq!(hint("redis://:pw@h:1"), None);
        assert_eq!(hint("redis://default:pw@h:1"), None);
        assert_eq!(hint("redis://h:1"), None);
    }

    #[test]
    fn a_bare_host_is_known_as_one() {
        assert!(ServerSpec::parse("deploy").unwrap().is_bare_host());
        for url in ["deploy:6379", "redis://deploy", "[::1]:1", "deploy/0"] {
            assert!(!ServerSpec::parse(url).unwrap().is_bare_host(), "{url}");
        }
        assert_eq!(ServerSpec::parse("deploy").unwrap().host(), Some("deploy"));
        assert_eq!(ServerSpec::parse("unix:///tmp/s").unwrap().host(), None);
    }

    #[test]
    fn rejects_bad_urls_without_echoing_the_password() {
        for url in [
            "",
            "http://:hunter2@h:1",
            "redis://:hunter2@h:notaport",
            "redis://:hunter2@",
        ] {
            let err = ServerSpec::parse(url).expect_err(url).to_string();
            assert!(!err.contains("hunter2"), "{err}");
        }
    }
}
