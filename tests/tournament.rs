//! `ggp tournament` end to end: tables that add up, rotating seats, resuming from records,
//! errors counted per player, and clear refusals.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{dying_player, fake_player, ggp, player_answering};

use ggp::record::MatchRecord;

const TIC_TAC_TOE: &str = "../shared/games/base/ticTacToe.kif";

/// A two-role game of one simultaneous step: each role says left or right; goals 50 each.
const ONE_STEP: &str = "(role a) (role b) (init start)
    (<= (legal ?r left) (role ?r) (true start)) (<= (legal ?r right) (role ?r) (true start))
    (<= (next done) (true start)) (<= terminal (true done)) (<= (goal ?r 50) (role ?r))";

/// A fresh folder for one test.
fn out_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ggp-tournament-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A fresh folder for one test holding [`ONE_STEP`] as `oneStep.kif`: the folder, the sheet's
/// path, and the records' folder inside it.
fn one_step_folder(tag: &str) -> (PathBuf, String, PathBuf) {
    let out = out_dir(tag);
    std::fs::create_dir_all(&out).unwrap();
    let game = out.join("oneStep.kif");
    std::fs::write(&game, ONE_STEP).unwrap();
    let records = out.join("records");
    (out, game.to_str().unwrap().to_string(), records)
}

/// `ggp tournament` with short clocks on `games`, writing to `out`.
fn tournament(
    games: &[&str],
    players: &[&str],
    extra: &[&str],
    out: &Path,
) -> (i32, String, String) {
    ggp(&tournament_args(games, players, extra, out))
}

/// The arguments of [`tournament`].
fn tournament_args<'a>(
    games: &[&'a str],
    players: &[&'a str],
    extra: &[&'a str],
    out: &'a Path,
) -> Vec<&'a str> {
    let mut args = vec!["tournament"];
    args.extend_from_slice(games);
    for p in players {
        args.extend(["--player", p]);
    }
    args.extend([
        "--startclock",
        "1",
        "--playclock",
        "1",
        "--margin",
        "0.3",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    args.extend_from_slice(extra);
    args
}

/// One row of a table: player, vs, [n, W, D, L], [TO, CE, IL], [clean n, W, D, L].
type Row = (String, String, [usize; 4], [usize; 3], [usize; 4]);

/// The rows of the table headed `title` in `report`.
fn rows(report: &str, title: &str) -> Vec<Row> {
    let mut lines = report.lines().skip_while(|l| !l.starts_with(title)).skip(2);
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        if line.trim().is_empty() || line.starts_with("mean goal by role") {
            break;
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| cells[i].parse::<usize>().unwrap();
        // The clean W-D-L is the one cell of that shape; the clean count and the errors
        // stand before it.
        let k = cells
            .iter()
            .position(|c| {
                c.split('-').count() == 3 && c.split('-').all(|n| n.parse::<usize>().is_ok())
            })
            .unwrap_or_else(|| panic!("no clean W-D-L in {line}"));
        let clean: Vec<usize> = cells[k].split('-').map(|n| n.parse().unwrap()).collect();
        rows.push((
            cells[0].to_string(),
            cells[1].to_string(),
            [num(2), num(3), num(4), num(5)],
            [num(k - 4), num(k - 3), num(k - 2)],
            [num(k - 1), clean[0], clean[1], clean[2]],
        ));
    }
    rows
}

fn records(out: &Path) -> Vec<(String, MatchRecord)> {
    let mut found: Vec<(String, MatchRecord)> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().unwrap() != "tournament.json"
        })
        .map(|p| {
            let key = p.file_stem().unwrap().to_string_lossy().into_owned();
            (key, MatchRecord::load(&p).unwrap())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[test]
fn tables_add_up_and_seats_alternate() {
    let out = out_dir("tables");
    let players = [
        "r=builtin:random",
        "l=builtin:legal",
        "m=builtin:mcts:iterations=50",
    ];
    let (code, report, err) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "2"], &out);
    assert_eq!(code, 0, "{report}{err}");
    assert!(
        report.starts_with("6 matches planned, 6 finished"),
        "{report}"
    );
    // Three pairings, two matches each, seats swapped in the second.
    let records = records(&out);
    assert_eq!(records.len(), 6);
    for pair in records.chunks(2) {
        let (first, second) = (&pair[0].1, &pair[1].1);
        assert!(pair[0].0.ends_with(".001") && pair[1].0.ends_with(".002"));
        let mut swapped = first.player_names_from_host.clone().unwrap();
        swapped.reverse();
        assert_eq!(second.player_names_from_host.as_ref().unwrap(), &swapped);
        assert!(first.is_completed && second.is_completed);
    }
    for title in ["ticTacToe", "all games"] {
        let rows = rows(&report, title);
        assert_eq!(rows.len(), 6, "{report}");
        for (player, vs, [n, w, d, l], _, clean) in &rows {
            assert_eq!(*n, 2);
            assert_eq!(w + d + l, *n, "{report}");
            // No player erred: every match is clean.
            assert_eq!(clean, &[*n, *w, *d, *l], "{report}");
            // The opponent's line mirrors this one.
            let (_, _, [_, w2, d2, l2], _, _) = rows
                .iter()
                .find(|(p, v, _, _, _)| p == vs && v == player)
                .unwrap();
            assert_eq!((w, d, l), (l2, d2, w2), "{report}");
        }
    }
    // The same tables are kept beside the records.
    let kept = std::fs::read_to_string(out.join("results.txt")).unwrap();
    assert_eq!(kept, report);
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn the_players_log_goes_to_a_file_and_says_what_auto_chose() {
    let out = out_dir("log");
    let players = ["a=builtin:auto", "r=builtin:random"];
    let (code, report, err) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "1"], &out);
    assert_eq!(code, 0, "{report}{err}");
    let log = std::fs::read_to_string(out.join("players.log")).unwrap();
    assert!(log.contains("auto: "), "{log}");
    assert!(log.contains("START"), "{log}");
    // The terminal gets warnings only: the per-message lines stay in the file.
    assert!(!err.contains("auto: ") && !err.contains("INFO"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_rerun_resumes_from_the_records() {
    let out = out_dir("resume");
    let players = ["r=builtin:random", "l=builtin:legal"];
    let (code, report, err) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "3"], &out);
    assert_eq!(code, 0, "{report}{err}");
    let before = records(&out);
    assert_eq!(before.len(), 3);
    // Match 2 stopped half way; match 3's record was cut off mid-write.
    let second = out.join(format!("{}.json", before[1].0));
    let mut half = before[1].1.clone();
    half.is_completed = false;
    half.goal_values.clear();
    half.save(&second).unwrap();
    let third = out.join(format!("{}.json", before[2].0));
    let text = std::fs::read_to_string(&third).unwrap();
    std::fs::write(&third, &text[..text.len() / 2]).unwrap();

    // `--report` counts the one complete record and plays nothing.
    let (code, report, _) = tournament(&[TIC_TAC_TOE], &players, &["--report"], &out);
    assert_eq!(code, 0);
    assert!(
        report.starts_with("2 matches planned, 1 finished"),
        "{report}"
    );
    assert!(!MatchRecord::load(&second).unwrap().is_completed);

    let (code, report, err) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "3"], &out);
    assert_eq!(code, 0, "{report}{err}");
    assert!(
        report.starts_with("3 matches planned, 3 finished (1 from earlier runs)"),
        "{report}"
    );
    let after = records(&out);
    // The finished match was not played again; the other two were.
    assert_eq!(after[0].1.random_token, before[0].1.random_token);
    assert_eq!(after[0].1.start_time, before[0].1.start_time);
    assert!(after[1].1.is_completed && after[2].1.is_completed);
    assert_ne!(after[1].1.start_time, before[1].1.start_time);

    // Nothing left to play: the tables only.
    let (code, report, _) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "3"], &out);
    assert_eq!(code, 0);
    assert!(
        report.contains("3 finished (3 from earlier runs)"),
        "{report}"
    );
    // More matches extend the tournament.
    let (code, report, _) = tournament(&[TIC_TAC_TOE], &players, &["--matches", "4"], &out);
    assert_eq!(code, 0);
    assert!(
        report.contains("4 finished (3 from earlier runs)"),
        "{report}"
    );
    // Another tournament in the same folder is refused.
    let other = ["r=builtin:random", "m=builtin:mcts"];
    let (code, _, err) = tournament(&[TIC_TAC_TOE], &other, &[], &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("holds another tournament (the players differ)"),
        "{err}"
    );
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn errors_are_counted_per_player() {
    let (out, game, records) = one_step_folder("errors");
    let slow = format!("slow={}", fake_player("left", Duration::from_millis(2200)));
    let bad = format!("bad={}@1", fake_player("(jump)", Duration::ZERO));
    let gone = format!("gone={}", fake_player("", Duration::ZERO));
    let players = [
        slow.as_str(),
        bad.as_str(),
        gone.as_str(),
        "r=builtin:random",
    ];
    let extra = ["--matches", "2", "--cores", "8"];
    let (code, report, err) = tournament(&[&game], &players, &extra, &records);
    // Every match finishes; the player that hangs up has one connection error a match.
    assert_eq!(code, 0, "{report}{err}");
    assert!(
        report.contains("12 matches planned, 12 finished (0 from earlier runs), 0 failed"),
        "{report}"
    );
    let rows = rows(&report, "oneStep");
    assert_eq!(rows.len(), 12, "{report}");
    let faulty = |p: &str| p != "r";
    for (player, vs, [n, w, d, l], errors, clean) in &rows {
        // One step per match: one error per match for the faulty players.
        let expected = match player.as_str() {
            "slow" => [*n, 0, 0],
            "gone" => [0, *n, 0],
            "bad" => [0, 0, *n],
            _ => [0, 0, 0],
        };
        assert_eq!(errors, &expected, "{player}: {report}");
        // The clean figure counts only the matches in which the opponent made no error:
        // those against `r`, the one player that never errs.
        if faulty(vs) {
            assert_eq!(clean, &[0, 0, 0, 0], "{player} vs {vs}: {report}");
        } else {
            assert_eq!(clean, &[*n, *w, *d, *l], "{player} vs {vs}: {report}");
        }
    }
    std::fs::remove_dir_all(&out).ok();
}

/// A START answered `busy` is the player's fault, recorded at step 0, so the match is not
/// clean for its opponent.
#[test]
fn a_start_not_answered_ready_is_an_error() {
    let (out, game, records_dir) = one_step_folder("busy");
    let busy = format!("busy={}", player_answering("busy", "left", Duration::ZERO));
    let players = [busy.as_str(), "r=builtin:random"];
    let (code, report, err) = tournament(&[&game], &players, &["--matches", "2"], &records_dir);
    assert_eq!(code, 0, "{report}{err}");
    for (_, record) in records(&records_dir) {
        let seat = record
            .player_names_from_host
            .as_ref()
            .unwrap()
            .iter()
            .position(|n| n != "random")
            .unwrap();
        assert_eq!(record.errors[0][seat], "IL busy", "{:?}", record.errors);
    }
    let rows = rows(&report, "oneStep");
    let busy = rows.iter().find(|r| r.0 == "busy").unwrap();
    assert_eq!((busy.2[0], busy.3), (2, [0, 0, 2]), "{report}");
    let r = rows.iter().find(|r| r.0 == "r").unwrap();
    assert_eq!((r.2[0], r.4[0]), (2, 0), "{report}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_player_that_dies_fails_its_remaining_matches() {
    let (out, game, records) = one_step_folder("dies");
    // INFO, then one match (INFO: is it free?, START, PLAY, STOP), then the player is gone.
    let mortal = format!("mortal={}", dying_player("left", 5));
    let players = [mortal.as_str(), "r=builtin:random"];
    let extra = ["--matches", "4", "--cores", "1"];
    let (code, report, err) = tournament(&[&game], &players, &extra, &records);
    assert_eq!(code, 1, "{report}{err}");
    // The match it died in counts (with its connection errors, and not in `r`'s clean
    // figure); the two after it are not played.
    assert!(
        report.contains("4 matches planned, 2 finished (0 from earlier runs), 2 failed"),
        "{report}"
    );
    assert_eq!(
        report.matches("not played: player mortal").count(),
        2,
        "{report}"
    );
    let rows = rows(&report, "oneStep");
    let r = rows.iter().find(|r| r.0 == "r").unwrap();
    assert_eq!((r.2[0], r.4[0]), (2, 1), "{report}");
    let mortal = rows.iter().find(|r| r.0 == "mortal").unwrap();
    assert!(mortal.3[1] > 0, "{report}");
    // The failed matches are played on a rerun (and fail again: the player is still down).
    let (code, report, err) = tournament(&[&game], &players, &extra, &records);
    assert_eq!(code, 2, "{report}{err}");
    assert!(err.contains("mortal"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

/// A player that answers every request at once (PLAY with a move that is rarely legal, so
/// the referee plays a random one) and keeps each message it got.
fn recording_player() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let kept = got.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((key, value)) = line.split_once(':')
                    && key.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            // "(PLAY ...", "( PLAY ..." -> "PLAY ...".
            let body = String::from_utf8_lossy(&body)
                .trim_start_matches(['(', ' '])
                .to_uppercase();
            let reply = if body.starts_with("PLAY") {
                std::thread::sleep(Duration::from_millis(200));
                "(mark 1 1)"
            } else if body.starts_with("INFO") {
                "((name recorder) (status available))"
            } else {
                "ready"
            };
            kept.lock().unwrap().push(body);
            let _ = write!(
                stream,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (addr, got)
}

#[test]
fn an_interrupted_tournament_aborts_its_matches_and_says_how_to_resume() {
    let out = out_dir("interrupted");
    let (addr, got) = recording_player();
    let recorder = format!("rec={addr}");
    let players = [recorder.as_str(), "r=builtin:random"];
    let extra = ["--matches", "4", "--cores", "1"];
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ggp"))
        .args(tournament_args(&[TIC_TAC_TOE], &players, &extra, &out))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first match's first PLAY, then interrupt as Ctrl-C would.
    let waited = std::time::Instant::now();
    while !got.lock().unwrap().iter().any(|m| m.starts_with("PLAY")) {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "no PLAY came: {:?}",
            got.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{report}{err}");
    assert!(err.contains("stopping:"), "{err}");
    assert!(report.contains("the referee was stopped"), "{report}");
    assert!(
        report.contains("matches not played; the same command resumes"),
        "{report}"
    );
    // The player got ABORT for the match it was playing, and no other match began.
    let messages = got.lock().unwrap().clone();
    assert!(
        messages.iter().any(|m| m.starts_with("ABORT")),
        "{messages:?}"
    );
    assert_eq!(
        messages.iter().filter(|m| m.starts_with("START")).count(),
        1,
        "{messages:?}"
    );
    // Its record is written, marked aborted.
    let aborted: Vec<_> = records(&out)
        .into_iter()
        .filter(|(_, r)| r.is_aborted && !r.is_completed)
        .collect();
    assert_eq!(aborted.len(), 1, "{report}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn bad_input_is_refused_clearly() {
    let out = out_dir("refused");
    let refused = |games: &[&str], players: &[&str], why: &str| {
        let (code, report, err) = tournament(games, players, &[], &out);
        assert_eq!(code, 2, "{report}{err}");
        assert!(err.contains(why), "expected `{why}` in: {err}");
    };
    refused(
        &[TIC_TAC_TOE],
        &["builtin:random", "builtin:genius"],
        "player `builtin:genius`: unknown player \"genius\"",
    );
    refused(
        &[TIC_TAC_TOE],
        &["builtin:random", "builtin:mcts:depth=2"],
        "player mcts has no option \"depth\"",
    );
    refused(
        &[TIC_TAC_TOE],
        &["builtin:random", "builtin:random"],
        "two players are named `random`",
    );
    refused(
        &["../shared/games/base/noSuchGame.kif"],
        &["builtin:random", "builtin:legal"],
        "noSuchGame.kif",
    );
    refused(
        &[TIC_TAC_TOE],
        &["builtin:random"],
        "ticTacToe has 2 roles but the tournament has 1 players",
    );
    // A player that is down is reported at once, not waited for.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down = format!("down={closed}");
    refused(
        &[TIC_TAC_TOE],
        &["builtin:random", &down],
        &format!("player down at {closed} does not answer"),
    );
    assert!(!out.exists(), "a refused tournament leaves no folder");
}

#[test]
fn a_pool_of_addresses_is_one_player_whose_matches_spread_over_the_pool() {
    let out = out_dir("pool");
    let servers: Vec<_> = (0..3).map(|_| recording_player()).collect();
    let addresses: Vec<&str> = servers.iter().map(|(a, _)| a.as_str()).collect();
    let pool = format!("pool={}", addresses.join(","));
    let players = [pool.as_str(), "r=builtin:random"];
    let extra = ["--matches", "6", "--cores", "8"];
    let (code, report, err) = tournament(&[TIC_TAC_TOE], &players, &extra, &out);
    assert_eq!(code, 0, "{report}{err}");
    assert!(
        report.starts_with("6 matches planned, 6 finished"),
        "{report}"
    );
    // One name in the tables, all six matches in its line.
    let rows = rows(&report, "ticTacToe");
    assert_eq!(rows.len(), 2, "{report}");
    assert!(
        rows.iter().any(|r| r.0 == "pool" && r.2[0] == 6),
        "{report}"
    );
    // The first three matches start side by side, one on each address of the pool.
    let starts: Vec<usize> = servers
        .iter()
        .map(|(_, got)| {
            let got = got.lock().unwrap();
            got.iter().filter(|m| m.starts_with("START")).count()
        })
        .collect();
    assert_eq!(starts.iter().sum::<usize>(), 6, "{starts:?}");
    assert!(starts.iter().all(|&n| n >= 1), "{starts:?}");
    std::fs::remove_dir_all(&out).ok();
}

/// Three roles, one simultaneous step; goals a 100, b 50, c 0.
const THREE_ROLES: &str = "(role a) (role b) (role c) (init start)
    (<= (legal ?r wait) (role ?r) (true start))
    (<= (next done) (true start)) (<= terminal (true done))
    (goal a 100) (goal b 50) (goal c 0)";

#[test]
fn a_filler_takes_the_seats_left_over_and_is_left_out_of_the_tables() {
    let out = out_dir("filler");
    std::fs::create_dir_all(&out).unwrap();
    let game = out.join("threeRoles.kif");
    std::fs::write(&game, THREE_ROLES).unwrap();
    let game = game.to_str().unwrap().to_string();
    let records_dir = out.join("records");
    let players = ["x=builtin:random", "y=builtin:legal"];
    let extra = ["--matches", "3", "--filler", "f=builtin:random"];
    let (code, report, err) = tournament(&[&game], &players, &extra, &records_dir);
    assert_eq!(code, 0, "{report}{err}");
    // Seats x y f, then y f x, then f x y (the records name each seat by its player's own
    // name, x random, y legal): x is above y in the first and the third.
    let names: Vec<Vec<String>> = records(&records_dir)
        .into_iter()
        .map(|(_, r)| r.player_names_from_host.unwrap())
        .collect();
    assert_eq!(names[0], ["random", "legal", "random"]);
    assert_eq!(names[2], ["random", "random", "legal"]);
    let rows = rows(&report, "threeRoles");
    assert_eq!(rows.len(), 2, "{report}");
    let x = rows.iter().find(|r| r.0 == "x").unwrap();
    assert_eq!((x.1.as_str(), x.2), ("y", [3, 2, 0, 1]), "{report}");
    assert!(!report.contains("\nf "), "{report}");
    std::fs::remove_dir_all(&out).ok();
}
