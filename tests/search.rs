//! The search players on real games, on both engines: alpha-beta solves tic-tac-toe, both
//! searches find an immediate win and block an immediate loss in Connect Four, MCTS plays a
//! simultaneous-move game, takes a win in a three-role game, reuses its tree, plays a proven
//! win at once, beats random players, survives engine failures, and every search answers by
//! its deadline.

use std::time::{Duration, Instant};

use ggp::datalog::DatalogMachine;
use ggp::gdl::{Description, Term, parse_term};
use ggp::machine::{EngineFailure, MachineError, StateMachine};
use ggp::propnet::{Budget, PropnetMachine};
use ggp::search::alphabeta::AlphaBetaPlayer;
use ggp::search::mcts::{Anti, MctsPlayer, MctsSettings, MctsStats};
use ggp::search::probe::probe;
use ggp::search::{Player, PlayerKind, PlayerSpec, SearchConfig, new_player};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

fn sheet(path: &str) -> Description {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    Description::from_text(&text).unwrap_or_else(|e| panic!("{path} is invalid: {e:?}"))
}

fn ours(name: &str) -> Description {
    sheet(&format!("rules/{name}.kif"))
}

fn base(name: &str) -> Description {
    sheet(&format!("../shared/games/base/{name}.kif"))
}

fn datalog(d: &Description) -> DatalogMachine {
    DatalogMachine::new(d).expect("the Datalog machine builds")
}

fn propnet(d: &Description) -> PropnetMachine {
    PropnetMachine::new(d, &Budget::default()).expect("the game grounds")
}

fn term(text: &str) -> Term {
    parse_term(text).unwrap_or_else(|e| panic!("bad term {text:?}: {e:?}"))
}

fn config(seed: u64, iterations: u64) -> SearchConfig {
    SearchConfig {
        threads: 1,
        seed,
        max_iterations: Some(iterations),
        ..SearchConfig::default()
    }
}

/// MCTS without the start-clock heuristic (the default learns for a quarter of the start clock,
/// up to 8 s): for tests about something else that start players with a far deadline.
fn plain_mcts<M: StateMachine + Send + 'static>(cfg: &SearchConfig) -> Box<dyn Player<M>> {
    let spec: PlayerSpec = "mcts:heuristic=off".parse().unwrap();
    spec.build(cfg)
}

/// A deadline far enough away that only the iteration limit stops a search.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(600)
}

/// The state after `moves` from the initial state of a turn-taking game: each entry is the
/// mover's move; every other role plays its only legal move.
fn after<M: StateMachine>(m: &mut M, moves: &[&str]) -> M::State {
    let mut state = m.initial_state();
    for text in moves {
        let mv = m.find_move(&term(text)).expect("a known move");
        let joint: Vec<M::Move> = (0..m.roles().len())
            .map(|r| {
                let legal = m.legal_moves(&state, r).unwrap();
                if legal.contains(&mv) {
                    mv
                } else {
                    assert_eq!(legal.len(), 1, "{text}: role {r} has a choice");
                    legal[0]
                }
            })
            .collect();
        state = m.next_state(&state, &joint).expect("a legal move");
    }
    state
}

fn printed<M: StateMachine>(m: &M, mv: M::Move) -> String {
    m.move_term(mv).to_string()
}

/// Plays a match to the end, every player asked in every state (the one without a choice
/// too, as a referee does); returns the goals.
fn play_match<M: StateMachine>(
    m: &mut M,
    players: &mut [Box<dyn Player<M>>],
    per_move: Duration,
) -> Vec<u8> {
    for (role, p) in players.iter_mut().enumerate() {
        p.start(m, role, Instant::now() + per_move).unwrap();
    }
    let mut state = m.initial_state();
    while !m.is_terminal(&state).unwrap() {
        let joint: Vec<M::Move> = players
            .iter_mut()
            .map(|p| p.choose(m, &state, Instant::now() + per_move).unwrap().mv)
            .collect();
        state = m
            .next_state(&state, &joint)
            .expect("players make legal moves");
    }
    m.goals(&state).unwrap()
}

// Alpha-beta.

fn alphabeta_solves_tic_tac_toe<M: StateMachine + Send>(mut m: M) {
    let mut player = AlphaBetaPlayer::<M>::new(config(1, u64::MAX));
    player.start(&mut m, 0, far()).unwrap();
    let state = m.initial_state();
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert_eq!(choice.value, Some(50.0));
    assert!(
        choice.proven,
        "the initial state is solved: {:?}",
        player.stats()
    );
    // X in a corner, O on an adjacent edge: X wins, though not at once.
    let state = after(&mut m, &["(mark 1 1)", "(mark 2 1)"]);
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert_eq!(choice.value, Some(100.0));
    assert!(choice.proven);
    let reply = printed(&m, choice.mv);
    let next = after(&mut m, &["(mark 1 1)", "(mark 2 1)", &reply]);
    assert!(!m.is_terminal(&next).unwrap());
    // Playing on from there, O's best defence loses.
    let mut o = AlphaBetaPlayer::<M>::new(config(2, u64::MAX));
    o.start(&mut m, 1, far()).unwrap();
    let mut players: Vec<Box<dyn Player<M>>> = vec![Box::new(player), Box::new(o)];
    let mut state = state;
    while !m.is_terminal(&state).unwrap() {
        let joint: Vec<M::Move> = players
            .iter_mut()
            .map(|p| p.choose(&mut m, &state, far()).unwrap().mv)
            .collect();
        state = m.next_state(&state, &joint).unwrap();
    }
    assert_eq!(m.goals(&state).unwrap(), [100, 0]);
}

#[test]
fn alphabeta_solves_tic_tac_toe_on_the_propnet() {
    alphabeta_solves_tic_tac_toe(propnet(&ours("ticTacToe")));
}

#[test]
fn alphabeta_solves_tic_tac_toe_on_datalog() {
    alphabeta_solves_tic_tac_toe(datalog(&ours("ticTacToe")));
}

// Connect Four: the seed's position (bottom row first, X = red to move, columns 0-based)
//   [-1, 1, 1,-1, 1,-1,-1]
//   [ 0, 1, 0, 0,-1,-1, 0]
//   [ 0, 1, 0, 0, 0, 1, 0]
// where column 1 (our column 2) wins at once.
const SEED_POSITION: &[&str] = &[
    "(drop 3)", "(drop 1)", "(drop 5)", "(drop 4)", "(drop 2)", "(drop 6)", "(drop 2)", "(drop 7)",
    "(drop 2)", "(drop 6)", "(drop 6)", "(drop 5)",
];

/// Red to move, yellow threatens four in column 7, red has no win.
const MUST_BLOCK: &[&str] = &[
    "(drop 1)", "(drop 7)", "(drop 1)", "(drop 7)", "(drop 3)", "(drop 7)",
];

/// `player`'s move in `state` is `expected`, a win it has proven (value 100).
fn takes_proven_win<M: StateMachine>(
    player: &mut dyn Player<M>,
    m: &mut M,
    state: &M::State,
    expected: &str,
    label: &str,
) {
    let choice = player.choose(m, state, far()).unwrap();
    assert_eq!(printed(m, choice.mv), expected, "{label}: {choice:?}");
    assert_eq!(choice.value, Some(100.0));
    assert!(choice.proven);
}

fn finds_win_and_block<M: StateMachine + Send + 'static>(
    mut m: M,
    kind: PlayerKind,
    iterations: u64,
) {
    let win = after(&mut m, SEED_POSITION);
    assert!(!m.is_terminal(&win).unwrap());
    let block = after(&mut m, MUST_BLOCK);
    for seed in 0..2 {
        let mut player = new_player::<M>(kind, &config(seed, iterations));
        player.start(&mut m, 0, Instant::now()).unwrap();
        let label = format!("{kind:?} seed {seed}");
        takes_proven_win(&mut *player, &mut m, &win, "(drop 2)", &label);
        let choice = player.choose(&mut m, &block, far()).unwrap();
        assert_eq!(
            printed(&m, choice.mv),
            "(drop 7)",
            "{kind:?} seed {seed}: {choice:?}"
        );
    }
}

#[test]
fn connect_four_win_and_block_on_the_propnet() {
    let d = ours("connectFour");
    finds_win_and_block(propnet(&d), PlayerKind::Mcts, 1500);
    finds_win_and_block(propnet(&d), PlayerKind::Alphabeta, 5000);
}

#[test]
fn connect_four_win_and_block_on_datalog() {
    let d = ours("connectFour");
    finds_win_and_block(datalog(&d), PlayerKind::Mcts, 600);
    finds_win_and_block(datalog(&d), PlayerKind::Alphabeta, 2000);
}

#[test]
fn mcts_on_two_threads_finds_the_connect_four_win() {
    let mut m = propnet(&ours("connectFour"));
    let state = after(&mut m, SEED_POSITION);
    let mut player = MctsPlayer::new(SearchConfig {
        threads: 2,
        seed: 5,
        max_iterations: Some(2000),
        ..SearchConfig::default()
    });
    player.start(&mut m, 0, Instant::now()).unwrap();
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert_eq!(player.stats().threads, 2);
    assert_eq!(printed(&m, choice.mv), "(drop 2)");
    assert!(choice.proven);
}

/// `player` (for red, on the propnet) takes the Connect Four win, proven, and then blocks
/// yellow's four; the statistics of its last search.
fn wins_and_blocks(mut player: MctsPlayer<PropnetMachine>, label: &str) -> MctsStats {
    let mut m = propnet(&ours("connectFour"));
    let win = after(&mut m, SEED_POSITION);
    let block = after(&mut m, MUST_BLOCK);
    player.start(&mut m, 0, Instant::now()).unwrap();
    let choice = player.choose(&mut m, &win, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(drop 2)", "{label}: {choice:?}");
    assert!(choice.proven);
    let choice = player.choose(&mut m, &block, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(drop 7)", "{label}: {choice:?}");
    player.stats().clone()
}

// Three-player Connect Four (`3pConnectFour`): red, yellow and blue drop in turn on an 8x6
// board. Whoever makes four wins 100, the role before it in the turn order 50, the one after
// it 0.

/// Red to move with (1,1) (2,1) (3,1), and yellow with three in column 8: red's (drop 4)
/// wins at once.
const THREE_PLAYER_WIN: &[&str] = &[
    "(drop 1)", "(drop 8)", "(drop 7)", "(drop 2)", "(drop 8)", "(drop 7)", "(drop 3)", "(drop 8)",
    "(drop 6)",
];

/// In a game of three roles the search takes its win in one, and knows it.
fn three_player_win<M: StateMachine + Send + 'static>(mut m: M, iterations: u64) {
    let win = after(&mut m, THREE_PLAYER_WIN);
    assert!(!m.is_terminal(&win).unwrap());
    assert_eq!(m.legal_moves(&win, 0).unwrap().len(), 8, "red moves");
    for seed in 0..2 {
        let mut player = new_player::<M>(PlayerKind::Mcts, &config(seed, iterations));
        player.start(&mut m, 0, Instant::now()).unwrap();
        takes_proven_win(
            &mut *player,
            &mut m,
            &win,
            "(drop 4)",
            &format!("seed {seed}"),
        );
    }
}

#[test]
fn three_player_connect_four_win_on_the_propnet() {
    three_player_win(propnet(&base("3pConnectFour")), 2000);
}

#[test]
fn three_player_connect_four_win_on_datalog() {
    three_player_win(datalog(&base("3pConnectFour")), 1000);
}

/// Poses each of ggp-base's PlayerTester cases (a position of `game` and the move it wants
/// of `role`) as PlayerTester poses it, the game started in the position, and asks plain MCTS
/// for a move: two seeds, `iterations` each, after a start clock of `start`.
fn passes_player_tester_cases(
    game: &str,
    role: usize,
    cases: &[(&str, &str)],
    iterations: u64,
    start: Duration,
) {
    let text = std::fs::read_to_string(format!(
        "{}/../shared/games/base/{game}.kif",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("the corpus beside the checkout");
    for (state, good) in cases {
        let facts = ggp::gdl::parse_state(state).unwrap();
        let d = Description::from_text_starting_in(&text, &facts).unwrap();
        let mut m = propnet(&d);
        let initial = m.initial_state();
        for seed in 0..2 {
            let mut player = plain_mcts::<PropnetMachine>(&config(seed, iterations));
            player.start(&mut m, role, Instant::now() + start).unwrap();
            let choice = player.choose(&mut m, &initial, far()).unwrap();
            assert_eq!(printed(&m, choice.mv), *good, "seed {seed}, {state}");
        }
    }
}

/// The PlayerTester cases for three-player connect four (converted from Sancho's suites):
/// yellow (role 1) must block red's four at once, though blue moves in between. Blue gets 50
/// when red wins and about as much if the game goes on, so with each role's own reward the
/// search reads the threat as blocked half the time; the paranoid reading (every other role
/// wants what yellow loses) blocks.
#[test]
fn three_player_connect_four_blocks_with_a_third_role_between() {
    let cases = [
        (
            "( ( cell 4 2 red ) ( cell 3 1 blue ) ( cell 8 2 blue ) ( control yellow ) \
             ( cell 1 1 yellow ) ( cell 4 3 yellow ) ( cell 3 2 red ) ( cell 2 1 blue ) \
             ( cell 4 1 yellow ) ( cell 8 1 red ) ( cell 2 2 red ) )",
            "(drop 1)",
        ),
        (
            "( ( cell 7 1 red ) ( cell 4 2 blue ) ( cell 7 2 red ) ( cell 3 1 yellow ) \
             ( cell 7 3 red ) ( cell 4 1 yellow ) ( control yellow ) ( cell 8 1 blue ) )",
            "(drop 7)",
        ),
    ];
    passes_player_tester_cases("3pConnectFour", 1, &cases, 20_000, Duration::ZERO);
}

/// The PlayerTester cases for 2pffa (two roles, each one's goal ten per piece it captured, so
/// the goals do not sum alike) that the opponent's own goal alone (max-n) or our loss alone
/// (paranoid) each fail one of: the opponent read as wanting both in equal parts passes both.
#[test]
fn two_role_free_for_all_reads_the_opponent_as_half_rival() {
    let cases = [
        (
            "( ( cell 5 3 blue ) ( step 25 ) ( cell 2 2 red ) ( cell 5 5 blue ) \
             ( capture blue 4 ) ( cell 1 4 red ) ( cell 7 4 blue ) ( capture red 4 ) \
             ( cell 3 5 red ) ( control red ) )",
            "(move 1 4 3 3)",
        ),
        (
            "( ( cell 1 4 red ) ( cell 5 5 blue ) ( capture red 0 ) ( cell 3 3 red ) \
             ( cell 7 4 blue ) ( control red ) ( step 3 ) ( capture blue 0 ) )",
            "(move 1 4 3 5)",
        ),
    ];
    passes_player_tester_cases("2pffa", 0, &cases, 400_000, Duration::from_secs(1));
}

// MCTS.

#[test]
fn mcts_plays_a_proven_win_at_once() {
    let mut m = propnet(&ours("ticTacToe"));
    // X: (1,1) (2,1); O: (1,2) (2,2); X to move wins with (3,1), and must.
    let state = after(
        &mut m,
        &["(mark 1 1)", "(mark 1 2)", "(mark 2 1)", "(mark 2 2)"],
    );
    let mut player = MctsPlayer::new(config(3, 100_000));
    player.start(&mut m, 0, Instant::now()).unwrap();
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(mark 3 1)");
    assert_eq!(choice.value, Some(100.0));
    assert!(choice.proven);
    assert!(
        choice.iterations < 100,
        "the search stops when the root is settled: {:?}",
        player.stats()
    );
    assert!(player.stats().root_settled);
}

#[test]
fn mcts_solver_proves_a_tic_tac_toe_draw() {
    let mut m = propnet(&ours("ticTacToe"));
    let mut player = MctsPlayer::new(config(4, 20_000));
    player.start(&mut m, 0, Instant::now()).unwrap();
    // X in the centre, O in a corner: a draw.
    let state = after(&mut m, &["(mark 2 2)", "(mark 1 1)"]);
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert!(player.stats().root_settled, "{:?}", player.stats());
    assert_eq!(choice.value, Some(50.0));
    assert!(choice.proven);
}

/// Random positions: where the MCTS solver settles the root, its value is the one alpha-beta
/// proves.
fn solver_agrees_with_alphabeta<M: StateMachine + Send + 'static>(
    m: &mut M,
    plies: usize,
    positions: u64,
) {
    use rand::Rng;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
    let mut settled = 0;
    for p in 0..positions {
        let mut state = m.initial_state();
        let (mut joint, mut scratch) = (Vec::new(), Vec::new());
        let n = plies + rng.random_range(0..3);
        for _ in 0..n {
            if m.is_terminal(&state).unwrap() {
                break;
            }
            // A random move that does not end the game, if one is found.
            let mut next = state.clone();
            for _ in 0..20 {
                m.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)
                    .unwrap();
                next = m.next_state_unchecked(&state, &joint).unwrap();
                if !m.is_terminal(&next).unwrap() {
                    break;
                }
            }
            state = next;
        }
        if m.is_terminal(&state).unwrap() {
            continue;
        }
        for role in 0..2 {
            let mut ab = AlphaBetaPlayer::<M>::new(config(p, u64::MAX));
            ab.start(m, role, Instant::now()).unwrap();
            let solved = ab.choose(m, &state, far()).unwrap();
            assert!(solved.proven);
            let mut mcts = MctsPlayer::<M>::new(config(p, 30_000));
            mcts.start(m, role, Instant::now()).unwrap();
            let choice = mcts.choose(m, &state, far()).unwrap();
            if mcts.stats().root_settled {
                settled += 1;
                assert_eq!(choice.value, solved.value, "position {p} role {role}");
                assert!(choice.proven);
            }
            if choice.proven {
                // The move MCTS plays as proven is worth the solved value.
                let mut ab = AlphaBetaPlayer::<M>::new(config(p, u64::MAX));
                ab.start(m, role, Instant::now()).unwrap();
                let joint: Vec<M::Move> = (0..2)
                    .map(|r| {
                        if r == role {
                            choice.mv
                        } else {
                            m.legal_moves(&state, r).unwrap()[0]
                        }
                    })
                    .collect();
                if m.legal_moves(&state, 1 - role).unwrap().len() == 1 {
                    let next = m.next_state(&state, &joint).unwrap();
                    let value = if m.is_terminal(&next).unwrap() {
                        f64::from(m.goal(&next, role).unwrap())
                    } else {
                        ab.choose(m, &next, far()).unwrap().value.unwrap()
                    };
                    assert_eq!(Some(value), solved.value, "position {p} role {role}");
                }
            }
        }
    }
    assert!(settled >= positions, "only {settled} roots settled");
}

#[test]
fn mcts_solver_agrees_with_alphabeta_at_tic_tac_toe() {
    solver_agrees_with_alphabeta(&mut propnet(&ours("ticTacToe")), 1, 12);
}

#[test]
fn mcts_solver_agrees_with_alphabeta_late_in_connect_four() {
    solver_agrees_with_alphabeta(&mut propnet(&ours("connectFour")), 20, 8);
}

#[test]
fn mcts_reuses_its_tree() {
    let mut m = propnet(&ours("connectFour"));
    // One node per iteration (batched rounds grow a node per `leaf` playouts).
    let settings = MctsSettings {
        heuristic: false,
        batch: 0,
        ..MctsSettings::default()
    };
    let mut player = MctsPlayer::with_settings(config(6, 2000), settings);
    player.start(&mut m, 0, far()).unwrap();
    assert_eq!(player.stats().iterations, 2000);
    let initial = m.initial_state();
    let first = player.choose(&mut m, &initial, far()).unwrap();
    assert!(player.stats().reused > 1000, "{:?}", player.stats());
    let before = player.nodes();
    let mv = printed(&m, first.mv);
    let state = after(&mut m, &[&mv, "(drop 4)"]);
    player.choose(&mut m, &state, far()).unwrap();
    let kept = player.stats().reused;
    assert!(kept > 10 && kept < before, "kept {kept} of {before}");
    assert_eq!(player.nodes(), player.stats().nodes);
}

/// The iterated prisoner's dilemma: defecting gains whatever the other does, in every round.
fn mcts_defects<M: StateMachine + Send + 'static>(mut m: M) {
    let state = m.initial_state();
    assert_eq!(m.legal_moves(&state, 0).unwrap().len(), 2);
    assert_eq!(m.legal_moves(&state, 1).unwrap().len(), 2);
    for role in 0..2 {
        let mut player = MctsPlayer::<M>::new(config(7, 3000));
        player.start(&mut m, role, Instant::now()).unwrap();
        let choice = player.choose(&mut m, &state, far()).unwrap();
        assert_eq!(printed(&m, choice.mv), "defect", "role {role}");
        assert!(!choice.proven);
    }
}

#[test]
fn mcts_plays_a_simultaneous_game_on_the_propnet() {
    mcts_defects(propnet(&base("gt_prisoner")));
}

#[test]
fn mcts_plays_a_simultaneous_game_on_datalog() {
    mcts_defects(datalog(&base("gt_prisoner")));
}

#[test]
fn mcts_plays_rock_paper_scissors_to_the_end() {
    let mut m = propnet(&base("roshambo2"));
    let mut players: Vec<Box<dyn Player<PropnetMachine>>> =
        vec![plain_mcts(&config(8, 500)), plain_mcts(&config(9, 500))];
    let goals = play_match(&mut m, &mut players, Duration::from_secs(60));
    assert_eq!(goals.len(), 2);
}

/// Scores of `mcts` over `games` games against `random`, alternating sides.
fn mcts_against_random<M: StateMachine + Send + 'static>(
    m: &mut M,
    games: u64,
    iterations: u64,
) -> (Vec<u8>, Vec<u8>) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for game in 0..games {
        let mcts = plain_mcts::<M>(&config(game, iterations));
        let random = new_player::<M>(PlayerKind::Random, &config(100 + game, 0));
        let mcts_role = (game % 2) as usize;
        let mut players = if mcts_role == 0 {
            vec![mcts, random]
        } else {
            vec![random, mcts]
        };
        let goals = play_match(m, &mut players, Duration::from_secs(60));
        ours.push(goals[mcts_role]);
        theirs.push(goals[1 - mcts_role]);
    }
    (ours, theirs)
}

#[test]
fn mcts_beats_random_at_tic_tac_toe() {
    let mut m = propnet(&ours("ticTacToe"));
    let (ours, theirs) = mcts_against_random(&mut m, 4, 2000);
    assert!(
        ours.iter().all(|&g| g >= 50),
        "mcts {ours:?} random {theirs:?}"
    );
    assert!(ours.contains(&100), "mcts {ours:?} random {theirs:?}");
}

#[test]
fn mcts_beats_random_at_connect_four() {
    let mut m = propnet(&ours("connectFour"));
    let (ours, theirs) = mcts_against_random(&mut m, 4, 400);
    assert!(
        ours.iter().all(|&g| g == 100),
        "mcts {ours:?} random {theirs:?}"
    );
}

// The clock.

/// Every search kind answers within the deadline plus a generous slack, on a game whose
/// playouts are long enough to be cut.
fn answers_in_time<M: StateMachine + Send + 'static>(mut m: M, threads: usize) {
    let state = after(&mut m, &[]);
    let budget = Duration::from_millis(300);
    let slack = Duration::from_millis(300);
    for kind in [PlayerKind::Mcts, PlayerKind::Alphabeta, PlayerKind::Auto] {
        let cfg = SearchConfig {
            threads,
            seed: 11,
            max_iterations: None,
            ..SearchConfig::default()
        };
        let mut player = new_player::<M>(kind, &cfg);
        let started = Instant::now();
        player.start(&mut m, 1, started + budget).unwrap();
        assert!(
            started.elapsed() < budget + slack,
            "{kind:?} start took {:?}",
            started.elapsed()
        );
        let started = Instant::now();
        let choice = player.choose(&mut m, &state, started + budget).unwrap();
        assert!(
            started.elapsed() < budget + slack,
            "{kind:?} took {:?}",
            started.elapsed()
        );
        assert!(m.legal_moves(&state, 1).unwrap().contains(&choice.mv));
    }
}

#[test]
fn searches_meet_the_deadline_on_the_propnet() {
    answers_in_time(propnet(&base("breakthrough")), 2);
}

#[test]
fn searches_meet_the_deadline_on_datalog() {
    answers_in_time(datalog(&base("breakthrough")), 1);
}

/// MCTS whose playouts run on the propnet's batch, per leaf and many per leaf, finds the
/// Connect Four win and block; on Datalog (one game at a time) the same settings run one
/// iteration at a time.
#[test]
fn batched_mcts_finds_the_connect_four_win_and_block() {
    let d = ours("connectFour");
    for spec in ["mcts:batch=256", "mcts:batch=64,leaf=8"] {
        let settings = spec.parse::<PlayerSpec>().unwrap().mcts;
        assert!(settings.batch > 1);
        for seed in 0..2 {
            let player = MctsPlayer::with_settings(config(seed, 3000), settings.clone());
            assert!(wins_and_blocks(player, spec).iterations <= 3000);
        }
    }
    let mut m = datalog(&d);
    let block = after(&mut m, MUST_BLOCK);
    let settings = "mcts:batch=256".parse::<PlayerSpec>().unwrap().mcts;
    let mut player = MctsPlayer::with_settings(config(1, 600), settings);
    player.start(&mut m, 0, Instant::now()).unwrap();
    let choice = player.choose(&mut m, &block, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(drop 7)");
    assert_eq!(player.stats().iterations + player.stats().errors, 600);
}

/// Batched searches answer by their deadline, on one and two threads, with playouts long
/// enough (breakthrough, no cut-off) that a batch of 256 takes a while.
#[test]
fn batched_searches_meet_the_deadline() {
    let mut m = propnet(&base("breakthrough"));
    let state = after(&mut m, &[]);
    let budget = Duration::from_millis(300);
    let slack = Duration::from_millis(300);
    for (spec, threads) in [("mcts:batch=256", 1), ("mcts:batch=256,leaf=16", 2)] {
        let settings = spec.parse::<PlayerSpec>().unwrap().mcts;
        let cfg = SearchConfig {
            threads,
            seed: 3,
            max_iterations: None,
            ..SearchConfig::default()
        };
        let mut player = MctsPlayer::with_settings(cfg, settings);
        player.start(&mut m, 1, Instant::now()).unwrap();
        for _ in 0..3 {
            let started = Instant::now();
            let choice = player.choose(&mut m, &state, started + budget).unwrap();
            assert!(
                started.elapsed() < budget + slack,
                "{spec} took {:?}",
                started.elapsed()
            );
            assert!(m.legal_moves(&state, 1).unwrap().contains(&choice.mv));
            assert!(
                player.stats().iterations > 0,
                "{spec}: {:?}",
                player.stats()
            );
        }
    }
}

// Auto and probing.

#[test]
fn probe_tells_turn_taking_zero_sum_games() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut check = |d: Description, expected: bool, sum: Option<u32>| {
        let mut m = propnet(&d);
        let found = probe(&mut m, &mut rng, far(), 50, 1000);
        assert_eq!(found.playouts, 50);
        assert_eq!(found.alternating_zero_sum(), expected, "{found:?}");
        assert_eq!(found.two_player_sum(), sum, "{found:?}");
    };
    check(ours("ticTacToe"), true, Some(100));
    check(ours("connectFour"), true, Some(100));
    check(base("gt_prisoner"), false, None);
    // Simultaneous, two-player and constant-sum.
    check(base("roshambo2"), false, Some(100));
    check(base("biddingTicTacToe"), false, Some(100));
}

#[test]
fn auto_picks_alphabeta_where_it_solves_and_mcts_elsewhere() {
    let mut m = propnet(&ours("ticTacToe"));
    let mut auto = new_player::<PropnetMachine>(PlayerKind::Auto, &config(12, u64::MAX));
    auto.start(&mut m, 0, Instant::now() + Duration::from_secs(10))
        .unwrap();
    assert_eq!(auto.name(), "auto:alphabeta");
    let state = m.initial_state();
    let choice = auto.choose(&mut m, &state, far()).unwrap();
    assert!(choice.proven);

    // Not constant-sum, and its stages are not settled by dominance: not solved exactly.
    let mut m = propnet(&base("gt_chicken"));
    let mut auto = new_player::<PropnetMachine>(PlayerKind::Auto, &config(13, 200));
    auto.start(&mut m, 0, Instant::now() + Duration::from_millis(500))
        .unwrap();
    assert_eq!(auto.name(), "auto:mcts");
}

/// A one-step simultaneous game: each role picks a number, the higher one wins, a tie is a draw;
/// `extra` adds legal moves for the left role only.
fn higher_number(extra: &str) -> Description {
    let text = format!(
        "(role left) (role right) (init start) (num 1) (num 2) (num 3) \
         (gt 2 1) (gt 3 1) (gt 3 2) (gt 4 1) (gt 4 2) (gt 4 3) {extra} \
         (<= (legal ?r (pick ?n)) (role ?r) (num ?n) (true start)) \
         (<= (next (picked ?r ?n)) (does ?r (pick ?n))) \
         (<= terminal (not (true start))) \
         (<= (goal ?r 100) (true (picked ?r ?a)) (true (picked ?o ?b)) (distinct ?r ?o) (gt ?a ?b)) \
         (<= (goal ?r 0) (true (picked ?r ?a)) (true (picked ?o ?b)) (distinct ?r ?o) (gt ?b ?a)) \
         (<= (goal ?r 50) (true (picked ?r ?a)) (true (picked ?o ?a)) (distinct ?r ?o)) \
         (<= (goal ?r 50) (role ?r) (true start))"
    );
    Description::from_text(&text).expect("the sheet is valid")
}

fn started_auto(
    d: &Description,
    role: usize,
) -> (
    ggp::search::auto::AutoPlayer<PropnetMachine>,
    PropnetMachine,
) {
    let mut m = propnet(d);
    let mut p = ggp::search::auto::AutoPlayer::<PropnetMachine>::new(
        config(3, u64::MAX),
        ggp::search::mcts::MctsSettings::default(),
        ggp::search::AutoSettings::default(),
    );
    p.start(&mut m, role, Instant::now() + Duration::from_secs(2))
        .unwrap();
    (p, m)
}

/// Matching pennies: `same` wins if both show the same side, `differ` otherwise.
fn pennies() -> Description {
    Description::from_text(
        "(role same) (role differ) (init start) (side heads) (side tails) \
         (<= (legal ?r (show ?s)) (role ?r) (side ?s) (true start)) \
         (<= (next (shown ?r ?s)) (does ?r (show ?s))) \
         (<= terminal (not (true start))) \
         (<= match (true (shown same ?s)) (true (shown differ ?s))) \
         (<= (goal same 100) match) (<= (goal same 0) (not match)) \
         (<= (goal differ 0) match) (<= (goal differ 100) (not match))",
    )
    .expect("the sheet is valid")
}

#[test]
fn auto_solves_small_simultaneous_games_exactly_and_mixes_where_it_must() {
    // Both can be sure of a draw by picking 3, and neither of more: a pure strategy.
    for role in 0..2 {
        let (mut p, mut m) = started_auto(&higher_number(""), role);
        assert_eq!(p.name(), "auto:equilibrium", "{}", p.reason());
        assert!(p.reason().contains("solved exactly"), "{}", p.reason());
        let state = m.initial_state();
        for _ in 0..10 {
            let choice = p.choose(&mut m, &state, far()).unwrap();
            assert_eq!(printed(&m, choice.mv), "(pick 3)");
            assert_eq!(choice.value, Some(50.0));
            assert!(choice.proven);
        }
    }
    // Left also has 4: a sure win for left, a sure loss for right.
    let four = "(<= (legal left (pick 4)) (true start))";
    for (role, value) in [(0, 100.0), (1, 0.0)] {
        let (mut p, mut m) = started_auto(&higher_number(four), role);
        assert_eq!(p.name(), "auto:equilibrium", "{}", p.reason());
        let state = m.initial_state();
        let choice = p.choose(&mut m, &state, far()).unwrap();
        assert_eq!(choice.value, Some(value));
        if role == 0 {
            assert_eq!(printed(&m, choice.mv), "(pick 4)");
        }
    }
    // Matching pennies is worth 50 to each only by even odds: both sides get shown, about
    // equally often.
    for role in 0..2 {
        let (mut p, mut m) = started_auto(&pennies(), role);
        assert_eq!(p.name(), "auto:equilibrium", "{}", p.reason());
        let state = m.initial_state();
        let mut heads = 0;
        for _ in 0..200 {
            let choice = p.choose(&mut m, &state, far()).unwrap();
            assert_eq!(choice.value, Some(50.0));
            heads += usize::from(printed(&m, choice.mv) == "(show heads)");
        }
        assert!((70..=130).contains(&heads), "heads {heads} times of 200");
    }
}

#[test]
fn auto_answers_an_opponent_that_leans_one_way_in_a_mixed_game() {
    // roshambo2: rock, paper, scissors and a well that takes rock and scissors and is covered
    // by paper; first to five wins. Against a side that always throws scissors, the move of
    // the optimal mix that beats it (the well) is thrown from the second round on.
    for role in 0..2 {
        let (mut p, mut m) = started_auto(&base("roshambo2"), role);
        assert_eq!(p.name(), "auto:equilibrium", "{}", p.reason());
        let mut state = m.initial_state();
        let scissors = m.find_move(&term("scissors")).unwrap();
        let mut round = 0;
        while !m.is_terminal(&state).unwrap() {
            let choice = p.choose(&mut m, &state, far()).unwrap();
            if round > 0 {
                assert_eq!(printed(&m, choice.mv), "well", "round {round}, role {role}");
            }
            let joint = if role == 0 {
                [choice.mv, scissors]
            } else {
                [scissors, choice.mv]
            };
            state = m.next_state(&state, &joint).unwrap();
            round += 1;
        }
        assert_eq!(m.goal_values(&state, role).unwrap(), vec![100]);
    }
}

/// The prisoner's dilemma twice: each round, cooperating gives each 30, defecting against a
/// cooperator gives the defector 50 and the cooperator nothing, both defecting gives each 10;
/// the goal is the sum. Defecting is better for each whatever the other does.
fn dilemma() -> Description {
    Description::from_text(
        "(role a) (role b) (init (round 0)) (init (score a 0)) (init (score b 0)) \
         (choice cooperate) (choice defect) (succ 0 1) (succ 1 2) \
         (gain cooperate cooperate 30) (gain cooperate defect 0) \
         (gain defect cooperate 50) (gain defect defect 10) \
         (plus 0 0 0) (plus 0 10 10) (plus 0 30 30) (plus 0 50 50) \
         (plus 10 0 10) (plus 10 10 20) (plus 10 30 40) (plus 10 50 60) \
         (plus 30 0 30) (plus 30 10 40) (plus 30 30 60) (plus 30 50 80) \
         (plus 50 0 50) (plus 50 10 60) (plus 50 30 80) (plus 50 50 100) \
         (<= (legal ?r ?c) (role ?r) (choice ?c) (not (true (round 2)))) \
         (<= (next (round ?y)) (true (round ?x)) (succ ?x ?y)) \
         (<= (next (score ?r ?new)) (true (score ?r ?old)) (does ?r ?mine) \
             (does ?o ?theirs) (distinct ?r ?o) (gain ?mine ?theirs ?g) (plus ?old ?g ?new)) \
         (<= terminal (true (round 2))) \
         (<= (goal ?r ?s) (true (score ?r ?s)))",
    )
    .expect("the sheet is valid")
}

#[test]
fn auto_plays_a_game_that_is_not_constant_sum_by_dominance_where_it_settles_it() {
    for role in 0..2 {
        let (mut p, mut m) = started_auto(&dilemma(), role);
        assert_eq!(p.name(), "auto:equilibrium", "{}", p.reason());
        let mut state = m.initial_state();
        // Against a cooperator, each round: 10 + 10 sure at the start, 50 + 10 after the first.
        let cooperate = m
            .legal_moves(&state, 1 - role)
            .unwrap()
            .into_iter()
            .find(|&mv| printed(&m, mv) == "cooperate")
            .expect("cooperate is legal");
        for value in [20.0, 60.0] {
            let choice = p.choose(&mut m, &state, far()).unwrap();
            assert_eq!(printed(&m, choice.mv), "defect");
            assert_eq!(choice.value, Some(value));
            assert!(choice.proven);
            let mut joint = [cooperate, cooperate];
            joint[role] = choice.mv;
            state = m.next_state(&state, &joint).unwrap();
        }
    }
}

/// Each role sets a bit at each of 40 steps, every bit kept, and the game is a draw: too many
/// states to solve exactly, none that matter. With `escape`, left may instead pick 4 at the
/// start and win.
fn bits(escape: bool) -> Description {
    let escape = if escape {
        "(<= (legal left (pick 4)) (true (step 0)))"
    } else {
        ""
    };
    let steps: String = (0..40).map(|n| format!("(succ {n} {}) ", n + 1)).collect();
    let text = format!(
        "(role left) (role right) (init (step 0)) {steps} (bit 0) (bit 1) {escape} \
         (<= (legal ?r (set ?b)) (role ?r) (bit ?b)) \
         (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m)) \
         (<= (next (has ?r ?n ?b)) (does ?r (set ?b)) (true (step ?n))) \
         (<= (next (has ?r ?n ?b)) (true (has ?r ?n ?b))) \
         (<= (next won) (does left (pick 4))) \
         (<= terminal (true won)) \
         (<= terminal (true (step 40))) \
         (<= (goal left 100) (true won)) (<= (goal right 0) (true won)) \
         (<= (goal left 50) (not (true won))) (<= (goal right 50) (not (true won)))"
    );
    Description::from_text(&text).expect("the sheet is valid")
}

#[test]
fn auto_plays_alpha_beta_where_a_simultaneous_game_is_proven_in_pure_strategies() {
    for role in 0..2 {
        let (mut p, mut m) = started_auto(&bits(true), role);
        assert_eq!(p.name(), "auto:alphabeta", "{}", p.reason());
        let state = m.initial_state();
        let choice = p.choose(&mut m, &state, far()).unwrap();
        if role == 0 {
            assert!(p.reason().contains("proved a win"), "{}", p.reason());
            assert_eq!(printed(&m, choice.mv), "(pick 4)");
        } else {
            assert!(p.reason().contains("pure strategies"), "{}", p.reason());
            assert_eq!(choice.value, Some(0.0));
        }
    }
    // Without the escape, neither the exact solve nor alpha-beta ends within the clock.
    let (p, _) = started_auto(&bits(false), 0);
    assert_eq!(p.name(), "auto:mcts", "{}", p.reason());
    assert!(p.reason().contains("not solved"), "{}", p.reason());
}

#[test]
fn built_in_players_have_names() {
    for (kind, name) in [
        (PlayerKind::Random, "random"),
        (PlayerKind::Legal, "legal"),
        (PlayerKind::Flat, "flat"),
        (PlayerKind::Mcts, "mcts"),
        (PlayerKind::Alphabeta, "alphabeta"),
        (PlayerKind::Auto, "auto"),
    ] {
        let player = new_player::<DatalogMachine>(kind, &SearchConfig::default());
        assert_eq!(player.name(), name);
    }
}

#[test]
fn flat_takes_the_immediate_win_and_specs_build_their_variant() {
    let mut m = propnet(&ours("ticTacToe"));
    // X to move wins with (3,1) (see mcts_plays_a_proven_win_at_once).
    let state = after(
        &mut m,
        &["(mark 1 1)", "(mark 1 2)", "(mark 2 1)", "(mark 2 2)"],
    );
    let mut flat = new_player::<PropnetMachine>(PlayerKind::Flat, &config(4, 500));
    flat.start(&mut m, 0, Instant::now()).unwrap();
    let choice = flat.choose(&mut m, &state, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(mark 3 1)");
    assert_eq!(choice.iterations, 500);
    assert_eq!(choice.value, Some(100.0));
    // A spec's options reach the player: anti-decisive playouts still find the win.
    let spec: PlayerSpec = "mcts:anti=on,c=0.5".parse().unwrap();
    let mut anti = spec.build::<PropnetMachine>(&config(4, 300));
    anti.start(&mut m, 0, Instant::now()).unwrap();
    let choice = anti.choose(&mut m, &state, far()).unwrap();
    assert_eq!(printed(&m, choice.mv), "(mark 3 1)");
}

#[test]
fn the_heuristic_learns_that_the_opponents_pieces_count_in_breakthrough() {
    let mut m = propnet(&base("breakthroughSmall"));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let h = ggp::search::heuristic::learn(&mut m, 0, &mut rng, far(), 2000)
        .unwrap()
        .expect("piece counts correlate with the outcome");
    let r = |group: &str| {
        h.features()
            .iter()
            .find(|f| f.group() == group)
            .map(|f| f.correlation)
    };
    let kept: Vec<String> = h
        .features()
        .iter()
        .map(|f| format!("{} {:.2}", f.group(), f.correlation))
        .collect();
    // White is role 0: a piece count is kept; black's pieces hurt it, its own help it.
    assert!(
        r("(cell _ black)").is_some() || r("(cell _ white)").is_some(),
        "{kept:?}"
    );
    assert!(r("(cell _ black)").is_none_or(|c| c < 0.0), "{kept:?}");
    assert!(r("(cell _ white)").is_none_or(|c| c > 0.0), "{kept:?}");
    // Every kept correlation is significant over the 2000 games.
    let least = ggp::search::heuristic::MIN_SIGMAS / 2000f64.sqrt();
    assert!(h.features().iter().all(|f| f.correlation.abs() >= least));
    // Alpha-beta with it answers (the spec reaches the player).
    let spec: PlayerSpec = "alphabeta:heuristic=on,leaf=0".parse().unwrap();
    let mut p = spec.build::<PropnetMachine>(&config(3, 2000));
    p.start(&mut m, 0, far()).unwrap();
    let state = m.initial_state();
    assert!(p.choose(&mut m, &state, far()).unwrap().value.is_some());
}

#[test]
fn the_compiled_evaluator_matches_the_heuristics_and_mcts_uses_them() {
    let mut m = propnet(&base("breakthroughSmall"));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let hs = ggp::search::heuristic::learn_roles(&mut m, &mut rng, far(), 2000).unwrap();
    assert_eq!(hs.len(), 2);
    assert!(hs.iter().any(Option::is_some), "a piece count is kept");
    let mut eval = ggp::search::heuristic::Evaluator::new(hs.clone());
    // Random positions: the fact weights give what the heuristics' formula gives.
    let mut state = m.initial_state();
    let (mut joint, mut scratch, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..30 {
        if m.is_terminal(&state).unwrap() {
            state = m.initial_state();
        }
        eval.values(&mut m, &state, &mut out).unwrap();
        for (r, h) in hs.iter().enumerate() {
            let expected = h
                .as_ref()
                .map_or(0.5, |h| h.value(&mut m, &state).unwrap() / 100.0);
            assert!((out[r] - expected).abs() < 1e-9, "{} vs {expected}", out[r]);
        }
        m.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)
            .unwrap();
        state = m.next_state_unchecked(&state, &joint).unwrap();
    }
    // MCTS learns them at the start clock when asked, and searches with them.
    // (Anti-decisive playouts off: on, they would replace the heuristic in this game.)
    let spec: PlayerSpec = "mcts:heuristic=on,cutoff=4,prior=5,anti=off"
        .parse()
        .unwrap();
    let settings = spec.mcts.clone();
    assert!(settings.heuristic);
    let mut p = MctsPlayer::<PropnetMachine>::with_settings(config(5, 3000), settings);
    p.start(&mut m, 0, Instant::now() + Duration::from_secs(2))
        .unwrap();
    assert!(
        p.heuristics()
            .is_some_and(|h| h.iter().any(Option::is_some))
    );
    let state = m.initial_state();
    assert!(p.choose(&mut m, &state, far()).unwrap().value.is_some());
}

/// Role `a` may win at once or wait (one of nine ways); waiting goes on forever.
const WIN_OR_WAIT: &str = "(role a) (role b) (init (control a))
    (num 1) (num 2) (num 3) (num 4) (num 5) (num 6) (num 7) (num 8) (num 9)
    (<= (legal a win) (true (control a)))
    (<= (legal a (wait ?n)) (true (control a)) (num ?n))
    (<= (legal b noop) (true (control a)))
    (<= (next won) (does a win))
    (<= (next (control a)) (does a (wait ?n)))
    (<= terminal (true won))
    (<= (goal a 100) (true won)) (<= (goal a 0) (not (true won)))
    (<= (goal b 0) (true won)) (<= (goal b 100) (not (true won)))";

#[test]
fn decisive_playouts_take_a_win_in_one() {
    use ggp::search::mcts::{DecisivePlayout, PlayoutPolicy, UniformPlayout};
    let mut m = propnet(&Description::from_text(WIN_OR_WAIT).unwrap());
    let start = m.initial_state();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let won = |m: &mut PropnetMachine, s: &_| m.is_terminal(s).unwrap();
    let mut decisive = DecisivePlayout::default();
    let mut uniform = UniformPlayout::default();
    // Wins are looked for among the moves seen to end a game: a few playouts teach it `win`.
    for _ in 0..100 {
        decisive
            .playout(&mut m, &start, &mut rng, far(), 10)
            .unwrap();
    }
    let (mut d, mut u) = (0, 0);
    for _ in 0..50 {
        let end = decisive
            .playout(&mut m, &start, &mut rng, far(), 1)
            .unwrap();
        d += usize::from(won(&mut m, &end));
        let end = uniform.playout(&mut m, &start, &mut rng, far(), 1).unwrap();
        u += usize::from(won(&mut m, &end));
    }
    assert_eq!(d, 50);
    assert!(u < 25, "uniform playouts win one time in ten ({u} of 50)");
}

/// `a` picks a number; unless it picks 9, `b` then wins by taking 1, and otherwise loses.
const PICK_OR_LOSE: &str = "(role a) (role b) (init (control a))
    (num 1) (num 2) (num 3) (num 4) (num 5) (num 6) (num 7) (num 8) (num 9)
    (<= (legal a (pick ?n)) (true (control a)) (num ?n))
    (<= (legal b noop) (true (control a)))
    (<= (legal a noop) (true (control b)))
    (<= (legal b (take ?n)) (true (control b)) (num ?n))
    (<= (next (picked ?n)) (does a (pick ?n)))
    (<= (next (control b)) (true (control a)))
    (<= (next done) (true (control b)))
    (<= (next bwon) (does b (take 1)) (not (true (picked 9))))
    (<= terminal (true done))
    (<= (goal b 100) (true bwon)) (<= (goal b 0) (not (true bwon)))
    (<= (goal a 0) (true bwon)) (<= (goal a 100) (not (true bwon)))";

/// A puzzle: `setup` (one way of nine) lets the player win on its next move; waiting loses.
const SET_UP_AND_WIN: &str = "(role p) (init start)
    (num 1) (num 2) (num 3) (num 4) (num 5) (num 6) (num 7) (num 8)
    (<= (legal p setup) (true start)) (<= (legal p (wait ?n)) (true start) (num ?n))
    (<= (legal p win) (true ready)) (<= (legal p lose) (true ready))
    (<= (legal p lose) (true waited))
    (<= (next ready) (does p setup)) (<= (next waited) (does p (wait ?n)))
    (<= (next won) (does p win)) (<= (next over) (does p lose))
    (<= terminal (true won)) (<= terminal (true over))
    (<= (goal p 100) (true won)) (<= (goal p 0) (not (true won)))";

#[test]
fn anti_decisive_playouts_do_not_refuse_the_movers_own_win_in_one() {
    use ggp::search::mcts::{DecisivePlayout, PlayoutPolicy};
    let mut m = propnet(&Description::from_text(SET_UP_AND_WIN).unwrap());
    let start = m.initial_state();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut anti = DecisivePlayout::new();
    for _ in 0..100 {
        anti.playout(&mut m, &start, &mut rng, far(), 10).unwrap();
    }
    let mut won = 0;
    for _ in 0..90 {
        let end = anti.playout(&mut m, &start, &mut rng, far(), 10).unwrap();
        won += usize::from(m.goal(&end, 0).unwrap() == 100);
    }
    // `setup` is played one time in nine, as a uniform move, and the win then taken; were it
    // refused as handing "the next mover" a win, no playout would win.
    assert!((3..=20).contains(&won), "{won} of 90 playouts won");
}

#[test]
fn anti_decisive_playouts_avoid_handing_the_opponent_a_win_in_one() {
    use ggp::search::mcts::{DecisivePlayout, PlayoutPolicy};
    let mut m = propnet(&Description::from_text(PICK_OR_LOSE).unwrap());
    let start = m.initial_state();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let a_won = |m: &mut PropnetMachine, s: &_| m.goal(s, 0).unwrap() == 100;
    let mut anti = DecisivePlayout::new();
    // It learns first which moves end the game (b's takes).
    for _ in 0..100 {
        anti.playout(&mut m, &start, &mut rng, far(), 10).unwrap();
    }
    let learnt = anti.decisions();
    let mut x = 0;
    for _ in 0..50 {
        let end = anti.playout(&mut m, &start, &mut rng, far(), 10).unwrap();
        assert!(m.is_terminal(&end).unwrap());
        x += usize::from(a_won(&mut m, &end));
    }
    // Anti-decisive: `a` always picks 9 (picking at random, 9 one time in nine, `b` would
    // then take its win).
    assert_eq!(x, 50);
    // Each anti-decisive playout had two steps with one chooser; a's shuffled first pick was
    // refused unless it was 9 (one time in nine), b's never (no move of a's ends the game).
    let (decisions, changed) = anti.decisions();
    let (decisions, changed) = (decisions - learnt.0, changed - learnt.1);
    assert_eq!(decisions, 100);
    assert!(
        (30..=50).contains(&changed),
        "{changed} of 50 first picks refused"
    );
    let anti = |spec: &str| spec.parse::<PlayerSpec>().unwrap().mcts.anti;
    assert_eq!(anti("mcts:anti=on"), Anti::On);
    assert_eq!(anti("mcts:anti=auto"), Anti::Auto);
    assert_eq!(anti("mcts"), Anti::Auto);
    assert_eq!(anti("mcts:anti=off"), Anti::Off);
    assert!("mcts:anti=sometimes".parse::<PlayerSpec>().is_err());
}

/// Ten presses of a key, in turns; nobody ever wins: anti-decisive moves change nothing.
const PRESS_TEN_TIMES: &str = "(role a) (role b) (init (step 0)) (init (control a))
    (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
    (succ 8 9) (succ 9 10) (key 1) (key 2) (key 3)
    (<= (legal ?r (press ?k)) (true (control ?r)) (key ?k))
    (<= (legal a noop) (true (control b))) (<= (legal b noop) (true (control a)))
    (<= (next (step ?y)) (true (step ?x)) (succ ?x ?y))
    (<= (next (control b)) (true (control a))) (<= (next (control a)) (true (control b)))
    (<= terminal (true (step 10))) (goal a 50) (goal b 50)";

#[test]
fn anti_auto_decides_at_the_start_by_rate_and_effect() {
    use ggp::search::mcts::{Anti, MctsPlayer, MctsSettings};
    let game = ours("ticTacToe");
    let settings = MctsSettings {
        anti: Anti::Auto,
        heuristic: false,
        ..MctsSettings::default()
    };
    let config = SearchConfig {
        seed: 5,
        threads: 1,
        ..SearchConfig::default()
    };
    // Tic-tac-toe's anti-decisive playouts run far above the floor and change 1.2 choices a
    // playout (28,500 a second with a match sharing the core; `ggp think rules/ticTacToe.kif
    // --player mcts:anti=auto,heuristic=off --start-seconds 2`, release build) within the
    // measurement's 0.2 s of a 2 s start clock.
    let mut m = propnet(&game);
    let mut player = MctsPlayer::with_settings(config.clone(), settings.clone());
    assert!(!player.anti(), "off before the start");
    player
        .start(&mut m, 0, Instant::now() + Duration::from_secs(2))
        .unwrap();
    assert!(player.anti());
    // Fast, but they would change nothing: off.
    let mut presses = propnet(&Description::from_text(PRESS_TEN_TIMES).unwrap());
    let mut player = MctsPlayer::with_settings(config.clone(), settings.clone());
    player
        .start(&mut presses, 0, Instant::now() + Duration::from_secs(2))
        .unwrap();
    assert!(!player.anti());
    // With no start clock to measure in, none is measured: off.
    let mut player = MctsPlayer::with_settings(config, settings);
    player.start(&mut m, 0, Instant::now()).unwrap();
    assert!(!player.anti());
}

// Engine failures.

/// A machine that fails every `period`-th next-state computation.
struct Flaky<M> {
    inner: M,
    period: u64,
    calls: u64,
}

impl<M: StateMachine> StateMachine for Flaky<M> {
    type State = M::State;
    type Move = M::Move;

    fn roles(&self) -> &[Term] {
        self.inner.roles()
    }

    fn initial_state(&self) -> M::State {
        self.inner.initial_state()
    }

    fn legal_moves_into(
        &mut self,
        state: &M::State,
        role: usize,
        out: &mut Vec<M::Move>,
    ) -> Result<(), MachineError> {
        self.inner.legal_moves_into(state, role, out)
    }

    fn is_terminal(&mut self, state: &M::State) -> Result<bool, MachineError> {
        self.inner.is_terminal(state)
    }

    fn goal_values(&mut self, state: &M::State, role: usize) -> Result<Vec<u8>, MachineError> {
        self.inner.goal_values(state, role)
    }

    fn next_state_unchecked(
        &mut self,
        state: &M::State,
        joint: &[M::Move],
    ) -> Result<M::State, MachineError> {
        self.calls += 1;
        if self.calls.is_multiple_of(self.period) {
            return Err(MachineError::Engine(EngineFailure::ForeignState));
        }
        self.inner.next_state_unchecked(state, joint)
    }

    fn move_term(&self, mv: M::Move) -> Term {
        self.inner.move_term(mv)
    }

    fn find_move(&self, term: &Term) -> Option<M::Move> {
        self.inner.find_move(term)
    }

    fn state_terms(&self, state: &M::State) -> Vec<Term> {
        self.inner.state_terms(state)
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<Self::State, MachineError> {
        self.inner.state_from_terms(facts)
    }
}

#[test]
fn engine_failures_are_counted_not_fatal() {
    let mut m = Flaky {
        inner: propnet(&ours("connectFour")),
        period: 97,
        calls: 0,
    };
    let state = m.initial_state();
    let mut mcts = MctsPlayer::new(config(14, 500));
    mcts.start(&mut m, 0, Instant::now()).unwrap();
    let choice = mcts.choose(&mut m, &state, far()).unwrap();
    assert!(m.legal_moves(&state, 0).unwrap().contains(&choice.mv));
    assert!(mcts.stats().errors > 0, "{:?}", mcts.stats());
    assert!(mcts.stats().last_error.is_some());

    let mut ab = AlphaBetaPlayer::new(config(15, 5000));
    ab.start(&mut m, 0, Instant::now()).unwrap();
    let choice = ab.choose(&mut m, &state, far()).unwrap();
    assert!(m.legal_moves(&state, 0).unwrap().contains(&choice.mv));
    assert!(ab.stats().errors > 0, "{:?}", ab.stats());
}

/// After a start that failed, `auto` still plays for its own role: here O, in a tic-tac-toe
/// whose every next state fails (so the start-clock analysis fails). It used to fall back to a
/// search for the first role, whose moves are not ours.
#[test]
fn auto_after_a_failed_start_plays_for_its_own_role() {
    let mut m = Flaky {
        inner: propnet(&ours("ticTacToe")),
        period: 1,
        calls: 0,
    };
    let o_to_move = after(&mut m.inner, &["(mark 2 2)"]);
    let spec: PlayerSpec = "auto".parse().unwrap();
    let mut player = spec.build::<Flaky<PropnetMachine>>(&config(3, 200));
    assert!(
        player
            .start(&mut m, 1, Instant::now() + Duration::from_secs(2))
            .is_err()
    );
    let choice = player.choose(&mut m, &o_to_move, far()).unwrap();
    assert!(
        m.legal_moves(&o_to_move, 1).unwrap().contains(&choice.mv),
        "{}",
        printed(&m.inner, choice.mv)
    );
}

/// In `4pttc` a role can be left with nothing to move, which GDL forbids. The start-clock
/// analysis's random games end there instead of failing the start (every START of 4pttc
/// failed so), and the player then searches for its own role.
#[test]
fn a_sheet_that_can_leave_a_role_without_moves_still_starts() {
    use rand::Rng;
    let mut m = propnet(&base("4pttc"));
    let spec: PlayerSpec = "auto".parse().unwrap();
    let mut player = spec.build::<PropnetMachine>(&config(4, 2000));
    player
        .start(&mut m, 3, Instant::now() + Duration::from_secs(3))
        .unwrap();
    // Random moves until the fourth role, green, has a choice.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut state = m.initial_state();
    while m.legal_moves(&state, 3).unwrap().len() < 2 {
        let joint: Vec<_> = (0..4)
            .map(|r| {
                let legal = m.legal_moves(&state, r).unwrap();
                legal[rng.random_range(0..legal.len())]
            })
            .collect();
        state = m.next_state(&state, &joint).unwrap();
    }
    let choice = player.choose(&mut m, &state, far()).unwrap();
    assert!(m.legal_moves(&state, 3).unwrap().contains(&choice.mv));
}

#[test]
fn think_prints_the_solved_value_of_tic_tac_toe() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ggp"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "think",
            "rules/ticTacToe.kif",
            "--player",
            "alphabeta",
            "--seconds",
            "60",
        ])
        .output()
        .expect("ggp runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("alphabeta: move (mark "), "{stdout}");
    assert!(stdout.contains("value 50.0 proven true"), "{stdout}");
}

#[test]
fn think_starts_the_game_in_a_given_state() {
    let think = |state: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ggp"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["think", "../shared/games/base/ticTacToe.kif"])
            .args(["--player", "alphabeta", "--seconds", "60", "--state", state])
            .output()
            .expect("ggp runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    // ggp-base's PlayerTester's first tic-tac-toe case: o holds (1 1) and (2 2), x must block
    // at (3 3).
    let (ok, text) = think(
        "( ( cell 2 1 b ) ( control xplayer ) ( cell 1 2 x ) ( cell 1 1 o ) ( cell 3 2 b ) \
         ( cell 2 3 x ) ( cell 3 3 b ) ( cell 3 1 b ) ( cell 1 3 b ) ( cell 2 2 o ) )",
    );
    assert!(ok, "{text}");
    assert!(text.contains("alphabeta: move (mark 3 3) value "), "{text}");
    assert!(text.contains(" proven true"), "{text}");
    let (ok, text) = think("( (cell 1 1 b)");
    assert!(!ok && text.contains("--state"), "{text}");
    let (ok, text) = think("( (cell ?x 1 b) )");
    assert!(!ok && text.contains("ground"), "{text}");
}

#[test]
fn think_searches_a_position_from_a_match_record() {
    let dir = std::env::temp_dir().join(format!("ggp-think-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = |moves: &str| {
        format!(
            r#"{{"matchId": "t", "randomToken": "r", "startTime": 0, "isCompleted": false,
                "states": [], "moves": {moves}, "stateTimes": [], "startClock": 1, "playClock": 1}}"#
        )
    };
    let think = |file: &str, ply: &str| {
        let path = dir.join(file);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ggp"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["think", "rules/ticTacToe.kif", "--player", "alphabeta"])
            .args(["--role", "1", "--seconds", "60", "--record"])
            .arg(&path)
            .args(["--ply", ply])
            .output()
            .expect("ggp runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    // x holds (1 1) and (1 2): o must block at (1 3), and the game is then a draw.
    let good = record(
        r#"[["(mark 1 1)", "noop"], ["noop", "(mark 2 2)"], ["(mark 1 2)", "noop"], ["noop", "(mark 1 3)"]]"#,
    );
    std::fs::write(dir.join("good.json"), good).unwrap();
    let (ok, text) = think("good.json", "3");
    assert!(ok, "{text}");
    assert!(
        text.contains("alphabeta: move (mark 1 3) value 50.0 proven true"),
        "{text}"
    );
    let (ok, text) = think("good.json", "5");
    assert!(!ok && text.contains("has 4 joint moves, not 5"), "{text}");

    let illegal = record(r#"[["(mark 1 1)", "noop"], ["noop", "(mark 1 1)"]]"#);
    std::fs::write(dir.join("illegal.json"), illegal).unwrap();
    let (ok, text) = think("illegal.json", "2");
    assert!(
        !ok && text.contains("move 2") && text.contains("illegal move"),
        "{text}"
    );
    let unknown = record(r#"[["(mark 9 9)", "noop"]]"#);
    std::fs::write(dir.join("unknown.json"), unknown).unwrap();
    let (ok, text) = think("unknown.json", "1");
    assert!(
        !ok && text.contains("(mark 9 9) is not a move of this game"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Over a whole breakthrough match the node pool stays within its bound (a small one, so it
/// fills), and every move is legal.
#[test]
fn the_node_pool_stays_within_its_bound_over_a_long_match() {
    let mut m = propnet(&base("breakthrough"));
    let budget = 1 << 20;
    let settings = MctsSettings {
        heuristic: false,
        memory_bytes: budget,
        // One node per iteration, so that 1,500 iterations a move fill the pool.
        batch: 0,
        ..MctsSettings::default()
    };
    let mut mcts = MctsPlayer::with_settings(config(15, 1500), settings);
    let mut random = new_player::<PropnetMachine>(PlayerKind::Random, &config(16, 0));
    mcts.start(&mut m, 0, far()).unwrap();
    random.start(&mut m, 1, far()).unwrap();
    let mut state = m.initial_state();
    let (mut plies, mut most) = (0, 0);
    while !m.is_terminal(&state).unwrap() {
        let ours = mcts.choose(&mut m, &state, far()).unwrap().mv;
        let theirs = random.choose(&mut m, &state, far()).unwrap().mv;
        assert!(mcts.memory() <= budget, "{} > {budget}", mcts.memory());
        most = most.max(mcts.memory());
        state = m
            .next_state(&state, &[ours, theirs])
            .expect("players make legal moves");
        plies += 1;
    }
    assert!(most > budget / 2, "the pool never filled: {most} bytes");
    assert!(plies > 10, "{plies} plies");
    assert_eq!(
        m.goals(&state).unwrap()[0],
        100,
        "mcts beats a random mover"
    );
}

#[test]
fn material_is_found_from_the_state_and_the_moves() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    // Breakthrough: each side's pawns, owned by the side that moves them.
    let mut m = propnet(&base("breakthroughSmall"));
    let found = ggp::search::heuristic::find_material(&mut m, &mut rng, 20, 200, far())
        .unwrap()
        .expect("pawns are pieces");
    let owners: Vec<(String, usize)> = found.pieces().into_iter().map(|(g, r, _)| (g, r)).collect();
    assert_eq!(
        owners,
        [
            ("(cell _ black)".to_string(), 1),
            ("(cell _ white)".to_string(), 0)
        ]
    );
    // About even at the start (each side's mobility is sampled apart, so not exactly).
    let start = m.initial_state();
    let balance = found.balance(&m, &start, 0);
    assert!(balance.abs() < 0.05, "{balance}");
    // Connect Four: discs are dropped, never moved, so there is no material.
    let mut m = propnet(&base("connectFour"));
    assert!(
        ggp::search::heuristic::find_material(&mut m, &mut rng, 20, 200, far())
            .unwrap()
            .is_none()
    );
}

#[test]
fn auto_with_a_budget_plays_alpha_beta_where_material_is_found() {
    use ggp::search::auto::{AutoPlayer, LevelBudget};
    let budget = LevelBudget {
        playouts: 50,
        nodes: 500,
    };
    let mut m = propnet(&base("breakthroughSmall"));
    let mut p = AutoPlayer::<PropnetMachine>::with_budget(config(1, 0), budget);
    p.start(&mut m, 0, Instant::now()).unwrap();
    assert_eq!(p.name(), "auto:alphabeta", "{}", p.reason());
    let state = m.initial_state();
    assert!(p.choose(&mut m, &state, far()).unwrap().iterations <= 500);
    let mut m = propnet(&base("connectFour"));
    let mut p = AutoPlayer::<PropnetMachine>::with_budget(config(1, 0), budget);
    p.start(&mut m, 0, Instant::now()).unwrap();
    assert_eq!(p.name(), "auto:mcts", "{}", p.reason());
    assert!(p.reason().contains("no material"), "{}", p.reason());
}

#[test]
fn auto_plays_alpha_beta_only_where_its_start_search_proves_the_game() {
    use ggp::search::auto::AutoPlayer;
    let player = || {
        AutoPlayer::<PropnetMachine>::new(
            SearchConfig::default(),
            ggp::search::mcts::MctsSettings::default(),
            ggp::search::AutoSettings::default(),
        )
    };
    // Tic-tac-toe is solved well within the start clock.
    let mut m = propnet(&base("ticTacToe"));
    let mut p = player();
    p.start(&mut m, 0, Instant::now() + Duration::from_secs(4))
        .unwrap();
    assert_eq!(p.name(), "auto:alphabeta", "{}", p.reason());
    assert!(p.reason().contains("proved"), "{}", p.reason());
    // Breakthrough on a small board is not, however well alpha-beta would play it.
    let mut m = propnet(&base("breakthroughSmall"));
    let mut p = player();
    p.start(&mut m, 0, Instant::now() + Duration::from_secs(1))
        .unwrap();
    assert_eq!(p.name(), "auto:mcts", "{}", p.reason());
    assert!(p.reason().contains("did not prove"), "{}", p.reason());
}

// Start-clock trials.

/// Asks the wrapped player, and records how many legal moves each state it was asked in had.
struct Counting<M: StateMachine> {
    inner: Box<dyn Player<M>>,
    role: usize,
    asked: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
}

impl<M: StateMachine> Player<M> for Counting<M> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn start(
        &mut self,
        m: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), ggp::search::SearchError> {
        self.role = role;
        self.inner.start(m, role, deadline)
    }

    fn choose(
        &mut self,
        m: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<ggp::search::Choice<M::Move>, ggp::search::SearchError> {
        let legal = m.legal_moves(state, self.role)?.len();
        self.asked.lock().unwrap().push(legal);
        self.inner.choose(m, state, deadline)
    }
}

#[test]
fn a_duel_scores_the_stronger_player_and_asks_only_roles_with_a_choice() {
    use ggp::search::duel::{DuelPlan, Side, duel};
    let mut m = propnet(&ours("ticTacToe"));
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let plan = DuelPlan {
        games: 4,
        max_plies: 20,
        slice: Duration::from_secs(5),
        until: far(),
        seed: 3,
        iterations: Some(1000),
    };
    // MCTS (A) against the first legal move (B), which loses at tic-tac-toe from either seat.
    let result = duel(
        &mut m,
        &plan,
        |side, config| -> Box<dyn Player<PropnetMachine>> {
            let inner = match side {
                Side::A => plain_mcts(&config),
                Side::B => new_player(PlayerKind::Legal, &config),
            };
            Box::new(Counting {
                inner,
                role: 0,
                asked: asked.clone(),
            })
        },
    )
    .unwrap();
    assert_eq!((result.games, result.finished), (4, 4));
    assert!(result.score >= 0.75, "MCTS scored {}", result.score);
    let asked = asked.lock().unwrap();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|&n| n > 1),
        "a role with one legal move was asked: {asked:?}"
    );
    // Out of time before it starts: no game, an even score.
    let late = DuelPlan {
        until: Instant::now(),
        ..plan
    };
    let result = duel(&mut m, &late, |_, config| plain_mcts(&config)).unwrap();
    assert_eq!((result.games, result.score), (0, 0.5));
}

/// A duel on a sheet that can leave a role without a legal move (4pttc) ends such a game
/// unfinished instead of failing the trial.
#[test]
fn a_duel_survives_a_role_left_without_moves() {
    use ggp::search::duel::{DuelPlan, duel};
    let mut m = propnet(&base("4pttc"));
    let plan = DuelPlan {
        games: 200,
        max_plies: 40,
        slice: Duration::from_secs(5),
        until: far(),
        seed: 5,
        iterations: None,
    };
    let result = duel(&mut m, &plan, |_, config| {
        new_player::<PropnetMachine>(PlayerKind::Random, &config)
    })
    .unwrap();
    assert_eq!(result.games, 200);
    assert!(
        result.finished < 200,
        "some game met a role without a move: {result:?}"
    );
}

#[test]
fn the_heuristic_trial_turns_a_misleading_heuristic_into_a_prior_and_can_be_turned_off() {
    let mut m = propnet(&base("breakthroughSmall"));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let learnt = ggp::search::heuristic::learn_roles(&mut m, &mut rng, far(), 2000).unwrap();
    assert!(learnt.iter().all(Option::is_some), "piece counts are kept");
    // Each role given the other's heuristic: cut playouts valued by it play for the
    // opponent's pieces, and lose the trial to playouts that go to the end.
    let swapped: Vec<_> = learnt.iter().rev().cloned().collect();
    let player = |trial: bool, heuristics: &[Option<ggp::search::heuristic::Heuristic>]| {
        let settings = MctsSettings {
            heuristic: true,
            heuristic_trial: trial,
            anti: ggp::search::mcts::Anti::Off,
            ..MctsSettings::default()
        };
        // An iteration limit makes the trial's games the same on a loaded machine.
        MctsPlayer::<PropnetMachine>::with_heuristics(
            config(11, 2000),
            settings,
            heuristics.to_vec(),
        )
    };
    let mut p = player(true, &swapped);
    assert_eq!(p.playout_cutoff(), None, "nothing learnt before the start");
    p.start(&mut m, 0, Instant::now() + Duration::from_secs(60))
        .unwrap();
    assert!(p.heuristics().is_some(), "kept as a prior");
    assert_eq!(p.playout_cutoff(), None, "playouts go to the end");
    let mut p = player(false, &swapped);
    p.start(&mut m, 0, Instant::now() + Duration::from_millis(200))
        .unwrap();
    assert_eq!(p.playout_cutoff(), Some(2), "no trial: playouts cut as set");
    // The right heuristics win the trial: playouts stay cut.
    let mut p = player(true, &learnt);
    p.start(&mut m, 0, Instant::now() + Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        p.playout_cutoff(),
        Some(2),
        "the piece count wins by cutting"
    );
}
