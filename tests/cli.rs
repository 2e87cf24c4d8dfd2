//! The `ggp` binary end to end: exit codes and the first lines users see.

mod common;

use common::ggp;

/// Writes `trace` to a temporary file, runs `ggp replay [extra...] GAME FILE` on it and returns
/// the exit code and standard output.
fn replay(game: &str, extra: &[&str], trace: &str, tag: &str) -> (i32, String) {
    let path = std::env::temp_dir().join(format!("ggp-cli-{tag}-{}.trace", std::process::id()));
    std::fs::write(&path, trace).unwrap();
    let mut args = vec!["replay"];
    args.extend_from_slice(extra);
    args.extend([game, path.to_str().unwrap()]);
    let (code, out, _) = ggp(&args);
    std::fs::remove_file(&path).ok();
    (code, out)
}

/// What `ggp replay` prints when a trace agrees throughout.
fn agreement(trace: &str) -> String {
    let steps = trace.lines().filter(|l| l.starts_with("STEP")).count();
    format!("agree: {steps} steps")
}

const TEST: &str = "../shared/games/test";

#[test]
fn check_accepts_a_valid_sheet() {
    let (code, out, err) = ggp(&["check", "rules/ticTacToe.kif"]);
    assert_eq!(
        (code, out.trim(), err.as_str()),
        (0, "rules/ticTacToe.kif: valid (0 errors, 0 warnings)", "")
    );
}

#[test]
fn check_names_file_line_and_column_of_a_syntax_error() {
    let path = format!("{TEST}/badparens3.kif");
    let (code, _, err) = ggp(&["check", &path]);
    assert_eq!(code, 1);
    assert_eq!(
        err.lines().next().unwrap(),
        format!("{path}:2:7: error: expected '(' or an atom, found ')' with no list open")
    );
}

#[test]
fn check_names_the_rule_of_an_invalid_sheet() {
    let path = format!("{TEST}/baseDependsOnTrue.kif");
    let (code, _, err) = ggp(&["check", &path]);
    assert_eq!(code, 1);
    let mut lines = err.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "{path}:1:1: error: base depends on true, but base must not depend on true or does"
        )
    );
    assert_eq!(lines.next().unwrap(), "    in (<= (base bar) (true bar))");
}

#[test]
fn playout_then_replay_agrees() {
    let (code, trace, _) = ggp(&[
        "playout",
        "rules/ticTacToe.kif",
        "--count",
        "2",
        "--seed",
        "3",
    ]);
    assert_eq!(code, 0);
    assert!(trace.starts_with("PLAYOUT 0\nSTEP 0\nSTATE (cell 1 1 b)"));
    let (code, out) = replay("rules/ticTacToe.kif", &[], &trace, "agree");
    assert_eq!((code, out.trim().to_string()), (0, agreement(&trace)));
}

#[test]
fn replay_reports_the_first_difference() {
    let (_, trace, _) = ggp(&["playout", "rules/ticTacToe.kif", "--seed", "3"]);
    let broken = trace.replacen("(control x)", "(control o)", 1);
    let (code, out) = replay("rules/ticTacToe.kif", &[], &broken, "broken");
    assert_eq!(code, 1);
    assert!(out.starts_with("playout 0 step 0: state\n"), "{out}");
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let (code, _, err) = ggp(&["check", "no/such/file.kif"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: cannot read no/such/file.kif"),
        "{err}"
    );
}

#[test]
fn the_propnet_replays_what_the_datalog_engine_plays() {
    let (_, trace, _) = ggp(&[
        "playout",
        "rules/connectFour.kif",
        "--count",
        "2",
        "--seed",
        "5",
    ]);
    let (code, out) = replay(
        "rules/connectFour.kif",
        &["--engine", "propnet"],
        &trace,
        "propnet",
    );
    assert_eq!((code, out.trim().to_string()), (0, agreement(&trace)));
}

#[test]
fn ground_reports_the_network() {
    let (code, out, _) = ggp(&["ground", "rules/ticTacToe.kif"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    // 9 cells with 3 marks each, and whose turn it is.
    assert_eq!(lines[0], "base propositions: 29");
    assert!(lines[1].starts_with("input propositions: "));
    assert!(lines.iter().any(|l| l.starts_with("build time: ")));
    let count = |name: &str| -> usize {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} count: {out}"))
    };
    // Every base and input is a ground atom, and so is every proposition a rule derives.
    let inputs = count("input propositions");
    assert!(count("ground atoms") > 29 + inputs, "{out}");
    // Each of the 9 cells has at least its three `next` rules.
    assert!(count("ground rules") >= 27, "{out}");
}

#[test]
fn factor_lists_the_sub_games_and_the_idle_moves() {
    let (code, out, _) = ggp(&["factor", "../shared/games/base/point_grab.kif"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("components: 1 (1 relevant)"), "{out}");
    assert!(out.contains("free moves (change nothing): "), "{out}");
    assert!(
        out.contains("8 idle moves of first (none can change the outcome"),
        "{out}"
    );
    let (code, out, _) = ggp(&["factor", "rules/ticTacToe.kif"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("read by goal x, goal o, terminal"), "{out}");
    assert!(!out.contains("idle moves of"), "{out}");
    assert!(out.ends_with("turn-taking parts: none\n"), "{out}");
    // Two boards of connect four played at once, each role on one board a step.
    let (code, out, _) = ggp(&["factor", "../shared/games/base/connectFourSimultaneous.kif"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "turn-taking parts: 2 (components 1 2 3 4 5 6 7 8; components 9 10 11 12 13 14 15 16)"
        ),
        "{out}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn ground_stops_at_the_memory_budget() {
    // The process alone uses more than a megabyte, so both tries stop at their first check.
    let (code, out, _) = ggp(&["ground", "rules/ticTacToe.kif", "--max-memory-mb", "1"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("stopped after "), "{out}");
    let why = out.split_once("): ").map_or("", |(_, why)| why.trim());
    let (first, second) = why
        .split_once("; then, with demand-driven rules, ")
        .or_else(|| {
            let same = why.strip_suffix(" (with demand-driven rules too)")?;
            Some((same, same))
        })
        .unwrap_or_else(|| panic!("not two tries: {out}"));
    for try_ in [first, second] {
        assert!(try_.starts_with("out of memory "), "{out}");
        assert!(
            try_.ends_with(" MB resident, over the limit of 1.0 MB"),
            "{out}"
        );
    }
}

#[test]
fn bench_says_which_engine_ran() {
    let (code, out, _) = ggp(&[
        "bench",
        "rules/ticTacToe.kif",
        "--seconds",
        "0.2",
        "--engine",
        "datalog",
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("engine: datalog\nplayouts: "), "{out}");
    let (code, out, _) = ggp(&[
        "bench",
        "rules/ticTacToe.kif",
        "--seconds",
        "0.2",
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("engine: propnet\nplayouts: "), "{out}");
}

#[test]
fn bench_with_a_playout_count_does_that_much_work_on_both_engines() {
    // `--playouts` stops at that count (long before `--seconds`) and the report counts the
    // states played.
    let states = |engine: &str| {
        let (code, out, err) = ggp(&[
            "bench",
            "rules/ticTacToe.kif",
            "--playouts",
            "25",
            "--seconds",
            "600",
            "--seed",
            "7",
            "--engine",
            engine,
        ]);
        assert_eq!(code, 0, "{err}");
        let line = out
            .lines()
            .find(|l| l.starts_with("playouts: "))
            .unwrap_or_else(|| panic!("no playouts line: {out}"));
        assert!(line.starts_with("playouts: 25 in "), "{line}");
        let states: u64 = line
            .rsplit_once('(')
            .and_then(|(_, s)| s.strip_suffix(" states)"))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no state count: {line}"));
        // A ticTacToe playout makes 5 to 9 moves.
        assert!((25 * 5..=25 * 9).contains(&states), "{line}");
        states
    };
    // Fixed work: the same seed gives the same playouts on the same engine.
    assert_eq!(states("propnet"), states("propnet"));
    states("datalog");
}

#[test]
fn auto_falls_back_to_datalog_past_the_grounding_budget_and_says_so() {
    // No time to ground: `auto` runs the Datalog engine and says why on stderr.
    let (code, out, err) = ggp(&[
        "bench",
        "rules/ticTacToe.kif",
        "--engine",
        "auto",
        "--ground-seconds",
        "0",
        "--seconds",
        "0.1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("engine: datalog\nplayouts: "), "{out}");
    assert!(
        err.contains("propnet unavailable (out of time")
            && err.contains("using the datalog engine"),
        "{err}"
    );
    // `propnet` alone has nothing to fall back to: an error naming the game.
    let (code, _, err) = ggp(&[
        "bench",
        "rules/ticTacToe.kif",
        "--engine",
        "propnet",
        "--ground-seconds",
        "0",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("grounding rules/ticTacToe.kif: out of time"),
        "{err}"
    );
}

/// Writes `bytes` to a temporary file named after `tag`; its path.
fn temp_sheet(tag: &str, bytes: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("ggp-cli-{tag}-{}.kif", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

const BLANK_SHEET: &str = "(role x)\u{b}(init (p))\u{c}(<= (legal x go)\u{a0}(true (p)))\u{85}\
    (<= (next (p)) (does x go))\u{2028}(<= terminal (true (p)))\u{2029}(<= (goal x 100)\u{3000}(true (p)))\n";

#[test]
fn check_and_replay_read_every_unicode_blank() {
    // Each of these blanks made the reader panic (exit 101).
    let path = temp_sheet("blanks", BLANK_SHEET.as_bytes());
    let (code, out, err) = ggp(&["check", &path]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("valid (0 errors"), "{out}");
    let (code, out) = replay(&path, &[], "STEP 0\nSTATE (p)\nTERMINAL\n", "blanks");
    assert_ne!(code, 101, "{out}");
    let control = temp_sheet("control", b"(role x)\n(init (p\x01))\n");
    let (code, _, err) = ggp(&["check", &control]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!("{control}:2:9: error: expected")),
        "{err}"
    );
    for p in [path, control] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn check_names_the_position_of_a_byte_that_is_not_utf8() {
    let path = temp_sheet("latin1", b"(role x)\n; caf\xe9\n");
    let (code, _, err) = ggp(&["check", &path]);
    std::fs::remove_file(&path).ok();
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!(
            "{path}:2:6: expected UTF-8 text, found the byte 0xe9"
        )),
        "{err}"
    );
}

#[test]
fn bench_returns_on_a_game_without_a_reachable_end() {
    let path = temp_sheet(
        "endless",
        b"(role x) (init (p)) (legal x go) (<= (next (p)) (true (p))) \
          (<= terminal (true (q))) (goal x 0)",
    );
    for engine in ["datalog", "propnet"] {
        let (code, out, err) = ggp(&[
            "bench",
            &path,
            "--seconds",
            "0.2",
            "--max-steps",
            "50",
            "--engine",
            engine,
        ]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        // Every playout stops at the cap: 50 moves each.
        let line = out.lines().find(|l| l.starts_with("playouts: ")).unwrap();
        let n: u64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let states: u64 = line
            .rsplit('(')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n > 0 && states == 50 * n, "{engine}: {out}");
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn match_aborts_a_game_without_a_reachable_end_at_its_step_limit() {
    let path = temp_sheet(
        "endless-match",
        b"(role x) (init (p)) (legal x go) (<= (next (p)) (true (p))) \
          (<= terminal (true (q))) (goal x 0)",
    );
    let out_dir = std::env::temp_dir().join(format!("ggp-cli-endless-{}", std::process::id()));
    let (code, out, err) = ggp(&[
        "match",
        &path,
        "--player",
        "x=builtin:random",
        "--playclock",
        "1",
        "--startclock",
        "1",
        "--max-steps",
        "5",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    std::fs::remove_file(&path).ok();
    std::fs::remove_dir_all(&out_dir).ok();
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("did not end within 5 steps"), "{out}{err}");
}

/// The constructs outside GDL's specification that the reference prover plays (issue 13):
/// `check` warns with file:line:col and accepts the sheet, and a match between built-in players
/// (each a `serve` in-process) plays it to the end on both engines.
#[test]
fn check_warns_about_what_the_reference_plays_and_match_plays_it() {
    let sheets = [
        (
            "not_distinct",
            "not_distinct.kif:4:1: warning: not applied to (distinct ?r ?c)",
        ),
        (
            "function_arities",
            "function_arities.kif:4:1: warning: function cell used with arity 3",
        ),
        (
            "old_base_input",
            "old_base_input.kif:3:1: warning: base used with 2 arguments",
        ),
        (
            "not_function",
            "not_function.kif:3:1: warning: not used as a function symbol",
        ),
        (
            "orders",
            "orders.kif:17:1: warning: variable ?t4 is not bound by a positive literal: the rule \
             is dropped",
        ),
        (
            "deep_question",
            "deep_question.kif:8:1: warning: recursion restriction: the argument ?x of the \
             recursive (nat ?x)",
        ),
    ];
    for (name, warning) in sheets {
        let path = format!("tests/fixtures/reference/{name}.kif");
        let (code, out, err) = ggp(&["check", &path]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("valid (0 errors"), "{out}");
        assert!(err.contains(warning), "{name}: {err}");
        for engine in ["datalog", "propnet"] {
            let out_dir = std::env::temp_dir().join(format!(
                "ggp-cli-ref-{name}-{engine}-{}",
                std::process::id()
            ));
            let mut args = vec![
                "match",
                &path,
                "--engine",
                engine,
                "--playclock",
                "1",
                "--startclock",
                "2",
                "--max-steps",
                "20",
                "--out",
                out_dir.to_str().unwrap(),
            ];
            let roles: &[&str] = match name {
                "not_distinct" => &["a=builtin:random", "b=builtin:random"],
                "orders" => &[
                    "r1=builtin:random",
                    "r2=builtin:random",
                    "r3=builtin:random",
                ],
                "deep_question" => &["counter=builtin:random"],
                _ => &["a=builtin:random"],
            };
            for role in roles {
                args.extend(["--player", role]);
            }
            let (code, out, err) = ggp(&args);
            std::fs::remove_dir_all(&out_dir).ok();
            if name == "function_arities" && code != 0 {
                // `stay` may be chosen every step: the step limit ends that match.
                assert!(err.contains("did not end within 20 steps"), "{out}{err}");
                continue;
            }
            assert_eq!(code, 0, "{name} on {engine}: {out}{err}");
            assert!(out.contains("errors 0"), "{name} on {engine}: {out}");
        }
    }
}

/// The line of standard error that reports the command's failure.
fn error_line(err: &str) -> &str {
    err.lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line in {err}"))
}

/// Valid sheets whose terms grow without bound (issue 13): every command that plays them ends
/// at once with the engine's budget named, on both engines, instead of running out of memory.
#[test]
fn sheets_whose_terms_grow_each_step_end_in_a_budget_error() {
    let bombs = [
        ("doubling", "symbols in one term exceeded 100000"),
        ("deepening", "nesting depth of one term exceeded 500"),
    ];
    for (name, why) in bombs {
        let path = format!("tests/fixtures/bombs/{name}.kif");
        let (code, out, err) = ggp(&["check", &path]);
        assert_eq!(code, 0, "{name} is valid GDL: {out}{err}");
        for engine in ["datalog", "auto", "propnet"] {
            for command in ["playout", "bench"] {
                let (code, _, err) = ggp(&[command, &path, "--engine", engine]);
                assert_eq!(code, 2, "{command} {name} on {engine}: {err}");
                assert!(err.contains(why), "{command} {name} on {engine}: {err}");
                // Each layer of the error chain names its cause once (issue 26).
                assert_eq!(
                    error_line(&err).matches(why).count(),
                    1,
                    "{command} {name} on {engine}: {err}"
                );
            }
        }
        let out_dir =
            std::env::temp_dir().join(format!("ggp-cli-bomb-{name}-{}", std::process::id()));
        let (code, out, err) = ggp(&[
            "match",
            &path,
            "--player",
            "p=builtin:random",
            "--playclock",
            "1",
            "--startclock",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        std::fs::remove_dir_all(&out_dir).ok();
        assert_ne!(code, 0, "{out}");
        assert!(err.contains(why), "match {name}: {out}{err}");
        assert_eq!(
            error_line(&err).matches(why).count(),
            1,
            "match {name}: {out}{err}"
        );
    }
}
