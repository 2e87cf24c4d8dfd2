//! Whole matches under `ggp match`: players are `ggp serve` child processes on ephemeral
//! 127.0.0.1 ports, built-in players, or fake players that misbehave on purpose. Every
//! record is checked by replaying its moves on the Datalog engine.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ggp::datalog::DatalogMachine;
use ggp::gdl::{Description, parse_term};
use ggp::machine::StateMachine;
use ggp::protocol::Style;
use ggp::protocol::message::state_text;
use ggp::record::MatchRecord;
use ggp::referee::{Contestant, MatchConfig, run_match};

use common::fake_player;

/// A `ggp serve` child process, killed when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ggp"))
            .args(["serve", "--port", "0", "--bind", "127.0.0.1"])
            .args(["--player", "random", "--margin", "0.5", "--seed", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ggp serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Serve { child, addr }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh directory for records.
fn out_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ggp-referee-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `ggp match GAME` with `players` and `extra` options; the record, checked.
fn ggp_match(game: &str, players: &[String], extra: &[&str], tag: &str) -> MatchRecord {
    let out = out_dir(tag);
    let mut command = Command::new(env!("CARGO_BIN_EXE_ggp"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "match",
            game,
            "--startclock",
            "5",
            "--playclock",
            "2",
            "--seed",
            "11",
        ])
        .args(["--margin", "0.5", "--out", out.to_str().unwrap()])
        .args(extra);
    for player in players {
        command.args(["--player", player]);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix("record: "))
        .expect("the record is named");
    let record = MatchRecord::load(Path::new(path)).unwrap();
    check_record(game, &record);
    std::fs::remove_dir_all(&out).unwrap();
    record
}

/// The record is complete and true: replaying its moves from the initial state gives its
/// states and goals, and every move was legal.
fn check_record(game: &str, record: &MatchRecord) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(game);
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(record.game_rulesheet.as_deref(), Some(text.as_str()));
    let mut machine = DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap();
    assert!(record.is_completed && !record.is_aborted);
    assert_eq!(record.states.len(), record.moves.len() + 1);
    assert_eq!(record.state_times.len(), record.states.len());
    assert_eq!(record.errors.len(), record.states.len());
    assert!(record.state_times.windows(2).all(|w| w[0] <= w[1]));
    let mut state = machine.initial_state();
    assert_eq!(record.states[0], render(&machine, &state));
    for (step, joint) in record.moves.iter().enumerate() {
        let moves: Vec<_> = joint
            .iter()
            .map(|m| machine.find_move(&parse_term(m).unwrap()).unwrap())
            .collect();
        state = machine.next_state(&state, &moves).unwrap();
        assert_eq!(
            record.states[step + 1],
            render(&machine, &state),
            "step {step}"
        );
    }
    assert!(machine.is_terminal(&state).unwrap());
    let goals: Vec<u32> = machine
        .goals(&state)
        .unwrap()
        .into_iter()
        .map(u32::from)
        .collect();
    assert_eq!(record.goal_values, goals);
}

/// A state as the referee records it (facts sorted).
fn render<M: StateMachine>(machine: &M, state: &M::State) -> String {
    let mut facts = machine.state_terms(state);
    facts.sort_by_cached_key(|f| f.to_string());
    state_text(&facts)
}

fn no_errors(record: &MatchRecord) {
    assert!(
        record.errors.iter().flatten().all(String::is_empty),
        "{:?}",
        record.errors
    );
}

#[test]
fn tic_tac_toe_between_two_servers() {
    let (x, o) = (Serve::start(), Serve::start());
    let players = [format!("x={}", x.addr), format!("o={}", o.addr)];
    let record = ggp_match("rules/ticTacToe.kif", &players, &[], "ttt");
    no_errors(&record);
    assert_eq!(
        record.player_names_from_host,
        Some(vec!["ggp".to_string(), "ggp".to_string()])
    );
    assert!(!record.scrambled);
    assert!(record.moves[0].contains(&"noop".to_string()));
    assert!(record.moves[0].iter().any(|m| m.starts_with("( mark ")));
}

#[test]
fn connect_four_between_two_servers() {
    let (red, yellow) = (Serve::start(), Serve::start());
    let players = [
        format!("red={}", red.addr),
        format!("yellow={}", yellow.addr),
    ];
    let record = ggp_match("rules/connectFour.kif", &players, &[], "c4");
    no_errors(&record);
    assert!(record.moves.len() >= 7);
}

#[test]
fn dresden_style_uppercased_match() {
    let (x, o) = (Serve::start(), Serve::start());
    let players = [format!("x={}", x.addr), format!("o={}", o.addr)];
    let record = ggp_match("rules/ticTacToe.kif", &players, &["--dresden"], "dresden");
    no_errors(&record);
    // Dresden sends no INFO: the names are the addresses.
    assert_eq!(
        record.player_names_from_host,
        Some(vec![x.addr.clone(), o.addr.clone()])
    );
}

#[test]
fn scrambled_match_records_the_real_moves() {
    let (red, yellow) = (Serve::start(), Serve::start());
    let players = [
        format!("red={}", red.addr),
        format!("yellow={}", yellow.addr),
    ];
    let record = ggp_match(
        "rules/connectFour.kif",
        &players,
        &["--scramble"],
        "scrambled",
    );
    no_errors(&record);
    assert!(record.scrambled);
}

#[test]
fn builtin_players_play_in_process() {
    let players = [
        "o=builtin:legal".to_string(),
        "x=builtin:random".to_string(),
    ];
    let record = ggp_match(
        "rules/ticTacToe.kif",
        &players,
        &["--scramble", "--dresden"],
        "builtin",
    );
    no_errors(&record);
    assert_eq!(
        record.player_names_from_host,
        Some(vec!["random".to_string(), "legal".to_string()])
    );
}

#[test]
fn bad_player_lists_are_refused() {
    let run = |players: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ggp"));
        command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
            "match",
            "rules/ticTacToe.kif",
            "--out",
            "/nonexistent/never",
        ]);
        for p in players {
            command.args(["--player", p]);
        }
        let output = command.output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["x=builtin:random"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no --player for role o"), "{err}");
    let (code, err) = run(&["x=builtin:random", "white=builtin:random"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("the game has no role white"), "{err}");
    let (code, err) = run(&["x=builtin:random", "o=builtin:genius"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("genius"), "{err}");
    let (code, err) = run(&["x=builtin:random", "x=builtin:random"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("role x has two players"), "{err}");
}

#[test]
fn late_illegal_and_unreachable_players_get_random_legal_moves() {
    // Three roles, one joint move: every role picks one of two moves.
    let game = "(role a) (role b) (role c) (init start)
        (<= (legal ?r left) (role ?r) (true start)) (<= (legal ?r right) (role ?r) (true start))
        (<= (next done) (true start)) (<= terminal (true done)) (<= (goal ?r 50) (role ?r))";
    let rules = ggp::kif::parse(game).unwrap();
    let mut machine = DatalogMachine::new(&Description::from_text(game).unwrap()).unwrap();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let contestants = [
        fake_player("left", Duration::from_millis(2500)),
        fake_player("(up 1)", Duration::ZERO),
        closed.to_string(),
    ]
    .map(|address| Contestant {
        name: address.clone(),
        address,
    });
    let config = MatchConfig {
        match_id: "test.faults.1".into(),
        start_clock: 2,
        play_clock: 1,
        style: Style::GgpBase,
        scramble: false,
        seed: 5,
        record_path: None,
        rulesheet: game.into(),
        max_steps: ggp::referee::DEFAULT_MAX_STEPS,
    };
    let record = run_match(&mut machine, &rules, &contestants, &config).unwrap();
    assert_eq!(record.errors[0], ["", "", "CE"]);
    assert_eq!(record.errors[1], ["TO", "IL ( up 1 )", "CE"]);
    assert!(record.is_completed);
    assert_eq!(record.goal_values, [50, 50, 50]);
    for mv in &record.moves[0] {
        assert!(mv == "left" || mv == "right", "{mv}");
    }
}

/// A sheet whose final state gives a role two goal values (as kriegTTT does when both make a
/// line at once) and another none: the match still ends cleanly, and the record says whose
/// goal is the sheet's fault.
#[test]
fn ill_defined_goals_are_recorded_as_the_sheets_fault() {
    let out = out_dir("badgoal");
    std::fs::create_dir_all(&out).unwrap();
    let game = out.join("badgoal.kif");
    std::fs::write(
        &game,
        "(role a) (role b) (init s) (<= (legal a go) (true s)) (<= (legal b go) (true s))
         (<= (next t) (true s)) (<= terminal (true t))
         (<= (goal a 100) (true t)) (<= (goal a 0) (true t)) (<= (goal b 50) (true s))",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ggp"))
        .args(["match", game.to_str().unwrap(), "--startclock", "2"])
        .args(["--playclock", "1", "--out", out.to_str().unwrap()])
        .args(["--player", "a=builtin:legal", "--player", "b=builtin:legal"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("goal fault"), "{stdout}");
    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix("record: "))
        .expect("the record is named");
    let record = MatchRecord::load(Path::new(path)).unwrap();
    assert!(record.is_completed && !record.is_aborted);
    assert_eq!(record.goal_values, [0, 0]);
    assert!(record.goal_faults[0].contains("several goal values in the final state (0, 100;"));
    assert!(record.goal_faults[1].contains("no goal value"));
    std::fs::remove_dir_all(&out).unwrap();
}
