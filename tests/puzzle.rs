//! The puzzle search on a real single-player sheet, on both engines, by a node budget (no
//! clock): `auto` hands Towers of Hanoi (five discs, 31 moves, goal 100 only with every disc
//! on the third pillar; the old `auto`, MCTS, ends with 80 at a 10/1 s clock, see
//! `bench/puzzles.sh`) to the puzzle search, which plays a solution to goal 100; with
//! `auto:puzzle=off` MCTS plays.

use std::time::{Duration, Instant};

use ggp::datalog::DatalogMachine;
use ggp::gdl::Description;
use ggp::machine::StateMachine;
use ggp::propnet::{Budget, PropnetMachine};
use ggp::search::auto::{AutoPlayer, LevelBudget};
use ggp::search::{Player, PlayerSpec, SearchConfig};

fn hanoi() -> Description {
    let path = format!(
        "{}/../shared/games/base/hanoi.kif",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    Description::from_text(&text).unwrap_or_else(|e| panic!("{path} is invalid: {e:?}"))
}

/// A deadline far enough away that only the budget stops a search.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(600)
}

/// Plays the single role's game to the end with `player`; the goal and the moves made.
fn play<M: StateMachine>(m: &mut M, player: &mut dyn Player<M>) -> (u8, usize) {
    player.start(m, 0, far()).unwrap();
    let mut state = m.initial_state();
    let mut moves = 0;
    while !m.is_terminal(&state).unwrap() {
        let mv = player.choose(m, &state, far()).unwrap().mv;
        state = m.next_state(&state, &[mv]).expect("a legal move");
        moves += 1;
    }
    (m.goal(&state, 0).unwrap(), moves)
}

fn solves_hanoi<M: StateMachine + Send + 'static>(mut m: M) {
    // The level `medium` of `ggp play`: 20,000 nodes (here: states expanded) per decision.
    let budget = LevelBudget {
        playouts: 1_000,
        nodes: 20_000,
    };
    let config = SearchConfig {
        seed: 1,
        ..SearchConfig::default()
    };
    let mut player = AutoPlayer::<M>::with_budget(config, budget);
    let (goal, moves) = play(&mut m, &mut player);
    assert_eq!(player.name(), "auto:puzzle");
    assert_eq!(goal, 100);
    assert_eq!(moves, 31);
}

#[test]
fn auto_solves_hanoi_on_the_propnet() {
    solves_hanoi(PropnetMachine::new(&hanoi(), &Budget::default()).unwrap());
}

#[test]
fn auto_solves_hanoi_on_datalog() {
    solves_hanoi(DatalogMachine::new(&hanoi()).unwrap());
}

#[test]
fn the_puzzle_search_is_chosen_by_spec_and_switched_off_by_spec() {
    let config = SearchConfig {
        seed: 1,
        max_iterations: Some(20_000),
        ..SearchConfig::default()
    };
    let mut m = PropnetMachine::new(&hanoi(), &Budget::default()).unwrap();
    let spec: PlayerSpec = "puzzle".parse().unwrap();
    let mut player = spec.build::<PropnetMachine>(&config);
    assert_eq!(play(&mut m, player.as_mut()).0, 100);
    let off: PlayerSpec = "auto:puzzle=off,heuristic=off".parse().unwrap();
    let mut player = off.build::<PropnetMachine>(&SearchConfig {
        max_iterations: Some(10),
        ..config
    });
    player.start(&mut m, 0, far()).unwrap();
    assert_eq!(player.name(), "auto:mcts");
    assert!("auto:puzzle=maybe".parse::<PlayerSpec>().is_err());
}
