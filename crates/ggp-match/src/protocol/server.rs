//! The player's HTTP server (`ggp serve`): one match at a time, answered on time.
//!
//! Transport: [`crate::http`] accepts the connections and reads each request within the
//! limits [`ServerConfig`] sets (time, size, number of waiting connections), reading a body on
//! past a short `Content-Length` while its parentheses are open (ggp-base counts chars, not
//! bytes); each request is answered on its own thread, so INFO, ABORT or a message for
//! another match never waits behind a search. The message is the body of a `POST` (or the
//! URL-decoded path of a `GET`); `OPTIONS` gets an empty reply. Replies are `text/acl` with
//! the CORS headers ggp-base sends, in the request's HTTP version, and close the connection. A message that does not parse gets status 400 with the reason; a START whose
//! rules are not a game, or whose role is not in it, gets 400 with the reason too. Nothing a
//! message says about another match (or no match) touches the match in progress.
//!
//! Clocks: a PLAY is answered by `arrival + play clock - margin`, a START by
//! `arrival + start clock - margin`, where the margin is [`ServerConfig::margin`] (1 s by
//! default) but at most half the clock. The search is told to stop a little earlier, so that
//! its answer has time to reach us. The engine is built on a separate thread during the start
//! clock; if it is not ready by the end of the start clock, a stand-in session (the engine
//! quickest to build, the random player) is built beside it and answers the PLAYs until it
//! is, and the joint moves are kept for when it is. A PLAY that neither can answer gets `nil`.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::match_session::{MatchSession, Played, SessionError, SessionFactory};
use super::message::{Heard, Message, parse_message};
use crate::http::{self, Listener, Method, Request, Response, Service, Stopper};
use ggp_gdl::gdl::{self, Description, Term};
use ggp_gdl::kif::Sexp;

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
    /// How many connections may be sending their request at once (the oldest is closed to
    /// make room), and how long each may take.
    pub max_pending: usize,
    /// How long a connection may take to send its whole request.
    pub request_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            name: "ggp".into(),
            margin: Duration::from_secs(1),
            max_body: 4 << 20,
            max_requests: 32,
            max_pending: http::Config::default().max_pending,
            request_timeout: http::Config::default().request_timeout,
        }
    }
}

/// A bound player server, not yet answering.
pub struct Server {
    listener: Listener,
    shared: Arc<Shared>,
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
        let http_config = http::Config {
            max_pending: config.max_pending,
            request_timeout: config.request_timeout,
            thread_stack: 256 << 10,
            kif_bodies: true,
            headers: CORS,
            ..http::Config::default()
        };
        Ok(Server {
            listener: Listener::bind(addr, http_config)?,
            shared: Arc::new(Shared {
                config,
                factory,
                status: Mutex::new(Status::default()),
                current: Mutex::new(None),
                in_flight: AtomicUsize::new(0),
            }),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// Answers requests until the server is shut down (from a [`RunningServer`]).
    ///
    /// # Errors
    /// The listening socket failed for good: the player can no longer be reached.
    pub fn run(&self) -> io::Result<()> {
        self.listener.run(Arc::clone(&self.shared))
    }

    /// Answers requests on a background thread until the returned handle is shut down or
    /// dropped.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn spawn(self) -> io::Result<RunningServer> {
        let stopper = self.listener.stopper();
        let addr = self.local_addr();
        let thread = std::thread::Builder::new()
            .name("ggp-server".into())
            .spawn(move || {
                if let Err(e) = self.run() {
                    warn!("the server stopped: {e}");
                }
            })?;
        Ok(RunningServer {
            addr,
            stopper,
            thread: Some(thread),
        })
    }
}

/// A server answering on a background thread; dropping it stops the server.
pub struct RunningServer {
    addr: SocketAddr,
    stopper: Stopper,
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
        self.stopper.stop();
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

/// The headers ggp-base's player sends with every reply, so that a browser page may talk to
/// the player.
const CORS: &[(&str, &str)] = &[
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Methods", "POST, GET, OPTIONS"),
    ("Access-Control-Allow-Headers", "Content-Type"),
    ("Access-Control-Max-Age", "86400"),
];

/// A `text/acl` reply.
fn acl(status: u16, text: &str) -> Response {
    Response::new(status, "text/acl", text)
}

impl Service for Shared {
    fn max_body(&self, _: Method, _: &str) -> usize {
        self.config.max_body
    }

    fn respond(&self, request: Request) -> Response {
        handle(self, request)
    }

    fn refusal(&self, status: u16, why: &str) -> Response {
        acl(status, &format!("error: {why}"))
    }
}

/// Answers one complete request.
fn handle(shared: &Shared, request: Request) -> Response {
    let _span = tracing::info_span!("serve", name = %shared.config.name).entered();
    let text = match request.method {
        Method::Post => match String::from_utf8(request.body) {
            Ok(text) => text,
            Err(e) => {
                let why = format!(
                    "the message is not UTF-8 text (byte {} is 0x{:02x})",
                    e.utf8_error().valid_up_to(),
                    e.as_bytes()[e.utf8_error().valid_up_to()]
                );
                info!(kind = "?", "refused a request: {why}");
                return acl(400, &format!("error: {why}"));
            }
        },
        Method::Get => decode_path(&request.target),
        Method::Options | Method::Other => return acl(200, ""),
    };
    let message = match catch_unwind(|| parse_message(&text)) {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            info!(kind = "?", "malformed message: {e}");
            return acl(400, &format!("error: {e}"));
        }
        Err(_) => {
            warn!("reading a message panicked");
            return acl(400, "error: the message cannot be read");
        }
    };
    // Only messages being answered count: a client that stalls its body holds its own
    // connection, not a place here.
    if shared.in_flight.fetch_add(1, Ordering::SeqCst) >= shared.config.max_requests {
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        warn!("too many messages at once; answered busy");
        return acl(503, "busy");
    }
    let ours = message
        .match_id()
        .is_some_and(|id| shared.is_current_id(id));
    let answer = catch_unwind(AssertUnwindSafe(|| {
        shared.answer(message, request.received)
    }));
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    let (status, text) = answer.unwrap_or_else(|_| {
        // Only a message about the match in progress may end it.
        if ours {
            warn!("answering a message of the match panicked; the match is dropped");
            shared.drop_match();
        } else {
            warn!("answering a message panicked");
        }
        (500, "error: internal failure".to_string())
    });
    acl(status, &text)
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

/// Why a START is refused (the reply names it, with status 400). Each message names its
/// cause, which is therefore no source: a chain prints it once.
#[derive(Debug, thiserror::Error)]
enum StartRefused {
    /// A rule is not a GDL rule.
    #[error("the rules do not read: {0}")]
    Rules(gdl::ReadError),
    /// The rules read but are not a valid game (the first error).
    #[error("the rules are not a valid game: {0}")]
    Invalid(String),
    /// The role is not one of the game's.
    #[error("{0} is not a role of the game")]
    Role(Term),
    /// No engine can run the game.
    #[error("{0}")]
    Engine(SessionError),
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
    /// The match's session.
    engine: Building,
    /// Joint moves received while the engine was being built.
    backlog: Vec<Heard>,
    /// While the engine is still being built past the start clock: a session on the engine
    /// quickest to build, with the random player, that answers the PLAYs meanwhile.
    stand_in: Option<StandIn>,
}

/// A stand-in session (see [`SessionFactory::stand_in`]) and how many of the backlog's joint
/// moves it has followed.
struct StandIn {
    session: Building,
    followed: usize,
}

/// A session built on a thread of its own: waited for until a deadline, then kept.
struct Building {
    /// The build still going on.
    receiver: Option<Receiver<Result<MatchSession, SessionError>>>,
    session: Option<MatchSession>,
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
    fn answer(&self, message: Message, received: Instant) -> (u16, String) {
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
            } => match self.start(id, &role, &rules, start_clock, play_clock, received) {
                Ok(reply) => reply,
                Err(refused) => return (400, format!("error: {refused}")),
            },
            Message::Play { id, moves } => self.play(&id, moves, received),
            Message::Stop { id, moves } => self.stop(&id, moves.as_ref(), "STOP", "done"),
            Message::Abort { id } => self.stop(&id, None, "ABORT", "aborted"),
        };
        (200, reply)
    }

    /// Whether `id` is the current match (without noting that it is alive).
    fn is_current_id(&self, id: &str) -> bool {
        lock(&self.status).id.as_deref() == Some(id)
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
    ) -> Result<String, StartRefused> {
        {
            let mut status = lock(&self.status);
            if let Some(current) = &status.id {
                if *current == id {
                    info!(kind = "START", match_id = %id, "repeated START");
                    return Ok("ready".into());
                }
                let silent = status.last.map_or(Duration::ZERO, |t| t.elapsed());
                if silent <= status.stale_after {
                    info!(kind = "START", match_id = %id, playing = %current, "busy");
                    return Ok("busy".into());
                }
                warn!(match_id = %current, "no message for {silent:?}: the match is dropped");
            }
            *status = Status {
                id: Some(id.clone()),
                last: Some(received),
                stale_after: 2 * start_clock.max(play_clock) + Duration::from_secs(10),
            };
        }
        let setup = read_game(&id, role, rules);
        let (description, role_index, invalid) = match setup {
            Ok(found) => found,
            Err(why) => {
                warn!(kind = "START", match_id = %id, "refused: {why}");
                *lock(&self.status) = Status::default();
                return Err(why);
            }
        };
        let deadline = deadline_after(received, start_clock, self.config.margin);
        let think_until = search_deadline(received, deadline);
        let factory = Arc::clone(&self.factory);
        let for_stand_in = (description.clone(), role_index);
        // The build and search threads log under the match, so that the lines of matches
        // played side by side can be told apart.
        let span = tracing::info_span!("match", id = %id);
        let engine = match Building::spawn("ggp-build", span, move || {
            factory.create(&description, role_index, think_until)
        }) {
            Ok(engine) => engine,
            Err(e) => {
                warn!(kind = "START", match_id = %id, "cannot start building: {e}");
                *lock(&self.status) = Status::default();
                return Ok("busy".into());
            }
        };
        let mut current = Current {
            id: id.clone(),
            play_clock,
            step: 0,
            engine,
            backlog: Vec::new(),
            stand_in: None,
        };
        match current.await_session(deadline) {
            Ok(Some(session)) => {
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
            Ok(None) => {
                warn!(
                    kind = "START",
                    match_id = %id,
                    "the engine is not ready within the start clock: a stand-in answers meanwhile"
                );
                current.stand_in = self.build_stand_in(for_stand_in);
            }
            Err(e) => {
                warn!(kind = "START", match_id = %id, "refused: {e}");
                *lock(&self.status) = Status::default();
                return Err(match invalid {
                    Some(why) => StartRefused::Invalid(format!("{why}; as it stands: {e}")),
                    None => StartRefused::Engine(e),
                });
            }
        }
        *lock(&self.current) = Some(current);
        Ok("ready".into())
    }

    /// Starts building a stand-in session (see [`SessionFactory::stand_in`]) on its own thread.
    fn build_stand_in(&self, (description, role): (Description, usize)) -> Option<StandIn> {
        let factory = Arc::clone(&self.factory);
        let session = Building::spawn("ggp-stand-in", tracing::Span::current(), move || {
            factory.stand_in(&description, role)
        })
        .map_err(|e| warn!("cannot start building a stand-in: {e}"))
        .ok()?;
        Some(StandIn {
            session,
            followed: 0,
        })
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
                None
            }
        };
        let ms = || received.elapsed().as_millis() as u64;
        let Some(session) = ready else {
            current.backlog.extend(moves);
            return match current.play_stand_in(until, deadline) {
                Ok(played) => {
                    warn!(kind = "PLAY", match_id = %id, step, mv = %played.mv, ms = ms(), "no engine yet: the stand-in's random move");
                    played.mv.to_string()
                }
                Err(e) => {
                    warn!(kind = "PLAY", match_id = %id, step, mv = "nil", ms = ms(), "no engine yet, and no stand-in: {e}");
                    "nil".into()
                }
            };
        };
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
        // The last step is followed within half a play clock, so that the reply is not late
        // (a GDL-II belief update without a deadline can take minutes on a slow engine).
        let follow_by = Instant::now() + current.play_clock / 2;
        let goals = match (current.engine.session, kind) {
            (Some(session), "STOP") => match session.stop(moves, follow_by) {
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
    /// The stand-in's move, after it has followed the joint moves it has not yet seen; a
    /// stand-in that fails is dropped.
    fn play_stand_in(&mut self, until: Instant, deadline: Instant) -> Result<Played, SessionError> {
        let Some(stand_in) = self.stand_in.as_mut() else {
            return Err(SessionError::NoStandIn);
        };
        let played = stand_in.play(&self.backlog, until, deadline);
        if played.is_err() {
            self.stand_in = None;
        }
        played
    }

    /// Waits until `deadline` for the engine if it is still being built; the session once it
    /// is ready. A session that arrives late first follows the backlog (and the stand-in is
    /// dropped); one that cannot follow it is dropped.
    fn await_session(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<&mut MatchSession>, SessionError> {
        let Current {
            engine,
            backlog,
            stand_in,
            ..
        } = self;
        engine.ready(deadline, |session| {
            for joint in backlog.drain(..) {
                session.apply(&joint)?;
            }
            *stand_in = None;
            Ok(())
        })
    }
}

impl Building {
    /// Starts `build` on a thread named `name`, logging under `span`.
    fn spawn(
        name: &str,
        span: tracing::Span,
        build: impl FnOnce() -> Result<MatchSession, SessionError> + Send + 'static,
    ) -> std::io::Result<Building> {
        let (tx, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _in_match = span.entered();
                let _ = tx.send(build());
            })?;
        Ok(Building {
            receiver: Some(receiver),
            session: None,
        })
    }

    /// The session once it is built, after waiting for the build until `deadline` if it is
    /// still going on; `None` while it is not. A session that has just arrived is kept only
    /// if `arrive` accepts it. A build that failed, or a session `arrive` refused, gives its
    /// error once, and then `None`.
    fn ready(
        &mut self,
        deadline: Instant,
        arrive: impl FnOnce(&mut MatchSession) -> Result<(), SessionError>,
    ) -> Result<Option<&mut MatchSession>, SessionError> {
        if self.session.is_none() {
            let Some(receiver) = &self.receiver else {
                return Ok(None);
            };
            let wait = deadline.saturating_duration_since(Instant::now());
            let built = match receiver.recv_timeout(wait) {
                Ok(built) => built,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => Err(SessionError::BuilderGone),
            };
            self.receiver = None;
            let mut session = built?;
            arrive(&mut session)?;
            self.session = Some(session);
        }
        Ok(self.session.as_mut())
    }
}

impl StandIn {
    /// Follows `backlog` past what was followed, then chooses by `until`, answering by
    /// `deadline`; waits for the build until then if needed.
    fn play(
        &mut self,
        backlog: &[Heard],
        until: Instant,
        deadline: Instant,
    ) -> Result<Played, SessionError> {
        let Some(session) = self.session.ready(until, |_| Ok(()))? else {
            return Err(SessionError::NoStandIn);
        };
        let pending = &backlog[self.followed.min(backlog.len())..];
        let (last, earlier) = match pending.split_last() {
            Some((last, earlier)) => (Some(last), earlier),
            None => (None, pending),
        };
        for joint in earlier {
            session.apply(joint)?;
        }
        let played = session.play(last, until, deadline)?;
        self.followed = backlog.len();
        Ok(played)
    }
}

/// The game of a START and the index of our role in it, with the reason the rules are not a
/// valid game if they are not. A game that does not validate is still played as it stands
/// when an engine takes it: a refusal would lose the match by forfeit, every move the
/// referee's. One without roles, moves, goals or an end means nothing: refused.
fn read_game(
    id: &str,
    role: &Term,
    rules: &[Sexp],
) -> Result<(Description, usize, Option<String>), StartRefused> {
    let rules = rules
        .iter()
        .map(gdl::rule_from_sexp)
        .collect::<Result<Vec<_>, _>>()
        .map_err(StartRefused::Rules)?;
    let (description, invalid) = match Description::new(rules.clone()) {
        Ok(description) => (description, None),
        Err(diagnostics) => {
            let errors = || {
                diagnostics
                    .iter()
                    .filter(|d| d.severity == gdl::Severity::Error)
            };
            let first = errors().next().map_or(String::new(), |d| d.to_string());
            if errors().any(|d| d.check == gdl::validate::Check::Incomplete) {
                return Err(StartRefused::Invalid(first));
            }
            warn!(
                kind = "START",
                match_id = %id,
                "the rules are not a valid game ({first}): playing them as they stand, \
                 so moves and values may be wrong"
            );
            (Description::unvalidated(rules), Some(first))
        }
    };
    let role_index = find_role(description.roles(), role).ok_or_else(|| match &invalid {
        Some(why) => StartRefused::Invalid(why.clone()),
        None => StartRefused::Role(role.clone()),
    })?;
    Ok((description, role_index, invalid))
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
