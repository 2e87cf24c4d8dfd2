//! Helpers shared by the end-to-end tests: running the binary, and fake players.
#![allow(dead_code)] // each test crate uses some of them

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

/// Runs `ggp ARGS` in the crate's folder: exit code, standard output, standard error.
pub fn ggp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ggp"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fake player: answers INFO, START and STOP at once, and PLAY with `play` after `delay`
/// (an empty `play`: closes the connection without a reply).
pub fn fake_player(play: &'static str, delay: Duration) -> String {
    player_answering("ready", play, delay)
}

/// [`fake_player`], answering START with `start` instead of `ready`.
pub fn player_answering(start: &'static str, play: &'static str, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream, start, play, delay));
        }
    });
    addr
}

/// A fake player that answers its first `requests` requests at once (PLAY with `play`), then
/// dies: its port is closed.
pub fn dying_player(play: &'static str, requests: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests).flatten() {
            answer(stream, "ready", play, Duration::ZERO);
        }
    });
    addr
}

fn answer(mut stream: TcpStream, start: &str, play: &str, delay: Duration) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line.trim().is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':')
            && key.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let reply = if String::from_utf8_lossy(&body).contains("PLAY") {
        if play.is_empty() {
            // Hang up without a reply.
            return;
        }
        std::thread::sleep(delay);
        play
    } else if String::from_utf8_lossy(&body).contains("START") {
        start
    } else {
        "ready"
    };
    let _ = write!(
        stream,
        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{reply}",
        reply.len()
    );
}

/// An environment switch of the tests, the one way they are read: `true` when `name` is set to
/// anything but empty or `0`.
pub fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A number from the environment, `default` when `name` is unset; a value that is not a
/// number fails the test, naming it.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// The helpers the engine's tests share with these (`Scope`), written once there.
#[path = "../../crates/ggp-engine/tests/common/mod.rs"]
mod engine;

#[allow(unused_imports)] // as above: each test crate uses some of them
pub use engine::Scope;
