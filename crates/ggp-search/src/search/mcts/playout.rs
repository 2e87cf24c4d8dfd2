//! The playout policy: how an iteration continues past the tree to the end of the game.
//!
//! A [`PlayoutPolicy`] plays joint moves from the state where the tree stops until a terminal
//! state (or a step limit) and returns the last state, which the [`super::eval`] evaluation
//! then scores. Each search thread has its own policy (the decisive one remembers the moves
//! it saw end a game). To try another policy, implement the trait and return it from the
//! match's [`super::Plan`] (its `playout_policy`). MAST, and decisive playouts without the
//! anti-decisive check, were measured and removed: see `docs/experiments/mast.md` and
//! `docs/experiments/decisive-playouts.md`.

use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::search::{Halt, PlayoutBuffers, timed_playout};
use ggp_engine::machine::StateMachine;

/// Plays an iteration out past the tree.
pub trait PlayoutPolicy<M: StateMachine>: Send {
    /// Plays from `state` until a terminal state or `max_steps` joint moves, looking at the
    /// clock before every move; returns the last state.
    ///
    /// # Errors
    /// The deadline passed ([`Halt::Deadline`]) or the engine failed.
    fn playout(
        &mut self,
        machine: &mut M,
        state: &M::State,
        rng: &mut Xoshiro256PlusPlus,
        deadline: Instant,
        max_steps: usize,
    ) -> Result<M::State, Halt>;
}

/// How the decisive policy plays one step of [`play_out`]: each role's move, then the next
/// state.
trait MoveChoice<M: StateMachine> {
    /// Role `role`'s move among `legal` (not empty; the policy may keep the list, leaving
    /// another in its place).
    fn pick(
        &mut self,
        role: usize,
        legal: &mut Vec<M::Move>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> M::Move;

    /// The state after `joint`, the moves picked (a policy may change them first).
    ///
    /// # Errors
    /// The engine failed.
    fn next(
        &mut self,
        machine: &mut M,
        state: &M::State,
        joint: &mut [M::Move],
    ) -> Result<M::State, Halt> {
        Ok(machine.next_state_unchecked(state, joint)?)
    }
}

/// The decisive policy's playout loop: from `state` until a terminal state or `max_steps`
/// joint moves, looking at the clock before every move, each step's moves picked by `choice`.
fn play_out<M: StateMachine>(
    choice: &mut impl MoveChoice<M>,
    machine: &mut M,
    state: &M::State,
    rng: &mut Xoshiro256PlusPlus,
    deadline: Instant,
    max_steps: usize,
    buffers: &mut PlayoutBuffers<M::Move>,
) -> Result<M::State, Halt> {
    let n_roles = machine.roles().len();
    let mut state = state.clone();
    for _ in 0..max_steps {
        if machine.is_terminal(&state)? {
            break;
        }
        if crate::search::past(deadline) {
            return Err(Halt::Deadline);
        }
        buffers.joint.clear();
        for r in 0..n_roles {
            buffers.legal.clear();
            machine.legal_moves_into(&state, r, &mut buffers.legal)?;
            if buffers.legal.is_empty() {
                return Err(Halt::Engine(
                    ggp_engine::machine::MachineError::NoLegalMoves {
                        role: machine.roles()[r].to_string(),
                    },
                ));
            }
            let mv = choice.pick(r, &mut buffers.legal, rng);
            buffers.joint.push(mv);
        }
        state = choice.next(machine, &state, &mut buffers.joint)?;
    }
    Ok(state)
}

/// Uniformly random joint moves.
pub struct UniformPlayout<Mv> {
    buffers: PlayoutBuffers<Mv>,
}

impl<Mv> Default for UniformPlayout<Mv> {
    fn default() -> Self {
        UniformPlayout {
            buffers: PlayoutBuffers::default(),
        }
    }
}

impl<M: StateMachine> PlayoutPolicy<M> for UniformPlayout<M::Move> {
    fn playout(
        &mut self,
        machine: &mut M,
        state: &M::State,
        rng: &mut Xoshiro256PlusPlus,
        deadline: Instant,
        max_steps: usize,
    ) -> Result<M::State, Halt> {
        timed_playout(machine, state, rng, deadline, max_steps, &mut self.buffers)
    }
}

/// Decisive moves (Teytaud and Teytaud, "On the Huge Benefit of Decisive Moves in Monte-Carlo
/// Tree Search Algorithms", 2010): where one role alone has a choice, it plays a move that
/// ends the game with its best goal (100) if it has one; every other move is uniformly
/// random. Each such step tries all the mover's moves, so a playout costs about the branching
/// factor times more; in return the playouts stop missing wins in one.
///
/// With anti-decisive moves (the same paper) the mover also avoids, where it can, a
/// move after which the next mover has a win in one: it tries its moves in random order and
/// plays the first after which no such win exists, so that a threat gets blocked in the
/// playout as it would in a game. The check of the move played is the next mover's own search
/// for a win, so the next step skips that search and anti-decisive moves cost little more
/// than decisive ones, except where moves are refused.
///
/// **Only moves seen to end a game are tried** for a win (as Sancho's greedy rollouts do):
/// the policy remembers every move that ended one of its playouts or a tried candidate, and
/// the searches for a win in one skip the others. In a game where few moves can end it
/// (breakthrough: a step onto the last row) a step then costs a few legal-move lists instead of
/// a next state per move; where any move can end it (connectFour) nothing changes. A move that
/// can win but never yet ended a playout is missed until it does once.
pub struct DecisivePlayout<Mv> {
    moves: DecisiveMoves<Mv>,
    buffers: PlayoutBuffers<Mv>,
}

/// The decisive policy's move choice: uniform, remembering the one mover's moves.
struct DecisiveMoves<Mv> {
    /// The mover's moves (the last role with a choice), in random order: the first is the
    /// move picked.
    options: Vec<Mv>,
    mover: Option<usize>,
    /// Roles with a choice this step.
    choosers: usize,
    /// The step's state is known to give its mover no win in one (the previous step's
    /// anti-decisive check found none), so the search for one is skipped.
    no_win: bool,
    /// Buffers of the anti-decisive check: a joint move, one role's legal moves, the next
    /// mover's moves.
    joint: Vec<Mv>,
    legal: Vec<Mv>,
    replies: Vec<Mv>,
    /// Moves seen to end a game: the only ones tried for a win in one.
    terminating: hashbrown::HashSet<Mv>,
    /// Steps where one role alone chose (the steps the policy acts on), and of them the
    /// steps where its move differs from the uniform one (a win taken, or the random move
    /// refused because it handed the next mover a win): what the policy is worth.
    decisions: u64,
    changed: u64,
}

impl<Mv> DecisivePlayout<Mv> {
    /// Decisive and anti-decisive playouts.
    pub fn new() -> Self {
        DecisivePlayout {
            moves: DecisiveMoves {
                options: Vec::new(),
                mover: None,
                choosers: 0,
                no_win: false,
                joint: Vec::new(),
                legal: Vec::new(),
                replies: Vec::new(),
                terminating: hashbrown::HashSet::new(),
                decisions: 0,
                changed: 0,
            },
            buffers: PlayoutBuffers::default(),
        }
    }
}

impl<Mv> DecisivePlayout<Mv> {
    /// Steps where one role alone chose, and of them the steps where the policy's move
    /// differed from the uniform one, since the policy was made.
    pub fn decisions(&self) -> (u64, u64) {
        (self.moves.decisions, self.moves.changed)
    }
}

impl<Mv> Default for DecisivePlayout<Mv> {
    fn default() -> Self {
        DecisivePlayout::new()
    }
}

/// Whether role `m` has its best goal (100) in the terminal state `end`.
fn wins<M: StateMachine>(machine: &mut M, end: &M::State, m: usize) -> Result<bool, Halt> {
    Ok(crate::search::goal_or_zero(machine, end, m)? == 100)
}

impl<Mv: Copy + Eq + std::hash::Hash> DecisiveMoves<Mv> {
    /// The one role with a choice in `state` (not nature), and whether it has a move that
    /// wins outright (of the moves seen to end a game); `None` when no single role has a
    /// choice there.
    fn gives_win<M>(
        &mut self,
        machine: &mut M,
        state: &M::State,
    ) -> Result<Option<(usize, bool)>, Halt>
    where
        M: StateMachine<Move = Mv>,
    {
        self.joint.clear();
        let mut mover = None;
        for r in 0..machine.roles().len() {
            self.legal.clear();
            machine.legal_moves_into(state, r, &mut self.legal)?;
            let Some(&first) = self.legal.first() else {
                return Ok(None);
            };
            if self.legal.len() > 1 {
                if mover.is_some() {
                    return Ok(None);
                }
                mover = Some(r);
                std::mem::swap(&mut self.replies, &mut self.legal);
            }
            self.joint.push(first);
        }
        let Some(m) = mover.filter(|&m| !machine.is_nature(m)) else {
            return Ok(None);
        };
        for i in 0..self.replies.len() {
            if !self.terminating.contains(&self.replies[i]) {
                continue;
            }
            self.joint[m] = self.replies[i];
            let next = machine.next_state_unchecked(state, &self.joint)?;
            if machine.is_terminal(&next)? && wins(machine, &next, m)? {
                return Ok(Some((m, true)));
            }
        }
        Ok(Some((m, false)))
    }
}

impl<M: StateMachine> MoveChoice<M> for DecisiveMoves<M::Move> {
    fn pick(
        &mut self,
        role: usize,
        legal: &mut Vec<M::Move>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> M::Move {
        use rand::seq::SliceRandom;
        if role == 0 {
            self.choosers = 0;
            self.mover = None;
        }
        if legal.len() == 1 {
            return legal[0];
        }
        self.choosers += 1;
        self.mover = Some(role);
        std::mem::swap(&mut self.options, legal);
        self.options.shuffle(rng);
        self.options[0]
    }

    /// Where one role alone had a choice, its first move that wins outright, if any;
    /// otherwise its first move (in random order) after which the next
    /// mover cannot win outright, if any.
    fn next(
        &mut self,
        machine: &mut M,
        state: &M::State,
        joint: &mut [M::Move],
    ) -> Result<M::State, Halt> {
        let known_no_win = std::mem::take(&mut self.no_win);
        if let (1, Some(m)) = (self.choosers, self.mover)
            && !machine.is_nature(m)
        {
            let random = joint[m];
            self.decisions += 1;
            if !known_no_win {
                for &option in &self.options {
                    if !self.terminating.contains(&option) {
                        continue;
                    }
                    joint[m] = option;
                    let next = machine.next_state_unchecked(state, joint)?;
                    if machine.is_terminal(&next)? && wins(machine, &next, m)? {
                        self.changed += u64::from(option != random);
                        return Ok(next);
                    }
                }
            }
            // The candidates' states are computed again rather than kept from the search for
            // a win: on the propnet, going back and forth between `state` and a candidate's
            // state (for the next mover's check) in one pass measured 3% slower.
            for i in 0..self.options.len() {
                joint[m] = self.options[i];
                let next = machine.next_state_unchecked(state, joint)?;
                if machine.is_terminal(&next)? {
                    // Not a known win (those were tried first): learn it, and take it if
                    // it wins; a move that ends the game otherwise is avoided.
                    self.terminating.insert(self.options[i]);
                    if wins(machine, &next, m)? {
                        self.changed += u64::from(i > 0);
                        return Ok(next);
                    }
                    continue;
                }
                // A win in one for the mover itself (moving again, or in a puzzle) is
                // no threat.
                match self.gives_win(machine, &next)? {
                    Some((n, true)) if n != m => continue,
                    found => {
                        self.no_win = matches!(found, Some((_, false)));
                        self.changed += u64::from(i > 0);
                        return Ok(next);
                    }
                }
            }
            joint[m] = random;
        }
        Ok(machine.next_state_unchecked(state, joint)?)
    }
}

impl<M: StateMachine> PlayoutPolicy<M> for DecisivePlayout<M::Move> {
    fn playout(
        &mut self,
        machine: &mut M,
        state: &M::State,
        rng: &mut Xoshiro256PlusPlus,
        deadline: Instant,
        max_steps: usize,
    ) -> Result<M::State, Halt> {
        self.moves.no_win = false;
        self.buffers.joint.clear();
        let end = play_out(
            &mut self.moves,
            machine,
            state,
            rng,
            deadline,
            max_steps,
            &mut self.buffers,
        )?;
        // The last step's joint move ended the game: its mover's move (every role's, where
        // more than one chose) can end one.
        if !self.buffers.joint.is_empty() && machine.is_terminal(&end)? {
            match (self.moves.choosers, self.moves.mover) {
                (1, Some(m)) => {
                    self.moves.terminating.insert(self.buffers.joint[m]);
                }
                _ => self
                    .moves
                    .terminating
                    .extend(self.buffers.joint.iter().copied()),
            }
        }
        Ok(end)
    }
}
