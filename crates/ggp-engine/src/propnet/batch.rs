//! Many games per pass: random playouts evaluated 64 or 256 games at a time, one bit per game
//! ("lane") in each node's words.
//!
//! Each node of the flattened [`Net`] holds `W` words of 64 bits (`W` is 1 or 4), bit `k` of
//! word `g` its value in lane `64 g + k`. A gate's words are the AND or OR of its input
//! literals' words (a negated literal reads the complement), so one evaluation serves 64 `W`
//! independent games; with `W = 4` the words of a node are one 256-bit vector (AVX2 where the
//! processor has it, detected at run time). The eager gates are split once into those that
//! depend on no input (legal moves, terminal, the state part of `next`) and those that do,
//! each a stream of gates in topological order (node, kind and input counts, then the input
//! nodes, plain ones before negated ones) read front to back; a step evaluates every gate
//! exactly once: the move gates after the moves are set, the state gates after the bases
//! change. A recursive block is evaluated from all-false to its least fixpoint (monotone, so
//! every lane reaches its own). Lazy gates (only goals read them) are evaluated when a lane
//! ends. A full pass instead of the differential machine's change propagation: with 64 games
//! at once most gates change in some lane, and marking readers cost more than it saved
//! (measured: connectFour 0.77x the one-game machine with word-level change propagation, 2.3x
//! with full passes).
//!
//! Every lane plays its own game: each step, each role's legal entries are read as words, and
//! for every lane a uniformly random legal move is drawn among the bits set in that lane; the
//! chosen moves set the lanes' bits of the input nodes, and the next state's words (the `next`
//! literals) become the bases of the lanes still playing. A lane whose state is terminal (or
//! that reached the step limit) has its goals read; if more playouts are wanted it sits out
//! one step while the same state pass that moves the other lanes puts it back in the start
//! state (cheaper than a pass of its own for the restarted lanes), and plays again from the
//! next step; the batch ends when every lane is idle. So each playout counted is one genuine
//! random game from the given state to a terminal state, with its goals read, exactly as
//! [`StateMachine::playout`] plays it (with another sequence of random numbers).
//!
//! [`StateMachine::playout`]: crate::machine::StateMachine::playout

use std::sync::Arc;

use rand::Rng;

use crate::machine::{EngineFailure, MachineError, PlayoutBatch, PlayoutEnd};

use super::machine::PropnetState;
use super::net::{MoveId, NO_NODE, Net};
use super::optimize::Lit;

/// Lanes per word.
pub const LANES: usize = 64;

/// How many lanes a batch runs side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// 64 lanes: one word per node.
    Narrow,
    /// 256 lanes: four words per node.
    Wide,
}

impl Width {
    /// The number of lanes.
    pub fn lanes(self) -> usize {
        match self {
            Width::Narrow => LANES,
            Width::Wide => 4 * LANES,
        }
    }
}

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

/// The words of a net for `64 W` lanes, and the scratch space of batch playouts. Cloning
/// copies the words and shares the net.
#[derive(Clone)]
pub struct BatchRunner<const W: usize> {
    net: Arc<Net>,
    /// `W` words per counted node.
    vals: Vec<[u64; W]>,
    /// The eager gates that do not depend on an input, in topological order (see
    /// [`gate_streams`]).
    state_gates: Arc<[u32]>,
    /// The eager gates that depend on an input, in topological order.
    move_gates: Arc<[u32]>,
    /// The lazy gates (only goals read them), in topological order.
    lazy_gates: Arc<[u32]>,
    /// Whether the processor runs AVX2 (the wide sweep uses it).
    avx2: bool,
    /// The literal of each legal entry (as in the net's legal table, packed).
    legal_lits: Arc<[Lit]>,
    /// Per role, per lane: the input node its last move set, or [`NO_NODE`].
    inputs_on: Vec<Vec<u32>>,
    /// Scratch: each base's next words.
    next_words: Vec<[u64; W]>,
    /// Scratch, per lane: a count of legal moves, the number of the move drawn among them,
    /// and the legal entry of that move.
    counts: Vec<u32>,
    picks: Vec<u32>,
    chosen: Vec<u32>,
    /// Scratch: the legal entries that hold in some lane, with their words.
    hits: Vec<(u32, [u64; W])>,
    /// Scratch: per lane, its first `slots` legal entries.
    listed: Vec<u32>,
    slots: usize,
}

/// The most legal entries listed per lane while drawing moves (a lane with more finds its
/// move in a second pass).
const MAX_SLOTS: usize = 256;

/// The kind bits of a gate stream's second entry: an AND gate, or a recursive block (whose
/// number is the first entry).
const AND: u32 = 1 << 31;
const BLOCK: u32 = 1 << 30;

/// The 64 lanes of `n` lanes' first word.
fn first_lanes(n: usize) -> u64 {
    if n >= LANES { !0 } else { (1u64 << n) - 1 }
}

impl<const W: usize> BatchRunner<W> {
    /// Words for `net`, all lanes in the initial state.
    pub fn new(net: Arc<Net>) -> BatchRunner<W> {
        BatchRunner::with_slots(net, MAX_SLOTS)
    }

    /// As [`BatchRunner::new`], listing at most `max_slots` legal entries per lane.
    fn with_slots(net: Arc<Net>, max_slots: usize) -> BatchRunner<W> {
        let n = net.n_counted();
        let [state_gates, move_gates, lazy_gates] = gate_streams(&net);
        let most_moves = (0..net.roles.len())
            .map(|r| {
                net.legal_groups[r]
                    .iter()
                    .map(|g| (g.words.1 - g.words.0) as usize * 64)
            })
            .map(|sizes| sizes.sum::<usize>())
            .max()
            .unwrap_or(0);
        let slots = most_moves.clamp(1, max_slots.max(1));
        let mut r = BatchRunner {
            vals: vec![[0; W]; n],
            state_gates: state_gates.into(),
            move_gates: move_gates.into(),
            lazy_gates: lazy_gates.into(),
            avx2: has_avx2(),
            legal_lits: net.legal.iter().map(|e| e.lit).collect(),
            inputs_on: vec![vec![NO_NODE; W * LANES]; net.roles.len()],
            next_words: vec![[0; W]; net.n_bases],
            counts: vec![0; W * LANES],
            picks: vec![0; W * LANES],
            chosen: vec![0; W * LANES],
            hits: Vec::new(),
            listed: vec![0; W * LANES * slots],
            slots,
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

    /// Word `g` of a literal.
    #[inline(always)]
    fn word(&self, l: Lit, g: usize) -> u64 {
        // SAFETY: every literal of the net reads a counted node (checked at build: links and
        // gate inputs go to lower nodes, outputs read counted nodes), and `vals` has one entry
        // per counted node; `g < W` at every call.
        let v = unsafe { *self.vals.get_unchecked(l.node()).get_unchecked(g) };
        v ^ 0u64.wrapping_sub(u64::from(l.0 & 1))
    }

    /// Puts every lane in `state` (bits, 64 bases a word), no input set, and evaluates the
    /// gates that depend on no input from scratch.
    fn load_all(&mut self, state: &[u64]) {
        let net = Arc::clone(&self.net);
        self.vals.fill([0; W]);
        for i in 0..net.n_bases {
            if state[i / 64] >> (i % 64) & 1 == 1 {
                self.vals[Net::base_node(i) as usize] = [!0; W];
            }
        }
        for on in &mut self.inputs_on {
            on.fill(NO_NODE);
        }
        // The other gates are evaluated before they are read: the move gates once the moves
        // are set, the lazy ones when lanes end.
        let stream = Arc::clone(&self.state_gates);
        self.sweep(&stream);
    }

    /// Evaluates the lazy gates (those only goals read).
    fn eval_lazy(&mut self) {
        let stream = Arc::clone(&self.lazy_gates);
        self.sweep(&stream);
    }

    /// Re-evaluates the gates of `stream`.
    fn sweep(&mut self, stream: &[u32]) {
        let net = Arc::clone(&self.net);
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` says the processor has AVX2.
            unsafe { sweep_avx2(&net, &mut self.vals, stream) };
            return;
        }
        sweep(&net, &mut self.vals, stream);
    }

    /// The words of a literal.
    #[inline(always)]
    fn words(&self, l: Lit) -> [u64; W] {
        // SAFETY: as in `word`.
        let v = unsafe { *self.vals.get_unchecked(l.node()) };
        let neg = 0u64.wrapping_sub(u64::from(l.0 & 1));
        v.map(|w| w ^ neg)
    }

    /// Draws a uniformly random legal move of `role` for each lane of `active`, into
    /// `self.chosen` (legal entry numbers); records the counts in `self.counts`. Returns
    /// whether some lane has no legal move.
    ///
    /// One pass over the role's legal entries (those of groups whose guard holds in some
    /// lane) lists each lane's legal entries, the first [`Self::slots`] of them, in
    /// `self.listed`; a lane that draws a move beyond those finds it in a second pass over
    /// the entries that hold somewhere.
    fn choose(&mut self, role: usize, active: &[u64; W], rng: &mut impl Rng) -> bool {
        let net = Arc::clone(&self.net);
        let lits = Arc::clone(&self.legal_lits);
        let slots = self.slots;
        self.counts.fill(0);
        self.hits.clear();
        for grp in &net.legal_groups[role] {
            let guard = self.words(grp.guard);
            let guard: [u64; W] = std::array::from_fn(|g| guard[g] & active[g]);
            if guard.iter().all(|&w| w == 0) {
                continue;
            }
            let range = grp.words.0 as usize * 64..(grp.words.1 as usize * 64).min(net.legal.len());
            for (k, &lit) in lits[range.clone()].iter().enumerate() {
                let v = self.words(lit);
                let w: [u64; W] = std::array::from_fn(|g| v[g] & guard[g]);
                if w.iter().all(|&w| w == 0) {
                    continue;
                }
                let k = (range.start + k) as u32;
                self.hits.push((k, w));
                for (g, &word) in w.iter().enumerate() {
                    let mut word = word;
                    while word != 0 {
                        let lane = g * LANES + word.trailing_zeros() as usize;
                        word &= word - 1;
                        // SAFETY: `lane < W * LANES`, the length of `counts`; `listed` has
                        // `slots` entries per lane.
                        unsafe {
                            let c = self.counts.get_unchecked_mut(lane);
                            if (*c as usize) < slots {
                                *self.listed.get_unchecked_mut(lane * slots + *c as usize) = k;
                            }
                            *c += 1;
                        }
                    }
                }
            }
        }
        let mut stuck = false;
        let mut beyond = [0u64; W];
        for (g, &a) in active.iter().enumerate() {
            let mut lanes = a;
            while lanes != 0 {
                let bit = lanes.trailing_zeros() as usize;
                let lane = g * LANES + bit;
                lanes &= lanes - 1;
                let pick = match self.counts[lane] {
                    0 => {
                        stuck = true;
                        continue;
                    }
                    1 => 0,
                    n => rng.random_range(0..n) as usize,
                };
                if pick < slots {
                    self.chosen[lane] = self.listed[lane * slots + pick];
                } else {
                    self.picks[lane] = pick as u32;
                    beyond[g] |= 1 << bit;
                }
            }
        }
        if stuck {
            return true;
        }
        if beyond.iter().all(|&b| b == 0) {
            return false;
        }
        // Second pass, over the entries legal somewhere: the picks beyond the listed ones.
        for &(k, w) in &self.hits {
            for g in 0..W {
                let mut word = w[g] & beyond[g];
                while word != 0 {
                    let bit = word.trailing_zeros() as usize;
                    word &= word - 1;
                    let lane = g * LANES + bit;
                    if self.picks[lane] == 0 {
                        self.chosen[lane] = k;
                        beyond[g] &= !(1 << bit);
                    } else {
                        self.picks[lane] -= 1;
                    }
                }
            }
        }
        false
    }

    /// Sets the input of `role` in each lane of `active` to its chosen entry's input node.
    fn set_inputs(&mut self, role: usize, active: &[u64; W]) {
        let net = Arc::clone(&self.net);
        for (g, &a) in active.iter().enumerate() {
            let mut lanes = a;
            while lanes != 0 {
                let bit = lanes.trailing_zeros() as usize;
                lanes &= lanes - 1;
                let lane = g * LANES + bit;
                let node = net.legal[self.chosen[lane] as usize].input;
                let old = self.inputs_on[role][lane];
                if old == node {
                    continue;
                }
                if old != NO_NODE {
                    self.vals[old as usize][g] &= !(1 << bit);
                }
                if node != NO_NODE {
                    self.vals[node as usize][g] |= 1 << bit;
                }
                self.inputs_on[role][lane] = node;
            }
        }
    }

    /// Moves the lanes of `active` to their next states and the lanes of `restart` to
    /// `start` (every `next` is read before any base changes, since a `next` may read a
    /// base), and re-evaluates the state's gates.
    fn advance(&mut self, active: &[u64; W], restart: &[u64; W], start: &[u64]) {
        let net = Arc::clone(&self.net);
        for (i, &l) in net.next.iter().enumerate() {
            let neg = 0u64.wrapping_sub(u64::from(l.0 & 1));
            let v = self.vals[l.node()];
            self.next_words[i] = v.map(|w| w ^ neg);
        }
        for i in 0..net.n_bases {
            let x = Net::base_node(i) as usize;
            let on = 0u64.wrapping_sub(start[i / 64] >> (i % 64) & 1);
            let next = self.next_words[i];
            let old = &mut self.vals[x];
            for g in 0..W {
                old[g] = (next[g] & active[g])
                    | (on & restart[g])
                    | (old[g] & !(active[g] | restart[g]));
            }
        }
        let stream = Arc::clone(&self.state_gates);
        self.sweep(&stream);
    }

    /// The bits of lane `lane`'s state.
    fn lane_state(&self, lane: usize) -> PropnetState {
        let n = self.net.n_bases;
        let (g, k) = (lane / LANES, lane % LANES);
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (i, words) in self.vals[1..=n].iter().enumerate() {
            bits[i / 64] |= (words[g] >> k & 1) << (i % 64);
        }
        PropnetState::from_words(bits.into_boxed_slice())
    }

    /// Plays `count` random playouts from `state`, `64 W` at a time, each until a terminal
    /// state or `max_steps` moves, and reads their goals. With `record`, each finished
    /// playout is appended to it.
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
        let first = count.min((W * LANES) as u64) as usize;
        let mut active = [0u64; W];
        for (g, a) in active.iter_mut().enumerate() {
            *a = first_lanes(first.saturating_sub(g * LANES));
        }
        let mut restart = [0u64; W];
        let mut started = first as u64;
        self.load_all(start);
        let mut steps = vec![0usize; W * LANES];
        let mut records: Vec<LaneRecord> = if record.is_some() {
            vec![LaneRecord::empty(); W * LANES]
        } else {
            Vec::new()
        };
        loop {
            // The lanes put back in the start state by the last step play again.
            for g in 0..W {
                active[g] |= restart[g];
                restart[g] = 0;
            }
            // Lanes that end here: terminal, or out of steps.
            let mut done = [0u64; W];
            let mut terminal = [0u64; W];
            for g in 0..W {
                let mut limit = 0u64;
                if max_steps != usize::MAX {
                    for (lane, &s) in steps[g * LANES..(g + 1) * LANES].iter().enumerate() {
                        if s >= max_steps {
                            limit |= 1 << lane;
                        }
                    }
                }
                terminal[g] = self.word(net.terminal, g) & active[g];
                done[g] = (terminal[g] | limit) & active[g];
            }
            if done.iter().any(|&d| d != 0) {
                self.eval_lazy();
                for g in 0..W {
                    if done[g] == 0 {
                        continue;
                    }
                    self.finish(g, done[g], &steps, &mut batch, &mut records);
                    if let Some(out) = record.as_deref_mut() {
                        out.extend(self.take_records(g, done[g], terminal[g], &mut records));
                    }
                    let again = done[g].count_ones().min((count - started) as u32);
                    let mut lanes = done[g];
                    for _ in 0..again {
                        let lane = lanes.trailing_zeros() as usize;
                        lanes &= lanes - 1;
                        restart[g] |= 1 << lane;
                        steps[g * LANES + lane] = 0;
                    }
                    started += u64::from(again);
                    active[g] &= !done[g];
                }
            }
            if active.iter().chain(&restart).all(|&a| a == 0) {
                break;
            }
            for role in 0..n_roles {
                if active.iter().all(|&a| a == 0) {
                    break;
                }
                if self.choose(role, &active, rng) {
                    return Err(MachineError::NoLegalMoves {
                        role: net.roles[role].to_string(),
                    });
                }
                self.set_inputs(role, &active);
                if !records.is_empty() {
                    for (g, &a) in active.iter().enumerate() {
                        let mut lanes = a;
                        while lanes != 0 {
                            let lane = g * LANES + lanes.trailing_zeros() as usize;
                            lanes &= lanes - 1;
                            let k = self.chosen[lane] as usize;
                            records[lane].joints.push(net.legal[k].mv);
                            records[lane].legal_counts.push(self.counts[lane]);
                        }
                    }
                }
            }
            if active.iter().any(|&a| a != 0) {
                let stream = Arc::clone(&self.move_gates);
                self.sweep(&stream);
            }
            self.advance(&active, &restart, start);
            for g in 0..W {
                let mut lanes = active[g];
                while lanes != 0 {
                    let lane = lanes.trailing_zeros() as usize;
                    lanes &= lanes - 1;
                    steps[g * LANES + lane] += 1;
                }
            }
        }
        Ok(batch)
    }

    /// Puts lane `k` in `starts[k]` (the other lanes in no state), no input set, and
    /// evaluates the gates that depend on no input.
    fn load_lanes(&mut self, starts: &[PropnetState]) {
        let n_bases = self.net.n_bases;
        self.vals.fill([0; W]);
        for (lane, start) in starts.iter().enumerate() {
            let (g, bit) = (lane / LANES, lane % LANES);
            for (w, &word) in start.words().iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let i = w * 64 + word.trailing_zeros() as usize;
                    word &= word - 1;
                    if i < n_bases {
                        self.vals[Net::base_node(i) as usize][g] |= 1 << bit;
                    }
                }
            }
        }
        for on in &mut self.inputs_on {
            on.fill(NO_NODE);
        }
        let stream = Arc::clone(&self.state_gates);
        self.sweep(&stream);
    }

    /// Plays one random playout from each state of `starts` (at most `64 W`), lane `k` from
    /// `starts[k]`, each until a terminal state or `max_steps` moves, and appends their ends
    /// to `out` in the order of `starts`: the goals of a terminal state, else the state.
    /// Looks at the clock before every step: `Ok(false)` when `deadline` passed first (`out`
    /// then holds none of this call's ends).
    ///
    /// # Errors
    /// [`MachineError::NoLegalMoves`] when a role has no legal move in a non-terminal state;
    /// a state from another net.
    pub fn run_lanes(
        &mut self,
        starts: &[PropnetState],
        rng: &mut impl Rng,
        max_steps: usize,
        deadline: std::time::Instant,
        out: &mut Vec<PlayoutEnd<PropnetState>>,
    ) -> Result<bool, MachineError> {
        let net = Arc::clone(&self.net);
        let n = starts.len();
        assert!(n <= W * LANES, "more start states than lanes");
        if starts.iter().any(|s| s.words().len() != net.initial.len()) {
            return Err(MachineError::Engine(EngineFailure::ForeignState));
        }
        let base = out.len();
        out.resize(base + n, PlayoutEnd::Goals(Vec::new()));
        let mut active = [0u64; W];
        for (g, a) in active.iter_mut().enumerate() {
            *a = first_lanes(n.saturating_sub(g * LANES));
        }
        self.load_lanes(starts);
        let mut steps = 0usize;
        let none = [0u64; W];
        loop {
            // All live lanes have made the same number of moves.
            let mut done = [0u64; W];
            let mut terminal = [0u64; W];
            for g in 0..W {
                terminal[g] = self.word(net.terminal, g) & active[g];
                done[g] = if steps >= max_steps {
                    active[g]
                } else {
                    terminal[g]
                };
            }
            if done.iter().any(|&d| d != 0) {
                if terminal.iter().any(|&t| t != 0) {
                    self.eval_lazy();
                }
                for g in (0..W).filter(|&g| done[g] != 0) {
                    self.lane_ends(g, done[g], terminal[g], &mut out[base + g * LANES..]);
                    active[g] &= !done[g];
                }
            }
            if active.iter().all(|&a| a == 0) {
                return Ok(true);
            }
            if std::time::Instant::now() >= deadline {
                out.truncate(base);
                return Ok(false);
            }
            for role in 0..net.roles.len() {
                if self.choose(role, &active, rng) {
                    out.truncate(base);
                    return Err(MachineError::NoLegalMoves {
                        role: net.roles[role].to_string(),
                    });
                }
                self.set_inputs(role, &active);
            }
            let stream = Arc::clone(&self.move_gates);
            self.sweep(&stream);
            self.advance(&active, &none, &net.initial);
            steps += 1;
        }
    }

    /// Writes the ends of the lanes of `done` in word `g` into `out` (indexed by lane within
    /// the word): the goals of those in `terminal` (lazy gates evaluated), the state of the
    /// others.
    fn lane_ends(&self, g: usize, done: u64, terminal: u64, out: &mut [PlayoutEnd<PropnetState>]) {
        let n_roles = self.net.roles.len();
        let mut lanes = done;
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            out[lane] = if terminal >> lane & 1 == 1 {
                PlayoutEnd::Goals(vec![0; n_roles])
            } else {
                PlayoutEnd::Cut(self.lane_state(g * LANES + lane))
            };
        }
        for (role, goals) in self.net.goals.iter().enumerate() {
            for &(l, v) in goals {
                let mut w = self.word(l, g) & done & terminal;
                while w != 0 {
                    let lane = w.trailing_zeros() as usize;
                    w &= w - 1;
                    if let PlayoutEnd::Goals(best) = &mut out[lane] {
                        best[role] = best[role].max(v);
                    }
                }
            }
        }
    }

    /// Reads the goals of the lanes of `done` in word `g` (lazy gates evaluated) into
    /// `batch`, and into their records.
    fn finish(
        &mut self,
        g: usize,
        done: u64,
        steps: &[usize],
        batch: &mut PlayoutBatch,
        records: &mut [LaneRecord],
    ) {
        let net = Arc::clone(&self.net);
        for (role, goals) in net.goals.iter().enumerate() {
            // The highest value each lane's rules give; goals are few, so lane by lane.
            let mut best = [0u8; LANES];
            for &(l, v) in goals {
                let mut w = self.word(l, g) & done;
                while w != 0 {
                    let lane = w.trailing_zeros() as usize;
                    w &= w - 1;
                    best[lane] = best[lane].max(v);
                    if let Some(r) = records.get_mut(g * LANES + lane) {
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
            batch.steps += steps[g * LANES + lane] as u64;
        }
    }

    /// The finished records of the lanes of `done` in word `g`, replaced by empty ones.
    fn take_records(
        &self,
        g: usize,
        done: u64,
        terminal: u64,
        records: &mut [LaneRecord],
    ) -> Vec<LaneRecord> {
        let mut out = Vec::new();
        let mut lanes = done;
        while lanes != 0 {
            let lane = lanes.trailing_zeros() as usize;
            lanes &= lanes - 1;
            let mut r = std::mem::replace(&mut records[g * LANES + lane], LaneRecord::empty());
            r.end = self.lane_state(g * LANES + lane);
            r.terminal = terminal >> lane & 1 == 1;
            r.goals.resize(self.net.roles.len(), Vec::new());
            for goals in &mut r.goals {
                goals.sort_unstable();
                goals.dedup();
            }
            out.push(r);
        }
        out
    }
}

/// Whether the processor runs AVX2.
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The words of gate node `x` from its inputs' words.
#[inline]
fn eval_gate<const W: usize>(net: &Net, vals: &[[u64; W]], x: usize) -> [u64; W] {
    let g = x - net.first_gate as usize;
    let ins = &net.gate_ins[net.gate_start[g] as usize..net.gate_start[g + 1] as usize];
    let read = |l: &Lit| {
        let neg = 0u64.wrapping_sub(u64::from(l.0 & 1));
        vals[l.node()].map(|w| w ^ neg)
    };
    if net.gate_and[g] {
        ins.iter().fold([!0; W], |acc, l| {
            let v = read(l);
            std::array::from_fn(|k| acc[k] & v[k])
        })
    } else {
        ins.iter().fold([0; W], |acc, l| {
            let v = read(l);
            std::array::from_fn(|k| acc[k] | v[k])
        })
    }
}

/// Evaluates block `b` from all-false to its least fixpoint, every lane at once.
fn eval_block<const W: usize>(net: &Net, vals: &mut [[u64; W]], b: usize) {
    let (start, end) = net.blocks[b];
    let range = start as usize..end as usize;
    vals[range.clone()].fill([0; W]);
    loop {
        let mut changed = false;
        for x in range.clone() {
            let v = eval_gate(net, vals, x);
            if v != vals[x] {
                vals[x] = v;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// [`sweep`] compiled for AVX2 (the words of a node in one vector when `W = 4`).
///
/// # Safety
/// The processor must run AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sweep_avx2<const W: usize>(net: &Net, vals: &mut [[u64; W]], stream: &[u32]) {
    sweep(net, vals, stream);
}

/// Evaluates the gates of `stream` (built by [`gate_streams`]) in order.
#[inline(always)]
fn sweep<const W: usize>(net: &Net, vals: &mut [[u64; W]], stream: &[u32]) {
    let mut p = 0;
    while p < stream.len() {
        // SAFETY: `gate_streams` wrote each run as its gate count, kind and plain-input count
        // and negated-input count, then per gate its node and input nodes, and each block as
        // a run of one; so the reads stay within `stream`. Nodes and inputs are counted nodes
        // and `vals` has an entry per counted node.
        unsafe {
            let count = *stream.get_unchecked(p) as usize;
            let kind = *stream.get_unchecked(p + 1);
            let n_neg = *stream.get_unchecked(p + 2) as usize;
            p += 3;
            if kind & BLOCK != 0 {
                eval_block(net, vals, *stream.get_unchecked(p) as usize);
                p += 1;
                continue;
            }
            let n_plain = (kind & !AND) as usize;
            let len = count * (1 + n_plain + n_neg);
            let run = stream.get_unchecked(p..p + len);
            p += len;
            match (kind & AND != 0, n_plain, n_neg) {
                (true, 2, 0) => eval_run::<W, true, 2, 0>(vals, run),
                (true, 1, 1) => eval_run::<W, true, 1, 1>(vals, run),
                (true, 3, 0) => eval_run::<W, true, 3, 0>(vals, run),
                (true, 2, 1) => eval_run::<W, true, 2, 1>(vals, run),
                (true, 1, 2) => eval_run::<W, true, 1, 2>(vals, run),
                (true, 0, 2) => eval_run::<W, true, 0, 2>(vals, run),
                (true, 4, 0) => eval_run::<W, true, 4, 0>(vals, run),
                (false, 2, 0) => eval_run::<W, false, 2, 0>(vals, run),
                (false, 3, 0) => eval_run::<W, false, 3, 0>(vals, run),
                (false, 4, 0) => eval_run::<W, false, 4, 0>(vals, run),
                (false, 1, 1) => eval_run::<W, false, 1, 1>(vals, run),
                (and, _, _) => eval_run_any(vals, run, and, n_plain, n_neg),
            }
        }
    }
}

/// Evaluates a run of gates of one shape known at compile time: per gate its node, `P` plain
/// and `N` negated input nodes.
///
/// # Safety
/// Every node in `run` must index `vals`, and `run`'s length be a multiple of `1 + P + N`.
#[inline(always)]
unsafe fn eval_run<const W: usize, const AND_GATE: bool, const P: usize, const N: usize>(
    vals: &mut [[u64; W]],
    run: &[u32],
) {
    for gate in run.chunks_exact(1 + P + N) {
        // SAFETY: by the caller's contract.
        unsafe {
            let mut acc = [if AND_GATE { !0 } else { 0 }; W];
            for j in 0..P + N {
                let v = *vals.get_unchecked(*gate.get_unchecked(1 + j) as usize);
                for k in 0..W {
                    let w = if j < P { v[k] } else { !v[k] };
                    acc[k] = if AND_GATE { acc[k] & w } else { acc[k] | w };
                }
            }
            *vals.get_unchecked_mut(*gate.get_unchecked(0) as usize) = acc;
        }
    }
}

/// Evaluates a run of gates of any shape: per gate its node, `n_plain` plain and `n_neg`
/// negated input nodes.
///
/// # Safety
/// As [`eval_run`].
#[inline(always)]
unsafe fn eval_run_any<const W: usize>(
    vals: &mut [[u64; W]],
    run: &[u32],
    and: bool,
    n_plain: usize,
    n_neg: usize,
) {
    for gate in run.chunks_exact(1 + n_plain + n_neg) {
        // SAFETY: by the caller's contract.
        unsafe {
            let plain = gate.get_unchecked(1..1 + n_plain);
            let negated = gate.get_unchecked(1 + n_plain..);
            let mut acc: [u64; W];
            if and {
                acc = [!0; W];
                for &i in plain {
                    let v = vals.get_unchecked(i as usize);
                    for k in 0..W {
                        acc[k] &= v[k];
                    }
                }
                for &i in negated {
                    let v = vals.get_unchecked(i as usize);
                    for k in 0..W {
                        acc[k] &= !v[k];
                    }
                }
            } else {
                acc = [0; W];
                for &i in plain {
                    let v = vals.get_unchecked(i as usize);
                    for k in 0..W {
                        acc[k] |= v[k];
                    }
                }
                for &i in negated {
                    let v = vals.get_unchecked(i as usize);
                    for k in 0..W {
                        acc[k] |= !v[k];
                    }
                }
            }
            *vals.get_unchecked_mut(*gate.get_unchecked(0) as usize) = acc;
        }
    }
}

/// One gate (or block) of a stream before it is written: its level (1 + the highest level
/// of the same stream's gates it reads), shape and words.
struct Pending {
    level: u32,
    /// [`BLOCK`], or [`AND`] or 0 with the number of plain inputs.
    kind: u32,
    n_neg: u32,
    /// The node (the block's number for a block), then the input nodes.
    words: Vec<u32>,
}

/// The gates (and recursive blocks) of `net` as three streams: the eager gates that depend
/// on no input, those that do, and the lazy gates (only goals read them). Each stream is in an order where a gate comes after the gates
/// it reads: by level, and within a level by shape, in runs of gates of one shape. A run is
/// written as its number of gates, its kind ([`AND`] or not, with the number of plain inputs)
/// and its number of negated inputs, then per gate its node and its input nodes, plain ones
/// first; a block as a run of one of kind [`BLOCK`] whose gate is the block's number.
fn gate_streams(net: &Net) -> [Vec<u32>; 3] {
    let n = net.n_counted();
    let mut on_move = vec![false; n];
    // Per node, its stream: 0 state, 1 move, 2 lazy (bases and inputs: 0 and 1).
    let mut stream_of = vec![0u8; n];
    let mut level = vec![0u32; n];
    let first_input = Net::base_node(net.n_bases) as usize;
    on_move[first_input..net.first_gate as usize].fill(true);
    stream_of[first_input..net.first_gate as usize].fill(1);
    let gate_ins = |x: usize| {
        let g = x - net.first_gate as usize;
        &net.gate_ins[net.gate_start[g] as usize..net.gate_start[g + 1] as usize]
    };
    let mut streams: [Vec<Pending>; 3] = Default::default();
    let mut x = net.first_gate as usize;
    while x < net.first_legal as usize {
        let block = (!net.block_at.is_empty() && net.block_at[x] != NO_NODE)
            .then(|| net.block_at[x] as usize);
        let end = block.map_or(x + 1, |b| net.blocks[b].1 as usize);
        // A block's gates read each other: it depends on an input if any gate reads one
        // from outside (inside, the flags are still false).
        let m = (x..end).any(|y| gate_ins(y).iter().any(|l| on_move[l.node()]));
        let s = if x >= net.first_lazy as usize {
            2
        } else {
            u8::from(m)
        };
        // Levels count only gates of the same stream: the others are up to date.
        let lv = 1
            + (x..end)
                .flat_map(|y| gate_ins(y).iter())
                .filter(|l| l.node() >= net.first_gate as usize && stream_of[l.node()] == s)
                .map(|l| level[l.node()])
                .max()
                .unwrap_or(0);
        on_move[x..end].fill(m);
        stream_of[x..end].fill(s);
        level[x..end].fill(lv);
        let item = match block {
            Some(b) => Pending {
                level: lv,
                kind: BLOCK,
                n_neg: 0,
                words: vec![b as u32],
            },
            None => {
                let lits = gate_ins(x);
                let mut words = vec![x as u32];
                words.extend(lits.iter().filter(|l| !l.neg()).map(|l| l.node() as u32));
                let n_plain = words.len() as u32 - 1;
                words.extend(lits.iter().filter(|l| l.neg()).map(|l| l.node() as u32));
                let and = if net.gate_and[x - net.first_gate as usize] {
                    AND
                } else {
                    0
                };
                Pending {
                    level: lv,
                    kind: and | n_plain,
                    n_neg: words.len() as u32 - 1 - n_plain,
                    words,
                }
            }
        };
        streams[usize::from(s)].push(item);
        x = end;
    }
    streams.map(write_runs)
}

/// Writes gates as runs (see [`gate_streams`]), sorted by level and shape (a stable sort,
/// so blocks keep their order).
fn write_runs(mut items: Vec<Pending>) -> Vec<u32> {
    items.sort_by_key(|it| (it.level, it.kind & BLOCK != 0, it.kind, it.n_neg));
    let mut out = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let shape = (items[i].kind, items[i].n_neg);
        let mut j = i + 1;
        if shape.0 & BLOCK == 0 {
            while j < items.len()
                && items[j].level == items[i].level
                && (items[j].kind, items[j].n_neg) == shape
            {
                j += 1;
            }
        }
        out.extend([(j - i) as u32, shape.0, shape.1]);
        for it in &items[i..j] {
            out.extend(&it.words);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use crate::machine::StateMachine;
    use crate::propnet::{Budget, PropnetMachine};
    use ggp_gdl::gdl::Description;

    const CONNECT_FOUR: &str = include_str!("../../../../rules/connectFour.kif");

    fn play<const W: usize>(net: &Arc<Net>, slots: usize, count: u64) -> Vec<LaneRecord> {
        let mut runner = BatchRunner::<W>::with_slots(Arc::clone(net), slots);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let start = PropnetState::from_words(net.initial.clone().into_boxed_slice());
        let mut records = Vec::new();
        let batch = runner
            .run(&start, &mut rng, count, 1000, Some(&mut records))
            .unwrap();
        assert_eq!(batch.playouts, count);
        records
    }

    /// A lane whose drawn move lies beyond its listed entries finds the same move in the
    /// second pass: with one slot per lane (most draws beyond it) the games are those played
    /// with every legal entry listed, draw for draw.
    #[test]
    fn moves_beyond_the_listed_entries_are_the_same_moves() {
        let description = Description::from_text(CONNECT_FOUR).unwrap();
        let machine = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let net = machine.net();
        let (listed, beyond) = (play::<1>(net, MAX_SLOTS, 100), play::<1>(net, 1, 100));
        assert_eq!(listed, beyond);
        let (listed, beyond) = (play::<4>(net, MAX_SLOTS, 300), play::<4>(net, 1, 300));
        assert_eq!(listed, beyond);
        assert!(listed.iter().all(|r| r.terminal && r.joints.len() >= 14));
        assert_eq!(machine.roles().len(), 2);
    }

    const TIC_TAC_TOE: &str = include_str!("../../../../rules/ticTacToe.kif");

    /// `count` states of ticTacToe reached by 0 to 9 random joint moves (some terminal).
    fn random_states(m: &mut PropnetMachine, count: usize, seed: u64) -> Vec<PropnetState> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..count)
            .map(|i| {
                let initial = m.initial_state();
                m.playout(&initial, &mut rng, i % 10).unwrap().0
            })
            .collect()
    }

    fn far() -> std::time::Instant {
        std::time::Instant::now() + std::time::Duration::from_secs(3600)
    }

    /// Lane `k` plays from `starts[k]`: with one move allowed, each lane ends in a successor
    /// of its own start (found by the Datalog engine over every joint move), cut there if
    /// that successor is not terminal, else with its goals; a terminal start ends with its
    /// own goals. On 64 lanes (40 starts) and 256 lanes (300 starts, two passes).
    #[test]
    fn each_lane_plays_from_its_own_start() {
        let description = Description::from_text(TIC_TAC_TOE).unwrap();
        let mut m = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let mut d = crate::datalog::DatalogMachine::new(&description).unwrap();
        let sorted = |mut t: Vec<ggp_gdl::gdl::Term>| {
            t.sort();
            t
        };
        for n in [40, 300] {
            let starts = random_states(&mut m, n, n as u64);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
            let mut out = Vec::new();
            assert!(
                m.playouts_from(&starts, &mut rng, 1, far(), &mut out)
                    .unwrap()
            );
            assert_eq!(out.len(), n);
            let (mut cut, mut ended) = (0, 0);
            for (start, end) in starts.iter().zip(&out) {
                let ds = d.state_from_terms(&m.state_terms(start)).unwrap();
                if d.is_terminal(&ds).unwrap() {
                    assert_eq!(*end, PlayoutEnd::Goals(d.goals(&ds).unwrap()));
                    continue;
                }
                let mut successors = Vec::new();
                let moves: Vec<_> = (0..2).map(|r| d.legal_moves(&ds, r).unwrap()).collect();
                for &a in &moves[0] {
                    for &b in &moves[1] {
                        let next = d.next_state(&ds, &[a, b]).unwrap();
                        let terminal = d.is_terminal(&next).unwrap();
                        let goals = if terminal {
                            d.goals(&next).unwrap()
                        } else {
                            Vec::new()
                        };
                        successors.push((sorted(d.state_terms(&next)), terminal, goals));
                    }
                }
                match end {
                    PlayoutEnd::Cut(s) => {
                        cut += 1;
                        let terms = sorted(m.state_terms(s));
                        assert!(successors.iter().any(|x| x.0 == terms && !x.1));
                    }
                    PlayoutEnd::Goals(g) => {
                        ended += 1;
                        assert!(successors.iter().any(|x| x.1 && x.2 == *g));
                    }
                }
            }
            assert!(cut > 0 && ended > 0, "{cut} cut, {ended} ended");
        }
    }

    /// From each of three starts, 1,000 lanes give the same goal distribution as 1,000
    /// playouts one game at a time (means within five standard errors).
    #[test]
    fn per_lane_starts_give_the_goals_of_one_game_at_a_time() {
        let description = Description::from_text(TIC_TAC_TOE).unwrap();
        let mut m = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let initial = m.initial_state();
        let starts: Vec<PropnetState> = [0, 1, 3]
            .iter()
            .map(|&k| m.playout(&initial, &mut rng, k).unwrap().0)
            .collect();
        const N: usize = 1000;
        let lanes: Vec<PropnetState> = starts
            .iter()
            .flat_map(|s| std::iter::repeat_n(s.clone(), N))
            .collect();
        let mut out = Vec::new();
        assert!(
            m.playouts_from(&lanes, &mut rng, 100, far(), &mut out)
                .unwrap()
        );
        for (k, start) in starts.iter().enumerate() {
            let batch: Vec<f64> = out[k * N..(k + 1) * N]
                .iter()
                .map(|e| match e {
                    PlayoutEnd::Goals(g) => f64::from(g[0]),
                    PlayoutEnd::Cut(_) => panic!("ticTacToe ends within 9 moves"),
                })
                .collect();
            let single: Vec<f64> = (0..N)
                .map(|_| {
                    let (last, _) = m.playout(start, &mut rng, 100).unwrap();
                    f64::from(m.goal(&last, 0).unwrap())
                })
                .collect();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let var = |v: &[f64]| {
                let m = mean(v);
                v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64
            };
            let se = ((var(&batch) + var(&single)) / N as f64).sqrt();
            assert!(
                (mean(&batch) - mean(&single)).abs() < 5.0 * se.max(0.5),
                "start {k}: batch {} one at a time {} (se {se})",
                mean(&batch),
                mean(&single)
            );
        }
    }

    /// A passed deadline stops a batch before its first move and gives no ends.
    #[test]
    fn a_passed_deadline_stops_the_lanes() {
        let description = Description::from_text(TIC_TAC_TOE).unwrap();
        let mut m = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let starts = vec![m.initial_state(); 100];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut out = vec![PlayoutEnd::Goals(vec![1])];
        let past = std::time::Instant::now();
        assert!(
            !m.playouts_from(&starts, &mut rng, 100, past, &mut out)
                .unwrap()
        );
        assert!(out.is_empty());
    }
}
