//! Probing a game with random playouts, to tell which search suits it.
//!
//! [`probe`] plays random playouts from the initial state until a deadline or a playout
//! count and records, at every state it passes: how many roles have more than one legal move,
//! and at every terminal state, the sum of the goal values. [`GameProbe::alternating_zero_sum`]
//! is the rule the `auto` player uses to consider alpha-beta:
//!
//! - exactly two roles;
//! - at least one playout reached a terminal state;
//! - in every non-terminal state seen, at most one role had more than one legal move
//!   (turn-taking: the other role has a single move, such as `noop`);
//! - the goal values at every terminal state seen sum to the same constant (usually 100),
//!   so that one side's gain is the other's loss.
//!
//! Probing is evidence, not proof: a state the playouts never reached may break the rule. The
//! alpha-beta search stays correct there as a pessimistic bound (see [`super::alphabeta`]).

use std::time::Instant;

use rand::Rng;

use ggp_engine::machine::StateMachine;

use super::{PlayoutBuffers, goal_or_zero, past};

/// What random playouts showed about a game.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GameProbe {
    /// Number of roles.
    pub roles: usize,
    /// Playouts that reached a terminal state.
    pub playouts: u64,
    /// Non-terminal states seen.
    pub states: u64,
    /// Non-terminal states where more than one role had more than one legal move.
    pub simultaneous_states: u64,
    /// The sum of the goal values, if it was the same at every terminal state seen.
    pub constant_sum: Option<u32>,
    /// Whether two terminal states had different goal sums.
    pub varying_sum: bool,
    /// Mean number of moves of a finished playout.
    pub mean_length: f64,
    /// Mean number of legal moves of the role with a choice, over the states seen.
    pub mean_branching: f64,
    /// Playouts abandoned because the engine failed.
    pub errors: u64,
    /// Wall-clock seconds spent.
    pub seconds: f64,
}

impl GameProbe {
    /// Whether the game looks two-player, turn-taking and constant-sum (the module's rule).
    pub fn alternating_zero_sum(&self) -> bool {
        self.simultaneous_states == 0 && self.two_player_sum().is_some()
    }

    /// The goal sum of a game that looks two-player and constant-sum, turn-taking or not.
    pub fn two_player_sum(&self) -> Option<u32> {
        let seen = self.roles == 2 && self.playouts > 0 && !self.varying_sum;
        self.constant_sum.filter(|_| seen)
    }
}

/// Plays random playouts from the initial state until `deadline` or `max_playouts` finished
/// ones; each playout stops after `max_steps` moves.
pub fn probe<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_playouts: u64,
    max_steps: usize,
) -> GameProbe {
    let started = Instant::now();
    let n_roles = machine.roles().len();
    let mut out = GameProbe {
        roles: n_roles,
        ..GameProbe::default()
    };
    let initial = machine.initial_state();
    let mut buffers = PlayoutBuffers::default();
    let (mut moves_made, mut branching_sum) = (0u64, 0u64);
    while out.playouts < max_playouts && !past(deadline) {
        match probe_playout(machine, &initial, rng, deadline, max_steps, &mut buffers) {
            Ok(Some(p)) => {
                out.playouts += 1;
                out.states += p.states;
                out.simultaneous_states += p.simultaneous;
                moves_made += p.states;
                branching_sum += p.branching;
                match out.constant_sum {
                    None if !out.varying_sum => out.constant_sum = Some(p.goal_sum),
                    Some(s) if s != p.goal_sum => {
                        out.constant_sum = None;
                        out.varying_sum = true;
                    }
                    _ => {}
                }
            }
            Ok(None) => break,
            Err(()) => {
                out.errors += 1;
                if out.errors > 10 && out.playouts == 0 {
                    break;
                }
            }
        }
    }
    if out.playouts > 0 {
        out.mean_length = moves_made as f64 / out.playouts as f64;
    }
    if out.states > 0 {
        out.mean_branching = branching_sum as f64 / out.states as f64;
    }
    out.seconds = started.elapsed().as_secs_f64();
    out
}

/// What one probing playout saw.
struct ProbePlayout {
    states: u64,
    simultaneous: u64,
    branching: u64,
    goal_sum: u32,
}

/// One playout; `Ok(None)` when the deadline or the step limit came first, `Err` when the
/// engine failed.
fn probe_playout<M: StateMachine>(
    machine: &mut M,
    initial: &M::State,
    rng: &mut impl Rng,
    deadline: Instant,
    max_steps: usize,
    buffers: &mut PlayoutBuffers<M::Move>,
) -> Result<Option<ProbePlayout>, ()> {
    let n_roles = machine.roles().len();
    let mut state = initial.clone();
    let mut seen = ProbePlayout {
        states: 0,
        simultaneous: 0,
        branching: 0,
        goal_sum: 0,
    };
    for _ in 0..max_steps {
        if machine.is_terminal(&state).map_err(|_| ())? {
            for r in 0..n_roles {
                seen.goal_sum += u32::from(goal_or_zero(machine, &state, r).map_err(|_| ())?);
            }
            return Ok(Some(seen));
        }
        if past(deadline) {
            return Ok(None);
        }
        buffers.joint.clear();
        let mut choosers = 0;
        let mut widest = 0;
        for r in 0..n_roles {
            buffers.legal.clear();
            machine
                .legal_moves_into(&state, r, &mut buffers.legal)
                .map_err(|_| ())?;
            if buffers.legal.is_empty() {
                return Err(());
            }
            if buffers.legal.len() > 1 {
                choosers += 1;
            }
            widest = widest.max(buffers.legal.len());
            buffers
                .joint
                .push(buffers.legal[rng.random_range(0..buffers.legal.len())]);
        }
        seen.states += 1;
        seen.branching += widest as u64;
        if choosers > 1 {
            seen.simultaneous += 1;
        }
        state = machine
            .next_state_unchecked(&state, &buffers.joint)
            .map_err(|_| ())?;
    }
    Ok(None)
}
