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
//! A round has three parts: [`gather`] (the descents) and [`settle`] (the back-ups) work on
//! the tree, [`play`] (the playouts) only on the engine; the virtual losses stay on while the
//! playouts run.
//!
//! Only uniform playouts run in the batch: with anti-decisive playouts, or on an engine that
//! plays one game at a time (Datalog), the search runs one iteration at a time.

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::search::Halt;
use ggp_engine::machine::{MachineError, PlayoutEnd, StateMachine};

use super::parallel::Context;
use super::tree::{Leaf, Scratch, Tree};
use super::{MctsSettings, Plan, Playout, Policies};

/// Playouts per round and per leaf for these settings and plan on this engine; `None` when
/// the search should run one iteration at a time.
pub(super) fn round_size<M: StateMachine>(
    settings: &MctsSettings,
    plan: &Plan,
    machine: &M,
) -> Option<(usize, usize)> {
    (settings.batch > 1 && plan.playout == Playout::Uniform && machine.parallel_playouts() > 1)
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
    /// Paths of the current round (the first `used` of `paths`).
    used: usize,
}

impl<S, Mv> Default for Lanes<S, Mv> {
    fn default() -> Self {
        Lanes {
            paths: Vec::new(),
            starts: Vec::new(),
            owner: Vec::new(),
            ends: Vec::new(),
            used: 0,
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
    let mut round = gather(tree, machine, rng, ctx, policies, lanes, size, leaf);
    let ran = play(machine, rng, ctx, lanes, &mut round);
    settle(tree, machine, ctx, policies, lanes, &mut round, ran);
    round
}

/// The first part of a round, on the tree: up to `size` descents, each leaf given `leaf`
/// lanes and a virtual loss on its path (left on until [`settle`]); descents that end at a
/// settled node are backed up at once.
#[allow(clippy::too_many_arguments)]
fn gather<M: StateMachine>(
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
    lanes.used = 0;
    let mut attempts = 0;
    while attempts < size && !tree.root_settled() {
        if lanes.used == lanes.paths.len() {
            lanes.paths.push(Scratch::default());
        }
        let scratch = &mut lanes.paths[lanes.used];
        match tree.descend(machine, rng, ctx, policies, scratch) {
            Ok(Leaf::Value(v)) => {
                tree.complete(n_roles, scratch, v, ctx.implicit > 0.0);
                round.iterations += 1;
                attempts += 1;
            }
            Ok(Leaf::Playout(state)) => {
                tree.virtual_loss(scratch, n_roles, true);
                let k = leaf.min(size - attempts);
                for _ in 0..k {
                    lanes.starts.push(state.clone());
                    lanes.owner.push(lanes.used);
                }
                lanes.used += 1;
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
    round
}

/// The middle of a round, which needs no tree: the lanes' playouts in one call to the
/// engine; whether they all ended (false when the deadline passed or the engine failed,
/// noted in `round`).
fn play<M: StateMachine>(
    machine: &mut M,
    rng: &mut Xoshiro256PlusPlus,
    ctx: &Context,
    lanes: &mut Lanes<M::State, M::Move>,
    round: &mut Round,
) -> bool {
    if round.deadline || lanes.starts.is_empty() {
        return false;
    }
    match machine.playouts_from(
        &lanes.starts,
        rng,
        ctx.max_steps,
        ctx.deadline,
        &mut lanes.ends,
    ) {
        Ok(true) => true,
        Ok(false) => {
            round.deadline = true;
            false
        }
        Err(e) => {
            round.errors += lanes.starts.len() as u64;
            round.last_error = Some(e);
            false
        }
    }
}

/// The last part of a round, on the tree: the virtual losses taken off and, if the
/// playouts `ran`, each lane backed up along its own leaf's path.
fn settle<M: StateMachine>(
    tree: &mut Tree<M::State, M::Move>,
    machine: &mut M,
    ctx: &Context,
    policies: &mut Policies<M>,
    lanes: &mut Lanes<M::State, M::Move>,
    round: &mut Round,
    ran: bool,
) {
    let n_roles = machine.roles().len();
    for path in &lanes.paths[..lanes.used] {
        tree.virtual_loss(path, n_roles, false);
    }
    if !ran {
        return;
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
        if let Some(rivalry) = ctx.rivalry {
            rivalry.apply(&mut rewards);
        }
        tree.complete(
            n_roles,
            &mut lanes.paths[owner],
            rewards.clone(),
            ctx.implicit > 0.0,
        );
        round.iterations += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use rand::SeedableRng;

    use super::*;
    use crate::search::mcts::tree::Node;
    use ggp_engine::propnet::{Budget, MoveId, PropnetMachine, PropnetState};
    use ggp_gdl::gdl::Description;

    /// A ticTacToe tree with a fresh root, and what a round needs.
    struct Fixture {
        m: PropnetMachine,
        tree: Tree<PropnetState, MoveId>,
        policies: Policies<PropnetMachine>,
        ctx: Context,
        rng: Xoshiro256PlusPlus,
        lanes: Lanes<PropnetState, MoveId>,
    }

    impl Fixture {
        fn new() -> Fixture {
            let description =
                Description::from_text(include_str!("../../../../../rules/ticTacToe.kif")).unwrap();
            let mut m = PropnetMachine::new(&description, &Budget::default()).unwrap();
            let mut tree = Tree::new(64 << 20);
            let initial = m.initial_state();
            tree.reset(Node::new(&mut m, initial).unwrap());
            let settings = MctsSettings::default();
            Fixture {
                m,
                tree,
                policies: Policies {
                    select: settings.selection(),
                    playout: Box::new(crate::search::mcts::UniformPlayout::default()),
                    eval: Box::new(crate::search::mcts::GoalEvaluation),
                },
                ctx: Context {
                    deadline: Instant::now() + Duration::from_secs(3600),
                    stop: AtomicBool::new(false),
                    max_steps: 5000,
                    prior: 0,
                    implicit: 0.0,
                    progress: None,
                    batch: None,
                    rivalry: None,
                },
                rng: Xoshiro256PlusPlus::seed_from_u64(5),
                lanes: Lanes::default(),
            }
        }

        fn round(&mut self, size: usize, leaf: usize) -> Round {
            let f = self;
            round(
                &mut f.tree,
                &mut f.m,
                &mut f.rng,
                &f.ctx,
                &mut f.policies,
                &mut f.lanes,
                size,
                leaf,
            )
        }

        /// Every node's visits equal each role's summed move visits (no virtual loss left).
        fn consistent(&self) -> bool {
            self.tree.nodes.iter().all(|n| {
                n.stats
                    .iter()
                    .all(|s| s.iter().map(|s| s.visits).sum::<u32>() == n.visits)
            })
        }
    }

    /// Virtual losses spread a round over the tree: nine descents from a fresh ticTacToe root
    /// take its nine moves, one each, and each lane's result is backed up along its own path
    /// only (the root's rewards add up to the lanes' goals; every child was visited once).
    /// A second round of 40 adds exactly 40 visits, and no virtual visit is left behind.
    #[test]
    fn a_round_backs_each_lane_up_along_its_own_path() {
        let mut f = Fixture::new();
        let first = f.round(9, 1);
        assert_eq!((first.iterations, first.errors), (9, 0));
        let root = &f.tree.nodes[0];
        assert_eq!(root.visits, 9);
        assert_eq!(root.children.len(), 9);
        assert!(root.stats[0].iter().all(|s| s.visits == 1));
        // x's rewards at the root are the lanes' goals for x (0, 0.5 or 1 each).
        let sum: f64 = root.stats[0].iter().map(|s| s.sum).sum();
        let goals: f64 = f
            .lanes
            .ends
            .iter()
            .map(|e| match e {
                PlayoutEnd::Goals(g) => f64::from(g[0]) / 100.0,
                PlayoutEnd::Cut(_) => panic!("ticTacToe playouts end"),
            })
            .sum();
        assert!((sum - goals).abs() < 1e-9);
        assert!(f.consistent());
        assert_eq!(f.round(40, 1).iterations, 40);
        assert_eq!(f.tree.nodes[0].visits, 49);
        assert!(f.consistent());
        // Leaf parallelism: 40 playouts, at most 8 per leaf, all of a leaf's from its state.
        assert_eq!(f.round(40, 8).iterations, 40);
        assert_eq!(f.tree.nodes[0].visits, 89);
        let (owner, starts) = (&f.lanes.owner, &f.lanes.starts);
        let leaves = owner.iter().max().map_or(0, |&o| o + 1);
        assert!(leaves >= 5, "{leaves} leaves");
        for (i, &o) in owner.iter().enumerate() {
            let first = owner.iter().position(|&x| x == o).unwrap();
            assert_eq!(starts[i], starts[first]);
            assert!(owner.iter().filter(|&&x| x == o).count() <= 8);
        }
        assert!(f.consistent());
    }

    /// A round the deadline interrupts backs nothing up and leaves no virtual loss.
    #[test]
    fn an_interrupted_round_leaves_the_tree_as_it_was() {
        let mut f = Fixture::new();
        f.round(20, 1);
        let visits = f.tree.nodes[0].visits;
        f.ctx.deadline = Instant::now();
        let r = f.round(20, 1);
        assert!(r.deadline);
        assert_eq!(r.iterations, 0);
        assert_eq!(f.tree.nodes[0].visits, visits);
        assert!(f.consistent());
    }
}
