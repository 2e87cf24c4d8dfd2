//! The player's HTTP transport: an accept loop that never stops, and bounded request reading.
//!
//! A tournament player sits for days on an open port, so anyone may connect. This module
//! owns every socket the server holds and bounds what each may cost:
//! - **Connections waiting for their request are limited** ([`Limits::max_pending`], further
//!   cut to fit the process's descriptor limit). When a new connection would pass the limit,
//!   the *oldest* waiting one is closed: a flood of idle or dribbling clients costs each of
//!   them their connection, never the referee, whose request arrives right after it connects.
//! - **Every request must arrive in full within [`Limits::request_timeout`]** from the moment
//!   it is accepted (idle clients and clients that dribble a byte at a time are closed then),
//!   and its head within [`Limits::max_head`] bytes.
//! - **Bodies are bounded** ([`Limits::max_body`]): a larger `Content-Length` is refused with
//!   413 before any of it is read or allocated; chunked bodies are decoded and cut at the same
//!   size. Nothing is left behind when a client abandons a request: its thread ends at the
//!   timeout and its socket is closed. A body that `Content-Length` leaves with a parenthesis
//!   open is read on to the one that closes it, within the same limits: ggp-base's referee
//!   announces chars, not bytes (see `complete_unbalanced`).
//! - **The accept loop survives**: when the process runs out of descriptors (EMFILE) or the
//!   kernel of buffers, it backs off (1 ms doubling to 100 ms) and keeps accepting; a panic
//!   inside it restarts it. Only an error that means the listening socket itself is gone
//!   ends it, and then [`Listener::run`] returns the error so that the process exits non-zero
//!   rather than lingering deaf.
//!
//! Requests are parsed with `httparse`; each connection is read on its own thread (few and
//! short-lived thanks to the limits above), and replies are written by [`Reply::send`] with
//! `Connection: close`.
//! Hand-rolled rather than a server crate: tiny_http 0.12 has no read timeouts and its accept
//! thread panics on EMFILE; the async servers (hyper, axum) would bring a runtime into a
//! player whose searches are plain threads. What remains here is connection bookkeeping;
//! the HTTP syntax is httparse's.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

/// What each connection may cost.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections still sending their request, at most (the oldest is closed for a new one).
    pub max_pending: usize,
    /// How long a connection may take to send its whole request.
    pub request_timeout: Duration,
    /// How long writing a reply may take.
    pub write_timeout: Duration,
    /// The largest request head (request line and headers), in bytes.
    pub max_head: usize,
    /// The largest body, in bytes.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_pending: 256,
            request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_head: 16 << 10,
            max_body: 4 << 20,
        }
    }
}

/// The request methods the player tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: the message is in the path.
    Get,
    /// `POST`: the message is the body.
    Post,
    /// `OPTIONS`: a browser's preflight.
    Options,
    /// Anything else.
    Other,
}

/// One request, read in full.
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path, as sent.
    pub path: String,
    /// The body's bytes.
    pub body: Vec<u8>,
    /// When the request head had arrived.
    pub received: Instant,
}

/// Where the reply to one request goes.
pub struct Reply {
    /// Shared with the waiting list until the request was read (see [`Pending`]).
    stream: Arc<TcpStream>,
    /// `"1.0"` or `"1.1"`, as the request said.
    version: &'static str,
}

impl Reply {
    /// Writes the reply as `Content-Type: text/acl` with the CORS headers ggp-base sends, and
    /// closes the connection. A client that has gone away gets nothing.
    pub fn send(self, status: u16, body: &str) {
        let mut stream: &TcpStream = &self.stream;
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            408 => "Request Timeout",
            413 => "Payload Too Large",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        };
        let head = format!(
            "HTTP/{} {status} {reason}\r\n\
             Content-Type: text/acl\r\n\
             Content-Length: {}\r\n\
             Access-Control-Allow-Origin: *\r\n\
             Access-Control-Allow-Methods: POST, GET, OPTIONS\r\n\
             Access-Control-Allow-Headers: Content-Type\r\n\
             Access-Control-Max-Age: 86400\r\n\
             Connection: close\r\n\r\n",
            self.version,
            body.len()
        );
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .and_then(|()| stream.flush());
        let _ = stream.shutdown(Shutdown::Write);
        // Unread request bytes make close() send a reset that may overtake the reply; wait
        // briefly for the client to close its side first.
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        let mut sink = [0u8; 1024];
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            match stream.read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }
}

/// A bound listening socket with its limits, not yet accepting.
pub struct Listener {
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
    stopping: Arc<AtomicBool>,
    pending: Arc<Pending>,
}

/// A handle that stops a running [`Listener`] from another thread.
#[derive(Clone)]
pub struct Stopper {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
}

impl Stopper {
    /// Makes the accept loop return at its next connection, and wakes it with one.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }
}

/// Connections still sending their request, oldest first, so that the oldest can be closed.
///
/// The list shares each socket with the thread reading it (an `Arc`, not a duplicated
/// descriptor): a duplicate costs a second descriptor, and when the process had none left
/// (a flood under a low `ulimit -n`) the new connection was dropped unread, its client reset;
/// that was the referee's INFO about one run in five in
/// `tests/protocol.rs`'s descriptor test.
#[derive(Default)]
struct Pending {
    next: AtomicU64,
    open: Mutex<VecDeque<(u64, Arc<TcpStream>)>>,
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, VecDeque<(u64, Arc<TcpStream>)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a connection, closing the oldest ones beyond `max`; its number.
    fn admit(&self, stream: &Arc<TcpStream>, max: usize) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut open = self.lock();
        while open.len() >= max.max(1) {
            // The oldest connection with nothing unread goes first: a request that has
            // arrived whole but whose thread has not read it yet (a referee's, under a flood)
            // is kept, and idle or stalled connections are closed instead.
            let victim = open
                .iter()
                .position(|(_, s)| !has_unread_bytes(s))
                .unwrap_or(0);
            let (_, closed) = open.remove(victim).expect("the queue is not empty");
            debug!("too many connections waiting: an idle one is closed");
            let _ = closed.shutdown(Shutdown::Both);
        }
        open.push_back((id, Arc::clone(stream)));
        id
    }

    /// Forgets a connection (its request is complete, or it is closed).
    fn release(&self, id: u64) {
        let mut open = self.lock();
        if let Some(at) = open.iter().position(|(i, _)| *i == id) {
            open.remove(at);
        }
    }
}

/// Whether bytes have arrived on `stream` that nobody has read yet (without blocking, and
/// without touching the socket's blocking mode, which its clones share).
fn has_unread_bytes(stream: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: recv writes at most one byte into `byte`, which lives for the call; MSG_PEEK
    // leaves the byte in the socket and MSG_DONTWAIT makes this one call non-blocking.
    let got = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&raw mut byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got > 0
}

/// Descriptors kept free for everything but waiting connections (the engine, logs, replies).
const RESERVED_FDS: u64 = 64;

/// How many connections may wait at once given the process's descriptor limit: each costs
/// one descriptor while it waits, and may keep it a while after (its reply being written,
/// or its thread ending after it was closed), so a third of what is left is theirs.
fn fd_room() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if got != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return usize::MAX;
    }
    let current: u64 = limit.rlim_cur;
    let room = current.saturating_sub(RESERVED_FDS) / 3;
    usize::try_from(room.max(4)).unwrap_or(usize::MAX)
}

/// Whether an accept error is worth waiting out (resources, a connection that died in the
/// queue, a network hiccup) rather than a sign that the socket itself is gone.
fn is_transient(e: &io::Error) -> bool {
    !matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT | libc::EOPNOTSUPP)
    )
}

impl Listener {
    /// Binds to `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(addr: impl std::net::ToSocketAddrs, mut limits: Limits) -> io::Result<Listener> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        limits.max_pending = limits.max_pending.min(fd_room());
        Ok(Listener {
            listener,
            addr,
            limits,
            stopping: Arc::new(AtomicBool::new(false)),
            pending: Arc::new(Pending::default()),
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The limits in force (the connection limit cut to the descriptor limit).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A handle that stops [`Listener::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper {
            addr: self.addr,
            stopping: Arc::clone(&self.stopping),
        }
    }

    /// Accepts connections until stopped, calling `handle` on a connection's thread with each
    /// complete request; malformed, oversized and timed-out requests are answered (or closed)
    /// here.
    ///
    /// # Errors
    /// The listening socket is unusable (closed, not a socket): the server can no longer
    /// listen.
    pub fn run<H>(&self, handle: H) -> io::Result<()>
    where
        H: Fn(Request, Reply) + Send + Sync + 'static,
    {
        let handle = Arc::new(handle);
        loop {
            let ran = catch_unwind(AssertUnwindSafe(|| self.accept_loop(&handle)));
            match ran {
                Ok(result) => return result,
                Err(_) if self.stopping.load(Ordering::SeqCst) => return Ok(()),
                Err(_) => warn!("the accept loop panicked; it is restarted"),
            }
        }
    }

    fn accept_loop<H>(&self, handle: &Arc<H>) -> io::Result<()>
    where
        H: Fn(Request, Reply) + Send + Sync + 'static,
    {
        let mut backoff = Duration::ZERO;
        loop {
            let accepted = self.listener.accept();
            if self.stopping.load(Ordering::SeqCst) {
                return Ok(());
            }
            match accepted {
                Ok((stream, peer)) => {
                    backoff = Duration::ZERO;
                    self.serve(stream, peer, handle);
                }
                Err(e) if is_transient(&e) => {
                    backoff =
                        (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                    if backoff == Duration::from_millis(100)
                        || e.raw_os_error() != Some(libc::EMFILE)
                    {
                        warn!("accepting a connection failed: {e}; retrying in {backoff:?}");
                    }
                    std::thread::sleep(backoff);
                }
                Err(e) => {
                    warn!("the listening socket failed: {e}");
                    return Err(e);
                }
            }
        }
    }

    /// Starts the thread that reads one connection's request and hands it on.
    fn serve<H>(&self, stream: TcpStream, peer: SocketAddr, handle: &Arc<H>)
    where
        H: Fn(Request, Reply) + Send + Sync + 'static,
    {
        let accepted = Instant::now();
        let stream = Arc::new(stream);
        let id = self.pending.admit(&stream, self.limits.max_pending);
        let pending = Arc::clone(&self.pending);
        let limits = self.limits.clone();
        let handle = Arc::clone(handle);
        let spawned = std::thread::Builder::new()
            .name("ggp-connection".into())
            .stack_size(256 << 10)
            .spawn(move || {
                let read = read_request(&stream, &limits, accepted);
                pending.release(id);
                let _ = stream.set_write_timeout(Some(limits.write_timeout));
                match read {
                    Ok((request, version)) => handle(request, Reply { stream, version }),
                    Err(Refusal::Close(why)) => debug!("connection from {peer} closed: {why}"),
                    Err(Refusal::Answer(status, why, version)) => {
                        debug!("request from {peer} refused: {why}");
                        Reply { stream, version }.send(status, &format!("error: {why}"));
                    }
                }
            });
        if let Err(e) = spawned {
            warn!("cannot start a connection thread: {e}");
            self.pending.release(id);
        }
    }
}

/// Why a request is not handed on.
#[derive(Debug)]
enum Refusal {
    /// Close without a reply (the client went away or never sent a request).
    Close(String),
    /// Answer with this status and reason.
    Answer(u16, String, &'static str),
}

/// Reads more bytes into `buf`, waiting at most until `deadline`; how many came (0: the
/// client closed).
fn fill(
    mut stream: &TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    version: &'static str,
) -> Result<usize, Refusal> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Refusal::Answer(
            408,
            "the request did not arrive in time".into(),
            version,
        ));
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
            Err(Refusal::Answer(
                408,
                "the request did not arrive in time".into(),
                version,
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(usize::MAX),
        Err(e) => Err(Refusal::Close(format!("reading failed: {e}"))),
    }
    .map(|n| if n == usize::MAX { 1 } else { n })
}

/// Reads one request from `stream` within the limits; the request and its HTTP version.
fn read_request(
    stream: &TcpStream,
    limits: &Limits,
    accepted: Instant,
) -> Result<(Request, &'static str), Refusal> {
    let deadline = accepted + limits.request_timeout;
    let mut buf = Vec::with_capacity(1024);
    let (head_len, method, path, version, body_kind) = loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let version = if parsed.version == Some(0) {
                    "1.0"
                } else {
                    "1.1"
                };
                let method = match parsed.method.unwrap_or("") {
                    "GET" => Method::Get,
                    "POST" => Method::Post,
                    "OPTIONS" => Method::Options,
                    _ => Method::Other,
                };
                let path = parsed.path.unwrap_or("/").to_string();
                let body = body_kind(parsed.headers, limits.max_body)
                    .map_err(|(status, why)| Refusal::Answer(status, why, version))?;
                break (len, method, path, version, body);
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
        if buf.len() > limits.max_head {
            return Err(Refusal::Answer(
                431,
                format!("the request head is larger than {} bytes", limits.max_head),
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
            complete_unbalanced(stream, rest, n, limits.max_body, deadline)
        }
        BodyKind::Chunked => read_chunked(stream, rest, limits.max_body, deadline, version)?,
    };
    Ok((
        Request {
            method,
            path,
            body,
            received,
        },
        version,
    ))
}

/// Where the parentheses of a KIF text stand: how many are open, and whether a `;` comment
/// runs to the end of the line. KIF has no strings, and the bytes of a UTF-8 sequence are
/// never ASCII, so bytes can be scanned as they arrive.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Balance {
    open: usize,
    comment: bool,
}

impl Balance {
    /// Reads `bytes` on; where the last open parenthesis closes in them (the index after it),
    /// if it does. A `)` with nothing open is left to the parser.
    fn feed(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\n' => self.comment = false,
                _ if self.comment => {}
                b';' => self.comment = true,
                b'(' => self.open += 1,
                b')' if self.open > 0 => {
                    self.open -= 1;
                    if self.open == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// The body framed by `Content-Length: n`, its first bytes (at least `n`) being `buf`.
///
/// ggp-base's referee announces the body's length in Java chars (`String.length()`) and then
/// writes it in UTF-8, so a message with non-ASCII symbols (a byte-order mark read as the
/// three Latin-1 chars `ï»¿`) has more bytes than announced. When the announced bytes leave a
/// parenthesis open, the body goes on as far as the one that closes it, read from the
/// connection if need be, until it balances, the client closes, `max` bytes have come or
/// the deadline passes; what has arrived then is the body (the parser judges it). A body
/// that balances is exactly the announced bytes and waits for nothing more: the referee
/// keeps its connection open for the reply.
fn complete_unbalanced(
    stream: &TcpStream,
    mut buf: Vec<u8>,
    n: usize,
    max: usize,
    deadline: Instant,
) -> Vec<u8> {
    let mut balance = Balance::default();
    let mut at = 0;
    while let Some(end) = balance.feed(&buf[at..n]) {
        at += end;
    }
    if balance.open == 0 {
        buf.truncate(n);
        return buf;
    }
    let mut scanned = n;
    loop {
        let upto = buf.len().min(max);
        if let Some(end) = balance.feed(&buf[scanned..upto]) {
            buf.truncate(scanned + end);
            info!(
                "the body runs {} bytes past its Content-Length of {n} to close its parentheses",
                buf.len() - n
            );
            return buf;
        }
        if upto == max {
            buf.truncate(max);
            debug!("the body is still unbalanced at {max} bytes: it is cut there");
            return buf;
        }
        scanned = upto;
        match fill(stream, &mut buf, deadline, "1.0") {
            Ok(0) => {
                debug!("the body's parentheses are unbalanced and the client closed");
                return buf;
            }
            Ok(_) => {}
            Err(why) => {
                debug!("the body's parentheses are still unbalanced when reading stops: {why:?}");
                return buf;
            }
        }
    }
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    None,
    Length(usize),
    Chunked,
}

/// The body's framing from the headers, or the status and reason to refuse it.
fn body_kind(headers: &[httparse::Header<'_>], max: usize) -> Result<BodyKind, (u16, String)> {
    let mut kind = BodyKind::None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let value = String::from_utf8_lossy(h.value);
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
                return Err((413, format!("the message is larger than {max} bytes")));
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
                format!("the message is larger than {max} bytes"),
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

    fn kind(headers: &[(&str, &str)]) -> Result<BodyKind, (u16, String)> {
        let headers: Vec<httparse::Header<'_>> = headers
            .iter()
            .map(|(name, value)| httparse::Header {
                name,
                value: value.as_bytes(),
            })
            .collect();
        body_kind(&headers, 100)
    }

    #[test]
    fn bodies_are_framed_by_length_or_chunks_and_bounded() {
        assert_eq!(kind(&[]), Ok(BodyKind::None));
        assert_eq!(
            kind(&[("Content-Length", " 12 ")]),
            Ok(BodyKind::Length(12))
        );
        assert_eq!(
            kind(&[("transfer-encoding", "chunked")]),
            Ok(BodyKind::Chunked)
        );
        assert_eq!(kind(&[("Content-Length", "101")]).unwrap_err().0, 413);
        assert_eq!(
            kind(&[("Content-Length", "99999999999999999999999")])
                .unwrap_err()
                .0,
            400
        );
        assert_eq!(kind(&[("Content-Length", "-1")]).unwrap_err().0, 400);
        assert_eq!(kind(&[("Transfer-Encoding", "gzip")]).unwrap_err().0, 400);
    }

    #[test]
    fn parentheses_are_counted_outside_comments() {
        let mut b = Balance::default();
        assert_eq!(b.feed(b"( a ; ) ) ( comment\n ( b )"), None);
        assert_eq!(b.open, 1);
        assert_eq!(b.feed(b" ) ) junk"), Some(2));
        let mut b = Balance::default();
        assert_eq!(b.feed(b") x"), None, "a stray `)` is the parser's business");
        assert_eq!(b, Balance::default());
        let mut b = Balance::default();
        assert_eq!(b.feed(b"; ( \r\n(\xc3\xaf)"), Some(10));
    }

    /// A client connected to a listener, and the server's side of the connection.
    fn connected() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (client, listener.accept().unwrap().0)
    }

    /// Reads a request within `timeout` and `max_body`; its body as text (lossily), and how
    /// long the reading took.
    fn body_read(server: &TcpStream, timeout: Duration, max_body: usize) -> (String, Duration) {
        let limits = Limits {
            request_timeout: timeout,
            max_body,
            ..Limits::default()
        };
        let accepted = Instant::now();
        let (request, _) = read_request(server, &limits, accepted).unwrap();
        (
            String::from_utf8_lossy(&request.body).into_owned(),
            accepted.elapsed(),
        )
    }

    fn post(length: usize, body: &str) -> Vec<u8> {
        format!("POST / HTTP/1.0\nContent-Length: {length}\n\n{body}").into_bytes()
    }

    /// ggp-base announces the body in Java chars and writes it in UTF-8: each of the three
    /// chars of a mangled byte-order mark is two bytes.
    const START: &str = "( START m x (\u{ef}\u{bb}\u{bf} ( role x ) ) 5 3)";

    #[test]
    fn a_balanced_body_is_the_announced_bytes_and_waits_for_nothing() {
        let (mut client, server) = connected();
        // The connection stays open, as the referee's does while it waits for the reply.
        client.write_all(&post(8, "( INFO )( PLAY")).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, "( INFO )");
        assert!(took < Duration::from_secs(1), "{took:?}");
        // Non-ASCII bytes in a balanced body are announced bytes like any other.
        let (mut client, server) = connected();
        client.write_all(&post(4, "(\u{ef})\u{bb}")).unwrap();
        assert_eq!(
            body_read(&server, Duration::from_secs(5), 1000).0,
            "(\u{ef})"
        );
        drop(client);
    }

    #[test]
    fn an_unbalanced_body_is_completed_from_the_stream() {
        let chars = START.chars().count();
        assert_eq!(START.len(), chars + 3);
        // All of it at once, as ggp-base writes it; anything after the last `)` is not read.
        let (mut client, server) = connected();
        client
            .write_all(&post(chars, &format!("{START}(extra")))
            .unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, START);
        assert!(took < Duration::from_secs(1), "{took:?}");
        // The rest in a later packet.
        let (mut client, server) = connected();
        let (first, rest) = START.split_at(chars);
        client.write_all(&post(chars, first)).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            client.write_all(rest.as_bytes()).unwrap();
            client
        });
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, START);
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(writer.join());
    }

    #[test]
    fn an_unbalanced_body_whose_client_closes_is_what_arrived() {
        let (mut client, server) = connected();
        client.write_all(&post(9, "( START m x")).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, "( START m x");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_body_that_never_balances_is_cut_at_the_deadline_or_the_size_limit() {
        // A client that keeps dribbling open parentheses: the deadline ends the body.
        let (mut client, server) = connected();
        client.write_all(&post(2, "((")).unwrap();
        let dribbler = std::thread::spawn(move || {
            while client.write_all(b"(").is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let (body, took) = body_read(&server, Duration::from_millis(300), 1000);
        assert!(body.len() > 2 && body.bytes().all(|b| b == b'('), "{body}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(server);
        dribbler.join().unwrap();
        // One that sends more than the limit: the body is cut there.
        let (mut client, server) = connected();
        client.write_all(&post(1, &"(".repeat(5000))).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 100);
        assert_eq!(body, "(".repeat(100));
        assert!(took < Duration::from_secs(1), "{took:?}");
        drop(client);
    }

    #[test]
    fn the_oldest_waiting_connection_makes_room() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let pending = Pending::default();
        let clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let served: Vec<Arc<TcpStream>> = (0..3)
            .map(|_| Arc::new(listener.accept().unwrap().0))
            .collect();
        for s in &served {
            pending.admit(s, 2);
        }
        assert_eq!(pending.lock().len(), 2);
        // The first connection was shut down: its client reads the end of the stream.
        let mut first = &clients[0];
        first
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(first.read(&mut byte).unwrap(), 0);
        pending.release(2);
        assert_eq!(pending.lock().len(), 1);
    }
}
