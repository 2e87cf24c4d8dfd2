//! Playing without looking (GDL-II): [`HiddenPlayer`], an information-set search over states
//! drawn from a [`Belief`] (the states consistent with what our role did and saw,
//! `crate::belief`), and [`choose_for_seat`], which decides whether a seat searches so.
//!
//! **Invariant:** nothing here reads the true state of the match: the search sees only the
//! belief.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::mcts::{MctsSettings, Ucb1};
use super::{Choice, Player, SearchConfig, SearchError, goal_or_zero};
use crate::belief::Belief;
use ggp_engine::machine::{MachineError, StateMachine};

/// One node of the search tree: a sequence of our moves from the root (open loop: what we
/// would see on the way is left to the states drawn, not branched on).
#[derive(Debug, Default)]
struct Node<Mv> {
    /// Per move of ours tried here: the move, its child node, its visits, the sum of its
    /// results (0..1) and how often it was legal when this node was visited.
    children: Vec<Edge<Mv>>,
}

#[derive(Debug)]
struct Edge<Mv> {
    mv: Mv,
    child: Option<usize>,
    visits: u64,
    sum: f64,
    available: u64,
}

/// A player for games with hidden information: single-observer information-set MCTS. Each
/// iteration draws a state from the belief (a determinisation), walks a tree of our own
/// moves by UCB (a move's exploration term counts only the visits in which it was legal),
/// the other roles moving uniformly at random (nature does; for opponents it is the same
/// model as the belief's), adds one node, finishes with a random playout and backs up our
/// goal. The tree is shared by all determinisations, so a move is judged by its value over
/// the whole belief, never by what it does in one state the search happened to draw. It
/// takes the exploration constant and the playout cap of the player it stands in for
/// ([`Player::hidden_settings`]), and the seed, iteration limit and progress counter of its
/// [`SearchConfig`].
pub struct HiddenPlayer {
    rng: Xoshiro256PlusPlus,
    config: SearchConfig,
    /// The UCB exploration constant (goals scaled to 0..1).
    exploration: f64,
    /// Most moves of one playout.
    max_playout_steps: usize,
}

impl HiddenPlayer {
    /// A search with the exploration constant and playout cap of `settings`.
    pub fn new(config: SearchConfig, settings: &MctsSettings) -> HiddenPlayer {
        HiddenPlayer {
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            config,
            exploration: settings.exploration,
            max_playout_steps: settings.max_playout_steps,
        }
    }

    /// The search that stands in for `player` where it cannot see the state, with the
    /// player's settings ([`Player::hidden_settings`]); `None` for a player that does not
    /// search (random, legal).
    pub fn for_player<M: StateMachine>(
        player: &dyn Player<M>,
        config: SearchConfig,
    ) -> Option<HiddenPlayer> {
        player
            .hidden_settings()
            .map(|settings| HiddenPlayer::new(config, &settings))
    }

    /// Our legal moves by what we know ([`Belief::our_moves`]).
    ///
    /// # Errors
    /// The engine failed.
    pub fn legal<M: StateMachine>(
        machine: &mut M,
        belief: &Belief<M::State, M::Move>,
    ) -> Result<Vec<M::Move>, MachineError> {
        belief.our_moves(machine)
    }

    /// Chooses a move by `deadline`.
    ///
    /// # Errors
    /// We have no legal move, or the engine failed on every iteration.
    pub fn choose<M: StateMachine>(
        &mut self,
        machine: &mut M,
        belief: &Belief<M::State, M::Move>,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        self.choose_among(machine, belief, None, deadline)
    }

    /// Chooses a move by `deadline` among our moves by what the belief knows that are also
    /// `allowed` (a move the player's other reading of the match holds legal: the server's
    /// tracker follows its own belief); if none is, among `allowed`, so that the choice is
    /// never one the caller would reject.
    ///
    /// # Errors
    /// We have no legal move, or the engine failed on every iteration.
    pub fn choose_among<M: StateMachine>(
        &mut self,
        machine: &mut M,
        belief: &Belief<M::State, M::Move>,
        allowed: Option<&[M::Move]>,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        let mut moves = Self::legal(machine, belief)?;
        if let Some(allowed) = allowed {
            moves.retain(|m| allowed.contains(m));
            if moves.is_empty() {
                moves = allowed.to_vec();
            }
        }
        if moves.is_empty() {
            return Err(SearchError::NoMove);
        }
        let mut tree: Vec<Node<M::Move>> = vec![Node {
            children: moves
                .iter()
                .map(|&mv| Edge {
                    mv,
                    child: None,
                    visits: 0,
                    sum: 0.0,
                    available: 0,
                })
                .collect(),
        }];
        let mut iterations = 0u64;
        let mut last_error = None;
        while self.config.max_iterations.is_none_or(|n| iterations < n)
            && (iterations == 0 || Instant::now() < deadline)
        {
            iterations += 1;
            if let Err(e) = self.iterate(machine, belief, &mut tree) {
                last_error = Some(e);
            }
            if let Some(p) = &self.config.progress {
                p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        // The root's moves are ours by what we know; the most visited wins.
        let root = &tree[0];
        let best = root
            .children
            .iter()
            .filter(|e| moves.contains(&e.mv))
            .max_by(|a, b| {
                a.visits.cmp(&b.visits).then(
                    (a.sum / a.visits.max(1) as f64).total_cmp(&(b.sum / b.visits.max(1) as f64)),
                )
            })
            .expect("the root has our moves");
        if best.visits == 0
            && let Some(e) = last_error
        {
            return Err(e.into());
        }
        Ok(Choice {
            mv: best.mv,
            iterations,
            value: (best.visits > 0).then(|| 100.0 * best.sum / best.visits as f64),
            proven: false,
        })
    }

    /// One iteration: draw, descend, expand, play out, back up.
    fn iterate<M: StateMachine>(
        &mut self,
        machine: &mut M,
        belief: &Belief<M::State, M::Move>,
        tree: &mut Vec<Node<M::Move>>,
    ) -> Result<(), MachineError> {
        let role = belief.role();
        let mut state = belief.sample(&mut self.rng).clone();
        let (mut joint, mut scratch, mut ours) = (Vec::new(), Vec::new(), Vec::new());
        let mut path: Vec<(usize, usize)> = Vec::new();
        let mut node = 0;
        loop {
            if machine.is_terminal(&state)? {
                break;
            }
            ours.clear();
            machine.legal_moves_into(&state, role, &mut ours)?;
            if ours.is_empty() {
                break;
            }
            let children = &mut tree[node].children;
            for &mv in &ours {
                match children.iter_mut().find(|e| e.mv == mv) {
                    Some(e) => e.available += 1,
                    None => children.push(Edge {
                        mv,
                        child: None,
                        visits: 0,
                        sum: 0.0,
                        available: 1,
                    }),
                }
            }
            // An untried legal move first (at random), else UCB among the legal ones.
            let untried: Vec<usize> = (0..children.len())
                .filter(|&i| children[i].visits == 0 && ours.contains(&children[i].mv))
                .collect();
            let (pick, expand) = if untried.is_empty() {
                let ucb1 = Ucb1 {
                    exploration: self.exploration,
                };
                let pick = (0..children.len())
                    .filter(|&i| ours.contains(&children[i].mv))
                    .max_by(|&a, &b| ucb(&children[a], ucb1).total_cmp(&ucb(&children[b], ucb1)))
                    .expect("ours is not empty");
                (pick, children[pick].child.is_none())
            } else {
                (untried[self.rng.random_range(0..untried.len())], true)
            };
            let mv = children[pick].mv;
            machine.random_joint_move_into(&state, &mut self.rng, &mut joint, &mut scratch)?;
            joint[role] = mv;
            state = machine.next_state_unchecked(&state, &joint)?;
            path.push((node, pick));
            if expand {
                break;
            }
            node = children[pick].child.expect("not expanding");
        }
        let (end, _) = machine.playout(&state, &mut self.rng, self.max_playout_steps)?;
        let result = f64::from(goal_or_zero(machine, &end, role)?) / 100.0;
        // The last edge gets a node of its own, so that the next visit goes deeper.
        if let Some(&(n, i)) = path.last()
            && tree[n].children[i].child.is_none()
        {
            tree.push(Node {
                children: Vec::new(),
            });
            let id = tree.len() - 1;
            tree[n].children[i].child = Some(id);
        }
        for (n, i) in path {
            let edge = &mut tree[n].children[i];
            edge.visits += 1;
            edge.sum += result;
        }
        Ok(())
    }
}

/// The UCB1 value of an edge whose move is legal now: its parent's visits are the visits in
/// which the move was legal.
fn ucb<Mv>(edge: &Edge<Mv>, ucb1: Ucb1) -> f64 {
    let mean = edge.sum / edge.visits.max(1) as f64;
    ucb1.value(mean, edge.visits, edge.available)
}

/// Chooses for a seat that knows the game as `belief`, the one decision of which search a
/// seat uses (the player server's and `ggp play`'s): the seat's own `player` where the belief
/// is one state of a game without nature (nothing is hidden yet), or where the player does
/// not search (`hidden` is `None`: a random or legal player picks among our legal moves,
/// the same in every state of the belief); else the information-set search `hidden`.
///
/// # Errors
/// The search or the engine failed, or there is no state to choose in.
pub fn choose_for_seat<M: StateMachine>(
    machine: &mut M,
    player: &mut dyn Player<M>,
    hidden: Option<&mut HiddenPlayer>,
    belief: &Belief<M::State, M::Move>,
    allowed: Option<&[M::Move]>,
    deadline: Instant,
) -> Result<Choice<M::Move>, SearchError> {
    let nature = (0..machine.roles().len()).any(|r| machine.is_nature(r));
    match (belief.states(), hidden) {
        ([(state, _)], _) if !nature => player.choose(machine, state, deadline),
        (_, Some(hidden)) => hidden.choose_among(machine, belief, allowed, deadline),
        ([(state, _), ..], None) => player.choose(machine, state, deadline),
        ([], None) => Err(SearchError::NoMove),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::belief::tests::{belief_after, machine, t};

    #[test]
    fn choices_do_not_depend_on_hidden_facts() {
        let mut m = machine();
        // The same moves and percepts for the candidate; the car is behind door 1 in one
        // match and behind door 2 in the other.
        let a = belief_after(&mut m, "1", "3");
        let b = belief_after(&mut m, "2", "3");
        let far = Instant::now() + std::time::Duration::from_secs(60);
        let mut switches = 0;
        for seed in 0..20 {
            let config = SearchConfig {
                seed,
                max_iterations: Some(60),
                ..SearchConfig::default()
            };
            let settings = MctsSettings::default();
            let mut pa = HiddenPlayer::new(config.clone(), &settings);
            let mut pb = HiddenPlayer::new(config, &settings);
            let ca = pa.choose(&mut m, &a, far).unwrap();
            let cb = pb.choose(&mut m, &b, far).unwrap();
            assert_eq!(ca.mv, cb.mv, "seed {seed}");
            assert_eq!(ca.value, cb.value, "seed {seed}");
            if m.move_term(ca.mv) == t("switch") {
                switches += 1;
            }
        }
        // Switching wins two times in three: the player switches nearly always.
        assert!(switches >= 18, "switched {switches} times in 20");
    }

    /// The server's search chooses among the tracker's moves: the one it would choose when
    /// that is allowed, the allowed one when it is not (noop, against switching two times in
    /// three), and the allowed one even when its own belief does not hold it legal.
    #[test]
    fn the_choice_is_among_the_moves_allowed() {
        let mut m = machine();
        let belief = belief_after(&mut m, "2", "3");
        let far = Instant::now() + std::time::Duration::from_secs(60);
        for allowed in ["switch", "noop", "(choose 1)"] {
            let config = SearchConfig {
                max_iterations: Some(60),
                ..SearchConfig::default()
            };
            let mut p = HiddenPlayer::new(config, &MctsSettings::default());
            let only = [m.find_move(&t(allowed)).unwrap()];
            let choice = p.choose_among(&mut m, &belief, Some(&only), far).unwrap();
            assert_eq!(m.move_term(choice.mv), t(allowed));
        }
    }
}
