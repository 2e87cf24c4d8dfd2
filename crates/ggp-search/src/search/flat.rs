//! The `flat` player: flat Monte Carlo, no tree (ggp-base's SampleMonteCarloGamer).
//!
//! With a single legal move it plays it at once. Otherwise it takes our moves in turn,
//! round-robin, until the deadline (or the iteration limit): each sample fixes our move, draws
//! uniformly random moves for the other roles, and plays uniformly random joint moves to the
//! end; our goal value is added to the move's total. It plays the move with the best average
//! (the first of equals). It assumes random opponents, so it favours "hope" moves and misses
//! forced replies: a baseline to beat, not a strong player.

use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::StateMachine;

use super::{
    Choice, Halt, Player, PlayoutBuffers, SearchConfig, SearchError, goal_or_zero, past,
    timed_playout,
};

/// A playout that has not ended after this many moves is scored by its last state's goals.
const MAX_STEPS: usize = 5000;

/// The `flat` player.
pub(super) struct FlatPlayer<Mv> {
    config: SearchConfig,
    role: usize,
    rng: Xoshiro256PlusPlus,
    buffers: PlayoutBuffers<Mv>,
}

impl<Mv> FlatPlayer<Mv> {
    pub(super) fn new(config: SearchConfig) -> FlatPlayer<Mv> {
        FlatPlayer {
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            config,
            role: 0,
            buffers: PlayoutBuffers::default(),
        }
    }
}

impl<M: StateMachine> Player<M> for FlatPlayer<M::Move> {
    fn name(&self) -> String {
        "flat".into()
    }

    fn start(&mut self, _: &mut M, role: usize, _: Instant) -> Result<(), SearchError> {
        self.role = role;
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if machine.is_terminal(state)? {
            return Err(SearchError::NoMove);
        }
        let moves = machine.legal_moves(state, self.role)?;
        let Some(&first) = moves.first() else {
            return Err(SearchError::NoMove);
        };
        if moves.len() == 1 {
            return Ok(Choice::unsearched(first));
        }
        let limit = self.config.max_iterations.unwrap_or(u64::MAX);
        let mut totals = vec![(0u64, 0u64); moves.len()];
        let mut samples = 0u64;
        let mut joint = Vec::new();
        let mut legal = Vec::new();
        'sampling: while samples < limit {
            for (i, &mv) in moves.iter().enumerate() {
                if samples >= limit || past(deadline) {
                    break 'sampling;
                }
                machine.random_joint_move_into(state, &mut self.rng, &mut joint, &mut legal)?;
                joint[self.role] = mv;
                let next = machine.next_state_unchecked(state, &joint)?;
                let last = match timed_playout(
                    machine,
                    &next,
                    &mut self.rng,
                    deadline,
                    MAX_STEPS,
                    &mut self.buffers,
                ) {
                    Ok(last) => last,
                    Err(Halt::Deadline) => break 'sampling,
                    Err(Halt::Engine(e)) => return Err(e.into()),
                };
                let goal = goal_or_zero(machine, &last, self.role)?;
                totals[i].0 += u64::from(goal);
                totals[i].1 += 1;
                samples += 1;
            }
        }
        let mean = |(sum, n): (u64, u64)| (n > 0).then(|| sum as f64 / n as f64);
        let mut best: Option<(usize, f64)> = None;
        for (i, &t) in totals.iter().enumerate() {
            if let Some(m) = mean(t)
                && best.is_none_or(|(_, b)| m > b)
            {
                best = Some((i, m));
            }
        }
        Ok(Choice {
            mv: moves[best.map_or(0, |(i, _)| i)],
            iterations: samples,
            value: best.map(|(_, m)| m),
            proven: false,
        })
    }
}
