//! Playing a game as a person: a match in progress with human and computer seats, shared by
//! the terminal loop ([`terminal`]) and the browser server (`ggp web`).
//!
//! A [`Game`] holds one engine, the history of states and joint moves, the board found by
//! [`crate::board`], and a computer [`Player`] for each computer seat. It reads what a person
//! types ([`Game::resolve`]): a move's number, its KIF term, or its squares on the board, which
//! come from comparing the board before and after each legal move ([`Game::move_infos`]).

pub mod notation;
pub mod progress;
pub mod terminal;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::board::{
    Change, Grid, JOIN_GAMES, JOIN_TIME, Layout, Square, Typed, sample_ends, sample_states,
};
use crate::chess::MoveShape;
use ggp_engine::engine::LoadError;
use ggp_engine::machine::{EngineFailure, MachineError, StateMachine};
use ggp_gdl::gdl::{Rule, Term, parse_term};
use ggp_match::protocol::message::{spaced, state_text, term_to_sexp};
use ggp_match::record::{MatchRecord, parse_states, random_token};
use rand::SeedableRng;

use ggp_search::belief::{Belief, BeliefError};
use ggp_search::search::auto::{AutoPlayer, LevelBudget};
use ggp_search::search::hidden::{HiddenPlayer, choose_for_seat};
use ggp_search::search::{Choice, Player, PlayerKind, SearchConfig, SearchError, Work, new_player};
use progress::Progress;

/// Why playing failed.
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    /// The engine failed.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// A computer player failed.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// The engine could not be built.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A match record that does not fit the game.
    #[error("match record: {0}")]
    Record(String),
}

impl PlayError {
    /// Whether the rule sheet is at fault (a role with no legal move, an undefined goal, a
    /// budget the game outgrows, a game that cannot be loaded), rather than the program.
    pub fn is_the_rules_fault(&self) -> bool {
        let machine = match self {
            PlayError::Machine(e) | PlayError::Search(SearchError::Machine(e)) => e,
            PlayError::Load(_) => return true,
            PlayError::Search(SearchError::NoMove) | PlayError::Record(_) => return false,
        };
        matches!(
            machine,
            MachineError::NoLegalMoves { .. }
                | MachineError::BadGoal { .. }
                | MachineError::Engine(EngineFailure::Eval(_))
        )
    }
}

/// How strong a computer seat plays.
///
/// | level | what the computer does for each move |
/// |---|---|
/// | `random` | a uniformly random legal move, at once |
/// | `easy` | alpha-beta with 1,000 nodes or MCTS with 100 playouts (at most 5 s) |
/// | `medium` | alpha-beta with 20,000 nodes or MCTS with 1,000 playouts (at most 10 s) |
/// | `hard` | alpha-beta with 100,000 nodes or MCTS with 10,000 playouts (at most 20 s) |
/// | a number `S` | Monte Carlo tree search for `S` seconds, as many playouts as fit |
///
/// Which search plays is decided per game without a clock ([`LevelBudget`]): alpha-beta in a
/// two-player turn-taking constant-sum game where material is found, MCTS elsewhere.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// A random legal move.
    Random,
    /// 1,000 nodes or 100 playouts.
    Easy,
    /// 20,000 nodes or 1,000 playouts.
    Medium,
    /// 100,000 nodes or 10,000 playouts.
    Hard,
    /// A think time in seconds.
    Seconds(f64),
}

impl Level {
    /// The player kind, search limits and time allowed per move.
    pub fn budget(self) -> (PlayerKind, Option<LevelBudget>, Duration) {
        let limits = |playouts, nodes| Some(LevelBudget { playouts, nodes });
        match self {
            Level::Random => (PlayerKind::Random, None, Duration::ZERO),
            Level::Easy => (PlayerKind::Auto, limits(100, 1_000), Duration::from_secs(5)),
            Level::Medium => (
                PlayerKind::Auto,
                limits(1_000, 20_000),
                Duration::from_secs(10),
            ),
            Level::Hard => (
                PlayerKind::Auto,
                limits(10_000, 100_000),
                Duration::from_secs(20),
            ),
            Level::Seconds(s) => (PlayerKind::Mcts, None, Duration::from_secs_f64(s)),
        }
    }

    /// A new player at this level, seeded; it adds its work (playouts or positions, see
    /// [`Player::work`]) to `progress` as it goes.
    pub fn player<M>(self, seed: u64, progress: Option<Arc<AtomicU64>>) -> Box<dyn Player<M>>
    where
        M: StateMachine + Send + 'static,
    {
        let (kind, limits, _) = self.budget();
        let threads = match self {
            Level::Hard | Level::Seconds(_) => {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            }
            _ => 1,
        };
        let config = SearchConfig {
            threads,
            seed,
            max_iterations: None,
            progress,
        };
        match limits {
            Some(budget) => Box::new(AutoPlayer::with_budget(config, budget)),
            None => new_player(kind, &config),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Random => f.write_str("random"),
            Level::Easy => f.write_str("easy"),
            Level::Medium => f.write_str("medium"),
            Level::Hard => f.write_str("hard"),
            Level::Seconds(s) => write!(f, "{s}"),
        }
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Level, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "random" => Ok(Level::Random),
            "easy" => Ok(Level::Easy),
            "medium" => Ok(Level::Medium),
            "hard" => Ok(Level::Hard),
            other => match other.parse::<f64>() {
                Ok(x) if x > 0.0 && x <= 3600.0 => Ok(Level::Seconds(x)),
                _ => Err(format!(
                    "unknown level {s:?}: use random, easy, medium, hard or a number of seconds"
                )),
            },
        }
    }
}

/// Who plays a role.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seat {
    /// A person, who types or clicks.
    Human,
    /// The computer, at a level.
    Computer(Level),
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seat::Human => f.write_str("human"),
            Seat::Computer(level) => write!(f, "computer ({level})"),
        }
    }
}

/// A legal move with its term and what it does on the board.
#[derive(Debug, Clone)]
pub struct MoveInfo<Mv> {
    /// The move.
    pub mv: Mv,
    /// The move as a term.
    pub term: Term,
    /// The squares it empties and fills (none for games without a board).
    pub change: Change,
    /// How a person writes it: SAN for a chess sheet (`Nf3`, `O-O`, `exd5+`), else the
    /// squares that name it alone (`e2e4`, `d1`); see [`notation`].
    pub notation: Option<String>,
    /// What it does as a chess move, on a chess sheet.
    pub shape: Option<MoveShape>,
}

/// One role's move in the history, as a person writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ply {
    /// The step it was played at (from 0).
    pub step: usize,
    /// The role that played it.
    pub role: usize,
    /// SAN, squares or the term (see [`notation`]).
    pub text: String,
}

/// Why typed text is not a move.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Nothing was typed.
    #[error("type a move")]
    Empty,
    /// A number outside the list.
    #[error("there is no move number {0}: choose 1 to {1}")]
    BadNumber(usize, usize),
    /// Several moves fit.
    #[error("{0} could be any of: {1}; choose one by its number")]
    Ambiguous(String, String),
    /// Nothing fits.
    #[error("{0} is not a legal move here (type a move such as {1}, its number, or `help`)")]
    NotLegal(String, String),
}

/// A sort key for a printed term that orders its numbers by value: `(drop 2)` before
/// `(drop 10)`.
fn natural_key(text: &str) -> Vec<(u64, String)> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .map(|w| match w.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (u64::MAX, w.to_string()),
        })
        .collect()
}

/// A match in progress.
pub struct Game<M: StateMachine> {
    machine: M,
    layout: Option<Layout>,
    seats: Vec<Seat>,
    players: Vec<Option<Box<dyn Player<M>>>>,
    states: Vec<M::State>,
    moves: Vec<Vec<M::Move>>,
    state_times: Vec<u64>,
    start_time: u64,
    match_id: String,
    random_token: String,
    rulesheet: String,
    seed: u64,
    /// The move infos last computed: step, role, infos.
    infos: Option<InfoCache<M::Move>>,
    /// The game seen as chess, on a chess sheet.
    chess: Option<notation::ChessView>,
    /// The chess position after each step so far (computed on demand; `None` from where the
    /// sheet left chess).
    positions: Vec<Option<shakmaty::Chess>>,
    /// The moves of each step so far as people write them (computed on demand).
    plies: Vec<Vec<Ply>>,
    /// The work of the computer players (and hints), counted as they search.
    progress: Progress,
    /// In a GDL-II game, per role, what it knows, for the roles that need it: the viewer (see
    /// [`Game::viewer`]) and every computer seat whose player searches.
    views: Vec<Option<RoleView<M::State, M::Move>>>,
    /// The role whose view people are shown (see [`Game::viewer`]).
    viewer: Option<usize>,
}

/// What one role of a GDL-II game knows: its belief (the states consistent with its moves and
/// percepts) per state so far, and what it saw per step; for the viewer, the facts shown; for
/// a computer seat, the search that chooses over the belief.
struct RoleView<S, Mv> {
    /// Per state so far, the role's belief (kept for taking moves back).
    beliefs: Vec<Belief<S, Mv>>,
    /// Per state so far, the facts shown to people (the viewer's only; see
    /// [`Game::facts_at`]).
    known: Vec<Vec<Term>>,
    /// Per step so far, the role's percepts after it.
    percepts: Vec<Vec<Term>>,
    /// A computer seat's player, which never looks at the true state.
    search: Option<HiddenPlayer>,
}

/// Most states of a role's belief in `ggp play` and `ggp web`.
const VIEW_BELIEF: usize = 256;
/// Time allowed to follow one step in a role's belief when the bounded update finds no state
/// consistent with what the role saw (the belief is then lost, and a guess is kept).
const VIEW_LOST_UPDATE: Duration = Duration::from_secs(3);

type InfoCache<Mv> = (usize, usize, Vec<MoveInfo<Mv>>);

/// On a hexagon board, finds what each side connects from random games played to their end
/// (see [`Layout::find_joins`]).
fn find_joins<M: StateMachine>(
    layout: Option<&mut Layout>,
    machine: &mut M,
    seed: u64,
) -> Result<(), MachineError> {
    if let Some(layout) = layout
        && matches!(layout.grid(), Grid::Hex { .. })
    {
        let ends = sample_ends(machine, seed, JOIN_GAMES, JOIN_TIME)?;
        layout.find_joins(&ends);
    }
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl<M: StateMachine + Send + 'static> Game<M> {
    /// A new match from the initial state. `rules` and `rulesheet` are the game's (the rules
    /// help order the board's axes; the text goes into saved records). One seat per role.
    ///
    /// # Errors
    /// The engine failed while sampling states for the board, or the seats do not match the
    /// roles.
    pub fn new(
        mut machine: M,
        rules: &[Rule],
        rulesheet: &str,
        seats: Vec<Seat>,
        seed: u64,
    ) -> Result<Game<M>, PlayError> {
        if seats.len() != machine.roles().len() {
            return Err(PlayError::Record(format!(
                "{} seats for {} roles",
                seats.len(),
                machine.roles().len()
            )));
        }
        let samples = sample_states(&mut machine, seed)?;
        let mut layout = Layout::detect(&samples, rules);
        find_joins(layout.as_mut(), &mut machine, seed)?;
        let chess = notation::ChessView::detect(&machine);
        let initial = machine.initial_state();
        let start_time = now_ms();
        let mut game = Game {
            machine,
            layout,
            seats: Vec::new(),
            players: Vec::new(),
            states: vec![initial],
            moves: Vec::new(),
            state_times: vec![start_time],
            start_time,
            match_id: format!("ggp.play.{start_time}"),
            random_token: random_token(&mut rand::rng()),
            rulesheet: rulesheet.to_string(),
            seed,
            infos: None,
            chess,
            positions: Vec::new(),
            plies: Vec::new(),
            progress: Progress::new(),
            views: Vec::new(),
            viewer: None,
        };
        game.set_seats(seats)?;
        Ok(game)
    }

    /// Draws the board from relation `name` (as a display description may ask), when the
    /// sampled states show a board of that relation; true when they do. The board is
    /// otherwise kept.
    ///
    /// # Errors
    /// The engine failed while sampling states.
    pub fn use_board_relation(&mut self, rules: &[Rule], name: &str) -> Result<bool, PlayError> {
        let samples = sample_states(&mut self.machine, self.seed)?;
        let Some(mut layout) = Layout::detect_in(&samples, rules, |rel| rel.name() == name) else {
            return Ok(false);
        };
        find_joins(Some(&mut layout), &mut self.machine, self.seed)?;
        for state in &self.states {
            layout.include(&self.machine.state_terms(state));
        }
        self.layout = Some(layout);
        self.infos = None;
        self.plies.clear();
        Ok(true)
    }

    /// Changes who plays each role (new computer players start fresh).
    ///
    /// # Errors
    /// The wrong number of seats, or a player failed to start.
    pub fn set_seats(&mut self, seats: Vec<Seat>) -> Result<(), PlayError> {
        if seats.len() != self.roles().len() {
            return Err(PlayError::Record(format!(
                "{} seats for {} roles",
                seats.len(),
                self.roles().len()
            )));
        }
        self.players = Vec::new();
        for (role, seat) in seats.iter().enumerate() {
            let player = match seat {
                Seat::Human => None,
                Seat::Computer(level) => {
                    let mut p = level.player(
                        self.seed.wrapping_add(role as u64),
                        Some(self.progress.counter()),
                    );
                    p.start(&mut self.machine, role, Instant::now())?;
                    Some(p)
                }
            };
            self.players.push(player);
        }
        self.seats = seats;
        self.reset_view();
        Ok(())
    }

    /// The role whose view people are shown, in a GDL-II game (with `sees` or `random`) in
    /// which exactly one seat is a person's: they then see only what that role knows (see
    /// [`Game::facts_at`]), its own moves and its percepts, never the hidden state. `None`
    /// (everything shown) in a game of complete information, a game the computer plays alone,
    /// or several people at one screen (who would see each other's view anyway).
    pub fn viewer(&self) -> Option<usize> {
        self.viewer
    }

    /// What the viewer saw after the last joint move (empty without a viewer).
    pub fn percepts(&self) -> &[Term] {
        self.viewer
            .and_then(|v| self.views.get(v))
            .and_then(Option::as_ref)
            .and_then(|v| v.percepts.last())
            .map_or(&[], Vec::as_slice)
    }

    /// Rebuilds the roles' beliefs from the start of the match: in a GDL-II game, the
    /// viewer's and those of the computer seats that search.
    fn reset_view(&mut self) {
        self.views = Vec::new();
        self.viewer = None;
        if !self.machine.is_gdl2() {
            return;
        }
        let humans: Vec<usize> = (0..self.seats.len())
            .filter(|&r| self.seats[r] == Seat::Human)
            .collect();
        if let [role] = humans[..] {
            self.viewer = Some(role);
        }
        for role in 0..self.seats.len() {
            let search = match (&self.seats[role], &self.players[role]) {
                (Seat::Computer(level), Some(player)) => HiddenPlayer::for_player(
                    &**player,
                    self.hidden_config(*level, self.seed.wrapping_add(role as u64)),
                ),
                _ => None,
            };
            let view = (self.viewer == Some(role) || search.is_some()).then(|| {
                let belief = Belief::new(&self.machine, role, VIEW_BELIEF);
                let known = if self.viewer == Some(role) {
                    belief.known_facts(&self.machine)
                } else {
                    Vec::new()
                };
                RoleView {
                    beliefs: vec![belief],
                    known: vec![known],
                    percepts: Vec::new(),
                    search,
                }
            });
            self.views.push(view);
        }
        for step in 0..self.moves.len() {
            self.follow_views(step);
        }
    }

    /// Moves the roles' beliefs on by step `step` (each role's own move and what it saw).
    fn follow_views(&mut self, step: usize) {
        for role in 0..self.views.len() {
            let Some(mut view) = self.views[role].take() else {
                continue;
            };
            self.follow_view(&mut view, role, step);
            self.views[role] = Some(view);
        }
    }

    /// Moves `role`'s belief on by step `step`. For the viewer, the facts shown after it are
    /// those it knows (true in every state of its belief) that it saw come about: shown
    /// before, or known to be false before (a tile it was dealt, a placement it saw). A fact
    /// it knows only by elimination (the other hand, once every other tile is accounted for)
    /// is not shown, nor a fact that a sampled or lost belief holds in every state by chance
    /// unless it was known false before; and never a fact that is false (a lost belief's
    /// guess).
    fn follow_view(&mut self, view: &mut RoleView<M::State, M::Move>, role: usize, step: usize) {
        let (state, joint) = (&self.states[step], &self.moves[step]);
        let percepts = match self.machine.percepts(state, joint, role) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("percepts of {}: {e}", self.machine.roles()[role]);
                Vec::new()
            }
        };
        let mv = self.machine.move_term(joint[role]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ step as u64);
        let before = view.beliefs.last().expect("one per state");
        // Without a deadline the update does a bounded amount of work, the same on a loaded
        // machine as on an idle one. An update cut short by a clock keeps a small sample, and
        // what a small sample holds in every state is not what the role knows: with 0.5 s, a
        // loaded machine cut Dominup's deal short and the view showed a tile of another hand.
        let mut belief = before.clone();
        let mut updated = belief.update(&mut self.machine, &mv, &percepts, None, &mut rng);
        if matches!(updated, Err(BeliefError::Inconsistent)) {
            belief = before.clone();
            let deadline = Some(Instant::now() + VIEW_LOST_UPDATE);
            updated = belief.update(&mut self.machine, &mv, &percepts, deadline, &mut rng);
        }
        if let Err(e) = &updated {
            tracing::warn!(
                "cannot follow what {} knows: {e}",
                self.machine.roles()[role]
            );
        }
        let known = if self.viewer == Some(role) && updated.is_ok() {
            let possible: HashSet<Term> = before
                .states()
                .iter()
                .flat_map(|(s, _)| self.machine.state_terms(s))
                .collect();
            let shown: HashSet<&Term> = view.known.last().into_iter().flatten().collect();
            let truth: HashSet<Term> = self
                .machine
                .state_terms(&self.states[step + 1])
                .into_iter()
                .collect();
            belief
                .known_facts(&self.machine)
                .into_iter()
                .filter(|f| truth.contains(f) && (shown.contains(f) || !possible.contains(f)))
                .collect()
        } else {
            Vec::new()
        };
        view.beliefs.push(belief);
        view.known.push(known);
        view.percepts.push(percepts);
    }

    /// The configuration of the information-set search of a computer seat at `level`: the
    /// level's playout limit, the game's progress counter.
    fn hidden_config(&self, level: Level, seed: u64) -> SearchConfig {
        SearchConfig {
            seed,
            max_iterations: level.budget().1.map(|b| b.playouts),
            progress: Some(self.progress.counter()),
            ..SearchConfig::default()
        }
    }

    /// The engine.
    pub fn machine(&mut self) -> &mut M {
        &mut self.machine
    }

    /// The roles.
    pub fn roles(&self) -> &[Term] {
        self.machine.roles()
    }

    /// Who plays each role.
    pub fn seats(&self) -> &[Seat] {
        &self.seats
    }

    /// The board, if the game has one.
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }

    /// The current state.
    pub fn state(&self) -> &M::State {
        self.states
            .last()
            .expect("a game always has its initial state")
    }

    /// Moves made so far.
    pub fn step(&self) -> usize {
        self.moves.len()
    }

    /// The facts of the current state that people may see: all of them, or with a
    /// [`viewer`](Game::viewer) only those it knows.
    pub fn facts(&self) -> Vec<Term> {
        self.facts_at(self.step())
    }

    /// The facts of the state after `step` moves that people may see (as [`Game::facts`]):
    /// with a viewer, those it knows and saw come about (see `follow_view`).
    pub fn facts_at(&self, step: usize) -> Vec<Term> {
        match self.viewer.and_then(|v| self.views[v].as_ref()) {
            Some(view) => view.known.get(step).cloned().unwrap_or_default(),
            None => self.machine.state_terms(&self.states[step]),
        }
    }

    /// The joint moves made, as terms.
    pub fn move_terms(&self) -> Vec<Vec<Term>> {
        self.moves
            .iter()
            .map(|joint| joint.iter().map(|m| self.machine.move_term(*m)).collect())
            .collect()
    }

    /// The moves that led to the current state, for the roles that had a choice then (every
    /// role when none had), as (role, term).
    ///
    /// # Errors
    /// The engine failed.
    pub fn last_moves(&mut self) -> Result<Vec<(usize, Term)>, PlayError> {
        let Some(joint) = self.moves.last().cloned() else {
            return Ok(Vec::new());
        };
        let before = self.states[self.states.len() - 2].clone();
        let mut out = Vec::new();
        for (role, mv) in joint.iter().enumerate() {
            if self.machine.legal_moves(&before, role)?.len() > 1 {
                out.push((role, self.machine.move_term(*mv)));
            }
        }
        if out.is_empty() {
            out = joint
                .iter()
                .enumerate()
                .map(|(role, mv)| (role, self.machine.move_term(*mv)))
                .collect();
        }
        if let Some(viewer) = self.viewer() {
            // The others' moves are hidden; the viewer learns of them by its percepts.
            out = vec![(viewer, self.machine.move_term(joint[viewer]))];
        }
        Ok(out)
    }

    /// Whether the game is over.
    ///
    /// # Errors
    /// The engine failed.
    pub fn is_terminal(&mut self) -> Result<bool, PlayError> {
        let state = self.state().clone();
        Ok(self.machine.is_terminal(&state)?)
    }

    /// Every role's goal value in the current state.
    ///
    /// # Errors
    /// The engine failed or a goal is undefined.
    pub fn goals(&mut self) -> Result<Vec<u8>, PlayError> {
        let state = self.state().clone();
        Ok(self.machine.goals(&state)?)
    }

    /// The legal moves of `role` now, in the order of their terms, so that the numbered list
    /// a person sees does not depend on the engine.
    ///
    /// # Errors
    /// The engine failed.
    pub fn legal(&mut self, role: usize) -> Result<Vec<M::Move>, PlayError> {
        let state = self.state().clone();
        self.sorted_legal(&state, role)
    }

    /// The legal moves of `role` in `state`, in the order of their terms.
    fn sorted_legal(&mut self, state: &M::State, role: usize) -> Result<Vec<M::Move>, PlayError> {
        let mut moves = self.machine.legal_moves(state, role)?;
        moves.sort_by_cached_key(|&mv| natural_key(&self.machine.move_term(mv).to_string()));
        Ok(moves)
    }

    /// The roles with a real choice now (more than one legal move), in role order; when no
    /// role has one, every role (so that forced moves are still shown).
    ///
    /// # Errors
    /// The engine failed.
    pub fn to_move(&mut self) -> Result<Vec<usize>, PlayError> {
        let mut out = Vec::new();
        for role in 0..self.roles().len() {
            if self.legal(role)?.len() > 1 {
                out.push(role);
            }
        }
        if out.is_empty() {
            out = (0..self.roles().len()).collect();
        }
        Ok(out)
    }

    /// The legal moves of `role` now with their terms, board changes and notations.
    ///
    /// # Errors
    /// The engine failed.
    pub fn move_infos(&mut self, role: usize) -> Result<&[MoveInfo<M::Move>], PlayError> {
        let fresh = matches!(&self.infos, Some((step, r, _)) if *step == self.step() && *r == role);
        if !fresh {
            let infos = self.compute_infos(role)?;
            self.infos = Some((self.step(), role, infos));
        }
        Ok(&self.infos.as_ref().expect("just filled").2)
    }

    fn compute_infos(&mut self, role: usize) -> Result<Vec<MoveInfo<M::Move>>, PlayError> {
        self.infos_at(self.step(), role)
    }

    /// The legal moves of `role` after `step` moves, with their terms, board changes, chess
    /// shapes and notations.
    fn infos_at(&mut self, step: usize, role: usize) -> Result<Vec<MoveInfo<M::Move>>, PlayError> {
        let state = self.states[step].clone();
        let legal = self.sorted_legal(&state, role)?;
        let mut others = Vec::new();
        for r in 0..self.roles().len() {
            others.push(self.machine.legal_moves(&state, r)?.first().copied());
        }
        let before_facts = self.machine.state_terms(&state);
        let chess_before = self.chess.as_ref().and_then(|c| c.snapshot(&before_facts));
        let position = match chess_before {
            Some(_) => self.position_at(step)?,
            None => None,
        };
        // The facts after each move, when the board or chess needs them.
        let mut nexts = Vec::with_capacity(legal.len());
        for &mv in &legal {
            let joint: Option<Vec<M::Move>> = others
                .iter()
                .enumerate()
                .map(|(r, m)| if r == role { Some(mv) } else { *m })
                .collect();
            let next = match joint {
                Some(joint) if self.layout.is_some() || chess_before.is_some() => {
                    let next = self.machine.next_state_unchecked(&state, &joint)?;
                    Some(self.machine.state_terms(&next))
                }
                _ => None,
            };
            nexts.push(next);
        }
        // Every square a legal move fills is on the board, seen before or not; a widened
        // board renumbers squares, so the moves cached for it are dropped.
        if let Some(layout) = &mut self.layout {
            let mut widened = false;
            for next in nexts.iter().flatten() {
                widened |= layout.include(next);
            }
            if widened {
                self.infos = None;
            }
        }
        let before = self.layout.as_ref().map(|l| l.cells(&before_facts));
        let mut infos = Vec::new();
        for (mv, next) in legal.into_iter().zip(nexts) {
            let mut change = Change::default();
            let mut shape = None;
            if let Some(next) = next {
                if let (Some(layout), Some(before)) = (&self.layout, &before) {
                    change = layout.change(before, &layout.cells(&next));
                }
                if let (Some(chess), Some(before)) = (&self.chess, &chess_before)
                    && let (Some(turn), Some(after)) = (before.turn, chess.snapshot(&next))
                    && chess.color(role) == Some(turn)
                {
                    shape = MoveShape::from_boards(&before.board, &after.board, turn).ok();
                }
            }
            infos.push(MoveInfo {
                mv,
                term: self.machine.move_term(mv),
                change,
                notation: None,
                shape,
            });
        }
        for i in 0..infos.len() {
            infos[i].notation = match (&infos[i].shape, &self.layout) {
                (Some(shape), _) => Some(notation::san(position.as_ref(), shape)),
                (None, Some(layout)) => notation(layout, &infos, i),
                (None, None) => None,
            };
        }
        Ok(infos)
    }

    /// The chess position after `step` moves, on a chess sheet whose moves so far were chess
    /// moves.
    fn position_at(&mut self, step: usize) -> Result<Option<shakmaty::Chess>, PlayError> {
        let Some(chess) = self.chess.clone() else {
            return Ok(None);
        };
        if self.positions.is_empty() {
            self.positions.push(Some(shakmaty::Chess::default()));
        }
        while self.positions.len() <= step {
            let k = self.positions.len() - 1;
            let next = match &self.positions[k] {
                Some(pos) => {
                    let before = chess.snapshot(&self.facts_at(k));
                    let after = chess.snapshot(&self.facts_at(k + 1));
                    match (before, after) {
                        (Some(b), Some(a)) => chess.follow(pos, &b, &a),
                        _ => None,
                    }
                }
                None => None,
            };
            self.positions.push(next);
        }
        Ok(self.positions[step].clone())
    }

    /// Every move played so far by a role that had a choice (every role's when none had),
    /// step by step, as people write them: SAN with `+`/`#` for a chess sheet, squares for
    /// other board games, else the move term.
    ///
    /// # Errors
    /// The engine failed.
    pub fn history(&mut self) -> Result<Vec<Ply>, PlayError> {
        while self.plies.len() < self.step() {
            let step = self.plies.len();
            let joint = self.moves[step].clone();
            let state = self.states[step].clone();
            let mut choosers = Vec::new();
            for role in 0..joint.len() {
                if self.machine.legal_moves(&state, role)?.len() > 1 {
                    choosers.push(role);
                }
            }
            if choosers.is_empty() {
                // Nobody had a choice (a forced reply): the roles whose move is not the one
                // they make while another role moves (a `noop`), else every role.
                for (role, &mv) in joint.iter().enumerate() {
                    if !self.waits_with(step, role, mv)? {
                        choosers.push(role);
                    }
                }
                if choosers.is_empty() {
                    choosers = (0..joint.len()).collect();
                }
            }
            if let Some(viewer) = self.viewer() {
                choosers = vec![viewer];
            }
            let mut plies = Vec::new();
            let options: Vec<usize> = (0..joint.len())
                .map(|r| self.machine.legal_moves(&state, r).map(|l| l.len()))
                .collect::<Result<_, _>>()?;
            for role in choosers {
                // A role's only move while another chose (the viewer's `noop` in a GDL-II
                // history) changed nothing of its own: its term, not the squares the other
                // role's move would fill.
                let waited = options[role] == 1 && options.iter().any(|&n| n > 1);
                let infos = if waited {
                    Vec::new()
                } else {
                    self.infos_at(step, role)?
                };
                let text = match infos.iter().find(|i| i.mv == joint[role]) {
                    Some(MoveInfo {
                        notation: Some(n), ..
                    }) => n.clone(),
                    _ => spaced(&term_to_sexp(&self.machine.move_term(joint[role]))),
                };
                plies.push(Ply { step, role, text });
            }
            self.plies.push(plies);
        }
        Ok(self.plies.concat())
    }

    /// Whether `mv` is what `role` plays while another role chooses, at a step up to four
    /// before or after `step`: its only legal move there while another role has several.
    fn waits_with(&mut self, step: usize, role: usize, mv: M::Move) -> Result<bool, PlayError> {
        let near = (1..=4).flat_map(|d| [step.checked_sub(d), Some(step + d)]);
        for near in near.flatten() {
            let Some(state) = self.states.get(near).cloned() else {
                continue;
            };
            if self.machine.is_terminal(&state)? {
                continue;
            }
            if self.machine.legal_moves(&state, role)? != [mv] {
                continue;
            }
            for other in 0..self.roles().len() {
                if other != role && self.machine.legal_moves(&state, other)?.len() > 1 {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// What ended the game, in words, when it is over and that can be known: checkmate,
    /// stalemate, the 50-move rule, a dead position or the step limit on a chess sheet; a
    /// line such as `four in a row` when the winner's last placement made one (see
    /// [`Game::winning_line`]).
    ///
    /// # Errors
    /// The engine failed.
    pub fn ending(&mut self) -> Result<Option<String>, PlayError> {
        if !self.is_terminal()? {
            return Ok(None);
        }
        if self.chess.is_some() {
            let step = self.step();
            let position = self.position_at(step)?;
            return Ok(match (&self.chess, position) {
                (Some(chess), Some(pos)) => chess.ending(&pos, step),
                _ => None,
            });
        }
        Ok(self
            .winning_line()?
            .map(|line| notation::line_name(line.len())))
    }

    /// The straight line of three or more equal pieces that the sole winner's last placement
    /// (a move that only filled squares) completed, when the game is over; found on the board
    /// alone.
    ///
    /// # Errors
    /// The engine failed.
    pub fn winning_line(&mut self) -> Result<Option<Vec<Square>>, PlayError> {
        if self.step() == 0 || !self.is_terminal()? {
            return Ok(None);
        }
        let goals = self.goals()?;
        let best = goals.iter().copied().max().unwrap_or(0);
        if goals.iter().filter(|&&g| g == best).count() != 1 {
            return Ok(None);
        }
        let Some(layout) = &self.layout else {
            return Ok(None);
        };
        let step = self.step();
        let before = layout.cells(&self.facts_at(step - 1));
        let after = layout.cells(&self.facts_at(step));
        let change = layout.change(&before, &after);
        if !change.from.is_empty() {
            return Ok(None);
        }
        Ok(notation::line_through(layout, &after, &change.placed))
    }

    /// The count every computer search of this game adds its work to as it goes, and what
    /// the search under way counts (for a progress display: reset it, search, read it from
    /// another thread meanwhile).
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// What computer seat `role`'s search counts (playouts for a person's seat, whose hint
    /// search is only chosen when asked for).
    pub fn work_of(&self, role: usize) -> Work {
        let hidden = self
            .views
            .get(role)
            .is_some_and(|v| v.as_ref().is_some_and(|v| v.search.is_some()));
        match self.players.get(role) {
            Some(Some(player)) if !hidden => player.work(),
            _ => Work::Playouts,
        }
    }

    /// The chess position now, on a chess sheet whose moves so far were chess moves.
    ///
    /// # Errors
    /// The engine failed.
    pub fn chess_position(&mut self) -> Result<Option<shakmaty::Chess>, PlayError> {
        self.position_at(self.step())
    }

    /// The colour `role` plays, on a chess sheet.
    pub fn chess_color(&self, role: usize) -> Option<shakmaty::Color> {
        self.chess.as_ref().and_then(|c| c.color(role))
    }

    /// The move of `role` that `text` names: a number in the legal list (from 1), a KIF term
    /// (the parentheses may be left out), on a chess sheet SAN or coordinates (see
    /// [`notation`]), or squares on the board (`e2e4`, `a1-b3`, `d3`, or a file alone such as
    /// `d` when one move drops into it).
    ///
    /// # Errors
    /// [`InputError`] saying why; the engine's failures are reported as not legal.
    pub fn resolve(&mut self, role: usize, text: &str) -> Result<M::Move, InputError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(InputError::Empty);
        }
        let layout = self.layout.clone();
        let Ok(infos) = self.move_infos(role) else {
            return Err(InputError::NotLegal(text.into(), String::new()));
        };
        let example = infos
            .first()
            .map(|i| i.term.to_string())
            .unwrap_or_default();
        if let Ok(n) = text.parse::<usize>() {
            return match infos.get(n.wrapping_sub(1)) {
                Some(info) => Ok(info.mv),
                None => Err(InputError::BadNumber(n, infos.len())),
            };
        }
        if infos.iter().any(|i| i.shape.is_some())
            && let Some(typed) = notation::ChessInput::parse(text)
        {
            let fits = |loose: bool| -> Vec<usize> {
                (0..infos.len())
                    .filter(|&i| infos[i].shape.is_some_and(|s| typed.fits(&s, loose)))
                    .collect()
            };
            let mut found = fits(false);
            if found.is_empty() {
                found = fits(true);
            }
            let name = |i: usize| {
                infos[i]
                    .notation
                    .clone()
                    .unwrap_or(infos[i].term.to_string())
            };
            return match found[..] {
                [one] => Ok(infos[one].mv),
                [] => Err(InputError::NotLegal(
                    text.into(),
                    if infos.is_empty() {
                        String::new()
                    } else {
                        name(0)
                    },
                )),
                _ => Err(InputError::Ambiguous(
                    text.into(),
                    found
                        .iter()
                        .map(|&i| format!("{}. {}", i + 1, name(i)))
                        .collect::<Vec<_>>()
                        .join(", "),
                )),
            };
        }
        for candidate in [text.to_string(), format!("({text})")] {
            if let Ok(term) = parse_term(&candidate) {
                if let Some(info) = infos.iter().find(|i| i.term == term) {
                    return Ok(info.mv);
                }
                let printed = term.to_string().to_lowercase();
                let same: Vec<_> = infos
                    .iter()
                    .filter(|i| i.term.to_string().to_lowercase() == printed)
                    .collect();
                if let [one] = same[..] {
                    return Ok(one.mv);
                }
            }
        }
        if let Some(layout) = &layout
            && let Some(typed) = layout.parse_squares(text)
        {
            let fits = matching(infos, typed);
            return match fits[..] {
                [one] => Ok(infos[one].mv),
                [] => Err(InputError::NotLegal(text.into(), example)),
                _ => Err(InputError::Ambiguous(
                    text.into(),
                    fits.iter()
                        .map(|&i| format!("{}. {}", i + 1, infos[i].term))
                        .collect::<Vec<_>>()
                        .join(", "),
                )),
            };
        }
        Err(InputError::NotLegal(text.into(), example))
    }

    /// The computer's choice for `role` at `level` now (a fresh player, as for a hint). In a
    /// GDL-II game, for a role whose belief is kept (the viewer's), it searches that belief,
    /// never the true state.
    ///
    /// # Errors
    /// The engine or the search failed.
    pub fn suggest(&mut self, role: usize, level: Level) -> Result<Choice<M::Move>, PlayError> {
        let seed = self.seed.wrapping_add(1000 + self.step() as u64);
        let deadline = Instant::now() + level.budget().2;
        let mut player = level.player::<M>(seed, Some(self.progress.counter()));
        player.start(&mut self.machine, role, Instant::now())?;
        if let Some(Some(view)) = self.views.get(role) {
            let belief = view.beliefs.last().expect("one per state").clone();
            let mut search = HiddenPlayer::for_player(&*player, self.hidden_config(level, seed));
            self.progress.set_work(Work::Playouts);
            return Ok(choose_for_seat(
                &mut self.machine,
                &mut *player,
                search.as_mut(),
                &belief,
                None,
                deadline,
            )?);
        }
        self.progress.set_work(player.work());
        let state = self.state().clone();
        Ok(player.choose(&mut self.machine, &state, deadline)?)
    }

    /// The move of computer seat `role` now; `None` for a human seat. In a GDL-II game a
    /// searching player chooses over its role's belief and never reads the true state; if its
    /// choice is not legal after all (a lost belief's guess), it is replaced by a random legal
    /// move, as a referee does.
    ///
    /// # Errors
    /// The engine or the search failed.
    pub fn computer_move(&mut self, role: usize) -> Result<Option<Choice<M::Move>>, PlayError> {
        let Seat::Computer(level) = self.seats[role] else {
            return Ok(None);
        };
        let deadline = Instant::now() + level.budget().2;
        if let Some(Some(view)) = self.views.get_mut(role)
            && view.search.is_some()
        {
            let belief = view.beliefs.last().expect("one per state");
            let player = self.players[role]
                .as_mut()
                .expect("computer seats have players");
            self.progress.set_work(Work::Playouts);
            let mut choice = choose_for_seat(
                &mut self.machine,
                &mut **player,
                view.search.as_mut(),
                belief,
                None,
                deadline,
            )?;
            let state = self.state().clone();
            let legal = self.machine.legal_moves(&state, role)?;
            if !legal.contains(&choice.mv) {
                tracing::warn!(
                    "{} chose {}, not legal: a random legal move instead",
                    self.machine.roles()[role],
                    self.machine.move_term(choice.mv)
                );
                let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed ^ self.step() as u64);
                choice.mv = *rand::seq::IndexedRandom::choose(legal.as_slice(), &mut rng)
                    .ok_or(SearchError::NoMove)?;
            }
            return Ok(Some(choice));
        }
        let state = self.state().clone();
        let player = self.players[role]
            .as_mut()
            .expect("computer seats have players");
        self.progress.set_work(player.work());
        Ok(Some(player.choose(&mut self.machine, &state, deadline)?))
    }

    /// Plays a joint move (one move per role), checking legality.
    ///
    /// # Errors
    /// An illegal move or the engine failed; the game is unchanged.
    pub fn play(&mut self, joint: Vec<M::Move>) -> Result<(), PlayError> {
        let state = self.state().clone();
        let next = self.machine.next_state(&state, &joint)?;
        if let Some(layout) = &mut self.layout {
            layout.include(&self.machine.state_terms(&next));
        }
        self.states.push(next);
        self.moves.push(joint);
        self.state_times.push(now_ms());
        self.follow_views(self.moves.len() - 1);
        Ok(())
    }

    /// Takes back the last joint move; false at the start.
    pub fn undo(&mut self) -> bool {
        if self.moves.is_empty() {
            return false;
        }
        self.moves.pop();
        self.states.pop();
        self.state_times.pop();
        self.positions.truncate(self.states.len());
        self.plies.truncate(self.moves.len());
        for view in self.views.iter_mut().flatten() {
            view.beliefs.pop();
            view.known.pop();
            view.percepts.pop();
        }
        true
    }

    /// Takes back moves until a human seat has a choice again (at least one move); false
    /// at the start.
    ///
    /// # Errors
    /// The engine failed.
    pub fn undo_turn(&mut self) -> Result<bool, PlayError> {
        if !self.undo() {
            return Ok(false);
        }
        while self.step() > 0 && !self.human_has_choice()? {
            self.undo();
        }
        Ok(true)
    }

    fn human_has_choice(&mut self) -> Result<bool, PlayError> {
        for role in 0..self.roles().len() {
            if self.seats[role] == Seat::Human && self.legal(role)?.len() > 1 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The match record of the game so far, in the ggp.org JSON format.
    ///
    /// # Errors
    /// The engine failed computing goals.
    pub fn record(&mut self) -> Result<MatchRecord, PlayError> {
        let completed = self.is_terminal()?;
        let goals = if completed {
            self.goals()?.into_iter().map(u32::from).collect()
        } else {
            Vec::new()
        };
        let states = self
            .states
            .iter()
            .map(|s| state_text(&self.machine.state_terms(s)))
            .collect();
        let moves = self
            .move_terms()
            .iter()
            .map(|joint| joint.iter().map(|t| spaced(&term_to_sexp(t))).collect())
            .collect();
        Ok(MatchRecord {
            match_id: self.match_id.clone(),
            random_token: self.random_token.clone(),
            game_rulesheet: Some(self.rulesheet.clone()),
            start_time: self.start_time,
            start_clock: 0,
            play_clock: 0,
            preview_clock: -1,
            states,
            moves,
            state_times: self.state_times.clone(),
            errors: vec![vec![String::new(); self.roles().len()]; self.states.len()],
            goal_values: goals,
            goal_faults: Vec::new(),
            game_meta_url: None,
            is_completed: completed,
            is_aborted: false,
            player_names_from_host: Some(
                self.seats
                    .iter()
                    .map(|s| match s {
                        Seat::Human => "human".to_string(),
                        Seat::Computer(level) => format!("ggp ({level})"),
                    })
                    .collect(),
            ),
            is_player_human: self.seats.iter().map(|s| *s == Seat::Human).collect(),
            scrambled: false,
            percepts: Vec::new(),
        })
    }

    /// Replays the moves of `record` from the initial state, checking each against the rules
    /// and, where the record has them, the states.
    ///
    /// # Errors
    /// A move that does not parse or is not legal, or a state that differs from the record's.
    pub fn resume(&mut self, record: &MatchRecord) -> Result<(), PlayError> {
        while self.undo() {}
        let expected = parse_states(&record.states).map_err(PlayError::Record)?;
        let check = |game: &Game<M>, step: usize| -> Result<(), PlayError> {
            if let Some(want) = expected.get(step) {
                let mut got = game.machine.state_terms(&game.states[step]);
                got.sort();
                if *want != got {
                    return Err(PlayError::Record(format!(
                        "state {step} in the record differs from the rules' state"
                    )));
                }
            }
            Ok(())
        };
        check(self, 0)?;
        let joints = record
            .joint_moves(&self.machine)
            .map_err(PlayError::Record)?;
        for (step, moves) in joints.into_iter().enumerate() {
            self.play(moves)
                .map_err(|e| PlayError::Record(format!("move {}: {e}", step + 1)))?;
            check(self, step + 1)?;
        }
        if record.start_time > 0 {
            self.start_time = record.start_time;
            self.match_id = record.match_id.clone();
            self.random_token = record.random_token.clone();
            for (i, time) in record
                .state_times
                .iter()
                .enumerate()
                .take(self.state_times.len())
            {
                self.state_times[i] = *time;
            }
        }
        Ok(())
    }
}

/// The result in words: who won, or a draw, then every role's goal value:
/// `red wins (red 100, yellow 0)`.
pub fn result_text(roles: &[Term], goals: &[u8]) -> String {
    if let ([role], [goal]) = (roles, goals) {
        return format!("{role} scores {goal}");
    }
    let scores: Vec<String> = roles
        .iter()
        .zip(goals)
        .map(|(r, g)| format!("{r} {g}"))
        .collect();
    let best = goals.iter().copied().max().unwrap_or(0);
    let winners: Vec<String> = roles
        .iter()
        .zip(goals)
        .filter(|(_, g)| **g == best)
        .map(|(r, _)| r.to_string())
        .collect();
    let verdict = if winners.len() == goals.len() {
        "draw".to_string()
    } else if winners.len() == 1 {
        format!("{} wins", winners[0])
    } else {
        format!("{} win", winners.join(" and "))
    };
    format!("{verdict} ({})", scores.join(", "))
}

/// The indexes of the moves that typed squares name. One square names the placements that
/// put a piece there, else (when none does) the moves that change its piece.
fn matching<Mv>(infos: &[MoveInfo<Mv>], typed: Typed) -> Vec<usize> {
    let fits = |info: &MoveInfo<Mv>, placing: bool| -> bool {
        let c = &info.change;
        match typed {
            Typed::FromTo(from, to) => c.from.contains(&from) && c.to.contains(&to),
            Typed::Square(square) if placing => c.from.is_empty() && c.placed.contains(&square),
            Typed::Square(square) => c.from.is_empty() && c.to.contains(&square),
            Typed::File(file) => {
                c.from.is_empty() && !c.to.is_empty() && c.to.iter().all(|s| s.file == file)
            }
        }
    };
    let placing: Vec<usize> = (0..infos.len())
        .filter(|&i| fits(&infos[i], true))
        .collect();
    if !placing.is_empty() {
        return placing;
    }
    (0..infos.len())
        .filter(|&i| fits(&infos[i], false))
        .collect()
}

/// The shortest squares that name move `i` alone: one square for a placement, from and to
/// squares for a move.
fn notation<Mv>(layout: &Layout, infos: &[MoveInfo<Mv>], i: usize) -> Option<String> {
    let change = &infos[i].change;
    let mut options = Vec::new();
    if change.from.is_empty() {
        options.extend(
            change
                .to
                .iter()
                .map(|&s| (Typed::Square(s), layout.square_name(s))),
        );
    }
    for &from in &change.from {
        for &to in &change.to {
            let text = format!("{}{}", layout.square_name(from), layout.square_name(to));
            options.push((Typed::FromTo(from, to), text));
        }
    }
    options
        .into_iter()
        .find(|(typed, _)| matching(infos, *typed) == [i])
        .map(|(_, text)| text)
}
