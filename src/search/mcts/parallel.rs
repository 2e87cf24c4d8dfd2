//! The threads of one search: root parallelisation (one tree per thread, root statistics
//! merged) or tree parallelisation (one tree shared by every thread), chosen by
//! [`Parallelism`].
//!
//! **Root** ([`run_all`]): each thread has its own tree, machine, generator and policies; the
//! threads share only the deadline and a stop flag (raised when a tree settles its root), and
//! each is deterministic for its seed. [`merge_root`] sums the root moves' visits and rewards
//! over the trees and keeps each move's tightest bounds.
//!
//! **Tree** ([`run_shared`]): one tree behind a lock, each thread with its own machine,
//! generator and policies. A thread locks the tree to descend (selection and expansion, as
//! one thread does) and puts a virtual loss on its path (one visit worth nothing to every role,
//! [`Tree::virtual_loss`]), so that the other threads' descents prefer other moves; it runs
//! its playout with the lock released, then locks again to take the virtual loss off and back
//! the result up (the solver's bounds are tightened then, as with one thread). With batched
//! rounds ([`super::batch`]) a thread holds the lock for its round's descents and for its
//! back-ups, not for its playouts. The tree gets the whole memory budget, and tree reuse works
//! on it as on one thread's. An iteration limit is shared: each attempt is claimed from one
//! counter. On one thread both modes are the same search; with more, the threads' order
//! depends on the scheduler, so a tree search is not repeatable for a seed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::{MachineError, StateMachine};
use crate::search::{Halt, past};

use super::Policies;
use super::tree::{Leaf, Scratch, Tree, play_out};

/// How the threads of one search share the work (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Parallelism {
    /// One tree per thread, the roots' statistics merged.
    #[default]
    Root,
    /// One tree shared by every thread, with virtual loss.
    Tree,
}

/// What every thread of one search shares.
pub(super) struct Context {
    pub(super) deadline: Instant,
    /// Set when a tree settles its root.
    pub(super) stop: AtomicBool,
    pub(super) max_steps: usize,
    /// Pseudo-visits a new node's estimate counts as (0: none).
    pub(super) prior: u32,
    /// Where finished playouts are counted as they happen (see
    /// [`SearchConfig::progress`](crate::search::SearchConfig::progress)).
    pub(super) progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Playouts per batched round and per leaf ([`super::batch`]); `None`: one iteration at
    /// a time.
    pub(super) batch: Option<(usize, usize)>,
}

/// What one thread's search did.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) iterations: u64,
    pub(super) errors: u64,
    pub(super) last_error: Option<MachineError>,
}

/// What one thread searches with, whatever the tree: its machine, generator and policies.
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

/// A tree shared by the threads of a search, and their shared iteration limit.
struct SharedTree<'t, S, Mv> {
    tree: Mutex<&'t mut Tree<S, Mv>>,
    /// Attempts claimed so far.
    claimed: AtomicU64,
    limit: u64,
}

impl<'t, S, Mv> SharedTree<'t, S, Mv> {
    /// The tree, locked (a thread that panicked holding it left it usable: every change is
    /// made between two consistent states of the statistics, at worst leaving a virtual loss).
    fn lock(&self) -> MutexGuard<'_, &'t mut Tree<S, Mv>> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims up to `n` attempts; how many were granted (0 once the limit is reached).
    fn claim(&self, n: u64) -> u64 {
        if self.limit == u64::MAX {
            return n;
        }
        let before = self.claimed.fetch_add(n, Ordering::Relaxed);
        n.min(self.limit.saturating_sub(before))
    }
}

/// Runs every hand on the one `tree` until the deadline, `limit` attempts in all, or a
/// settled root (tree parallelisation); one thread each (no thread for a single hand).
pub(super) fn run_shared<M: StateMachine + Send>(
    tree: &mut Tree<M::State, M::Move>,
    hands: Vec<Hand<'_, M>>,
    limit: u64,
    ctx: &Context,
) -> Vec<Counts> {
    let shared = SharedTree {
        tree: Mutex::new(tree),
        claimed: AtomicU64::new(0),
        limit,
    };
    if hands.len() == 1 {
        return hands
            .into_iter()
            .map(|h| run_hand(&shared, h, ctx))
            .collect();
    }
    let shared = &shared;
    std::thread::scope(|scope| {
        let handles: Vec<_> = hands
            .into_iter()
            .map(|h| scope.spawn(move || run_hand(shared, h, ctx)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// One thread of a tree-parallel search: iterations (or batched rounds) on the shared tree
/// until the deadline, the shared limit, or a settled root.
fn run_hand<M: StateMachine>(
    shared: &SharedTree<'_, M::State, M::Move>,
    hand: Hand<'_, M>,
    ctx: &Context,
) -> Counts {
    let Hand {
        machine,
        rng,
        policies,
    } = hand;
    let n_roles = machine.roles().len();
    let mut scratch = Scratch::default();
    let mut lanes = super::batch::Lanes::default();
    let mut counts = Counts::default();
    let count = |counts: &mut Counts, n: u64| {
        counts.iterations += n;
        if let Some(p) = &ctx.progress {
            p.fetch_add(n, Ordering::Relaxed);
        }
    };
    loop {
        if ctx.stop.load(Ordering::Relaxed) || past(ctx.deadline) {
            break;
        }
        if let Some((size, leaf)) = ctx.batch {
            let size = shared.claim(size as u64) as usize;
            if size == 0 {
                break;
            }
            let round = {
                let mut tree = shared.lock();
                if tree.root_settled() {
                    ctx.stop.store(true, Ordering::Relaxed);
                    break;
                }
                super::batch::gather(
                    &mut tree, machine, rng, ctx, policies, &mut lanes, size, leaf,
                )
            };
            let mut round = round;
            let ran = super::batch::play(machine, rng, ctx, &mut lanes, &mut round);
            super::batch::settle(
                &mut shared.lock(),
                machine,
                policies,
                &mut lanes,
                &mut round,
                ran,
            );
            count(&mut counts, round.iterations);
            counts.errors += round.errors;
            if round.last_error.is_some() {
                counts.last_error = round.last_error;
            }
            if round.deadline {
                break;
            }
            continue;
        }
        if shared.claim(1) == 0 {
            break;
        }
        let state = {
            let mut tree = shared.lock();
            if tree.root_settled() {
                ctx.stop.store(true, Ordering::Relaxed);
                break;
            }
            match tree.descend(machine, rng, ctx, policies, &mut scratch) {
                Ok(Leaf::Value(v)) => {
                    tree.complete(n_roles, policies, &mut scratch, v);
                    drop(tree);
                    count(&mut counts, 1);
                    continue;
                }
                Ok(Leaf::Playout(state)) => {
                    tree.virtual_loss(&scratch, n_roles, true);
                    state
                }
                Err(Halt::Engine(e)) => {
                    counts.errors += 1;
                    counts.last_error = Some(e);
                    continue;
                }
                Err(Halt::Deadline) => break,
            }
        };
        let result = play_out(machine, rng, ctx, policies, &state);
        let mut tree = shared.lock();
        tree.virtual_loss(&scratch, n_roles, false);
        match result {
            Ok(rewards) => {
                tree.complete(n_roles, policies, &mut scratch, rewards);
                drop(tree);
                count(&mut counts, 1);
            }
            Err(Halt::Engine(e)) => {
                counts.errors += 1;
                counts.last_error = Some(e);
            }
            Err(Halt::Deadline) => break,
        }
    }
    if shared.lock().root_settled() {
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
pub(super) fn merge_root<S: Clone + Eq + std::hash::Hash, Mv: Copy + Eq + std::hash::Hash>(
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rand::SeedableRng;

    use super::*;
    use crate::gdl::Description;
    use crate::propnet::{Budget, PropnetMachine};
    use crate::search::mcts::MctsSettings;
    use crate::search::mcts::tree::Node;

    /// Every node's visits equal each role's summed move visits: no update lost, no virtual
    /// loss left behind.
    fn consistent<S, Mv>(tree: &Tree<S, Mv>) -> bool {
        tree.nodes.iter().all(|n| {
            n.stats
                .iter()
                .all(|s| s.iter().map(|s| s.visits).sum::<u32>() == n.visits)
        })
    }

    /// Two threads on one Connect Four tree, one iteration at a time and in batched rounds,
    /// with a shared limit: the iterations add up to the limit, the root's visits to the
    /// iterations, and every node's statistics are whole.
    #[test]
    fn threads_sharing_a_tree_lose_no_update() {
        let d = Description::from_text(include_str!("../../../rules/connectFour.kif")).unwrap();
        let mut m = PropnetMachine::new(&d, &Budget::default()).unwrap();
        let settings = MctsSettings::default();
        for batch in [None, Some((32, 4))] {
            let mut machines = [m.fork().unwrap(), m.fork().unwrap()];
            let mut tree = Tree::new(64 << 20, false);
            let initial = m.initial_state();
            tree.reset(Node::new(&mut m, initial).unwrap());
            let mut rngs: Vec<_> = (0..2).map(Xoshiro256PlusPlus::seed_from_u64).collect();
            let mut policies: Vec<Policies<PropnetMachine>> = (0..2)
                .map(|_| Policies {
                    select: settings.selection(),
                    playout: settings.playout(),
                    eval: settings.evaluation(None),
                })
                .collect();
            let ctx = Context {
                deadline: Instant::now() + Duration::from_secs(600),
                stop: AtomicBool::new(false),
                max_steps: 5000,
                prior: 0,
                progress: None,
                batch,
            };
            let hands = machines
                .iter_mut()
                .zip(&mut rngs)
                .zip(&mut policies)
                .map(|((machine, rng), policies)| Hand {
                    machine,
                    rng,
                    policies,
                })
                .collect();
            let counts = run_shared(&mut tree, hands, 3000, &ctx);
            let iterations: u64 = counts.iter().map(|c| c.iterations).sum();
            assert_eq!(counts.iter().map(|c| c.errors).sum::<u64>(), 0);
            assert_eq!(iterations, 3000, "{batch:?}");
            assert_eq!(counts.len(), 2);
            assert_eq!(u64::from(tree.nodes[0].visits), iterations);
            assert!(consistent(&tree), "{batch:?}");
        }
    }
}
