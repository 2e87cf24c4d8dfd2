//! One match as our player plays it: a referee-side copy of the game, and a search thread.
//!
//! [`launch`] splits a game in two halves that never share a state:
//! - the *tracker*, kept by the server, follows the joint moves the referee sends and always
//!   knows our legal moves, so that a legal move is at hand whatever happens to the search;
//! - the *worker*, a thread that owns the [`Player`] and its own copy of the machine, follows
//!   the same joint moves and searches until the deadline it is given.
//!
//! In a GDL-II game the referee sends our move and our percepts, not the joint move: both
//! halves then follow a [`Belief`], the states consistent with what we did and saw, and the
//! worker chooses as [`choose_for_seat`] decides (as `ggp play` does): with [`HiddenPlayer`],
//! which searches over states drawn from the belief, unless the belief is one state of a game
//! without nature or the player does not search (a random or legal player picks among our
//! legal moves as it would).
//!
//! The two talk through channels in [`Term`]s only, so [`MatchSession`] is one non-generic type
//! whatever the engine: the engine is chosen once, by the [`SessionFactory`], when the match
//! starts. [`MatchSession::play`] waits for the worker until the reply deadline and then answers
//! its move if it is legal, or else a random legal move (the fallback): a search that
//! overruns, fails, panics or proposes an illegal move never makes the reply late or illegal.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::message::Heard;
use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::{Description, Term};
use ggp_search::belief::{Belief, BeliefError};
use ggp_search::search::hidden::{HiddenPlayer, choose_for_seat};
use ggp_search::search::{Player, SearchConfig};

/// Most states the worker's belief keeps.
const WORKER_BELIEF: usize = 1000;
/// Most states the tracker's belief keeps (it only needs our legal moves).
const TRACKER_BELIEF: usize = 64;

/// Builds the session for a match: picks the engine and the player.
pub trait SessionFactory: Send + Sync {
    /// The session in which we play role number `role` of `description`; setting up and the
    /// player's first thinking should end by `start_deadline`.
    ///
    /// # Errors
    /// No engine can run the game.
    fn create(
        &self,
        description: &Description,
        role: usize,
        start_deadline: Instant,
    ) -> Result<MatchSession, SessionError>;

    /// A session that follows the match and answers random legal moves, on the engine that is
    /// quickest to build: it stands in for the PLAYs that come while [`SessionFactory::create`]
    /// is still building, past the start clock.
    ///
    /// # Errors
    /// No engine can run the game, or the factory offers none (the default).
    fn stand_in(
        &self,
        description: &Description,
        role: usize,
    ) -> Result<MatchSession, SessionError> {
        let _ = (description, role);
        Err(SessionError::NoStandIn)
    }
}

/// Why a session could not follow the match or answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    /// The engine failed, or the referee's joint move was illegal or of the wrong size.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// A move in the referee's joint move that the rules do not know.
    #[error("role {role} has no move {mv}")]
    UnknownMove {
        /// The role.
        role: String,
        /// The move, as received.
        mv: String,
    },
    /// The state is terminal or we have no legal move.
    #[error("we have no legal move")]
    NoLegalMove,
    /// No engine could be built for the game.
    #[error("cannot run the game: {0}")]
    Build(ggp_engine::engine::LoadError),
    /// The factory builds no stand-in session.
    #[error("no stand-in engine")]
    NoStandIn,
    /// The thread building the engine for the game stopped without one.
    #[error("cannot run the game: the engine builder stopped")]
    BuilderGone,
    /// What we saw in a GDL-II game fits no state of the game.
    #[error("no state is consistent with our moves and percepts")]
    Inconsistent,
    /// A joint move came in a match whose state we do not know (a GDL-II match, where the
    /// referee sends percepts instead).
    #[error("a joint move in a match whose state we do not know")]
    JointMoveInHiddenState,
}

impl From<BeliefError> for SessionError {
    fn from(e: BeliefError) -> Self {
        match e {
            BeliefError::Machine(e) => SessionError::Machine(e),
            BeliefError::Inconsistent => SessionError::Inconsistent,
        }
    }
}

/// Why the search thread gave no answer (the fallback move is played instead).
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkerError {
    /// The search thread has ended.
    #[error("the search thread is gone")]
    Gone,
    /// The player panicked; the thread only reports this from then on.
    #[error("the player panicked")]
    Panicked,
    /// The player failed (its engine did).
    #[error(transparent)]
    Search(#[from] ggp_search::search::SearchError),
    /// The thread could not follow the match, and only reports this from then on.
    #[error("cannot follow the match: {0}")]
    Lost(std::sync::Arc<SessionError>),
}

/// A move we answer, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    /// The move, as the rules spell it.
    pub mv: Term,
    /// Whether the search answered it (rather than the fallback).
    pub searched: bool,
    /// Playouts or nodes the search spent.
    pub iterations: u64,
    /// The search's value of the move, 0 to 100, if it has one.
    pub value: Option<f64>,
    /// Why the fallback was used, if it was.
    pub note: Option<String>,
}

/// A match in progress: the tracker and the channels to the search thread.
pub struct MatchSession {
    tracker: Box<dyn Tracker>,
    jobs: Sender<Job>,
    outcomes: Receiver<Outcome>,
    next_seq: u64,
    rng: Xoshiro256PlusPlus,
    /// The engine's name, for logs.
    pub engine: String,
    /// The player's name, for logs.
    pub player: String,
}

/// Starts a session: `machine` is copied for the search thread, which at once lets `player`
/// think about role number `role` until `start_deadline`. `search` is the configuration the
/// player was built with; the information-set search that stands in for it in a game with
/// hidden information gets the same (its seed, iteration limit and progress counter).
pub fn launch<M>(
    machine: M,
    player: Box<dyn Player<M>>,
    role: usize,
    start_deadline: Instant,
    engine: &str,
    search: &SearchConfig,
) -> MatchSession
where
    M: StateMachine + Clone + Send + 'static,
{
    let (jobs, job_rx) = mpsc::channel();
    let (outcome_tx, outcomes) = mpsc::channel();
    let player_name = player.name();
    let worker_machine = machine.clone();
    let seed = search.seed;
    let worker_search = search.clone();
    // The search thread logs under the span this session was launched in (the match's).
    let span = tracing::Span::current();
    let spawned = std::thread::Builder::new()
        .name("ggp-search".into())
        .spawn(move || {
            let _in_match = span.entered();
            run_worker(
                worker_machine,
                player,
                role,
                start_deadline,
                worker_search,
                &job_rx,
                &outcome_tx,
            );
        });
    if let Err(e) = spawned {
        // Without a search thread every move is the fallback; the session still plays.
        tracing::warn!("cannot start the search thread: {e}");
    }
    let belief = Belief::new(&machine, role, TRACKER_BELIEF);
    MatchSession {
        tracker: Box::new(Tracked {
            machine,
            belief,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed),
        }),
        jobs,
        outcomes,
        next_seq: 0,
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        engine: engine.to_string(),
        player: player_name,
    }
}

impl MatchSession {
    /// Waits until `deadline` for the player's start-clock thinking. `Ok(true)` when it has
    /// finished, `Ok(false)` when it is still thinking (its first move then waits for it).
    ///
    /// # Errors
    /// The player failed to start (it is still asked for moves; the fallback covers it).
    pub fn wait_started(&mut self, deadline: Instant) -> Result<bool, WorkerError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.outcomes.recv_timeout(wait) {
            Ok(Outcome::Started(result)) => result.map(|()| true),
            Ok(Outcome::Chose { .. }) => Ok(true),
            Err(RecvTimeoutError::Timeout) => Ok(false),
            Err(RecvTimeoutError::Disconnected) => Err(WorkerError::Gone),
        }
    }

    /// Follows `joint` without asking for a move (a PLAY we could not answer in time).
    ///
    /// # Errors
    /// The joint move is not legal here, or the engine failed.
    pub fn apply(&mut self, joint: &Heard) -> Result<(), SessionError> {
        self.tracker.apply(joint, None)?;
        // A worker that has gone away is covered by the fallback.
        let _ = self.jobs.send(Job::Apply(joint.clone(), None));
        Ok(())
    }

    /// Follows `joint` (the previous joint move, `None` on the first turn) and answers our
    /// move by `deadline`; the search is told to finish by `search_deadline`.
    ///
    /// # Errors
    /// The joint move could not be followed, or we have no legal move; the session's state
    /// is then unchanged.
    pub fn play(
        &mut self,
        joint: Option<&Heard>,
        search_deadline: Instant,
        deadline: Instant,
    ) -> Result<Played, SessionError> {
        if let Some(joint) = joint {
            let now = Instant::now();
            self.tracker.apply(
                joint,
                Some(now + search_deadline.saturating_duration_since(now) / 2),
            )?;
        }
        let legal = self.tracker.legal()?;
        let Some(fallback) = legal.choose(&mut self.rng).cloned() else {
            if let Some(joint) = joint {
                let _ = self
                    .jobs
                    .send(Job::Apply(joint.clone(), Some(search_deadline)));
            }
            return Err(SessionError::NoLegalMove);
        };
        let answer = |mv: Term, note: &str| Played {
            mv,
            searched: false,
            iterations: 0,
            value: None,
            note: Some(note.to_string()),
        };
        // A forced move (a `noop` on another role's turn) is searched too: the play clock is
        // ours to use, and the tree grown on the others' turn is kept for our next choice.
        let seq = self.next_seq;
        self.next_seq += 1;
        let job = Job::Choose {
            seq,
            joint: joint.cloned(),
            legal: legal.clone(),
            deadline: search_deadline,
        };
        if self.jobs.send(job).is_err() {
            return Ok(answer(fallback, "the search thread is gone"));
        }
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.outcomes.recv_timeout(wait) {
                Ok(Outcome::Chose { seq: s, result }) if s == seq => {
                    return Ok(match result {
                        Ok(chosen) if legal.contains(&chosen.mv) => Played {
                            mv: chosen.mv,
                            searched: true,
                            iterations: chosen.iterations,
                            value: chosen.value,
                            note: None,
                        },
                        Ok(chosen) => answer(
                            fallback,
                            &format!("the search chose the illegal move {}", chosen.mv),
                        ),
                        Err(e) => answer(fallback, &format!("the search failed: {e}")),
                    });
                }
                // The start or an earlier, overrun search reporting late.
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Ok(answer(fallback, "the search overran its deadline"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Ok(answer(fallback, "the search thread is gone"));
                }
            }
        }
    }

    /// Follows the last joint move (if any), by `deadline` (a GDL-II belief update), and ends
    /// the session; the goal values in role order if the final state is terminal. The search
    /// thread ends after its current job.
    ///
    /// # Errors
    /// The joint move could not be followed, or the goals are not well defined.
    pub fn stop(
        mut self,
        joint: Option<&Heard>,
        deadline: Instant,
    ) -> Result<Option<Vec<u8>>, SessionError> {
        if let Some(joint) = joint {
            self.tracker.apply(joint, Some(deadline))?;
        }
        self.tracker.goals()
    }
}

/// Work for the search thread.
enum Job {
    /// Follow a step, by the deadline if given (a GDL-II belief update).
    Apply(Heard, Option<Instant>),
    /// Follow a step (if any), then choose a move by the deadline among `legal` (our moves
    /// by the tracker's reading).
    Choose {
        seq: u64,
        joint: Option<Heard>,
        legal: Vec<Term>,
        deadline: Instant,
    },
}

/// What the search thread reports.
enum Outcome {
    /// The player's start-clock thinking ended.
    Started(Result<(), WorkerError>),
    /// The answer to the `Choose` job `seq`.
    Chose {
        seq: u64,
        result: Result<Chosen, WorkerError>,
    },
}

struct Chosen {
    mv: Term,
    iterations: u64,
    value: Option<f64>,
}

/// The search thread: follows the match and runs the player, until the session is dropped.
fn run_worker<M: StateMachine>(
    machine: M,
    player: Box<dyn Player<M>>,
    role: usize,
    start_deadline: Instant,
    search: SearchConfig,
    jobs: &Receiver<Job>,
    outcomes: &Sender<Outcome>,
) {
    let seed = search.seed;
    let mut worker = Worker {
        belief: Belief::new(&machine, role, WORKER_BELIEF),
        hidden: HiddenPlayer::for_player(&*player, search),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        broken: None,
        machine,
        player,
    };
    let started = worker.start(role, start_deadline);
    if outcomes.send(Outcome::Started(started)).is_err() {
        return;
    }
    while let Ok(job) = jobs.recv() {
        let (joint, choose, update_by) = match job {
            Job::Apply(joint, by) => (Some(joint), None, by),
            Job::Choose {
                seq,
                joint,
                legal,
                deadline,
            } => {
                let now = Instant::now();
                let by = now + deadline.saturating_duration_since(now) / 2;
                (joint, Some((seq, legal, deadline)), Some(by))
            }
        };
        if let Some(joint) = joint {
            worker.follow(&joint, update_by);
        }
        if let Some((seq, legal, deadline)) = choose {
            let result = worker.choose(&legal, deadline);
            if outcomes.send(Outcome::Chose { seq, result }).is_err() {
                return;
            }
        }
    }
}

/// What the search thread holds: its copy of the machine, the player, the information-set
/// search that stands in for it in a game of hidden information, and the belief both follow.
struct Worker<M: StateMachine> {
    machine: M,
    player: Box<dyn Player<M>>,
    hidden: Option<HiddenPlayer>,
    belief: Belief<M::State, M::Move>,
    rng: Xoshiro256PlusPlus,
    /// Set when the worker can no longer follow the match; it then only reports the reason.
    broken: Option<WorkerError>,
}

impl<M: StateMachine> Worker<M> {
    /// The player's start-clock thinking; a panic breaks the worker.
    fn start(&mut self, role: usize, deadline: Instant) -> Result<(), WorkerError> {
        match catch_unwind(AssertUnwindSafe(|| {
            self.player.start(&mut self.machine, role, deadline)
        })) {
            Ok(result) => result.map_err(WorkerError::from),
            Err(_) => {
                self.broken = Some(WorkerError::Panicked);
                Err(WorkerError::Panicked)
            }
        }
    }

    /// Follows a step, by `deadline` if given; a step it cannot follow breaks the worker.
    fn follow(&mut self, joint: &Heard, deadline: Option<Instant>) {
        if self.broken.is_none()
            && let Err(e) = follow(
                &mut self.machine,
                &mut self.belief,
                joint,
                deadline,
                &mut self.rng,
            )
        {
            self.broken = Some(WorkerError::Lost(std::sync::Arc::new(e)));
        }
    }

    /// Our move by `deadline`, chosen as [`choose_for_seat`] decides; a panic breaks the
    /// worker.
    fn choose(&mut self, legal: &[Term], deadline: Instant) -> Result<Chosen, WorkerError> {
        if let Some(reason) = &self.broken {
            return Err(reason.clone());
        }
        let Worker {
            machine,
            player,
            hidden,
            belief,
            ..
        } = self;
        // The tracker's moves: a hidden search chooses among them, never one the tracker
        // would reject (each side follows its own sampled belief).
        let allowed: Vec<M::Move> = legal.iter().filter_map(|t| machine.find_move(t)).collect();
        match catch_unwind(AssertUnwindSafe(|| {
            choose_for_seat(
                machine,
                &mut **player,
                hidden.as_mut(),
                belief,
                Some(&allowed),
                deadline,
            )
        })) {
            Ok(Ok(choice)) => Ok(Chosen {
                mv: self.machine.move_term(choice.mv),
                iterations: choice.iterations,
                value: choice.value,
            }),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => {
                self.broken = Some(WorkerError::Panicked);
                Err(WorkerError::Panicked)
            }
        }
    }
}

/// The server's half: follows the match on its own copy of the machine.
trait Tracker: Send {
    /// Follows a step, by `deadline` if given; the state is unchanged on error.
    fn apply(&mut self, joint: &Heard, deadline: Option<Instant>) -> Result<(), SessionError>;
    /// Our legal moves in the current state (empty when it is terminal).
    fn legal(&mut self) -> Result<Vec<Term>, SessionError>;
    /// The goal values if the current state is terminal.
    fn goals(&mut self) -> Result<Option<Vec<u8>>, SessionError>;
}

struct Tracked<M: StateMachine> {
    machine: M,
    belief: Belief<M::State, M::Move>,
    rng: Xoshiro256PlusPlus,
}

impl<M: StateMachine + Send> Tracked<M> {
    /// A state of the belief (in a game of complete information, the state).
    fn state(&self) -> Result<M::State, SessionError> {
        self.belief
            .states()
            .first()
            .map(|(s, _)| s.clone())
            .ok_or(SessionError::Inconsistent)
    }
}

impl<M: StateMachine + Send> Tracker for Tracked<M> {
    fn apply(&mut self, joint: &Heard, deadline: Option<Instant>) -> Result<(), SessionError> {
        let mut belief = self.belief.clone();
        follow(
            &mut self.machine,
            &mut belief,
            joint,
            deadline,
            &mut self.rng,
        )?;
        if belief.is_lost() {
            tracing::warn!(
                "no state fits every percept yet: our legal moves are a guess until one is found"
            );
        }
        self.belief = belief;
        Ok(())
    }

    fn legal(&mut self) -> Result<Vec<Term>, SessionError> {
        // Our moves by what we know: legal in every state of the belief that is not over
        // (the referee asks for a move, so the true state is not; a sampled belief may hold
        // states where the game has ended).
        let moves = self.belief.our_moves(&mut self.machine)?;
        Ok(moves
            .into_iter()
            .map(|m| self.machine.move_term(m))
            .collect())
    }

    fn goals(&mut self) -> Result<Option<Vec<u8>>, SessionError> {
        let state = self.state()?;
        if !self.machine.is_terminal(&state)? {
            return Ok(None);
        }
        Ok(Some(self.machine.goals(&state)?))
    }
}

/// Moves `belief` on by one step: a joint move (one state, moved by it and checked) or our
/// move and percepts.
fn follow<M: StateMachine>(
    machine: &mut M,
    belief: &mut Belief<M::State, M::Move>,
    heard: &Heard,
    deadline: Option<Instant>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(), SessionError> {
    match heard {
        Heard::Joint(joint) => {
            let [(state, _)] = belief.states() else {
                return Err(SessionError::JointMoveInHiddenState);
            };
            let mut state = state.clone();
            if let Err(e) = advance(machine, &mut state, joint) {
                // A referee that could not deliver one PLAY (it timed out sending it, and
                // played a random move for us) then sends a joint move of the step after.
                let Some(bridged) = bridge_missed_step(machine, &state, joint)? else {
                    return Err(e);
                };
                tracing::warn!("{e}: a PLAY was missed; followed by a joint move that fits");
                state = bridged;
            }
            *belief = Belief::known(state, belief.role(), belief.cap());
            Ok(())
        }
        Heard::Seen { mv, percepts } => Ok(belief.update(machine, mv, percepts, deadline, rng)?),
    }
}

/// Most joint moves tried for a missed step ([`bridge_missed_step`]).
const BRIDGE_TRIES: usize = 10_000;

/// The state after a missed step and `joint`: the first joint move from `state`, in the
/// machine's order of legal moves, after which `joint` is legal (so that the tracker and the
/// search thread bridge alike); `None` if none of the first [`BRIDGE_TRIES`] is.
fn bridge_missed_step<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    joint: &[Term],
) -> Result<Option<M::State>, SessionError> {
    if machine.is_terminal(state)? {
        return Ok(None);
    }
    let legal: Vec<Vec<M::Move>> = (0..machine.roles().len())
        .map(|r| machine.legal_moves(state, r))
        .collect::<Result<_, _>>()?;
    let mut index = vec![0usize; legal.len()];
    for _ in 0..BRIDGE_TRIES {
        let missed: Vec<M::Move> = index.iter().zip(&legal).map(|(&i, m)| m[i]).collect();
        let mut after = machine.next_state(state, &missed)?;
        if !machine.is_terminal(&after)? && advance(machine, &mut after, joint).is_ok() {
            return Ok(Some(after));
        }
        // The next joint move, the last role's move turning fastest.
        let Some(r) = (0..legal.len())
            .rev()
            .find(|&r| index[r] + 1 < legal[r].len())
        else {
            return Ok(None);
        };
        index[r] += 1;
        index[r + 1..].iter_mut().for_each(|i| *i = 0);
    }
    Ok(None)
}

/// Moves `state` on by a joint move given as terms, checking each move.
fn advance<M: StateMachine>(
    machine: &mut M,
    state: &mut M::State,
    joint: &[Term],
) -> Result<(), SessionError> {
    let n_roles = machine.roles().len();
    if joint.len() != n_roles {
        return Err(MachineError::JointMoveSize {
            expected: n_roles,
            found: joint.len(),
        }
        .into());
    }
    let mut moves = Vec::with_capacity(n_roles);
    for (role, term) in joint.iter().enumerate() {
        moves.push(resolve(machine, state, role, term)?);
    }
    *state = machine.next_state(state, &moves)?;
    Ok(())
}

/// The machine's move for `term`. A term the machine does not know is matched against the
/// role's legal moves ignoring case, for referees that change the case of what they send.
fn resolve<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
    term: &Term,
) -> Result<M::Move, SessionError> {
    if let Some(mv) = machine.find_move(term) {
        return Ok(mv);
    }
    let legal = machine.legal_moves(state, role)?;
    ggp_engine::machine::move_ignoring_case(machine, term, &legal).ok_or_else(|| {
        SessionError::UnknownMove {
            role: machine.roles()[role].to_string(),
            mv: term.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use ggp_engine::datalog::DatalogMachine;
    use ggp_gdl::gdl::parse_term;
    use ggp_search::search::{Choice, PlayerKind, SearchConfig, SearchError, new_player};

    const GAME: &str = "(role a) (role b) (init (turn a)) (init (count 0))
        (<= (legal ?r (go ?n)) (role ?r) (true (turn ?r)) (num ?n))
        (<= (legal ?r wait) (role ?r) (not (true (turn ?r))))
        (num 1) (num 2)
        (<= (next (turn b)) (true (turn a))) (<= (next (turn a)) (true (turn b)))
        (<= (next (count 1)) (true (count 0))) (<= (next (count 2)) (true (count 1)))
        (<= terminal (true (count 2)))
        (<= (goal ?r 50) (role ?r))";

    fn machine() -> DatalogMachine {
        DatalogMachine::new(&Description::from_text(GAME).unwrap()).unwrap()
    }

    /// A deadline no test reaches.
    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    fn terms(texts: &[&str]) -> Vec<Term> {
        texts.iter().map(|t| parse_term(t).unwrap()).collect()
    }

    fn joint(texts: &[&str]) -> Heard {
        Heard::Joint(terms(texts))
    }

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    /// A player that misbehaves in a chosen way.
    struct Rogue(&'static str);

    impl<M: StateMachine> Player<M> for Rogue {
        fn name(&self) -> String {
            self.0.into()
        }
        fn start(&mut self, _: &mut M, _: usize, _: Instant) -> Result<(), SearchError> {
            Ok(())
        }
        fn choose(
            &mut self,
            machine: &mut M,
            state: &M::State,
            _: Instant,
        ) -> Result<Choice<M::Move>, SearchError> {
            match self.0 {
                "slow" => std::thread::sleep(Duration::from_secs(2)),
                "panic" => panic!("a deliberately panicking player"),
                "fail" => return Err(SearchError::NoMove),
                _ => {}
            }
            // "illegal": the other role's move.
            let mv = machine.legal_moves(state, 1)?[0];
            Ok(Choice {
                mv,
                iterations: 7,
                value: None,
                proven: false,
            })
        }
    }

    fn seeded(seed: u64) -> SearchConfig {
        SearchConfig {
            seed,
            ..SearchConfig::default()
        }
    }

    #[test]
    fn plays_legal_moves_from_the_search_and_follows_the_match() {
        let player = new_player::<DatalogMachine>(PlayerKind::Legal, &SearchConfig::default());
        let mut session = launch(machine(), player, 0, soon(500), "datalog", &seeded(1));
        assert!(matches!(session.wait_started(soon(500)), Ok(true)));
        let first = session.play(None, soon(400), soon(500)).unwrap();
        assert!(first.searched);
        assert!(["(go 1)", "(go 2)"].contains(&first.mv.to_string().as_str()));
        // Role a waits: a forced move, still searched (the tree is kept for its next turn).
        let second = session
            .play(
                Some(&Heard::Joint(vec![first.mv, parse_term("wait").unwrap()])),
                soon(400),
                soon(500),
            )
            .unwrap();
        assert_eq!(
            (second.mv.to_string(), second.searched),
            ("wait".into(), true)
        );
        assert_eq!(
            session.stop(Some(&joint(&["wait", "(go 2)"])), far()),
            Ok(Some(vec![50, 50]))
        );
    }

    /// The information-set search that stands in for the player in a GDL-II game searches
    /// with the player's configuration: a tournament's iteration limit holds there too.
    #[test]
    fn the_hidden_search_keeps_the_iteration_limit() {
        // Monty Hall, the sheet of `ggp_search::belief`'s tests (whose helpers are not
        // compiled for this crate's tests).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/games/gdl2/montyhall.kif"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let monty = DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap();
        let config = SearchConfig {
            max_iterations: Some(40),
            ..seeded(3)
        };
        let player = new_player::<DatalogMachine>(PlayerKind::Mcts, &config);
        let mut session = launch(monty, player, 0, soon(300), "datalog", &config);
        let played = session.play(None, far(), far()).unwrap();
        assert!(played.searched, "{:?}", played.note);
        assert_eq!(played.iterations, 40);
    }

    #[test]
    fn misbehaving_players_still_give_a_legal_move_in_time() {
        for kind in ["slow", "panic", "fail", "illegal"] {
            let mut session = launch(
                machine(),
                Box::new(Rogue(kind)),
                0,
                soon(100),
                "datalog",
                &seeded(1),
            );
            let started = Instant::now();
            let played = session.play(None, soon(250), soon(300)).unwrap();
            assert!(started.elapsed() < Duration::from_millis(600), "{kind}");
            assert!(!played.searched, "{kind}");
            assert!(played.note.is_some(), "{kind}");
            assert!(["(go 1)", "(go 2)"].contains(&played.mv.to_string().as_str()));
        }
    }

    #[test]
    fn bad_joint_moves_are_refused_and_leave_the_state() {
        let player = new_player::<DatalogMachine>(PlayerKind::Random, &SearchConfig::default());
        let mut session = launch(machine(), player, 1, soon(100), "datalog", &seeded(1));
        let err = session
            .play(Some(&joint(&["(go 3)", "wait"])), soon(100), soon(200))
            .unwrap_err();
        assert_eq!(err.to_string(), "role a has no move (go 3)");
        let err = session
            .play(Some(&joint(&["wait", "wait"])), soon(100), soon(200))
            .unwrap_err();
        assert_eq!(err.to_string(), "illegal move wait for role a");
        let err = session
            .play(Some(&joint(&["wait"])), soon(100), soon(200))
            .unwrap_err();
        assert_eq!(err.to_string(), "a joint move needs 2 moves, found 1");
        // Still in the initial state: b waits.
        let played = session.play(None, soon(100), soon(200)).unwrap();
        assert_eq!(played.mv.to_string(), "wait");
    }

    /// A referee that could not deliver a PLAY plays a random move for us and sends the next
    /// step's joint move, illegal where we are: the session finds the step it missed.
    #[test]
    fn a_missed_play_is_bridged_by_a_joint_move_that_fits() {
        let player = new_player::<DatalogMachine>(PlayerKind::Random, &SearchConfig::default());
        let session = launch(machine(), player, 1, soon(100), "datalog", &seeded(1));
        // Missed: (go 1) wait. Heard: b's move, in the state after it.
        let goals = session
            .stop(Some(&joint(&["wait", "(go 2)"])), far())
            .unwrap();
        assert_eq!(goals, Some(vec![50, 50]));
    }

    #[test]
    fn moves_in_another_case_are_matched() {
        let player = new_player::<DatalogMachine>(PlayerKind::Random, &SearchConfig::default());
        let mut session = launch(machine(), player, 1, soon(100), "datalog", &seeded(1));
        session.apply(&joint(&["(GO 2)", "WAIT"])).unwrap();
        let played = session.play(None, soon(100), soon(200)).unwrap();
        assert!(played.mv.to_string().starts_with("(go "));
    }
}
