//! The search tree: nodes in an arena, selection down the tree, expansion, back-up, and
//! tree reuse between moves.
//!
//! Every new state gets a node of its own (no transpositions: a state reached by two orders of
//! moves is two nodes; sharing them was measured, see `docs/experiments/transpositions.md`),
//! so the arena is a tree and a descent never meets a node twice.
//!
//! **Node pool.** The arena holds at most [`super::MctsSettings::memory_bytes`] (estimated)
//! per tree; when full the tree stops growing and keeps playing out from its leaves. After
//! each move the new root's subtree is kept where it is (the new root trades slots with the
//! old, so that the root is always slot 0) and every other slot is freed; new nodes are
//! filled into free slots, their vectors' memory reused. So a long match never grows past
//! the bound, and nothing is moved or freed on the clock: freeing the abandoned nodes, some
//! ten allocations each, took 0.46 s of a 3.9 s move on average and up to 1.9 s, and could
//! overrun the deadline; moving the kept ones into a fresh arena took 0.16 s.
//!
//! A node holds every role's legal moves and one [`Stat`] per move; children are keyed by the
//! joint move. [`Tree::iterate`] runs one iteration with the thread's [`Policies`]: the
//! selection rule scores moves, the playout policy plays past the tree, the evaluation scores
//! the playout's end. The solver's bounds (see [`super::solver`]) decide which moves are worth
//! selecting.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::search::{Halt, goal_or_zero, past};
use ggp_engine::machine::{MachineError, StateMachine};

use super::parallel::Context;
use super::select::{MoveView, Selection};
use super::{Policies, Rivalry};

/// Per-move statistics of one role at one node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub(super) visits: u32,
    pub(super) sum: f64,
    /// At a node with a single mover, the child this (mover's) move leads to.
    pub(super) child: Option<u32>,
}

/// A node of the tree.
pub(super) struct Node<S, Mv> {
    pub(super) state: S,
    pub(super) visits: u32,
    /// Legal moves per role (empty when terminal).
    pub(super) moves: Vec<Vec<Mv>>,
    /// Statistics per role and move, parallel to `moves`.
    pub(super) stats: Vec<Vec<Stat>>,
    /// (joint-move key, child index).
    pub(super) children: Vec<(u64, u32)>,
    /// Per role, a value 0..1 the role is sure to get at least (pessimistic bound).
    pub(super) low: Box<[f64]>,
    /// Per role, a value 0..1 the role cannot get more than (optimistic bound).
    pub(super) high: Box<[f64]>,
    /// Number of joint moves (product of the move counts).
    pub(super) n_joint: u64,
    /// Per role, the implicit minimax value 0..1 (used only with
    /// [`super::parallel::Context::implicit`]): the heuristic's estimate of the node's state
    /// when it was added, then, at a node with one mover, the value of the child best for the
    /// mover, backed up after each iteration; the goals at a terminal node.
    pub(super) im: Box<[f64]>,
}

impl<S: Clone, Mv: Copy> Node<S, Mv> {
    /// The node for `state`: terminal (settled with its goals) or with every role's moves.
    pub(super) fn new<M>(machine: &mut M, state: S) -> Result<Node<S, Mv>, MachineError>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let mut node = Node::new_unfilled(state);
        node.fill(machine)?;
        Ok(node)
    }

    /// A node for `state` with nothing filled in yet.
    fn new_unfilled(state: S) -> Node<S, Mv> {
        Node {
            state,
            visits: 0,
            moves: Vec::new(),
            stats: Vec::new(),
            children: Vec::new(),
            low: Box::default(),
            high: Box::default(),
            n_joint: 1,
            im: Box::default(),
        }
    }

    /// Makes this node the fresh node of its `state`, as [`Node::new`] does, reusing its
    /// vectors' memory (a recycled node of the pool, see [`Tree`]).
    fn fill<M>(&mut self, machine: &mut M) -> Result<(), MachineError>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let n_roles = machine.roles().len();
        self.visits = 0;
        self.children.clear();
        self.n_joint = 1;
        set_all(&mut self.low, n_roles, 0.0);
        set_all(&mut self.high, n_roles, 1.0);
        set_all(&mut self.im, n_roles, 0.5);
        if machine.is_terminal(&self.state)? {
            self.moves.clear();
            self.stats.clear();
            for r in 0..n_roles {
                let g = f64::from(goal_or_zero(machine, &self.state, r)?) / 100.0;
                self.low[r] = g;
                self.high[r] = g;
                self.im[r] = g;
            }
            return Ok(());
        }
        self.moves.resize_with(n_roles, Vec::new);
        self.stats.resize_with(n_roles, Vec::new);
        let stat = Stat {
            visits: 0,
            sum: 0.0,
            child: None,
        };
        for r in 0..n_roles {
            let moves = &mut self.moves[r];
            moves.clear();
            machine.legal_moves_into(&self.state, r, moves)?;
            if moves.is_empty() {
                return Err(MachineError::NoLegalMoves {
                    role: machine.roles()[r].to_string(),
                });
            }
            self.n_joint = self.n_joint.saturating_mul(moves.len() as u64);
            self.stats[r].clear();
            self.stats[r].resize(moves.len(), stat);
        }
        Ok(())
    }

    /// Makes this node one whose expansion failed: settled, worth 0 to everyone.
    fn kill(&mut self, n_roles: usize) {
        self.visits = 0;
        self.moves.clear();
        self.stats.clear();
        self.children.clear();
        self.n_joint = 1;
        set_all(&mut self.low, n_roles, 0.0);
        set_all(&mut self.high, n_roles, 0.0);
        set_all(&mut self.im, n_roles, 0.0);
    }

    /// The exact value per role, once known.
    pub(super) fn value(&self) -> Option<&[f64]> {
        (self.low == self.high).then_some(&self.low)
    }

    pub(super) fn settled(&self) -> bool {
        self.low == self.high
    }

    /// Estimated size in bytes.
    pub(super) fn bytes(&self) -> usize {
        /// A guess at the heap a state and the vectors' slack take.
        const OVERHEAD: usize = 160;
        let per_move = size_of::<Mv>() + size_of::<Stat>();
        size_of::<Self>()
            + OVERHEAD
            + self.low.len() * 24
            + self
                .moves
                .iter()
                .map(|m| m.len() * per_move + 48)
                .sum::<usize>()
    }

    pub(super) fn child(&self, key: u64) -> Option<u32> {
        self.children
            .iter()
            .find(|&&(k, _)| k == key)
            .map(|&(_, c)| c)
    }

    /// The only role with more than one move, if at most one has (role 0 if none has).
    pub(super) fn mover(&self) -> Option<usize> {
        let mut choosers = (0..self.moves.len()).filter(|&r| self.moves[r].len() > 1);
        let first = choosers.next();
        match choosers.next() {
            Some(_) => None,
            None => Some(first.unwrap_or(0)),
        }
    }

    /// The joint-move key of one move index per role.
    pub(super) fn key(&self, choice: &[u32]) -> u64 {
        let mut key = 0u64;
        let mut stride = 1u64;
        for (r, &c) in choice.iter().enumerate() {
            key = key.wrapping_add(u64::from(c).wrapping_mul(stride));
            stride = stride.wrapping_mul(self.moves[r].len() as u64);
        }
        key
    }

    /// Role `role`'s move index in the joint move `key`.
    pub(super) fn index_in(&self, key: u64, role: usize) -> usize {
        let stride: u64 = self.moves[..role].iter().map(|m| m.len() as u64).product();
        ((key / stride.max(1)) % self.moves[role].len() as u64) as usize
    }
}

/// Sets `slots` to `n` copies of `value`, reusing its memory when it already has `n`.
fn set_all(slots: &mut Box<[f64]>, n: usize, value: f64) {
    if slots.len() == n {
        slots.fill(value);
    } else {
        *slots = vec![value; n].into();
    }
}

/// Where a descent ([`Tree::descend`]) stopped.
pub(super) enum Leaf<S> {
    /// At a settled node (or a new one, terminal or dead): its value per role, 0..1.
    Value(Vec<f64>),
    /// At a new node (or one the full tree could not keep): a playout starts from its state.
    Playout(S),
}

/// Buffers reused across iterations.
pub(super) struct Scratch<Mv> {
    /// Nodes from the root to the last node reached.
    path: Vec<u32>,
    /// Move index per role at each path node but the last.
    choices: Vec<u32>,
    joint: Vec<Mv>,
    rewards: Vec<f64>,
    /// A new node's estimated rewards.
    estimate: Vec<f64>,
}

impl<Mv> Default for Scratch<Mv> {
    fn default() -> Self {
        Scratch {
            path: Vec::new(),
            choices: Vec::new(),
            joint: Vec::new(),
            rewards: Vec::new(),
            estimate: Vec::new(),
        }
    }
}

/// One search tree in an arena; the root is node 0.
pub(super) struct Tree<S, Mv> {
    pub(super) nodes: Vec<Node<S, Mv>>,
    /// Estimated bytes in use.
    bytes: usize,
    /// Estimated bytes allowed.
    budget: usize,
    /// Slots of the arena whose nodes are no longer in the tree, to be filled again as new
    /// nodes (the pool).
    free: Vec<u32>,
    /// Scratch: an implicit minimax value being backed up.
    im_buf: Vec<f64>,
}

impl<S: Clone + Eq, Mv: Copy + Eq> Tree<S, Mv> {
    /// An empty tree of at most `budget` estimated bytes.
    pub(super) fn new(budget: usize) -> Tree<S, Mv> {
        Tree {
            nodes: Vec::new(),
            bytes: 0,
            budget,
            free: Vec::new(),
            im_buf: Vec::new(),
        }
    }

    /// Estimated bytes in use (at most the budget, but for a root bigger than it).
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Makes `root` the whole tree (every other slot freed).
    pub(super) fn reset(&mut self, root: Node<S, Mv>) {
        self.bytes = root.bytes();
        self.free.clear();
        match self.nodes.first_mut() {
            Some(first) => {
                *first = root;
                self.free.extend((1..self.nodes.len() as u32).rev());
            }
            None => self.nodes.push(root),
        }
    }

    /// The number of nodes in the tree (the arena's slots less the free ones).
    pub(super) fn len(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    pub(super) fn root_settled(&self) -> bool {
        self.nodes.first().is_some_and(Node::settled)
    }

    /// Makes the node for `state` the new root, keeping its subtree; false if there is none.
    /// It is looked for among the root, its children and its grandchildren.
    pub(super) fn reroot(&mut self, state: &S) -> bool {
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

    /// Keeps only the nodes `root` reaches, where they are, but for `root` itself, which
    /// trades slots with the old root (0): the arena is a tree, so no kept node points at
    /// either slot. Every other slot is freed, to be filled again: nothing is moved or freed
    /// but the two roots.
    fn compact(&mut self, root: u32) {
        if root == 0 {
            // Every node was added below the root.
            return;
        }
        let mut kept = vec![false; self.nodes.len()];
        kept[root as usize] = true;
        let mut stack = vec![root];
        self.bytes = 0;
        while let Some(id) = stack.pop() {
            let node = &self.nodes[id as usize];
            self.bytes += node.bytes() + node.children.len() * 16;
            for &(_, child) in &node.children {
                kept[child as usize] = true;
                stack.push(child);
            }
        }
        self.nodes.swap(0, root as usize);
        kept.swap(0, root as usize);
        self.free.clear();
        self.free.extend(
            (1..self.nodes.len() as u32)
                .rev()
                .filter(|&i| !kept[i as usize]),
        );
    }

    /// A slot holding the fresh node of `state`: a free slot filled again (its vectors' memory
    /// reused, so that abandoned nodes are never freed on the clock), or a new one at the end
    /// of the arena (`None` if the arena has no index left). The node is settled and worth 0
    /// to everyone if its expansion fails. It is not in the tree until [`Tree::add_child`].
    fn new_node<M>(&mut self, machine: &mut M, state: &S, rivalry: Option<Rivalry>) -> Option<u32>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize].state.clone_from(state);
                id
            }
            None => {
                let id = u32::try_from(self.nodes.len())
                    .ok()
                    .filter(|&id| id < u32::MAX)?;
                self.nodes.push(Node::new_unfilled(state.clone()));
                id
            }
        };
        let n_roles = machine.roles().len();
        let node = &mut self.nodes[id as usize];
        match node.fill(machine) {
            // A terminal node: its goals, read as the search reads every reward.
            Ok(()) if node.moves.is_empty() => {
                if let Some(rivalry) = rivalry {
                    rivalry.apply(&mut node.low);
                    rivalry.apply(&mut node.high);
                }
                node.im.copy_from_slice(&node.low);
            }
            Ok(()) => {}
            Err(_) => node.kill(n_roles),
        }
        Some(id)
    }

    /// Makes the new node `id` ([`Tree::new_node`]) the child `key` of `parent` if the budget
    /// allows; else frees its slot again.
    fn add_child(&mut self, parent: u32, key: u64, id: u32) -> bool {
        let bytes = self.nodes[id as usize].bytes() + 16;
        if self.bytes + bytes > self.budget {
            self.free.push(id);
            return false;
        }
        self.bytes += bytes;
        let p = &mut self.nodes[parent as usize];
        p.children.push((key, id));
        if let Some(m) = p.mover() {
            let i = p.index_in(key, m);
            p.stats[m][i].child = Some(id);
        }
        true
    }

    /// Role `role`'s move at node `id`: by the selection rule over the moves worth exploring (unvisited
    /// first, at random). When `role` is the node's only mover, moves whose child is settled
    /// or cannot beat what the mover is already sure of are left out while others remain,
    /// and a settled child counts at its value.
    ///
    /// With `implicit` above 0, a mover's move with a child counts at `(1 − implicit)` times
    /// its mean plus `implicit` times the child's implicit minimax value.
    fn select(
        &self,
        id: u32,
        role: usize,
        rule: &dyn Selection,
        mover: bool,
        implicit: f64,
        rng: &mut impl Rng,
    ) -> u32 {
        let node = &self.nodes[id as usize];
        let stats = &node.stats[role];
        if stats.len() == 1 {
            return 0;
        }
        // A move not yet visited is tried first, at random.
        let fresh = |s: &Stat| s.visits == 0;
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
        let unvisited = stats.iter().filter(|s| fresh(s) && consider(s)).count();
        if unvisited > 0 {
            let k = rng.random_range(0..unvisited);
            let i = stats
                .iter()
                .enumerate()
                .filter(|&(_, s)| fresh(s) && consider(s))
                .nth(k)
                .map_or(0, |(i, _)| i);
            return i as u32;
        }
        let mut best = (f64::NEG_INFINITY, 0u32);
        for (i, s) in stats.iter().enumerate() {
            if !consider(s) {
                continue;
            }
            let child = s.child.filter(|_| mover).map(|ch| &self.nodes[ch as usize]);
            let settled = child.and_then(|ch| ch.value().map(|v| v[role]));
            let mean = s.sum / f64::from(s.visits.max(1));
            let mean = match child {
                Some(ch) if implicit > 0.0 => (1.0 - implicit) * mean + implicit * ch.im[role],
                _ => mean,
            };
            let view = MoveView {
                visits: s.visits,
                mean: settled.unwrap_or(mean),
                parent_visits: node.visits,
            };
            let score = rule.score(&view);
            if score > best.0 {
                best = (score, i as u32);
            }
        }
        best.1
    }

    /// One iteration: select down to a new or settled node, play out, back up, tighten the
    /// bounds.
    pub(super) fn iterate<M>(
        &mut self,
        machine: &mut M,
        rng: &mut Xoshiro256PlusPlus,
        ctx: &Context,
        policies: &mut Policies<M>,
        scratch: &mut Scratch<Mv>,
    ) -> Result<(), Halt>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let rewards = match self.descend(machine, rng, ctx, policies, scratch)? {
            Leaf::Value(v) => v,
            Leaf::Playout(state) => play_out(machine, rng, ctx, policies, &state)?,
        };
        self.complete(machine.roles().len(), scratch, rewards, ctx.implicit > 0.0);
        Ok(())
    }

    /// The first half of an iteration: selects down the tree from the root to a settled node
    /// or a new one (added to the tree if the budget allows), recording the path in
    /// `scratch`.
    pub(super) fn descend<M>(
        &mut self,
        machine: &mut M,
        rng: &mut Xoshiro256PlusPlus,
        ctx: &Context,
        policies: &mut Policies<M>,
        scratch: &mut Scratch<Mv>,
    ) -> Result<Leaf<S>, Halt>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let n_roles = machine.roles().len();
        scratch.path.clear();
        scratch.choices.clear();
        let mut id = 0u32;
        loop {
            scratch.path.push(id);
            let node = &self.nodes[id as usize];
            if let Some(v) = node.value() {
                return Ok(Leaf::Value(v.to_vec()));
            }
            let mover = node.mover();
            let start = scratch.choices.len();
            for r in 0..n_roles {
                let pick = self.select(
                    id,
                    r,
                    &*policies.select,
                    mover == Some(r),
                    ctx.implicit,
                    rng,
                );
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
            return Ok(
                match self.expand(id, key, &state, start, machine, ctx, policies, scratch) {
                    Some(v) => Leaf::Value(v),
                    None => Leaf::Playout(state),
                },
            );
        }
    }

    /// The second half of an iteration: backs `rewards` up the path `scratch` holds.
    pub(super) fn complete(
        &mut self,
        n_roles: usize,
        scratch: &mut Scratch<Mv>,
        rewards: Vec<f64>,
        implicit: bool,
    ) {
        scratch.rewards = rewards;
        self.back_up(scratch, n_roles, implicit);
    }

    /// A virtual loss on the path `scratch` holds: one visit worth nothing added to every node
    /// and move on it (`add`), or taken off again before the real back-up. Several descents
    /// made before any playout is backed up then spread over the tree.
    pub(super) fn virtual_loss(&mut self, scratch: &Scratch<Mv>, n_roles: usize, add: bool) {
        let n_chosen = scratch.choices.len() / n_roles.max(1);
        for k in 0..n_chosen {
            let node = &mut self.nodes[scratch.path[k] as usize];
            let change = |v: u32| {
                if add {
                    v.saturating_add(1)
                } else {
                    v.saturating_sub(1)
                }
            };
            node.visits = change(node.visits);
            for r in 0..n_roles {
                let s = &mut node.stats[r][scratch.choices[k * n_roles + r] as usize];
                s.visits = change(s.visits);
            }
        }
    }

    /// Adds the node for `state` as the child `key` of `id` (if the budget allows; the path
    /// gets it) and gives it its prior; its value if it is settled (terminal or dead).
    #[allow(clippy::too_many_arguments)]
    fn expand<M>(
        &mut self,
        id: u32,
        key: u64,
        state: &S,
        start: usize,
        machine: &mut M,
        ctx: &Context,
        policies: &mut Policies<M>,
        scratch: &mut Scratch<Mv>,
    ) -> Option<Vec<f64>>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let n_roles = machine.roles().len();
        let c = self.new_node(machine, state, ctx.rivalry)?;
        let settled = self.nodes[c as usize].value().map(<[f64]>::to_vec);
        if self.add_child(id, key, c) {
            scratch.path.push(c);
            if settled.is_none()
                && (ctx.prior > 0 || ctx.implicit > 0.0)
                && policies
                    .eval
                    .estimate(machine, state, &mut scratch.estimate)
            {
                if let Some(rivalry) = ctx.rivalry {
                    rivalry.apply(&mut scratch.estimate);
                }
                if ctx.implicit > 0.0 {
                    self.nodes[c as usize].im.copy_from_slice(&scratch.estimate);
                }
                if ctx.prior > 0 {
                    // The new node's estimate counts as `prior` visits of each role's move
                    // to it, once per move: where several roles choose, a move leads to a
                    // child for every reply of the others, and only the first child's
                    // estimate is its prior (counted at every child, a move's prior weighed
                    // the replies' number times `prior`, and where the heuristic misleads,
                    // the moves it undervalued were starved: see
                    // docs/experiments/simultaneous-prior.md). A move not tried before is one
                    // without visits: this iteration's own visit is counted after the
                    // playout.
                    let w = f64::from(ctx.prior);
                    let node = &mut self.nodes[id as usize];
                    for r in 0..n_roles {
                        let s = &mut node.stats[r][scratch.choices[start + r] as usize];
                        if s.visits == 0 {
                            s.visits = ctx.prior;
                            s.sum += w * scratch.estimate[r];
                        }
                    }
                }
            }
        }
        settled
    }

    /// Adds the rewards along the path and tightens the bounds bottom up, while they change;
    /// with `implicit`, backs the implicit minimax values up the path.
    fn back_up(&mut self, scratch: &Scratch<Mv>, n_roles: usize, implicit: bool) {
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
        // After the bounds, so that a child they settled counts at its exact value.
        if implicit {
            for k in (0..n_chosen).rev() {
                self.back_up_implicit(scratch.path[k] as usize);
            }
        }
    }

    /// At a node with one mover, takes the implicit minimax value of the child best for the
    /// mover (a settled child at its exact value); other nodes keep theirs.
    fn back_up_implicit(&mut self, id: usize) {
        let node = &self.nodes[id];
        let Some(m) = node.mover().filter(|_| !node.moves.is_empty()) else {
            return;
        };
        let best = node.stats[m]
            .iter()
            .filter_map(|s| s.child)
            .map(|c| {
                let child = &self.nodes[c as usize];
                child.value().unwrap_or(&child.im)
            })
            .max_by(|a, b| a[m].total_cmp(&b[m]));
        if let Some(best) = best {
            self.im_buf.clear();
            self.im_buf.extend_from_slice(best);
            self.nodes[id].im.copy_from_slice(&self.im_buf);
        }
    }
}

/// The middle of an iteration, which needs no tree: a playout from a leaf's `state` by the
/// playout policy, its last state scored by the evaluation (rewards per role, 0..1).
pub(super) fn play_out<M: StateMachine>(
    machine: &mut M,
    rng: &mut Xoshiro256PlusPlus,
    ctx: &Context,
    policies: &mut Policies<M>,
    state: &M::State,
) -> Result<Vec<f64>, Halt> {
    let last = policies
        .playout
        .playout(machine, state, rng, ctx.deadline, ctx.max_steps)?;
    let mut rewards = Vec::with_capacity(machine.roles().len());
    policies.eval.evaluate(machine, &last, &mut rewards)?;
    if let Some(rivalry) = ctx.rivalry {
        rivalry.apply(&mut rewards);
    }
    Ok(rewards)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use rand::SeedableRng;

    use super::*;
    use crate::search::mcts::{Evaluation, GoalEvaluation, Ucb1, UniformPlayout};
    use ggp_engine::propnet::{Budget, PropnetMachine, PropnetState};
    use ggp_gdl::gdl::Description;

    type Ttt =
        Tree<<PropnetMachine as StateMachine>::State, <PropnetMachine as StateMachine>::Move>;

    /// The tic-tac-toe machine and a tree holding only the initial state.
    fn fresh() -> (PropnetMachine, Ttt) {
        let text = include_str!("../../../../../rules/ticTacToe.kif");
        let d = Description::from_text(text).expect("the sheet parses");
        let mut m = PropnetMachine::new(&d, &Budget::default()).expect("the game grounds");
        let mut tree = Tree::new(64 << 20);
        let initial = m.initial_state();
        let root = Node::new(&mut m, initial).expect("the root expands");
        tree.reset(root);
        (m, tree)
    }

    /// A tic-tac-toe tree after `iterations` iterations, and its machine.
    fn searched(iterations: usize) -> (PropnetMachine, Ttt) {
        let (mut m, mut tree) = fresh();
        search_more(&mut tree, &mut m, iterations);
        (m, tree)
    }

    /// Runs `iterations` more iterations on `tree`.
    fn search_more(tree: &mut Ttt, m: &mut PropnetMachine, iterations: usize) {
        Searcher::new(0.0, Box::new(GoalEvaluation)).run(tree, m, iterations);
    }

    /// What a test's iterations run with: uniform playouts, UCB1, seed 5.
    struct Searcher {
        ctx: Context,
        policies: Policies<PropnetMachine>,
        rng: Xoshiro256PlusPlus,
        scratch: Scratch<<PropnetMachine as StateMachine>::Move>,
    }

    impl Searcher {
        /// With implicit minimax values at weight `implicit` (0: none), evaluated by `eval`.
        fn new(implicit: f64, eval: Box<dyn Evaluation<PropnetMachine>>) -> Searcher {
            Searcher {
                ctx: Context {
                    deadline: Instant::now() + Duration::from_secs(600),
                    stop: AtomicBool::new(false),
                    max_steps: 100,
                    prior: 0,
                    implicit,
                    progress: None,
                    batch: None,
                    rivalry: None,
                },
                policies: Policies {
                    select: Box::new(Ucb1 { exploration: 0.4 }),
                    playout: Box::new(UniformPlayout::default()),
                    eval,
                },
                rng: Xoshiro256PlusPlus::seed_from_u64(5),
                scratch: Scratch::default(),
            }
        }

        /// Runs `iterations` more iterations on `tree`, or fewer if its root settles.
        fn run(&mut self, tree: &mut Ttt, m: &mut PropnetMachine, iterations: usize) {
            for _ in 0..iterations {
                if tree.root_settled() {
                    break;
                }
                tree.iterate(
                    m,
                    &mut self.rng,
                    &self.ctx,
                    &mut self.policies,
                    &mut self.scratch,
                )
                .map_err(|_| "an iteration failed")
                .unwrap();
            }
        }
    }

    /// A test evaluation: goals for playouts, and the function's values as every state's
    /// estimate.
    struct Estimate(fn(&mut PropnetMachine, &PropnetState) -> Vec<f64>);

    impl Evaluation<PropnetMachine> for Estimate {
        fn evaluate(
            &mut self,
            machine: &mut PropnetMachine,
            state: &PropnetState,
            out: &mut Vec<f64>,
        ) -> Result<(), MachineError> {
            GoalEvaluation.evaluate(machine, state, out)
        }

        fn estimate(
            &mut self,
            machine: &mut PropnetMachine,
            state: &PropnetState,
            out: &mut Vec<f64>,
        ) -> bool {
            out.clear();
            out.extend((self.0)(machine, state));
            true
        }
    }

    /// A made-up estimate for the implicit minimax values: X's share of the marks in the top
    /// row, so that the estimates differ from node to node.
    fn top_row(machine: &mut PropnetMachine, state: &PropnetState) -> Vec<f64> {
        let terms: Vec<String> = machine
            .state_terms(state)
            .iter()
            .map(ToString::to_string)
            .collect();
        let count = |mark: &str| {
            (1..=3)
                .filter(|c| terms.contains(&format!("(cell {c} 1 {mark})")))
                .count() as f64
        };
        let x = 0.5 + 0.1 * (count("x") - count("o"));
        vec![x, 1.0 - x]
    }

    /// A constant estimate (0.3 for every role), for priors.
    fn flat(machine: &mut PropnetMachine, _: &PropnetState) -> Vec<f64> {
        vec![0.3; machine.roles().len()]
    }

    /// With implicit minimax values, every node with one mover holds the value of its child
    /// best for the mover (a settled child at its exact value), a terminal node its goals, a
    /// leaf its estimate; and the search still proves tic-tac-toe a draw.
    #[test]
    fn implicit_minimax_values_back_up_the_best_child() {
        let (mut m, mut tree) = fresh();
        let mut searcher = Searcher::new(0.4, Box::new(Estimate(top_row)));
        let mut checked = 0;
        for round in 0..200 {
            searcher.run(&mut tree, &mut m, 500);
            for id in reachable(&tree) {
                let node = &tree.nodes[id as usize];
                if node.moves.is_empty() {
                    assert_eq!(node.im, node.low, "a terminal node holds its goals");
                    continue;
                }
                let m0 = node.mover().expect("tic-tac-toe has one mover a turn");
                let best = node.stats[m0]
                    .iter()
                    .filter_map(|s| s.child)
                    .map(|c| {
                        let child = &tree.nodes[c as usize];
                        child.value().unwrap_or(&child.im).to_vec()
                    })
                    .max_by(|a, b| a[m0].total_cmp(&b[m0]));
                match best {
                    Some(best) => assert_eq!(*node.im, *best, "node {id} after round {round}"),
                    None if id != 0 => {
                        let mut estimate = Vec::new();
                        assert!(Estimate(top_row).estimate(&mut m, &node.state, &mut estimate));
                        assert_eq!(*node.im, *estimate, "leaf {id}");
                    }
                    None => {}
                }
                checked += 1;
            }
            if tree.root_settled() {
                break;
            }
        }
        assert!(checked > 1000, "{checked} nodes checked");
        assert!(tree.root_settled(), "tic-tac-toe is solved");
        assert_eq!(*tree.nodes[0].low, [0.5, 0.5], "a draw");
    }

    /// Two rounds of a simultaneous guessing game: each role names p, q or r, and the second
    /// round decides (a wins on different names, b on the same).
    const GUESS: &str = "
        (role a) (role b)
        (init (round 0))
        (succ 0 1) (succ 1 2)
        (name p) (name q) (name r)
        (<= (legal ?x ?n) (role ?x) (name ?n))
        (<= (next (round ?n)) (true (round ?o)) (succ ?o ?n))
        (<= (next (named ?x ?n)) (does ?x ?n))
        (<= terminal (true (round 2)))
        (<= (goal a 100) (true (named a ?m)) (true (named b ?n)) (distinct ?m ?n))
        (<= (goal a 0) (true (named a ?m)) (true (named b ?m)))
        (<= (goal b 0) (true (named a ?m)) (true (named b ?n)) (distinct ?m ?n))
        (<= (goal b 100) (true (named a ?m)) (true (named b ?m)))
        (<= (goal ?x 0) (role ?x) (true (round 0)))
    ";

    /// A heuristic prior counts once per move: at a node where one role chooses, a move's
    /// prior is its child's estimate; where both choose, a move leads to three children (one
    /// per reply), and it still gets `prior` visits once, not three times.
    #[test]
    fn a_move_gets_its_prior_once() {
        let prior = 10;
        let counted = |tree: &Ttt, id: usize| {
            let node = &tree.nodes[id];
            let extra: Vec<u32> = node
                .stats
                .iter()
                .map(|stats| stats.iter().map(|s| s.visits).sum::<u32>() - node.visits)
                .collect();
            let tried: Vec<u32> = node
                .stats
                .iter()
                .map(|stats| stats.iter().filter(|s| s.visits > 0).count() as u32)
                .collect();
            (extra, tried, node.children.len())
        };
        // Both roles choose at the root of the guessing game.
        let d = Description::from_text(GUESS).expect("the sheet parses");
        let mut m = PropnetMachine::new(&d, &Budget::default()).expect("the game grounds");
        let mut tree = Tree::new(64 << 20);
        let initial = m.initial_state();
        tree.reset(Node::new(&mut m, initial).expect("the root expands"));
        let mut searcher = Searcher::new(0.0, Box::new(Estimate(flat)));
        searcher.ctx.prior = prior;
        searcher.run(&mut tree, &mut m, 300);
        let (extra, tried, children) = counted(&tree, 0);
        assert_eq!(tried, [3, 3], "every move tried");
        assert!(
            children > 3,
            "some move has two children or more: {children}"
        );
        assert_eq!(
            extra,
            [3 * prior, 3 * prior],
            "one prior per move, not per child"
        );
        let root = &tree.nodes[0];
        for stats in &root.stats {
            for s in stats {
                // The prior's part of the sum is 0.3 a visit; the rest are the real rewards.
                let real = s.sum - 0.3 * f64::from(prior);
                assert!(real >= -1e-9 && real <= f64::from(s.visits - prior) + 1e-9);
            }
        }
        // In tic-tac-toe each move has one child, and each child's estimate is its prior.
        let (mut m, mut tree) = fresh();
        searcher.run(&mut tree, &mut m, 300);
        let (extra, _, children) = counted(&tree, 0);
        assert_eq!(children, 9);
        assert_eq!(extra[0], 9 * prior, "X's nine moves");
        assert_eq!(extra[1], prior, "O's one move (noop) once");
    }

    /// Of two sure wins the quicker is told apart: X wins at once at (3 1), or in three by
    /// the double threat of (2 3) (at (2 2) and (3 1)).
    #[test]
    fn the_quickest_sure_win_is_measured() {
        let marks = [((1, 1), "x"), ((2, 1), "x"), ((1, 3), "o"), ((3, 3), "o")];
        let (m, tree) = tic_tac_toe_from(&marks, "x");
        let lengths = tree.root_win_lengths(0, 100_000);
        let name = |i: usize| m.move_term(tree.nodes[0].moves[0][i]).to_string();
        let at = |mv: &str| (0..lengths.len()).find(|&i| name(i) == mv).unwrap();
        assert_eq!(lengths[at("(mark 3 1)")], Some(1), "{lengths:?}");
        assert!(
            matches!(lengths[at("(mark 2 3)")], None | Some(3)),
            "{lengths:?}"
        );
        for (i, length) in lengths.iter().enumerate() {
            if let Some(n) = length {
                assert!(*n >= 1 && n % 2 == 1, "{} wins in {n}", name(i));
            }
        }
        // Nothing read, nothing told.
        assert!(tree.root_win_lengths(0, 0).iter().all(Option::is_none));
    }

    /// Of sure losses the slowest is told apart: O must block X's diagonal at (3 3), and then
    /// loses in four to the double threat of (2 1); any other move loses in two.
    #[test]
    fn the_slowest_sure_loss_is_measured() {
        let (m, tree) = tic_tac_toe_from(&[((1, 1), "x"), ((2, 2), "x"), ((1, 2), "o")], "o");
        let lengths = tree.root_loss_lengths(1, 100_000);
        let name = |i: usize| m.move_term(tree.nodes[0].moves[1][i]).to_string();
        for (i, length) in lengths.iter().enumerate() {
            let want = if name(i) == "(mark 3 3)" { 4 } else { 2 };
            assert_eq!(*length, Some(want), "{}: {lengths:?}", name(i));
        }
        assert!(tree.root_loss_lengths(1, 0).iter().all(Option::is_none));
    }

    /// A tic-tac-toe tree searched until its root is settled, from the position with `marks`
    /// and `mover` to move, and its machine.
    fn tic_tac_toe_from(marks: &[((u8, u8), &str)], mover: &str) -> (PropnetMachine, Ttt) {
        let text = include_str!("../../../../../rules/ticTacToe.kif");
        let d = Description::from_text(text).expect("the sheet parses");
        let mut m = PropnetMachine::new(&d, &Budget::default()).expect("the game grounds");
        let mut facts = Vec::new();
        for c in 1..=3u8 {
            for r in 1..=3u8 {
                let mark = marks
                    .iter()
                    .find(|(at, _)| *at == (c, r))
                    .map_or("b", |(_, mark)| *mark);
                facts.push(format!("(cell {c} {r} {mark})"));
            }
        }
        facts.push(format!("(control {mover})"));
        let facts: Vec<ggp_gdl::gdl::Term> = facts
            .iter()
            .map(|f| ggp_gdl::gdl::parse_term(f).unwrap())
            .collect();
        let state = m.state_from_terms(&facts).unwrap();
        let mut tree = Tree::new(64 << 20);
        let root = Node::new(&mut m, state).expect("the root expands");
        tree.reset(root);
        search_more(&mut tree, &mut m, 20_000);
        assert!(tree.root_settled());
        (m, tree)
    }

    /// The slots of the tree's nodes, found from the root.
    fn reachable(tree: &Ttt) -> Vec<u32> {
        let mut found = Vec::new();
        let mut stack = vec![0u32];
        while let Some(id) = stack.pop() {
            found.push(id);
            stack.extend(tree.nodes[id as usize].children.iter().map(|c| c.1));
        }
        found
    }

    /// After a reroot the dropped nodes' slots are free, and new nodes fill them before the
    /// arena grows: each refilled node is the fresh node of its own state.
    #[test]
    fn freed_slots_are_refilled_as_new_nodes() {
        let (mut m, mut tree) = searched(3000);
        let arena = tree.nodes.len();
        let (_, child) = tree.nodes[0].children[0];
        let state = tree.nodes[child as usize].state.clone();
        assert!(tree.reroot(&state));
        let kept = tree.len();
        assert_eq!(reachable(&tree).len(), kept);
        assert_eq!(tree.free.len(), arena - kept);
        let free: Vec<u32> = tree.free.clone();
        search_more(&mut tree, &mut m, 500);
        let added = tree.len() - kept;
        assert!(added > 0 && added < free.len());
        assert_eq!(
            tree.nodes.len(),
            arena,
            "the arena grew while slots were free"
        );
        let live = reachable(&tree);
        assert_eq!(live.len(), tree.len());
        let refilled: Vec<u32> = live.into_iter().filter(|id| free.contains(id)).collect();
        assert_eq!(refilled.len(), added);
        for id in refilled {
            let node = &tree.nodes[id as usize];
            let fresh = Node::new(&mut m, node.state.clone()).expect("the node expands");
            assert_eq!(node.moves, fresh.moves);
            assert_eq!(node.n_joint, fresh.n_joint);
            assert!(node.children.len() as u64 <= node.n_joint);
            assert_eq!(node.stats.len(), fresh.stats.len());
            for (stats, moves) in node.stats.iter().zip(&node.moves) {
                assert_eq!(stats.len(), moves.len());
            }
            if fresh.settled() {
                assert_eq!(node.low, fresh.low);
                assert_eq!(node.high, fresh.high);
            }
        }
    }

    #[test]
    fn the_new_root_keeps_only_what_it_reaches() {
        let (_, mut tree) = searched(3000);
        let (_, child) = tree.nodes[0].children[0];
        let (_, grandchild) = tree.nodes[child as usize].children[0];
        let state = tree.nodes[grandchild as usize].state.clone();
        let below = reachable(&tree).iter().filter(|&&id| id != 0).count();
        let before = tree.len();
        assert!(tree.reroot(&state));
        assert_eq!(tree.nodes[0].state, state);
        assert!(tree.len() < before && tree.len() < below);
        // Every node the tree counts is reached from the new root, once.
        let mut live = reachable(&tree);
        assert_eq!(live.len(), tree.len());
        live.sort_unstable();
        live.dedup();
        assert_eq!(live.len(), tree.len());
        assert!(live.iter().all(|id| !tree.free.contains(id)));
    }
}
