//! A server that is not Redis: a real TCP socket on 127.0.0.1 that answers
//! every read with the same bytes, whatever was asked. It stands for a
//! hostile or broken server (escape sequences in an error, HTTP, a huge
//! reply) talking to the real binary; nothing in redlock is replaced.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

/// Stops accepting when dropped; connections end when the client closes.
pub struct FakeServer {
    port: u16,
    stop: Arc<AtomicBool>,
    acceptor: Option<thread::JoinHandle<()>>,
}

impl FakeServer {
    /// A server on a free port that writes `reply` after each read of a
    /// connection: once per request, for a client that waits for each answer.
    pub fn answering(reply: impl Into<Vec<u8>>) -> Self {
        let reply: Arc<[u8]> = reply.into().into();
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("fake server: cannot bind 127.0.0.1:0: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake server: no local address: {e}"))
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let acceptor = thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let reply = Arc::clone(&reply);
                    thread::spawn(move || answer(stream, &reply));
                }
            }
        });
        FakeServer {
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

fn answer(mut stream: TcpStream, reply: &[u8]) {
    let mut request = [0; 64 * 1024];
    while let Ok(n) = stream.read(&mut request) {
        if n == 0 || stream.write_all(reply).is_err() {
            break;
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor up so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}
