//! Grounding: every rule instance that can ever fire, computed with the Datalog engine.
//!
//! The game is lowered as for the Datalog machine (`or` multiplied out, variables numbered,
//! optionally after the magic-sets rewrite). Only relations that `legal`, `goal`, `terminal`,
//! `next` or `init` read, directly or not, are kept. Static relations (depending on neither
//! `true` nor `does`) are evaluated exactly, negations included, as the Datalog machine does;
//! they are never instantiated: in a rule body they only filter bindings.
//!
//! The other rules' bodies are split into independent parts (`condense`), and a relaxed copy
//! of them drops the negative literals of non-static relations and adds
//! `(<= (true ?x) (init ?x))`, `(<= (true ?x) (next ?x))` and `(<= (does ?r ?m) (legal ?r ?m))`;
//! it is monotone, and its least model (evaluated once, stratum by stratum in the order of
//! the relation dependency graph) holds every atom that can hold in any reachable state.
//!
//! Each such rule is then instantiated by one more engine rule whose head lists all the rule's
//! variables and whose body is the relaxed body: every row is a binding whose positive
//! literals lie in the model. For each binding, a negative literal whose atom is outside the
//! model is true and dropped; any other becomes a negative literal of the ground rule; static
//! literals hold and are dropped.
//!
//! The [`Budget`] bounds the number of rows and terms (through the engine's limits), the
//! number of ground literals, the time and the process's resident memory: the engine gets the
//! deadline and the memory limit and checks them while joining, and the clock checks them
//! between strata and while instances are read.

use std::cell::Cell;
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::datalog::{
    BodyLit, Demand, Evaluator, Layer, Limits, LowerError, Lowered, MemoryLimit, Pat, RelId,
    RuleSpec, Stop, Stratum, lower_with,
};
use crate::machine::EvalError;
use crate::resources;
use ggp_gdl::gdl::{Description, GTerm, Sym, TermPool};

/// How much work grounding and network building may do before giving up.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Wall-clock seconds for grounding and building together.
    pub max_seconds: f64,
    /// Most rows in one relation of the relaxed model or of one rule's instances (and a
    /// quarter of the most distinct terms).
    pub max_atoms: usize,
    /// Most ground literals, and most network nodes.
    pub max_gates: usize,
    /// Most resident memory of the whole process, in bytes (`u64::MAX`: no limit). The limit
    /// is on the process, not on grounding: memory already in use when grounding starts
    /// (another match's search trees, the rules, the allocator's free lists) counts too. It
    /// is read from `/proc/self/status` where the time is checked, at most every few
    /// milliseconds by the clock and every million rows by the engine; where it cannot be
    /// read (not Linux), it is not enforced. Default: [`default_max_memory`].
    pub max_memory_bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_seconds: 30.0,
            max_atoms: 2_000_000,
            max_gates: 10_000_000,
            max_memory_bytes: default_max_memory(),
        }
    }
}

/// The most memory grounding may leave the process using, by default, on a machine with
/// enough of it: 4 GB.
///
/// The row and gate limits already keep grounding to a few hundred megabytes on the games
/// measured (`chess_200`, 171,000 gates: 140 MB at its peak; `chess`, which the row limit
/// stops after 11 s: 300 MB); the memory budget is the backstop for blow-ups they do not see
/// (many relations each under the row limit, very large terms, a big network's optimisation
/// tables), so that a failed grounding ends in a fallback to the Datalog engine rather than in
/// the machine running out of memory. 4 GB is ten times those peaks, and leaves room on an
/// 8 GB machine for the search (the MCTS tree's default budget is 512 MiB) and the system.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 4_000_000_000;

/// The default memory budget: [`DEFAULT_MAX_MEMORY_BYTES`], or half the machine's physical
/// memory if that is less (when it can be read).
pub fn default_max_memory() -> u64 {
    resources::total_memory().map_or(DEFAULT_MAX_MEMORY_BYTES, |total| {
        DEFAULT_MAX_MEMORY_BYTES.min(total / 2)
    })
}

/// Why a game could not be grounded into a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroundError {
    /// The rules could not be lowered.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The game is too large for the budget: what grew too large.
    #[error("{0}")]
    Budget(Exceeded),
    /// Grounding ran out of time: in which phase.
    #[error("{0}")]
    Time(TimeUp),
    /// The game uses something the network cannot represent (for example a cycle of gates
    /// through negation, which a valid, stratified game never has).
    #[error("cannot build a network: {0}")]
    Unsupported(String),
}

impl From<EvalError> for GroundError {
    fn from(e: EvalError) -> Self {
        match e {
            EvalError::Deadline => GroundError::Time(TimeUp {
                phase: Phase::EvaluatingRules,
                limit: None,
            }),
            e => GroundError::Budget(Exceeded::Eval(e)),
        }
    }
}

/// Where grounding ran out of time ([`GroundError::Time`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("out of time {phase}{}", time_allowed(.limit))]
pub struct TimeUp {
    /// What was being done.
    pub phase: Phase,
    /// The time allowed, when the grounder's own clock ran out (none when the rule
    /// evaluator's deadline did).
    pub limit: Option<Duration>,
}

/// ": more than N s" when the time allowed is known.
fn time_allowed(limit: &Option<Duration>) -> String {
    limit
        .map(|l| format!(": more than {:.1} s", l.as_secs_f64()))
        .unwrap_or_default()
}

/// What grounding was doing when it ran out of time or memory ([`TimeUp`],
/// [`Exceeded::Memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Phase {
    /// Lowering the rules to the engine's form.
    #[error("lowering the rules")]
    LoweringRules,
    /// Evaluating the rules (the rule evaluator's own deadline).
    #[error("evaluating rules")]
    EvaluatingRules,
    /// Evaluating the relations no move changes.
    #[error("static relations")]
    StaticRelations,
    /// Evaluating the relaxed model (every fact that might ever hold).
    #[error("relaxed model")]
    RelaxedModel,
    /// Instantiating the rules over the relaxed model.
    #[error("instantiating rules")]
    InstantiatingRules,
    /// Turning the ground program into gates.
    #[error("building the network")]
    BuildingNetwork,
    /// Evaluating the gates that no state or move changes.
    #[error("evaluating static logic")]
    StaticLogic,
    /// Removing gates that change nothing.
    #[error("simplifying the network")]
    Simplifying,
    /// Inlining gates into their readers.
    #[error("inlining gates")]
    Inlining,
    /// Factoring sums of products (`AND(m, OR(...))`).
    #[error("factoring the network")]
    Factoring,
}

/// What a grounding outgrew ([`GroundError::Budget`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    /// The evaluation of the rules stopped at one of the engine's limits (rows, terms, one
    /// term's size or depth).
    #[error(transparent)]
    Eval(EvalError),
    /// The process's resident memory passed [`Budget::max_memory_bytes`] while doing `what`.
    #[error(
        "out of memory {what}: {:.1} MB resident, over the limit of {:.1} MB",
        *.used as f64 / 1e6,
        *.limit as f64 / 1e6
    )]
    Memory {
        /// What grounding was doing.
        what: Phase,
        /// The resident memory, in bytes.
        used: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// More ground literals and rules than [`Budget::max_gates`].
    #[error("more than {0} ground literals")]
    Literals(usize),
    /// More network nodes than [`Budget::max_gates`].
    #[error("more than {0} network nodes")]
    Nodes(usize),
    /// More gates than [`Budget::max_gates`].
    #[error("more than {0} gates")]
    Gates(usize),
    /// Both tries failed: the rules as written, then with demand-driven rules.
    #[error("{}", describe_retried(first, second))]
    Retried {
        /// Why the rules as written did not ground.
        first: Box<GroundError>,
        /// Why the demand-driven rules did not.
        second: Box<GroundError>,
    },
}

/// A ground atom's number in a [`GroundProgram`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AtomId(pub u32);

impl AtomId {
    /// The id as an index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A literal of a ground rule body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroundLit {
    /// The atom.
    pub atom: AtomId,
    /// Whether the atom must hold (`false`: must not hold).
    pub positive: bool,
}

/// A ground rule: its head, and its body as a range of [`GroundProgram::lits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroundRule {
    /// The conclusion.
    pub head: AtomId,
    /// Start of the body in the literal array.
    pub start: u32,
    /// End (exclusive) of the body.
    pub end: u32,
}

/// The keyword relations' ids.
#[derive(Clone, Copy, Debug)]
pub struct Keywords {
    /// `init/1`.
    pub init: RelId,
    /// `true/1`.
    pub true_: RelId,
    /// `does/2`.
    pub does: RelId,
    /// `next/1`.
    pub next: RelId,
    /// `legal/2`.
    pub legal: RelId,
    /// `goal/2`.
    pub goal: RelId,
    /// `terminal/0`.
    pub terminal: RelId,
}

/// A game's ground rules over numbered atoms.
pub struct GroundProgram {
    /// The term store; each atom is kept as the term `(rel args...)` (or `rel`).
    pub pool: TermPool,
    /// Each atom's relation and term.
    pub atoms: Vec<(RelId, GTerm)>,
    /// The arity of each relation.
    pub arities: Vec<usize>,
    /// The keyword relations.
    pub keywords: Keywords,
    /// The ground rules.
    pub rules: Vec<GroundRule>,
    /// The rule bodies' literals.
    pub lits: Vec<GroundLit>,
    /// The `true` atoms of the relaxed model: the base propositions.
    pub bases: Vec<AtomId>,
    /// The `does` atoms of the relaxed model: the input propositions.
    pub inputs: Vec<AtomId>,
    /// The facts of the initial state (the `init` facts).
    pub initial: Vec<GTerm>,
    ids: HashMap<(RelId, GTerm), AtomId>,
}

impl GroundProgram {
    /// The arguments of an atom.
    pub fn args(&self, atom: AtomId) -> &[GTerm] {
        let (rel, t) = self.atoms[atom.index()];
        if self.arities[rel.0 as usize] == 0 {
            &[]
        } else {
            self.pool.args(t)
        }
    }

    /// The atom of `rel` with term `t`, if it is in the program.
    pub fn find(&self, rel: RelId, t: GTerm) -> Option<AtomId> {
        self.ids.get(&(rel, t)).copied()
    }

    /// The atom `(true fact)`, if it is in the program.
    pub fn find_true(&self, fact: GTerm) -> Option<AtomId> {
        let t = self.pool.find_app(Sym::TRUE, &[fact])?;
        self.find(self.keywords.true_, t)
    }

    fn intern(&mut self, rel: RelId, name: Sym, args: &[GTerm]) -> AtomId {
        let t = self.pool.app(name, args);
        let next = AtomId(self.atoms.len() as u32);
        let id = *self.ids.entry((rel, t)).or_insert(next);
        if id == next {
            self.atoms.push((rel, t));
        }
        id
    }
}

/// Both tries' reasons, the second only when it differs from the first.
fn describe_retried(first: &GroundError, second: &GroundError) -> String {
    let (first, second) = (first.to_string(), second.to_string());
    if first == second {
        format!("{first} (with demand-driven rules too)")
    } else {
        format!("{first}; then, with demand-driven rules, {second}")
    }
}

/// The least time between two readings of the memory in use by [`Clock::check`].
const MEMORY_CHECK_INTERVAL: Duration = Duration::from_millis(5);

/// Checks the time and memory budgets.
pub(crate) struct Clock {
    start: Instant,
    limit: Duration,
    /// The most resident memory, in bytes (`u64::MAX`: no limit).
    max_memory: u64,
    /// When the memory in use was last read (`None`: never).
    memory_read: Cell<Option<Instant>>,
}

impl Clock {
    /// A clock started now.
    pub(crate) fn new(budget: &Budget) -> Clock {
        let limit = Duration::try_from_secs_f64(budget.max_seconds.max(0.0))
            .unwrap_or(Duration::from_secs(u64::MAX / 4));
        Clock {
            start: Instant::now(),
            limit,
            max_memory: budget.max_memory_bytes,
            memory_read: Cell::new(None),
        }
    }

    /// A clock started at the same instant with `share` of the time and the same memory
    /// limit.
    pub(crate) fn share(&self, share: f64) -> Clock {
        Clock {
            start: self.start,
            limit: self.limit.mul_f64(share.clamp(0.0, 1.0)),
            max_memory: self.max_memory,
            memory_read: Cell::new(None),
        }
    }

    /// When the Datalog engine must stop: at the instant the time is up, or past the memory
    /// limit.
    pub(crate) fn stop(&self) -> Stop {
        Stop {
            deadline: self.start.checked_add(self.limit),
            memory: (self.max_memory != u64::MAX).then_some(MemoryLimit {
                max_bytes: self.max_memory,
                in_use: resources::resident_memory,
            }),
        }
    }

    /// `Err` once the time is up ([`GroundError::Time`]) or the process's resident memory
    /// exceeds the limit ([`GroundError::Budget`]). The memory is read at most every
    /// [`MEMORY_CHECK_INTERVAL`]; `what` says what was being done.
    pub(crate) fn check(&self, what: Phase) -> Result<(), GroundError> {
        let now = Instant::now();
        if now.saturating_duration_since(self.start) > self.limit {
            return Err(GroundError::Time(TimeUp {
                phase: what,
                limit: Some(self.limit),
            }));
        }
        if self.max_memory == u64::MAX
            || self
                .memory_read
                .get()
                .is_some_and(|t| now.saturating_duration_since(t) < MEMORY_CHECK_INTERVAL)
        {
            return Ok(());
        }
        self.memory_read.set(Some(now));
        match resources::resident_memory() {
            Some(used) if used > self.max_memory => Err(GroundError::Budget(Exceeded::Memory {
                what,
                used,
                limit: self.max_memory,
            })),
            _ => Ok(()),
        }
    }
}

/// Grounds a game within `budget`.
///
/// # Errors
/// The rules cannot be lowered, or grounding exceeds the budget.
pub fn ground(description: &Description, budget: &Budget) -> Result<GroundProgram, GroundError> {
    ground_with_clock(description, budget, &Clock::new(budget))
}

pub(crate) fn ground_with_clock(
    description: &Description,
    budget: &Budget,
    clock: &Clock,
) -> Result<GroundProgram, GroundError> {
    ground_with_demand(description, budget, clock, Demand::Off)
}

/// Grounds a game whose rules are first rewritten for `demand` (magic sets).
///
/// The phases: lower the rules and find the keywords; keep the relations the outputs read
/// ([`Lowered::needed_by`]); plan the evaluation ([`Plan::new`]: static strata exact, the
/// dynamic rules condensed and relaxed, one instance relation per dynamic rule); evaluate the
/// static relations and the relaxed model ([`Plan::evaluate`]); take the bases, inputs,
/// initial state and static outputs from the model ([`Plan::skeleton`]); and instantiate the
/// dynamic rules ([`Plan::instantiate`]).
pub(crate) fn ground_with_demand(
    description: &Description,
    budget: &Budget,
    clock: &Clock,
    demand: Demand,
) -> Result<GroundProgram, GroundError> {
    let lowered = lower_with(description.rules(), demand)?;
    clock.check(Phase::LoweringRules)?;
    let keywords = Keywords::of(&lowered)?;
    let needed = lowered.needed_by(keywords.outputs().into_iter().chain([keywords.init]));
    let plan = Plan::new(&lowered, keywords, &needed)?;
    let mut engine = plan.evaluate(lowered.pool, budget, clock)?;
    let mut prog = plan.skeleton(&mut engine);
    plan.instantiate(&mut engine, &mut prog, budget, clock)?;
    Ok(prog)
}

impl Keywords {
    /// The keyword relations of lowered rules.
    fn of(lowered: &Lowered) -> Result<Keywords, GroundError> {
        let keyword = |name: Sym, arity: usize| {
            lowered
                .rel(name, arity)
                .ok_or_else(|| GroundError::Unsupported(format!("no relation {name}/{arity}")))
        };
        Ok(Keywords {
            init: keyword(Sym::INIT, 1)?,
            true_: keyword(Sym::TRUE, 1)?,
            does: keyword(Sym::DOES, 2)?,
            next: keyword(Sym::NEXT, 1)?,
            legal: keyword(Sym::LEGAL, 2)?,
            goal: keyword(Sym::GOAL, 2)?,
            terminal: keyword(Sym::TERMINAL, 0)?,
        })
    }

    /// The relations the network computes.
    fn outputs(&self) -> [RelId; 4] {
        [self.legal, self.goal, self.terminal, self.next]
    }
}

/// What the engine evaluates to ground a game, and how its results are read.
struct Plan {
    keywords: Keywords,
    /// Each relation's name (helper relations from `condense` included).
    names: Vec<Sym>,
    /// Per relation (helpers included): depends on neither `true` nor `does`.
    is_static: Vec<bool>,
    /// Arities of the relations, the helpers, then the instance relations.
    arities: Vec<usize>,
    /// Relations below this are the game's and the helpers; above, instance relations.
    n_rels: usize,
    /// The engine's rules and strata: static strata, relaxed strata, then one instance
    /// stratum per grounded rule.
    rules: Vec<RuleSpec>,
    strata: Vec<Stratum>,
    /// Strata below `n_static` are static; below `n_evaluated`, evaluated up front.
    n_static: usize,
    n_evaluated: usize,
    /// The dynamic rules after `condense`, with their negations.
    original: Vec<RuleSpec>,
    /// The rules of `original` that are instantiated, one instance relation each.
    grounded: Vec<usize>,
}

impl Plan {
    /// Plans the evaluation: static strata exact, the dynamic rules condensed and relaxed,
    /// `true` from `init` and `next`, `does` from `legal`, and one instance relation per
    /// dynamic rule.
    fn new(lowered: &Lowered, keywords: Keywords, needed: &[bool]) -> Result<Plan, GroundError> {
        let n_lowered = lowered.arities.len();
        let mut names = vec![Sym::ROLE; n_lowered];
        for (&(name, _), id) in &lowered.rels {
            names[id.0 as usize] = name;
        }
        // Static relations (depending on neither `true` nor `does`) are computed exactly,
        // with their negations, as the Datalog machine does; the others are grounded.
        let mut is_static = vec![true; n_lowered];
        for (stratum, layer) in &lowered.strata {
            if *layer != Layer::Static {
                for r in &stratum.rels {
                    is_static[r.0 as usize] = false;
                }
            }
        }
        // `true` and `does` have no rules: they are the state and the move.
        is_static[keywords.true_.0 as usize] = false;
        is_static[keywords.does.0 as usize] = false;
        if !is_static[keywords.init.0 as usize] {
            return Err(GroundError::Unsupported(
                "init depends on true or does".into(),
            ));
        }
        let mut rules: Vec<RuleSpec> = Vec::new();
        let mut strata: Vec<Stratum> = Vec::new();
        for (stratum, layer) in &lowered.strata {
            if *layer != Layer::Static || !stratum.rels.iter().any(|r| needed[r.0 as usize]) {
                continue;
            }
            let start = rules.len();
            rules.extend(stratum.rules.iter().map(|&i| lowered.rules[i].clone()));
            strata.push(Stratum {
                rels: stratum.rels.clone(),
                rules: (start..rules.len()).collect(),
            });
        }
        let n_static = strata.len();

        // The dynamic rules, their bodies split into independent parts.
        let dynamic: Vec<RuleSpec> = lowered
            .rules
            .iter()
            .filter(|spec| {
                let h = spec.head_rel.0 as usize;
                needed[h] && !is_static[h]
            })
            .cloned()
            .collect();
        let mut arities = lowered.arities.clone();
        let original = condense(dynamic, &mut arities, &mut names);
        let n_rels = arities.len();
        // A part made of static literals only is static too.
        is_static.resize(n_rels, false);
        for spec in &original {
            let h = spec.head_rel.0 as usize;
            if h >= n_lowered {
                is_static[h] = spec.body.iter().all(|l| match l {
                    BodyLit::Pos(r, _) | BodyLit::Neg(r, _) => {
                        (r.0 as usize) < n_lowered && is_static[r.0 as usize]
                    }
                    BodyLit::Distinct(..) => true,
                });
            }
        }

        // The relaxed program: negations of relations that are not static dropped.
        let relaxed: Vec<RuleSpec> = original.iter().map(|s| relax(s, &is_static)).collect();
        let first_relaxed = rules.len();
        rules.extend(relaxed.iter().cloned());
        let copy = |head_rel: RelId, from: RelId, arity: usize| RuleSpec {
            head_rel,
            head: (0..arity as u16).map(Pat::Var).collect(),
            body: vec![BodyLit::Pos(
                from,
                (0..arity as u16).map(Pat::Var).collect(),
            )],
            n_vars: arity,
        };
        rules.push(copy(keywords.true_, keywords.init, 1));
        rules.push(copy(keywords.true_, keywords.next, 1));
        rules.push(copy(keywords.does, keywords.legal, 2));
        for mut s in relation_strata(&rules[first_relaxed..], n_rels) {
            s.rules.iter_mut().for_each(|i| *i += first_relaxed);
            strata.push(s);
        }
        let n_evaluated = strata.len();

        // One instance relation per dynamic rule: its rows are the bindings of its variables.
        let grounded: Vec<usize> = (0..original.len())
            .filter(|&k| !is_static[original[k].head_rel.0 as usize])
            .collect();
        for &k in &grounded {
            let spec = &relaxed[k];
            let inst = RelId(arities.len() as u32);
            arities.push(spec.n_vars);
            rules.push(RuleSpec {
                head_rel: inst,
                head: (0..spec.n_vars as u16).map(Pat::Var).collect(),
                body: spec.body.clone(),
                n_vars: spec.n_vars,
            });
            strata.push(Stratum {
                rels: vec![inst],
                rules: vec![rules.len() - 1],
            });
        }
        Ok(Plan {
            keywords,
            names,
            is_static,
            arities,
            n_rels,
            rules,
            strata,
            n_static,
            n_evaluated,
            original,
            grounded,
        })
    }

    /// An engine over `pool` with the static relations and the relaxed model evaluated.
    fn evaluate(
        &self,
        pool: TermPool,
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Evaluator, GroundError> {
        let limits = Limits {
            max_rows: budget.max_atoms,
            max_terms: budget.max_atoms.saturating_mul(4),
            ..Limits::default()
        };
        let mut engine = Evaluator::new(
            pool,
            &self.arities,
            self.rules.clone(),
            self.strata.clone(),
            limits,
        );
        engine.set_stop(clock.stop());
        for s in 0..self.n_evaluated {
            engine.evaluate(s)?;
            clock.check(if s < self.n_static {
                Phase::StaticRelations
            } else {
                Phase::RelaxedModel
            })?;
        }
        Ok(engine)
    }

    /// The ground program before any rule is instantiated: the bases (`true` atoms of the
    /// model), the inputs (`does` atoms), the initial state and the static outputs as facts.
    /// The engine's term pool moves into the program.
    fn skeleton(&self, engine: &mut Evaluator) -> GroundProgram {
        let keywords = self.keywords;
        let mut prog = GroundProgram {
            pool: TermPool::default(),
            atoms: Vec::new(),
            arities: self.arities[..self.n_rels].to_vec(),
            keywords,
            rules: Vec::new(),
            lits: Vec::new(),
            bases: Vec::new(),
            inputs: Vec::new(),
            initial: Vec::new(),
            ids: HashMap::new(),
        };
        // The pool moves into the program; the engine keeps an empty one while instances
        // are read, and gets it back for each evaluation.
        prog.pool = std::mem::take(&mut engine.pool);
        prog.initial = engine
            .relation(keywords.init)
            .rows()
            .map(|r| r[0])
            .collect();
        let facts: Vec<GTerm> = engine
            .relation(keywords.true_)
            .rows()
            .map(|r| r[0])
            .collect();
        for f in facts {
            let a = prog.intern(keywords.true_, Sym::TRUE, &[f]);
            prog.bases.push(a);
        }
        let moves: Vec<[GTerm; 2]> = engine
            .relation(keywords.does)
            .rows()
            .map(|r| [r[0], r[1]])
            .collect();
        for m in moves {
            let a = prog.intern(keywords.does, Sym::DOES, &m);
            prog.inputs.push(a);
        }
        // Outputs that are static hold as facts.
        let mut row: Vec<GTerm> = Vec::new();
        for rel in keywords.outputs() {
            if !self.is_static[rel.0 as usize] {
                continue;
            }
            let n = engine.relation(rel).len();
            for i in 0..n {
                row.clear();
                row.extend_from_slice(engine.relation(rel).row(i));
                let head = prog.intern(rel, self.names[rel.0 as usize], &row);
                let start = prog.lits.len() as u32;
                prog.rules.push(GroundRule {
                    head,
                    start,
                    end: start,
                });
            }
        }
        prog
    }

    /// Instantiates each dynamic rule into `prog`, one instance stratum at a time.
    fn instantiate(
        &self,
        engine: &mut Evaluator,
        prog: &mut GroundProgram,
        budget: &Budget,
        clock: &Clock,
    ) -> Result<(), GroundError> {
        let mut row: Vec<GTerm> = Vec::new();
        let mut binds: Vec<GTerm> = Vec::new();
        for (j, &k) in self.grounded.iter().enumerate() {
            let spec = &self.original[k];
            std::mem::swap(&mut engine.pool, &mut prog.pool);
            let result = engine.evaluate(self.n_evaluated + j);
            std::mem::swap(&mut engine.pool, &mut prog.pool);
            result?;
            clock.check(Phase::InstantiatingRules)?;
            let inst = RelId((self.n_rels + j) as u32);
            let n = engine.relation(inst).len();
            for i in 0..n {
                if i % 4096 == 4095 {
                    clock.check(Phase::InstantiatingRules)?;
                }
                binds.clear();
                binds.extend_from_slice(engine.relation(inst).row(i));
                let head_rel = spec.head_rel;
                build_all(&spec.head, &binds, &mut prog.pool, &mut row);
                let head = prog.intern(head_rel, self.names[head_rel.0 as usize], &row);
                let start = prog.lits.len() as u32;
                for lit in &spec.body {
                    self.ground_lit(engine, prog, lit, &binds, &mut row);
                }
                prog.rules.push(GroundRule {
                    head,
                    start,
                    end: prog.lits.len() as u32,
                });
                if prog.lits.len() + prog.rules.len() > budget.max_gates {
                    return Err(GroundError::Budget(Exceeded::Literals(budget.max_gates)));
                }
            }
            engine.clear(inst);
        }
        Ok(())
    }

    /// Appends to `prog.lits` the ground literal of `lit` under `binds`, if it is not known to
    /// hold: static literals hold for every instance (the join checked them), and so does a
    /// negative literal whose atom is outside the model.
    fn ground_lit(
        &self,
        engine: &Evaluator,
        prog: &mut GroundProgram,
        lit: &BodyLit,
        binds: &[GTerm],
        row: &mut Vec<GTerm>,
    ) {
        match lit {
            BodyLit::Pos(rel, _) | BodyLit::Neg(rel, _) if self.is_static[rel.0 as usize] => {}
            BodyLit::Pos(rel, pats) => {
                build_all(pats, binds, &mut prog.pool, row);
                let atom = prog.intern(*rel, self.names[rel.0 as usize], row);
                prog.lits.push(GroundLit {
                    atom,
                    positive: true,
                });
            }
            BodyLit::Neg(rel, pats) => {
                // An atom built from terms the model never saw is outside the model.
                row.clear();
                for p in pats {
                    match p.find(binds, &prog.pool) {
                        Some(t) => row.push(t),
                        None => return,
                    }
                }
                if engine.relation(*rel).contains(row) {
                    let atom = prog.intern(*rel, self.names[rel.0 as usize], row);
                    prog.lits.push(GroundLit {
                        atom,
                        positive: false,
                    });
                }
            }
            BodyLit::Distinct(..) => {}
        }
    }
}

/// Splits rule bodies into independent parts: body literals are grouped by the variables
/// they share outside the head, and each group with variables of its own becomes a helper
/// relation over the variables it shares with the head and the other groups. A rule such as
/// `(<= (next (cell ?x ?y ?s)) (true (cell ?x ?y ?s)) (does ?p (move ?a ?b)) (away ?a ?b ?x ?y))`
/// then grounds to one instance per cell plus one per move and cell, instead of the product.
/// A group is left in place when the helper would be unsafe.
fn condense(rules: Vec<RuleSpec>, arities: &mut Vec<usize>, names: &mut Vec<Sym>) -> Vec<RuleSpec> {
    let mut out = Vec::with_capacity(rules.len());
    for spec in rules {
        let n = spec.body.len();
        let mut head_vars = vec![false; spec.n_vars];
        spec.head.iter().for_each(|p| mark(p, &mut head_vars));
        let lit_vars: Vec<Vec<bool>> = spec
            .body
            .iter()
            .map(|l| {
                let mut v = vec![false; spec.n_vars];
                lit_pats(l).for_each(|p| mark(p, &mut v));
                v
            })
            .collect();
        // Union-find over literals, joined by shared variables outside the head.
        let mut group: Vec<usize> = (0..n).collect();
        fn root(g: &mut [usize], mut i: usize) -> usize {
            while g[i] != i {
                g[i] = g[g[i]];
                i = g[i];
            }
            i
        }
        for v in (0..spec.n_vars).filter(|&v| !head_vars[v]) {
            let mut first = None;
            for (i, lv) in lit_vars.iter().enumerate() {
                if lv[v] {
                    match first {
                        None => first = Some(i),
                        Some(f) => {
                            let (a, b) = (root(&mut group, f), root(&mut group, i));
                            group[a] = b;
                        }
                    }
                }
            }
        }
        let roots: Vec<usize> = (0..n).map(|i| root(&mut group, i)).collect();
        let mut distinct_roots = roots.clone();
        distinct_roots.sort_unstable();
        distinct_roots.dedup();
        if distinct_roots.len() < 2 {
            out.push(spec);
            continue;
        }
        let mut main_body = Vec::new();
        let mut helpers = Vec::new();
        for &g in &distinct_roots {
            let members: Vec<usize> = (0..n).filter(|&i| roots[i] == g).collect();
            let mut inside = vec![false; spec.n_vars];
            let mut bound = vec![false; spec.n_vars];
            let mut outside = head_vars.clone();
            for i in 0..n {
                let target = if roots[i] == g {
                    &mut inside
                } else {
                    &mut outside
                };
                for (t, &x) in target.iter_mut().zip(&lit_vars[i]) {
                    *t |= x;
                }
                if roots[i] == g
                    && let BodyLit::Pos(_, pats) = &spec.body[i]
                {
                    pats.iter().for_each(|p| mark(p, &mut bound));
                }
            }
            let interface: Vec<u16> = (0..spec.n_vars)
                .filter(|&v| inside[v] && outside[v])
                .map(|v| v as u16)
                .collect();
            let has_local = (0..spec.n_vars).any(|v| inside[v] && !outside[v]);
            let safe = interface.iter().all(|&v| bound[v as usize]);
            if !has_local || !safe {
                main_body.extend(members.iter().map(|&i| spec.body[i].clone()));
                continue;
            }
            let rel = RelId(arities.len() as u32);
            arities.push(interface.len());
            names.push(Sym::new(&format!("__ggp_part{}", rel.0)));
            let args: Vec<Pat> = interface.iter().map(|&v| Pat::Var(v)).collect();
            helpers.push(renumber(RuleSpec {
                head_rel: rel,
                head: args.clone(),
                body: members.iter().map(|&i| spec.body[i].clone()).collect(),
                n_vars: spec.n_vars,
            }));
            main_body.push(BodyLit::Pos(rel, args));
        }
        out.push(renumber(RuleSpec {
            head_rel: spec.head_rel,
            head: spec.head,
            body: main_body,
            n_vars: spec.n_vars,
        }));
        out.extend(helpers);
    }
    out
}

fn lit_pats(l: &BodyLit) -> impl Iterator<Item = &Pat> {
    let (a, b): (&[Pat], &[Pat]) = match l {
        BodyLit::Pos(_, p) | BodyLit::Neg(_, p) => (p, &[]),
        BodyLit::Distinct(x, y) => (std::slice::from_ref(x), std::slice::from_ref(y)),
    };
    a.iter().chain(b)
}

fn mark(p: &Pat, vars: &mut [bool]) {
    match p {
        Pat::Const(_) => {}
        Pat::Var(v) => vars[*v as usize] = true,
        Pat::App(_, args) => args.iter().for_each(|a| mark(a, vars)),
    }
}

/// The rule with its variables numbered densely, in order of appearance.
fn renumber(spec: RuleSpec) -> RuleSpec {
    fn go(p: &Pat, map: &mut Vec<u16>, next: &mut u16) -> Pat {
        match p {
            Pat::Const(c) => Pat::Const(*c),
            Pat::Var(v) => {
                let slot = &mut map[*v as usize];
                if *slot == u16::MAX {
                    *slot = *next;
                    *next += 1;
                }
                Pat::Var(*slot)
            }
            Pat::App(f, args) => Pat::App(*f, args.iter().map(|a| go(a, map, next)).collect()),
        }
    }
    let mut map = vec![u16::MAX; spec.n_vars];
    let mut next = 0u16;
    let head = spec
        .head
        .iter()
        .map(|p| go(p, &mut map, &mut next))
        .collect();
    let body = spec
        .body
        .iter()
        .map(|l| match l {
            BodyLit::Pos(r, ps) => {
                BodyLit::Pos(*r, ps.iter().map(|p| go(p, &mut map, &mut next)).collect())
            }
            BodyLit::Neg(r, ps) => {
                BodyLit::Neg(*r, ps.iter().map(|p| go(p, &mut map, &mut next)).collect())
            }
            BodyLit::Distinct(a, b) => {
                BodyLit::Distinct(go(a, &mut map, &mut next), go(b, &mut map, &mut next))
            }
        })
        .collect();
    RuleSpec {
        head_rel: spec.head_rel,
        head,
        body,
        n_vars: next as usize,
    }
}

/// The rule with its negative literals dropped, except those of static relations (which are
/// computed exactly beforehand).
fn relax(spec: &RuleSpec, is_static: &[bool]) -> RuleSpec {
    RuleSpec {
        head_rel: spec.head_rel,
        head: spec.head.clone(),
        body: spec
            .body
            .iter()
            .filter(|l| match l {
                BodyLit::Neg(r, _) => is_static[r.0 as usize],
                _ => true,
            })
            .cloned()
            .collect(),
        n_vars: spec.n_vars,
    }
}

/// Strata for a negation-free program: the strongly connected components of the relation
/// graph (body relation to head relation), dependencies first.
fn relation_strata(rules: &[RuleSpec], n_rels: usize) -> Vec<Stratum> {
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n_rels, rules.len());
    for _ in 0..n_rels {
        graph.add_node(());
    }
    let mut by_head: Vec<Vec<usize>> = vec![Vec::new(); n_rels];
    for (i, r) in rules.iter().enumerate() {
        by_head[r.head_rel.0 as usize].push(i);
        for lit in &r.body {
            if let BodyLit::Pos(rel, _) = lit {
                graph.add_edge(
                    NodeIndex::new(rel.0 as usize),
                    NodeIndex::new(r.head_rel.0 as usize),
                    (),
                );
            }
        }
    }
    let mut components = petgraph::algo::tarjan_scc(&graph);
    components.reverse();
    let mut strata = Vec::new();
    for component in components {
        let mut rels: Vec<RelId> = component
            .iter()
            .map(|n| RelId(n.index() as u32))
            .filter(|r| !by_head[r.0 as usize].is_empty())
            .collect();
        if rels.is_empty() {
            continue;
        }
        rels.sort();
        let rules = rels
            .iter()
            .flat_map(|r| by_head[r.0 as usize].iter().copied())
            .collect();
        strata.push(Stratum { rels, rules });
    }
    strata
}

/// Builds each pattern under `binds` into `out` (cleared first).
fn build_all(pats: &[Pat], binds: &[GTerm], pool: &mut TermPool, out: &mut Vec<GTerm>) {
    out.clear();
    for p in pats {
        let t = p.build(binds, pool);
        out.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_model_and_instances() {
        let text = "(role a) (init (p 1)) (succ 1 2) (succ 2 3)
            (<= (legal a (go ?y)) (true (p ?x)) (succ ?x ?y))
            (<= (next (p ?y)) (does a (go ?y)))
            (<= terminal (true (p 3)) (not (true (p 1))))
            (goal a 100)";
        let d = Description::from_text(text).unwrap();
        let g = ground(&d, &Budget::default()).unwrap();
        // (p 1), (p 2), (p 3) can all be true; (go 2), (go 3) can be done.
        assert_eq!(g.bases.len(), 3);
        assert_eq!(g.inputs.len(), 2);
        let shown: Vec<String> = g
            .rules
            .iter()
            .filter(|r| g.atoms[r.head.index()].0 == g.keywords.terminal)
            .map(|r| {
                g.lits[r.start as usize..r.end as usize]
                    .iter()
                    .map(|l| {
                        let t = g.pool.display(g.atoms[l.atom.index()].1).to_string();
                        if l.positive { t } else { format!("(not {t})") }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(shown, ["(true (p 3)) (not (true (p 1)))"]);
    }

    #[test]
    fn a_memory_budget_below_the_process_size_stops_grounding() {
        let Some(used) = resources::resident_memory() else {
            // Not Linux: the memory budget is not enforced.
            return;
        };
        // Any process uses more than a megabyte: the first check stops grounding.
        assert!(used > 1_000_000, "{used}");
        let d = Description::from_text(
            "(role a) (init p) (<= (legal a go) (true p)) (<= (next p) (does a go))
             (<= terminal (not (true p))) (goal a 100)",
        )
        .unwrap();
        let budget = Budget {
            max_memory_bytes: 1_000_000,
            ..Budget::default()
        };
        match ground(&d, &budget) {
            Err(GroundError::Budget(why)) => {
                let why = why.to_string();
                assert!(why.starts_with("out of memory "), "{why}");
                assert!(
                    why.ends_with(" MB resident, over the limit of 1.0 MB"),
                    "{why}"
                );
            }
            Err(e) => panic!("not a memory error: {e}"),
            Ok(_) => panic!("grounded within 1 MB"),
        }
        // With the default budget the same game grounds.
        assert_eq!(ground(&d, &Budget::default()).unwrap().bases.len(), 1);
    }
}
