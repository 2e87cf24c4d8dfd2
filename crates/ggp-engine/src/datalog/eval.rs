//! The bottom-up evaluator: rules over relations of ground terms, stratum by stratum.
//!
//! A rule's body is compiled once into a [`Plan`]: a join order chosen greedily from what is
//! bound (filters first, then the positive literal expected to match the fewest rows per
//! probe: one whose every place is bound matches at most one), with `not` as an anti-join
//! against a completed lower stratum and `distinct` as a filter. A recursive stratum is evaluated semi-naively: after one full round, each rule is
//! re-run once per recursive body literal with that literal reading only the rows the previous
//! round added, until a round adds nothing.
//!
//! The engine knows nothing of GDL: `lower` turns a game into [`RuleSpec`]s and strata.

use crate::machine::{Budgeted, EvalError};
use ggp_gdl::gdl::{GTerm, Sym, TermPool};

use super::relation::{IndexSpec, Path, Relation, key_hash};

/// A relation's number in the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelId(pub u32);

/// A pattern: a term with numbered variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pat {
    /// Variable slot `n` of the rule.
    Var(u16),
    /// A ground term.
    Const(GTerm),
    /// A function term with at least one variable inside.
    App(Sym, Box<[Pat]>),
}

/// A body literal of a rule given to the engine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BodyLit {
    /// The relation holds for these arguments.
    Pos(RelId, Vec<Pat>),
    /// The relation does not hold (all variables bound by positive literals).
    Neg(RelId, Vec<Pat>),
    /// The two terms differ (all variables bound by positive literals).
    Distinct(Pat, Pat),
}

/// A safe rule: every variable of the head, of a `Neg` and of a `Distinct` occurs in a `Pos`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RuleSpec {
    /// The relation derived.
    pub head_rel: RelId,
    /// The head's arguments.
    pub head: Vec<Pat>,
    /// The conditions.
    pub body: Vec<BodyLit>,
    /// How many variable slots the rule uses.
    pub n_vars: usize,
}

/// A set of rules evaluated together to a fixpoint; a relation may be spread over several.
#[derive(Clone, Debug, Default)]
pub struct Stratum {
    /// The relations its rules derive.
    pub rels: Vec<RelId>,
    /// The rules, as indices into the engine's rules.
    pub rules: Vec<usize>,
}

/// When an evaluation must stop short of its fixpoint: at a deadline, past a memory limit, or
/// both. The default never stops.
///
/// Both are checked while rows are tried: the time every [`TIME_CHECK_ROWS`] rows, the memory
/// every [`MEMORY_CHECK_ROWS`] (reading it costs more).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stop {
    /// Past this instant, evaluation stops with [`EvalError::Deadline`].
    pub deadline: Option<std::time::Instant>,
    /// Past this much memory in use, evaluation stops with [`EvalError::Memory`].
    pub memory: Option<MemoryLimit>,
}

/// A memory limit, and how to read the memory in use: the caller says (the engine does no
/// I/O of its own).
#[derive(Clone, Copy, Debug)]
pub struct MemoryLimit {
    /// The most memory in use, in bytes.
    pub max_bytes: u64,
    /// Reads the memory in use, in bytes; `None` when it cannot be known, and the limit is
    /// then not enforced.
    pub in_use: fn() -> Option<u64>,
}

/// How many rows are tried between two looks at the clock.
pub const TIME_CHECK_ROWS: u32 = 1 << 16;

/// How many rows are tried between two looks at the memory in use (a multiple of
/// [`TIME_CHECK_ROWS`]).
pub const MEMORY_CHECK_ROWS: u32 = 1 << 20;

impl Stop {
    /// Whether anything can stop an evaluation.
    fn is_set(&self) -> bool {
        self.deadline.is_some() || self.memory.is_some()
    }

    /// Why evaluation must stop now, if it must: the deadline has passed, or (with
    /// `memory`) the memory in use is over the limit.
    fn reached(&self, memory: bool) -> Option<EvalError> {
        if self.deadline.is_some_and(|d| std::time::Instant::now() > d) {
            return Some(EvalError::Deadline);
        }
        let limit = self.memory.filter(|_| memory)?;
        let used = (limit.in_use)()?;
        (used > limit.max_bytes).then_some(EvalError::Memory {
            used,
            limit: limit.max_bytes,
        })
    }
}

/// Limits that keep a runaway program from exhausting memory: a memory budget counted in rows
/// and terms, and a budget on the size of one term (a term twice as large each step costs
/// the term store one entry, but printing it or building it as a tree doubles every time).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most rows in one relation.
    pub max_rows: usize,
    /// Most rows in all relations together.
    pub max_total_rows: usize,
    /// Most distinct ground terms.
    pub max_terms: usize,
    /// Most symbols in one term written out ([`TermPool::size`]).
    pub max_term_size: u32,
    /// Deepest nesting of one term ([`TermPool::depth`]).
    pub max_term_depth: u32,
}

/// The default [`Limits::max_term_size`]: a term of 100,000 symbols prints to about half a
/// megabyte; the published games' largest have a few dozen.
pub const MAX_TERM_SIZE: u32 = 100_000;

/// The default [`Limits::max_term_depth`]: well within what the KIF reader accepts
/// ([`ggp_gdl::kif::MAX_DEPTH`]), so that every term an engine builds can be sent in a message
/// and read back.
pub const MAX_TERM_DEPTH: u32 = ggp_gdl::kif::MAX_DEPTH as u32 / 2;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 20_000_000,
            max_total_rows: 50_000_000,
            max_terms: 20_000_000,
            max_term_size: MAX_TERM_SIZE,
            max_term_depth: MAX_TERM_DEPTH,
        }
    }
}

/// Where a scan step reads rows from.
#[derive(Clone, Debug)]
enum Source {
    /// Every row.
    All,
    /// Only the rows the previous round added.
    Delta,
    /// The rows of an index chain, keyed by these patterns (ground when the step runs).
    Index { index: usize, keys: Vec<Pat> },
}

#[derive(Clone, Debug)]
enum Step {
    Scan {
        rel: RelId,
        pats: Vec<Pat>,
        source: Source,
    },
    Neg {
        rel: RelId,
        pats: Vec<Pat>,
    },
    Distinct(Pat, Pat),
}

/// A compiled rule body.
#[derive(Clone, Debug)]
struct Plan {
    steps: Vec<Step>,
}

/// A rule and its plans. Plans are made the first time they are needed, when the relations
/// they read hold typical contents, so that join order can follow relation sizes.
#[derive(Clone, Debug)]
struct CompiledRule {
    spec: RuleSpec,
    /// The relations of the rule's stratum.
    own: Vec<RelId>,
    /// The plan for a full evaluation.
    full: Option<Plan>,
    /// For each body literal on a relation of the rule's own stratum: its position, and the
    /// plan that reads only that literal's delta.
    deltas: Vec<(usize, Option<Plan>)>,
}

const UNBOUND: GTerm = GTerm::MAX;

/// The least number of matching rows assumed per probe of a volatile relation when ordering
/// joins: enough that a static relation keyed down to a row or two goes first.
const VOLATILE_MIN_ESTIMATE: f64 = 8.0;

/// Relations, rules and strata, with the term store they share.
#[derive(Clone)]
pub struct Evaluator {
    /// The term store.
    pub pool: TermPool,
    relations: Vec<Relation>,
    /// Relations whose contents change between evaluations (see [`Evaluator::mark_volatile`]).
    volatile: Vec<bool>,
    rules: Vec<CompiledRule>,
    strata: Vec<Stratum>,
    /// For each relation, the row range that the current round reads as its delta.
    delta: Vec<(usize, usize)>,
    limits: Limits,
    /// Time spent in each rule's plans, when profiling is on.
    profile: Option<Vec<std::time::Duration>>,
    /// Head rows derived in the current round, flattened, with their relation.
    pending: Vec<(RelId, usize)>,
    pending_terms: Vec<GTerm>,
    binds: Vec<GTerm>,
    trail: Vec<u16>,
    key_scratch: Vec<GTerm>,
    /// When evaluation must stop (checked every few thousand rows tried), and why it has.
    stop: Stop,
    stopped: Option<EvalError>,
    /// Rows tried while a stop condition was set (wrapping).
    work: u32,
    /// Rows in all relations together.
    total_rows: usize,
}

impl Evaluator {
    /// Builds an engine. `arities[i]` is the arity of relation `RelId(i)`. Each stratum lists
    /// the rules defining its relations; strata must come in dependency order.
    pub fn new(
        pool: TermPool,
        arities: &[usize],
        rules: Vec<RuleSpec>,
        strata: Vec<Stratum>,
        limits: Limits,
    ) -> Evaluator {
        let mut engine = Evaluator {
            pool,
            relations: arities.iter().map(|&a| Relation::new(a)).collect(),
            volatile: vec![false; arities.len()],
            rules: Vec::new(),
            strata: Vec::new(),
            delta: vec![(0, 0); arities.len()],
            limits,
            profile: None,
            pending: Vec::new(),
            pending_terms: Vec::new(),
            stop: Stop::default(),
            stopped: None,
            work: 0,
            total_rows: 0,
            binds: Vec::new(),
            trail: Vec::new(),
            key_scratch: Vec::new(),
        };
        let mut own_rels: Vec<&[RelId]> = vec![&[]; rules.len()];
        for s in &strata {
            for &r in &s.rules {
                own_rels[r] = &s.rels;
            }
        }
        for (r, spec) in rules.into_iter().enumerate() {
            let deltas = (0..spec.body.len())
                .filter(
                    |&i| matches!(&spec.body[i], BodyLit::Pos(rel, _) if own_rels[r].contains(rel)),
                )
                .map(|i| (i, None))
                .collect();
            let n = spec.n_vars;
            engine.rules.push(CompiledRule {
                spec,
                own: own_rels[r].to_vec(),
                full: None,
                deltas,
            });
            if engine.binds.len() < n {
                engine.binds.resize(n, UNBOUND);
            }
        }
        engine.strata = strata;
        engine
    }

    /// The relation `rel`.
    pub fn relation(&self, rel: RelId) -> &Relation {
        &self.relations[rel.0 as usize]
    }

    /// The strata, in evaluation order.
    pub fn strata(&self) -> &[Stratum] {
        &self.strata
    }

    /// Changes the size limits for later evaluations.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Says that `rel` is refilled between evaluations (a game state's facts and what depends
    /// on them), so its size when a plan is made says little about its size later.
    pub fn mark_volatile(&mut self, rel: RelId) {
        self.volatile[rel.0 as usize] = true;
    }

    /// Empties `rel`.
    pub fn clear(&mut self, rel: RelId) {
        let relation = &mut self.relations[rel.0 as usize];
        self.total_rows -= relation.len();
        relation.clear();
    }

    /// Adds a row to `rel`; returns whether it was new.
    pub fn insert(&mut self, rel: RelId, row: &[GTerm]) -> bool {
        let new = self.relations[rel.0 as usize].insert(row, &self.pool);
        self.total_rows += usize::from(new);
        new
    }

    /// Orders a rule body into a plan. With `delta = Some(i)`, body literal `i` goes first and
    /// reads only the previous round's new rows.
    fn compile(&mut self, spec: &RuleSpec, own: &[RelId], delta: Option<usize>) -> Plan {
        let mut bound = vec![false; spec.n_vars];
        let mut done = vec![false; spec.body.len()];
        let mut steps = Vec::new();
        if let Some(i) = delta {
            let BodyLit::Pos(rel, pats) = &spec.body[i] else {
                unreachable!("delta literals are positive");
            };
            steps.push(Step::Scan {
                rel: *rel,
                pats: pats.clone(),
                source: Source::Delta,
            });
            pats.iter().for_each(|p| mark_bound(p, &mut bound));
            done[i] = true;
        }
        loop {
            // Filters whose variables are all bound go as early as possible.
            for (i, lit) in spec.body.iter().enumerate() {
                if done[i] {
                    continue;
                }
                match lit {
                    BodyLit::Neg(rel, pats) if pats.iter().all(|p| is_bound(p, &bound)) => {
                        steps.push(Step::Neg {
                            rel: *rel,
                            pats: pats.clone(),
                        });
                        done[i] = true;
                    }
                    BodyLit::Distinct(a, b) if is_bound(a, &bound) && is_bound(b, &bound) => {
                        steps.push(Step::Distinct(a.clone(), b.clone()));
                        done[i] = true;
                    }
                    _ => {}
                }
            }
            // Then the positive literal expected to match the fewest rows per probe.
            let mut best: Option<(usize, f64)> = None;
            for (i, lit) in spec.body.iter().enumerate() {
                let BodyLit::Pos(rel, pats) = lit else {
                    continue;
                };
                if done[i] {
                    continue;
                }
                let estimate = self.estimate(*rel, pats, &bound, own.contains(rel));
                if best.is_none_or(|(_, e)| estimate < e) {
                    best = Some((i, estimate));
                }
            }
            let best = best.map(|(i, _)| i);
            let Some(i) = best else {
                break;
            };
            let BodyLit::Pos(rel, pats) = &spec.body[i] else {
                unreachable!()
            };
            let mut ispec = IndexSpec {
                shapes: Vec::new(),
                keys: Vec::new(),
            };
            let mut keys = Vec::new();
            index_of(pats, &bound, &mut ispec, &mut keys);
            let source = if ispec.keys.is_empty() && ispec.shapes.is_empty() {
                Source::All
            } else {
                let index = self.relations[rel.0 as usize].add_index(ispec, &self.pool);
                Source::Index { index, keys }
            };
            steps.push(Step::Scan {
                rel: *rel,
                pats: pats.clone(),
                source,
            });
            pats.iter().for_each(|p| mark_bound(p, &mut bound));
            done[i] = true;
        }
        debug_assert!(done.iter().all(|&d| d), "unsafe rule reached the engine");
        Plan { steps }
    }

    /// The expected number of rows of `rel` that match `pats` per probe, given which variables
    /// are bound: rows with the right shapes divided by the number of distinct keys. A volatile
    /// relation, or one still being filled, may be nearly empty when the plan is made, so its
    /// estimate is at least [`VOLATILE_MIN_ESTIMATE`].
    fn estimate(&self, rel: RelId, pats: &[Pat], bound: &[bool], growing: bool) -> f64 {
        let relation = &self.relations[rel.0 as usize];
        let floor = if growing || self.volatile[rel.0 as usize] {
            VOLATILE_MIN_ESTIMATE
        } else {
            0.0
        };
        let mut spec = IndexSpec {
            shapes: Vec::new(),
            keys: Vec::new(),
        };
        index_of(pats, bound, &mut spec, &mut Vec::new());
        if spec.shapes.is_empty() && spec.keys.is_empty() {
            return (relation.len() as f64).max(floor);
        }
        let (matching, distinct) = relation.selectivity(&spec, &self.pool);
        let estimate = (matching as f64 / distinct.max(1) as f64).max(floor);
        // A literal with every place bound is a membership test: at most one row, however
        // volatile. (`(true (step 20))` behind twenty `(bit ?b)` of two rows each ran 2^20
        // joins per state.)
        if pats.iter().all(|p| is_bound(p, bound)) {
            estimate.min(1.0)
        } else {
            estimate
        }
    }

    /// Evaluates stratum `s` to its fixpoint, adding to whatever its relations already hold.
    ///
    /// # Errors
    /// A relation or the term store outgrew the limits.
    pub fn evaluate(&mut self, s: usize) -> Result<(), EvalError> {
        let rule_ids = std::mem::take(&mut self.strata[s].rules);
        let result = self.evaluate_rules(s, &rule_ids);
        self.strata[s].rules = rule_ids;
        result
    }

    fn evaluate_rules(&mut self, s: usize, rule_ids: &[usize]) -> Result<(), EvalError> {
        let recursive = rule_ids.iter().any(|&r| !self.rules[r].deltas.is_empty());
        let rels = self.strata[s].rels.clone();
        let starts: Vec<usize> = rels.iter().map(|r| self.relation(*r).len()).collect();
        for &r in rule_ids {
            self.run_plan(r, None);
        }
        self.flush()?;
        if !recursive {
            return Ok(());
        }
        let mut from = starts;
        loop {
            let mut any = false;
            for (k, rel) in rels.iter().enumerate() {
                let len = self.relation(*rel).len();
                self.delta[rel.0 as usize] = (from[k], len);
                any |= len > from[k];
                from[k] = len;
            }
            if !any {
                return Ok(());
            }
            for &r in rule_ids {
                for d in 0..self.rules[r].deltas.len() {
                    self.run_plan(r, Some(d));
                }
            }
            self.flush()?;
        }
    }

    /// Makes evaluations stop with [`EvalError::Deadline`] once `stop.deadline` has passed
    /// and with [`EvalError::Memory`] once the memory in use exceeds `stop.memory`
    /// ([`Stop::default`]: never). An evaluation stopped this way leaves its stratum
    /// incomplete, and later evaluations fail the same way until the next `set_stop`.
    pub fn set_stop(&mut self, stop: Stop) {
        self.stop = stop;
        self.stopped = None;
    }

    /// Inserts the rows derived in this round.
    fn flush(&mut self) -> Result<(), EvalError> {
        if let Some(why) = &self.stopped {
            self.pending.clear();
            self.pending_terms.clear();
            return Err(why.clone());
        }
        let over = |what, limit: usize| EvalError::Budget {
            what,
            limit: limit as u64,
        };
        if self.pending.len() > self.limits.max_rows {
            self.pending.clear();
            self.pending_terms.clear();
            return Err(over(Budgeted::RoundRows, self.limits.max_rows));
        }
        // Terms are checked before they are stored in relations, so that no caller is ever
        // handed one past the limits.
        if let Some(e) = self.term_budget() {
            self.pending.clear();
            self.pending_terms.clear();
            return Err(e);
        }
        let mut at = 0;
        for &(rel, width) in &self.pending {
            let row = &self.pending_terms[at..at + width];
            at += width;
            let relation = &mut self.relations[rel.0 as usize];
            if relation.insert(row, &self.pool) {
                self.total_rows += 1;
            }
            if relation.len() > self.limits.max_rows {
                return Err(over(Budgeted::RelationRows, self.limits.max_rows));
            }
            if self.total_rows > self.limits.max_total_rows {
                return Err(over(Budgeted::TotalRows, self.limits.max_total_rows));
            }
        }
        self.pending.clear();
        self.pending_terms.clear();
        Ok(())
    }

    /// Which limit on terms the term store is past, if any.
    fn term_budget(&self) -> Option<EvalError> {
        let over = |what, limit: u64| Some(EvalError::Budget { what, limit });
        if self.pool.len() > self.limits.max_terms {
            return over(Budgeted::Terms, self.limits.max_terms as u64);
        }
        if self.pool.largest_size() > self.limits.max_term_size {
            return over(Budgeted::TermSize, self.limits.max_term_size.into());
        }
        if self.pool.greatest_depth() > self.limits.max_term_depth {
            return over(Budgeted::TermDepth, self.limits.max_term_depth.into());
        }
        None
    }

    /// Starts timing each rule (a little overhead per rule evaluation).
    pub fn enable_profile(&mut self) {
        self.profile = Some(vec![std::time::Duration::ZERO; self.rules.len()]);
    }

    /// The rules that took longest, slowest first, with their time and their plan, printed.
    pub fn profile_report(&self, top: usize) -> Vec<(std::time::Duration, String)> {
        let Some(times) = &self.profile else {
            return Vec::new();
        };
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(times[i]));
        order
            .into_iter()
            .take(top)
            .map(|i| (times[i], format!("{:?}", self.rules[i].full)))
            .collect()
    }

    fn run_plan(&mut self, rule: usize, delta: Option<usize>) {
        match self.profile.is_some() {
            false => self.run_plan_untimed(rule, delta),
            true => {
                let start = std::time::Instant::now();
                self.run_plan_untimed(rule, delta);
                if let Some(times) = &mut self.profile {
                    times[rule] += start.elapsed();
                }
            }
        }
    }

    fn run_plan_untimed(&mut self, rule: usize, delta: Option<usize>) {
        // A stopped evaluation runs nothing more. Planning is not timed while it reads whole
        // relations (estimates, new indexes: seconds for millions of rows on a loaded
        // machine), so the deadline and the memory limit are looked at before it too.
        if self.stopped.is_some() {
            return;
        }
        let missing = match delta {
            None => self.rules[rule].full.is_none(),
            Some(d) => self.rules[rule].deltas[d].1.is_none(),
        };
        if missing {
            if self.stop.is_set() {
                self.stopped = self.stop.reached(true);
                if self.stopped.is_some() {
                    return;
                }
            }
            let spec = self.rules[rule].spec.clone();
            let own = self.rules[rule].own.clone();
            match delta {
                None => self.rules[rule].full = Some(self.compile(&spec, &own, None)),
                Some(d) => {
                    let literal = self.rules[rule].deltas[d].0;
                    self.rules[rule].deltas[d].1 = Some(self.compile(&spec, &own, Some(literal)));
                }
            }
        }
        let compiled = &self.rules[rule];
        let plan = match delta {
            None => compiled.full.as_ref(),
            Some(d) => compiled.deltas[d].1.as_ref(),
        }
        .expect("plan compiled above");
        let mut ctx = Ctx {
            relations: &self.relations,
            pool: &mut self.pool,
            delta: &self.delta,
            binds: &mut self.binds,
            trail: &mut self.trail,
            key: &mut self.key_scratch,
            pending: &mut self.pending,
            pending_terms: &mut self.pending_terms,
            max_pending: self.limits.max_rows,
            spec: &compiled.spec,
            stop: self.stop,
            stopped: &mut self.stopped,
            work: &mut self.work,
        };
        ctx.solve(&plan.steps);
    }
}

/// The working state of one plan run.
struct Ctx<'a> {
    relations: &'a [Relation],
    pool: &'a mut TermPool,
    delta: &'a [(usize, usize)],
    binds: &'a mut Vec<GTerm>,
    trail: &'a mut Vec<u16>,
    key: &'a mut Vec<GTerm>,
    pending: &'a mut Vec<(RelId, usize)>,
    pending_terms: &'a mut Vec<GTerm>,
    /// Past this many derived rows the run stops; `flush` then reports the overflow.
    max_pending: usize,
    spec: &'a RuleSpec,
    /// When the run stops; `flush` then reports why.
    stop: Stop,
    stopped: &'a mut Option<EvalError>,
    work: &'a mut u32,
}

impl Ctx<'_> {
    fn solve(&mut self, steps: &[Step]) {
        if self.pending.len() > self.max_pending || self.stopped.is_some() {
            return;
        }
        let Some((step, rest)) = steps.split_first() else {
            self.emit();
            return;
        };
        match step {
            Step::Scan { rel, pats, source } => {
                let relation = &self.relations[rel.0 as usize];
                match source {
                    Source::All => {
                        for i in 0..relation.len() {
                            self.try_row(relation, i, pats, rest);
                        }
                    }
                    Source::Delta => {
                        let (from, to) = self.delta[rel.0 as usize];
                        for i in from..to {
                            self.try_row(relation, i, pats, rest);
                        }
                    }
                    Source::Index { index, keys } => {
                        self.key.clear();
                        for k in keys {
                            match k.find(self.binds, self.pool) {
                                Some(t) => self.key.push(t),
                                // The key term was never built, so no row can hold it.
                                None => return,
                            }
                        }
                        let hash = key_hash(self.key, relation.hasher());
                        for i in relation.probe(*index, hash) {
                            self.try_row(relation, i, pats, rest);
                        }
                    }
                }
            }
            Step::Neg { rel, pats } => {
                self.key.clear();
                for p in pats {
                    match p.find(self.binds, self.pool) {
                        Some(t) => self.key.push(t),
                        None => return self.solve(rest),
                    }
                }
                if !self.relations[rel.0 as usize].contains(self.key) {
                    self.solve(rest);
                }
            }
            Step::Distinct(a, b) => {
                if !pats_equal(a, b, self.binds, self.pool) {
                    self.solve(rest);
                }
            }
        }
    }

    fn try_row(&mut self, relation: &Relation, i: usize, pats: &[Pat], rest: &[Step]) {
        if self.stop.is_set() {
            *self.work = self.work.wrapping_add(1);
            if self.work.is_multiple_of(TIME_CHECK_ROWS) && self.stopped.is_none() {
                *self.stopped = self
                    .stop
                    .reached(self.work.is_multiple_of(MEMORY_CHECK_ROWS));
            }
        }
        let mark = self.trail.len();
        let row = relation.row(i);
        if pats
            .iter()
            .zip(row)
            .all(|(p, &t)| unify(p, t, self.binds, self.trail, self.pool))
        {
            self.solve(rest);
        }
        for v in self.trail.drain(mark..) {
            self.binds[v as usize] = UNBOUND;
        }
    }

    fn emit(&mut self) {
        let spec = self.spec;
        for p in &spec.head {
            let t = p.build(self.binds, self.pool);
            self.pending_terms.push(t);
        }
        self.pending.push((spec.head_rel, spec.head.len()));
    }
}

/// Matches a pattern against a ground term, binding variables (recorded on the trail).
fn unify(pat: &Pat, t: GTerm, binds: &mut [GTerm], trail: &mut Vec<u16>, pool: &TermPool) -> bool {
    match pat {
        Pat::Const(c) => *c == t,
        Pat::Var(v) => {
            let b = &mut binds[*v as usize];
            if *b == UNBOUND {
                *b = t;
                trail.push(*v);
                true
            } else {
                *b == t
            }
        }
        Pat::App(f, args) => {
            pool.functor(t) == *f && {
                let targs = pool.args(t);
                targs.len() == args.len()
                    && args
                        .iter()
                        .zip(targs)
                        .all(|(p, &a)| unify(p, a, binds, trail, pool))
            }
        }
    }
}

impl Pat {
    /// The stored term this pattern denotes when variable `n` is `binds[n]`, or `None` if that
    /// term was never built (so no relation can hold it).
    pub fn find(&self, binds: &[GTerm], pool: &TermPool) -> Option<GTerm> {
        match self {
            Pat::Const(c) => Some(*c),
            Pat::Var(v) => binds.get(*v as usize).copied(),
            Pat::App(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args.iter() {
                    vals.push(a.find(binds, pool)?);
                }
                pool.find_app(*f, &vals)
            }
        }
    }

    /// Builds (interning) the term this pattern denotes when variable `n` is `binds[n]`; every
    /// variable of the pattern must be bound.
    pub fn build(&self, binds: &[GTerm], pool: &mut TermPool) -> GTerm {
        match self {
            Pat::Const(c) => *c,
            Pat::Var(v) => binds[*v as usize],
            Pat::App(f, args) => {
                let vals: Vec<GTerm> = args.iter().map(|a| a.build(binds, pool)).collect();
                pool.app(*f, &vals)
            }
        }
    }
}

/// Whether two bound patterns denote the same term.
fn pats_equal(a: &Pat, b: &Pat, binds: &[GTerm], pool: &TermPool) -> bool {
    let ground = |p: &Pat| match p {
        Pat::Const(c) => Some(*c),
        Pat::Var(v) => Some(binds[*v as usize]),
        Pat::App(..) => None,
    };
    match (ground(a), ground(b)) {
        (Some(x), Some(y)) => x == y,
        (Some(x), None) => term_equals_pat(x, b, binds, pool),
        (None, Some(y)) => term_equals_pat(y, a, binds, pool),
        (None, None) => {
            let (Pat::App(f, xs), Pat::App(g, ys)) = (a, b) else {
                unreachable!("non-ground patterns are applications")
            };
            f == g
                && xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys.iter())
                    .all(|(x, y)| pats_equal(x, y, binds, pool))
        }
    }
}

fn term_equals_pat(t: GTerm, p: &Pat, binds: &[GTerm], pool: &TermPool) -> bool {
    match p {
        Pat::Const(c) => *c == t,
        Pat::Var(v) => binds[*v as usize] == t,
        Pat::App(f, args) => {
            pool.functor(t) == *f
                && pool.args(t).len() == args.len()
                && args
                    .iter()
                    .zip(pool.args(t))
                    .all(|(a, &u)| term_equals_pat(u, a, binds, pool))
        }
    }
}

fn mark_bound(p: &Pat, bound: &mut [bool]) {
    match p {
        Pat::Const(_) => {}
        Pat::Var(v) => bound[*v as usize] = true,
        Pat::App(_, args) => args.iter().for_each(|a| mark_bound(a, bound)),
    }
}

fn is_bound(p: &Pat, bound: &[bool]) -> bool {
    match p {
        Pat::Const(_) => true,
        Pat::Var(v) => bound[*v as usize],
        Pat::App(_, args) => args.iter().all(|a| is_bound(a, bound)),
    }
}

/// The index a literal's arguments call for, given which variables are bound: every function
/// term's shape, and every maximal bound sub-pattern as a key (with the pattern that computes
/// its value at run time).
fn index_of(pats: &[Pat], bound: &[bool], spec: &mut IndexSpec, keys: &mut Vec<Pat>) {
    fn go(p: &Pat, path: Path, bound: &[bool], spec: &mut IndexSpec, keys: &mut Vec<Pat>) {
        if is_bound(p, bound) {
            spec.keys.push(path);
            keys.push(p.clone());
            return;
        }
        if let Pat::App(f, args) = p {
            spec.shapes.push((path.clone(), *f, args.len() as u8));
            for (i, a) in args.iter().enumerate() {
                let mut child = path.clone();
                child.steps.push(i as u8);
                go(a, child, bound, spec, keys);
            }
        }
    }
    for (c, p) in pats.iter().enumerate() {
        let path = Path {
            column: c as u8,
            steps: Vec::new(),
        };
        go(p, path, bound, spec, keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transitive closure, written by hand:
    /// `(<= (path ?x ?y) (edge ?x ?y))`, `(<= (path ?x ?z) (path ?x ?y) (edge ?y ?z))`,
    /// `(<= (unreached ?x ?y) (node ?x) (node ?y) (not (path ?x ?y)) (distinct ?x ?y))`.
    #[test]
    fn closure_negation_and_distinct() {
        let mut pool = TermPool::default();
        let n: Vec<GTerm> = (0..5)
            .map(|i| pool.constant(Sym::new(&i.to_string())))
            .collect();
        let (edge, node, path, unreached) = (RelId(0), RelId(1), RelId(2), RelId(3));
        let v = Pat::Var;
        let rules = vec![
            RuleSpec {
                head_rel: path,
                head: vec![v(0), v(1)],
                body: vec![BodyLit::Pos(edge, vec![v(0), v(1)])],
                n_vars: 2,
            },
            RuleSpec {
                head_rel: path,
                head: vec![v(0), v(2)],
                body: vec![
                    BodyLit::Pos(path, vec![v(0), v(1)]),
                    BodyLit::Pos(edge, vec![v(1), v(2)]),
                ],
                n_vars: 3,
            },
            RuleSpec {
                head_rel: unreached,
                head: vec![v(0), v(1)],
                body: vec![
                    BodyLit::Distinct(v(0), v(1)),
                    BodyLit::Neg(path, vec![v(0), v(1)]),
                    BodyLit::Pos(node, vec![v(0)]),
                    BodyLit::Pos(node, vec![v(1)]),
                ],
                n_vars: 2,
            },
        ];
        let strata = vec![
            Stratum {
                rels: vec![edge],
                rules: vec![],
            },
            Stratum {
                rels: vec![node],
                rules: vec![],
            },
            Stratum {
                rels: vec![path],
                rules: vec![0, 1],
            },
            Stratum {
                rels: vec![unreached],
                rules: vec![2],
            },
        ];
        let mut engine = Evaluator::new(pool, &[2, 1, 2, 2], rules, strata, Limits::default());
        // A chain 0 -> 1 -> 2 -> 3 and an isolated node 4.
        for i in 0..3 {
            engine.insert(edge, &[n[i], n[i + 1]]);
        }
        for &x in &n {
            engine.insert(node, &[x]);
        }
        for s in 0..4 {
            engine.evaluate(s).unwrap();
        }
        assert_eq!(engine.relation(path).len(), 6);
        assert!(engine.relation(path).contains(&[n[0], n[3]]));
        // 5 * 4 ordered pairs of distinct nodes, minus the 6 reachable ones.
        assert_eq!(engine.relation(unreached).len(), 14);
        assert!(engine.relation(unreached).contains(&[n[3], n[0]]));
    }

    /// `(<= (pair ?x ?y) (node ?x) (node ?y))` over `n` nodes, not yet evaluated: the engine
    /// and the `pair` relation.
    fn pairs(n: usize) -> (Evaluator, RelId) {
        let mut pool = TermPool::default();
        let nodes: Vec<GTerm> = (0..n)
            .map(|i| pool.constant(Sym::new(&format!("n{i}"))))
            .collect();
        let (node, pair) = (RelId(0), RelId(1));
        let rules = vec![RuleSpec {
            head_rel: pair,
            head: vec![Pat::Var(0), Pat::Var(1)],
            body: vec![
                BodyLit::Pos(node, vec![Pat::Var(0)]),
                BodyLit::Pos(node, vec![Pat::Var(1)]),
            ],
            n_vars: 2,
        }];
        let strata = vec![Stratum {
            rels: vec![pair],
            rules: vec![0],
        }];
        let mut engine = Evaluator::new(pool, &[1, 2], rules, strata, Limits::default());
        for &x in &nodes {
            engine.insert(node, &[x]);
        }
        (engine, pair)
    }

    /// [`pairs`] over enough nodes that more than [`MEMORY_CHECK_ROWS`] rows are tried, with
    /// the memory in use read by `in_use`.
    fn pairs_with_memory(in_use: fn() -> Option<u64>) -> (Evaluator, Result<(), EvalError>) {
        let (mut engine, _) = pairs(1100);
        engine.set_stop(Stop {
            deadline: None,
            memory: Some(MemoryLimit {
                max_bytes: 1 << 30,
                in_use,
            }),
        });
        let result = engine.evaluate(0);
        (engine, result)
    }

    /// Past the deadline nothing more is planned or run: planning reads whole relations
    /// (estimates, indexes), untimed, and made grounding overrun its budget by seconds.
    #[test]
    fn nothing_is_planned_past_the_deadline() {
        let (mut engine, pair) = pairs(100);
        let deadline = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        engine.set_stop(Stop {
            deadline: Some(deadline),
            memory: None,
        });
        assert_eq!(engine.evaluate(0), Err(EvalError::Deadline));
        assert!(engine.rules[0].full.is_none());
        assert_eq!(engine.relation(pair).len(), 0);
        // With the deadline lifted, it plans and runs.
        engine.set_stop(Stop::default());
        assert_eq!(engine.evaluate(0), Ok(()));
        assert_eq!(engine.relation(pair).len(), 100 * 100);
    }

    #[test]
    fn evaluation_stops_past_the_memory_limit() {
        let (mut engine, result) = pairs_with_memory(|| Some(3 << 30));
        assert_eq!(
            result,
            Err(EvalError::Memory {
                used: 3 << 30,
                limit: 1 << 30
            })
        );
        assert_eq!(
            result.as_ref().unwrap_err().to_string(),
            "evaluation stopped: 3221.2 MB of memory in use, over the limit of 1073.7 MB"
        );
        // Stopped in the middle: the round's rows were dropped, and it stays stopped.
        assert_eq!(engine.relation(RelId(1)).len(), 0);
        assert_eq!(engine.evaluate(0), result);
        // Under the limit, or when the memory in use cannot be read, it runs to the end.
        for in_use in [|| Some(1 << 20), || None] {
            let (engine, result) = pairs_with_memory(in_use);
            assert_eq!(result, Ok(()));
            assert_eq!(engine.relation(RelId(1)).len(), 1100 * 1100);
        }
    }
}
