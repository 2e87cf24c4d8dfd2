//! The accept loop that never stops, and one thread per connection.
//!
//! A tournament player sits for days on an open port, so anyone may connect; a page server
//! may be opened to a network. This module owns every socket a server holds and bounds what
//! each may cost:
//! - **Connections waiting for their request are limited** ([`Config::max_pending`], further
//!   cut to fit the process's descriptor limit). When a new connection would pass the limit,
//!   the *oldest* waiting one with nothing unread is closed: a flood of idle or dribbling
//!   clients costs each of them their connection, never the referee, whose request arrives
//!   right after it connects.
//! - **Connections open at once may be limited** ([`Config::max_connections`]): past it a
//!   new one is answered 503 from the accept loop, which then waits for that reply.
//! - **Each request is read within the limits** (`read.rs`), and handed to the
//!   [`Service`] on its connection's thread; a refusal or a panic is answered here.
//! - **The accept loop survives**: when the process runs out of descriptors (EMFILE) or the
//!   kernel of buffers, it backs off (1 ms doubling to 100 ms) and keeps accepting; a panic
//!   inside it restarts it. Only an error that means the listening socket itself is gone
//!   ends it, and then [`Listener::run`] returns the error so that the process exits non-zero
//!   rather than lingering deaf.

use std::collections::VecDeque;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use super::read::{Refusal, read_request};
use super::{Config, Service};

/// A bound listening socket with its configuration, not yet accepting.
pub struct Listener {
    listener: TcpListener,
    addr: SocketAddr,
    config: Config,
    stopping: Arc<AtomicBool>,
    pending: Arc<Pending>,
    /// Connections open, from accept to the end of their reply.
    open: Arc<AtomicUsize>,
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
    pub fn bind(addr: impl std::net::ToSocketAddrs, mut config: Config) -> io::Result<Listener> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        config.max_pending = config.max_pending.min(fd_room());
        Ok(Listener {
            listener,
            addr,
            config,
            stopping: Arc::new(AtomicBool::new(false)),
            pending: Arc::new(Pending::default()),
            open: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The configuration in force (the waiting connections cut to the descriptor limit).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A handle that stops [`Listener::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper {
            addr: self.addr,
            stopping: Arc::clone(&self.stopping),
        }
    }

    /// Accepts connections until stopped, giving `service` each complete request on its
    /// connection's thread; malformed, oversized and timed-out requests are answered (or
    /// closed) here.
    ///
    /// # Errors
    /// The listening socket is unusable (closed, not a socket): the server can no longer
    /// listen.
    pub fn run<S: Service>(&self, service: Arc<S>) -> io::Result<()> {
        loop {
            let ran = catch_unwind(AssertUnwindSafe(|| self.accept_loop(&service)));
            match ran {
                Ok(result) => return result,
                Err(_) if self.stopping.load(Ordering::SeqCst) => return Ok(()),
                Err(_) => warn!("the accept loop panicked; it is restarted"),
            }
        }
    }

    fn accept_loop<S: Service>(&self, service: &Arc<S>) -> io::Result<()> {
        let mut backoff = Duration::ZERO;
        loop {
            let accepted = self.listener.accept();
            if self.stopping.load(Ordering::SeqCst) {
                return Ok(());
            }
            match accepted {
                Ok((stream, peer)) => {
                    backoff = Duration::ZERO;
                    self.serve(stream, peer, service);
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

    /// Starts the thread that reads one connection's request, answers it and closes it (or
    /// answers 503 here when too many are open).
    fn serve<S: Service>(&self, stream: TcpStream, peer: SocketAddr, service: &Arc<S>) {
        let accepted = Instant::now();
        let open = Open::count(&self.open);
        if open.now > self.config.max_connections {
            debug!("too many connections: {peer} is answered busy");
            let config = Config {
                write_timeout: Duration::from_secs(1),
                ..self.config.clone()
            };
            service
                .refusal(503, "too many connections")
                .send(&stream, "1.1", &config);
            return;
        }
        let stream = Arc::new(stream);
        let id = self.pending.admit(&stream, self.config.max_pending);
        let pending = Arc::clone(&self.pending);
        let config = self.config.clone();
        let service = Arc::clone(service);
        let spawned = std::thread::Builder::new()
            .name("http-connection".into())
            .stack_size(config.thread_stack)
            .spawn(move || {
                let read = read_request(&stream, &config, |m, p| service.max_body(m, p), accepted);
                pending.release(id);
                let (response, version) = match read {
                    Ok(request) => {
                        let version = request.version;
                        let answer = catch_unwind(AssertUnwindSafe(|| service.respond(request)));
                        let response = answer.unwrap_or_else(|_| {
                            warn!("answering a request panicked");
                            service.refusal(500, "internal failure (the server is still up)")
                        });
                        (response, version)
                    }
                    Err(Refusal::Close(why)) => {
                        debug!("connection from {peer} closed: {why}");
                        drop(open);
                        return;
                    }
                    Err(Refusal::Answer(status, why, version)) => {
                        debug!("request from {peer} refused: {why}");
                        (service.refusal(status, &why), version)
                    }
                };
                response.send(&stream, version, &config);
                drop(open);
            });
        if let Err(e) = spawned {
            warn!("cannot start a connection thread: {e}");
            self.pending.release(id);
        }
    }
}

/// One open connection counted while it lives.
struct Open {
    count: Arc<AtomicUsize>,
    /// The connections open with this one.
    now: usize,
}

impl Open {
    fn count(count: &Arc<AtomicUsize>) -> Open {
        let now = count.fetch_add(1, Ordering::SeqCst) + 1;
        Open {
            count: Arc::clone(count),
            now,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::http::{Method, Request, Response};

    /// Answers a request with its body, a refusal with its reason.
    struct Echo;

    impl Service for Echo {
        fn max_body(&self, _: Method, _: &str) -> usize {
            100
        }

        fn respond(&self, request: Request) -> Response {
            Response::new(200, "text/plain", request.body)
        }

        fn refusal(&self, status: u16, why: &str) -> Response {
            Response::new(status, "text/plain", why)
        }
    }

    /// What the server answers to `request` on a new connection.
    fn answer_to(addr: SocketAddr, request: &[u8]) -> String {
        let mut client = TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let _ = client.write_all(request);
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn past_max_connections_a_new_one_is_answered_busy_and_the_next_served() {
        let config = Config {
            max_connections: 1,
            headers: &[("X-Test", "yes")],
            ..Config::default()
        };
        let listener = Listener::bind("127.0.0.1:0", config).unwrap();
        let addr = listener.local_addr();
        let stopper = listener.stopper();
        let running = std::thread::spawn(move || listener.run(Arc::new(Echo)));
        // An idle connection holds the one place.
        let idle = TcpStream::connect(addr).unwrap();
        let busy = answer_to(addr, b"");
        assert!(
            busy.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{busy}"
        );
        assert!(busy.contains("\r\nX-Test: yes\r\nConnection: close\r\n\r\n"));
        assert!(busy.ends_with("too many connections"), "{busy}");
        drop(idle);
        // Its place is free once its thread has seen it close.
        let request = b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi";
        let mut answer = answer_to(addr, request);
        for _ in 0..100 {
            if !answer.contains(" 503 ") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            answer = answer_to(addr, request);
        }
        assert!(answer.starts_with("HTTP/1.0 200 OK\r\n"), "{answer}");
        assert!(answer.contains("Content-Length: 2\r\n"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nhi"), "{answer}");
        stopper.stop();
        running.join().unwrap().unwrap();
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
