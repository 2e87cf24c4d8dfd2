//! The rule sheets we ship in `rules/`: each is valid with no diagnostic at all, and concrete
//! facts of each game's rules hold when scripted move sequences are played on the Datalog
//! engine.

use std::collections::BTreeSet;

use ggp::datalog::DatalogMachine;
use ggp::gdl::validate::{Verdict, check_text};
use ggp::gdl::{Description, Term, parse_term};
use ggp::machine::{MachineError, StateMachine};

type State = <DatalogMachine as StateMachine>::State;

/// The sheets in `rules/`.
const SHEETS: &[&str] = &["ticTacToe", "connectFour", "jesonMor"];

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
