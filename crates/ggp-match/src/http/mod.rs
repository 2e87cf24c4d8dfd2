//! The one HTTP/1.x server layer, under `ggp serve` (the match protocol) and `ggp web` (the
//! page): an accept loop, requests read within limits, and replies that close their
//! connection. Each server gives its own [`Config`] and answers through a [`Service`].
//!
//! - `listener.rs`: the accept loop that never stops, the bound on connections waiting for
//!   their request, one thread per connection.
//! - `read.rs`: one request read within the time and size limits (head, `Content-Length` or
//!   chunked body).
//! - `kif_body.rs`: ggp-base's `Content-Length` counted in Java chars: a body read on past it
//!   while its KIF parentheses are open.
//! - `response.rs`: a reply written with `Connection: close`, the connection then closed.
//!
//! Hand-written on `std::net` with [`httparse`] for the syntax rather than a server crate,
//! because no server crate frames a body the way ggp-base's referee needs: every one ends
//! the body at `Content-Length` and would read the bytes past it as the next request.
//! tiny_http 0.12 also had no read timeouts, its accept thread stopped for good on EMFILE,
//! and it skipped an unread body by allocating its announced size (one request announcing
//! `Content-Length: 99999999999` aborted the process); hyper and axum bring an async runtime
//! into a player whose searches are plain threads. What is here is connection bookkeeping.

mod kif_body;
mod listener;
mod read;
mod response;

use std::time::{Duration, Instant};

pub use listener::{Listener, Stopper};
pub use response::Response;

/// What one server accepts, and what each connection may cost.
#[derive(Debug, Clone)]
pub struct Config {
    /// Connections still sending their request, at most (the oldest is closed for a new one;
    /// further cut to fit the process's descriptor limit).
    pub max_pending: usize,
    /// Connections open at once, from accept to reply; past it a new one is refused with 503
    /// at once (`usize::MAX`: no limit but `max_pending`).
    pub max_connections: usize,
    /// How long a connection may take to send its whole request.
    pub request_timeout: Duration,
    /// How long writing a reply may take.
    pub write_timeout: Duration,
    /// How long, after the reply, the client's unread bytes are read and dropped, so that it
    /// sees the reply rather than a reset.
    pub linger: Duration,
    /// The largest request head (request line and headers), in bytes.
    pub max_head: usize,
    /// The stack of each connection's thread, in bytes.
    pub thread_stack: usize,
    /// Chunked bodies are decoded (within the body limit); otherwise refused with 411.
    pub chunked: bool,
    /// A body that `Content-Length` leaves with a KIF parenthesis open is read on to the one
    /// that closes it: ggp-base's referee counts Java chars, not bytes.
    pub kif_bodies: bool,
    /// Headers every reply carries.
    pub headers: &'static [(&'static str, &'static str)],
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_pending: 256,
            max_connections: usize::MAX,
            request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            linger: Duration::from_millis(200),
            max_head: 16 << 10,
            thread_stack: 2 << 20,
            chunked: true,
            kif_bodies: false,
            headers: &[],
        }
    }
}

/// What a server does with requests.
pub trait Service: Send + Sync + 'static {
    /// The largest body a request to `path` with `method` may have: a larger announced one
    /// is refused with 413 before any of it is read.
    fn max_body(&self, method: Method, path: &str) -> usize;

    /// The answer to a complete request.
    fn respond(&self, request: Request) -> Response;

    /// The answer to a request refused before it reached [`Service::respond`] (malformed, too
    /// large, too slow, too many connections) or whose answer panicked, with the reason.
    fn refusal(&self, status: u16, why: &str) -> Response;
}

/// The request methods the servers tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `OPTIONS`: a browser's preflight.
    Options,
    /// Anything else.
    Other,
}

impl Method {
    fn parse(name: &str) -> Method {
        match name {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "OPTIONS" => Method::Options,
            _ => Method::Other,
        }
    }
}

/// One request, read in full.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The request target as sent (path and query).
    pub target: String,
    /// `"1.0"` or `"1.1"`, as the request line said; the reply says the same.
    pub version: &'static str,
    /// The body's bytes.
    pub body: Vec<u8>,
    /// When the request head had arrived.
    pub received: Instant,
}

impl Request {
    /// The target's path, without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}
