//! The player's HTTP server (`ggp serve`): one match at a time, answered on time.
//!
//! Transport: tiny_http accepts the connections; each request is answered on its own thread,
//! so INFO, ABORT or a message for another match never waits behind a search. The message is
//! the body of a `POST` (or the URL-decoded path of a `GET`); `OPTIONS` gets an empty reply.
//! Every reply is written by hand as `Content-Type: text/acl` with `Content-Length`, the CORS
//! headers ggp-base sends, and `Connection: close`: tiny_http closes HTTP/1.0 connections
//! itself, and clients of HTTP/1.1 close on that header. Bodies over
//! [`ServerConfig::max_body`] are refused with status 413; a request that announces more
//! than 64 MiB is abandoned without a reply, because tiny_http would allocate the announced
//! size to skip it.
//!
//! Clocks: a PLAY is answered by `arrival + play clock - margin`, a START by
//! `arrival + start clock - margin`, where the margin is [`ServerConfig::margin`] (1 s by
//! default) but at most half the clock. The search is told to stop a little earlier, so that
//! its answer has time to reach us. The engine is built on a separate thread during the start
//! clock; if it is not ready when a PLAY must be answered, the reply is `nil` and the joint
//! moves are kept for when it is.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::message::{Heard, Message, parse_message};
use super::session::{Session, SessionError, SessionFactory};
use crate::gdl::{self, Description, Term};
use crate::kif::Sexp;

/// Settings of the player server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The name INFO reports.
    pub name: String,
    /// How long before the end of each clock the reply is sent (at most half the clock).
    pub margin: Duration,
    /// The largest message body accepted, in bytes.
    pub max_body: usize,
    /// How many requests may be answered at once; more get status 503.
    pub max_requests: usize,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            name: "ggp".into(),
            margin: Duration::from_secs(1),
            max_body: 4 << 20,
            max_requests: 32,
        }
    }
}

/// A bound player server, not yet answering.
pub struct Server {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
}

impl Server {
    /// Binds the server to `addr` (port 0 picks a free port).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(
        addr: impl ToSocketAddrs,
        config: ServerConfig,
        factory: Arc<dyn SessionFactory>,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Server {
            http: Arc::new(http),
            addr,
            shared: Arc::new(Shared {
                config,
                factory,
                status: Mutex::new(Status::default()),
                current: Mutex::new(None),
                in_flight: AtomicUsize::new(0),
            }),
            stopping: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers requests until the server is shut down (from a [`RunningServer`]).
    pub fn run(&self) {
        loop {
            match self.http.recv() {
                Ok(request) => self.dispatch(request),
                Err(_) if self.stopping.load(Ordering::SeqCst) => return,
                Err(e) => {
                    warn!("accepting a connection failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// Answers requests on a background thread until the returned handle is shut down or
    /// dropped.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn spawn(self) -> io::Result<RunningServer> {
        let http = Arc::clone(&self.http);
        let stopping = Arc::clone(&self.stopping);
        let addr = self.addr;
        let thread = std::thread::Builder::new()
            .name("ggp-server".into())
            .spawn(move || self.run())?;
        Ok(RunningServer {
            addr,
            http,
            stopping,
            thread: Some(thread),
        })
    }

    fn dispatch(&self, request: tiny_http::Request) {
        let received = Instant::now();
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("ggp-request".into())
            .spawn(move || handle(&shared, request, received));
        if let Err(e) = spawned {
            warn!("cannot start a request thread: {e}");
        }
    }
}

/// A server answering on a background thread; dropping it stops the server.
pub struct RunningServer {
    addr: SocketAddr,
    http: Arc<tiny_http::Server>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting requests and waits for the accept loop to end.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.http.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Bodies announced larger than this (and than the body limit) are not drained.
const MAX_DRAIN: usize = 64 << 20;

/// Reads the message of one request, answers it and writes the reply.
fn handle(shared: &Shared, mut request: tiny_http::Request, received: Instant) {
    let _span = tracing::info_span!("serve", name = %shared.config.name).entered();
    if let Some(announced) = request.body_length()
        && announced > shared.config.max_body.max(MAX_DRAIN)
    {
        // Dropping the request would make tiny_http 0.12 allocate the announced size to drain
        // the body, which aborts the process when the size is absurd. The connection is
        // abandoned instead (its file descriptors leak).
        warn!("a request announced {announced} bytes; its connection is abandoned unanswered");
        std::mem::forget(request);
        return;
    }
    let text = match request.method() {
        tiny_http::Method::Options => return respond(request, 200, ""),
        tiny_http::Method::Post => match read_body(&mut request, shared.config.max_body) {
            Ok(text) => text,
            Err((status, why)) => {
                info!(kind = "?", "refused a request: {why}");
                return respond(request, status, &format!("error: {why}"));
            }
        },
        tiny_http::Method::Get => decode_path(request.url()),
        _ => return respond(request, 200, ""),
    };
    // tiny_http keeps one of its connection threads waiting until the request is dropped;
    // keeping only the writer lets it go while the move is being chosen.
    let version = http_version(&request);
    let mut writer = request.into_writer();
    // Only messages being answered count: a client that stalls its body holds its own
    // thread, not a place here.
    if shared.in_flight.fetch_add(1, Ordering::SeqCst) >= shared.config.max_requests {
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        warn!("too many messages at once; answered busy");
        return write_reply(&mut writer, version, 503, "busy");
    }
    let answer = catch_unwind(AssertUnwindSafe(|| shared.answer(&text, received)));
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    let (status, reply) = answer.unwrap_or_else(|_| {
        warn!("answering a message panicked; the match is dropped");
        shared.drop_match();
        (500, "error: internal failure".to_string())
    });
    write_reply(&mut writer, version, status, &reply);
}

/// The body as text, or the status and reason to refuse it.
fn read_body(request: &mut tiny_http::Request, max: usize) -> Result<String, (u16, String)> {
    if request.body_length().is_some_and(|n| n > max) {
        return Err((413, format!("the message is larger than {max} bytes")));
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(max as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| (400, format!("cannot read the message: {e}")))?;
    if body.len() > max {
        return Err((413, format!("the message is larger than {max} bytes")));
    }
    String::from_utf8(body).map_err(|_| (400, "the message is not UTF-8 text".to_string()))
}

/// The message in a `GET` path: URL-decoded after the leading `/`, `+` read as a space (as
/// ggp-base's reader does).
fn decode_path(url: &str) -> String {
    let path = url.strip_prefix('/').unwrap_or(url).replace('+', " ");
    match urlencoding::decode(&path) {
        Ok(text) => text.into_owned(),
        Err(_) => path,
    }
}

/// The request's HTTP version, as the reply repeats it.
fn http_version(request: &tiny_http::Request) -> &'static str {
    match request.http_version() {
        tiny_http::HTTPVersion(1, 0) => "1.0",
        _ => "1.1",
    }
}

/// Writes a reply and lets the connection close.
fn respond(request: tiny_http::Request, status: u16, body: &str) {
    let version = http_version(&request);
    write_reply(&mut request.into_writer(), version, status, body);
}

/// Writes a reply by hand: tiny_http would not let us say `Connection: close`.
fn write_reply(writer: &mut dyn Write, version: &str, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        413 => "Payload Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/{version} {status} {reason}\r\n\
         Content-Type: text/acl\r\n\
         Content-Length: {}\r\n\
         Access-Control-Allow-Origin: *\r\n\
         Access-Control-Allow-Methods: POST, GET, OPTIONS\r\n\
         Access-Control-Allow-Headers: Content-Type\r\n\
         Access-Control-Max-Age: 86400\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    // A client that has gone away gets no reply; nothing else to do.
    let _ = writer
        .write_all(head.as_bytes())
        .and_then(|()| writer.write_all(body.as_bytes()))
        .and_then(|()| writer.flush());
}

/// Which match the server is in, readable without waiting for a move to be chosen.
#[derive(Default)]
struct Status {
    id: Option<String>,
    /// When the last message of the match arrived.
    last: Option<Instant>,
    /// How long the match may stay silent before a new START may replace it.
    stale_after: Duration,
}

/// The match being played.
struct Current {
    id: String,
    play_clock: Duration,
    /// PLAY messages received so far.
    step: usize,
    session: Option<Session>,
    /// The engine still being built.
    building: Option<Receiver<Result<Session, SessionError>>>,
    /// Joint moves received while the engine was being built.
    backlog: Vec<Heard>,
}

struct Shared {
    config: ServerConfig,
    factory: Arc<dyn SessionFactory>,
    status: Mutex<Status>,
    current: Mutex<Option<Current>>,
    in_flight: AtomicUsize,
}

/// Locks a mutex even if a panicking request poisoned it (the data is still consistent:
/// every update is a single assignment).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `received + clock - margin`, the margin being at most half the clock.
fn deadline_after(received: Instant, clock: Duration, margin: Duration) -> Instant {
    received + clock - margin.min(clock / 2)
}

/// When the search must stop so that its answer reaches the reply in time.
fn search_deadline(received: Instant, deadline: Instant) -> Instant {
    let span = deadline.saturating_duration_since(received);
    deadline - (span / 10).min(Duration::from_millis(100))
}

impl Shared {
    /// The status code and reply for one message.
    fn answer(&self, text: &str, received: Instant) -> (u16, String) {
        let message = match parse_message(text) {
            Ok(m) => m,
            Err(e) => {
                info!(kind = "?", "malformed message: {e}");
                return (400, format!("error: {e}"));
            }
        };
        if let Some(id) = message.match_id()
            && !matches!(message, Message::Start { .. })
            && !self.is_current(id)
        {
            info!(kind = message.kind(), match_id = %id, "not our match: busy");
            return (200, "busy".into());
        }
        let reply = match message {
            Message::Info => {
                let busy = lock(&self.status).id.is_some();
                let status = if busy { "busy" } else { "available" };
                info!(kind = "INFO", status);
                format!(
                    "((name {}) (status {status}))",
                    atom_text(&self.config.name)
                )
            }
            Message::Ping => {
                info!(kind = "PING");
                "ready".into()
            }
            Message::Preview { rules, .. } => {
                info!(kind = "PREVIEW", rules = rules.len());
                "ready".into()
            }
            Message::Start {
                id,
                role,
                rules,
                start_clock,
                play_clock,
            } => self.start(id, &role, &rules, start_clock, play_clock, received),
            Message::Play { id, moves } => self.play(&id, moves, received),
            Message::Stop { id, moves } => self.stop(&id, moves.as_ref(), "STOP", "done"),
            Message::Abort { id } => self.stop(&id, None, "ABORT", "aborted"),
        };
        (200, reply)
    }

    /// Whether `id` is the current match; notes that it is alive.
    fn is_current(&self, id: &str) -> bool {
        let mut status = lock(&self.status);
        if status.id.as_deref() == Some(id) {
            status.last = Some(Instant::now());
            true
        } else {
            false
        }
    }

    fn drop_match(&self) {
        *lock(&self.current) = None;
        *lock(&self.status) = Status::default();
    }

    fn start(
        &self,
        id: String,
        role: &Term,
        rules: &[Sexp],
        start_clock: Duration,
        play_clock: Duration,
        received: Instant,
    ) -> String {
        {
            let mut status = lock(&self.status);
            if let Some(current) = &status.id {
                if *current == id {
                    info!(kind = "START", match_id = %id, "repeated START");
                    return "ready".into();
                }
                let silent = status.last.map_or(Duration::ZERO, |t| t.elapsed());
                if silent <= status.stale_after {
                    info!(kind = "START", match_id = %id, playing = %current, "busy");
                    return "busy".into();
                }
                warn!(match_id = %current, "no message for {silent:?}: the match is dropped");
            }
            *status = Status {
                id: Some(id.clone()),
                last: Some(received),
                stale_after: 2 * start_clock.max(play_clock) + Duration::from_secs(10),
            };
        }
        let setup = (|| {
            let rules = rules
                .iter()
                .map(gdl::rule_from_sexp)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("the rules do not read: {e}"))?;
            let description = Description::new(rules).map_err(|diagnostics| {
                let first = diagnostics
                    .iter()
                    .find(|d| d.severity == gdl::Severity::Error)
                    .map_or(String::new(), |d| d.to_string());
                format!("the rules are not a valid game: {first}")
            })?;
            let role_index = find_role(description.roles(), role)
                .ok_or_else(|| format!("{role} is not a role of the game"))?;
            Ok::<_, String>((description, role_index))
        })();
        let (description, role_index) = match setup {
            Ok(found) => found,
            Err(why) => {
                warn!(kind = "START", match_id = %id, "refused: {why}");
                *lock(&self.status) = Status::default();
                return "busy".into();
            }
        };
        let deadline = deadline_after(received, start_clock, self.config.margin);
        let think_until = search_deadline(received, deadline);
        let (tx, building) = mpsc::channel();
        let factory = Arc::clone(&self.factory);
        let spawned = std::thread::Builder::new()
            .name("ggp-build".into())
            .spawn(move || {
                let _ = tx.send(factory.create(&description, role_index, think_until));
            });
        if let Err(e) = spawned {
            warn!(kind = "START", match_id = %id, "cannot start building: {e}");
            *lock(&self.status) = Status::default();
            return "busy".into();
        }
        let mut current = Current {
            id: id.clone(),
            play_clock,
            step: 0,
            session: None,
            building: Some(building),
            backlog: Vec::new(),
        };
        match current.await_session(deadline) {
            Ok(true) => {
                let session = current.session.as_mut().expect("the session is ready");
                let thinking = match session.wait_started(deadline) {
                    Ok(true) => "done".to_string(),
                    Ok(false) => "still thinking".to_string(),
                    Err(e) => format!("failed: {e}"),
                };
                info!(
                    kind = "START",
                    match_id = %id,
                    role = %role,
                    engine = %session.engine,
                    player = %session.player,
                    start_clock = start_clock.as_secs_f64(),
                    play_clock = play_clock.as_secs_f64(),
                    thinking,
                    ms = received.elapsed().as_millis() as u64,
                );
            }
            Ok(false) => {
                warn!(kind = "START", match_id = %id, "the engine is not ready within the start clock");
            }
            Err(e) => {
                warn!(kind = "START", match_id = %id, "refused: {e}");
                *lock(&self.status) = Status::default();
                return "busy".into();
            }
        }
        *lock(&self.current) = Some(current);
        "ready".into()
    }

    fn play(&self, id: &str, moves: Option<Heard>, received: Instant) -> String {
        let mut guard = lock(&self.current);
        let Some(current) = guard.as_mut().filter(|c| c.id == id) else {
            info!(kind = "PLAY", match_id = %id, "not our match: busy");
            return "busy".into();
        };
        current.step += 1;
        let step = current.step;
        let deadline = deadline_after(received, current.play_clock, self.config.margin);
        let until = search_deadline(received, deadline);
        let ready = match current.await_session(deadline) {
            Ok(ready) => ready,
            Err(e) => {
                warn!(kind = "PLAY", match_id = %id, step, "no engine: {e}");
                false
            }
        };
        let ms = || received.elapsed().as_millis() as u64;
        if !ready {
            current.backlog.extend(moves);
            warn!(kind = "PLAY", match_id = %id, step, mv = "nil", ms = ms(), "no engine yet");
            return "nil".into();
        }
        let session = current.session.as_mut().expect("the session is ready");
        match session.play(moves.as_ref(), until, deadline) {
            Ok(played) => {
                info!(
                    kind = "PLAY",
                    match_id = %id,
                    step,
                    mv = %played.mv,
                    playouts = played.iterations,
                    value = played.value,
                    searched = played.searched,
                    ms = ms(),
                    note = played.note,
                );
                played.mv.to_string()
            }
            Err(e) => {
                warn!(kind = "PLAY", match_id = %id, step, mv = "nil", ms = ms(), "{e}");
                "nil".into()
            }
        }
    }

    fn stop(&self, id: &str, moves: Option<&Heard>, kind: &str, reply: &str) -> String {
        let taken = {
            let mut guard = lock(&self.current);
            if guard.as_ref().is_some_and(|c| c.id == id) {
                guard.take()
            } else {
                None
            }
        };
        let Some(current) = taken else {
            info!(kind, match_id = %id, "not our match: busy");
            return "busy".into();
        };
        {
            let mut status = lock(&self.status);
            if status.id.as_deref() == Some(id) {
                *status = Status::default();
            }
        }
        let goals = match (current.session, kind) {
            (Some(session), "STOP") => match session.stop(moves) {
                Ok(Some(goals)) => format!("{goals:?}"),
                Ok(None) => "not terminal".into(),
                Err(e) => format!("unknown ({e})"),
            },
            _ => "none".into(),
        };
        info!(kind, match_id = %id, steps = current.step, goals);
        reply.into()
    }
}

impl Current {
    /// Waits until `deadline` for the engine if it is still being built; whether the
    /// session is ready. A session that arrives late first follows the backlog.
    fn await_session(&mut self, deadline: Instant) -> Result<bool, SessionError> {
        if self.session.is_some() {
            return Ok(true);
        }
        let Some(building) = &self.building else {
            return Ok(false);
        };
        let wait = deadline.saturating_duration_since(Instant::now());
        let built = match building.recv_timeout(wait) {
            Ok(built) => built,
            Err(RecvTimeoutError::Timeout) => return Ok(false),
            Err(RecvTimeoutError::Disconnected) => {
                Err(SessionError::Build("the engine builder stopped".into()))
            }
        };
        self.building = None;
        let mut session = built?;
        for joint in self.backlog.drain(..) {
            session.apply(&joint)?;
        }
        self.session = Some(session);
        Ok(true)
    }
}

/// The role of the game that `role` names: the same term, or failing that the same spelling
/// ignoring case.
fn find_role(roles: &[Term], role: &Term) -> Option<usize> {
    roles.iter().position(|r| r == role).or_else(|| {
        let wanted = role.to_string();
        roles
            .iter()
            .position(|r| r.to_string().eq_ignore_ascii_case(&wanted))
    })
}

/// A name usable as one atom in a reply.
fn atom_text(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_whitespace() || c == '(' || c == ')' || c == ';' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if cleaned.is_empty() {
        "ggp".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_decode_as_ggp_base_reads_them() {
        assert_eq!(decode_path("/%28INFO%29"), "(INFO)");
        assert_eq!(decode_path("/(PLAY+m+NIL)"), "(PLAY m NIL)");
        assert_eq!(decode_path("/%zz"), "%zz");
        assert_eq!(decode_path(""), "");
    }

    #[test]
    fn the_margin_is_at_most_half_the_clock() {
        let t = Instant::now();
        let d = deadline_after(t, Duration::from_secs(10), Duration::from_secs(1));
        assert_eq!(d - t, Duration::from_secs(9));
        let d = deadline_after(t, Duration::from_secs(1), Duration::from_secs(1));
        assert_eq!(d - t, Duration::from_millis(500));
        let s = search_deadline(t, t + Duration::from_secs(9));
        assert_eq!(t + Duration::from_secs(9) - s, Duration::from_millis(100));
    }

    #[test]
    fn names_become_one_atom() {
        assert_eq!(atom_text("my player (v2)"), "my_player__v2_");
        assert_eq!(atom_text(""), "ggp");
    }

    #[test]
    fn roles_are_found_by_term_then_by_spelling() {
        let roles = vec![
            gdl::parse_term("white").unwrap(),
            gdl::parse_term("black").unwrap(),
        ];
        assert_eq!(
            find_role(&roles, &gdl::parse_term("black").unwrap()),
            Some(1)
        );
        assert_eq!(
            find_role(&roles, &gdl::parse_term("WHITE").unwrap()),
            Some(0)
        );
        assert_eq!(find_role(&roles, &gdl::parse_term("red").unwrap()), None);
    }
}
