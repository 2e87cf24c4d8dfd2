//! The levels of `ggp play` on chess (`rules/chess.kif`), measured without a clock: each level
//! searches a fixed number of nodes per move (see `ggp::play::Level`), so the games below are
//! the same on every machine.
//!
//! - CI: `medium` mates a seeded random mover in fewer than 40 plies.
//! - Ignored (`cargo test --test levels -- --ignored`): the full measurement, printed as tables: plies to mate a random mover
//!   per level over several seeds (the mean must be under 40 at `medium`), and a small
//!   tournament level against level, seats alternating (each stronger level must score more
//!   than half against the one below it; `GGP_LEVEL_GAMES=N` plays N games a pairing instead
//!   of 4 and 2).

mod common;

use std::time::{Duration, Instant};

use ggp::gdl::Description;
use ggp::machine::StateMachine;
use ggp::play::Level;
use ggp::propnet::{Budget, PropnetMachine};
use ggp::search::alphabeta::{MATERIAL_GAMES, MATERIAL_PLIES};
use ggp::search::heuristic::find_material;
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

fn chess() -> PropnetMachine {
    let path = format!("{}/rules/chess.kif", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("rules/chess.kif");
    let d = Description::from_text(&text).expect("chess is valid");
    PropnetMachine::new(&d, &Budget::default()).expect("chess grounds")
}

/// A deadline that never stops a node-limited search.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Who plays a seat.
#[derive(Clone, Copy)]
enum Seat {
    Level(Level),
    Random,
}

/// Plays chess from the start, at most `max_plies` plies; the last state, the goals at the
/// end (`None` if not over) and the plies played.
fn play(
    m: &mut PropnetMachine,
    seats: [Seat; 2],
    seed: u64,
    max_plies: usize,
) -> (
    <PropnetMachine as StateMachine>::State,
    Option<Vec<u8>>,
    usize,
) {
    let mut players: Vec<_> = seats
        .iter()
        .enumerate()
        .map(|(r, s)| match s {
            Seat::Level(l) => {
                let mut p = l.player::<PropnetMachine>(seed.wrapping_add(r as u64), None);
                p.start(m, r, Instant::now()).expect("starts");
                Some(p)
            }
            Seat::Random => None,
        })
        .collect();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut state = m.initial_state();
    for ply in 0..max_plies {
        if m.is_terminal(&state).expect("terminal") {
            let goals = m.goals(&state).expect("goals");
            return (state, Some(goals), ply);
        }
        let mut joint = Vec::new();
        for (r, p) in players.iter_mut().enumerate() {
            let legal = m.legal_moves(&state, r).expect("legal");
            let mv = match p {
                Some(p) if legal.len() > 1 => p.choose(m, &state, far()).expect("a move").mv,
                _ => *legal.choose(&mut rng).expect("a legal move"),
            };
            joint.push(mv);
        }
        state = m.next_state(&state, &joint).expect("legal joint move");
    }
    let over = m.is_terminal(&state).expect("terminal");
    let goals = over.then(|| m.goals(&state).expect("goals"));
    (state, goals, max_plies)
}

#[test]
fn medium_mates_a_random_mover_in_fewer_than_40_plies() {
    let mut m = chess();
    let (_, goals, plies) = play(&mut m, [Seat::Level(Level::Medium), Seat::Random], 1, 40);
    assert_eq!(goals, Some(vec![100, 0]), "not mated after {plies} plies");
    assert!(plies < 40, "{plies} plies");
}

#[test]
#[ignore = "slow: the levels' full measurement (GGP_LEVEL_SEEDS seeds, 10 by default)"]
fn the_levels_measured_on_chess() {
    let seeds: u64 = common::env_number("GGP_LEVEL_SEEDS", 10);
    let mut m = chess();
    println!("plies to mate a random mover (white), seeds 1..={seeds}, cap 200 plies:");
    let mut medium_mean = f64::INFINITY;
    for level in [Level::Easy, Level::Medium, Level::Hard] {
        let started = Instant::now();
        let mut plies = Vec::new();
        let mut mates = 0;
        for seed in 1..=seeds {
            let (_, goals, n) = play(&mut m, [Seat::Level(level), Seat::Random], seed, 200);
            if goals == Some(vec![100, 0]) {
                mates += 1;
            }
            plies.push(n);
        }
        let mean = plies.iter().sum::<usize>() as f64 / plies.len() as f64;
        if level == Level::Medium {
            medium_mean = mean;
        }
        println!(
            "  {level}: mates {mates}/{seeds}, mean plies {mean:.1} (unmated count as 200), plies {plies:?}, {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    assert!(
        medium_mean < 40.0,
        "medium needs {medium_mean} plies on average"
    );
}

#[test]
#[ignore = "slow: level against level (GGP_LEVEL_GAMES games a pairing)"]
fn the_levels_play_each_other_on_chess() {
    let mut m = chess();
    println!(
        "level against level (chess, seats alternating; a game not over after 120 plies is \
         adjudicated by material, found as the players find it: more material wins, equal draws):"
    );
    let mut ordered = true;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
    let material = find_material(&mut m, &mut rng, MATERIAL_GAMES, MATERIAL_PLIES, far())
        .expect("the engine works")
        .expect("chess has material");
    let games_each = |default: u64| common::env_number("GGP_LEVEL_GAMES", default);
    for (strong, weak, games) in [
        (Level::Medium, Level::Easy, games_each(4)),
        (Level::Hard, Level::Medium, games_each(2)),
    ] {
        let mut score = 0.0;
        for seed in 1..=games {
            let strong_white = seed % 2 == 1;
            let seats = if strong_white {
                [Seat::Level(strong), Seat::Level(weak)]
            } else {
                [Seat::Level(weak), Seat::Level(strong)]
            };
            let ours = usize::from(!strong_white);
            let (end, goals, n) = play(&mut m, seats, seed, 120);
            let g = match &goals {
                Some(g) => f64::from(g[ours]),
                None => {
                    let b = material.balance(&m, &end, ours);
                    if b > 1e-9 {
                        100.0
                    } else if b < -1e-9 {
                        0.0
                    } else {
                        50.0
                    }
                }
            };
            println!(
                "    game {seed}: {strong} as {} scored {g} in {n} plies{}",
                if strong_white { "white" } else { "black" },
                if goals.is_none() {
                    " (adjudicated)"
                } else {
                    ""
                }
            );
            score += g / 100.0;
        }
        println!("  {strong} against {weak}: {score}/{games}");
        ordered &= score > games as f64 / 2.0;
    }
    assert!(ordered, "a stronger level did not score more than half");
}
