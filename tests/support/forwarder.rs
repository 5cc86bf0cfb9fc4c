//! A TCP forwarder on 127.0.0.1 that stands for one address with a server
//! behind it that can change: a managed endpoint, a virtual IP or a DNS
//! name that a failover moves to a replica. [`Forwarder::switch_to`] sends
//! every new connection to another server and cuts the ones already open,
//! as a moved VIP does. Real sockets and real servers only: the bytes are
//! copied as they are.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

pub struct Forwarder {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: AtomicU16,
    /// Both ends of every connection open now, to cut them at a switch.
    open: Mutex<Vec<TcpStream>>,
    stopped: AtomicBool,
}

impl Forwarder {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream`.
    pub fn start(upstream: u16) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a forwarder port");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            upstream: AtomicU16::new(upstream),
            open: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(client) = client {
                    let _ = accepting.forward(client);
                }
            }
        });
        Forwarder { port, shared }
    }

    /// The address as a server spec: `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// From now on, connections reach `upstream`; those open are cut.
    pub fn switch_to(&self, upstream: u16) {
        self.shared.upstream.store(upstream, Ordering::SeqCst);
        self.shared.cut_all();
    }
}

impl Shared {
    fn forward(&self, client: TcpStream) -> io::Result<()> {
        let server = TcpStream::connect(("127.0.0.1", self.upstream.load(Ordering::SeqCst)))?;
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            open.push(client.try_clone()?);
            open.push(server.try_clone()?);
        }
        pipe(client.try_clone()?, server.try_clone()?);
        pipe(server, client);
        Ok(())
    }

    fn cut_all(&self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        for stream in open.drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to` on a thread of its own until either end closes.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.cut_all();
        // Wake the accepting thread so that it sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}
