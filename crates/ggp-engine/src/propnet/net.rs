//! The network: ground rules to gates, optimised and flattened for differential propagation.
//!
//! Each ground rule becomes an AND of its body literals (negative ones read their atom
//! negated); the rules with the same head feed an OR, which is the head's proposition.
//! `(true f)` atoms are base propositions and `(does r m)` atoms input propositions. Gates
//! read literals, so there are no NOT gates: a negation is a flag on a link.
//!
//! Only rules whose head an output reads, directly or not, become gates. Optimisation (module
//! `optimize`): everything that depends on no base or input is evaluated once; constants are
//! folded; one-input gates are bypassed; identical gates merged; gates read once merged into
//! their reader; literals shared by several ANDs under one OR factored out; whatever no
//! `legal`, `goal`, `terminal` or `next` proposition reads is dropped. Then the literals most
//! of a role's legal moves share (typically "it is my turn") are taken out of them as the
//! guards of groups of moves, read only when moves are listed.
//!
//! Flattening numbers the nodes: the constant false, the bases, the inputs, the gates in
//! topological order of their strongly connected components (those that only outputs read
//! after the others, and last the lazy gates, which only goals read), then output nodes that
//! exist only as link targets: one per legal move of each role, one per base (its `next`), one
//! per recursive block. No link leads to a lazy gate: goals are read once a playout, so their
//! logic (often a count of pieces) is evaluated then instead of following every move. Links are stored by source (CSR), each target tagged with whether the
//! link negates. Each gate has a counter: an AND over `n` literals starts at `2^31 - n`, an
//! OR at `2^31 - 1`, and each literal that turns true adds one, so the gate is true exactly
//! when the counter's top bit is set. A component with more than one gate (from recursive
//! rules) is a block: links into it from outside go to its output node, and it is
//! re-evaluated from all-false to its least fixpoint whenever one of them changes. Blocks
//! hold only positive links between their gates, since a stratified game never recurses
//! through negation (such a cycle is refused).

use hashbrown::HashMap;

use ggp_gdl::gdl::{GTerm, Term, TermPool};

use super::ground::{AtomId, Budget, Clock, Exceeded, GroundError, GroundProgram, Phase};
use super::optimize::{self, Graph, Lit, Node};

/// A move's number: an index into the net's table of move terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MoveId(pub u32);

/// Sizes of a net, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetStats {
    /// Base propositions (state bits).
    pub bases: usize,
    /// Input propositions.
    pub inputs: usize,
    /// Gates.
    pub gates: usize,
    /// Links between nodes (including those to legal, next and block outputs).
    pub edges: usize,
    /// Gates in recursive blocks.
    pub cyclic_gates: usize,
    /// Gates that only goals read, evaluated when goals are read.
    pub lazy_gates: usize,
    /// Gates before optimisation.
    pub raw_gates: usize,
    /// Atoms of the ground program: the bases, the inputs, and the atoms of the relaxed model
    /// (those that can ever hold) that ground rules mention. Static relations, which only
    /// filter bindings, are not counted.
    pub ground_atoms: usize,
    /// Rules of the ground program (instances of rules, and facts of static outputs).
    pub ground_rules: usize,
}

/// A legal move of one role: the node whose value says it is legal, and the input node its
/// `does` sets (or [`NO_NODE`] when no rule reads it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegalEntry {
    pub mv: MoveId,
    pub lit: Lit,
    pub input: u32,
}

/// A group of one role's legal moves that share a guard: a move of the group is legal when
/// the guard and its own literal hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LegalGroup {
    pub guard: Lit,
    /// The range of 64-entry words of the legal entries.
    pub words: (u32, u32),
}

/// No node.
pub(crate) const NO_NODE: u32 = u32::MAX;

/// The counter of a gate whose value is true.
pub(crate) const TRUE_COUNT: u32 = 1 << 31;

/// A flattened network and the tables that translate it to and from terms.
pub struct Net {
    pub(crate) pool: TermPool,
    pub(crate) roles: Vec<Term>,
    pub(crate) n_bases: usize,
    pub(crate) n_inputs: usize,
    /// First gate node.
    pub(crate) first_gate: u32,
    /// First gate that no gate reads: from here to `first_lazy`, gates only feed outputs.
    pub(crate) first_last_gate: u32,
    /// First lazy gate: from here to `first_legal`, gates only goals read; no links lead to
    /// them, and [`Net::eval_lazy`] evaluates them.
    pub(crate) first_lazy: u32,
    /// First output node (legal moves), then the `next` outputs, then the block outputs.
    pub(crate) first_legal: u32,
    pub(crate) first_next: u32,
    pub(crate) first_block: u32,
    /// Links from node `x` (below `first_legal`) are `outs[out_start[x]..out_start[x + 1]]`,
    /// each `target << 1 | negated`.
    pub(crate) out_start: Vec<u32>,
    pub(crate) outs: Vec<u32>,
    /// Per node below `first_legal`, where in `outs` its links change class: the first
    /// negated link to a gate below `first_last_gate` (the plain ones come before), the
    /// first link to a gate from `first_last_gate` on, and the first link to an output node.
    /// Within a class links are sorted by target.
    pub(crate) out_split: Vec<[u32; 3]>,
    /// Per gate (numbered from `first_gate`): whether it is an AND, and its input literals
    /// `gate_ins[gate_start[g]..gate_start[g + 1]]`.
    pub(crate) gate_and: Vec<bool>,
    pub(crate) gate_start: Vec<u32>,
    pub(crate) gate_ins: Vec<Lit>,
    /// Recursive blocks: ranges of gate nodes.
    pub(crate) blocks: Vec<(u32, u32)>,
    /// Per counted node, the block it starts, or [`NO_NODE`]; empty when there are no blocks.
    pub(crate) block_at: Vec<u32>,
    /// Counters of every node below `first_legal` in the initial state with no input set.
    pub(crate) init_counts: Vec<u32>,
    /// Legal moves, by role then move, each role's starting on a multiple of 64.
    pub(crate) legal: Vec<LegalEntry>,
    /// Per role, its groups of legal moves.
    pub(crate) legal_groups: Vec<Vec<LegalGroup>>,
    /// For each base, the literal of its `next` proposition.
    pub(crate) next: Vec<Lit>,
    /// For each base, the fact.
    pub(crate) base_terms: Vec<GTerm>,
    /// For each move id, the move.
    pub(crate) moves: Vec<GTerm>,
    pub(crate) move_ids: HashMap<GTerm, MoveId>,
    /// Per role, per move id: the input node, or [`NO_NODE`].
    pub(crate) input_of: Vec<Vec<u32>>,
    /// Per role: goal literals and their values.
    pub(crate) goals: Vec<Vec<(Lit, u8)>>,
    pub(crate) terminal: Lit,
    /// The initial state's bits.
    pub(crate) initial: Vec<u64>,
    raw_gates: usize,
    /// The ground program's atoms and rules, for [`NetStats`].
    ground_atoms: usize,
    ground_rules: usize,
}

impl Net {
    /// Total number of nodes with counters (everything before the output nodes).
    pub(crate) fn n_counted(&self) -> usize {
        self.first_legal as usize
    }

    /// The node of base `i`.
    pub(crate) fn base_node(i: usize) -> u32 {
        1 + i as u32
    }

    /// The links from node `x`, by class: plain links to gates below `first_last_gate`,
    /// negated ones, links to gates from there on, links to output nodes.
    ///
    /// # Safety
    /// `x` must be below `first_legal`. The rest (the offsets are ordered and within `outs`)
    /// is what [`Net::check_links`] verified when the net was built.
    #[inline(always)]
    pub(crate) unsafe fn links_unchecked(&self, x: usize) -> [&[u32]; 4] {
        // SAFETY: `x < first_legal`, so `x + 1` indexes `out_start` (of length
        // `first_legal + 1`) and `x` indexes `out_split`; `check_links` verified
        // `out_start[x] <= neg <= last <= out <= out_start[x + 1] <= outs.len()`.
        unsafe {
            let s = *self.out_start.get_unchecked(x) as usize;
            let e = *self.out_start.get_unchecked(x + 1) as usize;
            let [neg, last, out] = *self.out_split.get_unchecked(x);
            let (neg, last, out) = (neg as usize, last as usize, out as usize);
            [
                self.outs.get_unchecked(s..neg),
                self.outs.get_unchecked(neg..last),
                self.outs.get_unchecked(last..out),
                self.outs.get_unchecked(out..e),
            ]
        }
    }

    /// Sizes of the net.
    pub fn stats(&self) -> NetStats {
        NetStats {
            bases: self.n_bases,
            inputs: self.n_inputs,
            gates: self.gate_and.len(),
            edges: self.outs.len(),
            cyclic_gates: self.blocks.iter().map(|b| (b.1 - b.0) as usize).sum(),
            lazy_gates: (self.first_legal - self.first_lazy) as usize,
            raw_gates: self.raw_gates,
            ground_atoms: self.ground_atoms,
            ground_rules: self.ground_rules,
        }
    }

    /// Builds the net of a ground program: [`Optimized::build`], then
    /// [`Net::from_optimized`].
    ///
    /// # Errors
    /// The net outgrows the budget, has a cycle through negation, or makes `legal`, `goal`
    /// or `terminal` depend on `does`.
    pub(crate) fn build(
        prog: GroundProgram,
        roles: &[Term],
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Net, GroundError> {
        let opt = Optimized::build(prog, roles, budget, clock)?;
        Net::from_optimized(opt, budget, clock)
    }

    /// Flattens an optimised network for differential propagation.
    ///
    /// # Errors
    /// As [`Net::build`].
    pub(crate) fn from_optimized(
        opt: Optimized,
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Net, GroundError> {
        let flat = Flat::new(&opt.g, opt.n_leaves(), &opt.outputs, budget)?;
        clock.check(Phase::BuildingNetwork)?;
        let Optimized {
            prog,
            outputs,
            roles,
            base_terms,
            initial,
            raw_gates,
            ground_atoms,
            ground_rules,
            ..
        } = opt;
        let net = Net {
            pool: prog.pool,
            roles,
            n_bases: prog.bases.len(),
            n_inputs: prog.inputs.len(),
            first_gate: flat.first_gate,
            first_last_gate: flat.first_last_gate,
            first_lazy: flat.first_lazy,
            first_legal: flat.first_legal,
            first_next: flat.first_next,
            first_block: flat.first_block,
            out_start: flat.out_start,
            outs: flat.outs,
            out_split: flat.out_split,
            gate_and: flat.gate_and,
            gate_start: flat.gate_start,
            gate_ins: flat.gate_ins,
            init_counts: Vec::new(),
            block_at: Vec::new(),
            blocks: flat.blocks,
            legal: flat.legal,
            legal_groups: flat.legal_groups,
            next: flat.next,
            base_terms,
            moves: outputs.moves,
            move_ids: outputs.move_ids,
            input_of: flat.input_of,
            goals: flat.goals,
            terminal: flat.terminal,
            initial,
            raw_gates,
            ground_atoms,
            ground_rules,
        }
        .with_initial_counts();
        net.check_links()?;
        Ok(net)
    }

    /// The value of a literal under `counts`.
    #[inline]
    pub(crate) fn lit_value(counts: &[u32], l: Lit) -> bool {
        (counts[l.node()] >> 31 != 0) ^ l.neg()
    }

    /// Evaluates gate `x` (a node number) from its inputs' counters: its counter if it is
    /// not in a block, else the counter of its value.
    pub(crate) fn eval_gate(&self, counts: &[u32], x: usize, counted: bool) -> u32 {
        let g = x - self.first_gate as usize;
        let ins = &self.gate_ins[self.gate_start[g] as usize..self.gate_start[g + 1] as usize];
        let is_and = self.gate_and[g];
        if counted {
            let trues = ins.iter().filter(|&&l| Net::lit_value(counts, l)).count() as u32;
            let offset = if is_and {
                TRUE_COUNT - ins.len() as u32
            } else {
                TRUE_COUNT - 1
            };
            offset + trues
        } else {
            let v = if is_and {
                ins.iter().all(|&l| Net::lit_value(counts, l))
            } else {
                ins.iter().any(|&l| Net::lit_value(counts, l))
            };
            if v { TRUE_COUNT } else { 0 }
        }
    }

    /// Evaluates the lazy gates (those only goals read) under `counts`.
    pub(crate) fn eval_lazy(&self, counts: &mut [u32]) {
        for x in self.first_lazy as usize..self.first_legal as usize {
            counts[x] = self.eval_gate(counts, x, true);
        }
    }

    /// Evaluates a block from all-false to its least fixpoint under `counts`.
    pub(crate) fn eval_block(&self, counts: &mut [u32], b: usize) {
        let (start, end) = self.blocks[b];
        counts[start as usize..end as usize].fill(0);
        loop {
            let mut changed = false;
            for x in start as usize..end as usize {
                let c = self.eval_gate(counts, x, false);
                if c != counts[x] {
                    counts[x] = c;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The counters of every node for a state, with no input set, evaluated from scratch.
    pub(crate) fn full_counts(&self, state: &[u64]) -> Vec<u32> {
        let mut counts = vec![0u32; self.n_counted()];
        for i in 0..self.n_bases {
            if state[i / 64] >> (i % 64) & 1 == 1 {
                counts[Net::base_node(i) as usize] = TRUE_COUNT;
            }
        }
        self.recount(&mut counts);
        counts
    }

    /// Recomputes every gate's counter from the bases' and inputs' counters.
    pub(crate) fn recount(&self, counts: &mut [u32]) {
        let mut blocks = self.blocks.iter().enumerate().peekable();
        let mut x = self.first_gate as usize;
        while x < self.first_legal as usize {
            if let Some(&(b, &(start, end))) = blocks.peek()
                && start as usize == x
            {
                self.eval_block(counts, b);
                x = end as usize;
                blocks.next();
                continue;
            }
            counts[x] = self.eval_gate(counts, x, true);
            x += 1;
        }
    }

    /// Checks what propagation relies on: every link goes from a node to a higher one, within
    /// the node ranges, and the link table is well formed. Propagation indexes without bounds
    /// checks on the strength of this.
    fn check_links(&self) -> Result<(), GroundError> {
        let n_targets = self.first_block as usize + self.blocks.len();
        let counted = self.n_counted();
        let well_formed = self.out_start.len() == counted + 1
            && self.out_start[0] == 0
            && self.out_start.windows(2).all(|w| w[0] <= w[1])
            && self.out_start[counted] as usize == self.outs.len()
            && self.out_split.len() == counted
            && self.init_counts.len() == counted
            && (0..counted).all(|x| {
                let (s, e) = (self.out_start[x] as usize, self.out_start[x + 1] as usize);
                let [neg, last, out] = self.out_split[x].map(|i| i as usize);
                let ordered = s <= neg && neg <= last && last <= out && out <= e;
                // The targets of `outs[range]` are in `targets`, and negated or not as `neg`
                // says (`None`: either).
                let class = |range: std::ops::Range<usize>,
                             targets: std::ops::Range<usize>,
                             neg: Option<bool>| {
                    self.outs[range].iter().all(|&t| {
                        targets.contains(&((t >> 1) as usize))
                            && neg.is_none_or(|n| (t & 1 == 1) == n)
                    })
                };
                let inner = self.first_last_gate as usize;
                ordered
                    && class(s..e, x + 1..n_targets, None)
                    && class(s..neg, 0..inner, Some(false))
                    && class(neg..last, 0..inner, Some(true))
                    && class(last..out, 0..counted, None)
                    && class(out..e, counted..n_targets, None)
            });
        if well_formed {
            Ok(())
        } else {
            Err(GroundError::Unsupported(
                "internal error: malformed network links".into(),
            ))
        }
    }

    fn with_initial_counts(mut self) -> Net {
        if !self.blocks.is_empty() {
            self.block_at = vec![NO_NODE; self.n_counted()];
            for (b, &(start, _)) in self.blocks.iter().enumerate() {
                self.block_at[start as usize] = b as u32;
            }
        }
        self.init_counts = self.full_counts(&self.initial);
        self
    }
}

/// A ground program's network after optimisation, before flattening: the seam where a back
/// end other than differential propagation starts. Node 0 is the constant false, nodes
/// `1..=bases` the bases, then the inputs, then the gates (in no particular order;
/// `g.order` is a topological order of their strongly connected components).
pub(crate) struct Optimized {
    /// The gate graph.
    pub(crate) g: Graph,
    /// What the network computes: legal moves (with their guards), goals, terminal and the
    /// `next` of each base, as literals of `g`.
    pub(crate) outputs: Outputs,
    /// The ground program (its term pool, bases and inputs).
    pub(crate) prog: GroundProgram,
    pub(crate) roles: Vec<Term>,
    /// For each base, the fact.
    pub(crate) base_terms: Vec<GTerm>,
    /// The initial state's bits.
    pub(crate) initial: Vec<u64>,
    raw_gates: usize,
    ground_atoms: usize,
    ground_rules: usize,
}

impl Optimized {
    /// Builds the raw network of a ground program and optimises it.
    ///
    /// # Errors
    /// The net outgrows the budget or time, or a rule concludes a `true` or `does` atom.
    pub(crate) fn build(
        prog: GroundProgram,
        roles: &[Term],
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Optimized, GroundError> {
        let (ground_atoms, ground_rules) = (prog.atoms.len(), prog.rules.len());
        let (nodes, atom_node) = raw_nodes(&prog, budget)?;
        let raw_gates = nodes.iter().filter(|n| n.is_gate()).count();
        let mut g = Graph::new(nodes)?;
        clock.check(Phase::BuildingNetwork)?;
        optimize::evaluate_static(&mut g, clock)?;
        let (base_terms, initial) = initial_state(&prog);
        let mut outputs = Outputs::new(&prog, &atom_node, roles, &base_terms);
        optimize_graph(&mut g, &mut outputs, clock)?;
        clock.check(Phase::BuildingNetwork)?;
        Ok(Optimized {
            g,
            outputs,
            prog,
            roles: roles.to_vec(),
            base_terms,
            initial,
            raw_gates,
            ground_atoms,
            ground_rules,
        })
    }

    /// Bases and inputs: the nodes `1..=n_leaves`.
    pub(crate) fn n_leaves(&self) -> usize {
        self.prog.bases.len() + self.prog.inputs.len()
    }
}

/// The facts of the bases, and the initial state's bits: the init atoms that hold.
fn initial_state(prog: &GroundProgram) -> (Vec<GTerm>, Vec<u64>) {
    let n_bases = prog.bases.len();
    let mut base_index: HashMap<GTerm, usize> = HashMap::with_capacity(n_bases);
    let mut base_terms = Vec::with_capacity(n_bases);
    for (i, &a) in prog.bases.iter().enumerate() {
        let fact = prog.args(a)[0];
        base_index.insert(fact, i);
        base_terms.push(fact);
    }
    let mut initial = vec![0u64; n_bases.div_ceil(64)];
    for fact in &prog.initial {
        if let Some(&i) = base_index.get(fact) {
            initial[i / 64] |= 1 << (i % 64);
        }
    }
    (base_terms, initial)
}

/// The optimisation passes after static evaluation, in order, and the legal moves' guards.
fn optimize_graph(g: &mut Graph, outputs: &mut Outputs, clock: &Clock) -> Result<(), GroundError> {
    optimize::simplify(g, clock)?;
    let roots = outputs.roots(g);
    optimize::inline(g, &roots, clock)?;
    optimize::simplify(g, clock)?;
    let roots = outputs.roots(g);
    optimize::factor(g, &roots, clock)?;
    let roots = outputs.roots(g);
    optimize::inline(g, &roots, clock)?;
    optimize::simplify(g, clock)?;
    outputs.guard_legal(g);
    Ok(())
}

/// The raw network of a ground program, and the node of each atom ([`NO_NODE`] if none).
fn raw_nodes(prog: &GroundProgram, budget: &Budget) -> Result<(Vec<Node>, Vec<u32>), GroundError> {
    let mut nodes = vec![Node::False];
    let mut atom_node = vec![NO_NODE; prog.atoms.len()];
    for &a in &prog.bases {
        atom_node[a.index()] = nodes.len() as u32;
        nodes.push(Node::Base);
    }
    for &a in &prog.inputs {
        atom_node[a.index()] = nodes.len() as u32;
        nodes.push(Node::Input);
    }
    let mut node_of = |a: AtomId, nodes: &mut Vec<Node>| {
        let n = atom_node[a.index()];
        if n != NO_NODE {
            return n;
        }
        let n = nodes.len() as u32;
        nodes.push(Node::Or(Vec::new()));
        atom_node[a.index()] = n;
        n
    };
    // Only rules whose head an output reads, directly or not, are worth a gate.
    let k = prog.keywords;
    let mut live = vec![false; prog.atoms.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (a, &(rel, _)) in prog.atoms.iter().enumerate() {
        if rel == k.legal || rel == k.goal || rel == k.terminal || rel == k.next {
            live[a] = true;
            stack.push(a);
        }
    }
    let mut by_head_start = vec![0u32; prog.atoms.len() + 1];
    for rule in &prog.rules {
        by_head_start[rule.head.index() + 1] += 1;
    }
    for i in 0..prog.atoms.len() {
        by_head_start[i + 1] += by_head_start[i];
    }
    let mut fill = by_head_start.clone();
    let mut by_head = vec![0u32; prog.rules.len()];
    for (r, rule) in prog.rules.iter().enumerate() {
        let slot = &mut fill[rule.head.index()];
        by_head[*slot as usize] = r as u32;
        *slot += 1;
    }
    while let Some(a) = stack.pop() {
        for &r in &by_head[by_head_start[a] as usize..by_head_start[a + 1] as usize] {
            let rule = prog.rules[r as usize];
            for l in &prog.lits[rule.start as usize..rule.end as usize] {
                if !live[l.atom.index()] {
                    live[l.atom.index()] = true;
                    stack.push(l.atom.index());
                }
            }
        }
    }
    for rule in prog.rules.iter().filter(|r| live[r.head.index()]) {
        let head = node_of(rule.head, &mut nodes);
        if !matches!(nodes[head as usize], Node::Or(_)) {
            return Err(GroundError::Unsupported(
                "a rule concludes a `true` or `does` atom".into(),
            ));
        }
        let body: Vec<Lit> = prog.lits[rule.start as usize..rule.end as usize]
            .iter()
            .map(|l| Lit::pos(node_of(l.atom, &mut nodes) as usize).xor(!l.positive))
            .collect();
        let conj = match body.len() {
            0 => Lit::TRUE,
            1 => body[0],
            _ => {
                nodes.push(Node::And(body));
                Lit::pos(nodes.len() - 1)
            }
        };
        if let Node::Or(v) = &mut nodes[head as usize] {
            v.push(conj);
        }
        if nodes.len() > budget.max_gates {
            return Err(GroundError::Budget(Exceeded::Nodes(budget.max_gates)));
        }
    }
    Ok((nodes, atom_node))
}

/// The outputs of the raw network: legal moves, goals, terminal and next, by raw node.
pub(crate) struct Outputs {
    pub(crate) moves: Vec<GTerm>,
    pub(crate) move_ids: HashMap<GTerm, MoveId>,
    /// Per role: (legal literal, move, guard group), by group then move. The move is legal
    /// when its literal and its group's guard both hold.
    pub(crate) legal: Vec<Vec<(Lit, MoveId, u32)>>,
    /// Per role, the guard of each group.
    pub(crate) guards: Vec<Vec<Lit>>,
    pub(crate) goals: Vec<Vec<(Lit, u8)>>,
    /// (role, move, input node).
    pub(crate) inputs: Vec<(usize, MoveId, u32)>,
    pub(crate) terminal: Lit,
    pub(crate) next: Vec<Lit>,
}

impl Outputs {
    fn new(
        prog: &GroundProgram,
        atom_node: &[u32],
        roles: &[Term],
        base_terms: &[GTerm],
    ) -> Outputs {
        let k = prog.keywords;
        let pool = &prog.pool;
        let lit = |a: usize| {
            let n = atom_node[a];
            if n == NO_NODE {
                Lit::FALSE
            } else {
                Lit::pos(n as usize)
            }
        };
        let role_ids: Vec<Option<GTerm>> = roles.iter().map(|r| pool.find(r)).collect();
        let role_of = |t: GTerm| role_ids.iter().position(|r| *r == Some(t));
        let mut out = Outputs {
            moves: Vec::new(),
            move_ids: HashMap::new(),
            legal: vec![Vec::new(); roles.len()],
            guards: vec![vec![Lit::TRUE]; roles.len()],
            goals: vec![Vec::new(); roles.len()],
            inputs: Vec::new(),
            terminal: Lit::FALSE,
            next: Vec::with_capacity(base_terms.len()),
        };
        let move_id = |m: GTerm, out: &mut Outputs| {
            *out.move_ids.entry(m).or_insert_with(|| {
                out.moves.push(m);
                MoveId(out.moves.len() as u32 - 1)
            })
        };
        for &a in &prog.inputs {
            let args = prog.args(a);
            if let Some(r) = role_of(args[0]) {
                let m = move_id(args[1], &mut out);
                out.inputs.push((r, m, atom_node[a.index()]));
            }
        }
        for (a, &(rel, _)) in prog.atoms.iter().enumerate() {
            if atom_node[a] == NO_NODE {
                continue;
            }
            let args = prog.args(AtomId(a as u32));
            if rel == k.legal {
                if let Some(r) = role_of(args[0]) {
                    let m = move_id(args[1], &mut out);
                    out.legal[r].push((lit(a), m, 0));
                }
            } else if rel == k.goal {
                if let (Some(r), Some(v)) = (role_of(args[0]), goal_value(pool, args[1])) {
                    out.goals[r].push((lit(a), v));
                }
            } else if rel == k.terminal {
                out.terminal = lit(a);
            }
        }
        for l in &mut out.legal {
            l.sort_by_key(|&(_, m, _)| m);
        }
        for &fact in base_terms {
            let atom = pool
                .find_app(ggp_gdl::gdl::Sym::NEXT, &[fact])
                .and_then(|t| prog.find(k.next, t));
            out.next.push(atom.map_or(Lit::FALSE, |a| lit(a.index())));
        }
        out
    }

    /// Every output literal but the goals, resolved.
    fn eager_roots(&self, g: &Graph) -> Vec<Lit> {
        self.legal
            .iter()
            .flatten()
            .map(|p| p.0)
            .chain(self.guards.iter().flatten().copied())
            .chain(self.next.iter().copied())
            .chain([self.terminal])
            .map(|l| g.resolve(l))
            .collect()
    }

    /// Every output literal, resolved.
    fn roots(&self, g: &Graph) -> Vec<Lit> {
        self.legal
            .iter()
            .flatten()
            .map(|p| p.0)
            .chain(self.guards.iter().flatten().copied())
            .chain(self.goals.iter().flatten().map(|p| p.0))
            .chain(self.next.iter().copied())
            .chain([self.terminal])
            .map(|l| g.resolve(l))
            .collect()
    }

    /// Takes out of each role's legal moves the literals most of them share (typically "it is
    /// my turn"), as guards of groups of moves: a move is legal when its group's guard and
    /// its own remaining literal hold. A change of a guard then touches no legal gate; the
    /// guard is read when moves are listed.
    fn guard_legal(&mut self, g: &mut Graph) {
        let roots = self.roots(g);
        let live = optimize::live(g, roots.iter().copied());
        let mut readers = vec![0u32; g.nodes.len()];
        for (x, node) in g.nodes.iter().enumerate() {
            if live[x] {
                for l in node.inputs() {
                    readers[g.resolve(*l).node()] += 1;
                }
            }
        }
        for l in &roots {
            readers[l.node()] += 1;
        }
        for (r, entries) in self.legal.iter_mut().enumerate() {
            let conjuncts: Vec<Vec<Lit>> = entries
                .iter()
                .map(|&(l, _, _)| {
                    let l = g.resolve(l);
                    match &g.nodes[l.node()] {
                        Node::And(ins) if !l.neg() && !g.cyclic[l.node()] => {
                            ins.iter().map(|&i| g.resolve(i)).collect()
                        }
                        _ => vec![l],
                    }
                })
                .collect();
            let mut group = vec![u32::MAX; entries.len()];
            let mut guards = Vec::new();
            let mut counts: HashMap<Lit, u32> = HashMap::new();
            while guards.len() < MAX_GUARDS {
                counts.clear();
                for (i, c) in conjuncts.iter().enumerate() {
                    if group[i] == u32::MAX && c.len() > 1 {
                        for &l in c {
                            *counts.entry(l).or_insert(0) += 1;
                        }
                    }
                }
                let best = counts
                    .iter()
                    .filter(|&(_, &n)| n >= 2)
                    .max_by_key(|&(&l, &n)| (n, std::cmp::Reverse(l)))
                    .map(|(&l, _)| l);
                let Some(m) = best else { break };
                for (i, c) in conjuncts.iter().enumerate() {
                    if group[i] == u32::MAX && c.len() > 1 && c.contains(&m) {
                        group[i] = guards.len() as u32;
                    }
                }
                guards.push(m);
            }
            let rest_group = guards.len() as u32;
            for (i, e) in entries.iter_mut().enumerate() {
                if group[i] == u32::MAX {
                    e.2 = rest_group;
                    continue;
                }
                let m = guards[group[i] as usize];
                let rest: Vec<Lit> = conjuncts[i].iter().copied().filter(|&l| l != m).collect();
                let old = g.resolve(e.0);
                e.2 = group[i];
                e.0 = match rest.len() {
                    0 => Lit::TRUE,
                    1 => rest[0],
                    _ if readers[old.node()] == 1 => {
                        g.nodes[old.node()] = Node::And(rest);
                        old
                    }
                    _ => {
                        let x = g.push(Node::And(rest));
                        g.order.push(vec![x as u32]);
                        Lit::pos(x)
                    }
                };
            }
            guards.push(Lit::TRUE);
            self.guards[r] = guards;
            entries.sort_by_key(|&(_, m, group)| (group, m));
        }
    }
}

/// Most guards of one role's legal moves.
const MAX_GUARDS: usize = 4;

/// The flattened arrays.
struct Flat {
    first_gate: u32,
    first_last_gate: u32,
    first_lazy: u32,
    first_legal: u32,
    first_next: u32,
    first_block: u32,
    out_start: Vec<u32>,
    outs: Vec<u32>,
    out_split: Vec<[u32; 3]>,
    gate_and: Vec<bool>,
    gate_start: Vec<u32>,
    gate_ins: Vec<Lit>,
    blocks: Vec<(u32, u32)>,
    legal: Vec<LegalEntry>,
    legal_groups: Vec<Vec<LegalGroup>>,
    next: Vec<Lit>,
    input_of: Vec<Vec<u32>>,
    goals: Vec<Vec<(Lit, u8)>>,
    terminal: Lit,
}

impl Flat {
    /// Flattens an optimised graph whose leaves are nodes `1..=n_leaves`: numbers the
    /// nodes ([`Numbering::new`]), lists the gates and their links ([`GateTable::new`]) and
    /// the legal moves ([`LegalTable::new`]), links the outputs, and sorts the links by
    /// source ([`LinkTable::new`]).
    fn new(
        g: &Graph,
        n_leaves: usize,
        outputs: &Outputs,
        budget: &Budget,
    ) -> Result<Flat, GroundError> {
        check_state_outputs(g, outputs)?;
        let numbering = Numbering::new(g, n_leaves, outputs, budget)?;
        let num = |l: Lit| numbering.lit(g.resolve(l));
        let GateTable {
            gate_and,
            gate_start,
            gate_ins,
            mut links,
            block_links,
        } = GateTable::new(g, &numbering)?;
        let LegalTable {
            input_of,
            legal,
            legal_groups,
        } = LegalTable::new(g, outputs, &numbering);
        let first_legal = numbering.first_legal;
        let first_next = first_legal + legal.len() as u32;
        let next: Vec<Lit> = outputs.next.iter().map(|&l| num(l)).collect();
        let first_block = first_next + next.len() as u32;
        // Links to the output nodes: legal entries, `next` outputs, block outputs.
        for (k, e) in legal.iter().enumerate() {
            if e.lit.node() != 0 {
                links.push((
                    e.lit.node() as u32,
                    (first_legal + k as u32) << 1 | u32::from(e.lit.neg()),
                ));
            }
        }
        for (i, l) in next.iter().enumerate() {
            if l.node() != 0 {
                links.push((
                    l.node() as u32,
                    (first_next + i as u32) << 1 | u32::from(l.neg()),
                ));
            }
        }
        links.extend(
            block_links
                .into_iter()
                .map(|(s, b)| (s, (first_block + b) << 1)),
        );
        let LinkTable {
            out_start,
            outs,
            out_split,
        } = LinkTable::new(links, first_legal, numbering.first_last_gate);
        let goals = outputs
            .goals
            .iter()
            .map(|v| v.iter().map(|&(l, val)| (num(l), val)).collect())
            .collect();
        let terminal = num(outputs.terminal);
        Ok(Flat {
            first_gate: numbering.first_gate,
            first_last_gate: numbering.first_last_gate,
            first_lazy: numbering.first_lazy,
            first_legal,
            first_next,
            first_block,
            out_start,
            outs,
            out_split,
            gate_and,
            gate_start,
            gate_ins,
            blocks: numbering.blocks,
            legal,
            legal_groups,
            next,
            input_of,
            goals,
            terminal,
        })
    }
}

/// Refuses a network whose legal moves, guards, goals or terminal depend on an input.
fn check_state_outputs(g: &Graph, outputs: &Outputs) -> Result<(), GroundError> {
    let mut on_move = vec![false; g.nodes.len()];
    for comp in &g.order {
        let m = comp.iter().any(|&x| {
            matches!(g.nodes[x as usize], Node::Input)
                || g.nodes[x as usize]
                    .inputs()
                    .iter()
                    .any(|l| on_move[l.node()])
        });
        if m {
            comp.iter().for_each(|&x| on_move[x as usize] = true);
        }
    }
    let state_outputs = outputs
        .legal
        .iter()
        .flatten()
        .map(|p| p.0)
        .chain(outputs.guards.iter().flatten().copied())
        .chain(outputs.goals.iter().flatten().map(|p| p.0))
        .chain([outputs.terminal]);
    for l in state_outputs {
        if on_move[g.resolve(l).node()] {
            return Err(GroundError::Unsupported(
                "legal, goal or terminal depends on does".into(),
            ));
        }
    }
    Ok(())
}

/// The flat numbering of the live nodes: the constant false, the leaves, the gates in
/// topological order of their components (inner gates, then those only outputs read, then
/// the lazy ones).
struct Numbering {
    /// Per graph node, its flat number, or [`NO_NODE`] when dropped.
    number: Vec<u32>,
    /// The gates' components, in flat order.
    comps: Vec<Vec<u32>>,
    /// Per graph node, the block it belongs to, or `u32::MAX`.
    block_of: Vec<u32>,
    blocks: Vec<(u32, u32)>,
    first_gate: u32,
    first_last_gate: u32,
    first_lazy: u32,
    first_legal: u32,
}

impl Numbering {
    fn new(
        g: &Graph,
        n_leaves: usize,
        outputs: &Outputs,
        budget: &Budget,
    ) -> Result<Numbering, GroundError> {
        let n = g.nodes.len();
        let roots = outputs.roots(g);
        let live = optimize::live(g, roots.iter().copied());
        let comps = optimize::components(&g.nodes, |x| live[x] && g.nodes[x].is_gate());
        let is_cyclic = |comp: &[u32]| {
            let x0 = comp[0] as usize;
            comp.len() > 1 || g.nodes[x0].inputs().iter().any(|l| l.node() == x0)
        };
        // Gates that only goals read, directly or not, are lazy: no link leads to them, and
        // they are evaluated when goals are read (typically once, at the end of a playout)
        // instead of following every change. Recursive blocks are never lazy.
        let eager = optimize::live(
            g,
            outputs.eager_roots(g).into_iter().chain(
                comps
                    .iter()
                    .filter(|c| is_cyclic(c))
                    .flatten()
                    .map(|&x| Lit::pos(x as usize)),
            ),
        );
        let lazy = |comp: &Vec<u32>| !eager[comp[0] as usize];
        // Gates no eager gate reads (only outputs) go after the other eager gates: they can
        // be handled as soon as their counter crosses, with no visit.
        let mut read_by_gate = vec![false; n];
        for comp in comps.iter().filter(|c| !lazy(c)) {
            for &x in comp {
                for l in g.nodes[x as usize].inputs() {
                    read_by_gate[g.resolve(*l).node()] = true;
                }
            }
        }
        let is_last = |comp: &Vec<u32>| comp.len() == 1 && !read_by_gate[comp[0] as usize];
        let (lazy_comps, comps): (Vec<Vec<u32>>, Vec<Vec<u32>>) =
            comps.into_iter().partition(|c| lazy(c));
        let (mut comps, last): (Vec<Vec<u32>>, Vec<Vec<u32>>) =
            comps.into_iter().partition(|c| is_cyclic(c) || !is_last(c));
        let n_inner = comps.len();
        let n_last = last.len();
        comps.extend(last);
        comps.extend(lazy_comps);
        let mut number = vec![NO_NODE; n];
        number[0] = 0;
        // Bases and inputs keep their raw numbers, 1 onwards.
        let mut next_number = 1u32;
        for _ in 0..n_leaves {
            number[next_number as usize] = next_number;
            next_number += 1;
        }
        let first_gate = next_number;
        let mut blocks = Vec::new();
        let mut block_of = vec![u32::MAX; n];
        for comp in &comps {
            let cyclic = is_cyclic(comp);
            let start = next_number;
            for &x in comp {
                number[x as usize] = next_number;
                next_number += 1;
                if cyclic {
                    block_of[x as usize] = blocks.len() as u32;
                }
            }
            if cyclic {
                blocks.push((start, next_number));
            }
        }
        let first_legal = next_number;
        let first_last_gate =
            first_gate + (comps[..n_inner].iter().map(Vec::len).sum::<usize>() as u32);
        let first_lazy = first_last_gate + n_last as u32;
        let n_gates = (first_legal - first_gate) as usize;
        if n_gates > budget.max_gates {
            return Err(GroundError::Budget(Exceeded::Gates(budget.max_gates)));
        }
        if roots.iter().any(|l| number[l.node()] == NO_NODE) {
            return Err(GroundError::Unsupported(
                "an output reads a dropped node".into(),
            ));
        }
        Ok(Numbering {
            number,
            comps,
            block_of,
            blocks,
            first_gate,
            first_last_gate,
            first_lazy,
            first_legal,
        })
    }

    /// A resolved literal of the graph, renumbered.
    fn lit(&self, l: Lit) -> Lit {
        Lit::pos(self.number[l.node()] as usize).xor(l.neg())
    }
}

/// The gates in flat order with their input literals, and the links between counted nodes.
struct GateTable {
    gate_and: Vec<bool>,
    gate_start: Vec<u32>,
    gate_ins: Vec<Lit>,
    /// (source, target << 1 | negated).
    links: Vec<(u32, u32)>,
    /// (source, block) for links into a block from outside, once per pair.
    block_links: Vec<(u32, u32)>,
}

impl GateTable {
    fn new(g: &Graph, numbering: &Numbering) -> Result<GateTable, GroundError> {
        let Numbering {
            number,
            comps,
            block_of,
            blocks,
            first_lazy,
            first_gate,
            first_legal,
            ..
        } = numbering;
        let n_gates = (first_legal - first_gate) as usize;
        let mut gate_and = Vec::with_capacity(n_gates);
        let mut gate_start = Vec::with_capacity(n_gates + 1);
        gate_start.push(0u32);
        let mut gate_ins: Vec<Lit> = Vec::new();
        // Links into blocks apart, to be deduplicated.
        let mut links: Vec<(u32, u32)> = Vec::new();
        let mut block_links: Vec<(u32, u32)> = Vec::new();
        for comp in comps {
            for &x in comp {
                let x = x as usize;
                let node = &g.nodes[x];
                gate_and.push(matches!(node, Node::And(_)));
                let block = block_of[x];
                for &l in node.inputs() {
                    let l = g.resolve(l);
                    if number[l.node()] == NO_NODE {
                        return Err(GroundError::Unsupported(
                            "a gate reads a dropped node".into(),
                        ));
                    }
                    let l = numbering.lit(l);
                    gate_ins.push(l);
                    if l.node() == 0 {
                        continue;
                    }
                    if number[x] >= *first_lazy {
                        // Lazy gates are evaluated on demand: no links.
                    } else if block == u32::MAX {
                        links.push((l.node() as u32, number[x] << 1 | u32::from(l.neg())));
                    } else if !(blocks[block as usize].0..blocks[block as usize].1)
                        .contains(&(l.node() as u32))
                    {
                        // Into a block: its output node, once per source.
                        block_links.push((l.node() as u32, block));
                    }
                }
                gate_start.push(gate_ins.len() as u32);
            }
        }
        block_links.sort_unstable();
        block_links.dedup();
        Ok(GateTable {
            gate_and,
            gate_start,
            gate_ins,
            links,
            block_links,
        })
    }
}

/// The legal entries of every role, and the input node of each role's moves.
struct LegalTable {
    input_of: Vec<Vec<u32>>,
    legal: Vec<LegalEntry>,
    legal_groups: Vec<Vec<LegalGroup>>,
}

impl LegalTable {
    fn new(g: &Graph, outputs: &Outputs, numbering: &Numbering) -> LegalTable {
        let n_roles = outputs.legal.len();
        let mut input_of = vec![vec![NO_NODE; outputs.moves.len()]; n_roles];
        for &(r, m, node) in &outputs.inputs {
            input_of[r][m.0 as usize] = numbering.number[node as usize];
        }
        // Each group of a role's entries starts on a multiple of 64, so that its legal moves
        // are whole words of a bitset; the gaps hold entries that are never legal.
        let mut legal = Vec::new();
        let mut legal_groups = Vec::with_capacity(n_roles);
        for (r, moves) in outputs.legal.iter().enumerate() {
            let mut groups = Vec::new();
            for (gi, &guard) in outputs.guards[r].iter().enumerate() {
                while legal.len() % 64 != 0 {
                    legal.push(LegalEntry {
                        mv: MoveId(u32::MAX),
                        lit: Lit::FALSE,
                        input: NO_NODE,
                    });
                }
                let start = legal.len() / 64;
                for &(l, mv, _) in moves.iter().filter(|e| e.2 == gi as u32) {
                    legal.push(LegalEntry {
                        mv,
                        lit: numbering.lit(g.resolve(l)),
                        input: input_of[r][mv.0 as usize],
                    });
                }
                let end = legal.len().div_ceil(64);
                if end > start {
                    groups.push(LegalGroup {
                        guard: numbering.lit(g.resolve(guard)),
                        words: (start as u32, end as u32),
                    });
                }
            }
            legal_groups.push(groups);
        }
        LegalTable {
            input_of,
            legal,
            legal_groups,
        }
    }
}

/// The links by source (CSR), each source's split into classes.
struct LinkTable {
    out_start: Vec<u32>,
    outs: Vec<u32>,
    out_split: Vec<[u32; 3]>,
}

impl LinkTable {
    /// Sorts `links` (source, target << 1 | negated) by source, then per source into plain
    /// links to inner gates, negated ones, links to the last gates and links to outputs,
    /// each class by target.
    fn new(links: Vec<(u32, u32)>, first_legal: u32, first_last_gate: u32) -> LinkTable {
        // By source (counting sort).
        let mut out_start = vec![0u32; first_legal as usize + 1];
        for &(s, _) in &links {
            out_start[s as usize + 1] += 1;
        }
        for i in 0..first_legal as usize {
            out_start[i + 1] += out_start[i];
        }
        let mut fill = out_start.clone();
        let mut outs = vec![0u32; links.len()];
        for (s, t) in links {
            let slot = &mut fill[s as usize];
            outs[*slot as usize] = t;
            *slot += 1;
        }
        drop(fill);
        let class = |t: u32| {
            if t >> 1 < first_last_gate {
                t & 1
            } else if t >> 1 < first_legal {
                2
            } else {
                3
            }
        };
        let mut out_split = Vec::with_capacity(first_legal as usize);
        for x in 0..first_legal as usize {
            let (s, e) = (out_start[x] as usize, out_start[x + 1] as usize);
            let list = &mut outs[s..e];
            list.sort_unstable_by_key(|&t| (class(t), t));
            let at = |c: u32| (s + list.partition_point(|&t| class(t) < c)) as u32;
            out_split.push([at(1), at(2), at(3)]);
        }
        LinkTable {
            out_start,
            outs,
            out_split,
        }
    }
}

/// A goal value: an integer constant from 0 to 100.
fn goal_value(pool: &TermPool, t: GTerm) -> Option<u8> {
    if !pool.args(t).is_empty() || pool.is_nullary(t) {
        return None;
    }
    pool.functor(t)
        .name()
        .parse::<u8>()
        .ok()
        .filter(|&v| v <= 100)
}
