//! A TCP forwarder on 127.0.0.1 that hands each new connection to the next
//! of its backends in turn: two live servers behind one address, as a DNS
//! round robin, a Service of several pods or a proxy pool put them. Bytes
//! pass both ways untouched; nothing in redlock is replaced.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

/// Stops accepting when dropped; open connections end when either side
/// closes.
pub struct RoundRobin {
    port: u16,
    stop: Arc<AtomicBool>,
    acceptor: Option<thread::JoinHandle<()>>,
}

impl RoundRobin {
    /// A forwarder on a free port to the servers on 127.0.0.1 at
    /// `backends`, each new connection to the next one.
    pub fn start(backends: &[u16]) -> Self {
        assert!(!backends.is_empty(), "round robin: no backend");
        let backends = backends.to_vec();
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("round robin: cannot bind 127.0.0.1:0: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("round robin: no local address: {e}"))
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let acceptor = thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let backend = backends[n % backends.len()];
                if let (Ok(client), Ok(server)) =
                    (client, TcpStream::connect(("127.0.0.1", backend)))
                {
                    forward(client, server);
                }
            }
        });
        RoundRobin {
            port,
            stop,
            acceptor: Some(acceptor),
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

/// Copies each way on a thread of its own.
fn forward(client: TcpStream, server: TcpStream) {
    let pairs = [
        (client.try_clone(), server.try_clone()),
        (Ok(server), Ok(client)),
    ];
    for pair in pairs {
        if let (Ok(mut from), Ok(mut to)) = pair {
            thread::spawn(move || {
                let mut buffer = [0; 16 * 1024];
                while let Ok(n) = from.read(&mut buffer) {
                    if n == 0 || to.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
            });
        }
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor up so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}
