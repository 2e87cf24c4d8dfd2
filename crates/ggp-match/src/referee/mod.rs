//! The referee (`ggp match`): runs one match between players over HTTP, as ggp-base's
//! GameServer does, and keeps its record.
//!
//! The sequence is INFO to every player (ggp-base style only), START to all at once, then PLAY
//! rounds (`NIL` first, then the previous joint move) until a terminal state, then STOP. Each
//! player's default move, a uniformly random legal move, is drawn before each round is sent;
//! it stands when the reply is late (`TO`: later than the play clock plus 1 s), the
//! connection fails (`CE`), or the reply does not parse or is not legal (`IL <move>`,
//! `IL null`). Errors are recorded and the match goes on.
//!
//! A GDL-II game (with `sees` rules or the role `random`) is refereed as Dresden's
//! GameController does: the referee plays `random` itself, uniformly at random (seeded), and
//! sends each player `(PLAY id turn lastmove percepts)`, only the move applied for it and
//! what it saw; the record keeps every role's percepts beside the true states.
//!
//! The record ([`MatchRecord`]) is written atomically after every step, so a match
//! that stops half way leaves a record with `isCompleted: false`.
//!
//! **Stopping:** once [`stop_on_signals`] is called, SIGINT or SIGTERM makes every match
//! under way end at its next step with [`RefereeError::Stopped`]: its players are sent ABORT,
//! so that a remote player (Sancho serves one match at a time) is free for the next, and its
//! record is written, marked aborted.
//!
//! **Boundary:** the referee has its own machine, given by the caller; players are only
//! addresses.

pub mod scramble;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use tracing::{info, warn};

pub use scramble::Scrambler;

use crate::protocol::message::{spaced, state_text, term_to_sexp};
use crate::protocol::{Client, SendError, Style};
use crate::record::{MatchRecord, RecordError, random_token};
use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::{self, Term};
use ggp_gdl::kif::{self, Sexp};

/// A player in a match.
#[derive(Debug, Clone)]
pub struct Contestant {
    /// Where it listens: `host:port`.
    pub address: String,
    /// Its name for the record, until INFO tells a better one.
    pub name: String,
}

/// How to run a match.
#[derive(Debug, Clone)]
pub struct MatchConfig {
    /// The match id sent to the players.
    pub match_id: String,
    /// Seconds of the start clock.
    pub start_clock: u64,
    /// Seconds of the play clock.
    pub play_clock: u64,
    /// How messages are printed.
    pub style: Style,
    /// Whether players see the game with every symbol renamed.
    pub scramble: bool,
    /// Seed for default moves, the scrambling and the record's token.
    pub seed: u64,
    /// Where the record is kept up to date, if anywhere.
    pub record_path: Option<PathBuf>,
    /// The rule sheet as given, stored in the record.
    pub rulesheet: String,
    /// The most joint moves a match may take; past it the players get ABORT and the match
    /// ends with [`RefereeError::StepLimit`] (a game whose end cannot be reached).
    pub max_steps: usize,
}

/// The step limit of `ggp match` and `ggp tournament` unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 1000;

/// Why a match could not be run to the end.
#[derive(Debug, thiserror::Error)]
pub enum RefereeError {
    /// The game's engine failed (for example a role with no legal move).
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// The record could not be written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The HTTP client could not be set up.
    #[error(transparent)]
    Client(#[from] SendError),
    /// The game did not end within the step limit; the players were sent ABORT.
    #[error("the match did not end within {0} steps; it was aborted")]
    StepLimit(usize),
    /// The referee was asked to stop (a signal, see [`stop_on_signals`]); the players were
    /// sent ABORT.
    #[error("the referee was stopped; the match was aborted")]
    Stopped,
    /// Not one player per role.
    #[error("the game has {roles} roles but {players} players were given")]
    Players {
        /// Roles of the game.
        roles: usize,
        /// Players given.
        players: usize,
    },
}

/// Set once a stop is requested; never cleared (the process is ending).
static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested: every match under way then ends at its next step
/// ([`RefereeError::Stopped`]).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal handler: the first SIGINT or SIGTERM requests the stop, the second ends the
/// process at once. It only touches an atomic and calls `write` and `_exit`, which are safe
/// in a signal handler.
extern "C" fn on_signal(_signal: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
    let note = b"stopping: each match under way is aborted at its next step (again to quit now)\n";
    // SAFETY: `write` is async-signal-safe; the buffer is static.
    unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
}

/// Makes SIGINT (Ctrl-C) and SIGTERM request the stop instead of killing the process, so
/// that the matches under way abort cleanly; a second signal quits at once.
pub fn stop_on_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler is async-signal-safe (see `on_signal`).
        unsafe { libc::signal(signal, handler) };
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// 32 random letters and digits.
/// Runs one match of the game `rules` (as read by [`kif::parse`], run by `machine`) between
/// `contestants`, one per role in role order, and returns its record.
///
/// # Errors
/// Not one player per role, the HTTP client cannot be set up, the record cannot be written,
/// or the engine fails; in the last case the players are sent ABORT and the record, marked
/// aborted, is still written.
pub fn run_match<M: StateMachine>(
    machine: &mut M,
    rules: &[Sexp],
    contestants: &[Contestant],
    config: &MatchConfig,
) -> Result<MatchRecord, RefereeError> {
    let roles = machine.roles().len();
    if contestants.len() != roles {
        return Err(RefereeError::Players {
            roles,
            players: contestants.len(),
        });
    }
    let mut referee = Referee {
        nature: (0..roles).map(|r| machine.is_nature(r)).collect(),
        client: Client::new()?,
        rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
        scrambler: config.scramble.then(|| Scrambler::new(rules, config.seed)),
        contestants,
        config,
    };
    let mut record = MatchRecord {
        match_id: config.match_id.clone(),
        random_token: random_token(&mut referee.rng),
        start_time: now_ms(),
        game_meta_url: None,
        game_rulesheet: Some(config.rulesheet.clone()),
        is_completed: false,
        is_aborted: false,
        states: Vec::new(),
        moves: Vec::new(),
        state_times: Vec::new(),
        errors: Vec::new(),
        goal_values: Vec::new(),
        goal_faults: Vec::new(),
        preview_clock: -1,
        start_clock: config.start_clock,
        play_clock: config.play_clock,
        player_names_from_host: Some(contestants.iter().map(|c| c.name.clone()).collect()),
        scrambled: config.scramble,
        is_player_human: Vec::new(),
        percepts: Vec::new(),
    };
    match referee.play(machine, rules, &mut record) {
        Ok(()) => Ok(record),
        Err(e) => {
            warn!(match_id = %config.match_id, "match stopped: {e}");
            let abort = config.style.abort(&config.match_id);
            let nature = referee.nature.clone();
            let messages: Vec<Option<String>> = nature
                .iter()
                .map(|&n| (!n).then(|| abort.clone()))
                .collect();
            referee.broadcast(&messages, Duration::from_secs(1));
            record.is_aborted = true;
            if let Some(path) = &config.record_path {
                record.save(path)?;
            }
            Err(e)
        }
    }
}

struct Referee<'a> {
    /// Which roles are nature, played by the referee (their contestants are not contacted).
    nature: Vec<bool>,
    client: Client,
    rng: Xoshiro256PlusPlus,
    scrambler: Option<Scrambler>,
    contestants: &'a [Contestant],
    config: &'a MatchConfig,
}

/// One player's reply and how long it took.
type Reply = (Result<String, SendError>, Duration);

/// What the players have been told of the last step: the joint move (GDL), or each role's
/// own move and percepts (GDL-II).
struct Told {
    last: Option<Vec<Term>>,
    seen: Vec<Option<(Sexp, Vec<Sexp>)>>,
}

impl Referee<'_> {
    /// Plays the match from INFO and START to STOP, filling in `record`.
    fn play<M: StateMachine>(
        &mut self,
        machine: &mut M,
        rules: &[Sexp],
        record: &mut MatchRecord,
    ) -> Result<(), RefereeError> {
        let config = self.config;
        let id = config.match_id.as_str();
        let roles = machine.roles().to_vec();
        self.introduce(&roles, rules, record);
        let mut state = machine.initial_state();
        self.push_state(machine, &state, record)?;
        let mut told = Told {
            last: None,
            seen: vec![None; roles.len()],
        };
        while !machine.is_terminal(&state)? {
            if stop_requested() {
                return Err(RefereeError::Stopped);
            }
            let step = record.moves.len() + 1;
            if step > config.max_steps {
                let abort = config.style.abort(id);
                self.broadcast(&self.to_players(|_| abort.clone()), self.play_timeout());
                warn!(match_id = %id, steps = config.max_steps, "step limit reached: aborted");
                return Err(RefereeError::StepLimit(config.max_steps));
            }
            let (joint, errors) = self.collect_moves(machine, &state, step, &told)?;
            if machine.is_gdl2() {
                self.tell_percepts(machine, &state, &joint, &mut told, record)?;
            }
            state = machine.next_state(&state, &joint)?;
            let terms: Vec<Term> = joint.iter().map(|&m| machine.move_term(m)).collect();
            record
                .moves
                .push(terms.iter().map(|t| spaced(&term_to_sexp(t))).collect());
            record.errors.push(errors);
            self.push_state(machine, &state, record)?;
            told.last = Some(terms);
        }
        self.finish(machine, &state, &told, record)
    }

    /// A message for each player (none for nature's roles).
    fn to_players(&self, message: impl Fn(usize) -> String) -> Vec<Option<String>> {
        (0..self.nature.len())
            .map(|r| (!self.nature[r]).then(|| message(r)))
            .collect()
    }

    /// How long a player has to answer a PLAY: the play clock and a second for the network.
    fn play_timeout(&self) -> Duration {
        Duration::from_secs(self.config.play_clock) + Duration::from_secs(1)
    }

    /// INFO (ggp-base style: the names the players give) and START; the errors of START go
    /// into the record as step 0's.
    fn introduce(&mut self, roles: &[Term], rules: &[Sexp], record: &mut MatchRecord) {
        let config = self.config;
        let style = config.style;
        if style == Style::GgpBase {
            let infos = self.broadcast(&self.to_players(|_| style.info()), Duration::from_secs(5));
            let names = record.player_names_from_host.get_or_insert_default();
            for (name, (reply, _)) in names.iter_mut().zip(infos) {
                if let Some(told) = reply.ok().as_deref().and_then(info_name) {
                    *name = told;
                }
            }
        }
        let rules_out: Vec<Sexp> = rules.iter().map(|r| self.outgoing(r)).collect();
        let starts = self.to_players(|r| {
            let role = self.outgoing(&term_to_sexp(&roles[r]));
            let id = config.match_id.as_str();
            style.start(id, &role, &rules_out, config.start_clock, config.play_clock)
        });
        // A second for the network, as for PLAY: ggp-base's GameServer accepts a START a
        // fraction of a second past its clock (Sancho answers hexPie's at 60.2 s of 60).
        let start_timeout = Duration::from_secs(config.start_clock) + Duration::from_secs(1);
        let replies = self.broadcast(&starts, start_timeout);
        // A reply other than `ready` (Sancho answers `busy` when its START went wrong) is
        // recorded as a fault too: the match goes on, but the player was not ready for it.
        let start_errors: Vec<String> = replies
            .into_iter()
            .zip(&self.nature)
            .map(|((reply, _), &nature)| match reply {
                _ if nature => String::new(),
                Ok(text) if text.trim().eq_ignore_ascii_case("ready") => String::new(),
                Ok(text) => Fault::NotReady(one_line(&text)).to_string(),
                Err(e) => Fault::from(e).to_string(),
            })
            .collect();
        record.errors.push(start_errors);
    }

    /// Sends PLAY for `step` and reads each role's move: a late, malformed or illegal reply
    /// is replaced by a random legal move and its fault noted. Nature's move is the
    /// referee's, uniformly random.
    fn collect_moves<M: StateMachine>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        step: usize,
        told: &Told,
    ) -> Result<(Vec<M::Move>, Vec<String>), RefereeError> {
        let config = self.config;
        let (id, style) = (config.match_id.as_str(), config.style);
        let roles = machine.roles().to_vec();
        let mut legal = Vec::with_capacity(roles.len());
        for (index, role) in roles.iter().enumerate() {
            let moves = machine.legal_moves(state, index)?;
            if moves.is_empty() {
                return Err(MachineError::NoLegalMoves {
                    role: role.to_string(),
                }
                .into());
            }
            legal.push(moves);
        }
        let defaults: Vec<M::Move> = legal
            .iter()
            .map(|moves| *moves.choose(&mut self.rng).expect("not empty"))
            .collect();
        let messages = if machine.is_gdl2() {
            self.to_players(|r| {
                let seen = told.seen[r].as_ref().map(|(m, p)| (m, p.as_slice()));
                style.play_seen(id, step - 1, seen)
            })
        } else {
            let message = style.play(id, self.outgoing_joint(told.last.as_deref()).as_deref());
            self.to_players(|_| message.clone())
        };
        let replies = self.broadcast(&messages, self.play_timeout());
        let mut joint = Vec::with_capacity(roles.len());
        let mut errors = Vec::with_capacity(roles.len());
        for (role, (reply, took)) in replies.into_iter().enumerate() {
            let verdict = match reply {
                _ if self.nature[role] => Ok(defaults[role]),
                Ok(text) => self.interpret(machine, &text, &legal[role]),
                Err(e) => Err(Fault::from(e)),
            };
            let (mv, error) = match verdict {
                Ok(mv) => (mv, String::new()),
                Err(fault) => (defaults[role], fault.to_string()),
            };
            info!(
                match_id = %id,
                step,
                role = %roles[role],
                mv = %machine.move_term(mv),
                ms = took.as_millis() as u64,
                error = error.as_str(),
            );
            joint.push(mv);
            errors.push(error);
        }
        Ok((joint, errors))
    }

    /// GDL-II: each role's percepts of `joint`, recorded and kept to tell it with the next
    /// message.
    fn tell_percepts<M: StateMachine>(
        &self,
        machine: &mut M,
        state: &M::State,
        joint: &[M::Move],
        told: &mut Told,
        record: &mut MatchRecord,
    ) -> Result<(), RefereeError> {
        let mut percepts = Vec::with_capacity(told.seen.len());
        for (r, slot) in told.seen.iter_mut().enumerate() {
            let p = machine.percepts(state, joint, r)?;
            percepts.push(p.iter().map(|t| spaced(&term_to_sexp(t))).collect());
            let mv = self.outgoing(&term_to_sexp(&machine.move_term(joint[r])));
            let p = p.iter().map(|t| self.outgoing(&term_to_sexp(t))).collect();
            *slot = Some((mv, p));
        }
        record.percepts.push(percepts);
        Ok(())
    }

    /// STOP, the goals, and the finished record saved.
    fn finish<M: StateMachine>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        told: &Told,
        record: &mut MatchRecord,
    ) -> Result<(), RefereeError> {
        let config = self.config;
        let (id, style) = (config.match_id.as_str(), config.style);
        let (goals, faults) = final_goals(machine, state)?;
        let turn = record.moves.len();
        let stops = if machine.is_gdl2() {
            self.to_players(|r| {
                let seen = told.seen[r].as_ref().map(|(m, p)| (m, p.as_slice()));
                style.stop_seen(id, turn, seen)
            })
        } else {
            let stop = style.stop(id, self.outgoing_joint(told.last.as_deref()).as_deref());
            self.to_players(|_| stop.clone())
        };
        self.broadcast(&stops, Duration::from_secs(config.play_clock));
        record.goal_values = goals.iter().map(|&g| u32::from(g)).collect();
        if faults.iter().any(|f| !f.is_empty()) {
            for fault in faults.iter().filter(|f| !f.is_empty()) {
                warn!(match_id = %id, "{fault}");
            }
            record.goal_faults = faults;
        }
        record.is_completed = true;
        info!(match_id = %id, steps = record.moves.len(), goals = ?goals, "match over");
        if let Some(path) = &config.record_path {
            record.save(path)?;
        }
        Ok(())
    }

    /// An expression as the players see it.
    fn outgoing(&self, sexp: &Sexp) -> Sexp {
        match &self.scrambler {
            Some(s) => s.scramble(sexp),
            None => sexp.clone(),
        }
    }

    fn outgoing_joint(&self, joint: Option<&[Term]>) -> Option<Vec<Sexp>> {
        joint.map(|j| j.iter().map(|t| self.outgoing(&term_to_sexp(t))).collect())
    }

    /// Adds `state` to the record and saves it.
    fn push_state<M: StateMachine>(
        &self,
        machine: &M,
        state: &M::State,
        record: &mut MatchRecord,
    ) -> Result<(), RefereeError> {
        let mut facts = machine.state_terms(state);
        facts.sort_by_cached_key(|f| f.to_string());
        record.states.push(state_text(&facts));
        record.state_times.push(now_ms());
        if let Some(path) = &self.config.record_path {
            record.save(path)?;
        }
        Ok(())
    }

    /// The legal move a reply names, or the player's fault.
    fn interpret<M: StateMachine>(
        &self,
        machine: &M,
        reply: &str,
        legal: &[M::Move],
    ) -> Result<M::Move, Fault> {
        let Ok(sexp) = kif::parse_one(reply) else {
            return Err(Fault::Unreadable);
        };
        let sexp = match &self.scrambler {
            Some(s) => s.unscramble(&sexp),
            None => sexp,
        };
        let Ok(term) = gdl::term_from_sexp(&sexp) else {
            return Err(Fault::Unreadable);
        };
        if let Some(mv) = machine.find_move(&term)
            && legal.contains(&mv)
        {
            return Ok(mv);
        }
        if self.config.style == Style::Dresden
            // Dresden players answer in the upper case they were sent.
            && let Some(mv) = ggp_engine::machine::move_ignoring_case(machine, &term, legal)
        {
            return Ok(mv);
        }
        Err(Fault::Illegal(spaced(&sexp)))
    }

    /// Sends `messages[i]` to player `i`, all at once, and waits for every reply; a player
    /// with no message (nature) replies an empty text at once.
    fn broadcast(&self, messages: &[Option<String>], timeout: Duration) -> Vec<Reply> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .contestants
                .iter()
                .zip(messages)
                .map(|(player, message)| {
                    let client = &self.client;
                    scope.spawn(move || {
                        let Some(message) = message else {
                            return (Ok(String::new()), Duration::ZERO);
                        };
                        let sent = Instant::now();
                        let reply = client.send(&player.address, &player.name, message, timeout);
                        (reply, sent.elapsed())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Err(SendError::Connection("the sender panicked".into())),
                            Duration::ZERO,
                        )
                    })
                })
                .collect()
        })
    }
}

/// The record's code for a failed exchange.
/// What a player did wrong in one round; its default move is played instead. Printed, it is
/// the code ggp-base's match records hold (`TO`, `CE`, `IL move`, `IL null`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// No reply within the clock.
    #[error("TO")]
    Timeout,
    /// The connection failed.
    #[error("CE")]
    Connection,
    /// A reply that is not a move term.
    #[error("IL null")]
    Unreadable,
    /// A move that is not legal (as sent, spaced).
    #[error("IL {0}")]
    Illegal(String),
    /// A reply to START other than `ready` (as sent, spaced).
    #[error("IL {0}")]
    NotReady(String),
}

impl From<SendError> for Fault {
    fn from(e: SendError) -> Fault {
        match e {
            SendError::Timeout => Fault::Timeout,
            SendError::Connection(_) => Fault::Connection,
        }
    }
}

/// `text` on one line, its spaces collapsed, at most 60 characters; `null` when empty.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() {
        return "null".into();
    }
    words.join(" ").chars().take(60).collect()
}

/// The name in an INFO reply `((name NAME) (status ...))`.
fn info_name(reply: &str) -> Option<String> {
    let Sexp::List { items, .. } = kif::parse_one(reply).ok()? else {
        return None;
    };
    items.iter().find_map(|item| match item {
        Sexp::List { items, .. } => match items.as_slice() {
            [Sexp::Atom { text: key, .. }, Sexp::Atom { text: value, .. }]
                if key.eq_ignore_ascii_case("name") =>
            {
                Some(value.clone())
            }
            _ => None,
        },
        Sexp::Atom { .. } => None,
    })
}

/// The goal value of each role in the terminal `state`, and per role the sheet's fault if the
/// rules give it no value (recorded as 0) or several (recorded as the lowest, so that no role
/// is credited with an outcome the rules also deny it), else an empty string.
///
/// # Errors
/// The engine failed.
fn final_goals<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
) -> Result<(Vec<u8>, Vec<String>), MachineError> {
    let mut goals = Vec::new();
    let mut faults = Vec::new();
    for r in 0..machine.roles().len() {
        let values = machine.goal_values(state, r)?;
        let role = &machine.roles()[r];
        let (goal, fault) = match values.as_slice() {
            [v] => (*v, String::new()),
            [] if machine.is_nature(r) => (0, String::new()),
            [] => (
                0,
                format!(
                    "the rules give {role} no goal value in the final state (the sheet's fault): recorded as 0"
                ),
            ),
            several => (
                several[0],
                format!(
                    "the rules give {role} several goal values in the final state ({}; the sheet's fault): recorded as {}",
                    several
                        .iter()
                        .map(u8::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    several[0]
                ),
            ),
        };
        goals.push(goal);
        faults.push(fault);
    }
    Ok((goals, faults))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_print_as_ggp_base_records_them() {
        assert_eq!(Fault::from(SendError::Timeout).to_string(), "TO");
        assert_eq!(Fault::Connection.to_string(), "CE");
        assert_eq!(Fault::Unreadable.to_string(), "IL null");
        assert_eq!(
            Fault::Illegal("( mark 9 9 )".into()).to_string(),
            "IL ( mark 9 9 )"
        );
    }

    #[test]
    fn reads_names_from_info_replies() {
        assert_eq!(
            info_name("((name ggp) (status available))"),
            Some("ggp".into())
        );
        assert_eq!(
            info_name("( ( status busy ) ( NAME Sample ) )"),
            Some("Sample".into())
        );
        assert_eq!(info_name("( ( status busy ) )"), None);
        assert_eq!(info_name("available"), None);
        assert_eq!(info_name("(("), None);
    }

    #[test]
    fn tokens_are_32_letters_and_digits() {
        let token = random_token(&mut Xoshiro256PlusPlus::seed_from_u64(1));
        assert_eq!(token.len(), 32);
        assert!(token.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}
