//! `ggp web` end to end: the JSON endpoints over HTTP, and a real headless Chromium driven by
//! playwright-core (`tests/browser/tictactoe.cjs`): a full ticTacToe game against the
//! computer by clicking, its replay, and a Connect Four disc dropped by clicking a column.
//!
//! The browser test installs what it needs on first use: Debian's `chromium` and
//! `chromium-driver` with apt-get when `/usr/bin/chromium` is missing, and playwright-core
//! (pinned in `tests/browser/package-lock.json`) with `npm ci` into the target folder.
//! Set `GGP_SKIP_BROWSER=1` to skip it on a machine where that cannot work.

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
        let mut child = Command::new(env!("CARGO_BIN_EXE_ggp"))
            .args(["web", "--port", "0", "--seed", "1"])
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
        &json!({"name": "bad.kif", "text": "(role x)\n(<= (legal x a) (not (q ?z)))"}),
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
    assert_eq!(view["facts"], json!([["s0", [""]]]));
    // Its only move is forced, so the page is told to step rather than to ask.
    assert_eq!(view["waiting"], true);
    let (_, view) = post(&client, &api("step"), &json!({"id": view["id"]}));
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
    assert_eq!(status, 400, "o has no choice yet");
    while !view["terminal"].as_bool().unwrap() {
        view = if view["waiting"].as_bool().unwrap() {
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
    assert_eq!(status, 500, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("move 1"),
        "{answer}"
    );
}

/// Installs Debian's Chromium when it is missing.
fn ensure_chromium() -> PathBuf {
    let chromium = PathBuf::from("/usr/bin/chromium");
    if chromium.exists() {
        return chromium;
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "chromium", "chromium-driver"])
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
    if std::env::var_os("GGP_SKIP_BROWSER").is_some() {
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
