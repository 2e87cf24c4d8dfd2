//! `ggp play` through standard input, saving and resuming, and board detection on real sheets
//! (and on a scrambled copy, every symbol renamed).

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};

use ggp::board::{Layout, Square, sample_states};
use ggp::datalog::DatalogMachine;
use ggp::gdl::{Description, Sym, Term};
use ggp::kif::{self, Sexp};
use ggp::machine::StateMachine;
use ggp::record::MatchRecord;

const BASE: &str = "../shared/games/base";

/// Runs `ggp play ARGS` with `input` on standard input, in the C locale; returns the exit
/// code and output.
fn play(args: &[&str], input: &str) -> (i32, String) {
    play_bytes(args, input.as_bytes(), "C")
}

/// Runs `ggp play ARGS` with `input` on standard input and `LANG=lang`.
fn play_bytes(args: &[&str], input: &[u8], lang: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ggp"))
        .arg("play")
        .args(args)
        .args(["--pause", "0"])
        .env("LANG", lang)
        .env_remove("LC_ALL")
        .env_remove("LC_CTYPE")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ggp-play-{}-{name}", std::process::id()))
}

#[test]
fn connect_four_to_the_end_against_random() {
    // Every way of naming a move, in turn; a full column makes one illegal, which only costs
    // the line.
    let inputs = ["1", "(drop 2)", "c", "drop 4", "e", "6", "(drop 7)"];
    let text: String = inputs
        .iter()
        .cycle()
        .take(150)
        .map(|s| format!("{s}\n"))
        .collect();
    let (code, out) = play(
        &["rules/connectFour.kif", "--vs", "random", "--seed", "3"],
        &text,
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Players: red: human, yellow: computer (random)"),
        "{out}"
    );
    let over = out.find("Game over after").expect("the game ends");
    let tail = &out[over..];
    let goals: Vec<u32> = tail
        .lines()
        .skip(1)
        .take(2)
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        tail.lines().nth(1).unwrap().trim().starts_with("red: "),
        "{tail}"
    );
    assert_eq!(goals.iter().sum::<u32>(), 100, "{tail}");
    let verdict = match (goals[0], goals[1]) {
        (100, 0) => "Result: red wins (red 100, yellow 0).",
        (0, 100) => "Result: yellow wins (red 0, yellow 100).",
        _ => "Result: draw (red 50, yellow 50).",
    };
    assert!(tail.contains(verdict), "{tail}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn grid_text_of_a_known_position() {
    // Both roles human: red d1, yellow d2, red e1, yellow c1.
    let (code, out) = play(
        &["rules/connectFour.kif", "--as", "red", "--as", "yellow"],
        "d\n4\n(drop 5)\nc\nquit\n",
    );
    assert_eq!(code, 0, "{out}");
    let position = out
        .split("Step 4 · to move: red\n")
        .nth(1)
        .expect("step 4 shown");
    // The first line break only starts the text.
    let expected = &"
  a b c d e f g   r = red, y = yellow
6 . . . . . . .   control: red
5 . . . . . . .   1. d1 d2 2. e1 c1
4 . . . . . . .
3 . . . . . . .
2 . . . y . . .
1 . . y r r . .
  a b c d e f g
Last move: yellow c1 (drop 3)
Moves for red:
  a1 b1 c2 d3 e2 f1 g1
"[1..];
    assert_eq!(&position[..expected.len()], expected, "{position}");
}

#[test]
fn illegal_input_gets_a_message_and_a_new_prompt() {
    let (code, out) = play(
        &["rules/ticTacToe.kif", "--as", "x", "--as", "o"],
        "foo\n0\n10\n(mark 9 9)\nz9\n(mark 1\n\nsave\nhelp\n(mark 2 2)\nb2\nquit\n",
    );
    assert_eq!(code, 0, "{out}");
    for message in [
        "foo is not a legal move here",
        "there is no move number 0: choose 1 to 9",
        "there is no move number 10: choose 1 to 9",
        "(mark 9 9) is not a legal move here",
        "z9 is not a legal move here",
        "(mark 1 is not a legal move here",
        "usage: save FILE",
        "Commands: hint",
        // b2 was taken by x's (mark 2 2): o cannot play it.
        "b2 is not a legal move here",
    ] {
        assert!(out.contains(message), "missing {message:?} in\n{out}");
    }
    assert!(out.contains("Last move: x b2 (mark 2 2)"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn input_ending_early_is_not_an_error() {
    let (code, out) = play(&["rules/jesonMor.kif", "--vs", "random"], "a1-b3\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1. a1b3 "), "{out}");
    assert!(
        out.contains("input ended; the game is not finished"),
        "{out}"
    );
}

#[test]
fn save_then_resume_reaches_the_same_state() {
    let first = temp("first.json");
    let second = temp("second.json");
    let (code, out) = play(
        &["rules/connectFour.kif", "--vs", "random", "--seed", "7"],
        &format!("d\nc\nundo\ne\nsave {}\nquit\n", first.display()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("taken back"), "{out}");
    let before = out.rsplit("\nStep ").next().unwrap().to_string();
    let (code, resumed) = play(
        &[
            "rules/connectFour.kif",
            "--vs",
            "random",
            "--resume",
            first.to_str().unwrap(),
        ],
        &format!("save {}\nquit\n", second.display()),
    );
    assert_eq!(code, 0, "{resumed}");
    let after = resumed.rsplit("\nStep ").next().unwrap();
    // The same position, board and legal moves, shown after resuming.
    let cut = |s: &str| s[..s.find("red> ").unwrap()].to_string();
    assert_eq!(cut(after), cut(&before));
    let a = MatchRecord::from_json(&std::fs::read_to_string(&first).unwrap()).unwrap();
    let b = MatchRecord::from_json(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(a.moves.len(), 4, "d, a reply, e, a reply");
    assert_eq!(a.moves, b.moves);
    assert_eq!(a.states, b.states);
    assert_eq!(a.match_id, b.match_id);
    assert_eq!(a.random_token, b.random_token);
    assert_eq!(a.random_token.len(), 32);
    assert_eq!(a.state_times[..5], b.state_times[..5]);
    assert!(!a.is_completed);

    // A record whose moves do not fit the game is refused with a reason.
    let mut bad = a.clone();
    bad.moves[1][1] = "( drop 99 )".into();
    std::fs::write(&second, bad.to_json()).unwrap();
    let (code, out) = play(
        &[
            "rules/connectFour.kif",
            "--resume",
            second.to_str().unwrap(),
        ],
        "quit\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("move 2"), "{out}");
    std::fs::remove_file(&first).ok();
    std::fs::remove_file(&second).ok();
}

/// The board of a sheet, detected from its sampled states.
fn detect(text: &str) -> (DatalogMachine, Layout, Vec<Term>) {
    let description = Description::from_text(text).expect("a valid sheet");
    let mut machine = DatalogMachine::new(&description).unwrap();
    let samples = sample_states(&mut machine, 1).unwrap();
    let layout = Layout::detect(&samples, description.rules()).expect("a board");
    let initial = machine.state_terms(&machine.initial_state());
    (machine, layout, initial)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn boards_of_chess_connect_four_jeson_mor_and_breakthrough() {
    let (_, chess, initial) = detect(&read(&format!("{BASE}/chess.kif")));
    assert_eq!(
        chess.files().labels,
        ["a", "b", "c", "d", "e", "f", "g", "h"]
    );
    assert_eq!(
        chess.ranks().labels,
        ["1", "2", "3", "4", "5", "6", "7", "8"]
    );
    assert_eq!(
        chess.render_text(&initial),
        "   a  b  c  d  e  f  g  h
8 br bn bb bq bk bb bn br
7 bp bp bp bp bp bp bp bp
6  .  .  .  .  .  .  .  .
5  .  .  .  .  .  .  .  .
4  .  .  .  .  .  .  .  .
3  .  .  .  .  .  .  .  .
2 wp wp wp wp wp wp wp wp
1 wr wn wb wq wk wb wn wr
   a  b  c  d  e  f  g  h
"
    );
    assert_eq!(chess.blank().map(|b| b[0].to_string()), Some("b".into()));

    // Connect Four starts with no disc at all: the size comes from the sample and the sheet.
    let (_, four, initial) = detect(&read("rules/connectFour.kif"));
    assert_eq!(four.files().values.len(), 7);
    assert_eq!(four.ranks().values.len(), 6);
    assert!(four.cells(&initial).iter().all(Option::is_none));

    let (_, jeson, _) = detect(&read("rules/jesonMor.kif"));
    assert_eq!(
        jeson.files().labels,
        ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    );
    assert_eq!(jeson.ranks().values.len(), 9);

    let (_, breakthrough, initial) = detect(&read(&format!("{BASE}/breakthrough.kif")));
    let text = breakthrough.render_text(&initial);
    assert!(
        text.starts_with("  a b c d e f g h\n8 b b b b b b b b\n7 b b b b b b b b\n6 . ."),
        "{text}"
    );
    assert!(text.contains("\n1 w w w w w w w w\n"), "{text}");
    assert_eq!(
        breakthrough.legend(),
        [("w".into(), "white".into()), ("b".into(), "black".into())]
    );
}

/// Renames every symbol of a sheet except the GDL keywords and integers, in a scrambled
/// order; returns the new text and the renaming.
fn scramble(text: &str) -> (String, HashMap<String, String>) {
    fn walk(sexp: &Sexp, names: &mut HashMap<String, String>, out: &mut String) {
        match sexp {
            Sexp::Atom { text, .. } => {
                let keep =
                    text.parse::<i64>().is_ok() || Sym::new(text).is_keyword() || text == "<=";
                if keep {
                    out.push_str(text);
                } else {
                    let n = names.len();
                    // A multiplicative shuffle, so that the new names sort in another order.
                    let fresh = format!(
                        "{}w{}",
                        if text.starts_with('?') { "?" } else { "" },
                        (n * 7919 + 13) % 10007
                    );
                    out.push_str(names.entry(text.clone()).or_insert(fresh));
                }
            }
            Sexp::List { items, .. } => {
                out.push('(');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    walk(item, names, out);
                }
                out.push(')');
            }
        }
    }
    let mut names = HashMap::new();
    let mut out = String::new();
    for sexp in kif::parse(text).unwrap() {
        walk(&sexp, &mut names, &mut out);
        out.push('\n');
    }
    (out, names)
}

#[test]
fn boards_of_scrambled_sheets_match_the_originals() {
    for path in [
        format!("{BASE}/chess.kif"),
        "rules/jesonMor.kif".to_string(),
    ] {
        let text = read(&path);
        let (scrambled, names) = scramble(&text);
        assert!(!scrambled.contains("cell"), "{path} is renamed");
        let (_, plain, initial) = detect(&text);
        let (_, other, scrambled_initial) = detect(&scrambled);
        assert_eq!(other.relation().name(), names[plain.relation().name()]);
        assert_eq!(
            other.files().values.len(),
            plain.files().values.len(),
            "{path}"
        );
        assert_eq!(
            other.ranks().values.len(),
            plain.ranks().values.len(),
            "{path}"
        );
        // Same square, same (renamed) content, everywhere.
        let rename = |t: &Term| names.get(&t.to_string()).cloned().unwrap_or(t.to_string());
        let before = plain.cells(&initial);
        let after = other.cells(&scrambled_initial);
        for rank in 0..plain.ranks().values.len() {
            for file in 0..plain.files().values.len() {
                let square = Square { file, rank };
                let want = before[plain.index(square)]
                    .as_ref()
                    .map(|c| c.iter().map(rename).collect::<Vec<_>>());
                let got = after[other.index(square)]
                    .as_ref()
                    .map(|c| c.iter().map(|t| t.to_string()).collect::<Vec<_>>());
                assert_eq!(got, want, "{path}: {}", plain.square_name(square));
            }
        }
        // The same file and rank labels, so the same notation (`e2e4`) works on both.
        assert_eq!(
            other.files().labels,
            ["a", "b", "c", "d", "e", "f", "g", "h", "i"][..plain.files().values.len()]
        );
        assert_eq!(other.ranks().labels, plain.ranks().labels);
    }
}

/// The screens of a piped session (the output between two prompts of `prompt`), each with
/// its prompt line counted.
fn screens<'a>(out: &'a str, prompt: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = out.split(prompt).collect();
    v.remove(0);
    v.pop();
    v
}

/// Checks that every screen fits 80x24 and shows the whole board (`top` is its top rank).
fn assert_fits(out: &str, prompt: &str, top: &str) {
    let screens = screens(out, prompt);
    assert!(screens.len() >= 3, "{out}");
    for screen in screens {
        // The screen's lines, and the prompt after them.
        let lines = screen.lines().count() + 1;
        assert!(lines <= 24, "{lines} lines:\n{screen}");
        for line in screen.lines() {
            assert!(line.chars().count() <= 80, "too wide: {line:?}\n{screen}");
        }
        assert!(
            screen.lines().any(|l| l.starts_with(top)),
            "no top rank {top:?}:\n{screen}"
        );
    }
}

/// The moves of the `Last move:` lines, as the screens wrote them.
fn played(out: &str) -> String {
    out.lines()
        .filter_map(|l| l.strip_prefix("Last move: "))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_chess_game_typed_in_san_ends_in_checkmate() {
    let (code, out) = play(
        &["rules/chess.kif", "--as", "white", "--as", "black"],
        "e4\ne5\nBc4\nNc6\nQh5\nNf6\nQxf7#\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("not a legal move"), "{out}");
    assert!(
        out.contains("1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7#"),
        "{out}"
    );
    assert!(
        out.contains("Last move: white Qxf7# (move h 5 f 7)"),
        "{out}"
    );
    assert!(out.contains("Game over after 7 moves: checkmate."), "{out}");
    assert!(
        out.contains("Result: white wins (white 100, black 0)."),
        "{out}"
    );
    assert_fits(&out, "> ", "8 ");
}

#[test]
fn chess_in_san_with_en_passant_promotion_and_castling() {
    // e1f1 is a king's step (no longer "ambiguous with castling"), typed where only the
    // step is legal; then the moves of every kind, and coordinates.
    let moves = "e4 Nf6 e5 d5 exd6 e6 dxc7 Be7 cxb8=Q 0-0 Nf3 Rxb8 Bc4 b5 O-O bxc4 \
                 d3 Qb6 Kh1 Qxf2 g1f3 e1f1 Rxf2 Bb7";
    let input: String = moves.split(' ').map(|m| format!("{m}\n")).collect();
    let (code, out) = play(
        &["rules/chess.kif", "--as", "white", "--as", "black"],
        &format!("{input}quit\n"),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        played(&out),
        "e4 Nf6 e5 d5 exd6 e6 dxc7 Be7 cxb8=Q O-O Nf3 Rxb8 Bc4 b5 O-O bxc4 d3 Qb6 Kh1 Qxf2 \
         Rxf2 Bb7"
    );
    // g1f3 names no move (the knight left g1); e1f1 names none either (the king is on h1).
    assert!(out.contains("g1f3 is not a legal move here"), "{out}");
    assert!(out.contains("e1f1 is not a legal move here"), "{out}");
    assert!(!out.contains("could be any of"), "{out}");
    // Pieces are letters in the C locale.
    assert!(out.contains("1 R N B Q K B N R 1"), "{out}");

    // The king's step e1f1 where castling is also legal.
    let (code, out) = play(
        &["rules/chess.kif", "--as", "white", "--as", "black"],
        "e4\ne5\nNf3\nNc6\nBc4\nNf6\ne1f1\nquit\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Last move: white Kf1 (move e 1 f 1)"), "{out}");
}

#[test]
fn figurines_in_a_utf8_locale_and_letters_with_ascii() {
    let (code, out) = play_bytes(&["rules/chess.kif"], b"quit\n", "en_US.UTF-8");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8 ♜ ♞ ♝ ♛ ♚ ♝ ♞ ♜ 8"), "{out}");
    assert!(out.contains("1 ♖ ♘ ♗ ♕ ♔ ♗ ♘ ♖ 1"), "{out}");
    let (code, out) = play_bytes(&["rules/chess.kif", "--ascii"], b"quit\n", "en_US.UTF-8");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8 r n b q k b n r 8"), "{out}");
    // Jeson Mor's knights are white and black stones, named by their role.
    let (code, out) = play_bytes(&["rules/jesonMor.kif"], b"quit\n", "C.UTF-8");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 ○ ○ ○ ○ ○ ○ ○ ○ ○"), "{out}");
    assert!(out.contains("○ white, ● black"), "{out}");
}

#[test]
fn every_screen_fits_80_by_24() {
    let ones: String = "1\n".repeat(70);
    let columns: String = "d\nc\ne\nb\nf\na\ng\n".repeat(10);
    for (game, top, input) in [
        ("rules/chess.kif", "8 ", &ones),
        ("rules/connectFour.kif", "6 ", &columns),
        ("rules/jesonMor.kif", "9 ", &ones),
    ] {
        for lang in ["C", "C.UTF-8"] {
            let (code, out) = play_bytes(
                &[game, "--vs", "random", "--seed", "5"],
                input.as_bytes(),
                lang,
            );
            assert_eq!(code, 0, "{out}");
            assert_fits(&out, "> ", top);
        }
    }
}

#[test]
fn connect_four_names_its_winning_line() {
    // Red drops four in column a while yellow plays column b.
    let (code, out) = play(
        &["rules/connectFour.kif", "--as", "red", "--as", "yellow"],
        "a\nb\na\nb\na\nb\na\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Game over after 7 moves: four in a row."),
        "{out}"
    );
    assert!(out.contains("* the winning line"), "{out}");
    assert!(out.contains("\n4*r . ."), "{out}");
}

#[test]
fn a_line_that_is_not_utf8_is_refused_and_the_game_goes_on() {
    let (code, out) = play_bytes(
        &["rules/connectFour.kif", "--as", "red", "--as", "yellow"],
        b"d\n\xff\xfe\nc\nquit\n",
        "C",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("that line is not UTF-8 text (byte 0xff at column 1); type it again"),
        "{out}"
    );
    assert!(out.contains("Last move: yellow c1 (drop 3)"), "{out}");
}

#[test]
fn save_replaces_the_file_whole() {
    // A save writes a new file and renames it over the old one: a reader holding the old
    // file (here, a second hard link to it) keeps the whole old record, never a half-written
    // or mixed one.
    let path = temp("atomic.json");
    let link = temp("atomic-link.json");
    std::fs::write(&path, "old record").unwrap();
    std::fs::remove_file(&link).ok();
    std::fs::hard_link(&path, &link).unwrap();
    let (code, out) = play(
        &["rules/connectFour.kif", "--vs", "random"],
        &format!("d\nsave {}\nquit\n", path.display()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("saved to"), "{out}");
    let saved = MatchRecord::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved.moves.len(), 2);
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "old record");
    // No temporary file is left beside it.
    let dir = path.parent().unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.contains(&name) && n.ends_with(".tmp")
        })
        .collect();
    assert!(left.is_empty());
    std::fs::remove_file(&path).ok();
    std::fs::remove_file(&link).ok();
}

/// GDL-II: a person playing one role is shown only what that role knows. In Monty Hall the
/// car stays hidden until the end; in Dominup dealt at random the person sees its own tiles
/// and never the other player's hand; a game without a person shows everything.
#[test]
fn a_person_sees_only_what_its_role_knows() {
    use ggp::play::{Game, Level, Seat};
    use rand::SeedableRng;
    use rand::seq::IndexedRandom;
    fn game(path: &str, seats: Vec<Seat>) -> Game<DatalogMachine> {
        let text = read(path);
        let description = Description::from_text(&text).unwrap();
        let machine = DatalogMachine::new(&description).unwrap();
        Game::new(machine, description.rules(), &text, seats, 1).unwrap()
    }
    fn random_step(game: &mut Game<DatalogMachine>, rng: &mut rand::rngs::StdRng) {
        let joint = (0..game.roles().len())
            .map(|r| *game.legal(r).unwrap().choose(rng).unwrap())
            .collect();
        game.play(joint).unwrap();
    }
    let hidden =
        |facts: &[Term], prefix: &str| facts.iter().any(|f| f.to_string().starts_with(prefix));
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let computer = || Seat::Computer(Level::Random);

    let mut monty = game(
        "../shared/games/gdl2/montyhall.kif",
        vec![Seat::Human, computer()],
    );
    assert_eq!(monty.viewer(), Some(0));
    for _ in 0..2 {
        random_step(&mut monty, &mut rng);
        assert!(!monty.facts().is_empty());
        assert!(!hidden(&monty.facts(), "(car "), "{:?}", monty.facts());
        assert_eq!(
            monty.last_moves().unwrap().len(),
            1,
            "only the person's own move"
        );
    }

    let mut dominup = game(
        "rules/dominup.kif",
        vec![Seat::Human, computer(), computer()],
    );
    assert_eq!(dominup.viewer(), Some(0));
    for step in 1..=3 {
        random_step(&mut dominup, &mut rng);
        let facts = dominup.facts();
        assert!(!hidden(&facts, "(hand two"), "{facts:?}");
        let ours = facts
            .iter()
            .filter(|f| f.to_string().starts_with("(hand one"))
            .count();
        assert_eq!(ours, step, "{facts:?}");
        assert!(dominup.percepts()[0].to_string().starts_with("(tile "));
    }
    // The rest of the deal and a few placements: the person's whole hand is shown at every
    // step, never a tile it does not hold (a lost belief's guess once showed one), never the other
    // hand (which one could tell by elimination once the deal is over: it is not shown).
    for _ in 4..=24 {
        if dominup.is_terminal().unwrap() {
            break;
        }
        random_step(&mut dominup, &mut rng);
        let facts = dominup.facts();
        let step = dominup.step();
        assert!(!hidden(&facts, "(hand two"), "step {step}: {facts:?}");
        let state = dominup.state().clone();
        let truth = dominup.machine().state_terms(&state);
        // Exactly the tiles the person holds: the view follows the belief with bounded work,
        // not a clock, so a loaded machine shows the same.
        let shown: Vec<&Term> = facts
            .iter()
            .filter(|f| f.to_string().starts_with("(hand one"))
            .collect();
        let held: Vec<&Term> = truth
            .iter()
            .filter(|f| f.to_string().starts_with("(hand one"))
            .collect();
        assert_eq!(shown.len(), held.len(), "step {step}: {facts:?}");
        assert!(
            shown.iter().all(|f| held.contains(f)),
            "step {step}: {facts:?}"
        );
    }

    let mut watched = game(
        "rules/dominup.kif",
        vec![computer(), computer(), computer()],
    );
    assert_eq!(watched.viewer(), None);
    random_step(&mut watched, &mut rng);
    assert!(hidden(&watched.facts(), "(hand two"));
}

/// A history entry with the facts before and after it.
type Entry = (ggp::play::Ply, Vec<Term>, Vec<Term>);

/// Plays `steps` joint moves of `sheet` (each role's move picked by a fixed rule from its
/// legal list) and gives each history entry with the board before and after it.
fn history_of(sheet: &str, steps: usize) -> (Layout, Vec<Entry>) {
    use ggp::play::{Game, Seat};
    let text = read(sheet);
    let description = Description::from_text(&text).unwrap();
    let machine = DatalogMachine::new(&description).unwrap();
    let seats = vec![Seat::Human; machine.roles().len()];
    let mut game = Game::new(machine, description.rules(), &text, seats, 1).unwrap();
    for step in 0..steps {
        if game.is_terminal().unwrap() {
            break;
        }
        let joint = (0..game.roles().len())
            .map(|r| {
                let legal = game.legal(r).unwrap();
                legal[(step * 7 + 3) % legal.len()]
            })
            .collect();
        game.play(joint).unwrap();
    }
    let layout = game.layout().unwrap().clone();
    let plies = game.history().unwrap();
    let out = plies
        .into_iter()
        .map(|p| {
            let (before, after) = (game.facts_at(p.step), game.facts_at(p.step + 1));
            (p, before, after)
        })
        .collect();
    (layout, out)
}

#[test]
fn a_placement_is_written_as_the_square_it_filled_and_a_jump_from_the_piece_that_moved() {
    // Reversi: each move places a stone and turns others over; it is written as the square
    // that was empty (not a turned stone, which read `5. f4 f4`).
    let (layout, plies) = history_of("rules/reversi.kif", 30);
    let mut placements = 0;
    for (ply, before, after) in &plies {
        if ply.text == "noop" {
            continue;
        }
        let Some(ggp::board::Typed::Square(square)) = layout.parse_squares(&ply.text) else {
            panic!(
                "reversi move {} at step {} is not one square",
                ply.text, ply.step
            );
        };
        let (b, a) = (layout.cells(before), layout.cells(after));
        let i = layout.index(square);
        assert!(
            b[i].is_none() && a[i].is_some(),
            "{} at step {} names a square that was not empty",
            ply.text,
            ply.step
        );
        placements += 1;
    }
    assert!(placements >= 20, "{placements} placements");
    // Checkers: a move is written from the square of the piece that moved, to where it went
    // (a jump's taken piece is not its start).
    let (layout, plies) = history_of("rules/checkers.kif", 60);
    let mut moves = 0;
    for (ply, before, after) in &plies {
        let Some(ggp::board::Typed::FromTo(from, to)) = layout.parse_squares(&ply.text) else {
            continue;
        };
        let (b, a) = (layout.cells(before), layout.cells(after));
        let (piece, landed) = (&b[layout.index(from)], &a[layout.index(to)]);
        assert!(
            piece.is_some() && a[layout.index(from)].is_none() && landed.is_some(),
            "{} at step {}",
            ply.text,
            ply.step
        );
        // The same piece (or one promoted on arrival: same owner in the name).
        let owner = |c: &Option<Vec<Term>>| {
            c.as_ref().map(|c| {
                c.iter()
                    .map(|t| t.to_string())
                    .collect::<String>()
                    .chars()
                    .next()
            })
        };
        assert_eq!(
            owner(piece),
            owner(landed),
            "{} at step {}",
            ply.text,
            ply.step
        );
        moves += 1;
    }
    assert!(moves >= 20, "{moves} moves");
}

#[test]
fn hex_boards_are_found_by_their_neighbour_relation() {
    use ggp::board::Grid;
    // Three Hex sheets with different names, coordinates and neighbour relations
    // (`adjacent` over letters and numbers, `neighbour` over numbers on both axes).
    for (sheet, lean) in [("rules/hex.kif", -1), ("hexPie.kif", -1)] {
        let path = if sheet.starts_with("rules/") {
            sheet.to_string()
        } else {
            format!("{BASE}/{sheet}")
        };
        let (_, layout, _) = detect(&read(&path));
        assert_eq!(layout.grid(), Grid::Hex { lean }, "{sheet}");
    }
    // laikLee_hex's engine takes a minute to build (its `isList` rules), so its board is
    // detected from its initial state alone, which holds every square.
    let description = Description::from_text(&read(&format!("{BASE}/laikLee_hex.kif"))).unwrap();
    let initial: Vec<Term> = description
        .rules()
        .iter()
        .filter(|r| r.head.rel == Sym::INIT && r.body.is_empty())
        .map(|r| r.head.args[0].clone())
        .collect();
    let layout = Layout::detect(&[initial], description.rules()).unwrap();
    assert_eq!(layout.grid(), Grid::Hex { lean: 1 }, "laikLee_hex");
    // A scrambled copy (every symbol renamed) is found too: the shape decides, not names.
    let (text, _) = scramble(&read(&format!("{BASE}/hexPie.kif")));
    assert_eq!(detect(&text).1.grid(), Grid::Hex { lean: -1 });
    // Square boards, with neighbour and move relations of four and eight directions.
    for sheet in [
        "rules/chess.kif",
        "rules/connectFour.kif",
        "rules/jesonMor.kif",
        "rules/checkers.kif",
        "rules/reversi.kif",
    ] {
        let (_, layout, _) = detect(&read(sheet));
        assert_eq!(layout.grid(), Grid::Squares, "{sheet}");
    }
}

/// Issue 15: what each side of a Hex game connects is found from random games played to
/// their end, by the shape of the stones' chains, whatever the names: Hex's red joins the
/// first and last file (drawn as the top and bottom rows), blue the ranks; hexPie the same
/// with its `red` and `blue` markers (its roles are `player1` and `player2`), and a scrambled
/// copy gives the renamed contents. Square boards get none.
#[test]
fn hex_sides_are_found_from_ended_games() {
    use ggp::board::{JOIN_GAMES, sample_ends};
    use ggp::propnet::{Budget, PropnetMachine};
    let joins = |text: &str| {
        let description = Description::from_text(text).unwrap();
        let mut machine = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let samples = sample_states(&mut machine, 1).unwrap();
        let mut layout = Layout::detect(&samples, description.rules()).unwrap();
        // No time limit that matters: the games are the same on every machine.
        let ends = sample_ends(
            &mut machine,
            1,
            JOIN_GAMES,
            std::time::Duration::from_secs(600),
        );
        layout.find_joins(&ends.unwrap());
        layout.joins().map(|c| {
            c.map(|c| {
                c.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        })
    };
    let named = |a: &str, b: &str| [Some(a.to_string()), Some(b.to_string())];
    assert_eq!(joins(&read("rules/hex.kif")), named("red", "blue"));
    let pie = read(&format!("{BASE}/hexPie.kif"));
    assert_eq!(joins(&pie), named("red", "blue"));
    let (scrambled, names) = scramble(&pie);
    assert_eq!(joins(&scrambled), named(&names["red"], &names["blue"]));
    for sheet in ["rules/chess.kif", "rules/reversi.kif"] {
        assert_eq!(joins(&read(sheet)), [None, None], "{sheet}");
    }
}

/// A computer seat of a GDL-II game chooses over its role's belief, never the true state:
/// in Monty Hall, after the same moves and percepts, the candidate chooses the same whether
/// the car is behind its door or the other one (a player reading the state would stay in one
/// and switch in the other), and it switches.
#[test]
fn a_computer_seat_does_not_look_at_the_hidden_state() {
    use ggp::play::{Game, Level, Seat};
    let text = read("../shared/games/gdl2/montyhall.kif");
    let description = Description::from_text(&text).unwrap();
    let mut choices = Vec::new();
    for car in ["1", "2"] {
        let machine = DatalogMachine::new(&description).unwrap();
        let seats = vec![Seat::Computer(Level::Easy), Seat::Computer(Level::Random)];
        let mut game = Game::new(machine, description.rules(), &text, seats, 5).unwrap();
        for (ours, nature) in [
            ("(choose 1)".to_string(), format!("(hide_car {car})")),
            ("noop".to_string(), "(open_door 3)".to_string()),
        ] {
            let joint = [ours, nature]
                .iter()
                .map(|t| {
                    game.machine()
                        .find_move(&ggp::gdl::parse_term(t).unwrap())
                        .unwrap()
                })
                .collect();
            game.play(joint).unwrap();
        }
        let choice = game.computer_move(0).unwrap().unwrap();
        choices.push(game.machine().move_term(choice.mv).to_string());
    }
    assert_eq!(choices[0], choices[1], "{choices:?}");
    assert_eq!(choices[0], "switch");
}

/// Issue 15: chess at `easy` is played by alpha-beta, which adds each position it searches to
/// the game's progress count as it goes and says it counts positions (the thinking indicator
/// counted finished games, and showed "0 playouts so far"). An engine wrapper reads the count
/// each time the search asks for a next state, so the count is seen rising during the search,
/// whatever the machine's speed; it ends at the search's node count.
#[test]
fn alpha_beta_counts_the_positions_it_searches_as_it_goes() {
    use ggp::machine::MachineError;
    use ggp::play::progress::Progress;
    use ggp::play::{Game, Level, Seat};
    use ggp::propnet::{Budget, PropnetMachine};
    use ggp::search::Work;
    use std::sync::{Arc, Mutex, OnceLock};

    /// The propnet, noting the progress count at every next state asked for.
    struct Watched {
        inner: PropnetMachine,
        progress: Arc<OnceLock<Progress>>,
        seen: Arc<Mutex<Vec<u64>>>,
    }
    type S = <PropnetMachine as StateMachine>::State;
    type Mv = <PropnetMachine as StateMachine>::Move;
    impl StateMachine for Watched {
        type State = S;
        type Move = Mv;
        fn roles(&self) -> &[Term] {
            self.inner.roles()
        }
        fn initial_state(&self) -> S {
            self.inner.initial_state()
        }
        fn legal_moves_into(
            &mut self,
            state: &S,
            role: usize,
            out: &mut Vec<Mv>,
        ) -> Result<(), MachineError> {
            self.inner.legal_moves_into(state, role, out)
        }
        fn is_terminal(&mut self, state: &S) -> Result<bool, MachineError> {
            self.inner.is_terminal(state)
        }
        fn goal_values(&mut self, state: &S, role: usize) -> Result<Vec<u8>, MachineError> {
            self.inner.goal_values(state, role)
        }
        fn next_state_unchecked(&mut self, state: &S, joint: &[Mv]) -> Result<S, MachineError> {
            if let Some(p) = self.progress.get() {
                self.seen.lock().unwrap().push(p.count());
            }
            self.inner.next_state_unchecked(state, joint)
        }
        fn move_term(&self, mv: Mv) -> Term {
            self.inner.move_term(mv)
        }
        fn find_move(&self, term: &Term) -> Option<Mv> {
            self.inner.find_move(term)
        }
        fn state_terms(&self, state: &S) -> Vec<Term> {
            self.inner.state_terms(state)
        }
        fn fact_ids_into(&self, state: &S, out: &mut Vec<u32>) -> bool {
            self.inner.fact_ids_into(state, out)
        }
        fn state_from_terms(&mut self, facts: &[Term]) -> Result<S, MachineError> {
            self.inner.state_from_terms(facts)
        }
    }

    let text = read("rules/chess.kif");
    let description = Description::from_text(&text).unwrap();
    let (progress, seen) = (Arc::new(OnceLock::new()), Arc::new(Mutex::new(Vec::new())));
    let machine = Watched {
        inner: PropnetMachine::new(&description, &Budget::default()).unwrap(),
        progress: Arc::clone(&progress),
        seen: Arc::clone(&seen),
    };
    let seats = vec![Seat::Human, Seat::Computer(Level::Easy)];
    let mut game = Game::new(machine, description.rules(), &text, seats, 1).unwrap();
    progress.set(game.progress()).unwrap();
    assert_eq!(game.work_of(1), Work::Positions, "alpha-beta plays chess");
    let e4 = game.resolve(0, "e4").unwrap();
    let noop = game.legal(1).unwrap()[0];
    game.play(vec![e4, noop]).unwrap();
    let before = game.progress().count();
    seen.lock().unwrap().clear();
    let choice = game.computer_move(1).unwrap().unwrap();
    let counted = game.progress().count() - before;
    assert_eq!(game.progress().work(), Work::Positions);
    assert_eq!(
        counted, choice.iterations,
        "every position searched was counted"
    );
    assert!(counted > 100, "{counted}");
    // Read during the search: it rose from where it was to (almost) where it ended.
    let seen = seen.lock().unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "the count went down");
    let during: Vec<u64> = seen.iter().map(|c| c - before).collect();
    assert!(
        during.iter().any(|&c| c > 0 && c < counted / 2),
        "{during:?}"
    );
    assert!(during.iter().any(|&c| c > counted / 2), "{during:?}");
}
