//! Monte Carlo tree search (UCT) for any game: any number of roles, simultaneous moves.
//!
//! **Decoupled UCT.** A node holds, for every role, its legal moves and one statistic (visits,
//! summed reward) per move. Each role picks its own move by UCB1 over its own statistics
//! (unvisited moves first, at random), and the picks form the joint move; children are keyed
//! by the joint move (its index in mixed radix over the roles' move lists). A playout's goal
//! values, scaled to 0..1, are added to every role's statistic along the path. In a
//! turn-taking position the one role with a choice makes it and the others have a single
//! move, so this is plain UCT.
//!
//! **Solver: score bounds.** Every node keeps, per role, a value it is sure of (`low`) and a
//! value it cannot exceed (`high`), on the 0..1 scale (Cazenave and Saffidine, "Score Bounded
//! Monte-Carlo Tree Search", 2010, extended to any number of roles). A terminal node's bounds
//! are its goals; a new node's are 0 and 1. After each iteration the bounds are recomputed
//! bottom up along the path (`Tree::tighten`):
//! - where at most one role (the mover) has a choice, the mover is sure of its best child's
//!   `low`; a child that gives it 100 for sure is taken outright (a proven win); otherwise the
//!   other roles' bounds range over the children the mover may still prefer;
//! - in a simultaneous position each role is sure of what its best move guarantees against
//!   every reply, and the node is exact only when all outcomes agree (conservative: no
//!   mixed-strategy reasoning).
//!
//! A node is *settled* when `low == high` for every role. Selection never descends into a
//! settled node (reaching one backs up its value without a playout), and the mover skips
//! moves whose child is settled or cannot beat what it is already sure of, so proven losses
//! are avoided and draws can be proven. At the root, a move sure to give 100 is played at
//! once, and the search stops as soon as the root is settled.
//!
//! **Tree reuse.** The tree of the previous search is kept. When [`Player::choose`] is called
//! with a new state, it is looked for among the previous root's children and grandchildren;
//! if found, that subtree becomes the new tree (copied into a fresh arena, dropping the rest),
//! else a new tree is started.
//!
//! **Threads: root parallelisation.** Each thread has its own tree, its own machine (from
//! [`StateMachine::fork`]) and its own random generator, and the trees' root statistics are
//! merged to choose the move. This needs no lock, no virtual loss and no shared mutable state
//! (only a stop flag when a tree settles its root), keeps each thread deterministic for a
//! seed, and is the same code on one thread; with the two to four threads we run on, root
//! parallelisation plays about as well as a shared tree (Chaslot, Winands and van den Herik,
//! "Parallel Monte-Carlo Tree Search", 2008). Engines that cannot fork run one thread.
//!
//! **Clock and memory.** The clock is checked before every iteration and before every move
//! of a playout; an iteration cut by the deadline is dropped. Nodes are counted with an
//! estimate of their size in bytes ([`MctsSettings::memory_bytes`] over all trees); a full
//! tree stops growing and keeps running playouts from its leaves. An engine error in a playout
//! drops that iteration and is counted; an error while expanding a node makes it a settled
//! node worth 0 to every role.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::{MachineError, StateMachine};

use super::{
    Choice, Halt, Player, PlayoutBuffers, SearchConfig, SearchError, goal_or_zero, past,
    timed_playout,
};

/// Tuning of the MCTS player.
#[derive(Debug, Clone)]
pub struct MctsSettings {
    /// The UCB1 exploration constant, on rewards scaled to 0..1.
    pub exploration: f64,
    /// Estimated bytes all trees together may use.
    pub memory_bytes: usize,
    /// A playout that has not ended after this many moves is scored by the goals of its last
    /// state.
    pub max_playout_steps: usize,
}

impl Default for MctsSettings {
    fn default() -> MctsSettings {
        MctsSettings {
            exploration: 0.4,
            memory_bytes: 512 << 20,
            max_playout_steps: 5000,
        }
    }
}

/// What the last search did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MctsStats {
    /// Iterations completed (playouts, or value back-ups from settled nodes).
    pub iterations: u64,
    /// Iterations dropped because the engine failed.
    pub errors: u64,
    /// Nodes in all trees after the search.
    pub nodes: usize,
    /// Nodes kept from the previous search's trees.
    pub reused: usize,
    /// Threads (trees) searched.
    pub threads: usize,
    /// Wall-clock seconds of the search.
    pub seconds: f64,
    /// Whether the root's value is settled.
    pub root_settled: bool,
    /// The last engine failure met, if any.
    pub last_error: Option<MachineError>,
}

/// The MCTS player.
pub struct MctsPlayer<M: StateMachine> {
    config: SearchConfig,
    settings: MctsSettings,
    role: usize,
    /// Machines for threads 1.. (thread 0 uses the caller's).
    forks: Vec<M>,
    forked: bool,
    trees: Vec<Tree<M::State, M::Move>>,
    rngs: Vec<Xoshiro256PlusPlus>,
    stats: MctsStats,
}

impl<M: StateMachine> MctsPlayer<M> {
    /// A player with the default settings.
    pub fn new(config: SearchConfig) -> MctsPlayer<M> {
        MctsPlayer::with_settings(config, MctsSettings::default())
    }

    /// A player with explicit settings.
    pub fn with_settings(config: SearchConfig, settings: MctsSettings) -> MctsPlayer<M> {
        MctsPlayer {
            config,
            settings,
            role: 0,
            forks: Vec::new(),
            forked: false,
            trees: Vec::new(),
            rngs: Vec::new(),
            stats: MctsStats::default(),
        }
    }

    /// What the last search did.
    pub fn stats(&self) -> &MctsStats {
        &self.stats
    }

    /// Nodes in the trees now.
    pub fn nodes(&self) -> usize {
        self.trees.iter().map(|t| t.nodes.len()).sum()
    }
}

impl<M: StateMachine + Send> MctsPlayer<M> {
    /// Makes the machines and generators for the threads, once per match.
    fn prepare(&mut self, machine: &M) {
        if self.forked {
            return;
        }
        self.forked = true;
        for _ in 1..self.config.threads.max(1) {
            match machine.fork() {
                Some(m) => self.forks.push(m),
                None => break,
            }
        }
        let threads = self.forks.len() + 1;
        let budget = self.settings.memory_bytes / threads;
        self.trees = (0..threads).map(|_| Tree::new(budget)).collect();
        self.rngs = (0..threads as u64)
            .map(|i| {
                Xoshiro256PlusPlus::seed_from_u64(
                    self.config.seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )
            })
            .collect();
    }

    /// Searches from `state` until `deadline` (or the iteration limit, or a settled root).
    fn search(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.prepare(machine);
        let started = Instant::now();
        let mut reused = 0;
        for tree in &mut self.trees {
            // A kept root without moves is a node whose expansion failed: try again.
            if tree.reroot(state) && !tree.nodes[0].moves.is_empty() {
                reused += tree.nodes.len();
            } else {
                let root = Node::new(machine, state.clone())?;
                tree.reset(root);
            }
        }
        let ctx = Context {
            deadline,
            stop: AtomicBool::new(false),
            exploration: self.settings.exploration,
            max_steps: self.settings.max_playout_steps,
            progress: self.config.progress.clone(),
        };
        let threads = self.trees.len();
        let limit = self.config.max_iterations.unwrap_or(u64::MAX);
        let quota = |i: usize| {
            let (t, i) = (threads as u64, i as u64);
            if limit == u64::MAX {
                u64::MAX
            } else {
                limit / t + u64::from(i < limit % t)
            }
        };
        let counts: Vec<Counts> = if threads == 1 {
            vec![run_tree(
                &mut self.trees[0],
                machine,
                &mut self.rngs[0],
                &ctx,
                quota(0),
            )]
        } else {
            let ctx = &ctx;
            let machines = std::iter::once(machine).chain(self.forks.iter_mut());
            std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .trees
                    .iter_mut()
                    .zip(self.rngs.iter_mut())
                    .zip(machines)
                    .enumerate()
                    .map(|(i, ((tree, rng), m))| {
                        let q = quota(i);
                        scope.spawn(move || run_tree(tree, m, rng, ctx, q))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        self.stats = MctsStats {
            iterations: counts.iter().map(|c| c.iterations).sum(),
            errors: counts.iter().map(|c| c.errors).sum(),
            nodes: self.nodes(),
            reused,
            threads,
            seconds: started.elapsed().as_secs_f64(),
            root_settled: self.trees.iter().any(Tree::root_settled),
            last_error: counts.into_iter().find_map(|c| c.last_error),
        };
        Ok(())
    }

    /// The move to play from the trees' roots.
    fn best(&self) -> Result<Choice<M::Move>, SearchError> {
        let role = self.role;
        let first = &self.trees[0].nodes[0];
        let moves = first.moves.get(role).ok_or(SearchError::NoMove)?;
        let mut merged: Vec<MoveSummary> = vec![MoveSummary::default(); moves.len()];
        for tree in &self.trees {
            let root = &tree.nodes[0];
            let bounds = tree.move_bounds(0, role);
            for (i, mv) in root.moves[role].iter().enumerate() {
                let Some(j) = moves.iter().position(|m| m == mv) else {
                    continue;
                };
                let s = &mut merged[j];
                s.visits += u64::from(root.stats[role][i].visits);
                s.sum += root.stats[role][i].sum;
                s.lower = s.lower.max(bounds[i].0);
                s.upper = s.upper.min(bounds[i].1);
            }
        }
        if let Some(tree) = self.trees.iter().find(|t| t.root_settled()) {
            // The root's value is known: play a move sure to give it. Among several, the one
            // whose playouts scored best, which leaves a fallible opponent the most chances
            // to go wrong (a proven draw against a random player is often a win).
            let value = tree.nodes[0].low[role];
            let pick = (0..merged.len())
                .filter(|&i| merged[i].lower >= value)
                .max_by(|&i, &j| {
                    merged[i]
                        .mean()
                        .total_cmp(&merged[j].mean())
                        .then(merged[i].visits.cmp(&merged[j].visits))
                })
                .unwrap_or(0);
            return Ok(Choice {
                mv: moves[pick],
                iterations: self.stats.iterations,
                value: Some(value * 100.0),
                proven: true,
            });
        }
        let pick = pick_move(&merged);
        let s = &merged[pick];
        let value = if s.exact() || s.visits == 0 {
            Some(s.lower * 100.0).filter(|_| s.exact())
        } else {
            Some(s.mean() * 100.0)
        };
        Ok(Choice {
            mv: moves[pick],
            iterations: self.stats.iterations,
            value,
            proven: s.exact(),
        })
    }
}

impl<M: StateMachine + Send> Player<M> for MctsPlayer<M> {
    fn name(&self) -> String {
        "mcts".into()
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        self.forked = false;
        self.forks.clear();
        self.trees.clear();
        let initial = machine.initial_state();
        if machine.is_terminal(&initial)? {
            return Ok(());
        }
        self.search(machine, &initial, deadline)
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
        if machine.legal_moves(state, self.role)?.is_empty() {
            return Err(SearchError::NoMove);
        }
        self.search(machine, state, deadline)?;
        self.best()
    }
}

/// One root move's statistics merged over the trees.
#[derive(Debug, Clone, Copy)]
struct MoveSummary {
    visits: u64,
    sum: f64,
    /// What the move is sure to give us whatever the others reply (0..1).
    lower: f64,
    /// The most the move can give us.
    upper: f64,
}

impl Default for MoveSummary {
    fn default() -> MoveSummary {
        MoveSummary {
            visits: 0,
            sum: 0.0,
            lower: 0.0,
            upper: 1.0,
        }
    }
}

impl MoveSummary {
    fn mean(&self) -> f64 {
        if self.visits == 0 {
            0.0
        } else {
            self.sum / self.visits as f64
        }
    }

    fn exact(&self) -> bool {
        self.lower == self.upper
    }
}

/// The index of the move to play: the move sure to give the most, if that is 100; else the
/// most visited move among those whose value is not known exactly and that can still match
/// the best sure value, unless that sure value (above 0) is at least the move's mean.
fn pick_move(moves: &[MoveSummary]) -> usize {
    let cmp = |a: (f64, f64), b: (f64, f64)| a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal);
    let sure = (0..moves.len())
        .max_by(|&a, &b| {
            let key = |i: usize| (moves[i].lower, moves[i].visits as f64);
            cmp(key(a), key(b))
        })
        .unwrap_or(0);
    let best_lower = moves.get(sure).map_or(0.0, |m| m.lower);
    if best_lower >= 1.0 {
        return sure;
    }
    let open = (0..moves.len())
        .filter(|&i| !moves[i].exact() && moves[i].upper >= best_lower)
        .max_by(|&a, &b| {
            let key = |i: usize| (moves[i].visits as f64, moves[i].mean());
            cmp(key(a), key(b))
        });
    match open {
        Some(o) if best_lower <= 0.0 || best_lower < moves[o].mean() => o,
        _ => sure,
    }
}

/// What every thread of one search shares.
struct Context {
    deadline: Instant,
    /// Set when a tree settles its root.
    stop: AtomicBool,
    exploration: f64,
    max_steps: usize,
    /// Where finished playouts are counted as they happen (see [`SearchConfig::progress`]).
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// What one thread's search did.
#[derive(Debug, Default)]
struct Counts {
    iterations: u64,
    errors: u64,
    last_error: Option<MachineError>,
}

/// Runs iterations on one tree until the deadline, `quota` attempts, or a settled root.
fn run_tree<M: StateMachine>(
    tree: &mut Tree<M::State, M::Move>,
    machine: &mut M,
    rng: &mut Xoshiro256PlusPlus,
    ctx: &Context,
    quota: u64,
) -> Counts {
    let mut scratch = Scratch::default();
    let mut counts = Counts::default();
    while counts.iterations + counts.errors < quota && !ctx.stop.load(Ordering::Relaxed) {
        if tree.root_settled() {
            ctx.stop.store(true, Ordering::Relaxed);
            break;
        }
        if past(ctx.deadline) {
            break;
        }
        match tree.iterate(machine, rng, ctx, &mut scratch) {
            Ok(()) => {
                counts.iterations += 1;
                if let Some(p) = &ctx.progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(Halt::Engine(e)) => {
                counts.errors += 1;
                counts.last_error = Some(e);
            }
            Err(Halt::Deadline) => break,
        }
    }
    if tree.root_settled() {
        ctx.stop.store(true, Ordering::Relaxed);
    }
    counts
}

/// Per-move statistics of one role at one node.
#[derive(Debug, Clone, Copy)]
struct Stat {
    visits: u32,
    sum: f64,
    /// At a node with a single mover, the child this (mover's) move leads to.
    child: Option<u32>,
}

/// A node of the tree.
struct Node<S, Mv> {
    state: S,
    visits: u32,
    /// Legal moves per role (empty when terminal).
    moves: Vec<Vec<Mv>>,
    /// Statistics per role and move, parallel to `moves`.
    stats: Vec<Vec<Stat>>,
    /// (joint-move key, child index).
    children: Vec<(u64, u32)>,
    /// Per role, a value 0..1 the role is sure to get at least (pessimistic bound).
    low: Box<[f64]>,
    /// Per role, a value 0..1 the role cannot get more than (optimistic bound).
    high: Box<[f64]>,
    /// Number of joint moves (product of the move counts).
    n_joint: u64,
}

impl<S: Clone, Mv: Copy> Node<S, Mv> {
    /// The node for `state`: terminal (settled with its goals) or with every role's moves.
    fn new<M>(machine: &mut M, state: S) -> Result<Node<S, Mv>, MachineError>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let n_roles = machine.roles().len();
        let mut node = Node {
            state,
            visits: 0,
            moves: Vec::new(),
            stats: Vec::new(),
            children: Vec::new(),
            low: vec![0.0; n_roles].into(),
            high: vec![1.0; n_roles].into(),
            n_joint: 1,
        };
        if machine.is_terminal(&node.state)? {
            let goals = (0..n_roles)
                .map(|r| goal_or_zero(machine, &node.state, r).map(|g| f64::from(g) / 100.0))
                .collect::<Result<Box<[f64]>, _>>()?;
            node.low = goals.clone();
            node.high = goals;
            return Ok(node);
        }
        for r in 0..n_roles {
            let moves = machine.legal_moves(&node.state, r)?;
            if moves.is_empty() {
                return Err(MachineError::NoLegalMoves {
                    role: machine.roles()[r].to_string(),
                });
            }
            node.n_joint = node.n_joint.saturating_mul(moves.len() as u64);
            let stat = Stat {
                visits: 0,
                sum: 0.0,
                child: None,
            };
            node.stats.push(vec![stat; moves.len()]);
            node.moves.push(moves);
        }
        Ok(node)
    }

    /// A node whose expansion failed: settled, worth 0 to everyone.
    fn dead(state: S, n_roles: usize) -> Node<S, Mv> {
        Node {
            state,
            visits: 0,
            moves: Vec::new(),
            stats: Vec::new(),
            children: Vec::new(),
            low: vec![0.0; n_roles].into(),
            high: vec![0.0; n_roles].into(),
            n_joint: 1,
        }
    }

    /// The exact value per role, once known.
    fn value(&self) -> Option<&[f64]> {
        (self.low == self.high).then_some(&self.low)
    }

    fn settled(&self) -> bool {
        self.low == self.high
    }

    /// Estimated size in bytes.
    fn bytes(&self) -> usize {
        /// A guess at the heap a state and the vectors' slack take.
        const OVERHEAD: usize = 160;
        let per_move = size_of::<Mv>() + size_of::<Stat>();
        size_of::<Self>()
            + OVERHEAD
            + self.low.len() * 16
            + self
                .moves
                .iter()
                .map(|m| m.len() * per_move + 48)
                .sum::<usize>()
    }

    fn child(&self, key: u64) -> Option<u32> {
        self.children
            .iter()
            .find(|&&(k, _)| k == key)
            .map(|&(_, c)| c)
    }

    /// The only role with more than one move, if at most one has (role 0 if none has).
    fn mover(&self) -> Option<usize> {
        let mut choosers = (0..self.moves.len()).filter(|&r| self.moves[r].len() > 1);
        let first = choosers.next();
        match choosers.next() {
            Some(_) => None,
            None => Some(first.unwrap_or(0)),
        }
    }

    /// The joint-move key of one move index per role.
    fn key(&self, choice: &[u32]) -> u64 {
        let mut key = 0u64;
        let mut stride = 1u64;
        for (r, &c) in choice.iter().enumerate() {
            key = key.wrapping_add(u64::from(c).wrapping_mul(stride));
            stride = stride.wrapping_mul(self.moves[r].len() as u64);
        }
        key
    }

    /// Role `role`'s move index in the joint move `key`.
    fn index_in(&self, key: u64, role: usize) -> usize {
        let stride: u64 = self.moves[..role].iter().map(|m| m.len() as u64).product();
        ((key / stride.max(1)) % self.moves[role].len() as u64) as usize
    }
}

/// Buffers reused across iterations.
struct Scratch<Mv> {
    /// Nodes from the root to the last node reached.
    path: Vec<u32>,
    /// Move index per role at each path node but the last.
    choices: Vec<u32>,
    joint: Vec<Mv>,
    rewards: Vec<f64>,
    playout: PlayoutBuffers<Mv>,
}

impl<Mv> Default for Scratch<Mv> {
    fn default() -> Self {
        Scratch {
            path: Vec::new(),
            choices: Vec::new(),
            joint: Vec::new(),
            rewards: Vec::new(),
            playout: PlayoutBuffers::default(),
        }
    }
}

/// One search tree in an arena; the root is node 0.
struct Tree<S, Mv> {
    nodes: Vec<Node<S, Mv>>,
    /// Estimated bytes in use.
    bytes: usize,
    /// Estimated bytes allowed.
    budget: usize,
}

impl<S: Clone + Eq, Mv: Copy> Tree<S, Mv> {
    fn new(budget: usize) -> Tree<S, Mv> {
        Tree {
            nodes: Vec::new(),
            bytes: 0,
            budget,
        }
    }

    fn reset(&mut self, root: Node<S, Mv>) {
        self.bytes = root.bytes();
        self.nodes.clear();
        self.nodes.push(root);
    }

    fn root_settled(&self) -> bool {
        self.nodes.first().is_some_and(Node::settled)
    }

    /// Makes the node for `state` among the root, its children and its grandchildren the new
    /// root, keeping its subtree; false if there is none.
    fn reroot(&mut self, state: &S) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        let mut level = vec![0u32];
        for _ in 0..3 {
            if let Some(&found) = level
                .iter()
                .find(|&&id| self.nodes[id as usize].state == *state)
            {
                self.compact(found);
                return true;
            }
            level = level
                .iter()
                .flat_map(|&id| self.nodes[id as usize].children.iter().map(|&(_, c)| c))
                .collect();
        }
        false
    }

    /// Keeps only the subtree of `root`, renumbered breadth first from 0.
    fn compact(&mut self, root: u32) {
        if root == 0 {
            return;
        }
        let mut slots: Vec<Option<Node<S, Mv>>> = std::mem::take(&mut self.nodes)
            .into_iter()
            .map(Some)
            .collect();
        let mut queue = VecDeque::from([root]);
        let mut renumbered: Vec<(u32, u32)> = Vec::new();
        let mut assigned = 1u32;
        self.bytes = 0;
        while let Some(old) = queue.pop_front() {
            let Some(mut node) = slots[old as usize].take() else {
                continue;
            };
            renumbered.clear();
            for (_, child) in &mut node.children {
                queue.push_back(*child);
                renumbered.push((*child, assigned));
                *child = assigned;
                assigned += 1;
            }
            for stats in &mut node.stats {
                for s in stats {
                    if let Some(c) = s.child {
                        s.child = renumbered.iter().find(|r| r.0 == c).map(|r| r.1);
                    }
                }
            }
            self.bytes += node.bytes() + node.children.len() * 16;
            self.nodes.push(node);
        }
    }

    /// Adds a node as the child `key` of `parent`, if the budget allows.
    fn add_child(&mut self, parent: u32, key: u64, node: Node<S, Mv>) -> Option<u32> {
        let bytes = node.bytes() + 16;
        if self.bytes + bytes > self.budget || self.nodes.len() >= u32::MAX as usize {
            return None;
        }
        let id = self.nodes.len() as u32;
        self.bytes += bytes;
        self.nodes.push(node);
        let p = &mut self.nodes[parent as usize];
        p.children.push((key, id));
        if let Some(m) = p.mover() {
            let i = p.index_in(key, m);
            p.stats[m][i].child = Some(id);
        }
        Some(id)
    }

    /// Role `role`'s move at node `id`: by UCB1 over the moves worth exploring (unvisited
    /// first, at random). When `role` is the node's only mover, moves whose child is settled
    /// or cannot beat what the mover is already sure of are left out while others remain,
    /// and a settled child counts at its value.
    fn select(&self, id: u32, role: usize, c: f64, mover: bool, rng: &mut impl Rng) -> u32 {
        let node = &self.nodes[id as usize];
        let stats = &node.stats[role];
        if stats.len() == 1 {
            return 0;
        }
        let sure = node.low[role];
        let worth = |s: &Stat| match s.child {
            Some(child) if mover => {
                let child = &self.nodes[child as usize];
                !child.settled() && child.high[role] > sure
            }
            _ => true,
        };
        let open = stats.iter().filter(|s| worth(s)).count();
        let consider = |s: &Stat| open == 0 || worth(s);
        let unvisited = stats
            .iter()
            .filter(|s| s.visits == 0 && consider(s))
            .count();
        if unvisited > 0 {
            let k = rng.random_range(0..unvisited);
            let i = stats
                .iter()
                .enumerate()
                .filter(|(_, s)| s.visits == 0 && consider(s))
                .nth(k)
                .map_or(0, |(i, _)| i);
            return i as u32;
        }
        let log_n = f64::from(node.visits.max(1)).ln();
        let mut best = (f64::NEG_INFINITY, 0u32);
        for (i, s) in stats.iter().enumerate() {
            if !consider(s) {
                continue;
            }
            let n = f64::from(s.visits.max(1));
            let settled = s
                .child
                .filter(|_| mover)
                .and_then(|ch| self.nodes[ch as usize].value().map(|v| v[role]));
            let mean = settled.unwrap_or(s.sum / n);
            let score = mean + c * (log_n / n).sqrt();
            if score > best.0 {
                best = (score, i as u32);
            }
        }
        best.1
    }

    /// One iteration: select down to a new or settled node, play out, back up, tighten the
    /// bounds.
    fn iterate<M>(
        &mut self,
        machine: &mut M,
        rng: &mut Xoshiro256PlusPlus,
        ctx: &Context,
        scratch: &mut Scratch<Mv>,
    ) -> Result<(), Halt>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let n_roles = machine.roles().len();
        scratch.path.clear();
        scratch.choices.clear();
        let mut id = 0u32;
        let rewards: Vec<f64> = loop {
            scratch.path.push(id);
            let node = &self.nodes[id as usize];
            if let Some(v) = node.value() {
                break v.to_vec();
            }
            let mover = node.mover();
            let start = scratch.choices.len();
            for r in 0..n_roles {
                let pick = self.select(id, r, ctx.exploration, mover == Some(r), rng);
                scratch.choices.push(pick);
            }
            let node = &self.nodes[id as usize];
            let key = node.key(&scratch.choices[start..]);
            if let Some(child) = node.child(key) {
                id = child;
                continue;
            }
            scratch.joint.clear();
            scratch
                .joint
                .extend((0..n_roles).map(|r| node.moves[r][scratch.choices[start + r] as usize]));
            let state = machine.next_state_unchecked(&node.state, &scratch.joint)?;
            if past(ctx.deadline) {
                return Err(Halt::Deadline);
            }
            let child = Node::new(machine, state.clone())
                .unwrap_or_else(|_| Node::dead(state.clone(), n_roles));
            let settled = child.value().map(<[f64]>::to_vec);
            if let Some(c) = self.add_child(id, key, child) {
                scratch.path.push(c);
            }
            if let Some(v) = settled {
                break v;
            }
            let last = timed_playout(
                machine,
                &state,
                rng,
                ctx.deadline,
                ctx.max_steps,
                &mut scratch.playout,
            )?;
            break (0..n_roles)
                .map(|r| goal_or_zero(machine, &last, r).map(|g| f64::from(g) / 100.0))
                .collect::<Result<Vec<f64>, _>>()?;
        };
        scratch.rewards = rewards;
        self.back_up(scratch, n_roles);
        Ok(())
    }

    /// Adds the rewards along the path and tightens the bounds bottom up, while they change.
    fn back_up(&mut self, scratch: &Scratch<Mv>, n_roles: usize) {
        let n_chosen = scratch.choices.len() / n_roles.max(1);
        for k in 0..n_chosen {
            let node = &mut self.nodes[scratch.path[k] as usize];
            node.visits = node.visits.saturating_add(1);
            for r in 0..n_roles {
                let s = &mut node.stats[r][scratch.choices[k * n_roles + r] as usize];
                s.visits = s.visits.saturating_add(1);
                s.sum += scratch.rewards[r];
            }
        }
        for k in (0..n_chosen).rev() {
            if !self.tighten(scratch.path[k] as usize) {
                break;
            }
        }
    }

    /// Recomputes node `id`'s bounds from its children; true if they changed.
    ///
    /// With a single mover m: m is sure of the best `low` among the children and can get at
    /// most the best `high` (1 while a child is missing). If a child gives m 100 for sure, m
    /// plays it and the node takes that child's bounds. Otherwise the other roles' bounds
    /// range over the children m may still prefer (those whose `high` for m reaches m's sure
    /// value) and the missing ones. In a simultaneous position each role is sure of the best,
    /// over its moves, of the worst `low` over the others' replies (0 while a reply is
    /// missing), and can get at most the best `high` of any child.
    fn tighten(&mut self, id: usize) -> bool {
        let node = &self.nodes[id];
        if node.settled() {
            return false;
        }
        let n_roles = node.low.len();
        let complete = node.children.len() as u64 == node.n_joint;
        let kids = || node.children.iter().map(|&(_, c)| &self.nodes[c as usize]);
        let (unseen_low, unseen_high) = if complete { (1.0, 0.0) } else { (0.0, 1.0) };
        let mut low = vec![0.0; n_roles];
        let mut high = vec![0.0; n_roles];
        match node.mover() {
            Some(m) => {
                if let Some(win) = kids().find(|c| c.low[m] >= 1.0) {
                    low.copy_from_slice(&win.low);
                    high.copy_from_slice(&win.high);
                } else {
                    let sure = kids().map(|c| c.low[m]).fold(0.0, f64::max);
                    for r in 0..n_roles {
                        let candidates = || kids().filter(|c| c.high[m] >= sure);
                        low[r] = candidates().map(|c| c.low[r]).fold(unseen_low, f64::min);
                        high[r] = candidates().map(|c| c.high[r]).fold(unseen_high, f64::max);
                    }
                    low[m] = sure;
                    high[m] = kids().map(|c| c.high[m]).fold(unseen_high, f64::max);
                }
            }
            None => {
                for r in 0..n_roles {
                    let n_moves = node.moves[r].len();
                    let replies = node.n_joint / n_moves as u64;
                    let mut worst = vec![(0u64, f64::INFINITY); n_moves];
                    for &(key, c) in &node.children {
                        let w = &mut worst[node.index_in(key, r)];
                        w.0 += 1;
                        w.1 = w.1.min(self.nodes[c as usize].low[r]);
                    }
                    low[r] = worst
                        .iter()
                        .filter(|w| w.0 == replies)
                        .map(|w| w.1)
                        .fold(0.0, f64::max);
                    high[r] = kids().map(|c| c.high[r]).fold(unseen_high, f64::max);
                }
            }
        }
        // Bounds only tighten; keep the old ones where a recomputation is looser.
        for r in 0..n_roles {
            low[r] = low[r].max(node.low[r]);
            high[r] = high[r].min(node.high[r]).max(low[r]);
        }
        let changed = *low != *node.low || *high != *node.high;
        if changed {
            let node = &mut self.nodes[id];
            node.low = low.into();
            node.high = high.into();
        }
        changed
    }

    /// For each of `role`'s moves at node `id`: the least `low` and the greatest `high` for
    /// `role` over the others' replies (0 and 1 while a reply is missing).
    fn move_bounds(&self, id: u32, role: usize) -> Vec<(f64, f64)> {
        let node = &self.nodes[id as usize];
        let Some(moves) = node.moves.get(role) else {
            return Vec::new();
        };
        let replies = node.n_joint / moves.len().max(1) as u64;
        let mut acc: Vec<(u64, f64, f64)> =
            vec![(0, f64::INFINITY, f64::NEG_INFINITY); moves.len()];
        for &(key, child) in &node.children {
            let c = &self.nodes[child as usize];
            let a = &mut acc[node.index_in(key, role)];
            a.0 += 1;
            a.1 = a.1.min(c.low[role]);
            a.2 = a.2.max(c.high[role]);
        }
        acc.into_iter()
            .map(|(n, lo, hi)| if n == replies { (lo, hi) } else { (0.0, 1.0) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(visits: u64, mean: f64, bounds: Option<(f64, f64)>) -> MoveSummary {
        let (lower, upper) = bounds.unwrap_or((0.0, 1.0));
        MoveSummary {
            visits,
            sum: mean * visits as f64,
            lower,
            upper,
        }
    }

    #[test]
    fn a_guaranteed_win_is_picked_over_more_visits() {
        let moves = [summary(900, 0.7, None), summary(10, 0.9, Some((1.0, 1.0)))];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn a_settled_loss_is_avoided_even_if_most_visited() {
        let moves = [summary(900, 0.6, Some((0.0, 0.0))), summary(100, 0.4, None)];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn the_most_visited_open_move_is_picked() {
        let moves = [
            summary(10, 0.9, None),
            summary(500, 0.6, None),
            summary(40, 0.5, None),
        ];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn a_settled_draw_beats_an_open_move_with_a_lower_mean() {
        let moves = [summary(500, 0.3, None), summary(100, 0.5, Some((0.5, 0.5)))];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn joint_keys_round_trip() {
        let node: Node<u8, u8> = Node {
            state: 0,
            visits: 0,
            moves: vec![vec![1, 2, 3], vec![4], vec![5, 6]],
            stats: Vec::new(),
            children: Vec::new(),
            low: vec![0.0; 3].into(),
            high: vec![1.0; 3].into(),
            n_joint: 6,
        };
        let key = node.key(&[2, 0, 1]);
        assert_eq!(key, 2 + 3);
        assert_eq!(node.index_in(key, 0), 2);
        assert_eq!(node.index_in(key, 1), 0);
        assert_eq!(node.index_in(key, 2), 1);
        assert_eq!(node.mover(), None);
    }
}
