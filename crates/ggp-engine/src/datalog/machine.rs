//! The Datalog engine as a [`StateMachine`].
//!
//! Static relations are computed once, when the machine is built. For a state, the machine
//! loads its facts into `true` and evaluates the strata that depend on `true` (legal, goal,
//! terminal and their helpers); it remembers which state is loaded, so asking for terminal,
//! legal moves and goals of one state costs one evaluation. For a joint move it loads `does`
//! and evaluates only the strata that depend on `does`.
//!
//! **Invariant:** states and moves are ids in this machine's term store. They are meaningful
//! only to this machine and to clones made from it before they were created.

use std::time::{Duration, Instant};

use crate::machine::{EvalError, MachineError, StateMachine};
use ggp_gdl::gdl::{Description, GTerm, Sym, Term};

use super::eval::{Evaluator, Limits, RelId, Stop};
use super::lower::{Layer, LowerError, lower_with};
use super::magic::Demand;

/// The most time the static relations may take to compute in full before they are computed
/// on demand instead. In the 314 sheets of the corpus the longest takes 0.4 s (a two-thirds
/// game's arithmetic tables); one (`laikLee_hex`'s lists of up to 25 cells) took 37 s to
/// outgrow the row limits, and 3 ms on demand.
const PROBE_TIME: Duration = Duration::from_secs(1);

/// A state: the ids of its true facts, sorted and without repeats.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct DatalogState(Vec<GTerm>);

impl DatalogState {
    /// The facts' ids.
    pub fn facts(&self) -> &[GTerm] {
        &self.0
    }
}

/// Why a machine could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// The rules could not be lowered.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// Computing the static relations failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A role is not a ground term.
    #[error("role {0} is not a ground term")]
    BadRole(String),
}

/// A game run by the bottom-up Datalog engine.
#[derive(Clone)]
pub struct DatalogMachine {
    engine: Evaluator,
    roles: Vec<Term>,
    role_ids: Vec<GTerm>,
    state_strata: Vec<usize>,
    action_strata: Vec<usize>,
    state_rels: Vec<RelId>,
    action_rels: Vec<RelId>,
    true_rel: RelId,
    does_rel: RelId,
    legal_rel: RelId,
    goal_rel: RelId,
    terminal_rel: RelId,
    next_rel: RelId,
    /// `sees`, in a GDL-II game.
    sees_rel: Option<RelId>,
    initial: DatalogState,
    /// The state whose facts the state layer holds.
    loaded: Option<DatalogState>,
    /// The joint move whose `does` facts the action layer holds (for the loaded state).
    loaded_joint: Option<Vec<GTerm>>,
    /// The action strata that `sees` depends on (evaluated alone for percepts).
    percept_strata: Vec<usize>,
    /// The joint move whose percepts the action layer holds (all of it or only
    /// `percept_strata`).
    seen_joint: Option<Vec<GTerm>>,
    /// Goal value of each term id, parsed once (`None`: not a number from 0 to 100).
    goal_cache: Vec<Option<Option<u8>>>,
    row_scratch: Vec<GTerm>,
}

impl DatalogMachine {
    /// Builds the machine and computes the static relations and the initial state.
    ///
    /// # Errors
    /// The rules cannot be lowered, or the static relations outgrow the engine's limits.
    pub fn new(description: &Description) -> Result<DatalogMachine, BuildError> {
        Self::with_limits(description, Limits::default())
    }

    /// As [`new`](Self::new), with explicit size limits.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_limits(
        description: &Description,
        limits: Limits,
    ) -> Result<DatalogMachine, BuildError> {
        // Static relations are first computed in full, within a tenth of the limits and
        // `PROBE_TIME`; if they outgrow that, they are computed on demand too.
        let probe = Limits {
            max_rows: limits.max_rows / 10,
            max_total_rows: limits.max_total_rows / 10,
            max_terms: limits.max_terms / 10,
            ..limits
        };
        match Self::build(description, limits, Demand::Dynamic, Some(probe)) {
            Err(BuildError::Eval(_)) => Self::build(description, limits, Demand::All, None),
            built => built,
        }
    }

    /// As [`with_limits`](Self::with_limits), with the relations that `demand` selects
    /// computed on demand (magic sets), and no retry.
    #[cfg(test)]
    pub(crate) fn with_demand(
        description: &Description,
        limits: Limits,
        demand: Demand,
    ) -> Result<DatalogMachine, BuildError> {
        Self::build(description, limits, demand, None)
    }

    /// Builds the machine; `static_limits`, if given, bound the static evaluation instead of
    /// `limits`.
    fn build(
        description: &Description,
        limits: Limits,
        demand: Demand,
        static_limits: Option<Limits>,
    ) -> Result<DatalogMachine, BuildError> {
        let mut lowered = lower_with(description.rules(), demand)?;
        let rel =
            |l: &super::lower::Lowered, s, a| l.rel(s, a).expect("keyword relations always exist");
        let true_rel = rel(&lowered, Sym::TRUE, 1);
        let does_rel = rel(&lowered, Sym::DOES, 2);
        let legal_rel = rel(&lowered, Sym::LEGAL, 2);
        let goal_rel = rel(&lowered, Sym::GOAL, 2);
        let terminal_rel = rel(&lowered, Sym::TERMINAL, 0);
        let next_rel = rel(&lowered, Sym::NEXT, 1);
        let init_rel = rel(&lowered, Sym::INIT, 1);
        let sees_rel = lowered.rel(Sym::SEES, 2).filter(|_| description.has_sees());
        let mut role_ids = Vec::new();
        for role in description.roles() {
            let id = lowered
                .pool
                .intern(role)
                .ok_or_else(|| BuildError::BadRole(role.to_string()))?;
            role_ids.push(id);
        }
        let sees_needs = sees_rel.map(|sees| lowered.needed_by([sees]));
        let mut layers = Vec::new();
        let mut strata = Vec::new();
        for (stratum, layer) in lowered.strata.drain(..) {
            strata.push(stratum);
            layers.push(layer);
        }
        let in_layer = |want: Layer| -> Vec<usize> {
            (0..layers.len()).filter(|&i| layers[i] == want).collect()
        };
        let mut engine = Evaluator::new(
            lowered.pool,
            &lowered.arities,
            lowered.rules,
            strata,
            static_limits.unwrap_or(limits),
        );
        if static_limits.is_some() {
            engine.set_stop(Stop {
                deadline: Instant::now().checked_add(PROBE_TIME),
                memory: None,
            });
        }
        for s in in_layer(Layer::Static) {
            engine.evaluate(s)?;
        }
        engine.set_stop(Stop::default());
        engine.set_limits(limits);
        let state_strata = in_layer(Layer::State);
        let action_strata = in_layer(Layer::Action);
        let rels_of = |ids: &[usize]| -> Vec<RelId> {
            ids.iter()
                .flat_map(|&s| engine.strata()[s].rels.iter().copied())
                .collect()
        };
        let state_rels = rels_of(&state_strata);
        let action_rels = rels_of(&action_strata);
        let percept_strata: Vec<usize> = match &sees_needs {
            Some(needs) => action_strata
                .iter()
                .copied()
                .filter(|&s| {
                    engine.strata()[s]
                        .rels
                        .iter()
                        .any(|r| needs.get(r.0 as usize).copied().unwrap_or(false))
                })
                .collect(),
            None => Vec::new(),
        };
        for &r in state_rels
            .iter()
            .chain(&action_rels)
            .chain([&true_rel, &does_rel])
        {
            engine.mark_volatile(r);
        }
        let mut initial: Vec<GTerm> = engine.relation(init_rel).rows().map(|r| r[0]).collect();
        initial.sort_unstable();
        initial.dedup();
        Ok(DatalogMachine {
            engine,
            roles: description.roles().to_vec(),
            role_ids,
            state_strata,
            action_strata,
            state_rels,
            action_rels,
            true_rel,
            does_rel,
            legal_rel,
            goal_rel,
            terminal_rel,
            next_rel,
            sees_rel,
            initial: DatalogState(initial),
            loaded: None,
            loaded_joint: None,
            percept_strata,
            seen_joint: None,
            goal_cache: Vec::new(),
            row_scratch: Vec::new(),
        })
    }

    /// The id of a move term, made if the machine has not met it yet (for a joint move given
    /// as terms by another engine). `None` for a term that is not ground.
    pub fn intern_move(&mut self, term: &Term) -> Option<GTerm> {
        self.engine.pool.intern(term)
    }

    /// The underlying engine, for profiling.
    pub fn evaluator_mut(&mut self) -> &mut Evaluator {
        &mut self.engine
    }

    /// Makes the state layer hold `state`.
    fn load(&mut self, state: &DatalogState) -> Result<(), MachineError> {
        if self.loaded.as_ref() == Some(state) {
            return Ok(());
        }
        self.loaded = None;
        self.loaded_joint = None;
        self.seen_joint = None;
        for &r in &self.state_rels {
            self.engine.clear(r);
        }
        self.engine.clear(self.true_rel);
        for &fact in &state.0 {
            self.engine.insert(self.true_rel, &[fact]);
        }
        for &s in &self.state_strata {
            self.engine.evaluate(s).map_err(engine_error)?;
        }
        self.loaded = Some(state.clone());
        Ok(())
    }

    /// Makes the action layer hold `joint` played in `state`.
    fn load_joint(&mut self, state: &DatalogState, joint: &[GTerm]) -> Result<(), MachineError> {
        self.load(state)?;
        if self.loaded_joint.as_deref() == Some(joint) {
            return Ok(());
        }
        self.set_does(joint);
        for &s in &self.action_strata {
            self.engine.evaluate(s).map_err(engine_error)?;
        }
        self.loaded_joint = Some(joint.to_vec());
        self.seen_joint = Some(joint.to_vec());
        Ok(())
    }

    /// Makes the action layer hold at least the percepts of `joint` played in `state`
    /// (evaluating only what `sees` depends on, unless the whole layer is already loaded).
    fn load_percepts(&mut self, state: &DatalogState, joint: &[GTerm]) -> Result<(), MachineError> {
        self.load(state)?;
        if self.seen_joint.as_deref() == Some(joint) {
            return Ok(());
        }
        self.set_does(joint);
        let strata = std::mem::take(&mut self.percept_strata);
        let evaluated = strata
            .iter()
            .try_for_each(|&s| self.engine.evaluate(s).map_err(engine_error));
        self.percept_strata = strata;
        evaluated?;
        self.seen_joint = Some(joint.to_vec());
        Ok(())
    }

    /// Empties the action layer and makes `does` hold `joint`.
    fn set_does(&mut self, joint: &[GTerm]) {
        self.loaded_joint = None;
        self.seen_joint = None;
        for &r in &self.action_rels {
            self.engine.clear(r);
        }
        self.engine.clear(self.does_rel);
        for (i, &mv) in joint.iter().enumerate() {
            let role = self.role_ids[i];
            self.engine.insert(self.does_rel, &[role, mv]);
        }
    }

    fn goal_value(&mut self, t: GTerm) -> Option<u8> {
        if let Some(Some(v)) = self.goal_cache.get(t.index()) {
            return *v;
        }
        let pool = &self.engine.pool;
        let v = if pool.args(t).is_empty() {
            pool.functor(t)
                .name()
                .parse::<u8>()
                .ok()
                .filter(|&v| v <= 100)
        } else {
            None
        };
        if self.goal_cache.len() <= t.index() {
            self.goal_cache.resize(t.index() + 1, None);
        }
        self.goal_cache[t.index()] = Some(v);
        v
    }
}

fn engine_error(e: EvalError) -> MachineError {
    MachineError::Engine(e.into())
}

impl StateMachine for DatalogMachine {
    type State = DatalogState;
    type Move = GTerm;

    fn roles(&self) -> &[Term] {
        &self.roles
    }

    fn initial_state(&self) -> DatalogState {
        self.initial.clone()
    }

    fn legal_moves_into(
        &mut self,
        state: &DatalogState,
        role: usize,
        out: &mut Vec<GTerm>,
    ) -> Result<(), MachineError> {
        self.load(state)?;
        let role_id = self.role_ids[role];
        out.extend(
            self.engine
                .relation(self.legal_rel)
                .rows()
                .filter(|r| r[0] == role_id)
                .map(|r| r[1]),
        );
        Ok(())
    }

    fn is_terminal(&mut self, state: &DatalogState) -> Result<bool, MachineError> {
        self.load(state)?;
        Ok(!self.engine.relation(self.terminal_rel).is_empty())
    }

    fn goal_values(&mut self, state: &DatalogState, role: usize) -> Result<Vec<u8>, MachineError> {
        self.load(state)?;
        let role_id = self.role_ids[role];
        let terms: Vec<GTerm> = self
            .engine
            .relation(self.goal_rel)
            .rows()
            .filter(|r| r[0] == role_id)
            .map(|r| r[1])
            .collect();
        let mut values: Vec<u8> = terms
            .into_iter()
            .filter_map(|t| self.goal_value(t))
            .collect();
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    fn next_state_unchecked(
        &mut self,
        state: &DatalogState,
        joint: &[GTerm],
    ) -> Result<DatalogState, MachineError> {
        if joint.len() != self.role_ids.len() {
            return Err(MachineError::JointMoveSize {
                expected: self.role_ids.len(),
                found: joint.len(),
            });
        }
        self.load_joint(state, joint)?;
        let mut next = std::mem::take(&mut self.row_scratch);
        next.clear();
        next.extend(self.engine.relation(self.next_rel).rows().map(|r| r[0]));
        next.sort_unstable();
        next.dedup();
        let state = DatalogState(next.clone());
        self.row_scratch = next;
        Ok(state)
    }

    fn move_term(&self, mv: GTerm) -> Term {
        self.engine.pool.term(mv)
    }

    fn has_percepts(&self) -> bool {
        self.sees_rel.is_some()
    }

    fn percepts_into(
        &mut self,
        state: &DatalogState,
        joint: &[GTerm],
        role: usize,
        out: &mut Vec<Term>,
    ) -> Result<(), MachineError> {
        out.clear();
        let Some(sees) = self.sees_rel else {
            return Ok(());
        };
        if joint.len() != self.role_ids.len() {
            return Err(MachineError::JointMoveSize {
                expected: self.role_ids.len(),
                found: joint.len(),
            });
        }
        self.load_percepts(state, joint)?;
        let role_id = self.role_ids[role];
        let mut ids: Vec<GTerm> = self
            .engine
            .relation(sees)
            .rows()
            .filter(|r| r[0] == role_id)
            .map(|r| r[1])
            .collect();
        ids.sort_unstable();
        ids.dedup();
        out.extend(ids.into_iter().map(|t| self.engine.pool.term(t)));
        out.sort();
        Ok(())
    }

    fn find_move(&self, term: &Term) -> Option<GTerm> {
        self.engine.pool.find(term)
    }

    fn state_terms(&self, state: &DatalogState) -> Vec<Term> {
        state.0.iter().map(|&t| self.engine.pool.term(t)).collect()
    }

    fn fact_ids_into(&self, state: &DatalogState, out: &mut Vec<u32>) -> bool {
        out.clear();
        out.extend(state.0.iter().map(|t| t.index() as u32));
        true
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<DatalogState, MachineError> {
        let mut ids = Vec::with_capacity(facts.len());
        for fact in facts {
            let id = self
                .engine
                .pool
                .intern(fact)
                .ok_or_else(|| MachineError::UnknownFact {
                    fact: fact.to_string(),
                })?;
            ids.push(id);
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(DatalogState(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::EngineFailure;

    const TICTACTOE: &str = include_str!("../../../../rules/ticTacToe.kif");

    fn machine(text: &str) -> DatalogMachine {
        let description = Description::from_text(text).unwrap();
        DatalogMachine::new(&description).unwrap()
    }

    fn printed(m: &DatalogMachine, moves: &[GTerm]) -> Vec<String> {
        let mut v: Vec<String> = moves.iter().map(|&t| m.move_term(t).to_string()).collect();
        v.sort();
        v
    }

    /// `laikLee_hex` builds lists of up to 25 cells in a static relation: computed in full it
    /// ran 37 s into the row limits before the machine fell back to computing it on demand,
    /// so a player was not ready within any usual start clock. The probe now stops at
    /// `PROBE_TIME`.
    #[test]
    fn static_relations_too_slow_to_compute_in_full_are_computed_on_demand() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/games/base/laikLee_hex.kif"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let started = std::time::Instant::now();
        let mut m = machine(&text);
        let built = started.elapsed();
        assert!(built < Duration::from_secs(15), "built in {built:?}");
        let mut state = m.initial_state();
        for _ in 0..6 {
            assert!(!m.is_terminal(&state).unwrap());
            let joint: Vec<GTerm> = (0..2)
                .map(|r| m.legal_moves(&state, r).unwrap()[0])
                .collect();
            state = m.next_state(&state, &joint).unwrap();
        }
        assert_eq!(m.state_terms(&state).len(), 26);
    }

    #[test]
    fn tictactoe_first_moves() {
        let mut m = machine(TICTACTOE);
        let s0 = m.initial_state();
        assert_eq!(m.state_terms(&s0).len(), 10);
        assert!(!m.is_terminal(&s0).unwrap());
        let x = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(x.len(), 9);
        let o = m.legal_moves(&s0, 1).unwrap();
        assert_eq!(printed(&m, &o), ["noop"]);
        let mark = m
            .find_move(&ggp_gdl::gdl::parse_term("(mark 2 2)").unwrap())
            .unwrap();
        let noop = m.legal_moves(&s0, 1).unwrap()[0];
        let s1 = m.next_state(&s0, &[mark, noop]).unwrap();
        assert_eq!(m.legal_moves(&s1, 1).unwrap().len(), 8);
        assert!(m.next_state(&s1, &[mark, noop]).is_err());
        // The same state, rebuilt from its facts.
        let facts = m.state_terms(&s1);
        assert_eq!(m.state_from_terms(&facts).unwrap(), s1);
        let var = ggp_gdl::gdl::parse_term("(cell ?x 1 b)").unwrap();
        assert!(matches!(
            m.state_from_terms(&[var]),
            Err(MachineError::UnknownFact { .. })
        ));
    }

    #[test]
    fn recursion_a_top_down_prover_loops_on() {
        // As in the corpus's nim-recursive1.kif: a self-recursive rule over a cyclic relation
        // (in the form the recursion restriction allows).
        let text = "(role a) (init (p 1)) (succ 1 2) (succ 2 1)
            (<= (reach ?x ?y) (succ ?x ?y)) (<= (reach ?x ?z) (reach ?x ?y) (succ ?y ?z))
            (<= (legal a (go ?y)) (true (p ?x)) (reach ?x ?y))
            (<= (next (p ?y)) (does a (go ?y)))
            (<= terminal (true (p 2))) (goal a 100)";
        let mut m = machine(text);
        let s0 = m.initial_state();
        let moves = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(printed(&m, &moves), ["(go 1)", "(go 2)"]);
    }

    #[test]
    fn a_relation_past_its_row_limit_stops_the_build() {
        let text = "(role a) (num 0) (num 1) (num 2) (num 3) (num 4) (num 5) (num 6) (num 7)
            (num 8) (num 9) (num 10) (num 11) (<= (pair ?x ?y) (num ?x) (num ?y)) (init p)
            (<= (legal a go) (true p) (pair ?x ?y)) (<= (next p) (does a go))
            (<= terminal (not (true p))) (goal a 0)";
        let description = Description::from_text(text).unwrap();
        let limits = Limits {
            max_rows: 100,
            max_terms: 100_000,
            ..Limits::default()
        };
        let err = DatalogMachine::with_limits(&description, limits)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "evaluation stopped: rows derived in one round exceeded 100"
        );
    }

    /// Plays `go` from the initial state until the machine fails; the error and the steps.
    fn run_until_failure(machine: &mut DatalogMachine) -> (MachineError, usize) {
        let mut state = machine.initial_state();
        for step in 0..2000 {
            let go = match machine.legal_moves(&state, 0) {
                Ok(moves) => moves,
                Err(e) => return (e, step),
            };
            match machine.next_state(&state, &go) {
                Ok(next) => state = next,
                Err(e) => return (e, step),
            }
        }
        panic!("the game did not stop the machine");
    }

    fn bomb(name: &str) -> Description {
        let path = format!(
            "{}/../../tests/fixtures/bombs/{name}.kif",
            env!("CARGO_MANIFEST_DIR")
        );
        Description::from_text(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn a_term_that_doubles_each_step_stops_at_the_term_size_budget() {
        let mut machine = DatalogMachine::new(&bomb("doubling")).unwrap();
        let (e, steps) = run_until_failure(&mut machine);
        assert_eq!(
            e,
            MachineError::Engine(EngineFailure::Eval(EvalError::Budget {
                what: crate::machine::Budgeted::TermSize,
                limit: super::super::MAX_TERM_SIZE.into()
            }))
        );
        // Step k's term has 2^(k+2) - 1 symbols: 131,071 at step 15.
        assert_eq!(steps, 15);
        // The machine keeps failing the same way, and nothing it hands out is over budget.
        assert!(machine.legal_moves(&machine.initial_state(), 0).is_err());
    }

    #[test]
    fn a_term_one_level_deeper_each_step_stops_at_the_depth_budget() {
        let mut machine = DatalogMachine::new(&bomb("deepening")).unwrap();
        let (e, _) = run_until_failure(&mut machine);
        assert_eq!(
            e,
            MachineError::Engine(EngineFailure::Eval(EvalError::Budget {
                what: crate::machine::Budgeted::TermDepth,
                limit: super::super::MAX_TERM_DEPTH.into()
            }))
        );
    }

    #[test]
    fn facts_that_square_each_step_stop_at_the_row_budget() {
        let limits = Limits {
            max_rows: 50_000,
            max_total_rows: 100_000,
            ..Limits::default()
        };
        let mut machine = DatalogMachine::with_limits(&bomb("squaring"), limits).unwrap();
        let (e, steps) = run_until_failure(&mut machine);
        assert!(
            matches!(
                e,
                MachineError::Engine(EngineFailure::Eval(EvalError::Budget {
                    what: crate::machine::Budgeted::RoundRows
                        | crate::machine::Budgeted::RelationRows
                        | crate::machine::Budgeted::TotalRows,
                    ..
                }))
            ),
            "{e}"
        );
        // The 1,806 facts of step 3 make 3 million pairs.
        assert_eq!(steps, 3);
    }
}
