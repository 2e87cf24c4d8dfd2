//! The rule sheets we ship in `rules/`: each is valid with no diagnostic at all, concrete
//! facts of each game's rules hold when scripted move sequences are played on the Datalog
//! engine, and the propnet agrees with the Datalog engine over random playouts.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp::datalog::DatalogMachine;
use ggp::gdl::validate::{Verdict, check_text};
use ggp::gdl::{Description, Term, parse_term};
use ggp::machine::{MachineError, StateMachine};
use ggp::propnet::{Budget, PropnetMachine};

type State = <DatalogMachine as StateMachine>::State;

/// The sheets in `rules/`.
const SHEETS: &[&str] = &[
    "ticTacToe",
    "connectFour",
    "jesonMor",
    "dominupFixed",
    "dominup",
];

fn sheet_text(name: &str) -> String {
    let path = format!("{}/rules/{name}.kif", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

fn term(text: &str) -> Term {
    parse_term(text).unwrap_or_else(|e| panic!("bad term {text:?}: {e:?}"))
}

/// A game being played from a sheet, one checked joint move at a time.
struct Game {
    machine: DatalogMachine,
    state: State,
    /// Moves made so far.
    steps: usize,
}

impl Game {
    fn from_text(text: &str) -> Game {
        let description = Description::from_text(text).expect("the sheet is valid");
        let machine = DatalogMachine::new(&description).expect("the machine builds");
        let state = machine.initial_state();
        Game {
            machine,
            state,
            steps: 0,
        }
    }

    fn new(name: &str) -> Game {
        Game::from_text(&sheet_text(name))
    }

    fn roles(&self) -> Vec<String> {
        self.machine.roles().iter().map(Term::to_string).collect()
    }

    /// The legal moves of role number `role`, printed.
    fn legal(&mut self, role: usize) -> BTreeSet<String> {
        let moves = self.machine.legal_moves(&self.state, role).unwrap();
        let printed: BTreeSet<String> = moves
            .iter()
            .map(|&m| self.machine.move_term(m).to_string())
            .collect();
        assert_eq!(printed.len(), moves.len(), "repeated legal moves");
        printed
    }

    /// The role to move: the one whose legal moves are not just `noop`.
    fn mover(&mut self) -> usize {
        let movers: Vec<usize> = (0..self.machine.roles().len())
            .filter(|&r| self.legal(r) != BTreeSet::from(["noop".to_string()]))
            .collect();
        assert_eq!(movers.len(), 1, "exactly one role should be to move");
        movers[0]
    }

    /// The joint move in which the role to move plays `mv` and the others `noop`.
    fn joint(&mut self, mv: &str) -> Vec<<DatalogMachine as StateMachine>::Move> {
        let mover = self.mover();
        let noop = term("noop");
        (0..self.machine.roles().len())
            .map(|r| {
                let t = if r == mover { term(mv) } else { noop.clone() };
                self.machine
                    .find_move(&t)
                    .unwrap_or_else(|| panic!("unknown move {t}"))
            })
            .collect()
    }

    /// Plays `mv` for the role to move (checked for legality); the game must not be over.
    fn play(&mut self, mv: &str) {
        assert!(
            !self.terminal(),
            "step {}: game over before {mv}",
            self.steps
        );
        let joint = self.joint(mv);
        self.state = self
            .machine
            .next_state(&self.state, &joint)
            .unwrap_or_else(|e| panic!("step {}: {mv}: {e}", self.steps));
        self.steps += 1;
    }

    /// Plays each move in turn, checking that the game goes on until the last.
    fn play_all(&mut self, moves: &[&str]) {
        for mv in moves {
            self.play(mv);
        }
    }

    /// Whether `mv` would be rejected as illegal for the role to move.
    fn rejects(&mut self, mv: &str) -> bool {
        let Some(m) = self.machine.find_move(&term(mv)) else {
            return true;
        };
        let mover = self.mover();
        let noop = self.machine.find_move(&term("noop")).unwrap();
        let joint: Vec<_> = (0..self.machine.roles().len())
            .map(|r| if r == mover { m } else { noop })
            .collect();
        matches!(
            self.machine.next_state(&self.state, &joint),
            Err(MachineError::IllegalMove { .. })
        )
    }

    fn terminal(&mut self) -> bool {
        self.machine.is_terminal(&self.state).unwrap()
    }

    fn goals(&mut self) -> Vec<u8> {
        self.machine.goals(&self.state).unwrap()
    }

    /// The facts of the state, printed.
    fn facts(&self) -> BTreeSet<String> {
        self.machine
            .state_terms(&self.state)
            .iter()
            .map(Term::to_string)
            .collect()
    }

    fn holds(&self, fact: &str) -> bool {
        let fact = term(fact).to_string();
        self.facts().contains(&fact)
    }

    /// The facts of the state that start with `prefix`, e.g. `"(cell "`.
    fn facts_starting(&self, prefix: &str) -> BTreeSet<String> {
        self.facts()
            .into_iter()
            .filter(|f| f.starts_with(prefix))
            .collect()
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| term(s).to_string()).collect()
}

#[test]
fn every_sheet_is_valid_without_diagnostics() {
    for name in SHEETS {
        let (verdict, diagnostics) = check_text(&sheet_text(name));
        let printed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(verdict, Verdict::Valid, "{name}: {printed:#?}");
        assert!(diagnostics.is_empty(), "{name}: {printed:#?}");
    }
}

#[test]
fn every_sheet_has_base_and_input_declarations() {
    for name in SHEETS {
        let text = sheet_text(name);
        assert!(text.contains("(base "), "{name} declares no base");
        assert!(text.contains("(input "), "{name} declares no input");
        assert!(
            text.starts_with(';') && text.contains("written for ggp from the rules of the game"),
            "{name} lacks its header"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Tic-tac-toe

#[test]
fn tic_tac_toe_opening_win_and_draw() {
    let mut g = Game::new("ticTacToe");
    assert_eq!(g.roles(), ["x", "o"]);
    assert_eq!(g.legal(0).len(), 9);
    assert_eq!(g.legal(1), set(&["noop"]));
    assert!(!g.terminal());

    // x takes column 1.
    g.play_all(&["(mark 1 1)", "(mark 2 1)", "(mark 1 2)", "(mark 2 2)"]);
    assert!(g.rejects("(mark 1 1)"), "an occupied cell is not legal");
    g.play("(mark 1 3)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);

    // x o x / x o o / o x x: a full board with no line.
    let mut g = Game::new("ticTacToe");
    g.play_all(&[
        "(mark 1 1)",
        "(mark 2 1)",
        "(mark 3 1)",
        "(mark 2 2)",
        "(mark 1 2)",
        "(mark 1 3)",
        "(mark 2 3)",
        "(mark 3 2)",
    ]);
    assert!(!g.terminal());
    g.play("(mark 3 3)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [50, 50]);
}

#[test]
fn tic_tac_toe_legal_counts_and_diagonal_win_for_o() {
    let mut g = Game::new("ticTacToe");
    let moves = [
        "(mark 1 2)",
        "(mark 1 1)",
        "(mark 2 1)",
        "(mark 2 2)",
        "(mark 1 3)",
    ];
    for (k, mv) in moves.iter().enumerate() {
        let (mover, other) = if k % 2 == 0 { (0, 1) } else { (1, 0) };
        assert_eq!(g.legal(mover).len(), 9 - k);
        assert_eq!(g.legal(other), set(&["noop"]));
        g.play(mv);
        assert!(!g.terminal());
    }
    assert!(g.holds("(cell 2 2 o)"));
    assert!(g.holds("(control o)"));
    // o completes the diagonal (1,1) (2,2) (3,3).
    g.play("(mark 3 3)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [0, 100]);
}

// ---------------------------------------------------------------------------------------------
// Connect Four

const DROPS: [&str; 7] = [
    "(drop 1)", "(drop 2)", "(drop 3)", "(drop 4)", "(drop 5)", "(drop 6)", "(drop 7)",
];

/// Plays drops by column number, alternating from red.
fn connect_four(columns: &[u8]) -> Game {
    let mut g = Game::new("connectFour");
    for c in columns {
        g.play(&format!("(drop {c})"));
    }
    g
}

#[test]
fn connect_four_opening() {
    let mut g = Game::new("connectFour");
    assert_eq!(g.roles(), ["red", "yellow"]);
    assert_eq!(g.legal(0), set(&DROPS));
    assert_eq!(g.legal(1), set(&["noop"]));
    assert!(!g.terminal());
    assert_eq!(g.facts(), set(&["(control red)"]), "the board starts empty");
    assert!(g.rejects("(drop 8)"));
    assert!(g.rejects("(drop 0)"));
}

#[test]
fn connect_four_discs_stack() {
    let mut g = connect_four(&[4]);
    assert_eq!(g.facts(), set(&["(cell 4 1 red)", "(control yellow)"]));
    assert_eq!(g.legal(1), set(&DROPS));
    assert_eq!(g.legal(0), set(&["noop"]));
    g.play("(drop 4)");
    assert_eq!(
        g.facts(),
        set(&["(cell 4 1 red)", "(cell 4 2 yellow)", "(control red)"])
    );
    g.play("(drop 3)");
    g.play("(drop 4)");
    assert_eq!(
        g.facts_starting("(cell "),
        set(&[
            "(cell 3 1 red)",
            "(cell 4 1 red)",
            "(cell 4 2 yellow)",
            "(cell 4 3 yellow)"
        ])
    );
}

#[test]
fn connect_four_vertical_win_for_red() {
    let mut g = connect_four(&[1, 2, 1, 2, 1, 2]);
    assert!(!g.terminal(), "three in a column is not yet a win");
    g.play("(drop 1)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn connect_four_horizontal_win_for_yellow() {
    // Red: 1 1 1 7 (three in column 1); yellow: 2 3 4 5 along row 1.
    let mut g = connect_four(&[1, 2, 1, 3, 1, 4, 7]);
    assert!(!g.terminal());
    g.play("(drop 5)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [0, 100]);
}

#[test]
fn connect_four_rising_diagonal() {
    // Red ends with (1,1) (2,2) (3,3) (4,4).
    let mut g = connect_four(&[1, 2, 2, 3, 4, 3, 3, 4, 7, 4]);
    assert!(!g.terminal());
    g.play("(drop 4)");
    assert!(g.holds("(cell 4 4 red)"));
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn connect_four_falling_diagonal() {
    // The mirror image: red ends with (4,4) (5,3) (6,2) (7,1).
    let mut g = connect_four(&[7, 6, 6, 5, 4, 5, 5, 4, 1, 4]);
    assert!(!g.terminal());
    g.play("(drop 4)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn connect_four_full_column_is_not_legal() {
    let mut g = connect_four(&[3, 3, 3, 3, 3, 3]);
    assert!(!g.terminal());
    assert!(g.holds("(cell 3 6 yellow)"));
    let mut expected = set(&DROPS);
    expected.remove("(drop 3)");
    assert_eq!(g.legal(0), expected);
    assert!(g.rejects("(drop 3)"));
}

#[test]
fn connect_four_seed_position_wins_in_column_two() {
    // The seed's test position (SEED-GAMES.md, Connect Four), bottom row first, 1 = X (red),
    // -1 = O (yellow), columns 0-based there and 1-based here:
    // [-1,1,1,-1,1,-1,-1] [0,1,0,0,-1,-1,0] [0,1,0,0,0,1,0], X to move.
    let g = connect_four(&[2, 1, 3, 4, 5, 6, 2, 6, 2, 7, 6, 5]);
    assert_eq!(
        g.facts_starting("(cell "),
        set(&[
            "(cell 1 1 yellow)",
            "(cell 2 1 red)",
            "(cell 3 1 red)",
            "(cell 4 1 yellow)",
            "(cell 5 1 red)",
            "(cell 6 1 yellow)",
            "(cell 7 1 yellow)",
            "(cell 2 2 red)",
            "(cell 5 2 yellow)",
            "(cell 6 2 yellow)",
            "(cell 2 3 red)",
            "(cell 6 3 red)",
        ])
    );
    // Column 1 (0-based), 2 here, completes four vertically; no other drop ends the game.
    for c in 1..=7 {
        let mut g = connect_four(&[2, 1, 3, 4, 5, 6, 2, 6, 2, 7, 6, 5]);
        g.play(&format!("(drop {c})"));
        if c == 2 {
            assert!(g.terminal());
            assert_eq!(g.goals(), [100, 0]);
        } else {
            assert!(!g.terminal(), "drop {c} should not end the game");
        }
    }
}

#[test]
fn connect_four_full_board_is_a_draw() {
    // Fills the board with no four in a line; found by a search, final board (row 6 on top):
    // RYRYRYY / YRRRYRR / YYYRYYY / YYRRYYR / RYRYRYY / RRRYRRR.
    let columns = [
        6, 4, 3, 4, 2, 6, 4, 2, 1, 2, 5, 2, 3, 6, 1, 6, 7, 7, 3, 1, 7, 1, 5, 3, 4, 1, 4, 5, 3, 4,
        3, 7, 1, 5, 2, 2, 6, 5, 5, 6, 7,
    ];
    let mut g = connect_four(&columns);
    assert!(!g.terminal());
    assert_eq!(g.legal(1), set(&["(drop 7)"]));
    g.play("(drop 7)");
    assert_eq!(g.facts_starting("(cell ").len(), 42);
    assert!(g.terminal());
    assert_eq!(g.goals(), [50, 50]);
}

// ---------------------------------------------------------------------------------------------
// Jeson Mor

fn knights(g: &Game, role: &str) -> usize {
    g.facts_starting("(cell ")
        .iter()
        .filter(|f| f.ends_with(&format!(" {role})")))
        .count()
}

#[test]
fn jeson_mor_initial_position() {
    let mut g = Game::new("jesonMor");
    assert_eq!(g.roles(), ["white", "black"]);
    let cells = g.facts_starting("(cell ");
    assert_eq!(cells.len(), 18);
    for f in ["a", "b", "c", "d", "e", "f", "g", "h", "i"] {
        assert!(cells.contains(&format!("(cell {f} 1 white)")));
        assert!(cells.contains(&format!("(cell {f} 9 black)")));
    }
    assert!(g.holds("(control white)"));
    assert!(g.holds("(step 0)"));
    assert!(!g.terminal());

    // White's first moves, by hand. A knight on rank 1 can go to rank 3 one file aside, or
    // to rank 2 two files aside; all those squares are empty.
    // - One file aside: the a- and i-knights have 1 square, the seven others 2: 2 + 14 = 16.
    // - Two files aside: the a-, b-, h- and i-knights have 1, the five from c to g have 2:
    //   4 + 10 = 14.
    // In all 16 + 14 = 30.
    let legal = g.legal(0);
    assert_eq!(legal.len(), 30);
    assert!(legal.contains("(move a 1 b 3)"));
    assert!(legal.contains("(move a 1 c 2)"));
    assert!(legal.contains("(move e 1 c 2)"));
    assert!(!legal.contains("(move a 1 c 3)"));
    assert_eq!(g.legal(1), set(&["noop"]));

    // Black's first reply is the mirror image: 30 moves.
    g.play("(move a 1 b 3)");
    assert_eq!(g.legal(1).len(), 30);
    assert_eq!(g.legal(0), set(&["noop"]));
    assert!(g.holds("(step 1)"));
    assert!(g.holds("(cell b 3 white)"));
    assert!(!g.holds("(cell a 1 white)"));
}

#[test]
fn jeson_mor_no_move_onto_an_own_knight() {
    let mut g = Game::new("jesonMor");
    g.play_all(&["(move b 1 c 3)", "(move b 9 c 7)"]);
    let legal = g.legal(0);
    // The d1 knight reaches b2, f2, c3 and e3; c3 holds a white knight.
    let from_d1: BTreeSet<String> = legal
        .iter()
        .filter(|m| m.starts_with("(move d 1 "))
        .cloned()
        .collect();
    assert_eq!(
        from_d1,
        set(&["(move d 1 b 2)", "(move d 1 f 2)", "(move d 1 e 3)"])
    );
    assert!(g.rejects("(move d 1 c 3)"));
    assert!(g.rejects("(move c 3 c 5)"), "not a knight's move");
}

#[test]
fn jeson_mor_capture_removes_the_enemy_knight() {
    let mut g = Game::new("jesonMor");
    g.play_all(&["(move c 1 d 3)", "(move e 9 d 7)", "(move d 3 c 5)"]);
    assert!(g.legal(1).contains("(move d 7 c 5)"));
    g.play("(move d 7 c 5)");
    assert!(g.holds("(cell c 5 black)"));
    assert!(!g.holds("(cell c 5 white)"));
    assert!(!g.holds("(cell d 7 black)"));
    assert_eq!(knights(&g, "white"), 8);
    assert_eq!(knights(&g, "black"), 9);
    assert!(!g.terminal());
}

#[test]
fn jeson_mor_entering_then_leaving_the_centre_wins() {
    let mut g = Game::new("jesonMor");
    g.play_all(&["(move c 1 d 3)", "(move a 9 b 7)", "(move d 3 e 5)"]);
    assert!(g.holds("(cell e 5 white)"));
    assert!(!g.terminal(), "standing on the centre does not win");
    g.play("(move b 7 a 5)");
    assert!(!g.terminal());
    g.play("(move e 5 f 7)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn jeson_mor_capturing_on_the_centre_then_leaving_wins() {
    // White enters the centre; black captures the knight there, and it is black's knight that
    // then leaves the centre: black wins, white's visit counts for nothing.
    let mut g = Game::new("jesonMor");
    g.play_all(&[
        "(move c 1 d 3)",
        "(move e 9 d 7)",
        "(move d 3 e 5)",
        "(move d 7 e 5)",
    ]);
    assert!(g.holds("(cell e 5 black)"));
    assert_eq!(knights(&g, "white"), 8);
    assert!(!g.terminal());
    g.play("(move a 1 b 3)");
    g.play("(move e 5 f 7)");
    assert!(g.terminal());
    assert_eq!(g.goals(), [0, 100]);
}

#[test]
fn jeson_mor_capturing_every_knight_wins() {
    // The sheet's rules from another initial position: black has a single knight, on c3.
    let text = sheet_text("jesonMor");
    let black_init = "(<= (init (cell ?f 9 black)) (file ?f))";
    assert!(text.contains(black_init));
    let mut g = Game::from_text(&text.replace(black_init, "(init (cell c 3 black))"));
    assert_eq!(knights(&g, "black"), 1);
    assert!(!g.terminal());
    g.play("(move b 1 c 3)");
    assert_eq!(knights(&g, "black"), 0);
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn jeson_mor_step_limit_is_a_draw() {
    // Both sides shuffle a knight back and forth, never near the centre: 200 moves.
    let mut g = Game::new("jesonMor");
    let cycle = [
        "(move b 1 a 3)",
        "(move b 9 a 7)",
        "(move a 3 b 1)",
        "(move a 7 b 9)",
    ];
    for _ in 0..49 {
        g.play_all(&cycle);
    }
    g.play_all(&cycle[..3]);
    assert_eq!(g.steps, 199);
    assert!(g.holds("(step 199)"));
    assert!(!g.terminal());
    assert_eq!(g.goals(), [50, 50], "an undecided game scores 50 each");
    g.play(cycle[3]);
    assert!(g.holds("(step 200)"));
    assert!(g.terminal());
    assert_eq!(g.goals(), [50, 50]);
    assert_eq!(knights(&g, "white"), 9);
    assert_eq!(knights(&g, "black"), 9);
}

// ---------------------------------------------------------------------------------------------
// Dominup

/// The role number of `role` in Dominup.
fn dominup_role(role: &str) -> usize {
    match role {
        "one" => 0,
        "two" => 1,
        _ => panic!("no role {role}"),
    }
}

/// The board facts (level, face, link, bottom) of a state, printed.
fn board(g: &Game) -> BTreeSet<String> {
    g.facts()
        .into_iter()
        .filter(|f| {
            ["(level ", "(face ", "(link ", "(bottom "]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .collect()
}

/// The board facts of a top half: square, level, number, direction of its other half, and
/// the axis of the tile lying on the board there.
fn half(row: u8, col: u8, level: u8, number: u8, link: &str, bottom: &str) -> [String; 4] {
    [
        format!("(level {row} {col} {level})"),
        format!("(face {row} {col} {number})"),
        format!("(link {row} {col} {link})"),
        format!("(bottom {row} {col} {bottom})"),
    ]
}

/// The Dominup sheet with its `init` facts replaced by `facts` (a custom position).
fn dominup_from(facts: &[String]) -> Game {
    let text = sheet_text("dominupFixed");
    let rules: String = text
        .lines()
        .filter(|l| !l.starts_with("(init "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!rules.contains("(init "), "every init fact starts a line");
    Game::from_text(&format!("{rules}\n{}\n", facts.join("\n")))
}

#[test]
fn dominup_opening() {
    let mut g = Game::new("dominupFixed");
    assert_eq!(g.roles(), ["one", "two"]);
    assert!(!g.terminal());
    // 7|7 lies in the centre, row 9, columns 9 and 10.
    let mut expected = BTreeSet::new();
    expected.extend(half(9, 9, 1, 7, "e", "h"));
    expected.extend(half(9, 10, 1, 7, "w", "h"));
    assert_eq!(board(&g), expected);
    assert!(g.holds("(control two)"));
    assert!(g.holds("(tiles one 17)"));
    assert!(g.holds("(tiles two 18)"));
    assert_eq!(g.facts_starting("(hand one ").len(), 17);
    assert_eq!(g.facts_starting("(hand two ").len(), 18);
    assert!(!g.holds("(hand one 7 7)"), "7|7 has been played");
    assert_eq!(g.goals(), [100, 0], "fewer tiles in hand leads");

    // No climb (7|7 is the only tile); a tile fits upright against 7|7 in 8 places: above or
    // below either half, or against either end reaching north or south. Two holds 14 tiles
    // that are not doubles (each fits two ways round in each place) and 4 doubles:
    // 14 * 16 + 4 * 8 = 256.
    assert_eq!(g.legal(dominup_role("one")), set(&["noop"]));
    let legal = g.legal(dominup_role("two"));
    assert_eq!(legal.len(), 256);
    for mv in [
        "(place 2 4 11 10 n)",
        "(place 2 4 10 10 s)",
        "(place 2 4 7 9 s)",
        "(place 2 4 9 8 n)",
        "(place 2 4 10 8 n)",
        "(place 0 0 9 11 s)",
        "(place 0 0 8 11 s)",
    ] {
        assert!(legal.contains(mv), "{mv}");
    }
    for mv in [
        "(place 0 0 10 11 n)", // a double is named from its west or north half
        "(place 8 8 10 10 s)", // not a tile
        "(place 1 1 10 10 s)", // one's tile
        "(place 2 4 8 9 e)",   // parallel, side by side
        "(place 2 4 9 11 e)",  // parallel, end to end
        "(place 2 4 8 8 n)",   // only corners touch
        "(place 2 4 9 9 e)",   // on top of 7|7, numbers do not match
        "(place 2 4 17 18 s)", // off the board
    ] {
        assert!(!legal.contains(mv), "{mv}");
        assert!(g.rejects(mv), "{mv}");
    }
}

/// The seed's test game (SEED-GAMES.md, Dominup), after the 7|7 opening: each move as
/// (low, high, player, row, column, direction), the sheet's move, and the mover's legal
/// moves when the move is a compulsory climb.
const SEED_GAME: &[(&str, &str, Option<&[&str]>)] = &[
    ("two", "(place 2 4 11 10 n)", None),
    ("one", "(place 3 3 12 10 e)", None),
    ("two", "(place 4 7 10 10 n)", Some(&["(place 4 7 10 10 n)"])),
    ("two", "(place 0 5 11 12 w)", None),
    ("one", "(place 2 3 11 10 s)", Some(&["(place 2 3 11 10 s)"])),
    ("one", "(place 1 1 9 8 s)", None),
    ("two", "(place 3 5 12 11 n)", Some(&["(place 3 5 12 11 n)"])),
    ("two", "(place 2 5 11 10 e)", Some(&["(place 2 5 11 10 e)"])),
    ("two", "(place 6 6 11 13 s)", None),
];

#[test]
fn dominup_seed_game_replays() {
    let mut g = Game::new("dominupFixed");
    for (i, &(player, mv, climbs)) in SEED_GAME.iter().enumerate() {
        let role = dominup_role(player);
        assert!(g.holds(&format!("(control {player})")), "move {}", i + 1);
        let legal = g.legal(role);
        match climbs {
            // Climbing is compulsory: the climbs are the only legal moves.
            Some(climbs) => assert_eq!(legal, set(climbs), "move {}", i + 1),
            // An expansion: legal only because no climb is possible.
            None => assert!(legal.len() > 20 && legal.contains(mv), "move {}", i + 1),
        }
        g.play(mv);
        assert!(!g.terminal(), "move {}", i + 1);
    }

    let mut expected = BTreeSet::new();
    expected.extend(half(9, 8, 1, 1, "s", "v"));
    expected.extend(half(10, 8, 1, 1, "n", "v"));
    expected.extend(half(9, 9, 1, 7, "e", "h"));
    expected.extend(half(9, 10, 2, 7, "s", "h")); // 4|7 climbed onto 7|7 and 2|4
    expected.extend(half(10, 10, 2, 4, "n", "v"));
    expected.extend(half(11, 10, 3, 2, "e", "v")); // 2|5 on 2|3 and 3|5, on 2|4 and 0|5
    expected.extend(half(11, 11, 3, 5, "w", "h"));
    expected.extend(half(11, 12, 1, 0, "w", "h"));
    expected.extend(half(12, 10, 2, 3, "n", "h")); // 2|3 on 2|4 and 3|3
    expected.extend(half(12, 11, 2, 3, "n", "h")); // 3|5 on 3|3 and 0|5
    expected.extend(half(11, 13, 1, 6, "s", "v"));
    expected.extend(half(12, 13, 1, 6, "n", "v"));
    assert_eq!(board(&g), expected);

    assert!(g.holds("(control one)"));
    assert!(g.holds("(tiles one 14)"));
    assert!(g.holds("(tiles two 12)"));
    for tile in ["3 3", "2 3", "1 1"] {
        assert!(!g.holds(&format!("(hand one {tile})")));
    }
    for tile in ["2 4", "4 7", "0 5", "3 5", "2 5", "6 6"] {
        assert!(!g.holds(&format!("(hand two {tile})")));
    }
    assert_eq!(g.facts_starting("(hand ").len(), 26);
    assert_eq!(g.goals(), [0, 100]);

    // One has two climbs, both on level 1: 1|7 onto the 1 of 1|1 and the 7 of 7|7, and 0|6
    // onto the 0 of 0|5 and the 6 of 6|6.
    assert_eq!(
        g.legal(dominup_role("one")),
        set(&["(place 1 7 9 8 e)", "(place 0 6 11 12 e)"])
    );
}

#[test]
fn dominup_expansion_only_when_no_climb() {
    let mut g = Game::new("dominupFixed");
    g.play_all(&["(place 2 4 11 10 n)", "(place 3 3 12 10 e)"]);
    // Two must climb 4|7; an expansion that would otherwise fit is refused.
    assert!(g.rejects("(place 0 5 11 12 w)"));
    assert!(g.rejects("pass"));
    g.play("(place 4 7 10 10 n)");
    assert!(g.holds("(control two)"), "a climb keeps control");
    assert!(g.legal(dominup_role("two")).contains("(place 0 5 11 12 w)"));
    g.play("(place 0 5 11 12 w)");
    assert!(g.holds("(control one)"), "an expansion ends the turn");
}

/// The board of a custom position: every square covered by a horizontal tile on level 1
/// showing 7, except the squares (1, 1) and (1, 2), which are empty, and the squares given.
fn full_board(numbers: &[(u8, u8, u8)]) -> Vec<String> {
    let mut facts = Vec::new();
    for row in 1..=18u8 {
        for col in 1..=18u8 {
            if row == 1 && col <= 2 {
                continue;
            }
            let number = numbers
                .iter()
                .find(|&&(r, c, _)| (r, c) == (row, col))
                .map_or(7, |&(_, _, n)| n);
            let link = if col % 2 == 1 { "e" } else { "w" };
            for f in half(row, col, 1, number, link, "h") {
                facts.push(format!("(init {f})"));
            }
        }
    }
    facts
}

fn init_facts(facts: &[&str]) -> Vec<String> {
    facts.iter().map(|f| format!("(init {f})")).collect()
}

#[test]
fn dominup_blocked_board_pass_and_fewer_tiles_win() {
    // No expansion fits anywhere: the only empty squares, (1, 1) and (1, 2), touch only
    // parallel tiles. One can climb 0|1 on (10, 2)-(10, 3), two can climb 2|3 on
    // (12, 2)-(12, 3).
    let mut facts = full_board(&[(10, 2, 0), (10, 3, 1), (12, 2, 2), (12, 3, 3)]);
    facts.extend(init_facts(&[
        "(hand one 0 1)",
        "(hand one 4 5)",
        "(hand two 2 3)",
        "(hand two 5 6)",
        "(hand two 6 6)",
        "(tiles one 2)",
        "(tiles two 3)",
        "(control one)",
    ]));
    let mut g = dominup_from(&facts);
    assert!(!g.terminal());
    assert_eq!(g.legal(0), set(&["(place 0 1 10 2 e)"]));
    assert_eq!(g.legal(1), set(&["noop"]));
    g.play("(place 0 1 10 2 e)");
    assert!(g.holds("(level 10 2 2)"));
    assert!(g.holds("(tiles one 1)"));
    // One can place nothing more, but two can still climb: one passes.
    assert!(!g.terminal());
    assert_eq!(g.legal(0), set(&["pass"]));
    g.play("pass");
    assert!(g.holds("(control two)"));
    assert!(g.holds("(tiles one 1)"), "a pass places nothing");
    assert_eq!(g.legal(1), set(&["(place 2 3 12 2 e)"]));
    g.play("(place 2 3 12 2 e)");
    // Nobody can place a tile: blocked. One has fewer tiles left.
    assert!(g.terminal());
    assert!(g.holds("(tiles two 2)"));
    assert_eq!(g.goals(), [100, 0]);
}

#[test]
fn dominup_blocked_with_equal_hands_is_a_draw() {
    let mut facts = full_board(&[]);
    facts.extend(init_facts(&[
        "(hand one 0 1)",
        "(hand two 2 3)",
        "(tiles one 1)",
        "(tiles two 1)",
        "(control two)",
    ]));
    let mut g = dominup_from(&facts);
    assert!(g.terminal());
    assert_eq!(g.goals(), [50, 50]);
}

#[test]
fn dominup_empty_hand_wins() {
    // Two holds 2|4 and 4|7, one holds 3|3 and 1|2.
    let mut facts = init_facts(&[
        "(level 9 9 1)",
        "(level 9 10 1)",
        "(face 9 9 7)",
        "(face 9 10 7)",
        "(link 9 9 e)",
        "(link 9 10 w)",
        "(bottom 9 9 h)",
        "(bottom 9 10 h)",
        "(hand one 3 3)",
        "(hand one 1 2)",
        "(hand two 2 4)",
        "(hand two 4 7)",
        "(tiles one 2)",
        "(tiles two 2)",
        "(control two)",
    ]);
    let mut g = dominup_from(&facts);
    g.play_all(&["(place 2 4 11 10 n)", "(place 3 3 12 10 e)"]);
    assert!(!g.terminal());
    assert_eq!(g.goals(), [50, 50]);
    // Two's last tile climbs: the hand is empty and the game ends at once.
    g.play("(place 4 7 10 10 n)");
    assert!(g.holds("(tiles two 0)"));
    assert!(g.terminal());
    assert_eq!(g.goals(), [0, 100]);

    // The same after an expansion: one's last tile.
    facts.retain(|f| f != "(init (hand one 1 2))" && f != "(init (tiles one 2))");
    facts.push("(init (tiles one 1))".into());
    let mut g = dominup_from(&facts);
    g.play("(place 2 4 11 10 n)");
    assert!(!g.terminal());
    g.play("(place 3 3 12 10 e)");
    assert!(g.holds("(tiles one 0)"));
    assert!(g.terminal());
    assert_eq!(g.goals(), [100, 0]);
}

// ---------------------------------------------------------------------------------------------
// Both engines

/// Each role's legal moves in `state`, printed and sorted, with the engine's moves.
fn sorted_legal<M: StateMachine>(m: &mut M, state: &M::State) -> Vec<Vec<(String, M::Move)>> {
    (0..m.roles().len())
        .map(|r| {
            let mut moves: Vec<(String, M::Move)> = m
                .legal_moves(state, r)
                .unwrap()
                .into_iter()
                .map(|mv| (m.move_term(mv).to_string(), mv))
                .collect();
            moves.sort_by(|a, b| a.0.cmp(&b.0));
            moves
        })
        .collect()
}

fn printed_state<M: StateMachine>(m: &M, state: &M::State) -> BTreeSet<String> {
    m.state_terms(state).iter().map(Term::to_string).collect()
}

/// Plays sheet `name` on the Datalog engine and the propnet in lockstep: first the moves of
/// `script` (each played by the one role for which it is legal, the others playing their only
/// legal move), then `playouts` random playouts making the same choices on both. Checks at
/// every step that the state, each role's legal moves, terminal and the goals agree. Returns
/// the number of states compared.
fn engines_agree(name: &str, script: &[&str], playouts: usize) -> usize {
    let description = Description::from_text(&sheet_text(name)).unwrap();
    let mut d = DatalogMachine::new(&description).unwrap();
    let mut p = PropnetMachine::new(&description, &Budget::default())
        .unwrap_or_else(|e| panic!("{name}: the propnet does not build: {e}"));
    assert_eq!(d.roles(), p.roles());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed);
    let mut steps = 0;
    // Playout 0 is the script, then random; the others are random.
    for playout in 0..playouts.max(1) {
        let mut ds = d.initial_state();
        let mut ps = p.initial_state();
        for step in 0.. {
            let at = format!("{name}: playout {playout}, step {step}");
            assert_eq!(
                printed_state(&d, &ds),
                printed_state(&p, &ps),
                "{at}: state"
            );
            let terminal = d.is_terminal(&ds).unwrap();
            assert_eq!(terminal, p.is_terminal(&ps).unwrap(), "{at}: terminal");
            for r in 0..d.roles().len() {
                let goals = d.goal_values(&ds, r).unwrap();
                assert_eq!(goals, p.goal_values(&ps, r).unwrap(), "{at}: goals");
                assert_eq!(
                    goals.len(),
                    1,
                    "{at}: one goal value per role, in every state"
                );
            }
            steps += 1;
            if terminal {
                break;
            }
            let dl = sorted_legal(&mut d, &ds);
            let pl = sorted_legal(&mut p, &ps);
            let scripted = script.get(step).filter(|_| playout == 0);
            let mut found = false;
            let mut djoint = Vec::new();
            let mut pjoint = Vec::new();
            for (dm, pm) in dl.iter().zip(&pl) {
                let dn: Vec<&String> = dm.iter().map(|x| &x.0).collect();
                let pn: Vec<&String> = pm.iter().map(|x| &x.0).collect();
                assert_eq!(dn, pn, "{at}: legal moves");
                assert!(!dm.is_empty(), "{at}: a role has no legal move");
                let i = match scripted.and_then(|mv| dm.iter().position(|x| x.0 == *mv)) {
                    Some(i) => {
                        found = true;
                        i
                    }
                    None if scripted.is_some() => {
                        assert_eq!(dm.len(), 1, "{at}: a role other than the script's mover");
                        0
                    }
                    None => rng.random_range(0..dm.len()),
                };
                djoint.push(dm[i].1);
                pjoint.push(pm[i].1);
            }
            if let Some(mv) = scripted {
                assert!(found, "{at}: the script's {mv} is not legal");
            }
            ds = d.next_state(&ds, &djoint).unwrap();
            ps = p.next_state(&ps, &pjoint).unwrap();
        }
    }
    eprintln!("{name}: {steps} states agree");
    steps
}

#[test]
fn engines_agree_on_tic_tac_toe() {
    assert!(engines_agree("ticTacToe", &[], 30) >= 30 * 6);
}

#[test]
fn engines_agree_on_connect_four() {
    assert!(engines_agree("connectFour", &[], 10) >= 10 * 8);
}

#[test]
fn engines_agree_on_jeson_mor() {
    assert!(engines_agree("jesonMor", &[], 3) >= 3 * 3);
}

#[test]
fn engines_agree_on_dominup() {
    // The seed's game first. Unless the board is blocked, a game ends only when a hand of 17
    // or 18 tiles is empty: at least 18 states.
    let script: Vec<&str> = SEED_GAME.iter().map(|&(_, mv, _)| mv).collect();
    assert!(engines_agree("dominupFixed", &script, 3) >= 3 * 18);
}
