//! Server URLs: parsing them, telling when two name the same master, and
//! showing them without secrets.

use std::fmt;

use redis::{ConnectionAddr, IntoConnectionInfo};

/// A server URL that was parsed and may be shown: its display form never
/// contains the password.
#[derive(Clone)]
pub struct ServerSpec {
    info: redis::ConnectionInfo,
    shown: String,
    password: Option<String>,
}

/// Why a server URL or its TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub(super) String);

impl ServerSpec {
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
            format!("redis://{raw}")
        };
        let shown = redact_url(&url);
        let info = url.as_str().into_connection_info().map_err(|err| {
            SpecError(format!(
                "invalid server URL {shown}: {}",
                scrub(&err.to_string(), None)
            ))
        })?;
        if !info.addr().is_supported() {
            return Err(SpecError(format!("unsupported server URL {shown}")));
        }
        let password = info.redis_settings().password().map(str::to_owned);
        // One round trip fewer on every connect: we never need CLIENT SETINFO.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        Ok(ServerSpec {
            info,
            shown,
            password,
        })
    }

    /// Which server process this is, as far as the URL can tell: the same
    /// host and port (or socket) is the same master whatever the database,
    /// user or spelling of the URL.
    pub fn identity(&self) -> String {
        match self.info.addr() {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                let host = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_ascii_lowercase();
                // One address has many spellings: ::ffff:10.0.0.1 is
                // 10.0.0.1.
                let ip = host
                    .parse::<std::net::IpAddr>()
                    .ok()
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
            _ => self.shown.clone(),
        }
    }

    pub(super) fn connection_info(&self) -> &redis::ConnectionInfo {
        &self.info
    }

    pub fn is_tls(&self) -> bool {
        matches!(self.info.addr(), ConnectionAddr::TcpTls { .. })
    }

    /// Removes this server's password from a message that may have quoted it.
    pub fn scrub(&self, message: &str) -> String {
        scrub(message, self.password.as_deref())
    }
}

impl fmt::Display for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerSpec({})", self.shown)
    }
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
            match authority.split_once(':') {
                Some((user, port))
                    if !authority.starts_with('[') && !port.bytes().all(|b| b.is_ascii_digit()) =>
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
