//! A state evaluation learnt at the start clock, for any game: candidate features measured in
//! the states of random games, kept only where they correlate with the outcome.
//!
//! **Candidates** ([`Measure`], switched by kind in [`Candidates`]), all found from the game
//! itself, never from its name:
//! - *piece or token counts*: a state's true facts grouped by functor and, when the last
//!   argument is a constant, by that constant too: `(cell 3 4 wq)` counts towards
//!   `(cell _ _ wq)` (a piece count on a board), `(control white)` towards `(control white)`;
//! - *mobility*: each role's number of legal moves (its natural log);
//! - *goal stability*: each role's goal value in the state itself (the highest the rules give
//!   there, 0 when none), kept when the current goal predicts the final one;
//! - *goal progress*: how nearly the state satisfies each role's highest goal, a fuzzy reading
//!   of the goal rules ([`StateMachine::goal_progress_into`]; the propnet reads its gates,
//!   other engines offer none).
//!
//! **Keeping.** Random games are played from the initial state (until the time given or a
//! game count); every state met is sampled with the game's final goal value for each role.
//! A candidate is kept when it varies and its Pearson correlation `r` with that goal over the
//! samples, within plies (see [`Moments`]), is significant: `|r| · sqrt(games) ≥` [`MIN_SIGMAS`] (states of one game are not
//! independent, so the games count, not the states). Random play hardly cares for material,
//! so the correlations are small (about 0.05 for the piece counts of breakthrough over 4,000
//! games) but their signs are right. With no kept feature, or too few samples, there is no
//! heuristic.
//!
//! **Value.** `50 + 50 · tanh(Σ r_i · z_i / Σ |r_i|)` on the 0..100 goal scale, where `z_i`
//! is the feature's standardised value and `r_i` its correlation: a weighted mean of the
//! standardised values, so that being one standard deviation ahead on every kept feature is
//! worth about 88.
//!
//! **Latches.** Facts proven by the engine to stay true (or false) once they are
//! ([`StateMachine::latches`]) can decide a goal before the game ends; an [`Evaluator`] made
//! [`proving`](Evaluator::proving) gives such a proven outcome instead of its estimate
//! ([`StateMachine::latched_goals_into`]). That is a proof, not a correlation: nothing is
//! learnt for it.

use std::time::Instant;

use rand::Rng;

use crate::gdl::{Sym, Term};
use crate::machine::{MachineError, StateMachine};

use super::{goal_or_zero, past};

/// The least significance of a kept feature's correlation, in standard errors
/// (`|r| · sqrt(games)`).
pub const MIN_SIGMAS: f64 = 3.0;
/// The fewest sampled states (and games) to learn from.
const MIN_SAMPLES: usize = 50;
const MIN_GAMES: usize = 10;
/// A random game longer than this is cut, and not sampled.
const MAX_GAME: usize = 1000;

/// A group of facts: functor and last constant argument.
type Key = (Sym, Option<Sym>);

/// What a candidate feature measures in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Measure {
    /// The number of true facts of a group (functor and last constant argument).
    Group(Sym, Option<Sym>),
    /// The natural log of a role's legal moves (0 with one move or none).
    Mobility(usize),
    /// A role's goal value in the state (the highest the rules give there, 0 when none).
    Goal(usize),
    /// How nearly the state satisfies a role's highest goal, 0 to 1.
    Progress(usize),
}

impl Measure {
    /// The measure's name, with role names from `roles` (numbers past its end).
    pub fn name(self, roles: &[Term]) -> String {
        let role = |k: usize| roles.get(k).map_or_else(|| k.to_string(), Term::to_string);
        match self {
            Measure::Group(f, c) => group_name((f, c)),
            Measure::Mobility(k) => format!("mobility of {}", role(k)),
            Measure::Goal(k) => format!("goal of {}", role(k)),
            Measure::Progress(k) => format!("goal progress of {}", role(k)),
        }
    }
}

/// Which kinds of candidate features learning tries (see the module documentation), and
/// whether evaluations give outcomes proven by latches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidates {
    /// Counts of fact groups.
    pub groups: bool,
    /// Each role's mobility.
    pub mobility: bool,
    /// Each role's current goal value (goal stability).
    pub goal: bool,
    /// Each role's goal progress.
    pub progress: bool,
    /// Outcomes proven by latches replace the estimate.
    pub latches: bool,
}

impl Candidates {
    /// Fact-group counts only (the features of earlier versions).
    pub const GROUPS: Candidates = Candidates {
        groups: true,
        mobility: false,
        goal: false,
        progress: false,
        latches: false,
    };
}

/// The default: fact-group counts only, as before the other kinds existed. Against it, in
/// MCTS (start 6 s, play 1 s, a loaded machine), mobility alone scored 17.5 of 52, goal and
/// progress 56 of 100 and goal, progress and latches 78.5 of 140; the gains came from reversi
/// (where the dearer learning kept no feature, so the search played full playouts instead of
/// a disc count) and dots and boxes, with losses elsewhere, so none of them is on by default.
impl Default for Candidates {
    fn default() -> Candidates {
        Candidates::GROUPS
    }
}

/// One kept feature.
#[derive(Debug, Clone)]
pub struct Feature {
    /// What it measures.
    pub measure: Measure,
    mean: f64,
    sd: f64,
    /// The correlation with our final goal.
    pub correlation: f64,
}

impl Feature {
    /// The measure's name with roles numbered, e.g. `(cell _ white)` or `mobility of 1`.
    pub fn group(&self) -> String {
        self.measure.name(&[])
    }
}

/// A learnt evaluation for one role.
#[derive(Debug, Clone)]
pub struct Heuristic {
    features: Vec<Feature>,
}

impl Heuristic {
    /// The kept features.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// The kept features and their correlations, e.g.
    /// `(cell _ black) -0.061, mobility of white +0.043`.
    pub fn describe(&self, roles: &[Term]) -> String {
        self.features
            .iter()
            .map(|f| format!("{} {:+.3}", f.measure.name(roles), f.correlation))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether a kept feature is some role's mobility.
    pub fn reads_mobility(&self) -> bool {
        self.features
            .iter()
            .any(|f| matches!(f.measure, Measure::Mobility(_)))
    }

    /// The sum of the kept correlations' sizes (the divisor inside the `tanh`).
    fn weight(&self) -> f64 {
        self.features
            .iter()
            .map(|f| f.correlation.abs())
            .sum::<f64>()
            .max(1e-9)
    }

    /// The estimated goal value of `state` for the role, 0 to 100 (the reference formula;
    /// [`Evaluator`] computes the same faster).
    ///
    /// # Errors
    /// The engine failed.
    pub fn value<M: StateMachine>(
        &self,
        machine: &mut M,
        state: &M::State,
    ) -> Result<f64, MachineError> {
        let counts = count(&machine.state_terms(state));
        let mut probe = Probe::default();
        let mut sum = 0.0;
        for f in &self.features {
            let x = match f.measure {
                Measure::Group(g, c) => f64::from(counts.get(&(g, c)).copied().unwrap_or(0)),
                m => probe.get(machine, state, m)?,
            };
            sum += f.correlation * (x - f.mean) / f.sd;
        }
        Ok(50.0 + 50.0 * (sum / self.weight()).tanh())
    }
}

/// Per role, the natural log of its legal moves in `state` (0 with one move or none), into
/// `out` (cleared first): mobility as the learnt heuristics and alpha-beta read it.
///
/// # Errors
/// The engine failed.
pub fn log_mobility<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    out: &mut Vec<f64>,
) -> Result<(), MachineError> {
    per_role(machine, out, |m, r| {
        let n = m.legal_moves(state, r)?.len();
        Ok(if n > 1 { (n as f64).ln() } else { 0.0 })
    })
}

/// Writes `f(machine, role)` for every role into `out` (cleared first).
///
/// # Errors
/// `f` failed.
pub(crate) fn per_role<M: StateMachine>(
    machine: &mut M,
    out: &mut Vec<f64>,
    mut f: impl FnMut(&mut M, usize) -> Result<f64, MachineError>,
) -> Result<(), MachineError> {
    out.clear();
    for r in 0..machine.roles().len() {
        out.push(f(machine, r)?);
    }
    Ok(())
}

/// The latches the engine proves (see [`StateMachine::latches`]), summed up for a log line:
/// how many stay true and false, with a few examples.
pub fn describe_latches<M: StateMachine>(machine: &M) -> String {
    let latches = machine.latches();
    if latches.is_empty() {
        return "none".into();
    }
    let of = |want_true: bool| {
        let facts: Vec<&Term> = latches
            .iter()
            .filter(|l| if want_true { l.1 } else { l.2 })
            .map(|l| &l.0)
            .collect();
        let shown: Vec<String> = facts.iter().take(3).map(|t| t.to_string()).collect();
        let more = if facts.len() > 3 { ", ..." } else { "" };
        (facts.len(), format!("{}{more}", shown.join(", ")))
    };
    let (t, ts) = of(true);
    let (f, fs) = of(false);
    format!("{t} stay true ({ts}), {f} stay false ({fs})")
}

/// The scalar measures of one state (all but groups), each kind computed once when first
/// asked for.
#[derive(Default)]
struct Probe {
    mobility: Option<Vec<f64>>,
    goal: Option<Vec<f64>>,
    progress: Option<Vec<f64>>,
}

impl Probe {
    /// Forgets the last state's measures.
    fn clear(&mut self) {
        self.mobility = None;
        self.goal = None;
        self.progress = None;
    }

    /// The value of a scalar measure in `state` (0 for a group, or where the engine gives
    /// none).
    fn get<M: StateMachine>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        m: Measure,
    ) -> Result<f64, MachineError> {
        let (slot, k) = match m {
            Measure::Group(..) => return Ok(0.0),
            Measure::Mobility(k) => (&mut self.mobility, k),
            Measure::Goal(k) => (&mut self.goal, k),
            Measure::Progress(k) => (&mut self.progress, k),
        };
        if slot.is_none() {
            let mut v = Vec::new();
            match m {
                Measure::Mobility(_) => log_mobility(machine, state, &mut v)?,
                Measure::Goal(_) => {
                    per_role(machine, &mut v, |m, r| {
                        Ok(f64::from(goal_or_zero(m, state, r)?))
                    })?;
                }
                _ => {
                    machine.goal_progress_into(state, &mut v)?;
                }
            }
            *slot = Some(v);
        }
        Ok(slot.as_ref().and_then(|v| v.get(k)).copied().unwrap_or(0.0))
    }
}

/// Material found from the state's shape and the legal moves: which groups of facts are a
/// role's pieces, and what each is worth.
///
/// **Pieces and owners.** In sampled states (random games from the initial state), a fact
/// `(f a_1 .. a_k c)` with a constant `c` stands on the square `a_1 .. a_k`; a legal move
/// *moves* it when the move's arguments name that square before any other square that holds
/// a fact (in `(move e 2 e 4)` the first square named is `e 2`, so white's pawn there is the
/// piece moved, not the empty square `e 4` nor a piece captured there). A group (functor and
/// last constant, as for [`Heuristic`]) is a role's piece when that role makes at least
/// [`OWNED_SHARE`] of the moves that move it. Squares moves only land on (empty squares,
/// stones placed in reversi or hex) are nobody's pieces, so games without movable pieces have
/// no material.
///
/// **Values.** A piece is worth its mobility: the mean number of its owner's legal moves that
/// move one such piece, in the states where the owner had a move (a queen far more than a
/// pawn), plus one. The value of a state for a role is
/// `50 + 50 · tanh(2 · (ours − theirs) / side)`, where `side` is a role's mean material in the
/// initial state: a third of the starting material ahead is worth about 88.
#[derive(Debug, Clone)]
pub struct Material {
    /// Per piece group: the owning role and the value.
    pieces: hashbrown::HashMap<Key, (usize, f64)>,
    /// A role's mean starting material.
    side: f64,
}

/// The least share of the moves moving a group that one role must make to own it.
pub const OWNED_SHARE: f64 = 0.9;

impl Material {
    /// The pieces found, as `(group, owner, value)`, sorted by group.
    pub fn pieces(&self) -> Vec<(String, usize, f64)> {
        let mut out: Vec<(String, usize, f64)> = self
            .pieces
            .iter()
            .map(|(k, &(r, v))| (group_name(*k), r, v))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Our material minus the others', in starting sides (0: even).
    pub fn balance<M: StateMachine>(&self, machine: &M, state: &M::State, role: usize) -> f64 {
        let mut sum = 0.0;
        for fact in machine.state_terms(state) {
            if let Some(&(owner, v)) = key_of(&fact).and_then(|k| self.pieces.get(&k)) {
                sum += if owner == role { v } else { -v };
            }
        }
        sum / self.side
    }

    /// The estimated goal value of `state` for `role`, 0 to 100.
    pub fn value<M: StateMachine>(&self, machine: &M, state: &M::State, role: usize) -> f64 {
        50.0 + 50.0 * (2.0 * self.balance(machine, state, role)).tanh()
    }

    /// What one fact adds to [`balance`](Self::balance) for `role` (0 if it is no piece).
    pub fn weight(&self, fact: &Term, role: usize) -> f64 {
        key_of(fact)
            .and_then(|k| self.pieces.get(&k))
            .map_or(0.0, |&(owner, v)| if owner == role { v } else { -v })
            / self.side
    }
}

/// Finds the material of a game (see [`Material`]) from `games` random games of at most
/// `plies` plies each (stopped early at `deadline`). `None` when no group is anyone's piece.
///
/// # Errors
/// The engine failed.
pub fn find_material<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    games: usize,
    plies: usize,
    deadline: Instant,
) -> Result<Option<Material>, MachineError> {
    let n_roles = machine.roles().len();
    // Per group and role: moves that move such a piece, and pieces present when the role
    // had a move.
    let mut moved: hashbrown::HashMap<Key, Vec<f64>> = hashbrown::HashMap::new();
    let mut present: hashbrown::HashMap<Key, Vec<f64>> = hashbrown::HashMap::new();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    'games: for _ in 0..games {
        let mut state = machine.initial_state();
        for _ in 0..plies {
            if machine.is_terminal(&state)? || past(deadline) {
                continue 'games;
            }
            let facts = machine.state_terms(&state);
            // Square (the arguments before the last) -> the groups standing there.
            let mut squares: hashbrown::HashMap<&[Term], Vec<Key>> = hashbrown::HashMap::new();
            let mut lengths: Vec<usize> = Vec::new();
            for fact in &facts {
                if let (Term::App(_, args), Some(key)) = (fact, key_of(fact))
                    && args.len() >= 2
                    && key.1.is_some()
                {
                    let square = &args[..args.len() - 1];
                    squares.entry(square).or_default().push(key);
                    if !lengths.contains(&square.len()) {
                        lengths.push(square.len());
                    }
                }
            }
            // The longest squares first: `(cell e 2 wp)` before a marker such as `(ep e 3)`.
            lengths.sort_unstable_by(|a, b| b.cmp(a));
            for r in 0..n_roles {
                if machine.is_nature(r) {
                    continue;
                }
                let moves = machine.legal_moves(&state, r)?;
                if moves.len() < 2 {
                    continue;
                }
                for keys in squares.values() {
                    for &k in keys {
                        present.entry(k).or_insert_with(|| vec![0.0; n_roles])[r] += 1.0;
                    }
                }
                for &mv in &moves {
                    let Term::App(_, margs) = machine.move_term(mv) else {
                        continue;
                    };
                    if let Some(keys) = first_square(&margs, &lengths, &squares) {
                        for &k in keys {
                            moved.entry(k).or_insert_with(|| vec![0.0; n_roles])[r] += 1.0;
                        }
                    }
                }
            }
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            state = machine.next_state_unchecked(&state, &joint)?;
        }
    }
    let mut pieces = hashbrown::HashMap::new();
    for (key, by_role) in &moved {
        let total: f64 = by_role.iter().sum();
        let Some((owner, &most)) = by_role.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))
        else {
            continue;
        };
        let seen = present.get(key).map_or(0.0, |p| p[owner]);
        if total > 0.0 && most >= OWNED_SHARE * total && seen > 0.0 {
            pieces.insert(*key, (owner, 1.0 + most / seen));
        }
    }
    if pieces.is_empty() {
        return Ok(None);
    }
    let initial = machine.initial_state();
    let start: f64 = machine
        .state_terms(&initial)
        .iter()
        .filter_map(|f| key_of(f).and_then(|k| pieces.get(&k)))
        .map(|&(_, v)| v)
        .sum();
    let side = if start > 0.0 {
        start / n_roles as f64
    } else {
        pieces.values().map(|&(_, v)| v).sum::<f64>()
    };
    Ok(Some(Material { pieces, side }))
}

/// The groups on the first square a move's arguments name (trying each offset from the
/// left, each square length), if any.
fn first_square<'a>(
    args: &[Term],
    lengths: &[usize],
    squares: &'a hashbrown::HashMap<&[Term], Vec<Key>>,
) -> Option<&'a Vec<Key>> {
    for i in 0..args.len() {
        for &k in lengths {
            if let Some(keys) = args.get(i..i + k).and_then(|s| squares.get(s)) {
                return Some(keys);
            }
        }
    }
    None
}

/// A group's name, e.g. `(cell _ white)`.
fn group_name(key: Key) -> String {
    match key.1 {
        Some(last) => format!("({} _ {last})", key.0),
        None => format!("({})", key.0),
    }
}

/// The group a fact counts towards.
fn key_of(fact: &Term) -> Option<Key> {
    match fact {
        Term::Const(s) => Some((*s, None)),
        Term::App(f, args) => match args.last() {
            Some(Term::Const(c)) => Some((*f, Some(*c))),
            _ => Some((*f, None)),
        },
        Term::Var(_) => None,
    }
}

/// Counts a state's facts per group.
fn count(facts: &[Term]) -> hashbrown::HashMap<Key, u32> {
    let mut counts = hashbrown::HashMap::new();
    for key in facts.iter().filter_map(key_of) {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Every role's heuristic compiled into one weight per fact, for evaluating many states fast;
/// one evaluation for both searches (MCTS's [`crate::search::mcts::HeuristicEvaluation`] and
/// alpha-beta's leaves).
///
/// A heuristic's value is `50 + 50 · tanh(Σ r_i (x_i − mean_i) / (sd_i · R))`, linear inside
/// the `tanh` in the measures `x_i`; so each fact adds a fixed weight per role, each scalar
/// measure (mobility, goal, progress) its value times a weight, and the means make a
/// constant. The weight of a fact is found the first time a state holds it (from the
/// engine's fact ids, [`StateMachine::fact_ids_into`], and one call to `state_terms`), then
/// remembered. Engines without fact ids are evaluated with [`Heuristic::value`].
pub struct Evaluator {
    heuristics: Vec<Option<Heuristic>>,
    /// Per group, one weight per role.
    by_key: hashbrown::HashMap<Key, Box<[f64]>>,
    /// The scalar measures read, each with one weight per role.
    scalars: Vec<(Measure, Box<[f64]>)>,
    /// Per role, the constant inside the `tanh`.
    bias: Box<[f64]>,
    /// Per fact id, one weight per role, once known (empty: the fact counts for nothing).
    by_fact: Vec<Option<Box<[f64]>>>,
    /// Give outcomes proven by latches instead of estimates.
    proving: bool,
    ids: Vec<u32>,
    sums: Vec<f64>,
    probe: Probe,
    proven: Vec<Option<u8>>,
}

impl Evaluator {
    /// The evaluator of one heuristic per role (`None`: that role's value is always 50).
    pub fn new(heuristics: Vec<Option<Heuristic>>) -> Evaluator {
        let n = heuristics.len();
        let mut by_key: hashbrown::HashMap<Key, Box<[f64]>> = hashbrown::HashMap::new();
        let mut scalars: Vec<(Measure, Box<[f64]>)> = Vec::new();
        let mut bias = vec![0.0; n].into_boxed_slice();
        for (r, h) in heuristics.iter().enumerate() {
            let Some(h) = h else { continue };
            let k = h.weight();
            for f in &h.features {
                let w = f.correlation / (f.sd * k);
                let weights = match f.measure {
                    Measure::Group(g, c) => by_key
                        .entry((g, c))
                        .or_insert_with(|| vec![0.0; n].into_boxed_slice()),
                    m => {
                        let i = match scalars.iter().position(|s| s.0 == m) {
                            Some(i) => i,
                            None => {
                                scalars.push((m, vec![0.0; n].into_boxed_slice()));
                                scalars.len() - 1
                            }
                        };
                        &mut scalars[i].1
                    }
                };
                weights[r] += w;
                bias[r] -= w * f.mean;
            }
        }
        Evaluator {
            heuristics,
            by_key,
            scalars,
            bias,
            by_fact: Vec::new(),
            proving: false,
            ids: Vec::new(),
            sums: Vec::new(),
            probe: Probe::default(),
            proven: Vec::new(),
        }
    }

    /// The same evaluator, giving (when `on`) the outcome the state's latches prove for a role
    /// instead of its estimate ([`StateMachine::latched_goals_into`]).
    pub fn proving(mut self, on: bool) -> Evaluator {
        self.proving = on;
        self
    }

    /// Whether any role has a heuristic.
    pub fn any(&self) -> bool {
        self.heuristics.iter().any(Option::is_some)
    }

    /// Writes every role's estimated goal value of `state`, 0..1, into `out` (cleared first).
    ///
    /// # Errors
    /// The engine failed.
    pub fn values<M: StateMachine>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError> {
        out.clear();
        if !machine.fact_ids_into(state, &mut self.ids) {
            for h in &self.heuristics {
                out.push(match h {
                    Some(h) => h.value(machine, state)? / 100.0,
                    None => 0.5,
                });
            }
            return self.prove(machine, state, out);
        }
        let unknown = self
            .ids
            .iter()
            .any(|&id| self.by_fact.get(id as usize).is_none_or(Option::is_none));
        if unknown {
            let terms = machine.state_terms(state);
            for (&id, term) in self.ids.iter().zip(&terms) {
                let i = id as usize;
                if self.by_fact.len() <= i {
                    self.by_fact.resize(i + 1, None);
                }
                let w = key_of(term)
                    .and_then(|k| self.by_key.get(&k).cloned())
                    .unwrap_or_default();
                self.by_fact[i] = Some(w);
            }
        }
        self.sums.clear();
        self.sums.extend_from_slice(&self.bias);
        for &id in &self.ids {
            if let Some(Some(w)) = self.by_fact.get(id as usize) {
                for (s, w) in self.sums.iter_mut().zip(w.iter()) {
                    *s += w;
                }
            }
        }
        self.probe.clear();
        for (m, w) in &self.scalars {
            let x = self.probe.get(machine, state, *m)?;
            for (s, w) in self.sums.iter_mut().zip(w.iter()) {
                *s += w * x;
            }
        }
        for (r, h) in self.heuristics.iter().enumerate() {
            out.push(if h.is_some() {
                0.5 + 0.5 * self.sums[r].tanh()
            } else {
                0.5
            });
        }
        self.prove(machine, state, out)
    }

    /// Replaces the estimates of the roles whose outcome the latches prove (when proving).
    fn prove<M: StateMachine>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut [f64],
    ) -> Result<(), MachineError> {
        if self.proving && machine.latched_goals_into(state, &mut self.proven) {
            for (o, p) in out.iter_mut().zip(&self.proven) {
                if let Some(v) = p {
                    *o = f64::from(*v) / 100.0;
                }
            }
        }
        Ok(())
    }
}

/// Learns a heuristic for `role` from random games until `deadline` or `max_games` games,
/// trying every kind of candidate ([`Candidates::default`]). `None` when too little was seen
/// or nothing correlates.
///
/// # Errors
/// The engine failed.
pub fn learn<M: StateMachine>(
    machine: &mut M,
    role: usize,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
) -> Result<Option<Heuristic>, MachineError> {
    let mut all = learn_roles_with(machine, rng, deadline, max_games, Candidates::default())?;
    Ok(if role < all.len() {
        all.swap_remove(role)
    } else {
        None
    })
}

/// Learns one heuristic per role (each from its own final goal) from the same random games,
/// until `deadline` or `max_games` games, trying every kind of candidate.
///
/// # Errors
/// The engine failed.
pub fn learn_roles<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
) -> Result<Vec<Option<Heuristic>>, MachineError> {
    learn_roles_with(machine, rng, deadline, max_games, Candidates::default())
}

/// As [`learn_roles`], trying only the kinds of candidate `candidates` names.
///
/// # Errors
/// The engine failed.
pub fn learn_roles_with<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
    candidates: Candidates,
) -> Result<Vec<Option<Heuristic>>, MachineError> {
    let n_roles = machine.roles().len();
    let mut moments = Moments::new(n_roles);
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    let (mut ids, mut counts, mut scalars) = (Vec::new(), Vec::new(), Vec::new());
    let mut probe = Probe::default();
    // The scalar measures tried, each role's.
    let mut measures = Vec::new();
    for k in 0..n_roles {
        if candidates.mobility && !machine.is_nature(k) {
            measures.push(Measure::Mobility(k));
        }
        if candidates.goal {
            measures.push(Measure::Goal(k));
        }
        if candidates.progress {
            measures.push(Measure::Progress(k));
        }
    }
    // Measures the engine cannot give are not tried.
    let initial = machine.initial_state();
    let mut progress = Vec::new();
    if candidates.progress && !machine.goal_progress_into(&initial, &mut progress)? {
        measures.retain(|m| !matches!(m, Measure::Progress(_)));
    }
    let measured: Vec<(Measure, usize)> = measures.iter().map(|&m| (m, moments.index(m))).collect();
    // Per fact id, its group's index in `moments` (`None`: not a group), once known.
    let mut group_of: Vec<Option<Option<usize>>> = Vec::new();
    'games: while moments.games < max_games && !past(deadline) {
        let mut state = machine.initial_state();
        for _ in 0..MAX_GAME {
            if machine.is_terminal(&state)? {
                let goals = (0..n_roles)
                    .map(|r| goal_or_zero(machine, &state, r).map(f64::from))
                    .collect::<Result<Vec<f64>, _>>()?;
                moments.end_game(Some(&goals));
                continue 'games;
            }
            if past(deadline) {
                break 'games;
            }
            counts.clear();
            if !candidates.groups {
                // No groups: none counted.
            } else if machine.fact_ids_into(&state, &mut ids) {
                let unknown = ids
                    .iter()
                    .any(|&id| group_of.get(id as usize).is_none_or(Option::is_none));
                if unknown {
                    for (&id, term) in ids.iter().zip(&machine.state_terms(&state)) {
                        let i = id as usize;
                        if group_of.len() <= i {
                            group_of.resize(i + 1, None);
                        }
                        group_of[i] =
                            Some(key_of(term).map(|(g, c)| moments.index(Measure::Group(g, c))));
                    }
                }
                counts.extend(ids.iter().filter_map(|&id| group_of[id as usize].flatten()));
            } else {
                for (g, c) in machine.state_terms(&state).iter().filter_map(key_of) {
                    counts.push(moments.index(Measure::Group(g, c)));
                }
            }
            probe.clear();
            scalars.clear();
            for &(m, i) in &measured {
                scalars.push((i, probe.get(machine, &state, m)?));
            }
            moments.add_state(&counts, &scalars);
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            state = machine.next_state_unchecked(&state, &joint)?;
        }
        // Too long: not sampled.
        moments.end_game(None);
    }
    Ok((0..n_roles).map(|r| moments.heuristic(r)).collect())
}

/// Running sums, per ply, over the sampled states of every group's count and every role's
/// final goal, from which the correlations come; nothing per state is kept.
///
/// The correlations are *within plies* (of the count's and the goal's deviations from their
/// means at the same ply): a count that only tells how far the game has gone (pieces dropped
/// so far in connect four, whose turn it is) then correlates with nothing, while material
/// won or lost, which varies between games at the same ply, keeps its correlation.
struct Moments {
    n_roles: usize,
    keys: Vec<Measure>,
    index: hashbrown::HashMap<Measure, usize>,
    /// Games played (sampled or not).
    games: usize,
    /// Per ply.
    plies: Vec<PlySums>,
    /// Per measure: the current game's value at each of its plies.
    game: Vec<Vec<f32>>,
    /// The current game's length so far.
    game_len: usize,
    /// Scratch: one state's value per measure.
    state_x: Vec<f32>,
}

/// The sums of one ply.
#[derive(Clone, Default)]
struct PlySums {
    n: f64,
    /// Per group: Σx and Σx².
    sx: Vec<f64>,
    sxx: Vec<f64>,
    /// Per group and role (`group * n_roles + role`): Σx·y.
    sxy: Vec<f64>,
    /// Per role: Σy and Σy².
    sy: Vec<f64>,
    syy: Vec<f64>,
}

impl Moments {
    fn new(n_roles: usize) -> Moments {
        Moments {
            n_roles,
            keys: Vec::new(),
            index: hashbrown::HashMap::new(),
            games: 0,
            plies: Vec::new(),
            game: Vec::new(),
            game_len: 0,
            state_x: Vec::new(),
        }
    }

    /// The index of a measure (a new one was 0 in every state before).
    fn index(&mut self, key: Measure) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.keys.len();
        self.keys.push(key);
        self.index.insert(key, i);
        self.game.push(vec![0.0; self.game_len]);
        self.state_x.push(0.0);
        i
    }

    /// The next state of the current game: the group index of each of its facts, and the
    /// values of the scalar measures (index, value).
    fn add_state(&mut self, groups: &[usize], scalars: &[(usize, f64)]) {
        for &g in groups {
            self.state_x[g] += 1.0;
        }
        for &(i, x) in scalars {
            self.state_x[i] = x as f32;
        }
        for (g, counts) in self.game.iter_mut().enumerate() {
            counts.push(std::mem::take(&mut self.state_x[g]));
        }
        self.game_len += 1;
    }

    /// The current game ended with these goals per role (`None`: not sampled).
    fn end_game(&mut self, goals: Option<&[f64]>) {
        let (n_roles, n_groups) = (self.n_roles, self.keys.len());
        if let Some(goals) = goals {
            if self.plies.len() < self.game_len {
                self.plies.resize(self.game_len, PlySums::default());
            }
            for (t, ply) in self.plies.iter_mut().enumerate().take(self.game_len) {
                ply.sx.resize(n_groups, 0.0);
                ply.sxx.resize(n_groups, 0.0);
                ply.sxy.resize(n_groups * n_roles, 0.0);
                ply.sy.resize(n_roles, 0.0);
                ply.syy.resize(n_roles, 0.0);
                ply.n += 1.0;
                for (r, &y) in goals.iter().enumerate() {
                    ply.sy[r] += y;
                    ply.syy[r] += y * y;
                }
                for (g, counts) in self.game.iter().enumerate() {
                    let x = f64::from(counts[t]);
                    if x != 0.0 {
                        ply.sx[g] += x;
                        ply.sxx[g] += x * x;
                        for (r, &y) in goals.iter().enumerate() {
                            ply.sxy[g * n_roles + r] += x * y;
                        }
                    }
                }
            }
        }
        self.games += 1;
        self.game_len = 0;
        self.game.iter_mut().for_each(Vec::clear);
    }

    /// The heuristic the samples support for `role` (see the module documentation).
    fn heuristic(&self, role: usize) -> Option<Heuristic> {
        let n: f64 = self.plies.iter().map(|p| p.n).sum();
        if n < MIN_SAMPLES as f64 || self.games < MIN_GAMES {
            return None;
        }
        // Within-ply sums of squares: Σ over plies of (Σy² − (Σy)²/n_p), likewise for x and x·y.
        let at = |v: &Vec<f64>, i: usize| v.get(i).copied().unwrap_or(0.0);
        let yy: f64 = self
            .plies
            .iter()
            .map(|p| at(&p.syy, role) - at(&p.sy, role).powi(2) / p.n.max(1.0))
            .sum();
        if yy <= 1e-9 * n {
            return None;
        }
        let mut features = Vec::new();
        for (g, &key) in self.keys.iter().enumerate() {
            let (mut sx, mut xx, mut xy) = (0.0, 0.0, 0.0);
            for p in &self.plies {
                let m = p.n.max(1.0);
                sx += at(&p.sx, g);
                xx += at(&p.sxx, g) - at(&p.sx, g).powi(2) / m;
                xy += at(&p.sxy, g * self.n_roles + role) - at(&p.sx, g) * at(&p.sy, role) / m;
            }
            if xx <= 1e-9 * n {
                continue;
            }
            let correlation = xy / (xx * yy).sqrt();
            if correlation.abs() * (self.games as f64).sqrt() >= MIN_SIGMAS {
                features.push(Feature {
                    measure: key,
                    mean: sx / n,
                    sd: (xx / n).sqrt(),
                    correlation,
                });
            }
        }
        (!features.is_empty()).then_some(Heuristic { features })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(n: u32) -> Sym {
        let text = format!("s{n}");
        crate::gdl::parse_term(&text)
            .ok()
            .and_then(|t| match t {
                Term::Const(s) => Some(s),
                _ => None,
            })
            .expect("a constant")
    }

    #[test]
    fn a_move_moves_the_piece_on_the_first_square_it_names() {
        let t = |text: &str| crate::gdl::parse_term(text).expect("a term");
        let facts = [t("(cell e 2 wp)"), t("(cell e 4 b)"), t("(ep e 3)")];
        let mut squares: hashbrown::HashMap<&[Term], Vec<Key>> = hashbrown::HashMap::new();
        for f in &facts {
            if let Term::App(_, args) = f {
                squares
                    .entry(&args[..args.len() - 1])
                    .or_default()
                    .push(key_of(f).expect("a group"));
            }
        }
        let Term::App(_, args) = t("(move e 2 e 4)") else {
            panic!("an application")
        };
        let keys = first_square(&args, &[2, 1], &squares).expect("a square");
        assert_eq!(keys, &vec![key_of(&facts[0]).expect("a group")]);
        let Term::App(_, args) = t("(drop 3)") else {
            panic!("an application")
        };
        assert!(first_square(&args, &[2, 1], &squares).is_none());
    }

    #[test]
    fn a_feature_that_does_not_correlate_is_dropped() {
        let (pieces, noise) = (
            Measure::Group(sym(1), Some(sym(2))),
            Measure::Group(sym(3), None),
        );
        // One role; 100 games of 4 states each.
        let mut m = Moments::new(1);
        let (p, q) = (m.index(pieces), m.index(noise));
        for i in 0..100 {
            if i == 3 {
                // Too few games yet: nothing learnt.
                assert!(m.heuristic(0).is_none());
            }
            // Our pieces decide the goal; the other count varies independently of it.
            let ours = i % 5;
            let goal = if ours >= 3 { 100.0 } else { 0.0 };
            for s in 0..4 {
                let mut groups = vec![p; ours];
                groups.extend(std::iter::repeat_n(q, (i / 5 + s) % 5));
                m.add_state(&groups, &[]);
            }
            m.end_game(Some(&[goal]));
        }
        let h = m.heuristic(0).expect("the piece count correlates");
        assert_eq!(h.features().len(), 1);
        assert_eq!(h.features()[0].measure, pieces);
        assert!(h.features()[0].correlation > 0.5);
        assert!((h.features()[0].mean - 2.0).abs() < 1e-9);
        // A count that only follows the ply (one more each ply) is dropped.
        let mut m = Moments::new(1);
        let clock = m.index(pieces);
        for i in 0..100 {
            let len = 2 + i % 7;
            for t in 0..len {
                m.add_state(&vec![clock; t], &[]);
            }
            m.end_game(Some(&[if len > 4 { 100.0 } else { 0.0 }]));
        }
        assert!(m.heuristic(0).is_none());
    }

    fn propnet(text: &str) -> crate::propnet::PropnetMachine {
        let d = crate::gdl::Description::from_text(text).expect("rules");
        crate::propnet::PropnetMachine::new(&d, &crate::propnet::Budget::default())
            .expect("the game grounds")
    }

    fn tic_tac_toe() -> crate::propnet::PropnetMachine {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/games/base/ticTacToe.kif"
        );
        propnet(&std::fs::read_to_string(path).expect("the corpus beside the repository"))
    }

    /// The features kept for each role from 2000 random games, trying only `only`.
    fn kept(m: &mut crate::propnet::PropnetMachine, only: Candidates) -> Vec<Vec<Measure>> {
        use rand::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let far = Instant::now() + std::time::Duration::from_secs(600);
        learn_roles_with(m, &mut rng, far, 2000, only)
            .expect("the engine works")
            .into_iter()
            .map(|h| h.map_or_else(Vec::new, |h| h.features.iter().map(|f| f.measure).collect()))
            .collect()
    }

    const NONE: Candidates = Candidates {
        groups: false,
        mobility: false,
        goal: false,
        progress: false,
        latches: false,
    };

    #[test]
    fn mobility_goal_and_progress_are_kept_where_they_tell_the_outcome() {
        // In the tokens game `a` wins by growing its count to 3; each level adds a move.
        let mut m = propnet(crate::propnet::analysis::tests::TOKENS);
        let mobility = kept(
            &mut m,
            Candidates {
                mobility: true,
                ..NONE
            },
        );
        assert_eq!(mobility[0], [Measure::Mobility(0)]);
        // b has one move throughout: its mobility tells nothing.
        assert_eq!(mobility[1], [Measure::Mobility(0)]);
        let goal = kept(&mut m, Candidates { goal: true, ..NONE });
        assert!(goal[0].contains(&Measure::Goal(0)), "{goal:?}");
        let progress = kept(
            &mut m,
            Candidates {
                progress: true,
                ..NONE
            },
        );
        assert!(progress[0].contains(&Measure::Progress(0)), "{progress:?}");
        // The signs: a's mobility helps a and hurts b.
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(2);
        let far = Instant::now() + std::time::Duration::from_secs(600);
        let hs = learn_roles_with(
            &mut m,
            &mut rng,
            far,
            2000,
            Candidates {
                mobility: true,
                ..NONE
            },
        )
        .expect("the engine works");
        let r = |h: &Option<Heuristic>| h.as_ref().expect("kept").features[0].correlation;
        assert!(r(&hs[0]) > 0.3 && r(&hs[1]) < -0.3);
        assert_eq!(
            hs[0].as_ref().expect("kept").describe(m.roles()),
            format!("mobility of a {:+.3}", r(&hs[0]))
        );
    }

    #[test]
    fn mobility_and_the_current_goal_are_dropped_where_they_tell_nothing() {
        // In tic-tac-toe every state at one ply has the same number of moves, and no goal
        // holds before the end.
        let mut m = tic_tac_toe();
        let mobility = kept(
            &mut m,
            Candidates {
                mobility: true,
                ..NONE
            },
        );
        assert!(mobility.iter().all(Vec::is_empty), "{mobility:?}");
        let goal = kept(&mut m, Candidates { goal: true, ..NONE });
        assert!(goal.iter().all(Vec::is_empty), "{goal:?}");
    }

    #[test]
    fn the_evaluator_gives_the_outcome_latches_prove() {
        let mut m = propnet(crate::propnet::analysis::tests::TOKENS);
        let facts: Vec<Term> = ["(step 3)", "(count 3)", "(mark 1)", "(mark 2)", "(mark 3)"]
            .iter()
            .map(|f| crate::gdl::parse_term(f).expect("a term"))
            .collect();
        let won = m.state_from_terms(&facts).expect("known facts");
        let mut out = Vec::new();
        let mut plain = Evaluator::new(vec![None, None]);
        plain
            .values(&mut m, &won, &mut out)
            .expect("the engine works");
        assert_eq!(out, [0.5, 0.5]);
        let mut proving = Evaluator::new(vec![None, None]).proving(true);
        proving
            .values(&mut m, &won, &mut out)
            .expect("the engine works");
        assert_eq!(out, [1.0, 0.0]);
        let start = m.initial_state();
        proving
            .values(&mut m, &start, &mut out)
            .expect("the engine works");
        assert_eq!(out, [0.5, 0.5]);
    }
}
