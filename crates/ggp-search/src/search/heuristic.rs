//! A state evaluation learnt at the start clock, for any game: candidate features measured in
//! the states of random games, kept only where they correlate with the outcome.
//!
//! **Candidates** ([`Measure`]), found from the game itself, never from its name: piece or
//! token counts, a state's true facts grouped by functor and, when the last argument is a
//! constant, by that constant too: `(cell 3 4 wq)` counts towards `(cell _ _ wq)` (a piece
//! count on a board), `(control white)` towards `(control white)`. Other kinds (mobility, goal
//! stability, goal progress, outcomes proven by latches) were measured and removed: see
//! `docs/experiments/heuristic-features.md`.
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

use std::time::Instant;

use rand::Rng;

use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::{Sym, Term};

use super::{goal_or_zero, past, random_step};

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
}

impl Measure {
    /// The measure's name.
    pub fn name(self) -> String {
        match self {
            Measure::Group(f, c) => group_name((f, c)),
        }
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
    /// The measure's name, e.g. `(cell _ white)`.
    pub fn group(&self) -> String {
        self.measure.name()
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

    /// The kept features and their correlations, e.g. `(cell _ black) -0.061, (cell _ white)
    /// +0.043`.
    pub fn describe(&self) -> String {
        self.features
            .iter()
            .map(|f| format!("{} {:+.3}", f.measure.name(), f.correlation))
            .collect::<Vec<_>>()
            .join(", ")
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
        let mut sum = 0.0;
        for f in &self.features {
            let x = match f.measure {
                Measure::Group(g, c) => f64::from(counts.get(&(g, c)).copied().unwrap_or(0)),
            };
            sum += f.correlation * (x - f.mean) / f.sd;
        }
        Ok(50.0 + 50.0 * (sum / self.weight()).tanh())
    }
}

/// Per role, the natural log of its legal moves in `state` (0 with one move or none), into
/// `out` (cleared first): mobility as alpha-beta's leaves read it.
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
            match random_step(machine, &state, rng, &mut joint, &mut scratch)? {
                Some(next) => state = next,
                None => continue 'games,
            }
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
/// the `tanh` in the measures `x_i`; so each fact adds a fixed weight per role, and the means
/// make a constant. The weight of a fact is found the first time a state holds it (from the
/// engine's fact ids, [`StateMachine::fact_ids_into`], and one call to `state_terms`), then
/// remembered. Engines without fact ids are evaluated with [`Heuristic::value`].
pub struct Evaluator {
    heuristics: Vec<Option<Heuristic>>,
    /// Per group, one weight per role.
    by_key: hashbrown::HashMap<Key, Box<[f64]>>,
    /// Per role, the constant inside the `tanh`.
    bias: Box<[f64]>,
    /// Per fact id, one weight per role, once known (empty: the fact counts for nothing).
    by_fact: Vec<Option<Box<[f64]>>>,
    ids: Vec<u32>,
    sums: Vec<f64>,
}

impl Evaluator {
    /// The evaluator of one heuristic per role (`None`: that role's value is always 50).
    pub fn new(heuristics: Vec<Option<Heuristic>>) -> Evaluator {
        let n = heuristics.len();
        let mut by_key: hashbrown::HashMap<Key, Box<[f64]>> = hashbrown::HashMap::new();
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
                };
                weights[r] += w;
                bias[r] -= w * f.mean;
            }
        }
        Evaluator {
            heuristics,
            by_key,
            bias,
            by_fact: Vec::new(),
            ids: Vec::new(),
            sums: Vec::new(),
        }
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
            return Ok(());
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
        for (r, h) in self.heuristics.iter().enumerate() {
            out.push(if h.is_some() {
                0.5 + 0.5 * self.sums[r].tanh()
            } else {
                0.5
            });
        }
        Ok(())
    }
}

/// Learns a heuristic for `role` from random games until `deadline` or `max_games` games.
/// `None` when too little was seen or nothing correlates.
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
    let mut all = learn_roles_with(machine, rng, deadline, max_games, true)?;
    Ok(if role < all.len() {
        all.swap_remove(role)
    } else {
        None
    })
}

/// Learns one heuristic per role (each from its own final goal) from the same random games,
/// until `deadline` or `max_games` games.
///
/// # Errors
/// The engine failed.
pub fn learn_roles<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
) -> Result<Vec<Option<Heuristic>>, MachineError> {
    learn_roles_with(machine, rng, deadline, max_games, true)
}

/// As [`learn_roles`], with fact-group counts as candidates only when `groups` (without them
/// nothing is learnt).
///
/// # Errors
/// The engine failed.
pub fn learn_roles_with<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
    groups: bool,
) -> Result<Vec<Option<Heuristic>>, MachineError> {
    let n_roles = machine.roles().len();
    let mut moments = Moments::new(n_roles);
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    let (mut ids, mut counts) = (Vec::new(), Vec::new());
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
            if !groups {
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
            moments.add_state(&counts);
            match random_step(machine, &state, rng, &mut joint, &mut scratch)? {
                Some(next) => state = next,
                None => break,
            }
        }
        // Too long, or stuck where a role has no move: not sampled.
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

    /// The next state of the current game: the group index of each of its facts.
    fn add_state(&mut self, groups: &[usize]) {
        for &g in groups {
            self.state_x[g] += 1.0;
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
        ggp_gdl::gdl::parse_term(&text)
            .ok()
            .and_then(|t| match t {
                Term::Const(s) => Some(s),
                _ => None,
            })
            .expect("a constant")
    }

    #[test]
    fn a_move_moves_the_piece_on_the_first_square_it_names() {
        let t = |text: &str| ggp_gdl::gdl::parse_term(text).expect("a term");
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
                m.add_state(&groups);
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
                m.add_state(&vec![clock; t]);
            }
            m.end_game(Some(&[if len > 4 { 100.0 } else { 0.0 }]));
        }
        assert!(m.heuristic(0).is_none());
    }
}
