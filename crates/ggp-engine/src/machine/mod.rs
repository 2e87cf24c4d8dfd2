//! The `StateMachine` trait: the one interface every engine implements and every player uses.
//!
//! Seven required operations give the game's rules (roles, initial state, legal moves, next
//! state, terminal, goals, and conversion of moves to and from terms); everything else
//! (checked transitions, joint moves, random playouts) is built on them here, once.
//! States and moves are each engine's own compact types; [`Term`] is the common currency at the
//! edges (printing, the match protocol, traces).
//!
//! GDL-II games add two things, both with defaults here: nature (the role `random`, whose
//! moves are uniformly random; [`StateMachine::is_nature`]) and percepts (the `sees` facts,
//! what each role is told after a joint move; [`StateMachine::percepts_into`]).

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use rand::Rng;

use ggp_gdl::gdl::{Term, is_nature_role};

mod factoring;

pub use factoring::{Component, Factoring};

/// Why a machine could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    /// A move that is not legal for its role in the state.
    #[error("illegal move {mv} for role {role}")]
    IllegalMove {
        /// The role.
        role: String,
        /// The move, printed.
        mv: String,
    },
    /// A joint move with the wrong number of moves.
    #[error("a joint move needs {expected} moves, found {found}")]
    JointMoveSize {
        /// The number of roles.
        expected: usize,
        /// The number of moves given.
        found: usize,
    },
    /// A role with no legal move in a non-terminal state: a bug in the rule sheet.
    #[error("role {role} has no legal move")]
    NoLegalMoves {
        /// The role.
        role: String,
    },
    /// A role whose goal, in a terminal state, is undefined or defined more than once.
    #[error("goal of role {role} is {}", describe_goals(.values))]
    BadGoal {
        /// The role.
        role: String,
        /// Every value the rules give.
        values: Vec<u8>,
    },
    /// The engine gave up (for example a runaway recursion hit a size limit). The message
    /// names the failure, which is therefore not also its source: a chain prints it once.
    #[error("engine failure: {0}")]
    Engine(EngineFailure),
    /// A fact given for a state that the engine cannot hold: not ground, or (for a grounded
    /// engine) not a base proposition of the game.
    #[error("{fact} cannot be part of a state of this game")]
    UnknownFact {
        /// The fact, printed.
        fact: String,
    },
}

impl From<EngineFailure> for MachineError {
    fn from(failure: EngineFailure) -> MachineError {
        MachineError::Engine(failure)
    }
}

/// Why an engine gave up on a game ([`MachineError::Engine`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineFailure {
    /// An evaluation stopped: a budget on rows, terms or one term's size or depth was
    /// exceeded ([`Budgeted`]), or its deadline or memory limit was reached.
    /// The game builds ever more or ever larger terms; the machine keeps failing this way.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A state made by another machine than the one asked.
    #[error("a state from another machine")]
    ForeignState,
    /// A move the engine that computes percepts does not know.
    #[error("the percept engine does not know the move {0}")]
    UnknownMove(String),
}

/// Why a rule evaluation (the Datalog engine's, or the grounder's that runs on it) stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A relation, the term store or one term outgrew its limit: the program likely builds
    /// ever more or ever larger terms, through recursion or from step to step.
    #[error("evaluation stopped: {what} exceeded {limit}")]
    Budget {
        /// What grew too large.
        what: Budgeted,
        /// The limit.
        limit: u64,
    },
    /// The deadline set for the evaluation passed.
    #[error("evaluation stopped: out of time")]
    Deadline,
    /// The memory in use grew past the limit set for the evaluation.
    #[error(
        "evaluation stopped: {:.1} MB of memory in use, over the limit of {:.1} MB",
        *.used as f64 / 1e6,
        *.limit as f64 / 1e6
    )]
    Memory {
        /// The memory in use when it was read, in bytes.
        used: u64,
        /// The limit, in bytes.
        limit: u64,
    },
}

/// What outgrew its limit in an [`EvalError::Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Budgeted {
    /// The limit on rows in one relation, by the rows one round derived.
    #[error("rows derived in one round")]
    RoundRows,
    /// The limit on rows in one relation.
    #[error("rows in one relation")]
    RelationRows,
    /// The limit on rows in all relations together.
    #[error("rows in all relations")]
    TotalRows,
    /// The limit on distinct ground terms.
    #[error("distinct ground terms")]
    Terms,
    /// The limit on symbols in one term.
    #[error("symbols in one term")]
    TermSize,
    /// The limit on the nesting depth of one term.
    #[error("nesting depth of one term")]
    TermDepth,
}

/// The move among `candidates` whose term is `term` ignoring ASCII case: the one move matcher
/// for what a referee or a player sends in another case than the rules spell (Dresden's
/// referee and its players write moves in upper case). Exact matches come first, through
/// [`StateMachine::find_move`], at the caller.
pub fn move_ignoring_case<M: StateMachine>(
    machine: &M,
    term: &Term,
    candidates: &[M::Move],
) -> Option<M::Move> {
    let wanted = term.to_string();
    candidates.iter().copied().find(|&mv| {
        machine
            .move_term(mv)
            .to_string()
            .eq_ignore_ascii_case(&wanted)
    })
}

fn describe_goals(values: &[u8]) -> String {
    if values.is_empty() {
        "undefined".into()
    } else {
        format!("defined more than once: {values:?}")
    }
}

/// What a batch of random playouts found ([`StateMachine::random_playouts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlayoutBatch {
    /// Playouts played to the end (a terminal state, or the step limit).
    pub playouts: u64,
    /// Moves made in them.
    pub steps: u64,
    /// Per role, the sum over the playouts of the role's goal value in the last state: the
    /// highest value the rules give, 0 when they give none.
    pub goal_sums: Vec<u64>,
}

/// How one playout of [`StateMachine::playouts_from`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlayoutEnd<S> {
    /// In a terminal state: each role's goal there (the highest value the rules give, 0 when
    /// they give none).
    Goals(Vec<u8>),
    /// At the step limit, in this state (not terminal).
    Cut(S),
}

/// A game's rules, as an engine runs them.
///
/// Methods take `&mut self` so that engines can keep scratch space and caches; a search that
/// runs on several threads gives each thread its own machine.
pub trait StateMachine {
    /// A game state.
    type State: Clone + Eq + Hash + Debug + Send + Sync;
    /// One role's move.
    type Move: Copy + Eq + Hash + Debug + Send + Sync;

    /// The roles, in the order of the `(role ...)` facts.
    fn roles(&self) -> &[Term];

    /// The initial state.
    fn initial_state(&self) -> Self::State;

    /// Appends the legal moves of role number `role` in `state` to `out`.
    ///
    /// # Errors
    /// The engine failed.
    fn legal_moves_into(
        &mut self,
        state: &Self::State,
        role: usize,
        out: &mut Vec<Self::Move>,
    ) -> Result<(), MachineError>;

    /// Whether `state` is terminal.
    ///
    /// # Errors
    /// The engine failed.
    fn is_terminal(&mut self, state: &Self::State) -> Result<bool, MachineError>;

    /// Every goal value the rules give role number `role` in `state`, without repeats, in
    /// ascending order. A valid game gives exactly one in a terminal state. Values that are
    /// not integers from 0 to 100 are left out.
    ///
    /// # Errors
    /// The engine failed.
    fn goal_values(&mut self, state: &Self::State, role: usize) -> Result<Vec<u8>, MachineError>;

    /// The state after `joint` (one move per role, in role order), without checking legality.
    ///
    /// # Errors
    /// The engine failed. An illegal move gives an unspecified state, not an error.
    fn next_state_unchecked(
        &mut self,
        state: &Self::State,
        joint: &[Self::Move],
    ) -> Result<Self::State, MachineError>;

    /// A move as a term.
    fn move_term(&self, mv: Self::Move) -> Term;

    /// The move a term names, if the engine knows it (an unknown term cannot be legal).
    fn find_move(&self, term: &Term) -> Option<Self::Move>;

    /// The facts true in `state`.
    fn state_terms(&self, state: &Self::State) -> Vec<Term>;

    /// Writes into `out` (cleared first) one id per fact of `state`, in the order of
    /// [`state_terms`](Self::state_terms); one fact always has the same id in a machine and
    /// its clones. A caller that reads many states can then remember what each fact means
    /// instead of building its term every time. Returns `false`, leaving `out` empty, if the
    /// engine has no such ids (the default).
    fn fact_ids_into(&self, state: &Self::State, out: &mut Vec<u32>) -> bool {
        let _ = state;
        out.clear();
        false
    }

    /// Sets each fact of `ids` (ids as [`fact_ids_into`](Self::fact_ids_into) gives them) in
    /// `into` to what it is in `from`, leaving the other facts alone; `false`, changing
    /// nothing, if the engine cannot (the default). The search over a game's turn-taking parts
    /// holds the other parts' facts as they stand this way.
    fn copy_facts(&self, into: &mut Self::State, from: &Self::State, ids: &[u32]) -> bool {
        let _ = (into, from, ids);
        false
    }

    /// The game's sub-games by their dynamics, when the engine worked them out as it built
    /// (the propnet, from its ground rules); `None` otherwise (the default).
    fn factoring(&self) -> Option<std::sync::Arc<Factoring>> {
        None
    }

    /// The state in which exactly `facts` are true (repeats are ignored), for starting a game
    /// from a given position. Nothing checks that the state is reachable from the initial one.
    ///
    /// # Errors
    /// [`MachineError::UnknownFact`] for a fact the engine cannot represent.
    fn state_from_terms(&mut self, facts: &[Term]) -> Result<Self::State, MachineError>;

    /// An independent copy of this machine whose states and moves are interchangeable with
    /// this one's, for a search thread; `None` when the engine cannot share them (the
    /// default). Engines that return one should make it cheap (shared topology).
    fn fork(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// Whether the rules have `sees` rules (GDL-II): then players are told percepts rather
    /// than the joint move. The default: none.
    fn has_percepts(&self) -> bool {
        false
    }

    /// Appends to `out` (cleared first) what role number `role` sees when `joint` is played in
    /// `state`: each `P` of a `(sees role P)` fact, sorted, without repeats. The default:
    /// nothing (a game without `sees` rules).
    ///
    /// # Errors
    /// The engine failed.
    fn percepts_into(
        &mut self,
        state: &Self::State,
        joint: &[Self::Move],
        role: usize,
        out: &mut Vec<Term>,
    ) -> Result<(), MachineError> {
        let _ = (state, joint, role);
        out.clear();
        Ok(())
    }

    /// What role number `role` sees when `joint` is played in `state` (see
    /// [`percepts_into`](Self::percepts_into)).
    ///
    /// # Errors
    /// The engine failed.
    fn percepts(
        &mut self,
        state: &Self::State,
        joint: &[Self::Move],
        role: usize,
    ) -> Result<Vec<Term>, MachineError> {
        let mut out = Vec::new();
        self.percepts_into(state, joint, role, &mut out)?;
        Ok(out)
    }

    /// Whether role number `role` is nature: the GDL-II role `random`, which the referee plays
    /// uniformly at random and which no player plays.
    fn is_nature(&self, role: usize) -> bool {
        is_nature_role(&self.roles()[role])
    }

    /// Whether the game is GDL-II: it has percepts or nature.
    fn is_gdl2(&self) -> bool {
        self.has_percepts() || (0..self.roles().len()).any(|r| self.is_nature(r))
    }

    /// The legal moves of role number `role` in `state`.
    ///
    /// # Errors
    /// The engine failed.
    fn legal_moves(
        &mut self,
        state: &Self::State,
        role: usize,
    ) -> Result<Vec<Self::Move>, MachineError> {
        let mut out = Vec::new();
        self.legal_moves_into(state, role, &mut out)?;
        Ok(out)
    }

    /// The single goal value of role number `role`. Nature without a goal rule gets 0
    /// (GDL-II sheets often give `random` none).
    ///
    /// # Errors
    /// [`MachineError::BadGoal`] when the rules give no value or several.
    fn goal(&mut self, state: &Self::State, role: usize) -> Result<u8, MachineError> {
        let values = self.goal_values(state, role)?;
        match values[..] {
            [v] => Ok(v),
            [] if self.is_nature(role) => Ok(0),
            _ => Err(MachineError::BadGoal {
                role: self.roles()[role].to_string(),
                values,
            }),
        }
    }

    /// The goal value of every role, in role order.
    ///
    /// # Errors
    /// As [`goal`](Self::goal), for the first role that fails.
    fn goals(&mut self, state: &Self::State) -> Result<Vec<u8>, MachineError> {
        (0..self.roles().len())
            .map(|r| self.goal(state, r))
            .collect()
    }

    /// The state after `joint`, checking that each move is legal for its role.
    ///
    /// # Errors
    /// [`MachineError::JointMoveSize`] or [`MachineError::IllegalMove`]; the state is untouched.
    fn next_state(
        &mut self,
        state: &Self::State,
        joint: &[Self::Move],
    ) -> Result<Self::State, MachineError> {
        let n_roles = self.roles().len();
        if joint.len() != n_roles {
            return Err(MachineError::JointMoveSize {
                expected: n_roles,
                found: joint.len(),
            });
        }
        for (role, mv) in joint.iter().enumerate() {
            if !self.legal_moves(state, role)?.contains(mv) {
                return Err(MachineError::IllegalMove {
                    role: self.roles()[role].to_string(),
                    mv: self.move_term(*mv).to_string(),
                });
            }
        }
        self.next_state_unchecked(state, joint)
    }

    /// A uniformly random legal joint move, written into `joint` (cleared first); `scratch`
    /// is reused for the legal lists.
    ///
    /// # Errors
    /// [`MachineError::NoLegalMoves`] when a role has none.
    fn random_joint_move_into(
        &mut self,
        state: &Self::State,
        rng: &mut impl Rng,
        joint: &mut Vec<Self::Move>,
        scratch: &mut Vec<Self::Move>,
    ) -> Result<(), MachineError> {
        joint.clear();
        for role in 0..self.roles().len() {
            scratch.clear();
            self.legal_moves_into(state, role, scratch)?;
            if scratch.is_empty() {
                return Err(MachineError::NoLegalMoves {
                    role: self.roles()[role].to_string(),
                });
            }
            joint.push(scratch[rng.random_range(0..scratch.len())]);
        }
        Ok(())
    }

    /// Plays uniformly random joint moves from `state` until a terminal state or `max_steps`
    /// moves; returns the last state and the number of moves made.
    ///
    /// # Errors
    /// As [`random_joint_move_into`](Self::random_joint_move_into) and the engine's errors.
    fn playout(
        &mut self,
        state: &Self::State,
        rng: &mut impl Rng,
        max_steps: usize,
    ) -> Result<(Self::State, usize), MachineError> {
        let mut state = state.clone();
        let mut joint = Vec::new();
        let mut scratch = Vec::new();
        for steps in 0..max_steps {
            if self.is_terminal(&state)? {
                return Ok((state, steps));
            }
            self.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            state = self.next_state_unchecked(&state, &joint)?;
        }
        Ok((state, max_steps))
    }

    /// Plays `count` independent random playouts from `state` (as
    /// [`playout`](Self::playout), each until a terminal state or `max_steps` moves) and
    /// adds up their goals. Engines may play them side by side (the propnet plays 64 games
    /// per pass); the default plays them one after the other.
    ///
    /// # Errors
    /// As [`playout`](Self::playout).
    fn random_playouts(
        &mut self,
        state: &Self::State,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
    ) -> Result<PlayoutBatch, MachineError> {
        let n_roles = self.roles().len();
        let mut batch = PlayoutBatch {
            goal_sums: vec![0; n_roles],
            ..PlayoutBatch::default()
        };
        for _ in 0..count {
            let (last, steps) = self.playout(state, rng, max_steps)?;
            for (role, sum) in batch.goal_sums.iter_mut().enumerate() {
                let values = self.goal_values(&last, role)?;
                *sum += u64::from(values.last().copied().unwrap_or(0));
            }
            batch.playouts += 1;
            batch.steps += steps as u64;
        }
        Ok(batch)
    }

    /// How many playouts [`playouts_from`](Self::playouts_from) plays side by side in one
    /// pass; 1 (the default) when it plays them one after the other. A search asks before
    /// gathering many start states for one call.
    fn parallel_playouts(&self) -> usize {
        1
    }

    /// One uniformly random playout from each state of `starts`, each until a terminal state
    /// or `max_steps` moves, their ends written into `out` (cleared first) in the order of
    /// `starts`. Looks at the clock before every move: `Ok(false)` when `deadline` passed
    /// before every playout ended (`out` is then incomplete). Engines may play them side by
    /// side ([`parallel_playouts`](Self::parallel_playouts)); the default plays them one
    /// after the other.
    ///
    /// # Errors
    /// As [`playout`](Self::playout).
    fn playouts_from(
        &mut self,
        starts: &[Self::State],
        rng: &mut impl Rng,
        max_steps: usize,
        deadline: Instant,
        out: &mut Vec<PlayoutEnd<Self::State>>,
    ) -> Result<bool, MachineError> {
        out.clear();
        let n_roles = self.roles().len();
        let mut joint = Vec::new();
        let mut scratch = Vec::new();
        for start in starts {
            let mut state = start.clone();
            let mut steps = 0;
            let end = loop {
                if self.is_terminal(&state)? {
                    let goals = (0..n_roles)
                        .map(|r| {
                            let values = self.goal_values(&state, r)?;
                            Ok(values.last().copied().unwrap_or(0))
                        })
                        .collect::<Result<Vec<u8>, MachineError>>()?;
                    break PlayoutEnd::Goals(goals);
                }
                if steps == max_steps {
                    break PlayoutEnd::Cut(state);
                }
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                self.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
                state = self.next_state_unchecked(&state, &joint)?;
                steps += 1;
            };
            out.push(end);
        }
        Ok(true)
    }
}
