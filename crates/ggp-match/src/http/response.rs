//! A reply: written with its length and `Connection: close`, then the connection closed.
//!
//! The reply is the last thing on its connection: a client that reads until the connection
//! closes (Dresden's GameController) and one that reads `Content-Length` bytes (ggp-base,
//! browsers) both see its end.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::Config;

/// An answer: status, content type and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// An answer of `content_type` with `body`.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }

    /// Writes the reply as HTTP/`version` with `config`'s headers and closes the connection:
    /// its write side at once, then, after reading for at most `config.linger` what the
    /// client may still be sending (so that it sees the reply rather than a reset), all of
    /// it. A client that has gone away gets nothing.
    pub(super) fn send(&self, mut stream: &TcpStream, version: &str, config: &Config) {
        let mut head = format!(
            "HTTP/{version} {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (name, value) in config.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("Connection: close\r\n\r\n");
        let _ = stream.set_write_timeout(Some(config.write_timeout));
        let sent = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(&self.body))
            .and_then(|()| stream.flush());
        if sent.is_ok() && stream.shutdown(Shutdown::Write).is_ok() {
            linger(stream, config.linger);
        }
    }
}

/// Reads and drops what the client still sends, for at most `time` and 1 MB, until it closes.
fn linger(mut stream: &TcpStream, time: Duration) {
    let until = Instant::now() + time;
    let mut sink = [0u8; 8192];
    let mut drained = 0usize;
    while drained < (1 << 20) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// The reason phrase of the statuses the servers send.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}
