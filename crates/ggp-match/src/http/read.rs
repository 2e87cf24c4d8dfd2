//! One request read from a connection within the limits: the head within
//! [`Config::max_head`] bytes, the whole request within [`Config::request_timeout`] of its
//! accept, the body within the server's size for the method and path.
//!
//! A larger `Content-Length` is refused with 413 before any of the body is read or allocated;
//! a chunked body is decoded and cut at the same size (or refused with 411 where the server
//! takes none). Nothing is left behind when a client abandons a request: the reading ends at
//! the deadline.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

use super::{Config, Method, Request, kif_body};

/// Why a request is not handed on.
#[derive(Debug)]
pub(super) enum Refusal {
    /// Close without a reply (the client went away or never sent a request).
    Close(String),
    /// Answer with this status and reason, in this HTTP version.
    Answer(u16, String, &'static str),
}

/// Reads one request from `stream` within `config`'s limits and the body size `max_body`
/// gives for its method and path.
///
/// # Errors
/// The refusal: the answer to send instead, or the reason to close without one.
pub(super) fn read_request(
    stream: &TcpStream,
    config: &Config,
    max_body: impl Fn(Method, &str) -> usize,
    accepted: Instant,
) -> Result<Request, Refusal> {
    let deadline = accepted + config.request_timeout;
    let mut buf = Vec::with_capacity(1024);
    let (head_len, method, target, version, max, body_kind) = loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let version = if parsed.version == Some(0) {
                    "1.0"
                } else {
                    "1.1"
                };
                let method = Method::parse(parsed.method.unwrap_or(""));
                let target = parsed.path.unwrap_or("/").to_string();
                let max = max_body(method, target.split('?').next().unwrap_or(""));
                let body = body_kind(parsed.headers, max, config.chunked)
                    .map_err(|(status, why)| Refusal::Answer(status, why, version))?;
                break (len, method, target, version, max, body);
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => {
                return Err(Refusal::Answer(
                    400,
                    format!("malformed HTTP request: {e}"),
                    "1.0",
                ));
            }
        }
        if buf.len() > config.max_head {
            return Err(Refusal::Answer(
                431,
                format!("the request head is larger than {} bytes", config.max_head),
                "1.0",
            ));
        }
        let before = buf.len();
        if fill(stream, &mut buf, deadline, "1.0")? == 0 {
            return Err(if before == 0 {
                Refusal::Close("closed without a request".into())
            } else {
                Refusal::Answer(400, "the request ends inside its head".into(), "1.0")
            });
        }
    };
    let received = Instant::now();
    let mut rest = buf.split_off(head_len);
    let body = match body_kind {
        BodyKind::None => Vec::new(),
        BodyKind::Length(n) => {
            while rest.len() < n {
                if fill(stream, &mut rest, deadline, version)? == 0 {
                    return Err(Refusal::Answer(
                        400,
                        format!("the body ends after {} of {n} bytes", rest.len()),
                        version,
                    ));
                }
            }
            if config.kif_bodies {
                kif_body::complete_unbalanced(stream, rest, n, max, deadline)
            } else {
                rest.truncate(n);
                rest
            }
        }
        BodyKind::Chunked => read_chunked(stream, rest, max, deadline, version)?,
    };
    Ok(Request {
        method,
        target,
        version,
        body,
        received,
    })
}

/// Reads more bytes into `buf`, waiting at most until `deadline`; how many came (0: the
/// client closed).
///
/// # Errors
/// 408 at the deadline; a failed read closes the connection.
pub(super) fn fill(
    mut stream: &TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    version: &'static str,
) -> Result<usize, Refusal> {
    let late = || Refusal::Answer(408, "the request did not arrive in time".into(), version);
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(late());
    }
    let _ = stream.set_read_timeout(Some(left));
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk) {
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(n)
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Err(late())
        }
        // Nothing came, but the client is still there.
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(1),
        Err(e) => Err(Refusal::Close(format!("reading failed: {e}"))),
    }
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    None,
    Length(usize),
    Chunked,
}

/// The body's framing from the headers, or the status and reason to refuse it: a length
/// over `max` (413), chunked where `chunked` is false (411), a length that is no number or
/// two that differ (400).
fn body_kind(
    headers: &[httparse::Header<'_>],
    max: usize,
    chunked: bool,
) -> Result<BodyKind, (u16, String)> {
    let mut kind = BodyKind::None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let value = String::from_utf8_lossy(h.value);
            if !chunked {
                return Err((411, "send the body with a Content-Length".into()));
            }
            if value.trim().eq_ignore_ascii_case("chunked") {
                kind = BodyKind::Chunked;
            } else {
                return Err((400, format!("transfer encoding `{value}` is not supported")));
            }
        } else if h.name.eq_ignore_ascii_case("content-length") && kind != BodyKind::Chunked {
            let value = std::str::from_utf8(h.value).unwrap_or("").trim();
            let n: u64 = value
                .parse()
                .map_err(|_| (400, format!("Content-Length `{value}` is not a number")))?;
            if n > max as u64 {
                return Err((
                    413,
                    format!("the request body is {n} bytes; the limit here is {max}"),
                ));
            }
            if matches!(kind, BodyKind::Length(m) if m as u64 != n) {
                return Err((400, "conflicting Content-Length".into()));
            }
            kind = BodyKind::Length(n as usize);
        }
    }
    Ok(kind)
}

/// Decodes a chunked body whose first bytes are `buf`, refusing it past `max` bytes.
fn read_chunked(
    stream: &TcpStream,
    mut buf: Vec<u8>,
    max: usize,
    deadline: Instant,
    version: &'static str,
) -> Result<Vec<u8>, Refusal> {
    let mut body = Vec::new();
    let mut at = 0;
    let truncated = || Refusal::Answer(400, "the chunked body ends early".into(), version);
    loop {
        let size = loop {
            match httparse::parse_chunk_size(&buf[at..]) {
                Ok(httparse::Status::Complete((len, size))) => {
                    at += len;
                    break size;
                }
                Ok(httparse::Status::Partial) if buf.len() - at < 1024 => {
                    if fill(stream, &mut buf, deadline, version)? == 0 {
                        return Err(truncated());
                    }
                }
                _ => {
                    return Err(Refusal::Answer(400, "malformed chunk size".into(), version));
                }
            }
        };
        if size > (max - body.len()) as u64 {
            return Err(Refusal::Answer(
                413,
                format!("the request body is over the limit here, {max} bytes"),
                version,
            ));
        }
        // The chunk and its CRLF (the last, empty chunk: the CRLF that ends the trailers).
        let need = size as usize + 2;
        while buf.len() - at < need {
            if fill(stream, &mut buf, deadline, version)? == 0 {
                return Err(truncated());
            }
        }
        body.extend_from_slice(&buf[at..at + size as usize]);
        at += need;
        if size == 0 {
            return Ok(body);
        }
        // Keep the buffer small: drop what has been decoded.
        buf.drain(..at);
        at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(headers: &[(&str, &str)], chunked: bool) -> Result<BodyKind, (u16, String)> {
        let headers: Vec<httparse::Header<'_>> = headers
            .iter()
            .map(|(name, value)| httparse::Header {
                name,
                value: value.as_bytes(),
            })
            .collect();
        body_kind(&headers, 100, chunked)
    }

    #[test]
    fn bodies_are_framed_by_length_or_chunks_and_bounded() {
        assert_eq!(kind(&[], true), Ok(BodyKind::None));
        assert_eq!(
            kind(&[("Content-Length", " 12 ")], true),
            Ok(BodyKind::Length(12))
        );
        assert_eq!(
            kind(&[("transfer-encoding", "chunked")], true),
            Ok(BodyKind::Chunked)
        );
        assert_eq!(kind(&[("Content-Length", "101")], true).unwrap_err().0, 413);
        assert_eq!(
            kind(&[("Content-Length", "99999999999999999999999")], true)
                .unwrap_err()
                .0,
            400
        );
        assert_eq!(kind(&[("Content-Length", "-1")], true).unwrap_err().0, 400);
        assert_eq!(
            kind(&[("Transfer-Encoding", "gzip")], true).unwrap_err().0,
            400
        );
        assert_eq!(
            kind(&[("Content-Length", "3"), ("content-length", "4")], true)
                .unwrap_err()
                .0,
            400
        );
        assert_eq!(
            kind(&[("Content-Length", "3"), ("content-length", "3")], true),
            Ok(BodyKind::Length(3))
        );
        assert_eq!(
            kind(&[("Transfer-Encoding", "chunked")], false)
                .unwrap_err()
                .0,
            411
        );
    }
}
