//! The threads of one search: root parallelisation. Each thread has its own tree, machine,
//! generator and policies ([`run_all`]); the threads share only the deadline and a stop flag
//! (raised when a tree settles its root), and each is deterministic for its seed.
//! [`merge_root`] sums the root moves' visits and rewards over the trees and keeps each move's
//! tightest bounds. One tree shared by the threads (tree parallelisation, with virtual loss)
//! was measured and removed: see `docs/experiments/tree-parallelism.md`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::search::{Halt, past};
use ggp_engine::machine::{MachineError, StateMachine};

use super::Policies;
use super::tree::{Scratch, Tree};

/// What every thread of one search shares.
pub(super) struct Context {
    pub(super) deadline: Instant,
    /// Set when a tree settles its root.
    pub(super) stop: AtomicBool,
    pub(super) max_steps: usize,
    /// Pseudo-visits a new node's estimate counts as (0: none).
    pub(super) prior: u32,
    /// The weight of the implicit minimax values in the selection (0: none; see
    /// [`super::IMPLICIT_WEIGHT`]).
    pub(super) implicit: f64,
    /// Where finished playouts are counted as they happen (see
    /// [`SearchConfig::progress`](crate::search::SearchConfig::progress)).
    pub(super) progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Playouts per batched round and per leaf ([`super::batch`]); `None`: one iteration at
    /// a time.
    pub(super) batch: Option<(usize, usize)>,
    /// How the other roles' rewards are read ([`super::Rivalry`]): applied to every
    /// playout's, estimate's and terminal node's rewards as they enter the tree.
    pub(super) rivalry: Option<super::Rivalry>,
}

/// What one thread's search did.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) iterations: u64,
    pub(super) errors: u64,
    pub(super) last_error: Option<MachineError>,
}

/// What one thread searches with: its machine, generator and policies.
pub(super) struct Hand<'a, M: StateMachine> {
    pub(super) machine: &'a mut M,
    pub(super) rng: &'a mut Xoshiro256PlusPlus,
    pub(super) policies: &'a mut Policies<M>,
}

/// One thread's share of a root-parallel search.
pub(super) struct Worker<'a, M: StateMachine> {
    pub(super) tree: &'a mut Tree<M::State, M::Move>,
    pub(super) hand: Hand<'a, M>,
    /// Iterations (attempts) allowed.
    pub(super) quota: u64,
}

/// Runs every worker until the deadline, its quota, or a settled root; one thread each (no
/// thread for a single worker).
pub(super) fn run_all<M: StateMachine + Send>(
    workers: Vec<Worker<'_, M>>,
    ctx: &Context,
) -> Vec<Counts> {
    if workers.len() == 1 {
        return workers.into_iter().map(|w| run_tree(w, ctx)).collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|w| scope.spawn(move || run_tree(w, ctx)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Runs iterations on one tree until the deadline, `quota` attempts, or a settled root.
fn run_tree<M: StateMachine>(w: Worker<'_, M>, ctx: &Context) -> Counts {
    let Worker {
        tree,
        hand: Hand {
            machine,
            rng,
            policies,
        },
        quota,
    } = w;
    let mut scratch = Scratch::default();
    let mut lanes = super::batch::Lanes::default();
    let mut counts = Counts::default();
    while counts.iterations + counts.errors < quota && !ctx.stop.load(Ordering::Relaxed) {
        if tree.root_settled() {
            ctx.stop.store(true, Ordering::Relaxed);
            break;
        }
        if past(ctx.deadline) {
            break;
        }
        if let Some((size, leaf)) = ctx.batch {
            let left = quota - counts.iterations - counts.errors;
            let round = super::batch::round(
                tree,
                machine,
                rng,
                ctx,
                policies,
                &mut lanes,
                size.min(left.try_into().unwrap_or(usize::MAX)),
                leaf,
            );
            counts.iterations += round.iterations;
            counts.errors += round.errors;
            if round.last_error.is_some() {
                counts.last_error = round.last_error;
            }
            if let Some(p) = &ctx.progress {
                p.fetch_add(round.iterations, Ordering::Relaxed);
            }
            if round.deadline {
                break;
            }
            continue;
        }
        match tree.iterate(machine, rng, ctx, policies, &mut scratch) {
            Ok(()) => {
                counts.iterations += 1;
                if let Some(p) = &ctx.progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(Halt::Engine(e)) => {
                counts.errors += 1;
                counts.last_error = Some(e);
            }
            Err(Halt::Deadline) => break,
        }
    }
    if tree.root_settled() {
        ctx.stop.store(true, Ordering::Relaxed);
    }
    counts
}

/// One root move's statistics merged over the trees.
#[derive(Debug, Clone, Copy)]
pub(super) struct MoveSummary {
    pub(super) visits: u64,
    pub(super) sum: f64,
    /// What the move is sure to give us whatever the others reply (0..1).
    pub(super) lower: f64,
    /// The most the move can give us.
    pub(super) upper: f64,
}

impl Default for MoveSummary {
    fn default() -> MoveSummary {
        MoveSummary {
            visits: 0,
            sum: 0.0,
            lower: 0.0,
            upper: 1.0,
        }
    }
}

impl MoveSummary {
    pub(super) fn mean(&self) -> f64 {
        if self.visits == 0 {
            0.0
        } else {
            self.sum / self.visits as f64
        }
    }

    pub(super) fn exact(&self) -> bool {
        self.lower == self.upper
    }
}

/// `role`'s root moves as in `moves` (the first tree's), each merged over `trees`.
pub(super) fn merge_root<S: Clone + Eq, Mv: Copy + Eq>(
    trees: &[Tree<S, Mv>],
    role: usize,
    moves: &[Mv],
) -> Vec<MoveSummary> {
    let mut merged: Vec<MoveSummary> = vec![MoveSummary::default(); moves.len()];
    for tree in trees {
        let root = &tree.nodes[0];
        let bounds = tree.move_bounds(0, role);
        for (i, mv) in root.moves[role].iter().enumerate() {
            let Some(j) = moves.iter().position(|m| m == mv) else {
                continue;
            };
            let s = &mut merged[j];
            s.visits += u64::from(root.stats[role][i].visits);
            s.sum += root.stats[role][i].sum;
            s.lower = s.lower.max(bounds[i].0);
            s.upper = s.upper.min(bounds[i].1);
        }
    }
    merged
}
