//! `ggp web`: a small HTTP server with one embedded page for playing games in the browser.
//!
//! The page (`page.html`, compiled in with `include_str!`) talks JSON to a handful of
//! endpoints:
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /api/games` | the sheets in the rules folder and those uploaded |
//! | `POST /api/upload {name, text}` | validates a sheet and adds it, or its diagnostics |
//! | `POST /api/roles {game}` | the game's roles |
//! | `POST /api/new {game, seats}` | a new session (`seats`: `"human"` or a level per role) |
//! | `POST /api/view {id, wait}` | the position (while the computer thinks: the last one, `thinking` and its work so far, `searched` `work`s (`playouts` or `positions`), after waiting up to `wait` ms, at most 1 s, for its move; with the computer's reply, the work it took) |
//! | `POST /api/move {id, role, index, step, wait}` | a person's move, then the position (the computer starts thinking when its turn comes; the answer waits up to `wait` ms, at most 1 s, for its reply) |
//! | `POST /api/step {id}` | the computers start thinking when no person has a choice |
//! | `POST /api/hint {id, role}` | the move the computer would suggest (index in the legal list) |
//! | `POST /api/undo {id}` | take back to the last human choice |
//! | `POST /api/record {id}` | the match record (ggp.org JSON) |
//! | `POST /api/replay {record}` | every position of a record, checked against its rules |
//!
//! Each connection is served on its own thread by the crate's HTTP layer ([`ggp_match::http`]:
//! the request read within limits, the body's announced size checked against the endpoint's
//! before anything is allocated, chunked bodies refused), so one game's search never
//! delays another tab. A session is behind its own lock; the computer thinks on a thread of
//! its own, starting the moment the person's move arrives. The answer to that move, and
//! each `view` the page sends meanwhile, is held until the computer moves (woken at that
//! moment) or `wait` ms pass, whichever is first, then answers with the position (the last
//! one and the work so far while it still thinks): a long poll, so the reply reaches the
//! page on a request already open. Limits: [`MAX_CONNECTIONS`] at once, [`MAX_SESSIONS`] sessions (idle
//! ones dropped after [`SESSION_IDLE`]), [`MAX_SEARCHES`] computers thinking at once, at most
//! [`MAX_THINK_SECONDS`] per computer move and [`MAX_STEPS`] moves per session, and
//! [`MAX_UPLOADS`] uploaded sheets of at most [`MAX_UPLOAD`] bytes each and
//! [`MAX_UPLOAD_TOTAL`] in all. Game names are looked up, never used as paths, and the server
//! binds to 127.0.0.1 unless told otherwise.

pub mod game_session;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::play::progress::Progress;
use crate::play::{Level, Seat};
use game_session::{GameSession, SessionError, View};
use ggp_gdl::gdl::Description;
use ggp_match::http::{self, Listener, Method, Request, Response, Service};
use ggp_match::record::MatchRecord;
use ggp_search::search::Work;

/// The page, compiled into the binary.
pub const PAGE: &str = include_str!("page.html");
/// Largest rule sheet accepted by upload.
pub const MAX_UPLOAD: usize = 256 * 1024;
/// Uploaded sheets kept.
pub const MAX_UPLOADS: usize = 32;
/// Bytes of uploaded sheets kept in all.
pub const MAX_UPLOAD_TOTAL: usize = 4 * 1024 * 1024;
/// Largest request body (a match record with its sheet).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Largest body of the requests that name a session or a game.
const MAX_SMALL_BODY: usize = 64 * 1024;
/// Sessions kept; the least recently used is dropped past this.
pub const MAX_SESSIONS: usize = 64;
/// A session unused for this long is dropped.
pub const SESSION_IDLE: Duration = Duration::from_secs(2 * 3600);
/// Connections served at once; more are answered 503 at once.
pub const MAX_CONNECTIONS: usize = 128;
/// Longest a `view` or `move` request waits for the computer's move.
const MAX_VIEW_WAIT: Duration = Duration::from_secs(1);
/// Computers thinking at once, over all sessions.
pub const MAX_SEARCHES: usize = 8;
/// Longest think time a web seat may ask for, in seconds.
pub const MAX_THINK_SECONDS: f64 = 60.0;
/// Moves in one session.
pub const MAX_STEPS: usize = 10_000;

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The address could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(String, String),
    /// Accepting a request failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Where the server listens and what it serves.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to bind.
    pub bind: String,
    /// Port (0 for any free one).
    pub port: u16,
    /// The folder of rule sheets listed on the page.
    pub rules: PathBuf,
    /// Seed for computer players.
    pub seed: u64,
}

/// A bound server, before it serves.
pub struct WebServer {
    listener: Listener,
    app: Arc<App>,
}

/// Everything the endpoints share; [`App::answer`] answers one request.
pub struct App {
    config: Config,
    uploads: Mutex<Uploads>,
    sessions: Mutex<Sessions>,
    searches: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Uploads {
    sheets: BTreeMap<String, String>,
    bytes: usize,
}

struct Sessions {
    slots: BTreeMap<u64, Arc<Slot>>,
    next_id: u64,
}

/// One session: its game behind a lock, and what the page may read while the computer
/// thinks.
struct Slot {
    id: u64,
    game: Mutex<Box<dyn GameSession>>,
    /// The computer is thinking (the search thread holds `game`).
    thinking: AtomicBool,
    /// Notified when the computer has moved, for the requests waiting for its move.
    moved: (Mutex<()>, Condvar),
    /// The computers' work counted as they search (see [`Progress`]) and its count when
    /// the current search started.
    progress: Progress,
    progress_start: AtomicU64,
    /// The step the computers' last reply led to, with the work it took.
    searched: Mutex<Option<(usize, u64, Work)>>,
    /// The view of the position now (before the computer's move while it thinks), stored by
    /// each change of the game; `None` after an undo, until computed afresh.
    shown: Mutex<Option<View>>,
    /// What went wrong in the last search, told once.
    failure: Mutex<Option<String>>,
    used: Mutex<Instant>,
    /// The sheet's display description (`rules/NAME.display.json`), if it has one.
    display: Option<Value>,
}

/// A failed request: HTTP status and message.
struct Failure(u16, String);

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        match e {
            SessionError::Request(m) => Failure(400, m),
            SessionError::Stale(m) => Failure(409, m),
            // A record that does not fit the game, or rules that fail (a budget outgrown, a
            // role without moves): the request cannot be processed, the server is fine.
            SessionError::Play(e @ crate::play::PlayError::Record(_)) => {
                Failure(422, e.to_string())
            }
            SessionError::Play(e) if e.is_the_rules_fault() => Failure(422, e.to_string()),
            SessionError::Play(e) => Failure(500, e.to_string()),
        }
    }
}

/// Locks a mutex whose holder may have panicked (the data is still consistent: every
/// change under these locks is a single assignment or insertion).
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl WebServer {
    /// Binds the address.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(config: Config) -> Result<WebServer, WebError> {
        let addr = format!("{}:{}", config.bind, config.port);
        let http_config = http::Config {
            max_connections: MAX_CONNECTIONS,
            linger: Duration::from_secs(1),
            chunked: false,
            headers: &[("Cache-Control", "no-store")],
            ..http::Config::default()
        };
        let listener =
            Listener::bind(&addr, http_config).map_err(|e| WebError::Bind(addr, e.to_string()))?;
        Ok(WebServer {
            listener,
            app: Arc::new(App::new(config)),
        })
    }

    /// The address bound.
    pub fn addr(&self) -> Option<SocketAddr> {
        Some(self.listener.local_addr())
    }

    /// Serves requests until the process ends, each connection on its own thread.
    ///
    /// # Errors
    /// The listening socket failed for good (a failed accept, out of file descriptors..., is
    /// waited out).
    pub fn serve(self) -> Result<(), WebError> {
        Ok(self.listener.run(self.app)?)
    }
}

impl Service for App {
    fn max_body(&self, method: Method, path: &str) -> usize {
        max_body(method, path)
    }

    fn respond(&self, request: Request) -> Response {
        self.answer(&request)
    }

    fn refusal(&self, status: u16, why: &str) -> Response {
        error(status, why)
    }
}

/// The largest body a request may announce.
fn max_body(method: Method, path: &str) -> usize {
    match (method, path) {
        (Method::Post, "/api/upload" | "/api/replay") => MAX_BODY,
        (Method::Post, _) => MAX_SMALL_BODY,
        _ => 0,
    }
}

/// A JSON answer.
fn json_response(status: u16, value: &Value) -> Response {
    Response::new(status, "application/json", value.to_string())
}

/// A JSON error `{"error": message}`.
fn error(status: u16, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

impl App {
    /// A server's shared state, with no sessions.
    pub fn new(config: Config) -> App {
        App {
            config,
            uploads: Mutex::new(Uploads::default()),
            sessions: Mutex::new(Sessions {
                slots: BTreeMap::new(),
                next_id: 1,
            }),
            searches: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The answer to one request (never panics on what a client sends).
    pub fn answer(&self, request: &Request) -> Response {
        match (request.method, request.path()) {
            (Method::Get, "/") => Response::new(200, "text/html; charset=utf-8", PAGE),
            (Method::Get, "/api/games") => json_response(200, &self.games()),
            (Method::Post, path) if path.starts_with("/api/") => {
                if request.body.len() > max_body(Method::Post, path) {
                    return error(413, "request body too large");
                }
                match self.api(&path[5..], &request.body) {
                    Ok(value) => json_response(200, &value),
                    Err(Failure(code, message)) => error(code, &message),
                }
            }
            _ => error(404, "not found"),
        }
    }

    fn api(&self, path: &str, body: &[u8]) -> Result<Value, Failure> {
        match path {
            "upload" => {
                let req: Upload = parse(body)?;
                self.upload(req)
            }
            "roles" => {
                let req: GameName = parse(body)?;
                let (description, _) = self.load(&req.game)?;
                let roles: Vec<String> =
                    description.roles().iter().map(|r| r.to_string()).collect();
                Ok(json!({ "roles": roles }))
            }
            "new" => {
                let req: NewGame = parse(body)?;
                self.new_session(req)
            }
            "view" => {
                let req: ViewReq = parse(body)?;
                let slot = self.slot(req.id)?;
                // While the computer thinks, the answer may wait (up to `wait` ms, at most
                // MAX_VIEW_WAIT) for its move, so that the page shows it as soon as it is made.
                await_computer(&slot, req.wait);
                self.shown(&slot)
            }
            "step" => {
                let req: Id = parse(body)?;
                let slot = self.slot(req.id)?;
                {
                    let mut game = try_game(&slot)?;
                    if game.view(slot.id)?.waiting {
                        self.think(&slot, game)?;
                    }
                }
                self.shown(&slot)
            }
            "move" => {
                let req: Move = parse(body)?;
                let slot = self.slot(req.id)?;
                {
                    let mut game = try_game(&slot)?;
                    if let Some(step) = req.step {
                        game.expect_step(step)?;
                    }
                    if game.steps() >= MAX_STEPS {
                        return Err(Failure(
                            409,
                            format!("this game has reached {MAX_STEPS} moves, the limit here"),
                        ));
                    }
                    game.choose(req.role, req.index)?;
                    *lock(&slot.searched) = None;
                    *lock(&slot.shown) = None;
                    let view = game.view(slot.id)?;
                    let waiting = view.waiting;
                    *lock(&slot.shown) = Some(view);
                    if waiting {
                        self.think(&slot, game)?;
                    }
                }
                await_computer(&slot, req.wait);
                self.shown(&slot)
            }
            "hint" => {
                let req: Hint = parse(body)?;
                let slot = self.slot(req.id)?;
                let mut game = try_game(&slot)?;
                let index = game.hint(req.role)?;
                Ok(json!({ "index": index }))
            }
            "undo" => {
                let req: Id = parse(body)?;
                let slot = self.slot(req.id)?;
                let undone = try_game(&slot)?.undo();
                *lock(&slot.searched) = None;
                *lock(&slot.shown) = None;
                undone?;
                self.shown(&slot)
            }
            "record" => {
                let req: Id = parse(body)?;
                let slot = self.slot(req.id)?;
                let record = try_game(&slot)?.record()?;
                Ok(serde_json::to_value(record).expect("records serialize"))
            }
            "replay" => {
                let req: ReplayRequest = parse(body)?;
                let text = match (&req.record.game_rulesheet, &req.game) {
                    (_, Some(game)) => self.load(game)?.1,
                    (Some(text), None) => text.clone(),
                    (None, None) => {
                        return Err(Failure(
                            400,
                            "the record holds no rule sheet; choose its game".into(),
                        ));
                    }
                };
                let description = validate(&text)?;
                let replay = game_session::replay(&description, &text, &req.record)?;
                let mut value = serde_json::to_value(replay).expect("replays serialize");
                // The description of the sheet the record holds (not one that names another
                // board relation: replays keep the detected board).
                let listed = self.listed().into_iter().find(|name| {
                    std::fs::read_to_string(self.config.rules.join(format!("{name}.kif")))
                        .is_ok_and(|t| t == text)
                });
                let name = req.game.clone().or(listed).unwrap_or_default();
                if let Some(display) = self.display(&name)
                    && display.get("relation").is_none()
                {
                    value["display"] = display;
                }
                Ok(value)
            }
            _ => Err(Failure(404, format!("no endpoint /api/{path}"))),
        }
    }

    fn new_session(&self, req: NewGame) -> Result<Value, Failure> {
        let (description, text) = self.load(&req.game)?;
        let seats = req
            .seats
            .iter()
            .map(|s| parse_seat(s))
            .collect::<Result<Vec<_>, _>>()?;
        // Built without any shared lock held: grounding may take seconds.
        let display = self.display(&req.game);
        let board = display.as_ref().and_then(|d| d["relation"].as_str());
        let (mut game, progress) = game_session::new_session(
            &req.game,
            &description,
            &text,
            seats,
            self.config.seed,
            board,
        )?;
        let id = {
            let mut sessions = lock(&self.sessions);
            let id = sessions.next_id;
            sessions.next_id += 1;
            id
        };
        let view = game.view(id)?;
        let slot = Arc::new(Slot {
            id,
            game: Mutex::new(game),
            thinking: AtomicBool::new(false),
            moved: (Mutex::new(()), Condvar::new()),
            progress,
            progress_start: AtomicU64::new(0),
            searched: Mutex::new(None),
            shown: Mutex::new(Some(view)),
            failure: Mutex::new(None),
            used: Mutex::new(Instant::now()),
            display,
        });
        {
            let mut sessions = lock(&self.sessions);
            sessions.slots.insert(id, Arc::clone(&slot));
            let now = Instant::now();
            sessions
                .slots
                .retain(|_, s| now.duration_since(*lock(&s.used)) < SESSION_IDLE);
            while sessions.slots.len() > MAX_SESSIONS {
                let oldest = sessions
                    .slots
                    .iter()
                    .min_by_key(|(_, s)| *lock(&s.used))
                    .map(|(&id, _)| id)
                    .expect("not empty");
                sessions.slots.remove(&oldest);
            }
        }
        let waiting = lock(&slot.shown).as_ref().is_some_and(|v| v.waiting);
        if waiting {
            let game = try_game(&slot)?;
            self.think(&slot, game)?;
        }
        self.shown(&slot)
    }

    /// Starts the computers' move on a thread of its own, which holds the game until done.
    fn think(
        &self,
        slot: &Arc<Slot>,
        mut game: MutexGuard<'_, Box<dyn GameSession>>,
    ) -> Result<(), Failure> {
        let work = game.work()?;
        if self.searches.fetch_add(1, Ordering::SeqCst) >= MAX_SEARCHES {
            self.searches.fetch_sub(1, Ordering::SeqCst);
            return Err(Failure(
                503,
                format!("{MAX_SEARCHES} computers are thinking already; try again shortly"),
            ));
        }
        slot.progress.set_work(work);
        slot.thinking.store(true, Ordering::SeqCst);
        slot.progress_start
            .store(slot.progress.count(), Ordering::SeqCst);
        drop(game);
        let thinker = Arc::clone(slot);
        let searches = Arc::clone(&self.searches);
        let spawned = std::thread::Builder::new()
            .name("web-think".into())
            .spawn(move || {
                let slot = thinker;
                let mut game = lock(&slot.game);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    game.step()?;
                    game.view(slot.id)
                }));
                let reply = match outcome {
                    Ok(Ok(view)) => Some(view),
                    Ok(Err(e)) => {
                        *lock(&slot.failure) = Some(e.to_string());
                        None
                    }
                    Err(_) => {
                        *lock(&slot.failure) = Some("the computer's search failed".into());
                        None
                    }
                };
                drop(game);
                searches.fetch_sub(1, Ordering::SeqCst);
                slot.done_thinking(reply);
            });
        if let Err(e) = spawned {
            slot.done_thinking(None);
            self.searches.fetch_sub(1, Ordering::SeqCst);
            return Err(Failure(503, format!("cannot start the computer: {e}")));
        }
        Ok(())
    }

    /// The position as the page shows it: the view kept since the game last changed (each
    /// change stores the view it leads to, so that an answer never computes it twice), or a
    /// fresh one when none is kept and the game is free. While the computer thinks, the
    /// position before its move with its work so far; the position of its reply with the work
    /// it took.
    fn shown(&self, slot: &Slot) -> Result<Value, Failure> {
        // Read together with `thinking` (the thinker stores its reply and clears `thinking`
        // under the same lock), so that a reply is never shown as still thinking.
        let (thinking, kept, searched) = {
            let _moved = lock(&slot.moved.0);
            let thinking = slot.thinking.load(Ordering::SeqCst);
            (thinking, lock(&slot.shown).clone(), *lock(&slot.searched))
        };
        let mut view = match kept {
            Some(view) => view,
            None => {
                let fresh = match slot.game.try_lock() {
                    Ok(mut game) if !thinking => game.view(slot.id)?,
                    Err(TryLockError::Poisoned(e)) if !thinking => e.into_inner().view(slot.id)?,
                    _ => return Err(Failure(409, "the game is busy; try again".into())),
                };
                *lock(&slot.shown) = Some(fresh.clone());
                fresh
            }
        };
        let (searched, work) = if thinking {
            (slot.work(), Some(slot.progress.work()))
        } else {
            match searched {
                Some((step, count, work)) if step == view.step => (count, Some(work)),
                _ => (0, None),
            }
        };
        view.name_ending(slot.display.as_ref());
        let mut value = serde_json::to_value(view).expect("views serialize");
        value["thinking"] = json!(thinking);
        value["searched"] = json!(searched);
        value["work"] = json!(work.map(Work::noun));
        if let Some(display) = &slot.display {
            value["display"] = display.clone();
        }
        if let Some(message) = lock(&slot.failure).take() {
            value["notice"] = json!(message);
        }
        Ok(value)
    }

    fn slot(&self, id: u64) -> Result<Arc<Slot>, Failure> {
        let slot = lock(&self.sessions)
            .slots
            .get(&id)
            .cloned()
            .ok_or_else(|| Failure(404, format!("no game {id} (the server may have restarted)")))?;
        *lock(&slot.used) = Instant::now();
        Ok(slot)
    }

    /// The sheets of the rules folder (by file stem) and the uploaded ones.
    fn games(&self) -> Value {
        let names = self.listed();
        let uploads: Vec<String> = lock(&self.uploads).sheets.keys().cloned().collect();
        json!({ "games": names, "uploads": uploads })
    }

    fn listed(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.config.rules)
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let path = e.path();
                        (path.extension()? == "kif")
                            .then(|| path.file_stem()?.to_str().map(String::from))
                            .flatten()
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The display description of a sheet (piece glyphs and colours, board shape, marked
    /// squares, the roles whose side is drawn at the bottom; see README "Display
    /// descriptions"): the one kept beside a listed sheet (`NAME.display.json`); any other
    /// sheet has none and is drawn from what the board's shape tells.
    fn display(&self, name: &str) -> Option<Value> {
        let uploaded = lock(&self.uploads).sheets.contains_key(name);
        if !uploaded && self.listed().iter().any(|g| g == name) {
            let path = self.config.rules.join(format!("{name}.display.json"));
            if let Ok(text) = std::fs::read_to_string(&path) {
                match serde_json::from_str(&text) {
                    Ok(value) => return Some(value),
                    Err(e) => tracing::warn!("{}: {e}", path.display()),
                }
            }
        }
        None
    }

    /// A game's validated rules and text, by its listed name.
    fn load(&self, name: &str) -> Result<(Description, String), Failure> {
        let uploaded = lock(&self.uploads).sheets.get(name).cloned();
        let text = if let Some(text) = uploaded {
            text
        } else {
            if !self.listed().iter().any(|g| g == name) {
                return Err(Failure(404, format!("no game named {name:?}")));
            }
            let path = self.config.rules.join(format!("{name}.kif"));
            std::fs::read_to_string(&path)
                .map_err(|e| Failure(500, format!("cannot read {}: {e}", path.display())))?
        };
        Ok((validate(&text)?, text))
    }

    fn upload(&self, req: Upload) -> Result<Value, Failure> {
        if req.text.len() > MAX_UPLOAD {
            return Err(Failure(
                413,
                format!(
                    "the sheet is {} bytes; the limit is {MAX_UPLOAD}",
                    req.text.len()
                ),
            ));
        }
        let stem = req
            .name
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("")
            .trim_end_matches(".kif");
        let clean: String = stem
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .take(64)
            .collect();
        let name = format!("upload:{}", if clean.is_empty() { "sheet" } else { &clean });
        match Description::from_text(&req.text) {
            Ok(d) => {
                let roles: Vec<String> = d.roles().iter().map(|r| r.to_string()).collect();
                let warnings: Vec<String> = d.warnings().iter().map(|w| w.to_string()).collect();
                let mut uploads = lock(&self.uploads);
                let replaced = uploads.sheets.get(&name).map_or(0, String::len);
                if replaced == 0 && uploads.sheets.len() >= MAX_UPLOADS {
                    return Err(Failure(
                        429,
                        format!("{MAX_UPLOADS} sheets are uploaded already, the limit here"),
                    ));
                }
                let bytes = uploads.bytes - replaced + req.text.len();
                if bytes > MAX_UPLOAD_TOTAL {
                    return Err(Failure(
                        429,
                        format!(
                            "the uploaded sheets would take {bytes} bytes; the limit is {MAX_UPLOAD_TOTAL}"
                        ),
                    ));
                }
                uploads.bytes = bytes;
                uploads.sheets.insert(name.clone(), req.text);
                Ok(json!({ "game": name, "roles": roles, "warnings": warnings }))
            }
            Err(diagnostics) => {
                let lines: Vec<String> = diagnostics.iter().map(|d| d.in_file(&name)).collect();
                Err(Failure(
                    422,
                    format!("{name} is not a valid game:\n{}", lines.join("\n")),
                ))
            }
        }
    }
}

impl Slot {
    /// The work of the search under way (or the last one) so far.
    fn work(&self) -> u64 {
        self.progress
            .count()
            .saturating_sub(self.progress_start.load(Ordering::SeqCst))
    }

    /// The computer has moved (`reply`: the view of the position it led to, kept with the
    /// work it took) or failed: the waiting requests are woken at once.
    fn done_thinking(&self, reply: Option<View>) {
        let (mutex, moved) = &self.moved;
        let _guard = lock(mutex);
        if let Some(view) = reply {
            *lock(&self.searched) = Some((view.step, self.work(), self.progress.work()));
            *lock(&self.shown) = Some(view);
        }
        self.thinking.store(false, Ordering::SeqCst);
        moved.notify_all();
    }
}

/// Waits while the computer thinks, for at most `wait` ms (capped at [`MAX_VIEW_WAIT`]), so
/// that an answer carries its move the moment it is made (woken by [`Slot::done_thinking`]).
fn await_computer(slot: &Slot, wait: Option<u64>) {
    let until = Instant::now() + Duration::from_millis(wait.unwrap_or(0)).min(MAX_VIEW_WAIT);
    let (mutex, moved) = &slot.moved;
    let mut guard = lock(mutex);
    while slot.thinking.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        guard = moved
            .wait_timeout(guard, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The game, unless the computer is thinking about it (a click then is refused, not queued).
fn try_game(slot: &Slot) -> Result<MutexGuard<'_, Box<dyn GameSession>>, Failure> {
    let busy = || Failure(409, "the computer is thinking; wait for its move".into());
    if slot.thinking.load(Ordering::SeqCst) {
        return Err(busy());
    }
    match slot.game.try_lock() {
        Ok(game) => Ok(game),
        Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
        Err(TryLockError::WouldBlock) => Err(busy()),
    }
}

fn validate(text: &str) -> Result<Description, Failure> {
    Description::from_text(text).map_err(|diagnostics| {
        let lines: Vec<String> = diagnostics.iter().map(|d| d.to_string()).collect();
        Failure(422, format!("not a valid game:\n{}", lines.join("\n")))
    })
}

fn parse_seat(text: &str) -> Result<Seat, Failure> {
    if text.eq_ignore_ascii_case("human") {
        return Ok(Seat::Human);
    }
    match text.parse::<Level>().map_err(|e| Failure(400, e))? {
        Level::Seconds(s) if s > MAX_THINK_SECONDS => Err(Failure(
            400,
            format!("{s} s per move is over the limit here ({MAX_THINK_SECONDS} s)"),
        )),
        level => Ok(Seat::Computer(level)),
    }
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|e| Failure(400, format!("bad request: {e}")))
}

#[derive(Deserialize)]
struct Upload {
    name: String,
    text: String,
}

#[derive(Deserialize)]
struct GameName {
    game: String,
}

#[derive(Deserialize)]
struct NewGame {
    game: String,
    seats: Vec<String>,
}

#[derive(Deserialize)]
struct Id {
    id: u64,
}

#[derive(Deserialize)]
struct ViewReq {
    id: u64,
    /// Milliseconds the answer may wait for the computer's move.
    wait: Option<u64>,
}

#[derive(Deserialize)]
struct Move {
    id: u64,
    role: usize,
    index: usize,
    /// The step of the position the click was made on; a click on an older one is refused.
    step: Option<usize>,
    /// Milliseconds the answer may wait for the computer's reply (see [`await_computer`]).
    wait: Option<u64>,
}

#[derive(Deserialize)]
struct Hint {
    id: u64,
    role: usize,
}

#[derive(Deserialize)]
struct ReplayRequest {
    record: MatchRecord,
    game: Option<String>,
}

/// Fuzzing the endpoints in process: mutated requests, all of Unicode's whitespace, control
/// bytes, invalid UTF-8 and deep nesting. `GGP_FUZZ_INPUTS` sets the number of inputs
/// (`bench/fuzz_web.sh` runs 10^6); the default is a short run.
#[cfg(test)]
mod fuzz {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    const WHITESPACE: &[char] = &[
        '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}',
        '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}',
        '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}',
        '\u{3000}', '\u{feff}', '\u{200b}',
    ];
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\\",
        "\\u0000",
        "\\ud800",
        "0",
        "-1",
        "1e999",
        "18446744073709551616",
        "null",
        "true",
        "\"id\"",
        "\"game\"",
        "\"tiny\"",
        "\"seats\"",
        "\"human\"",
        "\"random\"",
        "\"text\"",
        "(",
        ")",
        "?x",
        "(role a)",
        "<=",
        "\u{10ffff}",
    ];
    const PATHS: &[&str] = &[
        "upload", "roles", "new", "view", "step", "move", "hint", "undo", "record", "replay",
        "nothing",
    ];
    const SHEET: &str = "(role a) (init s0) (<= (legal a go) (true s0)) (<= (legal a wait) \
                         (true s0)) (<= (next s1) (does a go)) (<= (next s0) (does a wait)) \
                         (<= terminal (true s1)) (<= (goal a 100) (true s1)) \
                         (<= (goal a 0) (true s0))";

    fn templates() -> Vec<(&'static str, String)> {
        vec![
            (
                "upload",
                json!({"name": "t.kif", "text": SHEET}).to_string(),
            ),
            ("roles", json!({"game": "tiny"}).to_string()),
            (
                "new",
                json!({"game": "tiny", "seats": ["human"]}).to_string(),
            ),
            (
                "new",
                json!({"game": "tiny", "seats": ["random"]}).to_string(),
            ),
            ("view", json!({"id": 1}).to_string()),
            (
                "move",
                json!({"id": 1, "role": 0, "index": 1, "step": 0}).to_string(),
            ),
            ("hint", json!({"id": 1, "role": 0}).to_string()),
            ("undo", json!({"id": 1}).to_string()),
            ("record", json!({"id": 1}).to_string()),
            (
                "replay",
                json!({"game": "tiny", "record": {"moves": [["( go )"]]}}).to_string(),
            ),
        ]
    }

    fn mutate(rng: &mut impl Rng, text: &str) -> Vec<u8> {
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..rng.random_range(0..6) {
            let at = rng.random_range(0..=bytes.len());
            let insert: Vec<u8> = match rng.random_range(0..6) {
                0 => WHITESPACE[rng.random_range(0..WHITESPACE.len())]
                    .to_string()
                    .into_bytes(),
                1 => vec![rng.random_range(0..0x20u8)],
                2 => vec![rng.random::<u8>()],
                3 => TOKENS[rng.random_range(0..TOKENS.len())]
                    .as_bytes()
                    .to_vec(),
                4 => {
                    let depth = rng.random_range(1..5000);
                    let open = if rng.random() { "[" } else { "{\"a\":" };
                    open.repeat(depth).into_bytes()
                }
                _ => {
                    if !bytes.is_empty() {
                        let from = rng.random_range(0..bytes.len());
                        let to = rng.random_range(from..=bytes.len().min(from + 8));
                        bytes.drain(from..to);
                    }
                    Vec::new()
                }
            };
            let at = at.min(bytes.len());
            bytes.splice(at..at, insert);
        }
        bytes
    }

    #[test]
    fn endpoints_answer_any_input_without_panicking() {
        let dir = std::env::temp_dir().join(format!("ggp-web-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("tiny.kif"), SHEET).unwrap();
        let app = App::new(Config {
            bind: "127.0.0.1".into(),
            port: 0,
            rules: dir.clone(),
            seed: 1,
        });
        let inputs: usize = std::env::var("GGP_FUZZ_INPUTS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(3000);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
        let templates = templates();
        let mut statuses = BTreeMap::<u16, usize>::new();
        for i in 0..inputs {
            let (path, body) = if rng.random_range(0..10) == 0 {
                (PATHS[rng.random_range(0..PATHS.len())], String::new())
            } else {
                let (p, b) = &templates[rng.random_range(0..templates.len())];
                (*p, b.clone())
            };
            let body = mutate(&mut rng, &body);
            let request = Request {
                method: Method::Post,
                target: format!("/api/{path}"),
                version: "1.1",
                body: body.clone(),
                received: Instant::now(),
            };
            let answer = catch_unwind(AssertUnwindSafe(|| app.answer(&request)));
            let Ok(response) = answer else {
                panic!(
                    "input {i} to /api/{path} panicked: {:?}",
                    String::from_utf8_lossy(&body)
                );
            };
            assert!(
                serde_json::from_slice::<Value>(&response.body).is_ok(),
                "input {i}: the answer is not JSON"
            );
            *statuses.entry(response.status).or_default() += 1;
            // Let computers that were started finish, so that sessions do not pile up.
            if i % 64 == 0 {
                while app.searches.load(Ordering::SeqCst) > 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        eprintln!("{inputs} inputs, answers by status: {statuses:?}");
        assert!(
            statuses.get(&200).is_some_and(|&n| n > inputs / 20),
            "{statuses:?}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
