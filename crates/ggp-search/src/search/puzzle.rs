//! Single-player puzzles: a best-first search for a line that reaches goal 100.
//!
//! **Which games.** Deterministic games with one role: no nature (`random`) and no `sees`
//! rules ([`PuzzleError`] says why a game is not one). There the player controls every move,
//! so a line of moves found once to a terminal state with goal 100 wins for sure, and any line
//! to a terminal state with goal `g` guarantees `g`.
//!
//! **The search** ([`PuzzleSearch`]) is best-first over states, with a transposition table
//! keyed by the state's hash: a state met a second time, by whatever path, is not searched
//! again (the state is the whole game state, step counter included, so what can follow it does
//! not depend on the path). The open list is ordered by
//! 1. the goal value the rules give the state now (0 when they give none): many puzzles score
//!    partial progress (discs on the target peg, pegs left, squares visited);
//! 2. then the learnt heuristic's estimate of the final goal ([`super::heuristic`]), when one
//!    is given ([`PuzzleSearch::set_heuristic`]);
//! 3. then depth, deeper first, and among equals the state found last: with no guidance at
//!    all the search is a depth-first search with a transposition table, which suits the
//!    constraint puzzles (queens, tours) whose solutions all lie at the same depth.
//!
//! A queued state waits with its parent's goal and heuristic; its own are evaluated only when
//! it comes to the top of the open list (and if they are lower it goes back in its place), so
//! the many states that are never expanded cost only their transition and terminal test.
//!
//! Every new state is checked at once: a terminal one is scored, never queued, and the best
//! terminal goal found so far is kept with its line. A terminal state with goal 100 ends the
//! search ([`Outcome::Solved`]); the line to it is replayed through the rules with every move's
//! legality checked before it is given out, so a hash collision cannot make a wrong plan. When
//! the open list runs out and nothing was ever dropped, the search has seen every state
//! reachable from its root ([`Outcome::Exhausted`]) and its best line is the best there is.
//!
//! **Memory.** Closed states keep only their parent, move, hash and depth (the lines); open
//! states keep their state too. The estimated bytes are bounded ([`PuzzleSettings`]): past the
//! bound the worse half of the open list is dropped (the search is then no longer exhaustive),
//! and if the closed states alone fill it, the search stops growing until the next root.
//!
//! **Moving on.** [`PuzzleSearch::set_root`] with the state after our move keeps what was found
//! below it (the nodes that descend from it, renumbered; the rest, and the transposition
//! entries of states found first through another branch, are dropped, so the search is no
//! longer known to be exhaustive). A state the search never met starts a new search.
//!
//! [`PuzzlePlayer`] plays with it: the search runs at the start clock and at every play clock
//! until a solution is found, which is then played move by move (each state checked against
//! the one the line expects; a different state starts a new search). Until then each play clock
//! is shared with the MCTS player, and the move played is the first of the best line found when
//! its goal is at least what MCTS expects, MCTS's move otherwise.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;
use std::time::Instant;

use hashbrown::{DefaultHashBuilder, HashMap};

use ggp_engine::machine::{MachineError, StateMachine};

use super::heuristic::{Evaluator, Heuristic};
use super::mcts::{MctsPlayer, MctsSettings};
use super::{Choice, Player, SearchConfig, SearchError, past};

/// The part of each play clock the search gets while no solution is known (MCTS the rest).
const SEARCH_SHARE: (u32, u32) = (1, 3);
/// A guess at the heap bytes of one queued state and the table's slack for one entry.
const STATE_BYTES: usize = 160;
/// Estimated bytes of one transposition entry (hash, node, the table's slack).
const SEEN_BYTES: usize = 24;

/// Why a game is not a puzzle this search can play.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PuzzleError {
    /// The game has more (or fewer) roles than one.
    #[error("not a single-player game: {roles} roles")]
    Roles {
        /// The number of roles.
        roles: usize,
    },
    /// The game has nature or percepts (GDL-II).
    #[error("not a deterministic game of complete information (GDL-II: nature or sees)")]
    Gdl2,
}

/// How much the search may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PuzzleSettings {
    /// Estimated bytes of the table, the lines and the open list.
    pub memory_bytes: usize,
}

impl Default for PuzzleSettings {
    fn default() -> PuzzleSettings {
        PuzzleSettings {
            memory_bytes: 512 << 20,
        }
    }
}

/// How a call to [`PuzzleSearch::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A line to goal 100 was found ([`PuzzleSearch::solution`]).
    Solved,
    /// Every state reachable from the root was seen; [`PuzzleSearch::best`] is the best line.
    Exhausted,
    /// The deadline or the expansion budget came first.
    Stopped,
    /// The closed states fill the memory bound: the search cannot grow from this root.
    Full,
}

/// What a search has done since its root was set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PuzzleStats {
    /// States expanded (their moves listed and their children made).
    pub expanded: u64,
    /// States in the table.
    pub nodes: usize,
    /// States waiting in the open list.
    pub open: usize,
    /// Times the open list was cut to fit the memory bound.
    pub cuts: u64,
    /// Estimated bytes in use.
    pub bytes: usize,
}

/// A state met by the search: how it was reached.
#[derive(Debug, Clone, Copy)]
struct Node<Mv> {
    /// The node it was reached from (`u32::MAX` for the root).
    parent: u32,
    /// The move from the parent (`None` for the root).
    mv: Option<Mv>,
    /// The state's hash.
    hash: u64,
    /// Moves from the root.
    depth: u32,
}

/// The order of the open list: goal now, heuristic, depth, then the latest found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Priority {
    goal: u8,
    heuristic: u8,
    depth: u32,
    seq: u64,
}

/// A state waiting to be expanded.
struct Open<S> {
    /// Its own priority once evaluated; until then its parent's (with its own depth).
    priority: Priority,
    /// Whether `priority` is the state's own.
    evaluated: bool,
    node: u32,
    state: S,
}

impl<S> PartialEq for Open<S> {
    fn eq(&self, other: &Self) -> bool {
        self.priority == other.priority
    }
}

impl<S> Eq for Open<S> {}

impl<S> PartialOrd for Open<S> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<S> Ord for Open<S> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority.cmp(&other.priority)
    }
}

/// A line of moves from the search's root to a terminal state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<Mv> {
    /// The goal value at its end.
    pub goal: u8,
    /// The moves, first to last.
    pub moves: Vec<Mv>,
}

/// The best-first puzzle search (see the module documentation).
pub struct PuzzleSearch<M: StateMachine> {
    settings: PuzzleSettings,
    hasher: DefaultHashBuilder,
    nodes: Vec<Node<M::Move>>,
    /// Node by state hash.
    seen: HashMap<u64, u32>,
    open: BinaryHeap<Open<M::State>>,
    /// The root's state.
    root: Option<M::State>,
    /// The best terminal goal found below the root, and its node.
    best: Option<(u8, u32)>,
    /// Whether every state reachable from the root is in the table or the open list (nothing
    /// dropped, no branch cut off by a new root).
    complete: bool,
    /// Whether the closed states alone fill the memory bound.
    full: bool,
    seq: u64,
    stats: PuzzleStats,
    evaluator: Option<Evaluator>,
    /// Whether the open list was keyed without the current evaluator.
    stale: bool,
    role: usize,
    legal: Vec<M::Move>,
    values: Vec<f64>,
}

impl<M: StateMachine> PuzzleSearch<M> {
    /// A search for the single role of `machine`'s game.
    ///
    /// # Errors
    /// The game is not a puzzle ([`PuzzleError`]).
    pub fn new(machine: &M, settings: PuzzleSettings) -> Result<PuzzleSearch<M>, PuzzleError> {
        check(machine)?;
        Ok(PuzzleSearch {
            settings,
            hasher: DefaultHashBuilder::default(),
            nodes: Vec::new(),
            seen: HashMap::new(),
            open: BinaryHeap::new(),
            root: None,
            best: None,
            complete: false,
            full: false,
            seq: 0,
            stats: PuzzleStats::default(),
            evaluator: None,
            stale: false,
            role: 0,
            legal: Vec::new(),
            values: Vec::new(),
        })
    }

    /// Guides the search by a learnt heuristic for the role (from the next root on; `None`:
    /// by the goal and depth alone).
    pub fn set_heuristic(&mut self, heuristic: Option<Heuristic>) {
        self.stale = heuristic.is_some() || self.evaluator.is_some();
        self.evaluator = heuristic.map(|h| Evaluator::new(vec![Some(h)]));
    }

    /// What the search has done since its root was set.
    pub fn stats(&self) -> PuzzleStats {
        PuzzleStats {
            nodes: self.nodes.len(),
            open: self.open.len(),
            bytes: self.bytes(),
            ..self.stats
        }
    }

    /// Whether every state reachable from the root has been seen: the best line is then the
    /// best there is.
    pub fn exhausted(&self) -> bool {
        self.complete && self.open.is_empty() && self.root.is_some()
    }

    fn hash(&self, state: &M::State) -> u64 {
        self.hasher.hash_one(state)
    }

    fn bytes(&self) -> usize {
        self.nodes.len() * size_of::<Node<M::Move>>()
            + self.seen.len() * SEEN_BYTES
            + self.open.len() * (size_of::<Open<M::State>>() + STATE_BYTES)
    }

    /// Searches from `state` from now on: keeps what was found below it if the search met it,
    /// else starts afresh.
    ///
    /// # Errors
    /// The engine failed.
    pub fn set_root(&mut self, machine: &mut M, state: &M::State) -> Result<(), MachineError> {
        let hash = self.hash(state);
        if self.root.as_ref() == Some(state) {
            self.rekey(0);
            return Ok(());
        }
        match self.seen.get(&hash).copied() {
            Some(n) if self.root.is_some() => self.keep_below(n, state.clone()),
            _ => self.reset(machine, state)?,
        }
        Ok(())
    }

    /// A new search from `state`.
    fn reset(&mut self, machine: &mut M, state: &M::State) -> Result<(), MachineError> {
        self.nodes.clear();
        self.seen.clear();
        self.open.clear();
        self.best = None;
        self.complete = true;
        self.full = false;
        self.stale = false;
        self.stats = PuzzleStats::default();
        let hash = self.hash(state);
        self.nodes.push(Node {
            parent: u32::MAX,
            mv: None,
            hash,
            depth: 0,
        });
        self.seen.insert(hash, 0);
        self.root = Some(state.clone());
        if machine.is_terminal(state)? {
            let goal = goal_of(machine, state, self.role)?;
            self.best = Some((goal, 0));
        } else {
            let priority = self.priority(machine, state, 0)?;
            self.open.push(Open {
                priority,
                evaluated: true,
                node: 0,
                state: state.clone(),
            });
        }
        Ok(())
    }

    /// Keeps only what descends from node `n` (whose state is `state`), renumbered.
    fn keep_below(&mut self, n: u32, state: M::State) {
        let n = n as usize;
        // Parents come before their children, so one pass marks every descendant.
        let mut map = vec![u32::MAX; self.nodes.len()];
        let mut kept = Vec::new();
        let base = self.nodes[n].depth;
        for i in n..self.nodes.len() {
            let node = self.nodes[i];
            let inside = i == n
                || (node.parent != u32::MAX
                    && (node.parent as usize) >= n
                    && map[node.parent as usize] != u32::MAX);
            if inside {
                map[i] = kept.len() as u32;
                kept.push(Node {
                    parent: if i == n {
                        u32::MAX
                    } else {
                        map[node.parent as usize]
                    },
                    mv: if i == n { None } else { node.mv },
                    hash: node.hash,
                    depth: node.depth - base,
                });
            }
        }
        self.nodes = kept;
        // In place: no rehashing of a table of millions within a play clock.
        self.seen.retain(|_, v| {
            let m = map[*v as usize];
            *v = m;
            m != u32::MAX
        });
        let open = std::mem::take(&mut self.open);
        self.open = open
            .into_iter()
            .filter_map(|mut o| {
                let m = map[o.node as usize];
                (m != u32::MAX).then(|| {
                    o.node = m;
                    o
                })
            })
            .collect();
        self.best = self
            .best
            .and_then(|(g, b)| (map[b as usize] != u32::MAX).then(|| (g, map[b as usize])));
        // States first reached through another branch are gone from the table but were not
        // queued again: the search may miss them.
        self.complete = false;
        self.full = false;
        self.root = Some(state);
        self.rekey(base);
    }

    /// Counts depths from a root `base` moves deeper, and marks every open state to be
    /// evaluated again if the heuristic changed (it is, when it comes to the top).
    fn rekey(&mut self, base: u32) {
        if base == 0 && !self.stale {
            return;
        }
        let stale = std::mem::take(&mut self.stale);
        let mut open = std::mem::take(&mut self.open).into_vec();
        for o in &mut open {
            o.priority.depth -= base;
            o.evaluated &= !stale;
        }
        self.open = open.into();
    }

    fn priority(
        &mut self,
        machine: &mut M,
        state: &M::State,
        depth: u32,
    ) -> Result<Priority, MachineError> {
        let goal = machine
            .goal_values(state, self.role)?
            .last()
            .copied()
            .unwrap_or(0);
        let heuristic = match &mut self.evaluator {
            Some(e) => {
                e.values(machine, state, &mut self.values)?;
                (self.values.first().copied().unwrap_or(0.5) * 100.0).round() as u8
            }
            None => 50,
        };
        self.seq += 1;
        Ok(Priority {
            goal,
            heuristic,
            depth,
            seq: self.seq,
        })
    }

    /// Searches until a solution, the end of the open list, `deadline` or `max_expansions`
    /// more expansions.
    ///
    /// # Errors
    /// The engine failed.
    pub fn run(
        &mut self,
        machine: &mut M,
        deadline: Instant,
        max_expansions: Option<u64>,
    ) -> Result<Outcome, MachineError> {
        let mut done = 0u64;
        loop {
            if self.solved() {
                return Ok(Outcome::Solved);
            }
            if self.full {
                return Ok(Outcome::Full);
            }
            if max_expansions.is_some_and(|m| done >= m) {
                return Ok(Outcome::Stopped);
            }
            // Read before every expansion: one can take milliseconds (many children).
            if past(deadline) {
                return Ok(Outcome::Stopped);
            }
            let Some(mut open) = self.open.pop() else {
                if self.complete {
                    return Ok(Outcome::Exhausted);
                }
                // Something was dropped (a cut, or branches of an earlier root): search again
                // from the root, from scratch.
                let Some(root) = self.root.clone() else {
                    return Ok(Outcome::Stopped);
                };
                self.reset(machine, &root)?;
                continue;
            };
            if !open.evaluated {
                // Its own value: expanded now if it is no worse than its parent's, else queued
                // again in its place.
                let own = self.priority(machine, &open.state, open.priority.depth)?;
                let lower =
                    (own.goal, own.heuristic) < (open.priority.goal, open.priority.heuristic);
                open.priority = Priority {
                    seq: open.priority.seq,
                    ..own
                };
                open.evaluated = true;
                if lower {
                    self.open.push(open);
                    continue;
                }
            }
            self.expand(machine, open)?;
            done += 1;
            self.stats.expanded += 1;
            if self.bytes() > self.settings.memory_bytes {
                self.cut();
            }
        }
    }

    /// Makes the children of an open state.
    fn expand(&mut self, machine: &mut M, open: Open<M::State>) -> Result<(), MachineError> {
        let mut legal = std::mem::take(&mut self.legal);
        legal.clear();
        machine.legal_moves_into(&open.state, self.role, &mut legal)?;
        let depth = self.nodes[open.node as usize].depth + 1;
        let mut result = Ok(());
        for &mv in &legal {
            if let Err(e) = self.child(machine, &open, mv, depth) {
                result = Err(e);
                break;
            }
            if self.solved() {
                break;
            }
        }
        self.legal = legal;
        result
    }

    fn child(
        &mut self,
        machine: &mut M,
        open: &Open<M::State>,
        mv: M::Move,
        depth: u32,
    ) -> Result<(), MachineError> {
        let next = machine.next_state_unchecked(&open.state, &[mv])?;
        let hash = self.hash(&next);
        if self.seen.contains_key(&hash) {
            return Ok(());
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent: open.node,
            mv: Some(mv),
            hash,
            depth,
        });
        self.seen.insert(hash, id);
        if machine.is_terminal(&next)? {
            let goal = goal_of(machine, &next, self.role)?;
            if self.best.is_none_or(|(g, _)| goal > g) {
                self.best = Some((goal, id));
            }
        } else {
            // Evaluated when it comes to the top (most children never do).
            self.seq += 1;
            self.open.push(Open {
                priority: Priority {
                    depth,
                    seq: self.seq,
                    ..open.priority
                },
                evaluated: false,
                node: id,
                state: next,
            });
        }
        Ok(())
    }

    /// Drops the worse half of the open list; marks the search full if that is not enough.
    fn cut(&mut self) {
        let mut open = std::mem::take(&mut self.open).into_vec();
        let keep = open.len() / 2;
        // The best `keep` last, in linear time (a sort of millions would stall a play clock).
        let cut = open.len() - keep;
        if keep > 0 {
            open.select_nth_unstable(cut);
        }
        open.drain(..cut);
        self.open = open.into();
        self.complete = false;
        self.stats.cuts += 1;
        if self.bytes() > self.settings.memory_bytes {
            self.full = true;
        }
    }

    fn solved(&self) -> bool {
        self.best.is_some_and(|(g, _)| g == 100)
    }

    /// The moves from the root to node `n`.
    fn line_to(&self, mut n: u32) -> Vec<M::Move> {
        let mut moves = Vec::new();
        while let Some(mv) = self.nodes[n as usize].mv {
            moves.push(mv);
            n = self.nodes[n as usize].parent;
        }
        moves.reverse();
        moves
    }

    /// The best line found from the root to a terminal state, if any, replayed through the
    /// rules: `None` if a move is illegal or the end is not terminal with the goal expected
    /// (a hash collision).
    ///
    /// # Errors
    /// The engine failed.
    pub fn best(&self, machine: &mut M) -> Result<Option<Line<M::Move>>, MachineError> {
        let (Some((goal, n)), Some(root)) = (self.best, self.root.as_ref()) else {
            return Ok(None);
        };
        let moves = self.line_to(n);
        let mut state = root.clone();
        for &mv in &moves {
            if machine.is_terminal(&state)? {
                return Ok(None);
            }
            state = match machine.next_state(&state, &[mv]) {
                Ok(s) => s,
                Err(MachineError::IllegalMove { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
        }
        if !machine.is_terminal(&state)? || goal_of(machine, &state, self.role)? != goal {
            return Ok(None);
        }
        Ok(Some(Line { goal, moves }))
    }

    /// The line to goal 100, if one was found (checked as [`best`](Self::best)).
    ///
    /// # Errors
    /// The engine failed.
    pub fn solution(&self, machine: &mut M) -> Result<Option<Line<M::Move>>, MachineError> {
        if !self.solved() {
            return Ok(None);
        }
        self.best(machine)
    }
}

/// Whether the game of `machine` is a puzzle the search plays.
///
/// # Errors
/// Why it is not.
pub fn check<M: StateMachine>(machine: &M) -> Result<(), PuzzleError> {
    let roles = machine.roles().len();
    if roles != 1 {
        return Err(PuzzleError::Roles { roles });
    }
    if machine.is_gdl2() {
        return Err(PuzzleError::Gdl2);
    }
    Ok(())
}

/// The goal of a terminal state: the largest value the rules give, 0 when none.
fn goal_of<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
) -> Result<u8, MachineError> {
    super::goal_or_zero(machine, state, role)
}

/// A line being played: its moves and the hash of the state each is played in.
struct Plan<Mv> {
    moves: Vec<Mv>,
    hashes: Vec<u64>,
    next: usize,
}

/// The puzzle player: [`PuzzleSearch`] until it finds a solution, sharing each clock with
/// MCTS until then (see the module documentation). In a game that is not a puzzle it is the
/// MCTS player.
pub struct PuzzlePlayer<M: StateMachine> {
    settings: PuzzleSettings,
    search: Option<PuzzleSearch<M>>,
    mcts: MctsPlayer<M>,
    /// Whether MCTS has had its start.
    mcts_started: bool,
    role: usize,
    plan: Option<Plan<M::Move>>,
    started: Option<Instant>,
    hasher: DefaultHashBuilder,
    /// Expansions per start or move (`None`: by the clock alone).
    expansions: Option<u64>,
}

impl<M: StateMachine + Send + 'static> PuzzlePlayer<M> {
    /// A puzzle player whose fallback MCTS has `mcts`'s settings; the search's memory bound is
    /// MCTS's (`memory`). `config.max_iterations`, when set, is also the search's expansions
    /// per start or move, so that a search by budget is the same on every machine.
    pub fn new(config: SearchConfig, mcts: MctsSettings) -> PuzzlePlayer<M> {
        let settings = PuzzleSettings {
            memory_bytes: mcts.memory_bytes,
        };
        PuzzlePlayer {
            mcts: MctsPlayer::with_settings(config.clone(), mcts),
            expansions: config.max_iterations,
            settings,
            search: None,
            mcts_started: false,
            role: 0,
            plan: None,
            started: None,
            hasher: DefaultHashBuilder::default(),
        }
    }

    /// Sets the search's expansions per start or move (by default the configuration's
    /// `max_iterations`, which MCTS counts as playouts).
    pub fn set_expansions(&mut self, expansions: Option<u64>) {
        self.expansions = expansions;
    }

    /// Whether a solution is being played.
    pub fn solved(&self) -> bool {
        self.plan.is_some()
    }

    /// The search's statistics, if the game is a puzzle.
    pub fn stats(&self) -> Option<PuzzleStats> {
        self.search.as_ref().map(PuzzleSearch::stats)
    }

    /// Runs the search from its root until `deadline` (or the budget); on a solution, makes
    /// the plan. Whether it was solved.
    fn search(&mut self, machine: &mut M, deadline: Instant) -> Result<bool, SearchError> {
        let Some(search) = self.search.as_mut() else {
            return Ok(false);
        };
        let outcome = search.run(machine, deadline, self.expansions)?;
        let stats = search.stats();
        tracing::debug!("puzzle search: {outcome:?}, {stats:?}");
        if outcome != Outcome::Solved {
            return Ok(false);
        }
        let Some(line) = search.solution(machine)? else {
            tracing::warn!("puzzle: the solution found does not replay; searching again");
            if let Some(root) = search.root.clone() {
                search.reset(machine, &root)?;
            }
            return Ok(false);
        };
        let Some(root) = search.root.clone() else {
            return Ok(false);
        };
        let mut hashes = Vec::with_capacity(line.moves.len());
        let mut state = root;
        for &mv in &line.moves {
            hashes.push(self.hasher.hash_one(&state));
            state = machine.next_state_unchecked(&state, &[mv])?;
        }
        let since = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        tracing::info!(
            "puzzle: solved, {} moves to goal 100 ({:.2} s into the match, {} states expanded, {} in the table)",
            line.moves.len(),
            since,
            stats.expanded,
            stats.nodes
        );
        self.plan = Some(Plan {
            moves: line.moves,
            hashes,
            next: 0,
        });
        Ok(true)
    }

    /// The planned move for `state`, if the plan expects that state.
    fn planned(&mut self, state: &M::State) -> Option<M::Move> {
        let hash = self.hasher.hash_one(state);
        let plan = self.plan.as_mut()?;
        if plan.hashes.get(plan.next) == Some(&hash) {
            plan.next += 1;
            return Some(plan.moves[plan.next - 1]);
        }
        tracing::info!("puzzle: the state is not the one the solution expects; searching again");
        self.plan = None;
        None
    }

    fn start_mcts(&mut self, machine: &mut M, deadline: Instant) -> Result<(), SearchError> {
        self.mcts_started = true;
        self.mcts.start(machine, self.role, deadline)?;
        if let (Some(search), Some(h)) = (self.search.as_mut(), self.mcts.heuristics()) {
            search.set_heuristic(h.get(self.role).cloned().flatten());
        }
        Ok(())
    }

    fn choice(&self, mv: M::Move, goal: u8, proven: bool) -> Choice<M::Move> {
        Choice {
            mv,
            iterations: self.stats().map_or(0, |s| s.expanded),
            value: Some(f64::from(goal)),
            proven,
        }
    }
}

impl<M: StateMachine + Send + 'static> Player<M> for PuzzlePlayer<M> {
    fn name(&self) -> String {
        "puzzle".into()
    }

    fn hidden_settings(&self) -> Option<MctsSettings> {
        Player::<M>::hidden_settings(&self.mcts)
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        self.plan = None;
        self.mcts_started = false;
        self.started = Some(Instant::now());
        self.search = match PuzzleSearch::new(machine, self.settings) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::info!("puzzle: {e}; MCTS plays");
                None
            }
        };
        let Some(search) = self.search.as_mut() else {
            return self.start_mcts(machine, deadline);
        };
        search.role = role;
        let initial = machine.initial_state();
        search.set_root(machine, &initial)?;
        // Three quarters of the start clock for the search; MCTS (and its heuristic, which
        // then guides the search) gets the rest if no solution was found.
        let now = Instant::now();
        let until = now + deadline.saturating_duration_since(now) * 3 / 4;
        if self.search(machine, until)? {
            return Ok(());
        }
        self.start_mcts(machine, deadline)
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if self.search.is_none() {
            return self.mcts.choose(machine, state, deadline);
        }
        if let Some(mv) = self.planned(state) {
            return Ok(self.choice(mv, 100, true));
        }
        if let Some(search) = self.search.as_mut() {
            search.set_root(machine, state)?;
        }
        let now = Instant::now();
        let share = now + deadline.saturating_duration_since(now) * SEARCH_SHARE.0 / SEARCH_SHARE.1;
        let exhausted = self.search.as_ref().is_some_and(PuzzleSearch::exhausted);
        if !exhausted
            && self.search(machine, share)?
            && let Some(mv) = self.planned(state)
        {
            return Ok(self.choice(mv, 100, true));
        }
        let best = match self.search.as_ref() {
            Some(s) => s.best(machine)?,
            None => None,
        };
        let exhausted = self.search.as_ref().is_some_and(PuzzleSearch::exhausted);
        if let (Some(line), true) = (&best, exhausted) {
            // Every line was seen: this one is the best there is.
            if let Some(&mv) = line.moves.first() {
                return Ok(self.choice(mv, line.goal, true));
            }
        }
        if !self.mcts_started {
            self.start_mcts(machine, Instant::now())?;
        }
        let mcts = self.mcts.choose(machine, state, deadline)?;
        // MCTS's mean underrates what it will reach as it searches on (in puzzles it often
        // reaches 100 from a mean of 25), so the line is played over its move only when MCTS
        // has proven that it cannot do as well.
        if let Some(line) = best
            && let Some(&mv) = line.moves.first()
            && mcts.proven
            && mcts.value.is_some_and(|v| v < f64::from(line.goal))
        {
            tracing::debug!("puzzle: playing the best line found (goal {})", line.goal);
            return Ok(self.choice(mv, line.goal, true));
        }
        Ok(mcts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ggp_engine::datalog::DatalogMachine;
    use ggp_gdl::gdl::Description;
    use std::time::Duration;

    /// From 1, add one or double, at most `steps` times; 13 scores 100 (and ends the game),
    /// 12 scores 50, 8 scores 30, anything else 0.
    fn numbers(steps: u32) -> DatalogMachine {
        let mut text = format!(
            "(role player) (init (num 1)) (init (step 0))
             (<= (legal player inc) (true (num ?n)) (succ ?n ?m))
             (<= (legal player dbl) (true (num ?n)) (twice ?n ?m))
             (<= (next (num ?m)) (does player inc) (true (num ?n)) (succ ?n ?m))
             (<= (next (num ?m)) (does player dbl) (true (num ?n)) (twice ?n ?m))
             (<= (next (step ?t)) (true (step ?s)) (succ ?s ?t))
             (<= terminal (true (step {steps})))
             (<= terminal (true (num 13)))
             (<= (goal player 100) (true (num 13)))
             (<= (goal player 50) (true (num 12)))
             (<= (goal player 30) (true (num 8)))
             (<= (goal player 0) (not (true (num 13))) (not (true (num 12))) (not (true (num 8))))"
        );
        for n in 0..40 {
            text.push_str(&format!(" (succ {n} {})", n + 1));
        }
        for n in 1..=20 {
            text.push_str(&format!(" (twice {n} {})", 2 * n));
        }
        DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap()
    }

    /// A search rooted at the initial state.
    fn from_start(
        m: &mut DatalogMachine,
        settings: PuzzleSettings,
    ) -> PuzzleSearch<DatalogMachine> {
        let mut search = PuzzleSearch::new(m, settings).unwrap();
        let initial = m.initial_state();
        search.set_root(m, &initial).unwrap();
        search
    }

    /// A player started with a budget of 1,000 expansions.
    fn started(m: &mut DatalogMachine) -> PuzzlePlayer<DatalogMachine> {
        let config = SearchConfig {
            max_iterations: Some(1_000),
            ..SearchConfig::default()
        };
        let mut player = PuzzlePlayer::new(config, MctsSettings::default());
        player.start(m, 0, far()).unwrap();
        player
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    /// Plays `moves` from the initial state; the last state.
    fn replay(
        m: &mut DatalogMachine,
        moves: &[<DatalogMachine as StateMachine>::Move],
    ) -> <DatalogMachine as StateMachine>::State {
        let mut s = m.initial_state();
        for &mv in moves {
            s = m.next_state(&s, &[mv]).unwrap();
        }
        s
    }

    #[test]
    fn finds_the_line_to_100() {
        let mut m = numbers(5);
        let mut search = from_start(&mut m, PuzzleSettings::default());
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Solved);
        let line = search.solution(&mut m).unwrap().expect("a solution");
        assert_eq!(line.goal, 100);
        let end = replay(&mut m, &line.moves);
        assert!(m.is_terminal(&end).unwrap());
        assert_eq!(m.goal(&end, 0).unwrap(), 100);
        // 1 + 1 and 1 * 2 meet in one state: the table holds fewer states than the tree has
        // move sequences of up to five moves (63).
        assert!(search.stats().nodes < 63, "{:?}", search.stats());
    }

    #[test]
    fn without_a_solution_it_sees_everything_and_keeps_the_best_line() {
        // In three moves 13 and 12 are out of reach; 8 (double three times) scores 30.
        let mut m = numbers(3);
        let mut search = from_start(&mut m, PuzzleSettings::default());
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Exhausted);
        assert!(search.exhausted());
        assert!(search.solution(&mut m).unwrap().is_none());
        let line = search.best(&mut m).unwrap().expect("a best line");
        assert_eq!(line.goal, 30);
        let dbl = m.find_move(&ggp_gdl::gdl::parse_term("dbl").unwrap());
        assert_eq!(line.moves, vec![dbl.unwrap(); 3]);
    }

    #[test]
    fn a_budget_stops_it_and_it_goes_on_from_there() {
        let mut m = numbers(5);
        let mut search = from_start(&mut m, PuzzleSettings::default());
        assert_eq!(
            search.run(&mut m, far(), Some(1)).unwrap(),
            Outcome::Stopped
        );
        assert_eq!(search.stats().expanded, 1);
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Solved);
    }

    #[test]
    fn a_new_root_keeps_what_lies_below_it() {
        let mut m = numbers(5);
        let mut search = from_start(&mut m, PuzzleSettings::default());
        search.run(&mut m, far(), None).unwrap();
        let line = search.solution(&mut m).unwrap().unwrap();
        let expanded = search.stats().expanded;
        let next = replay(&mut m, &line.moves[..1]);
        search.set_root(&mut m, &next).unwrap();
        let rest = search.solution(&mut m).unwrap().expect("still solved");
        assert_eq!(rest.moves, line.moves[1..]);
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Solved);
        assert_eq!(search.stats().expanded, expanded, "no new search");
        // A state the search never met starts a new search.
        let mut s = m.initial_state();
        let inc = m
            .find_move(&ggp_gdl::gdl::parse_term("inc").unwrap())
            .unwrap();
        for _ in 0..4 {
            s = m.next_state(&s, &[inc]).unwrap();
        }
        search.set_root(&mut m, &s).unwrap();
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Exhausted);
    }

    #[test]
    fn the_memory_bound_is_kept() {
        let mut m = numbers(5);
        let mut search = from_start(&mut m, PuzzleSettings { memory_bytes: 1 });
        assert_eq!(search.run(&mut m, far(), None).unwrap(), Outcome::Full);
        assert!(search.stats().cuts > 0);
        assert!(!search.exhausted());
    }

    #[test]
    fn only_deterministic_single_player_games_are_puzzles() {
        let ttt = Description::from_text(include_str!("../../../../rules/ticTacToe.kif")).unwrap();
        let m = DatalogMachine::new(&ttt).unwrap();
        assert_eq!(check(&m), Err(PuzzleError::Roles { roles: 2 }));
        assert!(PuzzleSearch::new(&m, PuzzleSettings::default()).is_err());
        assert_eq!(check(&numbers(5)), Ok(()));
    }

    #[test]
    fn the_player_plays_its_solution_to_the_end() {
        let mut m = numbers(5);
        let mut player = started(&mut m);
        assert!(player.solved());
        let mut s = m.initial_state();
        while !m.is_terminal(&s).unwrap() {
            let choice = player.choose(&mut m, &s, far()).unwrap();
            assert!(choice.proven);
            s = m.next_state(&s, &[choice.mv]).unwrap();
        }
        assert_eq!(m.goal(&s, 0).unwrap(), 100);
    }

    #[test]
    fn off_the_plan_it_searches_again() {
        let mut m = numbers(5);
        let mut player = started(&mut m);
        // A move the plan did not make (a late move replaced by the referee, say): 1, 2, 3.
        let mut s = m.initial_state();
        let inc = m
            .find_move(&ggp_gdl::gdl::parse_term("inc").unwrap())
            .unwrap();
        for _ in 0..2 {
            s = m.next_state(&s, &[inc]).unwrap();
        }
        while !m.is_terminal(&s).unwrap() {
            let choice = player.choose(&mut m, &s, far()).unwrap();
            s = m.next_state(&s, &[choice.mv]).unwrap();
        }
        // 3, 6, 12, 13.
        assert_eq!(m.goal(&s, 0).unwrap(), 100);
    }
}
