//! Batched rounds: many iterations whose playouts run side by side on an engine that plays
//! many games at once (the propnet's 256-lane batch, [`StateMachine::playouts_from`]).
//!
//! A round descends the tree up to `batch` times ([`Tree::descend`]), each descent putting a
//! virtual loss on its path (one visit worth nothing to every role) so that the next descent
//! prefers other moves and the round's leaves differ; a descent that ends at a settled node
//! is backed up at once. The leaves' states then go to the engine in one call, `leaf` lanes
//! per leaf (1: every playout from its own leaf; more: leaf parallelism), each lane playing
//! uniformly random moves to a terminal state or the step limit (the heuristic cut-off).
//! Afterwards the virtual losses are taken off and each lane's result is backed up along its
//! own leaf's path ([`Tree::complete`]): goals where the lane ended the game, the
//! evaluation's value of the state where it was cut ([`super::Evaluation::evaluate_cut`]).
//! The engine looks at the clock before every step; a round the deadline interrupts is
//! dropped, as an interrupted iteration is.
//!
//! Only uniform playouts run in the batch: with MAST or decisive playouts, or on an engine
//! that plays one game at a time (Datalog), the search runs one iteration at a time.

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::{MachineError, PlayoutEnd, StateMachine};
use crate::search::Halt;

use super::parallel::Context;
use super::tree::{Leaf, Scratch, Tree};
use super::{MctsSettings, Policies};

/// Playouts per round and per leaf for these settings on this engine; `None` when the
/// search should run one iteration at a time.
pub(super) fn round_size<M: StateMachine>(
    settings: &MctsSettings,
    machine: &M,
) -> Option<(usize, usize)> {
    (settings.batch > 1 && !settings.mast && !settings.decisive && machine.parallel_playouts() > 1)
        .then(|| (settings.batch, settings.leaf.clamp(1, settings.batch)))
}

/// Buffers of a round, reused across rounds.
pub(super) struct Lanes<S, Mv> {
    /// One path per descent that needs playouts.
    paths: Vec<Scratch<Mv>>,
    /// One start state per playout.
    starts: Vec<S>,
    /// For each playout, the path (index into `paths`) it belongs to.
    owner: Vec<usize>,
    ends: Vec<PlayoutEnd<S>>,
}

impl<S, Mv> Default for Lanes<S, Mv> {
    fn default() -> Self {
        Lanes {
            paths: Vec::new(),
            starts: Vec::new(),
            owner: Vec::new(),
            ends: Vec::new(),
        }
    }
}

/// What one round did.
#[derive(Debug, Default)]
pub(super) struct Round {
    /// Results backed up (playouts, and descents that ended at a settled node).
    pub(super) iterations: u64,
    /// Iterations dropped because the engine failed.
    pub(super) errors: u64,
    pub(super) last_error: Option<MachineError>,
    /// Whether the deadline passed (the round's playouts are then dropped).
    pub(super) deadline: bool,
}

/// One round of at most `size` iterations, `leaf` playouts per leaf (see the module
/// documentation).
#[allow(clippy::too_many_arguments)]
pub(super) fn round<M: StateMachine>(
    tree: &mut Tree<M::State, M::Move>,
    machine: &mut M,
    rng: &mut Xoshiro256PlusPlus,
    ctx: &Context,
    policies: &mut Policies<M>,
    lanes: &mut Lanes<M::State, M::Move>,
    size: usize,
    leaf: usize,
) -> Round {
    let n_roles = machine.roles().len();
    let mut round = Round::default();
    lanes.starts.clear();
    lanes.owner.clear();
    let mut used = 0;
    let mut attempts = 0;
    while attempts < size && !tree.root_settled() {
        if used == lanes.paths.len() {
            lanes.paths.push(Scratch::default());
        }
        let scratch = &mut lanes.paths[used];
        match tree.descend(machine, rng, ctx, policies, scratch) {
            Ok(Leaf::Value(v)) => {
                tree.complete(n_roles, policies, scratch, v);
                round.iterations += 1;
                attempts += 1;
            }
            Ok(Leaf::Playout(state)) => {
                tree.virtual_loss(scratch, n_roles, true);
                let k = leaf.min(size - attempts);
                for _ in 0..k {
                    lanes.starts.push(state.clone());
                    lanes.owner.push(used);
                }
                used += 1;
                attempts += k;
            }
            Err(Halt::Engine(e)) => {
                round.errors += 1;
                round.last_error = Some(e);
                attempts += 1;
            }
            Err(Halt::Deadline) => {
                round.deadline = true;
                break;
            }
        }
    }
    for path in &lanes.paths[..used] {
        tree.virtual_loss(path, n_roles, false);
    }
    if round.deadline || lanes.starts.is_empty() {
        return round;
    }
    match machine.playouts_from(
        &lanes.starts,
        rng,
        ctx.max_steps,
        ctx.deadline,
        &mut lanes.ends,
    ) {
        Ok(true) => {}
        Ok(false) => {
            round.deadline = true;
            return round;
        }
        Err(e) => {
            round.errors += lanes.starts.len() as u64;
            round.last_error = Some(e);
            return round;
        }
    }
    let mut rewards = Vec::with_capacity(n_roles);
    for (end, &owner) in lanes.ends.iter().zip(&lanes.owner) {
        match end {
            PlayoutEnd::Goals(goals) => {
                rewards.clear();
                rewards.extend(goals.iter().map(|&g| f64::from(g) / 100.0));
            }
            PlayoutEnd::Cut(state) => {
                if let Err(e) = policies.eval.evaluate_cut(machine, state, &mut rewards) {
                    round.errors += 1;
                    round.last_error = Some(e);
                    continue;
                }
            }
        }
        tree.complete(n_roles, policies, &mut lanes.paths[owner], rewards.clone());
        round.iterations += 1;
    }
    round
}
