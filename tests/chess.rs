//! Our chess sheet, `rules/chess.kif`, checked against chess.
//!
//! - The sheet is valid, grounds within the default budget, and the two engines agree on it.
//! - Perft through the GDL rules: the starting position to depth 4,
//!   `../shared/perft/tricky.perft` and a sample of `random.perft` (entries up to a node limit;
//!   every entry in the ignored tests, `cargo test -- --ignored`), and Position B of
//!   `SEED-GAMES.md`.
//! - The endings and their goals, on scripted positions.
//! - PGN replay on `../shared/pgn`: a sample of every collection (all of it in an ignored
//!   test) with no mismatch, and every file of `illegal/` and `invalid/`
//!   rejected with its reason.
//! - What replay and perft find wrong in the repository's `chess.kif` and `chess_200.kif`.
//!
//! The full run of the PGN collection is `cargo run --release -- pgn rules/chess.kif
//! ../shared/pgn/collection ../shared/pgn/famous ../shared/pgn/lichess-2025-05-sample.pgn`
//! (it also replays `illegal/` and `invalid/`, which are meant to fail).

mod common;

use common::Scope;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{CastlingMode, Chess, Position, PositionError};

use ggp::chess::perft::{perft, perft_checked};
use ggp::chess::pgn::{PgnGame, read_games};
use ggp::chess::replay::{Verdict, replay};
use ggp::chess::{ChessGame, Dialect, MoveShape};
use ggp::datalog::DatalogMachine;
use ggp::gdl::validate::{Verdict as SheetVerdict, check_text};
use ggp::gdl::{Description, Term, parse_term};
use ggp::machine::StateMachine;
use ggp::propnet::{Budget, PropnetMachine};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn shared(rel: &str) -> PathBuf {
    Path::new(ROOT).join("../shared").join(rel)
}

fn sheet_path() -> PathBuf {
    Path::new(ROOT).join("rules/chess.kif")
}

fn description(path: &Path) -> Description {
    let text = std::fs::read_to_string(path).unwrap();
    Description::from_text(&text).unwrap_or_else(|d| panic!("{}: {d:?}", path.display()))
}

fn datalog(path: &Path) -> ChessGame<DatalogMachine> {
    let machine = DatalogMachine::new(&description(path)).unwrap();
    let dialect = ChessGame::detect(&machine).expect("a known dialect");
    ChessGame::new(machine, dialect).unwrap()
}

fn propnet(path: &Path) -> ChessGame<PropnetMachine> {
    let machine = PropnetMachine::new(&description(path), &Budget::default()).unwrap();
    ChessGame::new(machine, Dialect::Ggp).unwrap()
}

fn position(fen: &str) -> Chess {
    ggp::chess::position_from_fen(fen).unwrap()
}

fn term(text: &str) -> Term {
    parse_term(text).unwrap()
}

// ---------------------------------------------------------------- the sheet

#[test]
fn sheet_is_valid_without_any_diagnostic() {
    let text = std::fs::read_to_string(sheet_path()).unwrap();
    let (verdict, diagnostics) = check_text(&text);
    assert_eq!(verdict, SheetVerdict::Valid);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
}

#[test]
fn sheet_grounds_within_the_default_budget() {
    let game = propnet(&sheet_path());
    let stats = game.machine().net().stats();
    eprintln!(
        "rules/chess.kif: {} bases, {} inputs, {} gates",
        stats.bases, stats.inputs, stats.gates
    );
    assert!(stats.gates < 1_000_000);
}

#[test]
fn dialects_are_recognised() {
    let base = shared("games/base");
    assert_eq!(datalog(&sheet_path()).dialect(), Dialect::Ggp);
    assert_eq!(
        datalog(&base.join("chess.kif")).dialect(),
        Dialect::Stanford
    );
    assert_eq!(
        datalog(&base.join("chess_200.kif")).dialect(),
        Dialect::Landau
    );
}

/// Random games on both engines in lockstep, from the start and from a FEN position:
/// state facts, legal moves, terminal and goals agree at every step.
#[test]
fn engines_agree_on_random_games() {
    let mut d = datalog(&sheet_path());
    let mut p = propnet(&sheet_path());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let starts = [
        None,
        Some("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"),
        Some("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"),
        None,
    ];
    for start in starts {
        let (mut ds, mut ps) = match start {
            None => (d.initial_state(), p.initial_state()),
            Some(fen) => (
                d.state_of(&position(fen)).unwrap(),
                p.state_of(&position(fen)).unwrap(),
            ),
        };
        let (dm, pm) = (d.machine_mut(), p.machine_mut());
        for step in 0..80 {
            let facts = |t: Vec<Term>| t.iter().map(Term::to_string).collect::<BTreeSet<_>>();
            assert_eq!(
                facts(dm.state_terms(&ds)),
                facts(pm.state_terms(&ps)),
                "step {step}"
            );
            let terminal = dm.is_terminal(&ds).unwrap();
            assert_eq!(terminal, pm.is_terminal(&ps).unwrap(), "step {step}");
            assert_eq!(
                dm.goals(&ds).unwrap(),
                pm.goals(&ps).unwrap(),
                "step {step}"
            );
            if terminal {
                break;
            }
            let mut djoint = Vec::new();
            let mut pjoint = Vec::new();
            for r in 0..2 {
                let mut dl: Vec<(String, _)> = dm
                    .legal_moves(&ds, r)
                    .unwrap()
                    .into_iter()
                    .map(|m| (dm.move_term(m).to_string(), m))
                    .collect();
                let mut pl: Vec<(String, _)> = pm
                    .legal_moves(&ps, r)
                    .unwrap()
                    .into_iter()
                    .map(|m| (pm.move_term(m).to_string(), m))
                    .collect();
                dl.sort_by(|a, b| a.0.cmp(&b.0));
                pl.sort_by(|a, b| a.0.cmp(&b.0));
                let dn: Vec<&String> = dl.iter().map(|x| &x.0).collect();
                let pn: Vec<&String> = pl.iter().map(|x| &x.0).collect();
                assert_eq!(dn, pn, "step {step}, role {r}");
                let i = rng.random_range(0..dl.len());
                djoint.push(dl[i].1);
                pjoint.push(pl[i].1);
            }
            ds = dm.next_state(&ds, &djoint).unwrap();
            ps = pm.next_state(&ps, &pjoint).unwrap();
        }
    }
}

// ---------------------------------------------------------------- perft

#[test]
fn perft_from_the_start() {
    let mut game = datalog(&sheet_path());
    let s0 = game.initial_state();
    for (depth, nodes) in [(1, 20), (2, 400), (3, 8902), (4, 197_281)] {
        assert_eq!(
            perft(game.machine_mut(), &s0, depth).unwrap(),
            nodes,
            "depth {depth}"
        );
    }
    let mut game = propnet(&sheet_path());
    let s0 = game.initial_state();
    assert_eq!(perft(game.machine_mut(), &s0, 2).unwrap(), 400);
}

/// One `id`/`epd`/`perft` entry of a perft file.
struct Entry {
    id: String,
    epd: String,
    counts: Vec<(u32, u64)>,
}

fn perft_file(name: &str) -> Vec<Entry> {
    let text = std::fs::read_to_string(shared("perft").join(name)).unwrap();
    let mut entries: Vec<Entry> = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("id") => entries.push(Entry {
                id: words.next().unwrap_or_default().to_string(),
                epd: String::new(),
                counts: Vec::new(),
            }),
            Some("epd") => {
                entries.last_mut().unwrap().epd = words.collect::<Vec<_>>().join(" ");
            }
            Some("perft") => {
                let depth = words.next().unwrap().parse().unwrap();
                let nodes = words.next().unwrap().parse().unwrap();
                entries.last_mut().unwrap().counts.push((depth, nodes));
            }
            _ => {}
        }
    }
    entries
}

/// Runs the entries' counts of at most `node_limit` leaves each.
/// Positions whose castling rights only make sense in Chess960 (the `xfen` entries) are
/// compared with the standard-chess count of an independent move generator instead of the
/// file's Chess960 count. Returns the number of counts compared.
fn run_perft_entries(entries: &[Entry], node_limit: u64) -> usize {
    let mut game = datalog(&sheet_path());
    let mut compared = 0;
    for e in entries {
        let fen = Fen::from_ascii(e.epd.as_bytes()).unwrap();
        let standard = fen
            .clone()
            .into_position::<Chess>(CastlingMode::Standard)
            .or_else(PositionError::ignore_impossible_check);
        let (pos, chess960) = match standard {
            Ok(p) => (p, false),
            Err(_) => {
                let p = fen
                    .into_position::<Chess>(CastlingMode::Standard)
                    .or_else(PositionError::ignore_invalid_castling_rights)
                    .or_else(PositionError::ignore_impossible_check)
                    .unwrap();
                (p, true)
            }
        };
        let state = game.state_of(&pos).unwrap();
        for &(depth, nodes) in &e.counts {
            if nodes > node_limit {
                continue;
            }
            let want = if chess960 {
                shakmaty::perft(&pos, depth)
            } else {
                nodes
            };
            let got = perft(game.machine_mut(), &state, depth).unwrap();
            assert_eq!(
                got,
                want,
                "{} depth {depth}{}",
                e.id,
                if chess960 { " (standard castling)" } else { "" }
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn perft_of_the_tricky_positions() {
    perft_tricky(Scope::Sample);
}

#[test]
#[ignore = "slow: every depth of every tricky position"]
fn perft_of_the_tricky_positions_to_every_depth() {
    perft_tricky(Scope::All);
}

fn perft_tricky(scope: Scope) {
    let entries = perft_file("tricky.perft");
    assert_eq!(entries.len(), 19);
    let limit = if scope == Scope::All {
        u64::MAX
    } else {
        15_000
    };
    let compared = run_perft_entries(&entries, limit);
    assert!(compared >= 40, "{compared}");
}

#[test]
fn perft_of_a_sample_of_random_positions() {
    perft_random(Scope::Sample);
}

#[test]
#[ignore = "slow: the sample of random positions to 200,000 nodes"]
fn perft_of_a_sample_of_random_positions_deeper() {
    perft_random(Scope::All);
}

fn perft_random(scope: Scope) {
    let entries = perft_file("random.perft");
    let sample: Vec<Entry> = entries.into_iter().step_by(250).collect();
    assert!(sample.len() >= 25);
    let limit = if scope == Scope::All { 200_000 } else { 10_000 };
    let compared = run_perft_entries(&sample, limit);
    assert!(compared >= 2 * 25, "{compared}");
}

/// Every position below the trickiest ones (en passant pins, castling, promotions, checks)
/// has exactly chess's moves, board and side to move.
#[test]
fn every_node_agrees_with_chess_below_tricky_positions() {
    let mut game = datalog(&sheet_path());
    for (fen, depth) in [
        (
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq -",
            2,
        ),
        (
            "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ -",
            2,
        ),
        ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - -", 3),
        ("1b1k4/8/8/1rPpK3/8/8/8/8 w - d6", 3),
        ("8/8/8/1k6/3Pp3/8/8/4KQ2 b - d3", 3),
        (
            "rnbqk1nr/bb3p1p/1q2r3/2pPp3/3P4/7P/1PP1NpPP/R1BQKBNR w KQkq c6",
            2,
        ),
    ] {
        let pos = position(fen);
        let state = game.state_of(&pos).unwrap();
        if let Err(e) = perft_checked(&mut game, &state, &pos, depth) {
            panic!("{fen}: {e}");
        }
    }
}

/// Position B of `SEED-GAMES.md`: white has exactly these 15 moves.
#[test]
fn position_b_has_fifteen_moves() {
    let pos = position("1R6/k1nK4/1p6/1P6/8/8/8/8 w - - 0 1");
    let mut game = datalog(&sheet_path());
    let state = game.state_of(&pos).unwrap();
    let snap = game.snapshot(&state).unwrap();
    let moves = game.moves(&state, &snap).unwrap();
    let mut sans: Vec<String> = moves
        .iter()
        .map(|m| {
            let shape = m.shape.clone().unwrap();
            let chess = pos
                .legal_moves()
                .into_iter()
                .find(|&c| MoveShape::from_move(pos.board(), c) == shape)
                .unwrap();
            shakmaty::san::SanPlus::from_move(pos.clone(), chess).to_string()
        })
        .collect();
    sans.sort();
    let mut want: Vec<&str> = "Kc6 Kc8 Kd6 Kd8 Ke7 Kxc7 Ra8+ Rb7+ Rc8 Rd8 Re8 Rf8 Rg8 Rh8 Rxb6"
        .split(' ')
        .collect();
    want.sort();
    assert_eq!(sans, want);
}

// ---------------------------------------------------------------- endings

/// A game on our sheet from a FEN position, one SAN move at a time.
struct Play {
    game: ChessGame<DatalogMachine>,
    state: <DatalogMachine as StateMachine>::State,
    pos: Chess,
}

impl Play {
    fn from(fen: &str) -> Play {
        let mut game = datalog(&sheet_path());
        let pos = position(fen);
        let state = game.state_of(&pos).unwrap();
        Play { game, state, pos }
    }

    fn san(&mut self, san: &str) {
        let m = san.parse::<San>().unwrap().to_move(&self.pos).unwrap();
        let shape = MoveShape::from_move(self.pos.board(), m);
        let snap = self.game.snapshot(&self.state).unwrap();
        let moves = self.game.moves(&self.state, &snap).unwrap();
        let found: Vec<_> = moves
            .into_iter()
            .filter(|g| g.shape.as_ref() == Ok(&shape))
            .collect();
        assert_eq!(found.len(), 1, "{san}");
        self.state = found.into_iter().next().unwrap().next;
        self.pos.play_unchecked(m);
    }

    fn terminal(&mut self) -> bool {
        self.game.machine_mut().is_terminal(&self.state).unwrap()
    }

    fn goals(&mut self) -> Vec<u8> {
        self.game.machine_mut().goals(&self.state).unwrap()
    }

    fn has_fact(&self, fact: &str) -> bool {
        self.game
            .machine()
            .state_terms(&self.state)
            .contains(&term(fact))
    }
}

#[test]
fn checkmate_wins_and_loses() {
    let mut p = Play::from("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    for san in ["f3", "e5", "g4"] {
        p.san(san);
        assert!(!p.terminal());
        assert_eq!(p.goals(), [50, 50]);
    }
    p.san("Qh4#");
    assert!(p.terminal());
    assert_eq!(p.goals(), [0, 100]);
}

#[test]
fn stalemate_is_a_draw() {
    let mut p = Play::from("7k/8/6Q1/8/8/8/8/K7 w - - 0 1");
    p.san("Qe6");
    assert!(!p.terminal());
    let mut p = Play::from("7k/8/8/5Q2/8/8/8/K7 w - - 0 1");
    p.san("Qf7");
    assert!(p.terminal());
    assert_eq!(p.goals(), [50, 50]);
}

#[test]
fn the_fifty_move_rule_ends_the_game_unless_it_mates() {
    let mut p = Play::from("7k/8/8/8/8/8/1R6/K5R1 w - - 98 80");
    p.san("Rb3");
    assert!(!p.terminal());
    assert!(p.has_fact("(halfmove 99)"));
    p.san("Kh7");
    assert!(p.terminal());
    assert_eq!(p.goals(), [50, 50]);
    // A capture or a pawn move resets the clock.
    let mut p = Play::from("7k/8/8/8/8/8/P6r/K7 w - - 99 80");
    p.san("a3");
    assert!(p.has_fact("(halfmove 0)"));
    assert!(!p.terminal());
    // Mate on the hundredth half-move is mate.
    let mut p = Play::from("7k/8/8/8/8/8/R7/K5R1 w - - 99 80");
    p.san("Rh2#");
    assert!(p.terminal());
    assert_eq!(p.goals(), [100, 0]);
}

#[test]
fn dead_positions_are_draws() {
    for (fen, san, dead) in [
        // King against king.
        ("8/8/8/8/8/4k3/6p1/5K2 w - - 0 1", "Kxg2", true),
        // King and bishop, king and knight, against king.
        ("7k/8/8/8/8/8/2K2r2/6B1 w - - 0 1", "Bxf2", true),
        ("7k/8/8/8/8/8/2K1r3/6N1 w - - 0 1", "Nxe2", true),
        // Mating material stays, or two minor pieces (dead or not, the sheet plays on).
        ("7k/8/8/8/8/8/2K1r3/4R3 w - - 0 1", "Rxe2", false),
        ("7k/8/8/8/8/8/2K1r3/1Q4N1 w - - 0 1", "Nxe2", false),
        ("7k/8/7b/8/8/8/2K2r2/6B1 w - - 0 1", "Bxf2", false),
        ("7k/8/8/8/8/8/2K1r3/5NN1 w - - 0 1", "Nxe2", false),
        ("7k/8/8/8/8/8/P1K1r3/6N1 w - - 0 1", "Nxe2", false),
    ] {
        let mut p = Play::from(fen);
        assert!(!p.terminal(), "{fen}");
        p.san(san);
        assert_eq!(p.terminal(), dead, "{fen} {san}");
        assert_eq!(p.goals(), [50, 50]);
    }
}

#[test]
fn the_step_limit_ends_the_game() {
    let mut game = datalog(&sheet_path());
    let pos = position("7k/8/8/8/8/8/1R6/K5R1 w - - 0 1");
    let mut facts: Vec<Term> = Dialect::Ggp
        .write(&pos)
        .into_iter()
        .filter(|f| !f.to_string().starts_with("(step"))
        .collect();
    facts.push(term("(step 999)"));
    let state = game.machine_mut().state_from_terms(&facts).unwrap();
    assert!(!game.machine_mut().is_terminal(&state).unwrap());
    let snap = game.snapshot(&state).unwrap();
    let next = game.moves(&state, &snap).unwrap().remove(0).next;
    assert!(game.machine_mut().is_terminal(&next).unwrap());
    assert_eq!(game.machine_mut().goals(&next).unwrap(), [50, 50]);
}

#[test]
fn castling_rights_and_en_passant_last_as_they_should() {
    // A rook captured on its square takes the right with it.
    let mut p = Play::from("r3k2r/8/8/8/8/8/6b1/R3K2R b KQkq - 0 1");
    p.san("Bxh1");
    assert!(!p.has_fact("(castle white king)"));
    assert!(p.has_fact("(castle white queen)"));
    assert!(p.has_fact("(castle black king)"));
    // En passant only on the next ply.
    let mut p = Play::from("4k3/8/8/8/5p2/8/4P1P1/4K3 w - - 0 1");
    p.san("e4");
    assert!(p.has_fact("(ep e 3)"));
    p.san("Kd7");
    assert!(!p.has_fact("(ep e 3)"));
    p.san("g4");
    p.san("fxg3");
    assert!(p.has_fact("(cell g 4 b)"));
    assert!(p.has_fact("(cell g 3 bp)"));
}

// ---------------------------------------------------------------- PGN

fn games_in(paths: &[PathBuf]) -> Vec<(PathBuf, PgnGame)> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            while let Some(dir) = stack.pop() {
                for e in std::fs::read_dir(&dir).unwrap() {
                    let path = e.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|x| x == "pgn") {
                        files.push(path);
                    }
                }
            }
        } else {
            files.push(p.clone());
        }
    }
    files.sort();
    let mut games = Vec::new();
    for f in files {
        let text = std::fs::read(&f).unwrap();
        games.extend(read_games(&text).into_iter().map(|g| (f.clone(), g)));
    }
    games
}

/// Replays the games; returns the failures as lines, and the plies replayed.
fn replay_all<M: StateMachine>(
    game: &mut ChessGame<M>,
    games: &[(PathBuf, PgnGame)],
) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut plies = 0;
    for (path, g) in games {
        let r = replay(game, g);
        plies += r.plies;
        match r.verdict {
            Verdict::Agree => {}
            Verdict::Mismatch(p) => failures.push(format!(
                "{} game {}: mismatch: {p}",
                path.display(),
                g.number
            )),
            Verdict::Illegal(p) => failures.push(format!(
                "{} game {}: illegal: {p}",
                path.display(),
                g.number
            )),
        }
    }
    (failures, plies)
}

/// The null move (`--`, written `Z0`) of Anastasian-Lewis is no chess move.
const KNOWN_ILLEGAL: &[&str] = &["anastasian-lewis.pgn game 1: illegal: ply 82 (41... --)"];

fn sample(dir: &str, step: usize) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(shared("pgn").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v.into_iter().step_by(step).collect()
}

#[test]
fn pgn_collections_replay_without_mismatch() {
    replay_pgn_collections(Scope::Sample);
}

#[test]
#[ignore = "slow: every game of every collection"]
fn every_pgn_collection_replays_without_mismatch() {
    replay_pgn_collections(Scope::All);
}

fn replay_pgn_collections(scope: Scope) {
    let paths: Vec<PathBuf> = if scope == Scope::All {
        vec![
            shared("pgn/collection/valid"),
            shared("pgn/collection/checkmate"),
            shared("pgn/collection/stalemate"),
            shared("pgn/collection/fifty_move_rule"),
            shared("pgn/collection/threefold_repetition"),
            shared("pgn/collection/insufficient_material"),
            shared("pgn/famous"),
            shared("pgn/lichess-2025-05-sample.pgn"),
        ]
    } else {
        [
            sample("collection/valid", 100),
            sample("collection/checkmate/white_won", 20),
            sample("collection/checkmate/black_won", 20),
            sample("collection/stalemate", 2),
            sample("collection/fifty_move_rule", 3),
            sample("collection/threefold_repetition", 6),
            sample("collection/insufficient_material", 1),
            vec![
                shared("pgn/famous/molinari-bordais-1979.pgn"),
                shared("pgn/famous/utf8-bom.pgn"),
                shared("pgn/famous/chessbase-empty-line.pgn"),
                shared("pgn/famous/anastasian-lewis.pgn"),
            ],
        ]
        .concat()
    };
    let mut games = games_in(&paths);
    if scope == Scope::Sample {
        // Every file above, and the first games of the lichess sample.
        let lichess = games_in(&[shared("pgn/lichess-2025-05-sample.pgn")]);
        games.extend(lichess.into_iter().take(8));
    }
    let mut game = datalog(&sheet_path());
    let (failures, plies) = replay_all(&mut game, &games);
    eprintln!("{} games, {plies} plies", games.len());
    let unexpected: Vec<&String> = failures
        .iter()
        .filter(|f| !KNOWN_ILLEGAL.iter().any(|k| f.contains(k)))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
}

/// Each file of `illegal/` and `invalid/` is rejected as illegal, never as a mismatch of the
/// sheet, and for the reason its broken move gives.
#[test]
fn broken_records_are_rejected_with_their_reason() {
    let mut game = datalog(&sheet_path());
    for (file, reason) in [
        (
            "illegal/0001.pgn",
            "ply 3 (2. Nf4): Nf4: illegal san in chess",
        ),
        (
            "illegal/0002.pgn",
            "(38... Kf7=Q): Kf7=Q: illegal san in chess",
        ),
        ("illegal/0003.pgn", "(19. b3): b3: illegal san in chess"),
        ("illegal/0004.pgn", "(21. Nd3): Nd3: illegal san in chess"),
        ("illegal/0005.pgn", "(14... f8): f8: illegal san in chess"),
        ("invalid/0001.pgn", "`Invalidating` is not a move"),
        ("invalid/0002.pgn", "`INVALIDATING` is not a move"),
        ("invalid/0003.pgn", "`Qc3w` is not a move"),
        ("invalid/0004.pgn", "`Nf9` is not a move"),
    ] {
        let games = games_in(&[shared("pgn/collection").join(file)]);
        let (failures, _) = replay_all(&mut game, &games);
        assert!(!failures.is_empty(), "{file} is accepted");
        assert!(
            failures.iter().all(|f| f.contains(": illegal: ")),
            "{file}: {failures:?}"
        );
        assert!(
            failures.iter().any(|f| f.contains(reason)),
            "{file}: {failures:?}"
        );
    }
}

#[test]
fn promotions_written_loosely_are_accepted() {
    let text = b"[FEN \"8/P6k/8/8/8/8/6Kp/8 w - - 0 1\"]\n\n1. a8Q h1=Q+ 2. Kxh1 Kg6 3. Qa1 *\n\n\
        [FEN \"8/P6k/8/8/8/8/6Kp/8 w - - 0 1\"]\n\n1. a8 Kg6 *\n";
    let games = read_games(text);
    let mut game = datalog(&sheet_path());
    for g in &games {
        let r = replay(&mut game, g);
        assert_eq!(r.verdict, Verdict::Agree);
    }
    assert_eq!(games[0].rewritten, 1);
    assert_eq!(replay(&mut game, &games[1]).lenient_promotions, 1);
}

// ---------------------------------------------------------------- other sheets

/// What replay and perft find wrong in the repository's chess sheets.
#[test]
fn the_repository_sheets_have_known_faults() {
    let base = shared("games/base");
    let fault = |game: &mut ChessGame<DatalogMachine>, fen: &str| {
        let pos = position(fen);
        let state = game.state_of(&pos).unwrap();
        perft_checked(game, &state, &pos, 1)
            .unwrap_err()
            .to_string()
    };
    let first_problem = |game: &mut ChessGame<DatalogMachine>, text: &str| {
        let games = read_games(text.as_bytes());
        match replay(game, &games[0]).verdict {
            Verdict::Mismatch(p) => p.to_string(),
            other => panic!("{other:?}"),
        }
    };
    // A game of 200 plies that only moves knights.
    let shuffle: String = (0..51)
        .map(|i| format!("{}. Nf3 Nf6 {}. Ng1 Ng8 ", 2 * i + 1, 2 * i + 2))
        .collect();

    // chess.kif (Stanford).
    let mut stanford = datalog(&base.join("chess.kif"));
    // No underpromotion.
    let e = fault(
        &mut stanford,
        "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ -",
    );
    assert!(
        e.contains("the sheet lacks Pd7xc8=N Pd7xc8=B Pd7xc8=R"),
        "{e}"
    );
    // A pinned piece cannot move along the line of the pin.
    let e = fault(
        &mut stanford,
        "2r1k2r/pp2ppb1/5n1p/q5p1/1nPP2P1/1QNB1N1P/PP3P2/2KRR3 b k - 6 15",
    );
    assert!(e.contains("the sheet lacks Pe7-e5 Pe7-e6"), "{e}");
    // An en passant capture that exposes the king along the rank.
    let e = fault(&mut stanford, "1b1k4/8/8/1rPpK3/8/8/8/8 w - d6");
    assert!(e.contains("the sheet adds Pc5xd6"), "{e}");
    // No goal at the step limit.
    let e = first_problem(&mut stanford, &shuffle);
    assert!(e.contains("ply 201 (101. Nf3): the game ends in the step limit: white should score 50, the sheet gives []"), "{e}");

    // chess_200.kif (Landau).
    let mut landau = datalog(&base.join("chess_200.kif"));
    // The same en passant capture.
    let e = fault(&mut landau, "1b1k4/8/8/1rPpK3/8/8/8/8 w - d6");
    assert!(e.contains("the sheet adds Pc5xd6"), "{e}");
    // An en passant capture of the pawn that gives check is refused.
    let e = fault(&mut landau, "8/8/8/1pp2k2/5pP1/5K2/8/8 b - g3 0 38");
    assert!(e.contains("the sheet lacks Pf4xg3"), "{e}");
    // Castling is not a king move to it: a king that castled and walked back castles again.
    let e = first_problem(
        &mut landau,
        "1. e4 d5 2. exd5 Qxd5 3. Nc3 Qa5 4. d4 e5 5. Nf3 Bb4 6. Bd2 Bg4 7. Be2 exd4 \
         8. Nxd4 Qe5 9. Ncb5 Bxe2 10. Qxe2 Bxd2+ 11. Kxd2 Qxe2+ 12. Kxe2 Na6 13. Rhe1 O-O-O \
         14. Nxa7+ Kb8 15. Nac6+ bxc6 16. Nxc6+ Kc8 17. Nxd8 Kxd8 18. Rad1+ Ke8 19. Kd3 Ne7 \
         20. Kc4 h5 *",
    );
    assert!(
        e.contains("ply 40 (20... h5): legal moves differ from chess: the sheet adds O-O"),
        "{e}"
    );
    // Its step limit ends the game with the right goals.
    let r = replay(&mut landau, &read_games(shuffle.as_bytes())[0]);
    assert_eq!(r.verdict, Verdict::Agree);
    assert_eq!(r.plies, 200);
    assert!(r.ended_early.is_some());
}

// ---------------------------------------------------------------- the command line

fn ggp(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ggp"))
        .args(args)
        .current_dir(ROOT)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn cli_pgn_prints_failures_then_counts() {
    let (code, out) = ggp(&[
        "pgn",
        "rules/chess.kif",
        "../shared/pgn/famous/molinari-bordais-1979.pgn",
        "--engine",
        "datalog",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, "games: 1, plies: 10, mismatches: 0, illegal: 0\n");
    let (code, out) = ggp(&[
        "pgn",
        "rules/chess.kif",
        "../shared/pgn/collection/illegal/0001.pgn",
        "../shared/pgn/famous/molinari-bordais-1979.pgn",
        "--engine",
        "datalog",
    ]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with(
        "../shared/pgn/collection/illegal/0001.pgn game 1 (line 1): illegal: ply 3 (2. Nf4)"
    ));
    assert!(lines[0].contains("FEN rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"));
    assert!(lines[1].starts_with("games: 2, plies: 12, mismatches: 0, illegal: 1"));
}

#[test]
fn cli_perft_counts_from_a_fen() {
    let (code, out) = ggp(&[
        "perft",
        "rules/chess.kif",
        "--fen",
        "1R6/k1nK4/1p6/1P6/8/8/8/8 w - - 0 1",
        "--depth",
        "1",
        "--engine",
        "datalog",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out, "perft 1: 15\n");
    let (code, out) = ggp(&[
        "perft",
        "rules/chess.kif",
        "--depth",
        "2",
        "--check",
        "--engine",
        "datalog",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out, "perft 2: 400 (every node agrees with chess)\n");
}
