//! The N independent Redis masters: parsing their URLs, connecting to them with
//! a per-server time bound, and naming them in messages without secrets.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ErrorKind, FromRedisValue, IntoConnectionInfo,
    RedisError, ServerErrorKind,
};
use tokio::sync::Mutex;

use super::scripts::LuaScript;

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
pub struct SpecError(String);

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

/// Why one server did not give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("no answer within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// Unreachable, disconnected or a passing error: another attempt may work.
    #[error("{0}")]
    Failed(String),
    /// The server cannot be used as configured, and no retry will fix it:
    /// authentication, ACL permissions, a read-only replica, a rejected URL
    /// option, a certificate that does not verify.
    #[error("{0}")]
    Refused(String),
}

impl ServerError {
    pub fn is_refusal(&self) -> bool {
        matches!(self, ServerError::Refused(_))
    }
}

/// One configured master: its spec, a lazily opened connection that is reused
/// across attempts, and the time bound for connecting and for each reply.
pub struct Server {
    spec: ServerSpec,
    client: redis::Client,
    timeout: Duration,
    connection: Mutex<Option<Connection>>,
    timeouts_in_a_row: AtomicU32,
}

/// A connection to one server, and the scripts it has sent on it.
#[derive(Clone)]
pub struct Connection {
    inner: MultiplexedConnection,
    sent_scripts: Arc<StdMutex<HashSet<&'static str>>>,
}

impl Connection {
    pub async fn query<T: FromRedisValue>(
        &mut self,
        command: &redis::Cmd,
    ) -> redis::RedisResult<T> {
        command.query_async(&mut self.inner).await
    }

    /// Runs `script` with EVALSHA once this connection has sent it with EVAL
    /// (which also caches it on the server), falling back to EVAL when the
    /// server answers NOSCRIPT (it restarted, or flushed its scripts).
    ///
    /// The first use on a connection is EVAL on purpose: a request must be
    /// complete in one round trip. After a decided round the process may exit
    /// at once, and an EVALSHA answered NOSCRIPT by a slow server would never
    /// get its EVAL sent.
    pub async fn run_script<T: FromRedisValue>(
        &mut self,
        script: &'static LuaScript,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> redis::RedisResult<T> {
        let sent = |this: &Self| {
            this.sent_scripts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .contains(script.sha1.as_str())
        };
        if sent(self) {
            let reply = redis::cmd("EVALSHA")
                .arg(&script.sha1)
                .arg(keys.len())
                .arg(keys)
                .arg(args)
                .query_async(&mut self.inner)
                .await;
            match reply {
                Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {}
                reply => return reply,
            }
        }
        let reply = redis::cmd("EVAL")
            .arg(script.source)
            .arg(keys.len())
            .arg(keys)
            .arg(args)
            .query_async(&mut self.inner)
            .await;
        if reply.is_ok() {
            self.sent_scripts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(script.sha1.as_str());
        }
        reply
    }
}

impl Server {
    pub fn new(
        spec: ServerSpec,
        timeout: Duration,
        tls_root_cert: Option<&[u8]>,
    ) -> Result<Arc<Self>, SpecError> {
        let client = match tls_root_cert {
            Some(pem) if spec.is_tls() => redis::Client::build_with_tls(
                spec.info.clone(),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.to_vec()),
                },
            ),
            _ => redis::Client::open(spec.info.clone()),
        }
        .map_err(|err| SpecError(format!("{spec}: {}", spec.scrub(&err.to_string()))))?;
        Ok(Arc::new(Server {
            spec,
            client,
            timeout,
            connection: Mutex::new(None),
            timeouts_in_a_row: AtomicU32::new(0),
        }))
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Runs one request on this server, connecting first if needed, with each
    /// step bounded by the server timeout. A broken connection is dropped so
    /// that the next request reconnects.
    pub async fn call<T, F, Fut>(&self, request: F) -> Result<T, ServerError>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        // One bound for getting a connection, including the wait for another
        // request that is connecting to the same server right now.
        let connection = tokio::time::timeout(self.timeout, self.connect())
            .await
            .map_err(|_| ServerError::Timeout(self.timeout))??;
        let reply = tokio::time::timeout(self.timeout, request(connection)).await;
        let timed_out = match &reply {
            Ok(Err(err)) => err.is_timeout(),
            Ok(Ok(_)) => false,
            Err(_) => true,
        };
        // A slow connection is kept once (requests on it stay in order, and
        // a paused server does not collect a new connection per attempt);
        // one that times out twice in a row may be silently dead (a lost NAT
        // entry) and is replaced, as is one that failed outright.
        let timeouts = if timed_out {
            self.timeouts_in_a_row.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.timeouts_in_a_row.store(0, Ordering::Relaxed);
            0
        };
        let broken = matches!(&reply, Ok(Err(err)) if !err.is_timeout() && !matches!(err.kind(), ErrorKind::Server(_)));
        if broken || timeouts >= 2 {
            self.connection.lock().await.take();
            self.timeouts_in_a_row.store(0, Ordering::Relaxed);
        }
        match reply {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.failed(&err)),
            Err(_) => Err(ServerError::Timeout(self.timeout)),
        }
    }

    async fn connect(&self) -> Result<Connection, ServerError> {
        let mut cached = self.connection.lock().await;
        if let Some(connection) = cached.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let inner = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| self.failed(&err))?;
        let connection = Connection {
            inner,
            sent_scripts: Arc::default(),
        };
        *cached = Some(connection.clone());
        Ok(connection)
    }

    fn failed(&self, err: &RedisError) -> ServerError {
        if err.is_timeout() {
            return ServerError::Timeout(self.timeout);
        }
        let message = self.spec.scrub(&err.to_string());
        // Settings no retry can fix: credentials, ACLs, a replica, a URL
        // option the client rejects, a certificate that does not verify.
        let refused = matches!(
            err.kind(),
            ErrorKind::AuthenticationFailed
                | ErrorKind::InvalidClientConfig
                | ErrorKind::Server(ServerErrorKind::NoPerm | ServerErrorKind::ReadOnly)
        ) || matches!(
            err.code(),
            Some("NOAUTH" | "WRONGPASS" | "NOPERM" | "READONLY")
        ) || message.contains("invalid peer certificate");
        if refused {
            ServerError::Refused(message)
        } else {
            ServerError::Failed(message)
        }
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
        ];
        for (raw, shown) in cases {
            assert_eq!(redact_url(raw), shown);
            assert!(!redact_url(raw).contains("ter2"));
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
