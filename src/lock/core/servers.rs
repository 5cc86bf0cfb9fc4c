//! The N independent Redis masters: connecting to them with a per-server
//! time bound, running scripts, and reconnecting after a failure.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use redis::aio::{MultiplexedConnection, PubSub};
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ErrorKind, FromRedisValue, ProtocolVersion, PushInfo,
    RedisConnectionInfo, RedisError, ServerErrorKind,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Mutex};

use super::capped::{Capped, MOST_PER_REPLY};
use super::server_clock::ServerClock;
use crate::clock::BootInstant;
use crate::lock::key::{escape_and_cut, SERVER_TEXT_SHOWN};
use crate::lock::listening::Listening;
use crate::lock::scripts::{late_clock, Features, Invocation, LuaScript};
use crate::lock::server_info::Behind;
use crate::lock::server_url::{ServerSpec, SpecError};

/// Why one server did not give a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("no answer within {}", crate::duration::exact(*.0))]
    Timeout(Duration),
    /// A passing error: another attempt may work.
    #[error("{0}")]
    Failed(String),
    /// Could not be reached, or the connection broke: another attempt may
    /// work.
    #[error("{0}")]
    Unreachable(String),
    /// The server cannot be used as configured, and no retry will fix it:
    /// authentication, ACL permissions, a read-only replica, a rejected URL
    /// option, a certificate that does not verify.
    #[error("{0}")]
    Refused(String),
    /// `list` on this server did not end within this long (a SCAN cursor
    /// that never comes back to 0).
    #[error("its SCAN and reads did not end within {}", crate::duration::exact(*.0))]
    ListTooLong(Duration),
    /// `list` found more than this many keys on this server.
    #[error("its SCAN returned more than {0} keys: narrow the PATTERN or --prefix")]
    TooManyKeys(usize),
    /// It had not answered when a round that had to end without it ended
    /// (its answer could no longer change the outcome).
    #[error("had not answered when the round ended")]
    NoAnswerYet,
}

impl ServerError {
    pub fn is_refusal(&self) -> bool {
        matches!(self, ServerError::Refused(_))
    }

    /// Whether another try may be answered: the server did not answer in
    /// time, could not be reached, or said it is not ready yet (LOADING,
    /// BUSY, TRYAGAIN, MASTERDOWN). Not a refusal, nor another error reply
    /// (a script's error, an unreadable reply), which a retry only repeats.
    pub fn may_pass(&self) -> bool {
        match self {
            ServerError::Timeout(_) | ServerError::Unreachable(_) | ServerError::NoAnswerYet => {
                true
            }
            ServerError::Failed(said) => {
                let said = said.to_ascii_uppercase();
                ["LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN"]
                    .iter()
                    .any(|word| said.contains(word))
            }
            _ => false,
        }
    }
}

/// One configured master: its spec, a lazily opened connection that is reused
/// across attempts, and the time bound for connecting and for each reply.
pub struct Server {
    spec: ServerSpec,
    client: redis::Client,
    /// For a `rediss://` server: the TLS set-up its connections use.
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
    connection: Mutex<Option<Connection>>,
    timeouts_in_a_row: AtomicU32,
    /// Whether the last call that ended here timed out.
    last_timed_out: AtomicBool,
    /// What the server said of its role and eviction policy, asked behind
    /// the first acquire (see [`Connection::invoke_asking`]).
    pub(in crate::lock) behind: Arc<Behind>,
    /// Its clock, as its replies say it (lock/server_clock.rs).
    clock: Arc<ServerClock>,
}

/// A bounded script's answer for a request past its deadline.
struct Late;

/// A connection to one server, and the scripts it has sent on it.
#[derive(Clone)]
pub struct Connection {
    inner: MultiplexedConnection,
    /// By name and mode: each mode's text has its own SHA1.
    sent_scripts: Arc<StdMutex<HashSet<(&'static str, Features)>>>,
    behind: Arc<Behind>,
    /// The db index this connection selected, as the restart guard records
    /// it in its marker (guard.lua): SWAPDB is seen by it.
    db: Vec<u8>,
    /// The server's clock, and how long a request's reply is waited for:
    /// a bounded script's last moment (see [`Invocation::bounded`]).
    clock: Arc<ServerClock>,
    timeout: Duration,
}

impl Connection {
    fn new(inner: MultiplexedConnection, server: &Server) -> Self {
        Connection {
            inner,
            sent_scripts: Arc::default(),
            behind: Arc::clone(&server.behind),
            db: server.db().to_string().into_bytes(),
            clock: Arc::clone(&server.clock),
            timeout: server.timeout,
        }
    }

    /// Runs one script call, its reply parsed: a reply the script cannot
    /// have sent is an error, and so that server's failure.
    ///
    /// A bounded script (acquire) that answers "late" did nothing. The
    /// caller got that reply in time, so the server's clock is not where
    /// this process thought (it was stepped, or this host was suspended):
    /// the reply said where it is, and the call goes once more. Late twice
    /// is that server's failure.
    pub async fn invoke<I: Invocation>(&mut self, call: &I) -> redis::RedisResult<I::Reply> {
        if let Ok(reply) = self.invoke_once(call).await? {
            return Ok(reply);
        }
        match self.invoke_once(call).await? {
            Ok(reply) => Ok(reply),
            Err(Late) => Err(RedisError::from((
                ErrorKind::Client,
                "late",
                "twice a request arrived after its deadline by this server's clock, \
                 which jumps"
                    .to_owned(),
            ))),
        }
    }

    /// [`Self::invoke`] without the second try: `Err(Late)` for a bounded
    /// script's "late". Learns the server's clock from the reply, or asks
    /// it after the second bounded request (a lock taken says none).
    async fn invoke_once<I: Invocation>(
        &mut self,
        call: &I,
    ) -> redis::RedisResult<Result<I::Reply, Late>> {
        // Only the keys the script's mode reads.
        let (keys, mut args) = (call.script().keys_sent(&call.keys()), call.args());
        // A bounded script's deadline is this server's clock a reply wait
        // from now: only the connection knows which server that is.
        if I::BOUNDED {
            let not_after = self.clock.not_after(self.timeout);
            let not_after = not_after.map(|ms| ms.to_string()).unwrap_or_default();
            args.push(not_after.into_bytes());
        }
        // The restart guard's last argument is the db this connection
        // selected: the one fact of the dataset only the connection knows.
        if call.script().reads_guard {
            args.push(self.db.clone());
        }
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let ask_time = I::BOUNDED && self.clock.wants_asking();
        let sent = BootInstant::now();
        let reply: redis::Value = self.run_script(call.script(), &keys, &args).await?;
        if ask_time {
            self.ask_time();
        }
        if let Some(clock) = late_clock(&reply) {
            if let Some(server_ms) = clock {
                self.clock.learn(sent, BootInstant::now(), server_ms);
            }
            return Ok(Err(Late));
        }
        let reply = call.parse(reply)?;
        if let Some(server_ms) = I::clock_of(&reply) {
            self.clock.learn(sent, BootInstant::now(), server_ms);
        }
        Ok(Ok(reply))
    }

    /// Asks the server's `TIME` in the background, for the deadlines of
    /// later requests: a server that denies it keeps them unbounded.
    fn ask_time(&self) {
        let (mut inner, clock) = (self.inner.clone(), Arc::clone(&self.clock));
        tokio::spawn(async move {
            let sent = BootInstant::now();
            let time: redis::RedisResult<(u64, u64)> =
                redis::cmd("TIME").query_async(&mut inner).await;
            if let Ok((seconds, micros)) = time {
                let server_ms = seconds.saturating_mul(1000).saturating_add(micros / 1000);
                clock.learn(sent, BootInstant::now(), server_ms);
            }
        });
    }

    /// [`Self::invoke`], with the server's role and eviction policy asked
    /// right behind the script's request the first time (INFO on the same
    /// connection): pipelined, so it costs no round trip, and its answer
    /// arrives just after the script's. `Redlock::concerns` reads it.
    pub async fn invoke_asking<I: Invocation>(&mut self, call: &I) -> redis::RedisResult<I::Reply> {
        let mut ask = Some((self.inner.clone(), Arc::clone(&self.behind)));
        let mut invoked = std::pin::pin!(self.invoke(call));
        std::future::poll_fn(|cx| {
            // The first poll queues the script's request on the connection;
            // the question goes behind it, never before it.
            let polled = invoked.as_mut().poll(cx);
            if let Some((inner, behind)) = ask.take() {
                behind.ask(inner);
            }
            polled
        })
        .await
    }

    /// One command, its reply as `T`.
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        cmd.query_async(&mut self.inner).await
    }

    /// Several commands in one request, each reply as a value.
    pub async fn query_all(
        &mut self,
        pipe: &redis::Pipeline,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        pipe.query_async(&mut self.inner).await
    }

    /// Runs `script` with EVALSHA once this connection has sent it with EVAL
    /// (which also caches it on the server), falling back to EVAL when the
    /// server answers NOSCRIPT (it restarted, or flushed its scripts).
    ///
    /// The first use on a connection is EVAL on purpose: a request must be
    /// complete in one round trip. After a decided round the process may exit
    /// at once, and an EVALSHA answered NOSCRIPT by a slow server would never
    /// get its EVAL sent.
    async fn run_script<T: FromRedisValue>(
        &mut self,
        script: &'static LuaScript,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> redis::RedisResult<T> {
        let sent = |this: &Self| {
            this.sent_scripts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .contains(&(script.name, script.features))
        };
        if sent(self) {
            let reply = redis::cmd("EVALSHA")
                .arg(script.sha1())
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
        // Sized for the text at once: it is most of the request, and a
        // growing buffer would copy it again.
        let words = keys.iter().chain(args).map(|word| word.len() + 16);
        let size = script.source().len() + 64 + words.sum::<usize>();
        let reply = redis::Cmd::with_capacity(3 + keys.len() + args.len(), size)
            .arg("EVAL")
            .arg(script.source())
            .arg(keys.len())
            .arg(keys)
            .arg(args)
            .query_async(&mut self.inner)
            .await;
        if reply.is_ok() {
            self.sent_scripts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert((script.name, script.features));
        }
        reply
    }
}

impl Server {
    pub fn new(
        spec: ServerSpec,
        timeout: Duration,
        tls_root_cert: Option<&[u8]>,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Arc<Self>, SpecError> {
        let client = match tls_root_cert {
            Some(pem) if spec.is_tls() => redis::Client::build_with_tls(
                spec.connection_info().clone(),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.to_vec()),
                },
            ),
            _ => redis::Client::open(spec.connection_info().clone()),
        }
        .map_err(|err| SpecError(format!("{spec}: {}", spec.scrub(&err.to_string()))))?;
        let tls = tls.filter(|_| spec.is_tls()).cloned();
        Ok(Arc::new(Server {
            spec,
            client,
            tls,
            timeout,
            connection: Mutex::new(None),
            timeouts_in_a_row: AtomicU32::new(0),
            last_timed_out: AtomicBool::new(false),
            behind: Arc::default(),
            clock: Arc::default(),
        }))
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// The bound for connecting and for each reply.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one request on this server, connecting first if needed, with each
    /// step bounded by the server timeout. A broken connection is dropped so
    /// that the next request reconnects.
    pub async fn call<T, F, Fut>(&self, request: F) -> Result<T, ServerError>
    where
        F: FnOnce(Connection) -> Fut + Clone,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        self.call_noting(request, &AtomicBool::new(false)).await
    }

    /// [`Self::call`]; `handed` is set while the request is on an open
    /// connection (handed to its driver, which writes it when next
    /// polled): cleared again when it must go again on a new connection. A
    /// round that is decided need not wait for such a server (see
    /// round.rs).
    pub async fn call_noting<T, F, Fut>(
        &self,
        request: F,
        handed: &AtomicBool,
    ) -> Result<T, ServerError>
    where
        F: FnOnce(Connection) -> Fut + Clone,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let reply = self.call_once(request, handed).await;
        let timed_out = matches!(reply, Err(ServerError::Timeout(_)));
        self.last_timed_out.store(timed_out, Ordering::Relaxed);
        reply
    }

    /// Whether the last call that ended on this server ran out of time: a
    /// server that is hung or cut off (a black-holed address, whose
    /// connection never opens) until it answers again.
    pub fn last_timed_out(&self) -> bool {
        self.last_timed_out.load(Ordering::Relaxed)
    }

    /// [`Self::call_noting`], without noting how it ended.
    async fn call_once<T, F, Fut>(&self, request: F, handed: &AtomicBool) -> Result<T, ServerError>
    where
        F: FnOnce(Connection) -> Fut + Clone,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        // The most this call may take: a bound for connecting and one for
        // the reply, whether or not a stale connection is replaced on the way.
        let give_up_at = after(tokio::time::Instant::now(), self.timeout.saturating_mul(2));
        let (connection, reused) = self.connect_within(give_up_at).await?;
        let first = request.clone();
        let handing = move |connection: Connection| {
            handed.store(true, Ordering::Release);
            first(connection)
        };
        let replied = match crate::test_hooks::broken_pipe_on_first_request() && !reused {
            true => Err(RedisError::from(io::Error::from(io::ErrorKind::BrokenPipe))),
            false => self.attempt(connection, handing, give_up_at).await,
        };
        match replied {
            // A connection that sat idle may have gone stale (the server
            // restarted, a proxy dropped it): its first request fails at
            // once, before the server saw it. One more try on a fresh
            // connection, within the same bound, tells the truth instead.
            Err(err) if reused && err.is_connection_dropped() => {
                handed.store(false, Ordering::Release);
                let (connection, _) = self.connect_within(give_up_at).await?;
                handed.store(true, Ordering::Release);
                self.attempt(connection, request, give_up_at)
                    .await
                    .map_err(|err| self.failed(&err))
            }
            // A TLS 1.3 server that wants a client certificate sends its
            // alert after the handshake: the first request, written while
            // it closes, may meet a broken pipe instead.
            Err(err) if !reused && self.spec.is_tls() && err.is_connection_dropped() => {
                let bound = give_up_at.saturating_duration_since(tokio::time::Instant::now());
                let refused = self.client_certificate_required(bound).await;
                Err(refused.unwrap_or_else(|| self.failed(&err)))
            }
            reply => reply.map_err(|err| self.failed(&err)),
        }
    }

    /// One command on a connection of its own, opened for it and dropped
    /// after it, within the server timeout for the connect and again for
    /// the reply: `doctor` asks on several at once, since each new
    /// connection to one address may reach another server.
    pub async fn on_new_connection<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, ServerError> {
        let asked = async {
            let settings = self.spec.connection_info().redis_settings();
            let mut connection = self.open(settings, self.config()).await?;
            cmd.query_async(&mut connection).await
        };
        match tokio::time::timeout(self.timeout.saturating_mul(2), asked).await {
            Ok(reply) => reply.map_err(|err| self.failed(&err)),
            Err(_) => Err(ServerError::Timeout(self.timeout)),
        }
    }

    /// A connection, within the server timeout and `give_up_at`; and whether
    /// it was open already.
    async fn connect_within(
        &self,
        give_up_at: tokio::time::Instant,
    ) -> Result<(Connection, bool), ServerError> {
        // One bound for getting a connection, including the wait for another
        // request that is connecting to the same server right now.
        let bound = self
            .timeout
            .min(give_up_at.saturating_duration_since(tokio::time::Instant::now()));
        let connected = tokio::time::timeout(bound, self.connect())
            .await
            .map_err(|_| ServerError::Timeout(self.timeout))
            .and_then(|connected| connected);
        match connected {
            Err(err) if self.spec.is_tls() && !err.is_refusal() => {
                let refused = match self.plaintext_port(bound).await {
                    Some(refused) => Some(refused),
                    None => self.client_certificate_required(bound).await,
                };
                Err(refused.unwrap_or(err))
            }
            connected => connected,
        }
    }

    /// Whether this `rediss://` server requires a client certificate, after
    /// a connection failed without saying why: under TLS 1.3 the server's
    /// alert comes after the handshake, and a first request written while
    /// it closes meets a broken pipe instead. A handshake that writes
    /// nothing, then a read within `bound`, hears the alert itself.
    async fn client_certificate_required(&self, bound: Duration) -> Option<ServerError> {
        let probe = async {
            let mut stream = self.stream().await.ok()??;
            let mut byte = [0u8; 1];
            stream.read(&mut byte).await.err()
        };
        let error = tokio::time::timeout(bound, probe).await.ok()??;
        error
            .to_string()
            .contains("received fatal alert: CertificateRequired")
            .then(|| ServerError::Refused(CLIENT_CERTIFICATE.to_owned()))
    }

    /// Whether this `rediss://` server's port speaks plain RESP, after a TLS
    /// handshake failed or hung there (a plaintext Redis waits for the end
    /// of a line the handshake may never send): a `PING` on a plain
    /// connection, within `bound`, that a Redis answers with `+PONG` or an
    /// error (`-NOAUTH`). Then no retry can work: a refusal, with the hint.
    async fn plaintext_port(&self, bound: Duration) -> Option<ServerError> {
        let ConnectionAddr::TcpTls { host, port, .. } = self.spec.connection_info().addr() else {
            return None;
        };
        let probe = async {
            let mut stream = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
            stream.write_all(b"PING\r\n").await?;
            let mut reply = [0u8; 6];
            stream.read_exact(&mut reply).await?;
            Ok::<_, io::Error>(reply)
        };
        let reply = tokio::time::timeout(bound, probe).await.ok()?.ok()?;
        (reply.starts_with(b"+PONG") || reply.starts_with(b"-"))
            .then(|| ServerError::Refused(TLS_TO_PLAINTEXT.to_owned()))
    }

    /// One request on `connection`, bounded by the server timeout and
    /// `give_up_at`. A broken connection is dropped so that the next request
    /// reconnects.
    async fn attempt<T, F, Fut>(
        &self,
        connection: Connection,
        request: F,
        give_up_at: tokio::time::Instant,
    ) -> redis::RedisResult<T>
    where
        F: FnOnce(Connection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let bound = self
            .timeout
            .min(give_up_at.saturating_duration_since(tokio::time::Instant::now()));
        let used = Arc::clone(&connection.sent_scripts);
        let reply = tokio::time::timeout(bound, request(connection))
            .await
            .unwrap_or_else(|_| {
                Err(RedisError::from(std::io::Error::from(
                    std::io::ErrorKind::TimedOut,
                )))
            });
        let timed_out = matches!(&reply, Err(err) if err.is_timeout());
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
        let broken = matches!(&reply, Err(err) if !err.is_timeout() && !matches!(err.kind(), ErrorKind::Server(_)));
        if broken || timeouts >= 2 {
            // Only if it is still the one in use: a waiter's subscription
            // may have put its own in its place meanwhile (`Self::share`).
            let mut cached = self.connection.lock().await;
            if cached
                .as_ref()
                .is_some_and(|cached| Arc::ptr_eq(&cached.sent_scripts, &used))
            {
                cached.take();
            }
            self.timeouts_in_a_row.store(0, Ordering::Relaxed);
        }
        reply
    }

    /// A waiter's subscription to `channels`: the messages published there
    /// from now on. Connecting and the confirmation of the subscription are
    /// bounded by the server timeout together.
    ///
    /// Where the server takes HELLO 3 (Redis 6 and later), the subscription
    /// shares the connection the attempts use, so that a waiter holds one
    /// connection per server: a RESP3 connection is opened, subscribed, and
    /// then takes the place of the one the first attempt used. That one
    /// spoke RESP2, with no HELLO and so no round trip before its request:
    /// the uncontended path, which never waits, pays nothing for RESP3.
    /// Where HELLO 3 fails (Redis 5, a renamed command), the subscription
    /// gets a connection of its own, as before.
    pub async fn subscribe(&self, channels: &[Vec<u8>]) -> Result<Listening, ServerError> {
        let subscribing = async {
            match self.open_resp3().await {
                Ok((connection, pushed)) => self.share(connection, pushed, channels).await,
                // HELLO 3 refused; or no connection at all, which the
                // second way finds out as fast.
                Err(_) => self.subscribe_alone(channels).await,
            }
        };
        match tokio::time::timeout(self.timeout, subscribing).await {
            Ok(subscribed) => subscribed.map_err(|err: RedisError| self.failed(&err)),
            Err(_) => Err(ServerError::Timeout(self.timeout)),
        }
    }

    /// A new connection that speaks RESP3 (HELLO 3, with AUTH in it when
    /// the URL has credentials), and what the server pushes on it.
    async fn open_resp3(
        &self,
    ) -> redis::RedisResult<(MultiplexedConnection, mpsc::UnboundedReceiver<PushInfo>)> {
        let settings = self
            .spec
            .connection_info()
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let (sender, pushed) = mpsc::unbounded_channel();
        let connection = self
            .open(&settings, self.config().set_push_sender(sender))
            .await?;
        Ok((connection, pushed))
    }

    /// `connection` (RESP3) subscribed to `channels`, and from now on the
    /// one this server's requests use. The one they used is closed once the
    /// requests on it, if any, are answered.
    async fn share(
        &self,
        mut connection: MultiplexedConnection,
        pushed: mpsc::UnboundedReceiver<PushInfo>,
        channels: &[Vec<u8>],
    ) -> redis::RedisResult<Listening> {
        connection.subscribe(channels).await?;
        let mut cached = self.connection.lock().await;
        let mut replacement = Connection::new(connection.clone(), self);
        // The scripts the first connection sent are in this server's
        // cache: the waiter's next attempt need not send the text again.
        // A server that restarted in between answers NOSCRIPT, and the
        // text follows (run_script), a round trip later.
        if let Some(first) = cached.as_ref() {
            let sent = first
                .sent_scripts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone();
            replacement.sent_scripts = Arc::new(StdMutex::new(sent));
        }
        *cached = Some(replacement);
        drop(cached);
        self.timeouts_in_a_row.store(0, Ordering::Relaxed);
        Ok(Listening::shared(
            pushed,
            connection,
            channels.to_vec(),
            self.timeout,
        ))
    }

    /// A connection of its own (RESP2), subscribed to `channels`.
    async fn subscribe_alone(&self, channels: &[Vec<u8>]) -> redis::RedisResult<Listening> {
        let settings = self.spec.connection_info().redis_settings();
        let mut pubsub = match self.stream().await? {
            Some(stream) => PubSub::new(settings, stream).await?,
            None => self.client.get_async_pubsub().await?,
        };
        pubsub.subscribe(channels).await?;
        Ok(Listening::own(pubsub.into_on_message()))
    }

    async fn connect(&self) -> Result<(Connection, bool), ServerError> {
        let mut cached = self.connection.lock().await;
        if let Some(connection) = cached.as_ref() {
            return Ok((connection.clone(), true));
        }
        let settings = self.spec.connection_info().redis_settings();
        let inner = self
            .open(settings, self.config())
            .await
            .map_err(|err| self.failed(&err))?;
        let connection = Connection::new(inner, self);
        *cached = Some(connection.clone());
        Ok((connection, false))
    }

    /// The db index its connections select.
    fn db(&self) -> i64 {
        self.spec.connection_info().redis_settings().db()
    }

    /// How a connection is bounded: the server timeout to connect, and
    /// again for each reply.
    fn config(&self) -> AsyncConnectionConfig {
        AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
    }

    /// A new connection with `settings`, opened here so that every reply
    /// passes [`Capped`]: a hostile server cannot make a reply of gigabytes
    /// reach memory. Its driver runs on the runtime until it is dropped.
    async fn open(
        &self,
        settings: &RedisConnectionInfo,
        config: AsyncConnectionConfig,
    ) -> redis::RedisResult<MultiplexedConnection> {
        match self.stream().await? {
            Some(stream) => {
                let (connection, driver) =
                    MultiplexedConnection::new_with_config(settings, stream, config).await?;
                tokio::spawn(driver);
                Ok(connection)
            }
            None => {
                let info = self.spec.connection_info().clone();
                redis::Client::open(info.set_redis_settings(settings.clone()))?
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
            }
        }
    }

    /// A new stream to the server that refuses replies past
    /// [`MOST_PER_REPLY`]. TLS is set up as redis-rs would (the system's
    /// roots, or the CA file's); `None` for a URL that asks for no
    /// certificate check, which is left to redis-rs.
    async fn stream(&self) -> redis::RedisResult<Option<Capped<Box<dyn Io>>>> {
        let capped = |stream: Box<dyn Io>| Ok(Some(Capped::new(stream, MOST_PER_REPLY)));
        match (self.spec.connection_info().addr(), &self.tls) {
            (ConnectionAddr::Tcp(host, port), _) => {
                capped(Box::new(tcp_stream(host, *port).await?))
            }
            (ConnectionAddr::Unix(path), _) => {
                capped(Box::new(tokio::net::UnixStream::connect(path).await?))
            }
            (
                ConnectionAddr::TcpTls {
                    host,
                    port,
                    insecure: false,
                    ..
                },
                Some(tls),
            ) => {
                let stream = tcp_stream(host, *port).await?;
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|err| RedisError::from(io::Error::other(err)))?;
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(tls));
                capped(Box::new(connector.connect(name, stream).await?))
            }
            _ => Ok(None),
        }
    }

    fn failed(&self, err: &RedisError) -> ServerError {
        if err.is_timeout() {
            return ServerError::Timeout(self.timeout);
        }
        if let Some(limit) = limit_conflict(err) {
            return ServerError::Refused(limit);
        }
        // A plain error reply ("ERR …", what scripts send) is its text:
        // redis-rs would put "ResponseError: " in front of it.
        let text = err.to_string();
        let text = text.strip_prefix("ResponseError: ").unwrap_or(&text);
        let message = self.spec.scrub(text);
        let refusal = refusal(err, &message);
        // The text is the server's, or quotes it: escaped, on one line, and
        // cut, whatever it sent.
        let message = escape_and_cut(message.as_bytes(), SERVER_TEXT_SHOWN);
        // What a TLS port does to plaintext; a server or a proxy that goes
        // away does it too, so it stays a passing failure, with a hint.
        let plain_tcp = matches!(self.spec.connection_info().addr(), ConnectionAddr::Tcp(..));
        let reset = plain_tcp && io_error_kind(err) == Some(io::ErrorKind::ConnectionReset);
        let unreachable =
            err.is_io_error() || err.is_connection_refusal() || err.is_connection_dropped();
        match refusal {
            Some("") if matches!(err.kind(), ErrorKind::AuthenticationFailed) => {
                match self.spec.auth_hint() {
                    Some(hint) => {
                        // redis-rs's "Password authentication failed -
                        // AuthenticationFailed", without the kind's name.
                        let said = message.trim_end_matches(" - AuthenticationFailed");
                        ServerError::Refused(format!("{said} ({hint})"))
                    }
                    None => ServerError::Refused(message),
                }
            }
            Some("") => ServerError::Refused(message),
            Some(why) => ServerError::Refused(format!("{why}: {message}")),
            None if reset => ServerError::Unreachable(format!("{message}; {PLAINTEXT_TO_TLS}")),
            None if unreachable => ServerError::Unreachable(message),
            None => ServerError::Failed(message),
        }
    }
}

/// `now + wait`, or a moment as good as never when that is past what an
/// `Instant` can hold: a huge server timeout must bound nothing, not panic.
pub fn after(now: tokio::time::Instant, wait: Duration) -> tokio::time::Instant {
    const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(wait)
        .unwrap_or_else(|| now + NEVER.min(wait))
}

/// limit.lua's `LIMIT <asked> <recorded>`: this server records another K
/// for the semaphore than the client's `--limit`, a refusal no retry can
/// fix. What to say of it, with the recorded K escaped and cut.
fn limit_conflict(err: &RedisError) -> Option<String> {
    if err.code() != Some("LIMIT") {
        return None;
    }
    let (asked, recorded) = err.detail()?.split_once(' ')?;
    Some(format!(
        "this server records --limit {} for the semaphore, and this client asked for \
         --limit {}: every client of a semaphore must pass the same K",
        escape_and_cut(recorded.as_bytes(), 40),
        escape_and_cut(asked.as_bytes(), 12),
    ))
}

/// The kind of the I/O error behind `err`, if there is one.
fn io_error_kind(err: &RedisError) -> Option<io::ErrorKind> {
    // redis-rs keeps the I/O error behind an `Arc<dyn Error>`.
    let source = std::error::Error::source(err)?;
    let io = source.downcast_ref::<io::Error>().or_else(|| {
        source
            .downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>()?
            .downcast_ref::<io::Error>()
    })?;
    Some(io.kind())
}

/// What a permission error says about what redlock needs.
const NOT_PERMITTED: &str = "not permitted by the server's ACL (redlock needs +set +get +del \
     +pexpire +pttl +type +strlen +time +eval +evalsha on the lock's keys, +zadd +zrem +zrange \
     +zrangebyscore +zscore +zcount for the line and --shared, +hset +hget +hdel +hstrlen for \
     readers' records, +info while the restart guard is \
     on, +scan for list, and +select for a /db other than 0)";

/// What a Redis Cluster node answers for keys it does not serve together.
const CLUSTER: &str = "a cluster-mode endpoint: redlock needs standalone masters; on a \
     cluster node only names with a {hash tag} work (a lock and its holder record must \
     share a slot, and the node must serve it)";

/// A hint for a plain TCP connection that the server reset.
const PLAINTEXT_TO_TLS: &str =
    "a TLS port resets plaintext connections: if this is one, use rediss://";

/// A hint for a TLS connection to a port that speaks plain RESP.
const TLS_TO_PLAINTEXT: &str =
    "this port speaks plaintext Redis, not TLS: use redis:// for it, or the server's TLS port";

/// What a TLS server that requires a client certificate answers.
const CLIENT_CERTIFICATE: &str =
    "the server requires a TLS client certificate, which redlock does not send";

/// What a TLS 1.2 server answers when it requires a client certificate, or
/// shares no protocol version or cipher suite with us.
const TLS_HANDSHAKE: &str = "the server refused the TLS handshake (it may require a client \
     certificate, which redlock does not send)";

/// Whether no retry can fix `err` (whose text is `message`): settings such as
/// credentials, ACLs, a replica, a database index the server does not have,
/// a URL option the client rejects, a certificate that does not verify or a
/// client certificate the server requires. `Some` of what to say before the
/// message ("" when it speaks for itself), `None` for a passing failure.
fn refusal(err: &RedisError, message: &str) -> Option<&'static str> {
    if is_not_permitted(err, message) {
        return Some(NOT_PERMITTED);
    }
    if matches!(err.code(), Some("CROSSSLOT" | "MOVED" | "ASK"))
        || matches!(
            err.kind(),
            ErrorKind::Server(
                ServerErrorKind::CrossSlot | ServerErrorKind::Moved | ServerErrorKind::Ask
            )
        )
    {
        return Some(CLUSTER);
    }
    if message.contains("received fatal alert: CertificateRequired") {
        return Some(CLIENT_CERTIFICATE);
    }
    if message.contains("received fatal alert: HandshakeFailure") {
        return Some(TLS_HANDSHAKE);
    }
    // Database index out of range (or SELECT denied, above): no retry helps.
    let refused = message.contains("refused to switch database")
        || matches!(
            err.kind(),
            ErrorKind::AuthenticationFailed
                | ErrorKind::InvalidClientConfig
                | ErrorKind::Server(ServerErrorKind::ReadOnly)
        )
        || matches!(err.code(), Some("NOAUTH" | "WRONGPASS" | "READONLY"))
        // What a server that wants a password says to a long request before
        // AUTH, instead of NOAUTH (Redis 7: more than 10 arguments).
        || message.contains("Protocol error: unauthenticated")
        || message.contains("invalid peer certificate");
    refused.then_some("")
}

/// An ACL refusal, wherever it comes from: a command (`NOPERM`), a command
/// inside a script (a plain `ERR`: "The user executing the script can't ..."
/// up to Redis 7.0, "ACL failure in script: ..." from 7.2), or the `SELECT`
/// of the connection handshake, whose error code the client library drops.
fn is_not_permitted(err: &RedisError, message: &str) -> bool {
    err.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
        || err.code() == Some("NOPERM")
        || message.contains("The user executing the script can't")
        || message.contains("ACL failure in script")
        || (message.contains("refused to switch database") && message.contains("no permissions"))
}

/// The TLS set-up of the `rediss://` servers: the CA file's certificates
/// (PEM) if one is given, else the system's roots. Built once for all of
/// them (`Redlock::new`): reading the system's roots costs milliseconds.
pub(in crate::lock) fn tls_config(
    root_cert: Option<&[u8]>,
) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::{pem::PemObject as _, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|err| format!("the CA file: {err}"))?;
                roots
                    .add(cert)
                    .map_err(|err| format!("the CA file: {err}"))?;
            }
        }
        None => {
            // A certificate the system cannot parse is no root: skip it.
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    Ok(rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A stream a connection runs over: TCP, TLS or a Unix socket.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for S {}

/// A TCP connection to `host:port` for requests, without Nagle's delay.
///
/// Its close stays graceful: what is still unsent when a connection is
/// dropped (a compare-and-delete written to a server behind a partition)
/// still goes out when the partition heals. An abortive close (zero
/// linger) would drop it, and would drop what a paused server's kernel
/// holds too; a late request is refused by the server instead
/// (lock/server_clock.rs).
async fn tcp_stream(host: &str, port: u16) -> io::Result<tokio::net::TcpStream> {
    let stream = tokio::net::TcpStream::connect((host, port)).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_past_what_an_instant_holds_is_far_away_not_a_panic() {
        let now = tokio::time::Instant::now();
        for wait in [
            Duration::MAX,
            Duration::from_secs(u64::MAX / 6),
            Duration::from_secs(1 << 62),
        ] {
            assert!(after(now, wait) > now + Duration::from_secs(365 * 24 * 3600));
            assert!(after(now, wait.saturating_mul(2)) >= now);
        }
        assert_eq!(
            after(now, Duration::from_millis(5)),
            now + Duration::from_millis(5)
        );
    }
}
