//! Alpha-beta with iterative deepening and a transposition table.
//!
//! **What it assumes.** The search maximises our goal value against every other role at
//! once: at each state we pick our move, and the others then pick their joint move to
//! minimise our value (the "paranoid" assumption). In a two-player, turn-taking, constant-sum
//! game (see [`super::probe`] for how that is detected) this is exact minimax: in each state
//! one side has a choice and the other has a single move, and the opponent's gain is our
//! loss. In other games it is a pessimistic bound: a value we can be sure of whatever the others
//! do. The `auto` player uses it in a simultaneous game only where that bound is proven to be
//! the game's value (see [`super::auto`]).
//!
//! **Depth and values.** Depth counts joint moves. Terminal states are worth our goal value
//! (0 to 100). At the depth limit a state is evaluated by
//! [`AlphaBetaSettings::leaf_playouts`] random playouts (the mean of our goal value at their
//! ends), by a learnt [`Heuristic`] when [`AlphaBetaSettings::heuristic`] is on and one was
//! found (see [`super::heuristic`]), or, with neither, by our goal value in the state if the rules define exactly one there,
//! else 50. A search result is *proven* when it depends only on terminal states (directly, or
//! through proven table entries): then deepening stops, and a proven 100 is played at once.
//!
//! **Transposition table.** A fixed-size table indexed by a 64-bit hash of the state holds the
//! value, the kind of bound (exact, lower, upper), the depth searched (or "proven", valid at
//! every depth) and the best move pair, which is tried first next time. An entry is replaced
//! by a deeper one, or by any entry of a later move's search.
//!
//! **Clock.** The clock (and the node limit `max_iterations`, for tests) is looked at in every
//! node and every playout move. A depth that cannot finish is abandoned; its root moves that
//! were searched completely still count, the previous depth's best move being searched first.

use std::hash::{Hash, Hasher};
use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::StateMachine;

use super::heuristic::{self, Evaluator, Heuristic, Material};
use super::{
    Choice, Halt, Player, PlayoutBuffers, SearchConfig, SearchError, goal_or_zero, past,
    timed_playout,
};

/// Tuning of the alpha-beta player.
#[derive(Debug, Clone, PartialEq)]
pub struct AlphaBetaSettings {
    /// The table has 2^`table_bits` entries.
    pub table_bits: u32,
    /// Random playouts per evaluated leaf (0: the state's goal value, or 50).
    pub leaf_playouts: u32,
    /// A playout that has not ended after this many moves is scored by the goals of its last
    /// state.
    pub max_playout_steps: usize,
    /// The deepest iteration (the search recurses once per joint move, so this also bounds
    /// its stack).
    pub max_depth: u32,
    /// Learn a [`Heuristic`] from random games (a third of the first clock) and value leaves
    /// by it instead of playouts (when no material is found).
    pub heuristic: bool,
    /// Find the game's [`Material`] at the start (pieces, owners and values from the state's
    /// shape and the legal moves, see [`heuristic::find_material`]) and value leaves by it.
    pub material: bool,
    /// With material or a heuristic, add the mobility of the role to move at a leaf:
    /// [`MOBILITY_WEIGHT`] times the log of its legal moves, for us, against us for the others
    /// (not added to a heuristic that learnt its own mobility weights).
    pub mobility: bool,
    /// With a heuristic: fact-group counts (pieces) are its candidate features (off,
    /// nothing is learnt).
    pub groups: bool,
}

/// The weight of mobility against material (in starting sides, inside the `tanh`): twice the
/// moves is worth about a pawn's share of chess's starting material.
pub const MOBILITY_WEIGHT: f64 = 0.05;

/// Random games (of at most [`MATERIAL_PLIES`] plies) sampled to find the material.
pub const MATERIAL_GAMES: usize = 20;
/// The longest sampled game for the material.
pub const MATERIAL_PLIES: usize = 200;

impl Default for AlphaBetaSettings {
    fn default() -> AlphaBetaSettings {
        AlphaBetaSettings {
            table_bits: 20,
            leaf_playouts: 1,
            max_playout_steps: 5000,
            max_depth: 300,
            heuristic: false,
            material: true,
            mobility: true,
            groups: true,
        }
    }
}

/// What the last search did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlphaBetaStats {
    /// Nodes visited.
    pub nodes: u64,
    /// The deepest iteration completed.
    pub depth: u32,
    /// The root value, 0 to 100, of the deepest iteration completed.
    pub value: Option<f64>,
    /// Whether that value is proven.
    pub proven: bool,
    /// Engine failures met (such states count as 50, unproven).
    pub errors: u64,
    /// Wall-clock seconds of the search.
    pub seconds: f64,
}

impl AlphaBetaStats {
    /// The root value, if it is proven.
    pub fn proven_value(&self) -> Option<f64> {
        self.value.filter(|_| self.proven)
    }
}

/// The alpha-beta player.
pub struct AlphaBetaPlayer<M: StateMachine> {
    config: SearchConfig,
    settings: AlphaBetaSettings,
    role: usize,
    table: Vec<Entry>,
    generation: u8,
    rng: Xoshiro256PlusPlus,
    stats: AlphaBetaStats,
    /// The best move of the last search and its state, to order the next search.
    last: Option<(M::State, M::Move)>,
    /// The root of the last search: searching the same state again (the start clock's
    /// search, then the first choice) keeps the table's entries as this search's own.
    root: Option<M::State>,
    /// The learnt leaf evaluation (and its compiled form), and whether learning was tried.
    heuristic: Option<Heuristic>,
    evaluator: Option<Box<Evaluator>>,
    learnt: bool,
    /// Engine failures met while learning, added to the next search's count.
    learn_errors: u64,
    /// The material found at the start, if any.
    material: Option<Material>,
    /// Per move, how often it refuted a move or was best (history heuristic), over the match.
    history: hashbrown::HashMap<M::Move, u64>,
    /// Per fact id, its material weight for us, once known.
    weights: Vec<Option<f64>>,
}

impl<M: StateMachine> AlphaBetaPlayer<M> {
    /// A player with the default settings.
    pub fn new(config: SearchConfig) -> AlphaBetaPlayer<M> {
        AlphaBetaPlayer::with_settings(config, AlphaBetaSettings::default())
    }

    /// A player with explicit settings.
    pub fn with_settings(config: SearchConfig, settings: AlphaBetaSettings) -> AlphaBetaPlayer<M> {
        let rng = Xoshiro256PlusPlus::seed_from_u64(config.seed);
        AlphaBetaPlayer {
            config,
            settings,
            role: 0,
            table: Vec::new(),
            generation: 0,
            rng,
            stats: AlphaBetaStats::default(),
            last: None,
            root: None,
            heuristic: None,
            evaluator: None,
            learnt: false,
            learn_errors: 0,
            material: None,
            history: hashbrown::HashMap::new(),
            weights: Vec::new(),
        }
    }

    /// What the last search did.
    pub fn stats(&self) -> &AlphaBetaStats {
        &self.stats
    }

    /// The learnt leaf evaluation, if any.
    pub fn heuristic(&self) -> Option<&Heuristic> {
        self.heuristic.as_ref()
    }

    /// The material found, if any.
    pub fn material(&self) -> Option<&Material> {
        self.material.as_ref()
    }

    /// Finds the material and learns the heuristic once, as the settings ask, with at most a
    /// third of the time to `deadline` each (the material needs a fixed number of short
    /// random games, well within that unless the clock is very short).
    fn learn(&mut self, machine: &mut M, deadline: Instant) -> Result<(), SearchError> {
        // Without a node limit and with no time (a start clock of zero), wait for a clock.
        if self.learnt || (self.config.max_iterations.is_none() && past(deadline)) {
            return Ok(());
        }
        self.learnt = true;
        if self.settings.material {
            // With a node limit (budgeted play, no clock) the material is found whatever the
            // clock says, so that the play is the same on every machine.
            let now = Instant::now();
            let until = if self.config.max_iterations.is_some() {
                now + std::time::Duration::from_secs(3600)
            } else {
                now + deadline.saturating_duration_since(now) / 3
            };
            let games = if until > now { MATERIAL_GAMES } else { 0 };
            // A failing engine costs the evaluation, not the match: counted, then played on.
            self.material =
                heuristic::find_material(machine, &mut self.rng, games, MATERIAL_PLIES, until)
                    .unwrap_or_else(|e| {
                        tracing::warn!("material not found: {e}");
                        self.learn_errors += 1;
                        None
                    });
            if let Some(m) = &self.material {
                let pieces = m
                    .pieces()
                    .iter()
                    .map(|(g, r, v)| format!("{g} {} {v:.1}", machine.roles()[*r]))
                    .collect::<Vec<_>>()
                    .join(", ");
                tracing::info!("material: {pieces}");
            }
        }
        if self.settings.heuristic && self.material.is_none() {
            let now = Instant::now();
            let until = now + deadline.saturating_duration_since(now) / 3;
            self.heuristic = heuristic::learn_roles_with(
                machine,
                &mut self.rng,
                until,
                1000,
                self.settings.groups,
            )
            .map(|mut all| all.swap_remove(self.role))
            .unwrap_or_else(|e| {
                tracing::warn!("no heuristic learnt: {e}");
                self.learn_errors += 1;
                None
            });
            if let Some(h) = &self.heuristic {
                tracing::info!("heuristic: {}", h.describe());
                let mut per_role = vec![None; machine.roles().len()];
                per_role[self.role] = Some(h.clone());
                self.evaluator = Some(Box::new(Evaluator::new(per_role)));
            }
        }
        Ok(())
    }

    /// Iterative deepening from `state` until proven, the deadline or the node limit.
    fn search(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        let started = Instant::now();
        let size = 1usize << self.settings.table_bits.min(30);
        if self.table.len() != size {
            self.table = vec![Entry::EMPTY; size];
        }
        if self.root.as_ref() != Some(state) {
            self.generation = self.generation.wrapping_add(1);
            self.root = Some(state.clone());
        }
        let ours = machine.legal_moves(state, self.role)?;
        let Some(&first) = ours.first() else {
            return Err(SearchError::NoMove);
        };
        let mut searcher = Searcher {
            machine,
            table: &mut self.table,
            rng: &mut self.rng,
            settings: &self.settings,
            heuristic: self.heuristic.as_ref(),
            evaluator: self.evaluator.as_deref_mut(),
            values: Vec::new(),
            material: self.material.as_ref(),
            history: &mut self.history,
            weights: &mut self.weights,
            ids: Vec::new(),
            role: self.role,
            generation: self.generation,
            deadline,
            node_limit: self.config.max_iterations.unwrap_or(u64::MAX),
            progress: self.config.progress.as_deref(),
            nodes: 0,
            errors: 0,
        };
        let hint = self
            .last
            .as_ref()
            .filter(|(s, _)| s == state)
            .and_then(|(_, m)| ours.iter().position(|o| o == m));
        let mut best: Option<RootResult> = None;
        let mut depth_done = 0;
        for depth in 1..=self.settings.max_depth.max(1) {
            let order = best.as_ref().map(|b| b.index).or(hint);
            let (result, complete) = searcher.root(state, &ours, depth, order);
            if let Some(r) = result {
                best = Some(r);
            }
            if !complete {
                break;
            }
            depth_done = depth;
            if best.as_ref().is_some_and(|b| b.proven) {
                break;
            }
        }
        let nodes = searcher.nodes;
        let errors = searcher.errors + std::mem::take(&mut self.learn_errors);
        let (index, value, proven) =
            best.map_or((0, None, false), |b| (b.index, Some(b.value), b.proven));
        let mv = ours.get(index).copied().unwrap_or(first);
        self.last = Some((state.clone(), mv));
        self.stats = AlphaBetaStats {
            nodes,
            depth: depth_done,
            value,
            proven,
            errors,
            seconds: started.elapsed().as_secs_f64(),
        };
        Ok(Choice {
            mv,
            iterations: nodes,
            value,
            proven: self.stats.proven,
        })
    }
}

impl<M: StateMachine + Send> Player<M> for AlphaBetaPlayer<M> {
    fn name(&self) -> String {
        "alphabeta".into()
    }

    fn work(&self) -> super::Work {
        super::Work::Positions
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        self.table.clear();
        self.last = None;
        self.root = None;
        self.heuristic = None;
        self.evaluator = None;
        self.material = None;
        self.history.clear();
        self.weights.clear();
        self.learnt = false;
        let initial = machine.initial_state();
        if machine.is_terminal(&initial)? {
            return Ok(());
        }
        self.learn(machine, deadline)?;
        self.search(machine, &initial, deadline).map(|_| ())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if machine.is_terminal(state)? {
            return Err(SearchError::NoMove);
        }
        self.learn(machine, deadline)?;
        let choice = self.search(machine, state, deadline)?;
        let s = &self.stats;
        tracing::info!(
            depth = s.depth,
            positions = s.nodes,
            value = s.value.map(|v| format!("{v:.1}")).unwrap_or_default(),
            proven = s.proven,
            "alphabeta: searched"
        );
        Ok(choice)
    }
}

/// The kind of bound a table value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Exact,
    /// The true value is at least this.
    Lower,
    /// The true value is at most this.
    Upper,
}

/// A transposition-table entry.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    value: f32,
    depth: u16,
    bound: Bound,
    generation: u8,
    /// Our best move's index and the others' best reply's index.
    best: (u16, u32),
}

/// The depth of a proven entry: valid at any depth.
const PROVEN: u16 = u16::MAX;

impl Entry {
    const EMPTY: Entry = Entry {
        key: 0,
        value: 0.0,
        depth: 0,
        bound: Bound::Exact,
        generation: 0,
        best: (0, 0),
    };
}

/// The best root move of one iteration.
#[derive(Debug, Clone)]
struct RootResult {
    index: usize,
    value: f64,
    proven: bool,
}

/// One search's working set.
struct Searcher<'a, M: StateMachine> {
    machine: &'a mut M,
    table: &'a mut [Entry],
    rng: &'a mut Xoshiro256PlusPlus,
    settings: &'a AlphaBetaSettings,
    heuristic: Option<&'a Heuristic>,
    evaluator: Option<&'a mut Evaluator>,
    /// Scratch: one value per role.
    values: Vec<f64>,
    material: Option<&'a Material>,
    history: &'a mut hashbrown::HashMap<M::Move, u64>,
    weights: &'a mut Vec<Option<f64>>,
    ids: Vec<u32>,
    role: usize,
    generation: u8,
    deadline: Instant,
    node_limit: u64,
    /// The progress counter each node is added to as it is visited (see
    /// [`SearchConfig::progress`]).
    progress: Option<&'a std::sync::atomic::AtomicU64>,
    nodes: u64,
    errors: u64,
}

/// A searched value and whether it is proven.
type Scored = (f64, bool);

impl<M: StateMachine> Searcher<'_, M> {
    fn out_of_time(&self) -> bool {
        self.nodes >= self.node_limit || past(self.deadline)
    }

    /// One iteration at the root: our moves in `ours` (the one at `first` first) against the
    /// others' replies, window 0..100. Returns the best move found (even if the iteration was
    /// cut, when at least one move was searched completely) and whether it finished.
    fn root(
        &mut self,
        state: &M::State,
        ours: &[M::Move],
        depth: u32,
        first: Option<usize>,
    ) -> (Option<RootResult>, bool) {
        let Ok(replies) = self.replies(state) else {
            self.errors += 1;
            return (None, false);
        };
        let order = ordered(ours.len(), first);
        let mut best: Option<RootResult> = None;
        let mut alpha = 0.0f64;
        let mut all_proven = true;
        for a in order {
            let Ok(((value, proven), _)) =
                self.min_over_replies(state, ours[a], &replies, depth, alpha, 100.0, None)
            else {
                // Cut short: only a proven 100 proves the root.
                if let Some(b) = &mut best {
                    b.proven &= b.value >= 100.0;
                }
                return (best, false);
            };
            all_proven &= proven;
            // On a tie, a proven win beats a guessed 100 and a guessed 0 beats a proven loss.
            let better = |b: &RootResult| {
                value > b.value
                    || (value == b.value
                        && proven != b.proven
                        && ((value >= 100.0 && proven) || (value <= 0.0 && !proven)))
            };
            if best.as_ref().is_none_or(better) {
                best = Some(RootResult {
                    index: a,
                    value,
                    proven,
                });
            }
            // An unproven 100 leaves room for a proven win among the other moves.
            alpha = alpha.max(if proven {
                value
            } else {
                value.min(100.0 - 1e-6)
            });
            if value >= 100.0 && proven {
                break;
            }
        }
        if let Some(b) = &mut best
            && b.value < 100.0
        {
            b.proven = all_proven;
        }
        (best, true)
    }

    /// The others' joint replies in `state`: one list of moves per role, ours left empty.
    fn replies(&mut self, state: &M::State) -> Result<Vec<Vec<M::Move>>, Halt> {
        let n_roles = self.machine.roles().len();
        let mut out = Vec::with_capacity(n_roles);
        for r in 0..n_roles {
            if r == self.role {
                out.push(Vec::new());
                continue;
            }
            let moves = self.machine.legal_moves(state, r)?;
            if moves.is_empty() {
                return Err(Halt::Engine(
                    ggp_engine::machine::MachineError::NoLegalMoves {
                        role: self.machine.roles()[r].to_string(),
                    },
                ));
            }
            out.push(moves);
        }
        Ok(out)
    }

    /// The value of our move `mv` in `state`: the least over the others' joint replies, with
    /// the window `alpha..beta`; `first` is the reply tried first.
    #[allow(clippy::too_many_arguments)]
    fn min_over_replies(
        &mut self,
        state: &M::State,
        mv: M::Move,
        replies: &[Vec<M::Move>],
        depth: u32,
        alpha: f64,
        beta: f64,
        first: Option<usize>,
    ) -> Result<(Scored, usize), Halt> {
        let n_replies: usize = replies
            .iter()
            .filter(|m| !m.is_empty())
            .map(Vec::len)
            .product();
        let mut joint = Vec::with_capacity(replies.len());
        let mut value = f64::INFINITY;
        let mut best = 0;
        let mut all_proven = true;
        for b in self.order_replies(replies, n_replies, first) {
            self.joint(mv, replies, b, &mut joint);
            let child = match self.machine.next_state_unchecked(state, &joint) {
                Ok(s) => s,
                Err(_) => {
                    self.errors += 1;
                    all_proven = false;
                    if 50.0 < value {
                        value = 50.0;
                        best = b;
                    }
                    continue;
                }
            };
            let (v, p) = self.search(&child, depth - 1, alpha, beta.min(value))?;
            all_proven &= p;
            if v < value {
                value = v;
                best = b;
            }
            if value <= alpha {
                // Our move is no better than one we have: this reply refutes it.
                self.reward_reply(mv, replies, best, depth, &mut joint);
                return Ok(((value, p), best));
            }
        }
        self.reward_reply(mv, replies, best, depth, &mut joint);
        Ok(((value, all_proven), best))
    }

    /// The indices of `moves`: `first` (if in range), then by history score, highest first.
    fn order(&self, moves: &[M::Move], first: Option<usize>) -> Vec<usize> {
        let first = first.filter(|&f| f < moves.len());
        let mut rest: Vec<usize> = (0..moves.len()).filter(|&i| Some(i) != first).collect();
        rest.sort_by_key(|&i| std::cmp::Reverse(self.history.get(&moves[i]).copied().unwrap_or(0)));
        first.into_iter().chain(rest).collect()
    }

    /// The indices of the others' joint replies: `first` (if in range), then by the summed
    /// history score of their moves, highest first.
    fn order_replies(
        &self,
        replies: &[Vec<M::Move>],
        n: usize,
        first: Option<usize>,
    ) -> Vec<usize> {
        let first = first.filter(|&f| f < n);
        let mut rest: Vec<(u64, usize)> = (0..n)
            .filter(|&i| Some(i) != first)
            .map(|i| {
                let mut score = 0u64;
                let mut left = i;
                for (r, moves) in replies.iter().enumerate() {
                    if r != self.role {
                        let m = moves[left % moves.len()];
                        left /= moves.len();
                        score += self.history.get(&m).copied().unwrap_or(0);
                    }
                }
                (score, i)
            })
            .collect();
        rest.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        first
            .into_iter()
            .chain(rest.into_iter().map(|(_, i)| i))
            .collect()
    }

    /// Credits the others' moves of reply `index` (the best reply to our `mv`) in the history.
    fn reward_reply(
        &mut self,
        mv: M::Move,
        replies: &[Vec<M::Move>],
        index: usize,
        depth: u32,
        joint: &mut Vec<M::Move>,
    ) {
        if replies.iter().all(|m| m.len() <= 1) {
            return;
        }
        self.joint(mv, replies, index, joint);
        for (r, &m) in joint.iter().enumerate() {
            if r != self.role && replies[r].len() > 1 {
                *self.history.entry(m).or_insert(0) += u64::from(depth * depth);
            }
        }
    }

    /// The joint move with our `mv` and the others' reply number `index` (mixed radix).
    fn joint(&self, mv: M::Move, replies: &[Vec<M::Move>], index: usize, out: &mut Vec<M::Move>) {
        out.clear();
        let mut rest = index;
        for (r, moves) in replies.iter().enumerate() {
            if r == self.role {
                out.push(mv);
            } else {
                out.push(moves[rest % moves.len()]);
                rest /= moves.len();
            }
        }
    }

    /// The value of `state` for us with `depth` joint moves to go, within `alpha..beta`
    /// (fail-soft).
    fn search(
        &mut self,
        state: &M::State,
        depth: u32,
        alpha: f64,
        beta: f64,
    ) -> Result<Scored, Halt> {
        self.nodes += 1;
        if let Some(p) = self.progress {
            p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if self.out_of_time() {
            return Err(Halt::Deadline);
        }
        match self.machine.is_terminal(state) {
            Ok(true) => {
                return Ok(match goal_or_zero(self.machine, state, self.role) {
                    Ok(g) => (f64::from(g), true),
                    Err(_) => self.failed(),
                });
            }
            Ok(false) => {}
            Err(_) => return Ok(self.failed()),
        }
        if depth == 0 {
            return Ok((self.evaluate(state)?, false));
        }
        let key = hash(state);
        let slot = (key as usize) & (self.table.len() - 1);
        let entry = self.table[slot];
        let mut hint = None;
        if entry.key == key {
            hint = Some(entry.best);
            if entry.depth == PROVEN || u32::from(entry.depth) >= depth {
                let v = f64::from(entry.value);
                let usable = match entry.bound {
                    Bound::Exact => true,
                    Bound::Lower => v >= beta,
                    Bound::Upper => v <= alpha,
                };
                if usable {
                    return Ok((v, entry.depth == PROVEN));
                }
            }
        }
        let ours = match self.machine.legal_moves(state, self.role) {
            Ok(m) if !m.is_empty() => m,
            _ => return Ok(self.failed()),
        };
        let replies = match self.replies(state) {
            Ok(r) => r,
            Err(Halt::Engine(_)) => return Ok(self.failed()),
            Err(h) => return Err(h),
        };
        let mut alpha = alpha;
        let original_alpha = alpha;
        let mut best = f64::NEG_INFINITY;
        let mut best_move = (0u16, 0u32);
        let mut all_proven = true;
        let mut cut_proven = None;
        let first = hint.map(|h| h.0 as usize);
        for a in self.order(&ours, first) {
            let reply_hint = hint.filter(|h| h.0 as usize == a).map(|h| h.1 as usize);
            let ((v, p), b) =
                self.min_over_replies(state, ours[a], &replies, depth, alpha, beta, reply_hint)?;
            all_proven &= p;
            if v > best {
                best = v;
                best_move = (a as u16, b as u32);
            }
            if best > alpha {
                alpha = best;
            }
            if alpha >= beta {
                cut_proven = Some(p);
                break;
            }
        }
        if let Some(&m) = ours.get(best_move.0 as usize) {
            *self.history.entry(m).or_insert(0) += u64::from(depth * depth);
        }
        let proven = cut_proven.unwrap_or(all_proven);
        let bound = if best <= original_alpha {
            Bound::Upper
        } else if best >= beta {
            Bound::Lower
        } else {
            Bound::Exact
        };
        let depth16 = if proven {
            PROVEN
        } else {
            depth.min(u32::from(PROVEN) - 1) as u16
        };
        if entry.key == key || entry.generation != self.generation || depth16 >= entry.depth {
            self.table[slot] = Entry {
                key,
                value: best as f32,
                depth: depth16,
                bound,
                generation: self.generation,
                best: best_move,
            };
        }
        Ok((best, proven))
    }

    /// The value of a state whose rules failed: 50, unproven.
    fn failed(&mut self) -> Scored {
        self.errors += 1;
        (50.0, false)
    }

    /// The material balance of `state` for us (see [`Material::balance`]), from fact ids where
    /// the engine has them (each fact's weight found once).
    fn balance(&mut self, material: &Material, state: &M::State) -> f64 {
        if !self.machine.fact_ids_into(state, &mut self.ids) {
            return material.balance(&*self.machine, state, self.role);
        }
        let unknown = self
            .ids
            .iter()
            .any(|&id| self.weights.get(id as usize).is_none_or(Option::is_none));
        if unknown {
            let terms = self.machine.state_terms(state);
            for (&id, term) in self.ids.iter().zip(&terms) {
                let i = id as usize;
                if self.weights.len() <= i {
                    self.weights.resize(i + 1, None);
                }
                self.weights[i] = Some(material.weight(term, self.role));
            }
        }
        self.ids
            .iter()
            .map(|&id| self.weights[id as usize].unwrap_or(0.0))
            .sum()
    }

    /// The mobility term of a leaf (see [`AlphaBetaSettings::mobility`]); 0 when off or when
    /// the legal moves fail.
    fn mobility(&mut self, state: &M::State) -> f64 {
        if !self.settings.mobility {
            return 0.0;
        }
        if heuristic::log_mobility(self.machine, state, &mut self.values).is_err() {
            return 0.0;
        }
        let role = self.role;
        let sum: f64 = (self.values.iter().enumerate())
            .map(|(r, &m)| if r == role { m } else { -m })
            .sum();
        MOBILITY_WEIGHT * sum
    }

    /// The heuristic value of a non-terminal state at the depth limit.
    fn evaluate(&mut self, state: &M::State) -> Result<f64, Halt> {
        if let Some(m) = self.material {
            let balance = 2.0 * self.balance(m, state) + self.mobility(state);
            return Ok(50.0 + 50.0 * balance.tanh());
        }
        if let (Some(_), Some(e)) = (self.heuristic, self.evaluator.as_deref_mut()) {
            let v = match e.values(self.machine, state, &mut self.values) {
                Ok(()) => 100.0 * self.values.get(self.role).copied().unwrap_or(0.5),
                Err(_) => {
                    self.errors += 1;
                    50.0
                }
            };
            let mobility = self.mobility(state);
            if mobility == 0.0 {
                return Ok(v);
            }
            // Back inside the `tanh`, add the mobility, and out again.
            let x = ((v - 50.0) / 50.0).clamp(-0.999_999, 0.999_999).atanh();
            return Ok(50.0 + 50.0 * (x + mobility).tanh());
        }
        let mut buffers = PlayoutBuffers::default();
        let (mut sum, mut count) = (0.0, 0u32);
        for _ in 0..self.settings.leaf_playouts {
            let last = timed_playout(
                self.machine,
                state,
                self.rng,
                self.deadline,
                self.settings.max_playout_steps,
                &mut buffers,
            );
            match last.and_then(|s| Ok(goal_or_zero(self.machine, &s, self.role)?)) {
                Ok(g) => {
                    sum += f64::from(g);
                    count += 1;
                }
                Err(Halt::Deadline) => return Err(Halt::Deadline),
                Err(Halt::Engine(_)) => self.errors += 1,
            }
        }
        if count > 0 {
            return Ok(sum / f64::from(count));
        }
        Ok(match self.machine.goal_values(state, self.role) {
            Ok(v) if v.len() == 1 => f64::from(v[0]),
            _ => 50.0,
        })
    }
}

/// The indices `0..n`, with `first` (if in range) moved to the front.
fn ordered(n: usize, first: Option<usize>) -> impl Iterator<Item = usize> {
    let first = first.filter(|&f| f < n);
    first
        .into_iter()
        .chain((0..n).filter(move |&i| Some(i) != first))
}

/// A 64-bit hash of a state, the same in every run.
fn hash<S: Hash>(state: &S) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    state.hash(&mut hasher);
    // Key 0 marks an empty entry.
    hasher.finish().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_puts_the_hint_first() {
        assert_eq!(ordered(4, Some(2)).collect::<Vec<_>>(), [2, 0, 1, 3]);
        assert_eq!(ordered(3, None).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(ordered(3, Some(7)).collect::<Vec<_>>(), [0, 1, 2]);
    }
}
