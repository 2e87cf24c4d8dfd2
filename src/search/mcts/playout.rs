//! The playout policy: how an iteration continues past the tree to the end of the game.
//!
//! A [`PlayoutPolicy`] plays joint moves from the state where the tree stops until a terminal
//! state (or a step limit) and returns the last state, which the [`super::eval`] evaluation
//! then scores. After the iteration is backed up, the policy is told the joint moves chosen
//! in the tree and the rewards, so a policy that learns during the match (MAST, N-grams) can
//! update itself; the moves of its own playout it remembers itself. Each search thread has
//! its own policy. To try another policy, implement the trait and return it from
//! [`super::MctsSettings::playout`].

use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::StateMachine;
use crate::search::{Halt, PlayoutBuffers, timed_playout};

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

    /// The iteration ended: `tree_moves` are the joint moves chosen in the tree (root first,
    /// one move per role each), `rewards` each role's reward 0..1. The policy's playout since
    /// the previous call, if it played one, belongs to this iteration.
    fn learn(&mut self, tree_moves: &[M::Move], n_roles: usize, rewards: &[f64]) {
        let _ = (tree_moves, n_roles, rewards);
    }

    /// Whether [`learn`](Self::learn) does anything (the tree skips collecting its moves
    /// otherwise).
    fn learns(&self) -> bool {
        false
    }
}

/// Whether a playout stops at `state` because it is terminal; an error once the deadline has
/// passed.
fn ended<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    deadline: Instant,
) -> Result<bool, Halt> {
    if machine.is_terminal(state)? {
        return Ok(true);
    }
    if crate::search::past(deadline) {
        return Err(Halt::Deadline);
    }
    Ok(false)
}

/// Role `role`'s legal moves in `state` into `out` (cleared first); an error if it has none.
fn legal_into<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
    out: &mut Vec<M::Move>,
) -> Result<(), Halt> {
    out.clear();
    machine.legal_moves_into(state, role, out)?;
    if out.is_empty() {
        return Err(Halt::Engine(crate::machine::MachineError::NoLegalMoves {
            role: machine.roles()[role].to_string(),
        }));
    }
    Ok(())
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

/// MAST (move-average sampling, Finnsson and Björnsson 2008): every (role, move) pair keeps
/// the average reward of the iterations it was played in, whatever the state, learnt from the
/// tree part and the playouts of every iteration of the match. In a playout each role with a
/// choice plays, with probability `epsilon`, a uniformly random move and otherwise its move
/// with the best average (ε-greedy, as Tak, Winands and Björnsson found best with N-grams in
/// 2012); a move never seen counts as the best possible, so it gets tried.
pub struct MastPlayout<Mv> {
    /// (role, move) → (summed reward, count).
    table: hashbrown::HashMap<(u32, Mv), (f64, f64)>,
    /// The joint moves of the last playout, one move per role each.
    played: Vec<Mv>,
    epsilon: f64,
    legal: Vec<Mv>,
    joint: Vec<Mv>,
}

impl<Mv> MastPlayout<Mv> {
    /// A policy playing a random move with probability `epsilon`, else the best average.
    pub fn new(epsilon: f64) -> MastPlayout<Mv> {
        MastPlayout {
            table: hashbrown::HashMap::new(),
            played: Vec::new(),
            epsilon,
            legal: Vec::new(),
            joint: Vec::new(),
        }
    }
}

impl<Mv: Copy + Eq + std::hash::Hash> MastPlayout<Mv> {
    /// The average reward of `role` playing `mv`, if it was ever played.
    pub fn average(&self, role: usize, mv: Mv) -> Option<f64> {
        self.table
            .get(&(role as u32, mv))
            .map(|&(sum, n)| sum / n.max(1.0))
    }

    /// Adds `rewards` to the averages of `moves`, joint moves of `n_roles` moves each.
    pub fn update(&mut self, moves: &[Mv], n_roles: usize, rewards: &[f64]) {
        let n = n_roles.max(1);
        for (i, &mv) in moves.iter().enumerate() {
            let role = i % n;
            let entry = self.table.entry((role as u32, mv)).or_insert((0.0, 0.0));
            entry.0 += rewards[role];
            entry.1 += 1.0;
        }
    }

    /// Role `role`'s move among `self.legal` (not empty).
    fn pick(&self, role: usize, rng: &mut Xoshiro256PlusPlus) -> Mv {
        use rand::Rng;
        let n = self.legal.len();
        if n == 1 || rng.random_bool(self.epsilon) {
            return self.legal[rng.random_range(0..n)];
        }
        let mut best = f64::NEG_INFINITY;
        let mut ties = 0u32;
        let mut pick = self.legal[0];
        for &mv in &self.legal {
            let value = self.average(role, mv).unwrap_or(1.0);
            if value > best {
                best = value;
                pick = mv;
                ties = 1;
            } else if value == best {
                // Reservoir sampling among equals.
                ties += 1;
                if rng.random_range(0..ties) == 0 {
                    pick = mv;
                }
            }
        }
        pick
    }
}

impl<M: StateMachine> PlayoutPolicy<M> for MastPlayout<M::Move> {
    fn playout(
        &mut self,
        machine: &mut M,
        state: &M::State,
        rng: &mut Xoshiro256PlusPlus,
        deadline: Instant,
        max_steps: usize,
    ) -> Result<M::State, Halt> {
        let n_roles = machine.roles().len();
        self.played.clear();
        let mut state = state.clone();
        for _ in 0..max_steps {
            if ended(machine, &state, deadline)? {
                break;
            }
            self.joint.clear();
            for r in 0..n_roles {
                legal_into(machine, &state, r, &mut self.legal)?;
                let mv = self.pick(r, rng);
                self.joint.push(mv);
            }
            self.played.extend_from_slice(&self.joint);
            state = machine.next_state_unchecked(&state, &self.joint)?;
        }
        Ok(state)
    }

    fn learns(&self) -> bool {
        true
    }

    fn learn(&mut self, tree_moves: &[M::Move], n_roles: usize, rewards: &[f64]) {
        self.update(tree_moves, n_roles, rewards);
        let mut played = std::mem::take(&mut self.played);
        self.update(&played, n_roles, rewards);
        played.clear();
        self.played = played;
    }
}

/// Decisive moves (Teytaud and Teytaud, "On the Huge Benefit of Decisive Moves in Monte-Carlo
/// Tree Search Algorithms", 2010): where one role alone has a choice, it plays a move that
/// ends the game with its best goal (100) if it has one; every other move is uniformly
/// random. Each such step tries all the mover's moves, so a playout costs about the branching
/// factor times more; in return the playouts stop missing wins in one.
pub struct DecisivePlayout<Mv> {
    joint: Vec<Mv>,
    legal: Vec<Mv>,
    /// The mover's moves.
    options: Vec<Mv>,
}

impl<Mv> Default for DecisivePlayout<Mv> {
    fn default() -> Self {
        DecisivePlayout {
            joint: Vec::new(),
            legal: Vec::new(),
            options: Vec::new(),
        }
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
        use rand::Rng;
        let n_roles = machine.roles().len();
        let mut state = state.clone();
        'steps: for _ in 0..max_steps {
            if ended(machine, &state, deadline)? {
                break;
            }
            self.joint.clear();
            let mut mover = None;
            let mut choosers = 0;
            for r in 0..n_roles {
                legal_into(machine, &state, r, &mut self.legal)?;
                if self.legal.len() > 1 {
                    choosers += 1;
                    mover = Some(r);
                    std::mem::swap(&mut self.options, &mut self.legal);
                    self.joint
                        .push(self.options[rng.random_range(0..self.options.len())]);
                } else {
                    self.joint.push(self.legal[0]);
                }
            }
            if let (1, Some(m)) = (choosers, mover)
                && !machine.is_nature(m)
            {
                let random = self.joint[m];
                for i in 0..self.options.len() {
                    self.joint[m] = self.options[i];
                    let next = machine.next_state_unchecked(&state, &self.joint)?;
                    if machine.is_terminal(&next)?
                        && crate::search::goal_or_zero(machine, &next, m)? == 100
                    {
                        state = next;
                        continue 'steps;
                    }
                }
                self.joint[m] = random;
            }
            state = machine.next_state_unchecked(&state, &self.joint)?;
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn mast_prefers_the_move_that_wins_more() {
        let mut mast: MastPlayout<u8> = MastPlayout::new(0.0);
        // Two roles; role 0 won with move 1 and lost with move 2; role 1's moves are 9.
        for _ in 0..5 {
            mast.update(&[1, 9], 2, &[1.0, 0.0]);
            mast.update(&[2, 9], 2, &[0.0, 1.0]);
        }
        assert_eq!(mast.average(0, 1), Some(1.0));
        assert_eq!(mast.average(0, 2), Some(0.0));
        assert_eq!(mast.average(1, 9), Some(0.5));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        mast.legal = vec![2, 1];
        for _ in 0..20 {
            assert_eq!(mast.pick(0, &mut rng), 1);
        }
        // A move never seen counts as the best possible.
        mast.legal = vec![2, 3];
        assert_eq!(mast.pick(0, &mut rng), 3);
    }
}
