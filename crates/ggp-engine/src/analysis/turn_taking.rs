//! Turn-taking parts: a game of simultaneous moves that is several turn-taking games played at
//! once. In connectFourSimultaneous each role drops a disc on one board while the other drops
//! one on the other board, and the boards swap each step; every step is a joint move, yet each
//! board alone is plain connect four. Sancho searches such games as turn-taking ones
//! (`../shared/notes/search.md`, section 2); ggp does not yet (see
//! `docs/experiments/simultaneous-decisive.md`), and finding the parts is the first step.
//! `ggp factor` reports them.
//!
//! The factoring's components (sub-games by their dynamics, [`Factoring`]) are joined where one
//! role's moves are legal together in a state: a role then picks among the moves of one part.
//! The game has turn-taking parts when there are two or more parts with moves, in every
//! state seen each part has at most one role with a choice, every part has two roles or more
//! choosing in it at one state or another (its turns), and in some state two or more roles
//! choose (else the game is turn-taking already). Free moves (`noop`) belong to no part. A
//! guessing game (gt_two_thirds_2p) has a part per role, each only ever its own role's: it is
//! simultaneous through its goals, and has none.
//! States are sampled along random games, so a state never seen may break the pattern: a
//! search built on the parts must check it as it goes.

use std::collections::HashMap;
use std::time::Instant;

use petgraph::unionfind::UnionFind;
use rand::Rng;

use crate::machine::{Factoring, MachineError, StateMachine};
use ggp_gdl::gdl::Term;

/// A game's turn-taking parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnTakingParts {
    /// Each part's components (indices into [`Factoring::components`]), ascending; parts
    /// ordered by their first component. Only parts with a move seen legal.
    pub parts: Vec<Vec<usize>>,
}

/// The turn-taking parts of the game `machine` plays, from the states of `games` random
/// games of at most `max_steps` joint moves each (the initial state included), fewer if
/// `until` comes first; `None` when the game has none (see the module's documentation).
///
/// # Errors
/// The engine failed, or a role had no legal move.
pub fn turn_taking_parts<M: StateMachine>(
    machine: &mut M,
    factoring: &Factoring,
    rng: &mut impl Rng,
    games: usize,
    max_steps: usize,
    until: Instant,
) -> Result<Option<TurnTakingParts>, MachineError> {
    let n_roles = machine.roles().len();
    let component: HashMap<(usize, Term), Option<usize>> = factoring.move_components();
    // Per state seen, per role: the components of its legal moves (free moves left out) and
    // whether it had a choice.
    let mut seen: Vec<Vec<(Vec<usize>, bool)>> = Vec::new();
    let (mut legal, mut joint, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..games {
        let mut state = machine.initial_state();
        for _ in 0..=max_steps {
            if Instant::now() >= until || machine.is_terminal(&state)? {
                break;
            }
            let mut roles = Vec::with_capacity(n_roles);
            for r in 0..n_roles {
                legal.clear();
                machine.legal_moves_into(&state, r, &mut legal)?;
                let mut parts: Vec<usize> = legal
                    .iter()
                    .filter_map(|&mv| {
                        let key = (r, machine.move_term(mv));
                        component.get(&key).copied().flatten()
                    })
                    .collect();
                parts.sort_unstable();
                parts.dedup();
                roles.push((parts, legal.len() > 1));
            }
            seen.push(roles);
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            state = machine.next_state_unchecked(&state, &joint)?;
        }
    }
    let simultaneous = seen
        .iter()
        .any(|roles| roles.iter().filter(|(_, choice)| *choice).count() >= 2);
    if !simultaneous {
        return Ok(None);
    }
    let n = factoring.components.len();
    let mut union = UnionFind::<usize>::new(n);
    let mut with_moves = vec![false; n];
    for (parts, _) in seen.iter().flatten() {
        for &c in parts {
            with_moves[c] = true;
            union.union(parts[0], c);
        }
    }
    // Per part (its root), the roles seen choosing in it.
    let mut choosers: HashMap<usize, Vec<usize>> = HashMap::new();
    for roles in &seen {
        // The part each choosing role plays in: one, and no other chooser's.
        let mut chosen_in = Vec::new();
        for (r, (parts, choice)) in roles.iter().enumerate() {
            let Some(&first) = parts.first() else {
                continue;
            };
            let part = union.find(first);
            if *choice {
                if chosen_in.contains(&part) {
                    return Ok(None);
                }
                chosen_in.push(part);
                let seen_choosing = choosers.entry(part).or_default();
                if !seen_choosing.contains(&r) {
                    seen_choosing.push(r);
                }
            }
        }
    }
    // Each part is a game of turns: two roles or more choose in it, at different states (a
    // part only one role ever plays is that role's own choice, as a guess in a guessing game,
    // and the game is simultaneous through its goals).
    if choosers.values().any(|roles| roles.len() < 2) {
        return Ok(None);
    }
    let mut by_root: Vec<(usize, Vec<usize>)> = Vec::new();
    for c in (0..n).filter(|&c| with_moves[c]) {
        let root = union.find(c);
        match by_root.iter_mut().find(|(r, _)| *r == root) {
            Some((_, part)) => part.push(c),
            None => by_root.push((root, vec![c])),
        }
    }
    if by_root.len() < 2 {
        return Ok(None);
    }
    Ok(Some(TurnTakingParts {
        parts: by_root.into_iter().map(|(_, part)| part).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use crate::propnet::{Budget, PropnetMachine, factoring, ground};
    use ggp_gdl::gdl::Description;

    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(3600)
    }

    fn parts_of(name: &str) -> (Factoring, Option<TurnTakingParts>) {
        let path = format!(
            "{}/../../../shared/games/base/{name}.kif",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("the corpus beside the checkout");
        let description = Description::from_text(&text).unwrap();
        let prog = ground(&description, &Budget::default()).unwrap();
        let factoring = factoring(&prog, description.roles());
        let mut machine = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let parts = turn_taking_parts(&mut machine, &factoring, &mut rng, 10, 200, far()).unwrap();
        (factoring, parts)
    }

    /// The boards' numbers of a part's moves (`(drop x board)`).
    fn boards(f: &Factoring, part: &[usize]) -> Vec<String> {
        let mut boards: Vec<String> = part
            .iter()
            .flat_map(|&c| &f.components[c].moves)
            .map(|(_, m)| match m {
                Term::App(_, args) => args[1].to_string(),
                other => panic!("a drop: {other}"),
            })
            .collect();
        boards.sort();
        boards.dedup();
        boards
    }

    #[test]
    fn the_boards_of_simultaneous_connect_four_are_its_parts() {
        let (f, parts) = parts_of("connectFourSimultaneous");
        // By their dynamics alone the sheet splits into columns, 8 a board.
        assert_eq!(f.components.len(), 16);
        let parts = parts.expect("two turn-taking boards").parts;
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1].len(), 8);
        assert_eq!(boards(&f, &parts[0]).len(), 1);
        assert_eq!(boards(&f, &parts[1]).len(), 1);
        assert_ne!(boards(&f, &parts[0]), boards(&f, &parts[1]));
    }

    #[test]
    fn turn_taking_and_truly_simultaneous_games_have_none() {
        // Turn-taking already: one role chooses at a time.
        assert_eq!(parts_of("connectFour").1, None);
        // Both roles choose among the same moves each round.
        assert_eq!(parts_of("gt_prisoner").1, None);
        // Each role's guess is a component of its own, which only that role ever plays.
        let (f, parts) = parts_of("gt_two_thirds_2p");
        assert!(f.components.len() >= 2);
        assert_eq!(parts, None);
    }
}
