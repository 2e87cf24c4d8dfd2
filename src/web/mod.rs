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
//! | `POST /api/view {id}` | the position |
//! | `POST /api/move {id, role, index}` | a person's move, then the position |
//! | `POST /api/step {id}` | the computers move when no person has a choice |
//! | `POST /api/undo {id}` | take back to the last human choice |
//! | `POST /api/record {id}` | the match record (ggp.org JSON) |
//! | `POST /api/replay {record}` | every position of a record, checked against its rules |
//!
//! Requests are served one at a time. Bodies are capped ([`MAX_UPLOAD`] for a sheet), game
//! names are looked up, never used as paths, and the server binds to 127.0.0.1 unless told
//! otherwise.

pub mod session;

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response, Server};

use crate::gdl::Description;
use crate::manager::MatchRecord;
use crate::play::{Level, Seat};
use session::{Session, SessionError};

/// The page, compiled into the binary.
pub const PAGE: &str = include_str!("page.html");
/// Largest rule sheet accepted by upload.
pub const MAX_UPLOAD: usize = 256 * 1024;
/// Largest request body (a match record with its sheet).
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Sessions kept; the oldest is dropped past this.
const MAX_SESSIONS: usize = 64;

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
    server: Server,
    state: State,
}

struct State {
    config: Config,
    uploads: BTreeMap<String, String>,
    sessions: BTreeMap<u64, Box<dyn Session>>,
    next_id: u64,
}

/// A failed request: HTTP status and message.
struct Failure(u16, String);

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        match e {
            SessionError::Request(m) => Failure(400, m),
            SessionError::Play(e) => Failure(500, e.to_string()),
        }
    }
}

impl WebServer {
    /// Binds the address.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn bind(config: Config) -> Result<WebServer, WebError> {
        let addr = format!("{}:{}", config.bind, config.port);
        let server = Server::http(&addr).map_err(|e| WebError::Bind(addr, e.to_string()))?;
        Ok(WebServer {
            server,
            state: State {
                config,
                uploads: BTreeMap::new(),
                sessions: BTreeMap::new(),
                next_id: 1,
            },
        })
    }

    /// The address bound.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.server.server_addr().to_ip()
    }

    /// Serves requests until the process ends.
    ///
    /// # Errors
    /// Accepting a connection failed.
    pub fn serve(mut self) -> Result<(), WebError> {
        loop {
            let request = self.server.recv()?;
            self.state.handle(request);
        }
    }
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("fixed ASCII header")
}

impl State {
    fn handle(&mut self, mut request: Request) {
        let url = request.url().split('?').next().unwrap_or("").to_string();
        let method = request.method().clone();
        let response = match (&method, url.as_str()) {
            (Method::Get, "/") => Response::from_string(PAGE)
                .with_header(header("Content-Type", "text/html; charset=utf-8")),
            (Method::Get, "/api/games") => json_response(200, &self.games()),
            (Method::Post, path) if path.starts_with("/api/") => {
                let result = read_body(&mut request).and_then(|body| self.api(&path[5..], &body));
                match result {
                    Ok(value) => json_response(200, &value),
                    Err(Failure(code, message)) => {
                        json_response(code, &json!({ "error": message }))
                    }
                }
            }
            _ => json_response(404, &json!({ "error": "not found" })),
        };
        // A client that went away is not our problem.
        let _ = request.respond(response);
    }

    fn api(&mut self, path: &str, body: &[u8]) -> Result<Value, Failure> {
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
                let (description, text) = self.load(&req.game)?;
                let seats = req
                    .seats
                    .iter()
                    .map(|s| parse_seat(s))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut session =
                    session::new_session(&req.game, &description, &text, seats, self.config.seed)?;
                let id = self.next_id;
                self.next_id += 1;
                let view = session.view(id)?;
                self.sessions.insert(id, session);
                while self.sessions.len() > MAX_SESSIONS {
                    self.sessions.pop_first();
                }
                Ok(serde_json::to_value(view).expect("views serialize"))
            }
            "view" | "step" | "undo" | "record" => {
                let req: Id = parse(body)?;
                let session = self.session(req.id)?;
                match path {
                    "step" => session.step()?,
                    "undo" => session.undo()?,
                    "record" => {
                        let record = session.record()?;
                        return Ok(serde_json::to_value(record).expect("records serialize"));
                    }
                    _ => {}
                }
                Ok(serde_json::to_value(session.view(req.id)?).expect("views serialize"))
            }
            "move" => {
                let req: Move = parse(body)?;
                let session = self.session(req.id)?;
                session.choose(req.role, req.index)?;
                Ok(serde_json::to_value(session.view(req.id)?).expect("views serialize"))
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
                let replay = session::replay(&description, &text, &req.record)?;
                Ok(serde_json::to_value(replay).expect("replays serialize"))
            }
            _ => Err(Failure(404, format!("no endpoint /api/{path}"))),
        }
    }

    fn session(&mut self, id: u64) -> Result<&mut Box<dyn Session>, Failure> {
        self.sessions
            .get_mut(&id)
            .ok_or_else(|| Failure(404, format!("no game {id} (the server may have restarted)")))
    }

    /// The sheets of the rules folder (by file stem) and the uploaded ones.
    fn games(&self) -> Value {
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
        let uploads: Vec<&String> = self.uploads.keys().collect();
        json!({ "games": names, "uploads": uploads })
    }

    /// A game's validated rules and text, by its listed name.
    fn load(&self, name: &str) -> Result<(Description, String), Failure> {
        let text = if let Some(text) = self.uploads.get(name) {
            text.clone()
        } else {
            let listed = self.games()["games"]
                .as_array()
                .is_some_and(|a| a.iter().any(|g| g == name));
            if !listed {
                return Err(Failure(404, format!("no game named {name:?}")));
            }
            let path = self.config.rules.join(format!("{name}.kif"));
            std::fs::read_to_string(&path)
                .map_err(|e| Failure(500, format!("cannot read {}: {e}", path.display())))?
        };
        Ok((validate(&text)?, text))
    }

    fn upload(&mut self, req: Upload) -> Result<Value, Failure> {
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
                self.uploads.insert(name.clone(), req.text);
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
    text.parse::<Level>()
        .map(Seat::Computer)
        .map_err(|e| Failure(400, e))
}

fn read_body(request: &mut Request) -> Result<Vec<u8>, Failure> {
    if request.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(Failure(413, format!("request body over {MAX_BODY} bytes")));
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| Failure(400, format!("cannot read the request: {e}")))?;
    if body.len() > MAX_BODY {
        return Err(Failure(413, format!("request body over {MAX_BODY} bytes")));
    }
    Ok(body)
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|e| Failure(400, format!("bad request: {e}")))
}

fn json_response(code: u16, value: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_string(value.to_string())
        .with_status_code(code)
        .with_header(header("Content-Type", "application/json"))
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
struct Move {
    id: u64,
    role: usize,
    index: usize,
}

#[derive(Deserialize)]
struct ReplayRequest {
    record: MatchRecord,
    game: Option<String>,
}
