//! The propnet as a [`StateMachine`]: states are bitsets over base propositions, evaluated by
//! differential propagation.
//!
//! The machine keeps the network's counters for one loaded state and one set of inputs (one
//! joint move). Loading another state flips only the bases that differ; setting a joint move
//! flips only the inputs that differ. A changed node adds one to or takes one from the counter
//! of every node it links to; gates whose counter crossed their threshold are marked in a
//! bitset and visited in increasing (topological) order, so each is visited at most once per
//! change, after its inputs have settled, and passes its own change on in turn. Links
//! to output nodes keep two bitsets up to date, the legal moves and the next state, and
//! schedule recursive blocks for re-evaluation. So terminal and goals are read off one node,
//! legal moves off a bitset (and their groups' guards), and the next state is a copy of a
//! bitset; moving to it flips the bases where it differs from the loaded state.
//!
//! Legal moves, goals and terminal never depend on inputs (the net refuses games where they
//! do), so inputs stay set until the next joint move replaces them.
//!
//! The topology is shared ([`Arc`]) between clones; each clone has its own counters, so a
//! search can give each thread a clone.
//!
//! Percepts (GDL-II `sees`) are not in the net: a game with `sees` rules keeps a Datalog
//! machine beside it that answers them, from the state's facts and the joint move's terms.

use std::sync::Arc;
use std::time::Instant;

use rand::Rng;

use crate::datalog::{DatalogMachine, Demand};
use crate::machine::{
    EngineFailure, EvalError, Factoring, MachineError, PlayoutBatch, PlayoutEnd, StateMachine,
};
use ggp_gdl::gdl::{Description, Term};

use super::batch::{BatchRunner, LaneRecord, Width};
use super::factor::factoring;
use super::ground::{Budget, Clock, Exceeded, GroundError, ground_with_demand};
use super::net::{MoveId, NO_NODE, Net, TRUE_COUNT};

/// The share of the time budget for grounding the rules as they are, before trying the
/// magic-sets rewrite.
pub const FIRST_TRY_SHARE: f64 = 0.6;

/// A state: one bit per base proposition.
#[derive(PartialEq, Eq, Hash, Debug)]
pub struct PropnetState(Box<[u64]>);

impl Clone for PropnetState {
    fn clone(&self) -> PropnetState {
        PropnetState(self.0.clone())
    }

    /// Copies the bits into this state's own words (no allocation): the search's node pool
    /// refills old nodes this way.
    fn clone_from(&mut self, source: &PropnetState) {
        self.0.clone_from(&source.0);
    }
}

impl PropnetState {
    /// The bits, 64 base propositions a word.
    pub fn words(&self) -> &[u64] {
        &self.0
    }

    pub(crate) fn from_words(words: Box<[u64]>) -> PropnetState {
        PropnetState(words)
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
}

/// A game run by a propositional network.
#[derive(Clone)]
pub struct PropnetMachine {
    net: Arc<Net>,
    rt: Runtime,
    /// A copy of the runtime with a state loaded that playouts have started from twice in a
    /// row, restored instead of undoing a whole playout when that is cheaper.
    snapshot: Option<Box<Runtime>>,
    /// The state the last playout started from.
    last_start: Option<PropnetState>,
    /// The words of batch playouts (64 games per pass), made on first use.
    batch: Option<Box<BatchRunner<1>>>,
    /// The words of wide batch playouts (256 games per pass), made on first use.
    wide: Option<Box<BatchRunner<4>>>,
    /// The Datalog engine that answers percepts, in a game with `sees` rules, and the last
    /// state it was asked about with its own form of that state.
    seer: Option<Box<DatalogMachine>>,
    seer_state: Option<Box<(PropnetState, crate::datalog::DatalogState)>>,
    /// The sub-games of the ground rules the net was built from (none for a net built
    /// elsewhere), shared by clones.
    factoring: Option<Arc<Factoring>>,
}

/// The mutable part of a machine: counters and the sets derived from them.
#[derive(Clone)]
struct Runtime {
    /// What propagation writes.
    w: Wires,
    /// The loaded state's bits (the bases' values).
    cur: Vec<u64>,
    /// Per role, the input node set by the current joint move, or [`NO_NODE`].
    inputs_on: Vec<u32>,
    /// Whether the lazy gates' counters are up to date (they follow no change; see
    /// [`Net::eval_lazy`]).
    lazy_fresh: bool,
    /// Scratch: the bases a transition flips, 64 a word.
    flips: Vec<u64>,
}

/// The counters and the sets that propagation keeps up to date, apart from the rest of the
/// runtime so that the propagation loops borrow only these.
#[derive(Clone)]
struct Wires {
    /// One counter per node below the output nodes; a node is true when the top bit is set.
    counts: Vec<u32>,
    /// One bit per counted node: set when the node's value has changed an odd number of
    /// times since it was last visited (for a block's first gate: when the block must be
    /// re-evaluated). `summary` has one bit per word of `dirty_nodes`, set when the word may be
    /// non-zero.
    dirty_nodes: Vec<u64>,
    summary: Vec<u64>,
    /// The next state's bits under the current inputs: one bit per base, set when its
    /// `next` holds, kept up to date by the links to the `next` outputs.
    next_bits: Vec<u64>,
    /// One bit per legal entry: whether it holds.
    legal_bits: Vec<u64>,
    /// Blocks waiting for re-evaluation.
    block_dirty: Vec<bool>,
    block_old: Vec<u32>,
}

impl Runtime {
    fn new(net: &Net) -> Runtime {
        let mut w = Wires {
            counts: net.init_counts.clone(),
            dirty_nodes: vec![0; net.n_counted().div_ceil(64)],
            summary: vec![0; net.n_counted().div_ceil(64 * 64)],
            next_bits: vec![0; net.initial.len()],
            legal_bits: vec![0; net.legal.len().div_ceil(64)],
            block_dirty: vec![false; net.blocks.len()],
            block_old: Vec::new(),
        };
        for (k, e) in net.legal.iter().enumerate() {
            let v = Net::lit_value(&w.counts, e.lit);
            w.set_legal(k, v);
        }
        for (i, &l) in net.next.iter().enumerate() {
            w.set_next(i, Net::lit_value(&w.counts, l));
        }
        Runtime {
            w,
            cur: net.initial.clone(),
            inputs_on: vec![NO_NODE; net.roles.len()],
            flips: Vec::new(),
            lazy_fresh: true,
        }
    }

    /// Whether legal entry `k` holds.
    #[cfg(test)]
    fn legal(&self, k: usize) -> bool {
        self.w.legal_bits[k / 64] >> (k % 64) & 1 == 1
    }

    /// The legal entries of `role` that hold, group by group.
    fn legal_entries<'a>(&'a self, net: &'a Net, role: usize) -> impl Iterator<Item = usize> + 'a {
        net.legal_groups[role]
            .iter()
            .filter(|grp| Net::lit_value(&self.w.counts, grp.guard))
            .flat_map(move |grp| {
                (grp.words.0 as usize..grp.words.1 as usize).flat_map(move |w| {
                    let mut bits = self.w.legal_bits[w];
                    std::iter::from_fn(move || {
                        (bits != 0).then(|| {
                            let b = bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            w * 64 + b
                        })
                    })
                })
            })
    }

    /// A uniformly random legal entry of `role`, or `None` if it has none.
    #[inline]
    fn random_legal(&self, net: &Net, role: usize, rng: &mut impl Rng) -> Option<usize> {
        let groups = &net.legal_groups[role];
        let mut n = 0u32;
        for grp in groups {
            if Net::lit_value(&self.w.counts, grp.guard) {
                let words = &self.w.legal_bits[grp.words.0 as usize..grp.words.1 as usize];
                n += words.iter().map(|w| w.count_ones()).sum::<u32>();
            }
        }
        let mut i = match n {
            0 => return None,
            1 => 0,
            n => rng.random_range(0..n),
        };
        for grp in groups {
            if !Net::lit_value(&self.w.counts, grp.guard) {
                continue;
            }
            for w in grp.words.0 as usize..grp.words.1 as usize {
                let bits = self.w.legal_bits[w];
                let c = bits.count_ones();
                if i < c {
                    let mut bits = bits;
                    for _ in 0..i {
                        bits &= bits - 1;
                    }
                    return Some(w * 64 + bits.trailing_zeros() as usize);
                }
                i -= c;
            }
        }
        None
    }

    /// Flips the bases whose bits are set in `words` (64 bases a word) and passes the
    /// changes on (to the sweep, for gates read by gates).
    fn flip_words(&mut self, net: &Net, words: &[u64]) {
        let w = &mut self.w;
        for (k, (&d, cur)) in words.iter().zip(self.cur.iter_mut()).enumerate() {
            if d == 0 {
                continue;
            }
            self.lazy_fresh = false;
            *cur ^= d;
            let mut d = d;
            while d != 0 {
                let b = d.trailing_zeros() as usize;
                d &= d - 1;
                w.set_leaf(net, Net::base_node(k * 64 + b), *cur >> b & 1 == 1);
            }
        }
    }

    /// Becomes a copy of `other`, reusing allocations.
    fn restore_from(&mut self, other: &Runtime) {
        self.w.counts.copy_from_slice(&other.w.counts);
        self.cur.copy_from_slice(&other.cur);
        self.w.dirty_nodes.copy_from_slice(&other.w.dirty_nodes);
        self.w.summary.copy_from_slice(&other.w.summary);
        self.w.next_bits.copy_from_slice(&other.w.next_bits);
        self.w.legal_bits.copy_from_slice(&other.w.legal_bits);
        self.w.block_dirty.copy_from_slice(&other.w.block_dirty);
        self.inputs_on.copy_from_slice(&other.inputs_on);
        self.lazy_fresh = other.lazy_fresh;
    }

    /// Brings the lazy gates up to date.
    fn refresh_lazy(&mut self, net: &Net) {
        if !self.lazy_fresh {
            net.eval_lazy(&mut self.w.counts);
            self.lazy_fresh = true;
        }
    }

    /// Loads a state: flips the bases that differ and propagates.
    fn load(&mut self, net: &Net, state: &[u64]) -> Result<(), MachineError> {
        if state.len() != self.cur.len() {
            return Err(MachineError::Engine(EngineFailure::ForeignState));
        }
        self.move_bases(net, Some(state));
        Ok(())
    }

    /// Flips the bases where `target` (`None`: the next state) differs from the loaded state,
    /// and propagates. Every difference is taken before any base changes (a `next` may read
    /// a base directly).
    fn move_bases(&mut self, net: &Net, target: Option<&[u64]>) {
        let mut flips = std::mem::take(&mut self.flips);
        flips.clear();
        let target = target.unwrap_or(&self.w.next_bits);
        flips.extend(target.iter().zip(&self.cur).map(|(&t, &c)| t ^ c));
        self.flip_words(net, &flips);
        self.flips = flips;
        self.w.propagate(net);
    }

    /// Sets role `role`'s input to `node` (or none), queueing the changes.
    #[inline]
    fn set_input(&mut self, net: &Net, role: usize, node: u32) {
        let old = self.inputs_on[role];
        if old == node {
            return;
        }
        if old != NO_NODE {
            self.w.set_leaf(net, old, false);
        }
        if node != NO_NODE {
            self.w.set_leaf(net, node, true);
        }
        self.inputs_on[role] = node;
    }

    /// Whether base `i`'s `next` holds.
    #[cfg(test)]
    fn next_value(&self, net: &Net, i: usize) -> bool {
        Net::lit_value(&self.w.counts, net.next[i])
    }

    /// Moves to the next state in place and propagates.
    fn advance(&mut self, net: &Net) {
        self.move_bases(net, None);
    }
}

impl Wires {
    /// Records whether base `i`'s `next` holds.
    #[inline]
    fn set_next(&mut self, i: usize, v: bool) {
        let w = &mut self.next_bits[i / 64];
        let m = 1u64 << (i % 64);
        *w = if v { *w | m } else { *w & !m };
    }

    /// Records whether legal entry `k` holds.
    #[inline]
    fn set_legal(&mut self, k: usize, v: bool) {
        let w = &mut self.legal_bits[k / 64];
        let m = 1u64 << (k % 64);
        *w = if v { *w | m } else { *w & !m };
    }

    /// Sets leaf `node` (a base or input) to `v` and passes the change on at once (leaves
    /// come first in the topological order, so this is where the sweep would visit them).
    #[inline(always)]
    fn set_leaf(&mut self, net: &Net, node: u32, v: bool) {
        let c = if v { TRUE_COUNT } else { 0 };
        if self.counts[node as usize] != c {
            self.counts[node as usize] = c;
            self.announce(net, node as usize);
        }
    }

    /// Propagates the marked changes until nothing changes.
    ///
    /// Nodes are numbered in topological order and every link goes to a higher node, so one
    /// sweep over the marked nodes in increasing order visits each node once, after all its
    /// inputs have settled: a node whose value changed and changed back is not visited at all.
    fn propagate(&mut self, net: &Net) {
        let mut sw = 0;
        while sw < self.summary.len() {
            let s = self.summary[sw];
            if s == 0 {
                sw += 1;
                continue;
            }
            let wi = s.trailing_zeros() as usize;
            let w = sw * 64 + wi;
            let d = self.dirty_nodes[w];
            let rest = d & d.wrapping_sub(1);
            self.dirty_nodes[w] = rest;
            // The word's summary bit goes with its last node; visiting that node may set it
            // again (links only lead to higher nodes, so never in an earlier word).
            if rest == 0 {
                self.summary[sw] = s & !(1 << wi);
            }
            if d == 0 {
                // A node that changed and changed back.
                continue;
            }
            let x = w * 64 + d.trailing_zeros() as usize;
            if !net.block_at.is_empty() && net.block_at[x] != NO_NODE {
                self.reevaluate_block(net, net.block_at[x] as usize);
            } else {
                self.announce(net, x);
            }
        }
    }

    /// Passes node `x`'s new value along its links.
    #[inline(always)]
    fn announce(&mut self, net: &Net, x: usize) {
        // SAFETY: `x` is a counted node (a leaf or a gate the sweep found marked), so below
        // `first_legal`.
        let v = unsafe { *self.counts.get_unchecked(x) } >> 31;
        // +1 (plain links) when the node turns true, -1 when it turns false.
        let up = (v << 1).wrapping_sub(1);
        // SAFETY: as above.
        let [plain, negated, last, outputs] = unsafe { net.links_unchecked(x) };
        self.bump(plain, up);
        self.bump(negated, up.wrapping_neg());
        // Gates that only feed outputs: passed on at once when they change.
        for &t in last {
            let target = (t >> 1) as usize;
            // SAFETY: `Net::check_links` verified at build that these targets are counted
            // nodes.
            let (old, new) = unsafe {
                let c = self.counts.get_unchecked_mut(target);
                let old = *c;
                let new = old.wrapping_add(((v ^ t) & 1) * 2).wrapping_sub(1);
                *c = new;
                (old, new)
            };
            if (old ^ new) & TRUE_COUNT != 0 {
                self.announce_outputs(net, target);
            }
        }
        // The output nodes come last.
        for &t in outputs {
            self.output_changed(net, t >> 1, (v ^ t) & 1 == 1);
        }
    }

    /// Adds `delta` (1 or -1) to the counters of the gates `links` lead to, and marks those
    /// that cross their threshold for the sweep.
    #[inline(always)]
    fn bump(&mut self, links: &[u32], delta: u32) {
        let counts = &mut self.counts[..];
        let dirty_nodes = &mut self.dirty_nodes[..];
        let summary = &mut self.summary[..];
        for &t in links {
            let target = (t >> 1) as usize;
            // SAFETY: `Net::check_links` verified at build that these targets are below
            // `first_last_gate`, so counted nodes; `counts` has one counter per counted node
            // and `dirty_nodes` and `summary` one bit per counted node, rounded up.
            unsafe {
                let c = counts.get_unchecked_mut(target);
                let old = *c;
                let new = old.wrapping_add(delta);
                *c = new;
                if (old ^ new) >> 31 != 0 {
                    *dirty_nodes.get_unchecked_mut(target >> 6) ^= 1 << (target & 63);
                    *summary.get_unchecked_mut(target >> 12) |= 1 << ((target >> 6) & 63);
                }
            }
        }
    }

    /// Passes node `x`'s new value to the output nodes it links to (all its links).
    #[inline(always)]
    fn announce_outputs(&mut self, net: &Net, x: usize) {
        let v = self.counts[x] >> 31;
        let (s, e) = (net.out_start[x] as usize, net.out_start[x + 1] as usize);
        for &t in &net.outs[s..e] {
            self.output_changed(net, t >> 1, (v ^ t) & 1 == 1);
        }
    }

    /// A link to output node `target` fired; `value` is the linked literal's new value.
    #[inline(always)]
    fn output_changed(&mut self, net: &Net, target: u32, value: bool) {
        if target < net.first_next {
            self.set_legal((target - net.first_legal) as usize, value);
        } else if target < net.first_block {
            self.set_next((target - net.first_next) as usize, value);
        } else {
            let b = (target - net.first_block) as usize;
            if !self.block_dirty[b] {
                self.block_dirty[b] = true;
                let x0 = net.blocks[b].0 as usize;
                self.dirty_nodes[x0 >> 6] |= 1 << (x0 & 63);
                self.summary[x0 >> 12] |= 1 << ((x0 >> 6) & 63);
            }
        }
    }

    /// Re-evaluates a block and passes on the changes of its gates.
    fn reevaluate_block(&mut self, net: &Net, b: usize) {
        if !self.block_dirty[b] {
            return;
        }
        self.block_dirty[b] = false;
        let (start, end) = net.blocks[b];
        let range = start as usize..end as usize;
        let mut old = std::mem::take(&mut self.block_old);
        old.clear();
        old.extend_from_slice(&self.counts[range.clone()]);
        net.eval_block(&mut self.counts, b);
        for (x, &o) in range.zip(&old) {
            if self.counts[x] != o {
                self.announce(net, x);
            }
        }
        self.block_old = old;
    }
}

impl PropnetMachine {
    /// Grounds the game and builds its network within `budget`.
    ///
    /// # Errors
    /// The rules cannot be lowered, the game exceeds the budget, or the network cannot
    /// represent it; callers fall back to the Datalog engine.
    ///
    /// The rules are grounded as they are within [`FIRST_TRY_SHARE`] of the time; if that
    /// exceeds the budget, they are grounded again in the time left after the magic-sets
    /// rewrite, which grounds the relations of the state only for the arguments the game asks
    /// about; if a static relation still outgrows the budget (one bottom-up evaluation cannot
    /// bound, as `(<= (nat (s ?x)) (nat ?x))`), once more with every relation rewritten so.
    pub fn new(description: &Description, budget: &Budget) -> Result<PropnetMachine, GroundError> {
        let clock = Clock::new(budget);
        let build = |clock: &Clock, demand: Demand| -> Result<PropnetMachine, GroundError> {
            let prog = ground_with_demand(description, budget, clock, demand)?;
            let factoring = factoring(&prog, description.roles());
            let net = Net::build(prog, description.roles(), budget, clock)?;
            let mut machine = PropnetMachine::from_net(Arc::new(net));
            machine.factoring = Some(Arc::new(factoring));
            Ok(machine)
        };
        let built = match build(&clock.share(FIRST_TRY_SHARE), Demand::Off) {
            Err(first @ (GroundError::Budget(_) | GroundError::Time(_))) => {
                // Only a relation or term that outgrew its limit is worth the third try; out
                // of time or memory, it would be out again.
                let second = match build(&clock, Demand::Dynamic) {
                    Err(GroundError::Budget(Exceeded::Eval(EvalError::Budget { .. }))) => {
                        build(&clock, Demand::All)
                    }
                    second => second,
                };
                second.map_err(|second| match second {
                    GroundError::Budget(_) | GroundError::Time(_) => {
                        GroundError::Budget(Exceeded::Retried {
                            first: Box::new(first),
                            second: Box::new(second),
                        })
                    }
                    other => other,
                })
            }
            built => built,
        };
        let mut machine = built?;
        if description.has_sees() {
            let seer = DatalogMachine::new(description)
                .map_err(|e| GroundError::Unsupported(format!("percepts: {e}")))?;
            machine.seer = Some(Box::new(seer));
        }
        Ok(machine)
    }

    /// A machine over an already built net.
    pub fn from_net(net: Arc<Net>) -> PropnetMachine {
        let rt = Runtime::new(&net);
        PropnetMachine {
            net,
            rt,
            snapshot: None,
            last_start: None,
            batch: None,
            wide: None,
            seer: None,
            seer_state: None,
            factoring: None,
        }
    }

    /// The network.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    fn load(&mut self, state: &PropnetState) -> Result<(), MachineError> {
        self.rt.load(&self.net, &state.0)
    }

    /// Loads the start of a playout, from the snapshot when it holds that state and copying
    /// it is cheaper than propagating the difference; takes a snapshot of a state that starts
    /// two playouts in a row.
    fn load_start(&mut self, state: &PropnetState) -> Result<(), MachineError> {
        if let Some(snap) = &self.snapshot
            && *snap.cur == *state.0
        {
            // Links leaving the bases that differ, against the counters to copy.
            let net = &*self.net;
            let mut links = 0usize;
            for (w, (&a, &b)) in self.rt.cur.iter().zip(&snap.cur).enumerate() {
                let mut diff = a ^ b;
                while diff != 0 {
                    let i = w * 64 + diff.trailing_zeros() as usize;
                    diff &= diff - 1;
                    let x = Net::base_node(i) as usize;
                    links += (net.out_start[x + 1] - net.out_start[x]) as usize;
                }
            }
            if links.saturating_mul(256) > net.n_counted() {
                self.rt.restore_from(snap);
                return Ok(());
            }
        }
        self.load(state)?;
        if self.last_start.as_ref() == Some(state) {
            if self.snapshot.as_ref().is_none_or(|s| *s.cur != *state.0) {
                self.snapshot = Some(Box::new(self.rt.clone()));
            }
        } else {
            self.last_start = Some(state.clone());
        }
        Ok(())
    }

    fn current_state(&self) -> PropnetState {
        PropnetState(self.rt.cur.clone().into_boxed_slice())
    }
}

impl StateMachine for PropnetMachine {
    type State = PropnetState;
    type Move = MoveId;

    fn fork(&self) -> Option<PropnetMachine> {
        Some(self.clone())
    }

    fn copy_facts(&self, into: &mut PropnetState, from: &PropnetState, ids: &[u32]) -> bool {
        for &i in ids {
            let (w, bit) = (i as usize / 64, 1u64 << (i % 64));
            into.0[w] = (into.0[w] & !bit) | (from.0[w] & bit);
        }
        true
    }

    fn factoring(&self) -> Option<Arc<Factoring>> {
        self.factoring.clone()
    }

    fn roles(&self) -> &[Term] {
        &self.net.roles
    }

    fn initial_state(&self) -> PropnetState {
        PropnetState(self.net.initial.clone().into_boxed_slice())
    }

    fn legal_moves_into(
        &mut self,
        state: &PropnetState,
        role: usize,
        out: &mut Vec<MoveId>,
    ) -> Result<(), MachineError> {
        self.load(state)?;
        if role < self.net.roles.len() {
            let net = &*self.net;
            let start = out.len();
            out.extend(self.rt.legal_entries(net, role).map(|k| net.legal[k].mv));
            out[start..].sort_unstable();
        }
        Ok(())
    }

    fn is_terminal(&mut self, state: &PropnetState) -> Result<bool, MachineError> {
        self.load(state)?;
        Ok(Net::lit_value(&self.rt.w.counts, self.net.terminal))
    }

    fn goal_values(&mut self, state: &PropnetState, role: usize) -> Result<Vec<u8>, MachineError> {
        self.load(state)?;
        self.rt.refresh_lazy(&self.net);
        let mut values: Vec<u8> = self
            .net
            .goals
            .get(role)
            .map(|g| {
                g.iter()
                    .filter(|&&(l, _)| Net::lit_value(&self.rt.w.counts, l))
                    .map(|&(_, v)| v)
                    .collect()
            })
            .unwrap_or_default();
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    fn next_state_unchecked(
        &mut self,
        state: &PropnetState,
        joint: &[MoveId],
    ) -> Result<PropnetState, MachineError> {
        let n_roles = self.net.roles.len();
        if joint.len() != n_roles {
            return Err(MachineError::JointMoveSize {
                expected: n_roles,
                found: joint.len(),
            });
        }
        self.load(state)?;
        let net = &*self.net;
        for (role, mv) in joint.iter().enumerate() {
            let node = net.input_of[role]
                .get(mv.0 as usize)
                .copied()
                .unwrap_or(NO_NODE);
            self.rt.set_input(net, role, node);
        }
        self.rt.w.propagate(net);
        Ok(PropnetState(self.rt.w.next_bits.clone().into_boxed_slice()))
    }

    fn has_percepts(&self) -> bool {
        self.seer.is_some()
    }

    fn percepts_into(
        &mut self,
        state: &PropnetState,
        joint: &[MoveId],
        role: usize,
        out: &mut Vec<Term>,
    ) -> Result<(), MachineError> {
        out.clear();
        if self.seer.is_none() {
            return Ok(());
        }
        let cached = self.seer_state.as_deref().filter(|c| c.0 == *state);
        let seen_state = match cached {
            Some(c) => c.1.clone(),
            None => {
                let facts = self.state_terms(state);
                let seer = self.seer.as_deref_mut().expect("checked above");
                let converted = seer.state_from_terms(&facts)?;
                self.seer_state = Some(Box::new((state.clone(), converted.clone())));
                converted
            }
        };
        let moves: Vec<Term> = joint.iter().map(|&m| self.move_term(m)).collect();
        let Some(seer) = self.seer.as_deref_mut() else {
            return Ok(());
        };
        let state = seen_state;
        let mut joint = Vec::with_capacity(moves.len());
        for mv in &moves {
            joint.push(
                seer.intern_move(mv).ok_or_else(|| {
                    MachineError::Engine(EngineFailure::UnknownMove(mv.to_string()))
                })?,
            );
        }
        seer.percepts_into(&state, &joint, role, out)
    }

    fn move_term(&self, mv: MoveId) -> Term {
        match self.net.moves.get(mv.0 as usize) {
            Some(&t) => self.net.pool.term(t),
            None => Term::Const(ggp_gdl::gdl::Sym::new("?unknown-move")),
        }
    }

    fn find_move(&self, term: &Term) -> Option<MoveId> {
        let t = self.net.pool.find(term)?;
        self.net.move_ids.get(&t).copied()
    }

    fn fact_ids_into(&self, state: &PropnetState, out: &mut Vec<u32>) -> bool {
        out.clear();
        for (w, &word) in state.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                if i < self.net.n_bases {
                    out.push(i as u32);
                }
                bits &= bits - 1;
            }
        }
        true
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<PropnetState, MachineError> {
        let net = &*self.net;
        let mut bits = vec![0u64; net.n_bases.div_ceil(64)].into_boxed_slice();
        for fact in facts {
            let unknown = || MachineError::UnknownFact {
                fact: fact.to_string(),
            };
            let id = net.pool.find(fact).ok_or_else(unknown)?;
            let i = net
                .base_terms
                .iter()
                .position(|&t| t == id)
                .ok_or_else(unknown)?;
            bits[i / 64] |= 1 << (i % 64);
        }
        Ok(PropnetState(bits))
    }

    fn state_terms(&self, state: &PropnetState) -> Vec<Term> {
        (0..self.net.n_bases.min(state.0.len() * 64))
            .filter(|&i| state.get(i))
            .map(|i| self.net.pool.term(self.net.base_terms[i]))
            .collect()
    }

    /// Random playouts in place: moves are drawn from the legal sets, the inputs set, and the
    /// bases whose `next` changed flipped, with no state built until the end.
    fn playout(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        max_steps: usize,
    ) -> Result<(PropnetState, usize), MachineError> {
        self.run_playout(state, rng, max_steps, None)
    }

    /// From [`BATCH_THRESHOLD`] playouts on, 64 games per pass, and from
    /// [`WIDE_THRESHOLD`] on 256 ([`BatchRunner`]); fewer, one after the other by
    /// differential propagation.
    fn random_playouts(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
    ) -> Result<PlayoutBatch, MachineError> {
        if count < BATCH_THRESHOLD {
            return self.playouts_one_by_one(state, rng, count, max_steps);
        }
        let width = if count < WIDE_THRESHOLD {
            Width::Narrow
        } else {
            Width::Wide
        };
        self.batch_run(width, state, rng, count, max_steps, None)
    }

    fn parallel_playouts(&self) -> usize {
        Width::Wide.lanes()
    }

    /// 64 playouts per pass when there are at most 64 starts, else 256.
    fn playouts_from(
        &mut self,
        starts: &[PropnetState],
        rng: &mut impl Rng,
        max_steps: usize,
        deadline: Instant,
        out: &mut Vec<PlayoutEnd<PropnetState>>,
    ) -> Result<bool, MachineError> {
        out.clear();
        let net = &self.net;
        if starts.len() <= Width::Narrow.lanes() {
            let runner = self
                .batch
                .get_or_insert_with(|| Box::new(BatchRunner::new(Arc::clone(net))));
            return runner.run_lanes(starts, rng, max_steps, deadline, out);
        }
        let runner = self
            .wide
            .get_or_insert_with(|| Box::new(BatchRunner::new(Arc::clone(net))));
        for chunk in starts.chunks(Width::Wide.lanes()) {
            if !runner.run_lanes(chunk, rng, max_steps, deadline, out)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The fewest playouts [`StateMachine::random_playouts`] plays side by side.
pub const BATCH_THRESHOLD: u64 = 16;

/// The fewest playouts [`StateMachine::random_playouts`] plays 256 games per pass: lanes
/// left idle at the end of a batch, while the longest games finish, cost more on wide
/// words, so the wide runner waits for enough playouts to restart lanes a few times.
pub const WIDE_THRESHOLD: u64 = 1024;

impl PropnetMachine {
    /// As [`StateMachine::playout`], also appending each joint move played to `joints`
    /// (one move per role, in role order, step after step).
    ///
    /// # Errors
    /// As [`StateMachine::playout`].
    pub fn playout_recorded(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        max_steps: usize,
        joints: &mut Vec<MoveId>,
    ) -> Result<(PropnetState, usize), MachineError> {
        self.run_playout(state, rng, max_steps, Some(joints))
    }

    /// [`StateMachine::random_playouts`] one game at a time, by differential propagation
    /// (the reference the batch is measured against).
    ///
    /// # Errors
    /// As [`StateMachine::playout`].
    pub fn playouts_one_by_one(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
    ) -> Result<PlayoutBatch, MachineError> {
        let mut batch = PlayoutBatch {
            goal_sums: vec![0; self.net.roles.len()],
            ..PlayoutBatch::default()
        };
        for _ in 0..count {
            let (last, steps) = self.run_playout(state, rng, max_steps, None)?;
            for (role, sum) in batch.goal_sums.iter_mut().enumerate() {
                let values = self.goal_values(&last, role)?;
                *sum += u64::from(values.last().copied().unwrap_or(0));
            }
            batch.playouts += 1;
            batch.steps += steps as u64;
        }
        Ok(batch)
    }

    /// As [`StateMachine::random_playouts`] played `width` games per pass whatever `count`,
    /// appending each finished playout to `records`.
    ///
    /// # Errors
    /// As [`StateMachine::playout`].
    pub fn random_playouts_recorded(
        &mut self,
        width: Width,
        state: &PropnetState,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
        records: &mut Vec<LaneRecord>,
    ) -> Result<PlayoutBatch, MachineError> {
        self.batch_run(width, state, rng, count, max_steps, Some(records))
    }

    /// Batch playouts on the runner of `width`, made on first use.
    fn batch_run(
        &mut self,
        width: Width,
        state: &PropnetState,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
        records: Option<&mut Vec<LaneRecord>>,
    ) -> Result<PlayoutBatch, MachineError> {
        let net = &self.net;
        match width {
            Width::Narrow => self
                .batch
                .get_or_insert_with(|| Box::new(BatchRunner::new(Arc::clone(net))))
                .run(state, rng, count, max_steps, records),
            Width::Wide => self
                .wide
                .get_or_insert_with(|| Box::new(BatchRunner::new(Arc::clone(net))))
                .run(state, rng, count, max_steps, records),
        }
    }

    fn run_playout(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        max_steps: usize,
        mut record: Option<&mut Vec<MoveId>>,
    ) -> Result<(PropnetState, usize), MachineError> {
        self.load_start(state)?;
        let net = &*self.net;
        let rt = &mut self.rt;
        for steps in 0..max_steps {
            if Net::lit_value(&rt.w.counts, net.terminal) {
                return Ok((PropnetState(rt.cur.clone().into_boxed_slice()), steps));
            }
            for role in 0..net.roles.len() {
                let Some(k) = rt.random_legal(net, role, rng) else {
                    return Err(MachineError::NoLegalMoves {
                        role: net.roles[role].to_string(),
                    });
                };
                rt.set_input(net, role, net.legal[k].input);
                if let Some(r) = record.as_deref_mut() {
                    r.push(net.legal[k].mv);
                }
            }
            rt.w.propagate(net);
            rt.advance(net);
        }
        Ok((self.current_state(), max_steps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const TICTACTOE: &str = include_str!("../../../../rules/ticTacToe.kif");
    const CONNECT_FOUR: &str = include_str!("../../../../rules/connectFour.kif");

    fn machine(text: &str) -> PropnetMachine {
        let description = Description::from_text(text).unwrap();
        PropnetMachine::new(&description, &Budget::default()).unwrap()
    }

    fn printed(m: &PropnetMachine, moves: &[MoveId]) -> Vec<String> {
        let mut v: Vec<String> = moves.iter().map(|&t| m.move_term(t).to_string()).collect();
        v.sort();
        v
    }

    fn mv(m: &PropnetMachine, text: &str) -> MoveId {
        m.find_move(&ggp_gdl::gdl::parse_term(text).unwrap())
            .unwrap()
    }

    /// Every counter, legal set and next bit agrees with an evaluation from scratch.
    fn assert_consistent(m: &PropnetMachine) {
        let mut m = m.clone();
        let net = &*m.net;
        m.rt.refresh_lazy(net);
        let rt = &m.rt;
        let mut expect = rt.w.counts.clone();
        net.recount(&mut expect);
        assert_eq!(
            expect, rt.w.counts,
            "counters differ from a full evaluation"
        );
        for (k, e) in net.legal.iter().enumerate() {
            let v = Net::lit_value(&rt.w.counts, e.lit);
            assert_eq!(v, rt.legal(k), "legal entry {k}");
        }
        for i in 0..net.n_bases {
            let bit = rt.w.next_bits[i / 64] >> (i % 64) & 1 == 1;
            assert_eq!(rt.next_value(net, i), bit, "next of base {i}");
        }
    }

    #[test]
    fn tictactoe_game() {
        let mut m = machine(TICTACTOE);
        let s0 = m.initial_state();
        assert_eq!(m.state_terms(&s0).len(), 10);
        assert!(!m.is_terminal(&s0).unwrap());
        assert_eq!(m.legal_moves(&s0, 0).unwrap().len(), 9);
        let o = m.legal_moves(&s0, 1).unwrap();
        assert_eq!(printed(&m, &o), ["noop"]);
        let noop = o[0];
        // x plays the first column, o the second; x wins.
        let mut s = s0.clone();
        let script = [
            ["(mark 1 1)", "noop"],
            ["noop", "(mark 1 2)"],
            ["(mark 2 1)", "noop"],
            ["noop", "(mark 2 2)"],
        ];
        for [a, b] in script {
            let joint = [
                if a == "noop" { noop } else { mv(&m, a) },
                if b == "noop" { noop } else { mv(&m, b) },
            ];
            s = m.next_state(&s, &joint).unwrap();
            assert!(!m.is_terminal(&s).unwrap());
            assert_consistent(&m);
        }
        assert_eq!(m.legal_moves(&s, 0).unwrap().len(), 5);
        assert!(m.next_state(&s, &[mv(&m, "(mark 1 1)"), noop]).is_err());
        let s = m.next_state(&s, &[mv(&m, "(mark 3 1)"), noop]).unwrap();
        assert!(m.is_terminal(&s).unwrap());
        assert_eq!(m.goals(&s).unwrap(), [100, 0]);
        let facts: Vec<String> = m.state_terms(&s).iter().map(|t| t.to_string()).collect();
        assert!(facts.contains(&"(cell 3 1 x)".to_string()));
        assert!(facts.contains(&"(control o)".to_string()));
        // The initial state is unchanged and still answers.
        assert_eq!(m.legal_moves(&s0, 0).unwrap().len(), 9);
        // A state rebuilt from its facts; a fact that is no base proposition is refused.
        let facts = m.state_terms(&s);
        assert_eq!(m.state_from_terms(&facts).unwrap(), s);
        let never = ggp_gdl::gdl::parse_term("(cell 4 4 x)").unwrap();
        assert!(matches!(
            m.state_from_terms(&[never]),
            Err(MachineError::UnknownFact { .. })
        ));
        assert_consistent(&m);
    }

    #[test]
    fn propagation_matches_full_evaluation() {
        for text in [TICTACTOE, CONNECT_FOUR] {
            let mut m = machine(text);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let s0 = m.initial_state();
            for _ in 0..20 {
                let (end, _) = m.playout(&s0, &mut rng, 1000).unwrap();
                assert_consistent(&m);
                assert!(m.is_terminal(&end).unwrap());
                assert_eq!(m.goals(&end).unwrap().len(), 2);
                // Step by step through the trait, with a state reloaded now and then.
                let mut s = s0.clone();
                let mut joint = Vec::new();
                let mut scratch = Vec::new();
                let mut steps = 0;
                while !m.is_terminal(&s).unwrap() {
                    m.random_joint_move_into(&s, &mut rng, &mut joint, &mut scratch)
                        .unwrap();
                    let t = m.next_state_unchecked(&s, &joint).unwrap();
                    assert_consistent(&m);
                    if steps % 3 == 0 {
                        assert!(!m.legal_moves(&s0, 0).unwrap().is_empty());
                    }
                    s = t;
                    steps += 1;
                }
                assert_consistent(&m);
            }
        }
    }

    #[test]
    fn playouts_in_place_agree_with_steps() {
        for text in [TICTACTOE, CONNECT_FOUR] {
            let mut m = machine(text);
            let mut stepper = m.clone();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
            let s0 = m.initial_state();
            for _ in 0..30 {
                let mut joints = Vec::new();
                let (end, steps) = m
                    .playout_recorded(&s0, &mut rng, 1000, &mut joints)
                    .unwrap();
                assert_eq!(joints.len(), steps * 2);
                let mut s = s0.clone();
                for joint in joints.chunks(2) {
                    s = stepper.next_state(&s, joint).unwrap();
                }
                assert_eq!(s, end);
                assert!(stepper.is_terminal(&s).unwrap());
                assert_consistent(&m);
            }
        }
    }

    #[test]
    fn recursion_reaches_its_fixpoint() {
        // From the corpus's nim-recursive1.kif: a self-recursive rule over a cyclic relation,
        // here depending on the state so that the cycle is evaluated per state (in the form the
        // recursion restriction allows).
        let text = "(role a) (init (p 1)) (init (e 1 2)) (init (e 2 3)) (init (e 3 1))
            (<= (next (e ?x ?y)) (true (e ?x ?y)))
            (<= (reach ?x ?y) (true (e ?x ?y)))
            (<= (reach ?x ?z) (reach ?x ?y) (true (e ?y ?z)))
            (<= (legal a (go ?y)) (true (p ?x)) (reach ?x ?y))
            (<= (legal a (cut ?x ?y)) (true (e ?x ?y)))
            (<= (next (p ?y)) (does a (go ?y)))
            (<= (next (p ?x)) (does a (cut ?y ?z)) (true (p ?x)))
            (<= (next (e ?x ?y)) (does a (go ?z)) (true (e ?x ?y)))
            (<= terminal (true (p 3)) (not (true (e 3 1))))
            (goal a 100)";
        let text = text.replace(
            "(<= (next (e ?x ?y)) (true (e ?x ?y)))",
            "(<= (next (e ?x ?y)) (true (e ?x ?y)) (does a (cut ?u ?v)) (distinct (e ?x ?y) (e ?u ?v)))",
        );
        let mut m = machine(&text);
        assert!(m.net().stats().cyclic_gates > 0);
        let s0 = m.initial_state();
        let moves = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(
            printed(&m, &moves),
            [
                "(cut 1 2)",
                "(cut 2 3)",
                "(cut 3 1)",
                "(go 1)",
                "(go 2)",
                "(go 3)"
            ]
        );
        // Cutting 2 -> 3 leaves 3 -> 1 -> 2: from 1 only 2 is reachable.
        let s1 = m.next_state(&s0, &[mv(&m, "(cut 2 3)")]).unwrap();
        let moves = m.legal_moves(&s1, 0).unwrap();
        assert_eq!(printed(&m, &moves), ["(cut 1 2)", "(cut 3 1)", "(go 2)"]);
        assert_consistent(&m);
        // Back to the start: the cycle must shrink back and grow again.
        let moves = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(moves.len(), 6);
        assert_consistent(&m);
    }

    #[test]
    fn stats_count_the_ground_program() {
        let stats = machine(TICTACTOE).net().stats();
        // Every base and input is an atom, and so is every proposition a rule derives.
        assert!(stats.ground_atoms > stats.bases + stats.inputs, "{stats:?}");
        // Each of the 9 cells has at least its three `next` rules.
        assert!(stats.ground_rules >= 27, "{stats:?}");
    }

    #[test]
    fn both_tries_stop_at_the_memory_budget() {
        if crate::resources::resident_memory().is_none() {
            // Not Linux: the memory budget is not enforced.
            return;
        }
        let description = Description::from_text(TICTACTOE).unwrap();
        let budget = Budget {
            max_memory_bytes: 1,
            ..Budget::default()
        };
        let Err(GroundError::Budget(why)) = PropnetMachine::new(&description, &budget) else {
            panic!("grounded within a byte, or stopped for another reason");
        };
        assert!(matches!(why, Exceeded::Retried { .. }), "{why}");
        let why = why.to_string();
        let (first, second) = why
            .split_once("; then, with demand-driven rules, ")
            .or_else(|| {
                let same = why.strip_suffix(" (with demand-driven rules too)")?;
                Some((same, same))
            })
            .unwrap_or_else(|| panic!("one try only: {why}"));
        for try_ in [first, second] {
            assert!(try_.starts_with("out of memory "), "{why}");
            assert!(try_.ends_with("over the limit of 0.0 MB"), "{why}");
        }
    }
}
