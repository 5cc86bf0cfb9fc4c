//! A connection's stream that refuses a reply larger than redlock could
//! ever need. A hostile server (or something that is not Redis) could
//! otherwise send a bulk reply of gigabytes, which would be read into
//! memory until the server timeout: 137 MB at 250 ms, 1.5 GB at 2 s.
//!
//! What counts is what is read since the last request was written: one
//! request is in flight per server at a time, so that is its reply. Plain,
//! TLS and Unix connections all read through it (`Server::open`), and so
//! do a waiter's subscriptions (listening.rs): there the messages pushed
//! since the last request count too, so a flood of them breaks the
//! connection: the next request opens another, and that server is left to
//! the poll.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most any reply may take: the largest legitimate one, a `list` batch
/// of 200 locks with 1 KiB values and 33 KiB records, is about 7 MiB.
pub const MOST_PER_REPLY: usize = 64 << 20;

/// `inner`, failing reads once more than `cap` bytes came in since the
/// last write.
pub struct Capped<S> {
    inner: S,
    cap: usize,
    read_since_write: usize,
}

impl<S> Capped<S> {
    pub fn new(inner: S, cap: usize) -> Self {
        Capped {
            inner,
            cap,
            read_since_write: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read_since_write > self.cap {
            return Poll::Ready(Err(too_large(self.cap)));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.read_since_write += buf.filled().len() - before;
            if self.read_since_write > self.cap {
                return Poll::Ready(Err(too_large(self.cap)));
            }
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = written {
            if n > 0 {
                self.read_since_write = 0;
            }
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn too_large(cap: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "a reply larger than {} MiB, more than any redlock asks for",
            cap >> 20
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn a_reply_past_the_cap_fails_and_a_request_starts_a_new_count() {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let mut capped = Capped::new(client, 10);
        server.write_all(b"0123456789").await.unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(capped.read(&mut buf).await.unwrap(), 10);
        capped.write_all(b"PING\r\n").await.unwrap();
        server.write_all(b"0123456789").await.unwrap();
        assert_eq!(capped.read(&mut buf).await.unwrap(), 10, "a new reply");
        server.write_all(b"x").await.unwrap();
        let err = capped.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
