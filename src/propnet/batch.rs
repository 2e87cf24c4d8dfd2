//! Many games per pass: random playouts evaluated 64 games at a time, one bit per game
//! ("lane") in each node's word.
//!
//! Each node of the flattened [`Net`] holds a `u64` whose bit `k` is its value in lane `k`.
//! A gate's word is the AND or OR of its input literals' words (a negated literal reads the
//! complement), so one evaluation serves 64 independent games. The eager gates are split once
//! into those that depend on no input (legal moves, terminal, the state part of `next`) and
//! those that do, each list in topological order; a step evaluates every gate exactly once:
//! the move gates after the moves are set, the state gates after the bases change. A
//! recursive block is evaluated from all-false to its least fixpoint (monotone, so every
//! lane reaches its own). Lazy gates (only goals read them) are evaluated when a lane ends.
//! A full pass instead of the differential machine's change propagation: with 64 games at
//! once most gates change in some lane, and marking readers cost more than it saved (measured:
//! connectFour 0.77x the one-game machine with word-level change propagation, 2.3x with full
//! passes).
//!
//! Every lane plays its own game: each step, each role's legal entries are read as words, and
//! for every lane a uniformly random legal move is drawn among the bits set in that lane; the
//! chosen moves set the lanes' bits of the input nodes, and the next state's words (the `next`
//! literals) become the bases of the lanes still playing. A lane whose state is terminal (or
//! that reached the step limit) has its goals read and starts a new game from the start
//! state, until the number of playouts asked for have started; the batch ends when every lane
//! is idle. So each playout counted is one genuine random game from the given state to a
//! terminal state, with its goals read, exactly as [`StateMachine::playout`] plays it (with
//! another sequence of random numbers).
//!
//! [`StateMachine::playout`]: crate::machine::StateMachine::playout

use std::sync::Arc;

use rand::Rng;

use crate::machine::{EngineFailure, MachineError, PlayoutBatch};

use super::machine::PropnetState;
use super::net::{MoveId, NO_NODE, Net};
use super::optimize::Lit;

/// Games per pass.
pub const LANES: usize = 64;

/// One finished playout of a lane, for checking against another engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneRecord {
    /// The joint moves played, one move per role in role order, step after step.
    pub joints: Vec<MoveId>,
    /// The number of legal moves each role had, per step (same layout as `joints`).
    pub legal_counts: Vec<u32>,
    /// The last state.
    pub end: PropnetState,
    /// Whether the last state is terminal (if not, the playout hit the step limit).
    pub terminal: bool,
    /// Per role, the goal values that hold in the last state, ascending.
    pub goals: Vec<Vec<u8>>,
}

impl LaneRecord {
    fn empty() -> LaneRecord {
        LaneRecord {
            joints: Vec::new(),
            legal_counts: Vec::new(),
            end: PropnetState::from_words(Box::new([])),
            terminal: false,
            goals: Vec::new(),
        }
    }
}

/// The words of a net for 64 lanes, and the scratch space of batch playouts. Cloning copies
/// the words and shares the net.
#[derive(Clone)]
pub struct BatchRunner {
    net: Arc<Net>,
    /// One word per counted node.
    vals: Vec<u64>,
    /// The eager gates that do not depend on an input, in topological order (a recursive
    /// block as [`BLOCK`] plus its number).
    state_items: Arc<[Item]>,
    /// The eager gates that depend on an input, in topological order.
    move_items: Arc<[Item]>,
    /// The input nodes of the items' gates: per gate, the plain ones, then the negated ones.
    item_ins: Arc<[u32]>,
    /// Per role, per lane: the input node its last move set, or [`NO_NODE`].
    inputs_on: Vec<[u32; LANES]>,
    /// Scratch: each base's next word.
    next_words: Vec<u64>,
    /// Scratch: per lane, a count of legal moves, then the index of the chosen one.
    counts: [u32; LANES],
    picks: [u32; LANES],
    chosen: [u32; LANES],
}

/// A gate or recursive block to evaluate: `node` is the gate's node (with [`AND`] for an AND)
/// or [`BLOCK`] and the block's number; the gate reads `item_ins[start..neg]` plainly and
/// `item_ins[neg..end]` negated.
#[derive(Clone, Copy, Debug)]
struct Item {
    node: u32,
    start: u32,
    neg: u32,
    end: u32,
}

/// The tag of a block in [`Item::node`].
const BLOCK: u32 = 1 << 31;
/// The tag of an AND gate in [`Item::node`].
const AND: u32 = 1 << 30;

impl BatchRunner {
    /// Words for `net`, all lanes in the initial state.
    pub fn new(net: Arc<Net>) -> BatchRunner {
        let n = net.n_counted();
        let (state_items, move_items, item_ins) = items(&net);
        let mut r = BatchRunner {
            vals: vec![0; n],
            state_items: state_items.into(),
            move_items: move_items.into(),
            item_ins: item_ins.into(),
            inputs_on: vec![[NO_NODE; LANES]; net.roles.len()],
            next_words: vec![0; net.n_bases],
            counts: [0; LANES],
            picks: [0; LANES],
            chosen: [0; LANES],
            net,
        };
        let initial = r.net.initial.clone();
        r.load_all(&initial);
        r
    }

    /// The net.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    /// The word of a literal.
    #[inline(always)]
    fn lit(&self, l: Lit) -> u64 {
        // SAFETY: every literal of the net reads a counted node (checked at build: links and
        // gate inputs go to lower nodes, outputs read counted nodes), and `vals` has one word
        // per counted node.
        let v = unsafe { *self.vals.get_unchecked(l.node()) };
        v ^ 0u64.wrapping_sub(u64::from(l.0 & 1))
    }

    /// Puts every lane in `state` (bits, 64 bases a word), no input set, and evaluates
    /// every gate from scratch.
    fn load_all(&mut self, state: &[u64]) {
        let net = Arc::clone(&self.net);
        self.vals.fill(0);
        for i in 0..net.n_bases {
            if state[i / 64] >> (i % 64) & 1 == 1 {
                self.vals[Net::base_node(i) as usize] = !0;
            }
        }
        for on in &mut self.inputs_on {
            on.fill(NO_NODE);
        }
        let mut x = net.first_gate as usize;
        while x < net.first_legal as usize {
            if let Some(b) = self.block_starting(x) {
                self.eval_block(b);
                x = net.blocks[b].1 as usize;
            } else {
                self.vals[x] = self.eval_gate(x);
                x += 1;
            }
        }
    }

    /// The block starting at node `x`, if any.
    #[inline]
    fn block_starting(&self, x: usize) -> Option<usize> {
        let net = &*self.net;
        if net.block_at.is_empty() || net.block_at[x] == NO_NODE {
            None
        } else {
            Some(net.block_at[x] as usize)
        }
    }

    /// The word of gate node `x` from its inputs' words.
    #[inline]
    fn eval_gate(&self, x: usize) -> u64 {
        let net = &*self.net;
        let g = x - net.first_gate as usize;
        // SAFETY: `g` is a gate number (`first_gate <= x < first_legal`) and `gate_start` has
        // one more entry than there are gates, each within `gate_ins` (built so).
        let ins = unsafe {
            let s = *net.gate_start.get_unchecked(g) as usize;
            let e = *net.gate_start.get_unchecked(g + 1) as usize;
            net.gate_ins.get_unchecked(s..e)
        };
        if net.gate_and[g] {
            ins.iter().fold(!0, |acc, &l| acc & self.lit(l))
        } else {
            ins.iter().fold(0, |acc, &l| acc | self.lit(l))
        }
    }

    /// Evaluates the lazy gates (those only goals read).
    fn eval_lazy(&mut self) {
        let net = Arc::clone(&self.net);
        for x in net.first_lazy as usize..net.first_legal as usize {
            self.vals[x] = self.eval_gate(x);
        }
    }

    /// Evaluates block `b` from all-false to its least fixpoint, lane by lane at once.
    fn eval_block(&mut self, b: usize) {
        let (start, end) = self.net.blocks[b];
        let range = start as usize..end as usize;
        self.vals[range.clone()].fill(0);
        loop {
            let mut changed = false;
            for x in range.clone() {
                let v = self.eval_gate(x);
                if v != self.vals[x] {
                    self.vals[x] = v;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Evaluates `items` (gates and blocks) in order.
    fn sweep(&mut self, items: &[Item]) {
        let ins = Arc::clone(&self.item_ins);
        for it in items {
            if it.node & BLOCK != 0 {
                self.eval_block((it.node & !BLOCK) as usize);
                continue;
            }
            let vals = &self.vals[..];
            // SAFETY: `items` built the ranges within `item_ins`, whose entries are counted
            // nodes, and gate nodes below `first_legal`; `vals` has a word per counted node.
            let v = unsafe {
                let plain = ins.get_unchecked(it.start as usize..it.neg as usize);
                let negated = ins.get_unchecked(it.neg as usize..it.end as usize);
                let word = |i: &u32| *vals.get_unchecked(*i as usize);
                if it.node & AND != 0 {
                    let a = plain.iter().fold(!0, |acc, i| acc & word(i));
                    negated.iter().fold(a, |acc, i| acc & !word(i))
                } else {
                    let a = plain.iter().fold(0, |acc, i| acc | word(i));
                    negated.iter().fold(a, |acc, i| acc | !word(i))
                }
            };
            let x = (it.node & !AND) as usize;
            // SAFETY: as above.
            unsafe { *self.vals.get_unchecked_mut(x) = v };
        }
    }

    /// Re-evaluates the gates that do not depend on inputs.
    fn sweep_state(&mut self) {
        let items = Arc::clone(&self.state_items);
        self.sweep(&items);
    }

    /// Re-evaluates the gates that depend on inputs.
    fn sweep_move(&mut self) {
        let items = Arc::clone(&self.move_items);
        self.sweep(&items);
    }

    /// Puts the lanes of `lanes` in `state` and re-evaluates the state's gates.
    fn load_lanes(&mut self, state: &[u64], lanes: u64) {
        for i in 0..self.net.n_bases {
            let x = Net::base_node(i) as usize;
            if state[i / 64] >> (i % 64) & 1 == 1 {
                self.vals[x] |= lanes;
            } else {
                self.vals[x] &= !lanes;
            }
        }
        self.sweep_state();
    }

    /// Draws a uniformly random legal move of `role` for each lane of `active`, into
    /// `self.chosen` (legal entry numbers); records the counts in `self.counts`. Returns the
    /// lanes with no legal move.
    fn choose(&mut self, role: usize, active: u64, rng: &mut impl Rng) -> u64 {
        let net = Arc::clone(&self.net);
        self.counts = [0; LANES];
        // First pass: count each lane's legal moves.
        for grp in &net.legal_groups[role] {
            let guard = self.lit(grp.guard) & active;
            if guard == 0 {
                continue;
            }
            for k in grp.words.0 as usize * 64..(grp.words.1 as usize * 64).min(net.legal.len()) {
                let mut w = self.lit(net.legal[k].lit) & guard;
                while w != 0 {
                    self.counts[w.trailing_zeros() as usize] += 1;
                    w &= w - 1;
                }
            }
        }
        let mut stuck = 0u64;
        let mut lanes = active;
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            self.picks[lane] = match self.counts[lane] {
                0 => {
                    stuck |= 1 << lane;
                    u32::MAX
                }
                1 => 0,
                n => rng.random_range(0..n),
            };
        }
        // Second pass: find each lane's pick.
        let mut pending = active & !stuck;
        for grp in &net.legal_groups[role] {
            let guard = self.lit(grp.guard) & pending;
            if guard == 0 {
                continue;
            }
            for k in grp.words.0 as usize * 64..(grp.words.1 as usize * 64).min(net.legal.len()) {
                let mut w = self.lit(net.legal[k].lit) & guard & pending;
                while w != 0 {
                    let lane = w.trailing_zeros() as usize;
                    w &= w - 1;
                    if self.picks[lane] == 0 {
                        self.chosen[lane] = k as u32;
                        pending &= !(1 << lane);
                    } else {
                        self.picks[lane] -= 1;
                    }
                }
                if pending == 0 {
                    return stuck;
                }
            }
        }
        stuck
    }

    /// Sets the input of `role` in each lane of `active` to its chosen entry's input node.
    fn set_inputs(&mut self, role: usize, active: u64) {
        let net = Arc::clone(&self.net);
        let mut lanes = active;
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            let node = net.legal[self.chosen[lane] as usize].input;
            let old = self.inputs_on[role][lane];
            if old == node {
                continue;
            }
            let bit = 1u64 << lane;
            if old != NO_NODE {
                self.vals[old as usize] &= !bit;
            }
            if node != NO_NODE {
                self.vals[node as usize] |= bit;
            }
            self.inputs_on[role][lane] = node;
        }
    }

    /// Moves the lanes of `active` to their next states (every `next` is read before any
    /// base changes, since a `next` may read a base) and re-evaluates the state's gates.
    fn advance(&mut self, active: u64) {
        let net = Arc::clone(&self.net);
        for (i, &l) in net.next.iter().enumerate() {
            self.next_words[i] = self.lit(l);
        }
        for i in 0..net.n_bases {
            let x = Net::base_node(i) as usize;
            self.vals[x] = (self.next_words[i] & active) | (self.vals[x] & !active);
        }
        self.sweep_state();
    }

    /// The bits of lane `lane`'s state.
    fn lane_state(&self, lane: usize) -> PropnetState {
        let n = self.net.n_bases;
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (i, word) in self.vals[1..=n].iter().enumerate() {
            bits[i / 64] |= (word >> lane & 1) << (i % 64);
        }
        PropnetState::from_words(bits.into_boxed_slice())
    }

    /// Plays `count` random playouts from `state`, 64 at a time, each until a terminal state
    /// or `max_steps` moves, and reads their goals. With `record`, each finished playout is
    /// appended to it.
    ///
    /// # Errors
    /// [`MachineError::NoLegalMoves`] when a role has no legal move in a non-terminal state;
    /// a state from another net.
    pub fn run(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
        mut record: Option<&mut Vec<LaneRecord>>,
    ) -> Result<PlayoutBatch, MachineError> {
        let net = Arc::clone(&self.net);
        let start = state.words();
        if start.len() != net.initial.len() {
            return Err(MachineError::Engine(EngineFailure::ForeignState));
        }
        let n_roles = net.roles.len();
        let mut batch = PlayoutBatch {
            goal_sums: vec![0; n_roles],
            ..PlayoutBatch::default()
        };
        if count == 0 {
            return Ok(batch);
        }
        let first = count.min(LANES as u64) as usize;
        let mut active: u64 = if first == LANES {
            !0
        } else {
            (1u64 << first) - 1
        };
        let mut started = first as u64;
        self.load_all(start);
        let mut steps = [0usize; LANES];
        let mut records: Vec<LaneRecord> = if record.is_some() {
            vec![LaneRecord::empty(); LANES]
        } else {
            Vec::new()
        };
        while active != 0 {
            // Lanes that end here: terminal, or out of steps.
            let mut limit = 0u64;
            if max_steps != usize::MAX {
                for (lane, &s) in steps.iter().enumerate() {
                    if s >= max_steps {
                        limit |= 1 << lane;
                    }
                }
            }
            let terminal = self.lit(net.terminal) & active;
            let done = (terminal | limit) & active;
            if done != 0 {
                self.eval_lazy();
                self.finish(
                    done,
                    terminal,
                    &steps,
                    &mut batch,
                    &mut records,
                    &mut record,
                );
                let restart = done.count_ones().min((count - started) as u32);
                let mut again = 0u64;
                let mut lanes = done;
                for _ in 0..restart {
                    let lane = lanes.trailing_zeros() as usize;
                    lanes &= lanes - 1;
                    again |= 1 << lane;
                    steps[lane] = 0;
                }
                started += u64::from(restart);
                active &= !(done & !again);
                if again != 0 {
                    self.load_lanes(start, again);
                }
                if active == 0 {
                    break;
                }
            }
            for role in 0..n_roles {
                let stuck = self.choose(role, active, rng);
                if stuck != 0 {
                    return Err(MachineError::NoLegalMoves {
                        role: net.roles[role].to_string(),
                    });
                }
                self.set_inputs(role, active);
                if !records.is_empty() {
                    let mut lanes = active;
                    while lanes != 0 {
                        let lane = lanes.trailing_zeros() as usize;
                        lanes &= lanes - 1;
                        let k = self.chosen[lane] as usize;
                        records[lane].joints.push(net.legal[k].mv);
                        records[lane].legal_counts.push(self.counts[lane]);
                    }
                }
            }
            self.sweep_move();
            self.advance(active);
            let mut lanes = active;
            while lanes != 0 {
                let lane = lanes.trailing_zeros() as usize;
                lanes &= lanes - 1;
                steps[lane] += 1;
            }
        }
        Ok(batch)
    }

    /// Reads the goals of the lanes of `done` (lazy gates evaluated) into `batch`, and their
    /// records.
    fn finish(
        &mut self,
        done: u64,
        terminal: u64,
        steps: &[usize; LANES],
        batch: &mut PlayoutBatch,
        records: &mut [LaneRecord],
        record: &mut Option<&mut Vec<LaneRecord>>,
    ) {
        let net = &*self.net;
        for (role, goals) in net.goals.iter().enumerate() {
            // The highest value each lane's rules give; goals are few, so lane by lane.
            let mut best = [0u8; LANES];
            for &(l, v) in goals {
                let mut w = self.lit(l) & done;
                while w != 0 {
                    let lane = w.trailing_zeros() as usize;
                    w &= w - 1;
                    best[lane] = best[lane].max(v);
                    if let Some(r) = records.get_mut(lane) {
                        r.goals.resize(net.roles.len(), Vec::new());
                        r.goals[role].push(v);
                    }
                }
            }
            let mut lanes = done;
            while lanes != 0 {
                let lane = lanes.trailing_zeros() as usize;
                lanes &= lanes - 1;
                batch.goal_sums[role] += u64::from(best[lane]);
            }
        }
        let mut lanes = done;
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            batch.playouts += 1;
            batch.steps += steps[lane] as u64;
            if let Some(out) = record.as_deref_mut() {
                let mut r = std::mem::replace(&mut records[lane], LaneRecord::empty());
                r.end = self.lane_state(lane);
                r.terminal = terminal >> lane & 1 == 1;
                r.goals.resize(net.roles.len(), Vec::new());
                for g in &mut r.goals {
                    g.sort_unstable();
                    g.dedup();
                }
                out.push(r);
            }
        }
    }
}

/// The eager gates (and recursive blocks) of `net` in topological order: those that depend on
/// no input, and those that do; and the gates' input nodes.
fn items(net: &Net) -> (Vec<Item>, Vec<Item>, Vec<u32>) {
    let n = net.n_counted();
    let mut on_move = vec![false; n];
    let first_input = Net::base_node(net.n_bases) as usize;
    on_move[first_input..net.first_gate as usize].fill(true);
    let gate_ins = |x: usize| {
        let g = x - net.first_gate as usize;
        &net.gate_ins[net.gate_start[g] as usize..net.gate_start[g + 1] as usize]
    };
    let (mut state, mut moves, mut ins) = (Vec::new(), Vec::new(), Vec::new());
    let mut x = net.first_gate as usize;
    while x < net.first_lazy as usize {
        let block = (!net.block_at.is_empty() && net.block_at[x] != NO_NODE)
            .then(|| net.block_at[x] as usize);
        let (end, item) = match block {
            Some(b) => (
                net.blocks[b].1 as usize,
                Item {
                    node: BLOCK | b as u32,
                    start: 0,
                    neg: 0,
                    end: 0,
                },
            ),
            None => {
                let start = ins.len() as u32;
                let lits = gate_ins(x);
                ins.extend(lits.iter().filter(|l| !l.neg()).map(|l| l.node() as u32));
                let neg = ins.len() as u32;
                ins.extend(lits.iter().filter(|l| l.neg()).map(|l| l.node() as u32));
                let and = if net.gate_and[x - net.first_gate as usize] {
                    AND
                } else {
                    0
                };
                let item = Item {
                    node: x as u32 | and,
                    start,
                    neg,
                    end: ins.len() as u32,
                };
                (x + 1, item)
            }
        };
        // A block's gates read each other: it depends on an input if any gate reads one
        // from outside (inside, the flags are still false).
        let m = (x..end).any(|y| gate_ins(y).iter().any(|l| on_move[l.node()]));
        on_move[x..end].fill(m);
        if m {
            moves.push(item);
        } else {
            state.push(item);
        }
        x = end;
    }
    (state, moves, ins)
}
