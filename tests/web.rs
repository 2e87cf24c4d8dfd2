//! `ggp web` end to end: the JSON endpoints over HTTP, and a real headless Chromium driven by
//! playwright-core (`tests/browser/tictactoe.cjs`): a full ticTacToe game against the
//! computer by clicking, its replay, and a Connect Four disc dropped by clicking a column;
//! `tests/browser/boards.cjs`: whole games of chess, Connect Four, Jeson Mor and Dominup.
//!
//! The browser test installs what it needs on first use: Debian's `chromium` and
//! `chromium-driver` with apt-get when `/usr/bin/chromium` is missing, and playwright-core
//! (pinned in `tests/browser/package-lock.json`) with `npm ci` into the target folder.
//! Set `GGP_SKIP_BROWSER=1` to skip it on a machine where that cannot work.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// A `ggp web` process on a free port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with more arguments (`--rules DIR`).
    fn start_with(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ggp"))
            .args(["web", "--port", "0", "--seed", "1"])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Server {
    /// The URL of an endpoint under `/api/`.
    fn api(&self) -> impl Fn(&str) -> String + '_ {
        |path| format!("{}api/{path}", self.url)
    }
}

/// A client that waits up to a minute for an answer.
fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

fn post(client: &reqwest::blocking::Client, url: &str, body: &Value) -> (u16, Value) {
    let response = client.post(url).body(body.to_string()).send().unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.text().unwrap()).unwrap(),
    )
}

#[test]
fn endpoints_serve_validate_play_and_replay() {
    let server = Server::start();
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let api = |path: &str| format!("{}api/{path}", server.url);
    let client = reqwest::blocking::Client::new();

    let page = client.get(&server.url).send().unwrap().text().unwrap();
    assert!(page.contains("<svg id=\"board\""));
    let games: Value =
        serde_json::from_str(&client.get(api("games")).send().unwrap().text().unwrap()).unwrap();
    for game in ["connectFour", "jesonMor", "ticTacToe"] {
        assert!(
            games["games"].as_array().unwrap().contains(&json!(game)),
            "{games}"
        );
    }

    // Uploads: invalid sheets come back with their diagnostics, big ones are refused.
    let (status, answer) = post(
        &client,
        &api("upload"),
        &json!({"name": "bad.kif", "text": "(role x)\n(<= (next ?y) (not (q ?z)))"}),
    );
    assert_eq!(status, 422);
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("upload:bad:2:1: error: unsafe rule"),
        "{error}"
    );
    let (status, _) = post(
        &client,
        &api("upload"),
        &json!({"name": "big.kif", "text": " ".repeat(300 * 1024)}),
    );
    assert_eq!(status, 413);
    let sheet = "(role a) (init s0) (<= (legal a go) (true s0)) (<= (next s1) (does a go)) \
                 (<= terminal (true s1)) (<= (goal a 100) (true s1)) (<= (goal a 0) (true s0))";
    let (status, answer) = post(
        &client,
        &api("upload"),
        &json!({"name": "../tiny.kif", "text": sheet}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["game"], "upload:tiny");
    let (_, view) = post(
        &client,
        &api("new"),
        &json!({"game": "upload:tiny", "seats": ["human"]}),
    );
    assert!(view["board"].is_null(), "no board in a game without one");
    // Its only move is forced, so it is played at once, without asking anyone.
    let mut view = view;
    while view["thinking"] == json!(true) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        view = post(&client, &api("view"), &json!({"id": view["id"]})).1;
    }
    assert_eq!(view["facts"], json!([["s1", [""]]]));
    assert_eq!(view["result"], "a scores 100");

    // Names are looked up, never opened as paths.
    let (status, _) = post(&client, &api("roles"), &json!({"game": "../Cargo"}));
    assert_eq!(status, 404);
    let (status, _) = post(
        &client,
        &api("new"),
        &json!({"game": "ticTacToe", "seats": ["human", "genius"]}),
    );
    assert_eq!(status, 400);

    // A game of ticTacToe through the API: our moves by number, the computer's by step.
    let (_, mut view) = post(
        &client,
        &api("new"),
        &json!({"game": "ticTacToe", "seats": ["human", "random"]}),
    );
    let id = view["id"].clone();
    assert_eq!(view["moves"][0].as_array().unwrap().len(), 9);
    let (status, _) = post(
        &client,
        &api("move"),
        &json!({"id": id, "role": 1, "index": 0}),
    );
    assert_eq!(status, 409, "o has no choice yet");
    while !view["terminal"].as_bool().unwrap() {
        view = if view["thinking"] == json!(true) {
            std::thread::sleep(std::time::Duration::from_millis(20));
            post(&client, &api("view"), &json!({"id": id})).1
        } else if view["waiting"].as_bool().unwrap() {
            post(&client, &api("step"), &json!({"id": id})).1
        } else {
            post(
                &client,
                &api("move"),
                &json!({"id": id, "role": 0, "index": 0}),
            )
            .1
        };
    }
    let steps = view["step"].as_u64().unwrap();
    assert!(view["result"].as_str().unwrap().contains("(x "), "{view}");
    let (_, record) = post(&client, &api("record"), &json!({"id": id}));
    assert_eq!(record["isCompleted"], true);
    assert_eq!(record["moves"].as_array().unwrap().len() as u64, steps);
    let (_, replay) = post(&client, &api("replay"), &json!({"record": record}));
    assert_eq!(replay["frames"].as_array().unwrap().len() as u64, steps + 1);
    assert_eq!(replay["goals"], view["goals"]);
    let mut broken = record.clone();
    broken["moves"][0][0] = json!("( mark 9 9 )");
    let (status, answer) = post(&client, &api("replay"), &json!({"record": broken}));
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("move 1"),
        "{answer}"
    );
}

/// Held while a test installs what the browser tests need: the two browser tests run at once,
/// and two `apt-get`s (dpkg's lock) or two `npm ci`s into one folder cannot.
fn one_install_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    INSTALL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Installs Debian's Chromium when it is missing, upgrading no package already installed.
fn ensure_chromium() -> PathBuf {
    let _installing = one_install_at_a_time();
    let chromium = PathBuf::from("/usr/bin/chromium");
    if chromium.exists() {
        return chromium;
    }
    let install = || {
        Command::new("apt-get")
            .args([
                "install",
                "-y",
                "--no-upgrade",
                "chromium",
                "chromium-driver",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        Command::new("apt-get").arg("update").status().ok();
        assert!(
            install(),
            "cannot install chromium (apt-get install chromium chromium-driver); \
             set GGP_SKIP_BROWSER=1 to skip this test"
        );
    }
    chromium
}

/// Installs playwright-core, as pinned in tests/browser, into the target folder; returns its
/// node_modules.
fn ensure_playwright() -> PathBuf {
    let _installing = one_install_at_a_time();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-deps");
    let modules = dir.join("node_modules");
    if modules.join("playwright-core/package.json").exists() {
        return modules;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let ok = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "npm ci of playwright-core failed in {}", dir.display());
    modules
}

#[test]
fn browser_plays_tic_tac_toe_by_clicking() {
    if common::env_flag("GGP_SKIP_BROWSER") {
        eprintln!("GGP_SKIP_BROWSER is set: browser test skipped");
        return;
    }
    let chromium = ensure_chromium();
    let modules = ensure_playwright();
    let server = Server::start();
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-tictactoe.png");
    std::fs::remove_file(&screenshot).ok();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/tictactoe.cjs"))
        .arg(&server.url)
        .arg(&screenshot)
        .env("NODE_PATH", &modules)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix("result: "))
        .unwrap_or_else(|| panic!("no result in\n{stdout}"));
    assert!(result.starts_with("Game over: "), "{result}");
    assert!(stdout.contains("step 0: click b2"), "{stdout}");
    assert!(stdout.contains("\nreplayed "), "{stdout}");
    assert!(
        stdout.contains("connectFour: clicked d6, red on d1"),
        "{stdout}"
    );
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "{} bytes",
        png.len()
    );
    eprintln!("{result}; screenshot in {}", screenshot.display());
}

/// Sends `head` (and `body`) on a raw connection and returns the status line and the rest.
fn raw(server: &Server, head: &str, body: &[u8]) -> String {
    use std::io::{Read, Write};
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).ok();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok();
    String::from_utf8_lossy(&answer).into_owned()
}

/// Issue 13, defect 3: a request announcing an absurd body made tiny_http allocate it, which
/// aborted `ggp web`. Every endpoint refuses it before reading, and the server stays up.
#[test]
fn huge_announced_bodies_are_refused_and_the_server_stays_up() {
    let server = Server::start();
    let client = reqwest::blocking::Client::new();
    for path in [
        "/api/upload",
        "/api/replay",
        "/api/new",
        "/api/move",
        "/api/view",
        "/",
    ] {
        let method = if path == "/" { "GET" } else { "POST" };
        let answer = raw(
            &server,
            &format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"),
            b"{\"name\":",
        );
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{method} {path}: {answer:?}"
        );
        let games = client
            .get(format!("{}api/games", server.url))
            .send()
            .unwrap_or_else(|e| panic!("the server died after {method} {path}: {e}"));
        assert_eq!(games.status().as_u16(), 200);
    }
    // A body that is announced but never comes is given up on, not waited for forever.
    let answer = raw(
        &server,
        "POST /api/view HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n",
        b"{",
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    // Chunked bodies are refused (the size must be known before reading).
    let answer = raw(
        &server,
        "POST /api/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 411"), "{answer:?}");
}

/// Issue 13, defect 5 and issue 15: while the computer thinks at `medium` about a chess
/// move, another tab's requests are answered within 100 ms, the thinking tab sees the
/// positions alpha-beta has searched so far (and the reply all it searched), and a click
/// made meanwhile is refused with a message.
#[test]
fn another_tab_is_answered_while_the_computer_thinks() {
    let server = Server::start();
    let api = |path: &str| format!("{}api/{path}", server.url);
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    let (status, other) = post(
        &client,
        &api("new"),
        &json!({"game": "ticTacToe", "seats": ["human", "human"]}),
    );
    assert_eq!(status, 200, "{other}");
    let (status, view) = post(
        &client,
        &api("new"),
        &json!({"game": "chess", "seats": ["human", "medium"]}),
    );
    assert_eq!(status, 200, "{view}");
    let id = view["id"].clone();
    let e4 = view["moves"][0]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["term"].as_str().unwrap().contains("e 2 e 4"))
        .expect("e2e4 is legal");
    let (status, view) = post(
        &client,
        &api("move"),
        &json!({"id": id, "role": 0, "index": e4, "step": 0}),
    );
    assert_eq!(status, 200, "{view}");
    // The move comes back at once; the computer thinks on its own thread.
    let stepper = if view["thinking"] == json!(true) {
        None
    } else {
        // (How the server before the fix was driven: the page asked it to step.)
        let client = client.clone();
        let url = api("step");
        let body = json!({"id": id});
        Some(std::thread::spawn(move || post(&client, &url, &body)))
    };
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let (status, answer) = post(&client, &api("view"), &json!({"id": other["id"]}));
        assert_eq!(status, 200, "{answer}");
        let response = client.get(api("games")).send().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        times.push(start.elapsed());
    }
    times.sort();
    let (status, during) = post(&client, &api("view"), &json!({"id": id}));
    assert_eq!(status, 200, "{during}");
    assert!(
        times[2] < std::time::Duration::from_millis(100),
        "another tab waited {times:?} (median over 100 ms) while the computer thought"
    );
    assert_eq!(during["thinking"], true, "{during}");
    assert_eq!(during["work"], "positions", "{during}");
    // A click while it thinks is refused with a reason, not queued.
    let (status, answer) = post(
        &client,
        &api("move"),
        &json!({"id": id, "role": 0, "index": 0, "step": 1}),
    );
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("thinking"),
        "{answer}"
    );
    // The page polls until the reply is in, seeing the positions searched so far (never
    // fewer than the answer before); the reply comes with all the search took.
    let mut seen = vec![during["searched"].as_u64().unwrap()];
    let view = loop {
        let (_, view) = post(&client, &api("view"), &json!({"id": id, "wait": 1000}));
        if view["thinking"] != json!(true) {
            break view;
        }
        assert_eq!(view["work"], "positions", "{view}");
        seen.push(view["searched"].as_u64().unwrap());
    };
    if let Some(stepper) = stepper {
        stepper.join().unwrap();
    }
    assert_eq!(view["step"], 2, "{view}");
    assert_eq!(view["work"], "positions", "{view}");
    let total = view["searched"].as_u64().unwrap();
    assert!(
        (1_000..=20_000).contains(&total),
        "medium searches 20,000 positions at most: {total}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]) && seen.iter().all(|&c| c <= total),
        "the count went down: {seen:?}, then {total}"
    );
    // A click on the position before the computer's reply is refused as stale.
    let (status, answer) = post(
        &client,
        &api("move"),
        &json!({"id": id, "role": 0, "index": 0, "step": 1}),
    );
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("move 1"),
        "{answer}"
    );
}

/// Issue 15: whole games of chess, Connect Four, Jeson Mor and Dominup (fixed and random
/// deal) played by clicking against the computer at `random` (Dominup by picking tiles from
/// the hand), each screenshot saved under target/tmp (`web-GAME-{mid,end}-WIDTH.png`, at
/// 1200 and 390 px); the page must never be wider than the window. Chess's thinking indicator
/// against `medium` (alpha-beta) counts positions. Then 20 computer steps of
/// checkers, reversi and hex of rules/ (`web-GAME-1200.png`). `GGP_SKIP_BROWSER=1` skips
/// it.
#[test]
fn browser_plays_whole_games_by_clicking_at_desktop_and_phone_width() {
    if common::env_flag("GGP_SKIP_BROWSER") {
        eprintln!("GGP_SKIP_BROWSER is set: browser test skipped");
        return;
    }
    let chromium = ensure_chromium();
    let modules = ensure_playwright();
    let server = Server::start();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/boards.cjs"))
        .arg(&server.url)
        .arg(env!("CARGO_TARGET_TMPDIR"))
        .env("NODE_PATH", &modules)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Each game's line: moves clicked, result, time and screenshots (seen with --nocapture).
    println!("{stdout}");
    for game in [
        "chess",
        "connectFour",
        "jesonMor",
        "dominupFixed",
        "dominup",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{game}:")) && l.contains("Game over")),
            "{game} did not reach its end:\n{stdout}"
        );
        for moment in ["mid", "end"] {
            for width in [1200, 390] {
                let png = Path::new(env!("CARGO_TARGET_TMPDIR"))
                    .join(format!("web-{game}-{moment}-{width}.png"));
                assert!(
                    std::fs::read(&png).is_ok_and(|b| b.starts_with(b"\x89PNG")),
                    "{}",
                    png.display()
                );
            }
        }
    }
    assert!(stdout.contains("(checkmate)"), "{stdout}");
    // The thinking indicator of alpha-beta (chess at `medium`) counts positions.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("chess-medium:") && l.contains(" positions)")),
        "{stdout}"
    );
    assert!(stdout.contains("(four in a row)"), "{stdout}");
    assert!(
        stdout.contains("moved a knight onto the centre and off it)")
            || stdout.contains("has no pieces left)"),
        "Jeson Mor's ending unnamed:\n{stdout}"
    );
    // hexPie, uploaded without a description: hexagons and the edges found from its games.
    let pie = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/games/base/hexPie.kif");
    if pie.exists() {
        assert!(stdout.contains("hexPie: step"), "{stdout}");
    }
    // Checkers, reversi and hex drawn from their display descriptions.
    for game in ["checkers", "reversi", "hex"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{game}: step"))),
            "{stdout}"
        );
    }
}

/// Issue 13: a sheet whose state term doubles each step ends, after a few moves, in an error
/// that names the engine's budget, and other sessions are answered meanwhile and after.
#[test]
fn a_sheet_whose_terms_double_ends_in_an_error_and_blocks_no_one() {
    let server = Server::start();
    let (api, client) = (server.api(), client());
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/bombs/doubling.kif"
    ))
    .unwrap();
    let (status, answer) = post(
        &client,
        &api("upload"),
        &json!({"name": "doubling", "text": text}),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, other) = post(
        &client,
        &api("new"),
        &json!({"game": "ticTacToe", "seats": ["human", "human"]}),
    );
    assert_eq!(status, 200, "{other}");
    // The session may fail as it starts (the page's first look ahead) or after some moves.
    let (status, view) = post(
        &client,
        &api("new"),
        &json!({"game": answer["game"], "seats": ["human"]}),
    );
    let mut failure = (status != 200).then_some((status, view.clone()));
    for step in 0..40 {
        if failure.is_some() {
            break;
        }
        let (status, answer) = post(
            &client,
            &api("move"),
            &json!({"id": view["id"], "role": 0, "index": 0, "step": step}),
        );
        let (other_status, _) = post(&client, &api("view"), &json!({"id": other["id"]}));
        assert_eq!(other_status, 200, "another session is answered");
        if status != 200 {
            failure = Some((status, answer));
        }
    }
    let (status, failure) = failure.expect("the game stops within 40 moves");
    assert_eq!(status, 422, "the rules' fault, not the server's: {failure}");
    assert!(
        failure["error"]
            .as_str()
            .unwrap()
            .contains("symbols in one term exceeded 100000"),
        "{failure}"
    );
    let (status, _) = post(&client, &api("view"), &json!({"id": other["id"]}));
    assert_eq!(status, 200);
}
