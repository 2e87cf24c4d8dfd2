//! The HTTP/1.1 side of `ggp web`: one request per connection, read within limits.
//!
//! Hand-rolled on [`httparse`] rather than tiny_http: tiny_http 0.12 drains an unread body
//! on drop by allocating its announced size at once, so one request announcing
//! `Content-Length: 99999999999` aborted the process. Here the announced size is checked
//! against the endpoint's limit before anything is allocated, the head and the body must
//! arrive within [`READ_TIMEOUT`], and every answer closes its connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Largest request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// Time allowed for a whole request to arrive.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request as the server answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `GET`, `POST`...
    pub method: String,
    /// The path, without its query.
    pub path: String,
    /// The body.
    pub body: Vec<u8>,
}

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
    /// A JSON answer.
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    /// A JSON error `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }
}

/// Reads one request from `stream`; `max_body` gives the largest body allowed for a method
/// and path. A refusal comes back as the answer to send.
///
/// # Errors
/// The answer to send instead (400, 408, 411, 413, 431): nothing larger than the limits is
/// ever allocated.
pub fn read_request(
    stream: &mut TcpStream,
    max_body: impl Fn(&str, &str) -> usize,
) -> Result<Request, Response> {
    let start = Instant::now();
    let mut buf = vec![0u8; 4096];
    let mut filled = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(head_len)) => {
                let method = parsed.method.unwrap_or("").to_string();
                let target = parsed.path.unwrap_or("/");
                let path = target.split('?').next().unwrap_or("").to_string();
                let mut length = None;
                for h in parsed.headers.iter() {
                    if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        return Err(Response::error(411, "send the body with a Content-Length"));
                    }
                    if h.name.eq_ignore_ascii_case("content-length") {
                        let n = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .ok_or_else(|| Response::error(400, "bad Content-Length"))?;
                        if length.is_some_and(|l| l != n) {
                            return Err(Response::error(400, "conflicting Content-Length"));
                        }
                        length = Some(n);
                    }
                }
                let length = length.unwrap_or(0);
                let max = max_body(&method, &path);
                if length > max as u64 {
                    return Err(Response::error(
                        413,
                        &format!("the request body is {length} bytes; the limit here is {max}"),
                    ));
                }
                let length = length as usize;
                let mut body = buf[head_len..filled].to_vec();
                body.truncate(length);
                body.reserve_exact(length - body.len());
                while body.len() < length {
                    let got = read_some(stream, &mut buf, start)?;
                    let take = got.min(length - body.len());
                    body.extend_from_slice(&buf[..take]);
                }
                return Ok(Request { method, path, body });
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(Response::error(400, &format!("bad request: {e}"))),
        }
        if filled == MAX_HEAD {
            return Err(Response::error(431, "request head too large"));
        }
        if filled == buf.len() {
            buf.resize((buf.len() * 2).min(MAX_HEAD), 0);
        }
        let room = buf.len() - filled;
        let mut chunk = vec![0u8; room];
        let got = read_some(stream, &mut chunk, start)?;
        buf[filled..filled + got].copy_from_slice(&chunk[..got]);
        filled += got;
    }
}

/// Reads at least one byte into `buf`, before `start + READ_TIMEOUT`.
fn read_some(stream: &mut TcpStream, buf: &mut [u8], start: Instant) -> Result<usize, Response> {
    loop {
        let left = READ_TIMEOUT.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(Response::error(408, "the request did not arrive in time"));
        }
        stream.set_read_timeout(Some(left)).ok();
        match stream.read(buf) {
            Ok(0) => return Err(Response::error(400, "the request ended early")),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Response::error(408, "the request did not arrive in time"));
            }
            Err(e) => {
                return Err(Response::error(
                    400,
                    &format!("cannot read the request: {e}"),
                ));
            }
        }
    }
}

/// Writes `response` and closes the connection (after reading, for at most a second, what
/// the client may still be sending, so that it sees the answer rather than a reset).
pub fn write_response(mut stream: TcpStream, response: &Response) {
    let reason = match response.status {
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
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    stream.set_write_timeout(Some(READ_TIMEOUT)).ok();
    // A client that went away gets no answer; nothing else to do.
    let sent = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&response.body))
        .and_then(|()| stream.flush());
    if sent.is_ok() && stream.shutdown(Shutdown::Write).is_ok() {
        let until = Instant::now() + Duration::from_secs(1);
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
}
