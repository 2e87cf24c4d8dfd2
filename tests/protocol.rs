//! The player server over real sockets: scripted exchanges as ggp-base and Dresden referees
//! send them, malformed messages, and the clock with slow or failing search.
//!
//! Servers run in this process on ephemeral 127.0.0.1 ports, with test session factories, so
//! that a test can give the server a deliberately slow engine or a misbehaving player.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ggp::gdl::{Description, Term, parse_term};
use ggp::machine::{MachineError, StateMachine};
use ggp::propnet::{Budget, PropnetMachine};
use ggp::protocol::{
    MatchSession, RunningServer, Server, ServerConfig, SessionError, SessionFactory, launch,
};
use ggp::search::{Choice, Player, PlayerKind, SearchConfig, SearchError, new_player};

const TIC_TAC_TOE: &str = include_str!("../rules/ticTacToe.kif");

/// How the test players behave.
#[derive(Clone, Copy, Debug)]
enum Behaviour {
    /// The built-in random player.
    Random,
    /// Sleeps 3 s in every choice, whatever the deadline.
    Sleepy,
    /// Panics in every choice.
    Panicky,
    /// The default search player on an engine that sleeps 100 ms in every step.
    SlowEngine,
    /// The random player, on an engine that takes 4 s to build (longer than the start clock).
    SlowBuild,
}

struct Factory(Behaviour);

impl SessionFactory for Factory {
    fn create(
        &self,
        description: &Description,
        role: usize,
        deadline: Instant,
    ) -> Result<MatchSession, SessionError> {
        let machine = PropnetMachine::new(description, &Budget::default())
            .map_err(|e| SessionError::Build(e.into()))?;
        let config = SearchConfig::default();
        let seeded = SearchConfig {
            seed: 1,
            ..SearchConfig::default()
        };
        Ok(match self.0 {
            Behaviour::SlowBuild => {
                std::thread::sleep(Duration::from_secs(4));
                launch(
                    machine,
                    new_player(PlayerKind::Random, &config),
                    role,
                    deadline,
                    "propnet",
                    &seeded,
                )
            }
            Behaviour::Random => launch(
                machine,
                new_player(PlayerKind::Random, &config),
                role,
                deadline,
                "propnet",
                &seeded,
            ),
            Behaviour::Sleepy => launch(
                machine,
                Box::new(Rogue(true)),
                role,
                deadline,
                "propnet",
                &seeded,
            ),
            Behaviour::Panicky => launch(
                machine,
                Box::new(Rogue(false)),
                role,
                deadline,
                "propnet",
                &seeded,
            ),
            Behaviour::SlowEngine => launch(
                Slow(machine),
                new_player(PlayerKind::Mcts, &config),
                role,
                deadline,
                "slow propnet",
                &seeded,
            ),
        })
    }

    fn stand_in(
        &self,
        description: &Description,
        role: usize,
    ) -> Result<MatchSession, SessionError> {
        Factory::random_session(description, role)
    }
}

impl Factory {
    /// The stand-in every behaviour offers: the random player on the propnet.
    fn random_session(
        description: &Description,
        role: usize,
    ) -> Result<MatchSession, SessionError> {
        let machine = PropnetMachine::new(description, &Budget::default())
            .map_err(|e| SessionError::Build(e.into()))?;
        let player = new_player(PlayerKind::Random, &SearchConfig::default());
        let seeded = SearchConfig {
            seed: 1,
            ..SearchConfig::default()
        };
        Ok(launch(
            machine,
            player,
            role,
            Instant::now(),
            "stand-in",
            &seeded,
        ))
    }
}

/// A player that sleeps past every deadline (`true`) or panics (`false`).
struct Rogue(bool);

impl<M: StateMachine> Player<M> for Rogue {
    fn name(&self) -> String {
        if self.0 { "sleepy" } else { "panicky" }.into()
    }

    fn start(&mut self, _: &mut M, _: usize, _: Instant) -> Result<(), SearchError> {
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        _: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        assert!(self.0, "a deliberately panicking player");
        std::thread::sleep(Duration::from_secs(3));
        let mv = machine.legal_moves(state, 0)?[0];
        Ok(Choice {
            mv,
            iterations: 0,
            value: None,
            proven: false,
        })
    }
}

/// An engine that takes 100 ms for every transition and legal-move query.
#[derive(Clone)]
struct Slow<M>(M);

const SLOW_STEP: Duration = Duration::from_millis(100);

impl<M: StateMachine> StateMachine for Slow<M> {
    type State = M::State;
    type Move = M::Move;

    fn roles(&self) -> &[Term] {
        self.0.roles()
    }
    fn initial_state(&self) -> Self::State {
        self.0.initial_state()
    }
    fn legal_moves_into(
        &mut self,
        state: &Self::State,
        role: usize,
        out: &mut Vec<Self::Move>,
    ) -> Result<(), MachineError> {
        std::thread::sleep(SLOW_STEP);
        self.0.legal_moves_into(state, role, out)
    }
    fn is_terminal(&mut self, state: &Self::State) -> Result<bool, MachineError> {
        self.0.is_terminal(state)
    }
    fn goal_values(&mut self, state: &Self::State, role: usize) -> Result<Vec<u8>, MachineError> {
        self.0.goal_values(state, role)
    }
    fn next_state_unchecked(
        &mut self,
        state: &Self::State,
        joint: &[Self::Move],
    ) -> Result<Self::State, MachineError> {
        std::thread::sleep(SLOW_STEP);
        self.0.next_state_unchecked(state, joint)
    }
    fn move_term(&self, mv: Self::Move) -> Term {
        self.0.move_term(mv)
    }
    fn find_move(&self, term: &Term) -> Option<Self::Move> {
        self.0.find_move(term)
    }
    fn state_terms(&self, state: &Self::State) -> Vec<Term> {
        self.0.state_terms(state)
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<Self::State, MachineError> {
        self.0.state_from_terms(facts)
    }
}

fn server(behaviour: Behaviour, margin_ms: u64) -> RunningServer {
    let config = ServerConfig {
        name: "tester".into(),
        margin: Duration::from_millis(margin_ms),
        max_body: 1 << 20,
        ..ServerConfig::default()
    };
    Server::bind("127.0.0.1:0", config, Arc::new(Factory(behaviour)))
        .unwrap()
        .spawn()
        .unwrap()
}

/// Writes `request` on a fresh connection and reads until the server closes it; the status
/// line with headers, and the body. A server that closes before reading everything (a
/// refused body) may reset the connection: what was read until then is returned.
fn exchange(addr: SocketAddr, request: &[u8]) -> (String, String) {
    exchange_with(addr, request, false)
}

/// As [`exchange`], but the client closes its side once the request is written, as one that
/// has nothing more to send. (A body whose parentheses the announced length leaves open is
/// read on until they close, the client closes, or the 10 s request deadline passes.)
fn exchange_closing(addr: SocketAddr, request: &[u8]) -> (String, String) {
    exchange_with(addr, request, true)
}

fn exchange_with(addr: SocketAddr, request: &[u8], close: bool) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = stream.write_all(request);
    if close {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
    let mut reply = Vec::new();
    if let Err(e) = stream.read_to_end(&mut reply) {
        assert_ne!(e.kind(), std::io::ErrorKind::WouldBlock, "no reply in 20 s");
    }
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (head.to_string(), body.to_string())
}

/// The request ggp-base's referee writes for `message`.
fn ggp_base_request(message: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.0\r\nAccept: text/delim\r\nHost: 127.0.0.1\r\nSender: GAMESERVER\r\n\
         Receiver: tester\r\nContent-Type: text/acl\r\nContent-Length: {}\r\n\r\n{message}",
        message.len()
    )
    .into_bytes()
}

/// Sends one message as ggp-base does; the reply body.
fn send(addr: SocketAddr, message: &str) -> String {
    let (head, body) = exchange(addr, &ggp_base_request(message));
    assert!(head.starts_with("HTTP/1.0 200 OK"), "{head}");
    body
}

fn info(addr: SocketAddr) -> String {
    send(addr, "( INFO )")
}

/// A START for tic-tac-toe as ggp-base sends it (rules re-rendered on one line).
fn start_message(id: &str, role: &str, start_clock: u32, play_clock: u32) -> String {
    let rules: Vec<String> = ggp::kif::parse(TIC_TAC_TOE)
        .unwrap()
        .iter()
        .map(ggp::protocol::message::spaced)
        .collect();
    format!(
        "( START {id} {role} ({} ) {start_clock} {play_clock})",
        rules.join(" ")
    )
}

#[test]
fn a_scripted_ggp_base_match_gets_legal_moves_and_well_formed_replies() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let (head, body) = exchange(addr, &ggp_base_request("( INFO )"));
    assert_eq!(body, "((name tester) (status available))");
    for header in [
        "Content-Type: text/acl",
        &format!("Content-Length: {}", body.len()),
        "Access-Control-Allow-Origin: *",
        "Connection: close",
    ] {
        assert!(head.contains(header), "{header} missing from {head}");
    }
    assert_eq!(send(addr, &start_message("t.1", "o", 5, 2)), "ready");
    assert_eq!(info(addr), "((name tester) (status busy))");
    assert_eq!(send(addr, "( PLAY t.1 NIL )"), "noop");
    let mut desc =
        ggp::datalog::DatalogMachine::new(&Description::from_text(TIC_TAC_TOE).unwrap()).unwrap();
    let mut state = desc.initial_state();
    let x_move = desc.legal_moves(&state, 0).unwrap()[4];
    let x_text = ggp::protocol::message::spaced(&ggp::protocol::message::term_to_sexp(
        &desc.move_term(x_move),
    ));
    let noop = desc.find_move(&parse_term("noop").unwrap()).unwrap();
    state = desc.next_state(&state, &[x_move, noop]).unwrap();
    let reply = send(addr, &format!("( PLAY t.1 ({x_text} noop ) )"));
    let ours = desc.find_move(&parse_term(&reply).unwrap()).unwrap();
    assert!(
        desc.legal_moves(&state, 1).unwrap().contains(&ours),
        "{reply}"
    );
    assert_eq!(send(addr, &format!("( STOP t.1 (noop {reply} ) )")), "done");
    assert_eq!(info(addr), "((name tester) (status available))");
}

/// The bytes ggp-base's referee writes for `message` (`HttpRequest.issueRequest` calls
/// `HttpWriter.writeAsClient`): `PrintWriter.println` lines, ended by the JVM's line separator
/// (`eol`: `\n` on Linux, `\r\n` on Windows), `Content-Length` the message's `String.length()`
/// (UTF-16 code units, not bytes), then the message in the JVM's default charset (UTF-8).
fn ggp_base_referee_bytes(message: &str, eol: &str) -> Vec<u8> {
    let length = message.encode_utf16().count();
    let mut request = String::new();
    for line in [
        "POST / HTTP/1.0",
        "Accept: text/delim",
        "Host: localhost",
        "Sender: GAMESERVER",
        "Receiver: tester",
        "Content-Type: text/acl",
        &format!("Content-Length: {length}"),
        "",
    ] {
        request.push_str(line);
        request.push_str(eol);
    }
    request.push_str(message);
    request.into_bytes()
}

/// A rule sheet saved with a UTF-8 byte-order mark, read by ggp-base's referee as Latin-1:
/// the mark became the symbol `ï»¿`, the first rule of the START, re-sent in UTF-8 under a
/// `Content-Length` that counts its three chars, not its six bytes. The player reads on to
/// the `)` that closes the message (the referee keeps the connection open for the reply),
/// answers `ready`, and plays.
#[test]
fn a_start_longer_in_bytes_than_its_java_char_count_is_read_whole() {
    use ggp::protocol::message::spaced;
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let game = Description::from_text(TIC_TAC_TOE).unwrap();
    let mut machine = PropnetMachine::new(&game, &Budget::default()).unwrap();
    let initial = machine.initial_state();
    let rules: Vec<String> = std::iter::once("\u{ef}\u{bb}\u{bf}".to_string())
        .chain(ggp::kif::parse(TIC_TAC_TOE).unwrap().iter().map(spaced))
        .collect();
    for (id, eol) in [("bom.1", "\n"), ("bom.2", "\r\n")] {
        let start = format!("( START {id} x ({} ) 5 2)", rules.join(" "));
        assert_eq!(start.len(), start.encode_utf16().count() + 3);
        let sent = Instant::now();
        let (head, body) = exchange(addr, &ggp_base_referee_bytes(&start, eol));
        assert!(
            head.starts_with("HTTP/1.0 200 OK"),
            "{eol:?}: {head} {body}"
        );
        assert_eq!(body, "ready", "{eol:?}");
        // Answered as soon as the message was whole, not at the request deadline (10 s).
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "{:?}",
            sent.elapsed()
        );
        let play = format!("( PLAY {id} NIL )");
        let (head, reply) = exchange(addr, &ggp_base_referee_bytes(&play, eol));
        assert!(head.starts_with("HTTP/1.0 200 OK"), "{eol:?}: {head}");
        let ours = machine
            .find_move(&parse_term(&reply).unwrap())
            .unwrap_or_else(|| panic!("{eol:?}: not a move: {reply}"));
        assert!(
            machine.legal_moves(&initial, 0).unwrap().contains(&ours),
            "{eol:?}: {reply}"
        );
        let abort = format!("( ABORT {id} )");
        assert_eq!(
            exchange(addr, &ggp_base_referee_bytes(&abort, eol)).1,
            "aborted"
        );
    }
}

#[test]
fn get_options_and_other_methods_are_answered() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let (head, body) = exchange(addr, b"GET /%28%20INFO%20%29 HTTP/1.0\r\n\r\n");
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert_eq!(body, "((name tester) (status available))");
    let (head, body) = exchange(
        addr,
        b"OPTIONS / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccess-Control-Request-Method: POST\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Access-Control-Allow-Methods: POST, GET, OPTIONS"));
    assert!(head.contains("Content-Length: 0"));
    assert_eq!(body, "");
    let (head, _) = exchange(addr, b"DELETE / HTTP/1.0\r\n\r\n");
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
}

#[test]
fn malformed_messages_get_a_reply_and_the_server_keeps_answering() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let available = "((name tester) (status available))";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", ggp_base_request("%$#@! not a message")),
        (
            "truncated",
            ggp_base_request("( START m x (( role x ) ( init"),
        ),
        ("unknown message", ggp_base_request("( DANCE m )")),
        ("PLAY before START", ggp_base_request("( PLAY nobody NIL )")),
        ("STOP of no match", ggp_base_request("( STOP nobody NIL )")),
        ("ABORT of no match", ggp_base_request("( ABORT nobody )")),
        (
            "bad clock",
            ggp_base_request("( START m x (( role x )) soon 1)"),
        ),
        (
            "not a game",
            ggp_base_request("( START m x (( init p )) 5 1)"),
        ),
        ("empty body", ggp_base_request("")),
        ("binary", {
            let mut r = b"POST / HTTP/1.0\r\nContent-Length: 4\r\n\r\n".to_vec();
            r.extend([0xff, 0xfe, 0x00, 0x28]);
            r
        }),
        ("bad HTTP", b"NONSENSE\r\n\r\n".to_vec()),
        ("deep nesting", ggp_base_request(&"(".repeat(100_000))),
    ];
    for (what, request) in cases {
        // These bodies leave a parenthesis open: their clients close their side, or the
        // server would wait for the rest until the request deadline.
        let (head, body) = if matches!(what, "truncated" | "binary" | "deep nesting") {
            exchange_closing(addr, &request)
        } else {
            exchange(addr, &request)
        };
        // A reply (error or `busy`), or a clean close.
        assert!(
            head.is_empty() || head.starts_with("HTTP/1."),
            "{what}: {head}"
        );
        if what.contains("no match") || what.starts_with("PLAY") {
            assert_eq!(body, "busy", "{what}");
        }
        if what == "not a game" {
            assert!(head.starts_with("HTTP/1.0 400"), "{what}: {head}");
            assert!(body.contains("not a valid game"), "{what}: {body}");
        }
        assert_eq!(info(addr), available, "after {what}");
    }
    // A few clients that stall in the middle of a body hold nothing the others need. (Each
    // holds one of tiny_http's connection threads while its body is awaited; tiny_http 0.12
    // has no read timeout, and a burst of many such clients can strand later connections in
    // its task queue until another one arrives.)
    let stalled: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream
                .write_all(b"POST / HTTP/1.0\r\nContent-Length: 2000\r\n\r\n( START m")
                .unwrap();
            stream
        })
        .collect();
    assert_eq!(info(addr), available, "with stalled clients");
    drop(stalled);
    // Ten megabytes, over the 1 MB limit: refused, whether announced or chunked.
    let big = "x".repeat(10 << 20);
    let (head, _) = exchange(addr, &ggp_base_request(&big));
    assert!(head.starts_with("HTTP/1.0 413"), "{head}");
    let mut chunked =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for _ in 0..10 {
        chunked.extend(format!("{:x}\r\n", 1 << 20).as_bytes());
        chunked.extend(std::iter::repeat_n(b'y', 1 << 20));
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let (head, _) = exchange(addr, &chunked);
    assert!(
        head.is_empty() || head.starts_with("HTTP/1.1 413"),
        "{head}"
    );
    assert_eq!(info(addr), available);
}

/// tiny_http skips an unread body by allocating its announced size, which aborts the process
/// when the size is absurd; this test runs the binary so that such an abort shows as a dead
/// child rather than killing the test run.
#[test]
fn the_binary_survives_an_absurd_content_length() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ggp"))
        .args([
            "serve",
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            "--player",
            "random",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut child = Killed(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let addr: SocketAddr = line
        .trim()
        .trim_start_matches("listening on ")
        .parse()
        .unwrap();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"POST / HTTP/1.0\r\nContent-Length: 4611686018427387904\r\n\r\n(INFO)")
        .unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    // The abort, when it happens, may come a little after the connection closes.
    std::thread::sleep(Duration::from_millis(500));
    let running = matches!(child.0.try_wait(), Ok(None));
    let answered = running && info(addr).contains("available");
    assert!(reply.starts_with("HTTP/1.0 413"), "{reply}");
    assert!(running && answered);
}

#[test]
fn one_match_at_a_time_and_other_ids_are_busy() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    assert_eq!(send(addr, &start_message("a.1", "x", 5, 2)), "ready");
    assert_eq!(send(addr, &start_message("b.1", "x", 5, 2)), "busy");
    // A repeated START of the current match is harmless.
    assert_eq!(send(addr, &start_message("a.1", "x", 5, 2)), "ready");
    assert_eq!(send(addr, "( PLAY b.1 NIL )"), "busy");
    assert_eq!(send(addr, "( STOP b.1 NIL )"), "busy");
    let first = send(addr, "( PLAY a.1 NIL )");
    assert!(first.starts_with("(mark "), "{first}");
    // A joint move that is not legal is refused with `nil`; the match goes on.
    assert_eq!(send(addr, "( PLAY a.1 (noop noop ) )"), "nil");
    assert_eq!(send(addr, "( ABORT a.1 )"), "aborted");
    assert_eq!(send(addr, "( ABORT a.1 )"), "busy");
    assert_eq!(send(addr, &start_message("b.1", "o", 5, 2)), "ready");
    assert_eq!(send(addr, "( PLAY b.1 NIL )"), "noop");
    assert_eq!(send(addr, "( PING )"), "ready");
    assert_eq!(send(addr, "( PREVIEW (( role x ) ) 10 )"), "ready");
}

#[test]
fn an_uppercased_dresden_match_is_answered_in_upper_case() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let rules: Vec<String> = ggp::kif::parse(TIC_TAC_TOE)
        .unwrap()
        .iter()
        .map(|r| r.to_string())
        .collect();
    let start = format!("(START D.1 X ({}) 5 2)", rules.join(" ")).to_uppercase();
    // Dresden sends no Host header and reads until the connection closes.
    let request = |message: &str| {
        format!(
            "POST / HTTP/1.0\r\nAccept: text/delim\r\nSender: Gamecontroller\r\nReceiver: t\r\n\
             Content-type: text/acl\r\nContent-length: {}\r\n\r\n{message}",
            message.len()
        )
    };
    assert_eq!(exchange(addr, request(&start).as_bytes()).1, "ready");
    let (_, first) = exchange(addr, request("(PLAY D.1 NIL)").as_bytes());
    assert!(first.starts_with("(MARK "), "{first}");
    let (_, second) = exchange(
        addr,
        request(&format!("(PLAY D.1 ({first} NOOP))")).as_bytes(),
    );
    assert_eq!(second, "NOOP");
    let (_, done) = exchange(addr, request("(STOP D.1 (NOOP (MARK 1 1)))").as_bytes());
    assert_eq!(done, "done");
}

/// Plays the first moves of tic-tac-toe as x against `behaviour`, which plays o (after the
/// first turn) or x; every reply must be legal and arrive within the play clock.
fn moves_arrive_in_time(behaviour: Behaviour, role: &str, plays: usize) {
    let play_clock = Duration::from_secs(1);
    let server = server(behaviour, 250);
    let addr = server.addr();
    assert_eq!(send(addr, &start_message("c.1", role, 3, 1)), "ready");
    let description = Description::from_text(TIC_TAC_TOE).unwrap();
    let mut machine = PropnetMachine::new(&description, &Budget::default()).unwrap();
    let me = usize::from(role == "o");
    let mut state = machine.initial_state();
    let mut last: Option<String> = None;
    for step in 0..plays {
        let message = match &last {
            None => "( PLAY c.1 NIL )".to_string(),
            Some(joint) => format!("( PLAY c.1 ({joint} ) )"),
        };
        let sent = Instant::now();
        let reply = send(addr, &message);
        let took = sent.elapsed();
        assert!(took < play_clock, "{behaviour:?} step {step}: {took:?}");
        let ours = machine
            .find_move(&parse_term(&reply).unwrap())
            .unwrap_or_else(|| panic!("{behaviour:?}: unknown move {reply}"));
        assert!(machine.legal_moves(&state, me).unwrap().contains(&ours));
        let theirs = machine.legal_moves(&state, 1 - me).unwrap()[0];
        let mut joint = [ours, theirs];
        if me == 1 {
            joint.swap(0, 1);
        }
        state = machine.next_state(&state, &joint).unwrap();
        let texts: Vec<String> = joint
            .iter()
            .map(|&m| machine.move_term(m).to_string())
            .collect();
        last = Some(texts.join(" "));
    }
    assert_eq!(send(addr, "( ABORT c.1 )"), "aborted");
    assert_eq!(info(addr), "((name tester) (status available))");
}

#[test]
fn info_is_answered_while_a_move_is_being_chosen() {
    let server = server(Behaviour::Sleepy, 250);
    let addr = server.addr();
    assert_eq!(send(addr, &start_message("i.1", "x", 3, 1)), "ready");
    let play = std::thread::spawn(move || send(addr, "( PLAY i.1 NIL )"));
    std::thread::sleep(Duration::from_millis(100));
    let asked = Instant::now();
    assert_eq!(info(addr), "((name tester) (status busy))");
    assert!(
        asked.elapsed() < Duration::from_millis(300),
        "{:?}",
        asked.elapsed()
    );
    assert!(play.join().unwrap().starts_with("(mark "));
}

#[test]
fn a_sleeping_search_still_answers_within_the_play_clock() {
    moves_arrive_in_time(Behaviour::Sleepy, "x", 3);
}

#[test]
fn a_panicking_search_still_answers_legal_moves() {
    moves_arrive_in_time(Behaviour::Panicky, "x", 3);
}

/// Issue 25: an engine still being built when the start clock ends (grounding a large game
/// on a loaded machine) leaves a stand-in to answer the PLAYs with legal moves, not `nil`,
/// until it is ready; then the engine, having followed every joint move, answers.
#[test]
fn an_engine_not_ready_by_the_start_clock_leaves_a_stand_in_to_answer() {
    moves_arrive_in_time(Behaviour::SlowBuild, "x", 5);
}

#[test]
fn a_slow_engine_still_answers_within_the_play_clock() {
    moves_arrive_in_time(Behaviour::SlowEngine, "o", 4);
}

#[test]
fn a_start_that_cannot_be_played_is_refused_with_its_reason() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    let (head, body) = exchange(
        addr,
        &ggp_base_request(&start_message("r.1", "purple", 5, 2)),
    );
    assert!(head.starts_with("HTTP/1.0 400"), "{head}");
    assert_eq!(body, "error: purple is not a role of the game");
    let (head, body) = exchange(
        addr,
        &ggp_base_request(
            "( START r.2 x (( role x ) ( <= ( p ?y ) ( q ?y ) ( not ( r ?z ) ) )) 5 2)",
        ),
    );
    assert!(head.starts_with("HTTP/1.0 400"), "{head}");
    assert!(
        body.starts_with("error: the rules are not a valid game: "),
        "{body}"
    );
    // Neither took the server.
    assert_eq!(info(addr), "((name tester) (status available))");
}

/// Issue 25: a sheet that does not validate, but that an engine takes as it stands, is played
/// rather than forfeited: START is answered `ready` and each PLAY with a legal move.
#[test]
fn a_start_whose_rules_do_not_validate_is_still_played_as_they_stand() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    // Tic-tac-toe with a rule that breaks GDL's recursion restriction (never used).
    let start = start_message("bad.1", "x", 5, 2).replace(
        "( role x )",
        "( role x ) ( <= ( num ( s ?n ) ) ( num ?n ) )",
    );
    assert!(start.contains("( num ( s ?n ) )"), "{start}");
    let (head, body) = exchange(addr, &ggp_base_request(&start));
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert_eq!(body, "ready");
    let (_, mv) = exchange(addr, &ggp_base_request("( PLAY bad.1 NIL )"));
    assert!(
        mv.starts_with("( mark ") || mv.starts_with("(mark "),
        "{mv}"
    );
    let (_, done) = exchange(addr, &ggp_base_request("( ABORT bad.1 )"));
    assert_eq!(done, "aborted");
}

#[test]
fn foreign_messages_mid_match_never_disturb_it() {
    let server = server(Behaviour::Random, 300);
    let addr = server.addr();
    assert_eq!(send(addr, &start_message("f.1", "x", 5, 2)), "ready");
    let foreign: Vec<(Vec<u8>, bool)> = [
        "(INFO)\u{b}",
        "(INFO)\u{c}",
        "\u{a0}(INFO)",
        "(INFO)\u{85}",
        "(INFO)\u{2028}\u{2029}\u{3000}",
        "(PLAY f.2 NIL)",
        "(ABORT other)",
        "(START g.1 x ((role x)) 5 2)",
        "(PLAY f.1 \u{0})",
        "(\u{1b}[31m)",
    ]
    .iter()
    .map(|m| (ggp_base_request(m), false))
    .chain([
        // An open parenthesis: the client closes rather than have the server wait for more.
        (
            b"POST / HTTP/1.0\r\nContent-Length: 3\r\n\r\n\xff\xfe(".to_vec(),
            true,
        ),
        (
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
            false,
        ),
    ])
    .collect();
    for (request, close) in &foreign {
        let (head, body) = exchange_with(addr, request, *close);
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.0 400"),
            "{head} {body}"
        );
        assert!(!head.contains(" 500 "), "{head} {body}");
    }
    // The referee's match goes on.
    assert_eq!(info(addr), "((name tester) (status busy))");
    let reply = send(addr, "( PLAY f.1 NIL )");
    assert_ne!(reply, "busy");
    parse_term(&reply).unwrap();
    assert_eq!(send(addr, "( ABORT f.1 )"), "aborted");
}

/// Starts `ggp serve` under `ulimit -n` (a shell runs it); the child and its address.
fn serve_binary_with_fd_limit(limit: u32) -> (Killed, SocketAddr) {
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            &format!(
                "ulimit -n {limit} && exec \"$0\" serve --port 0 --bind 127.0.0.1 --player random --engine datalog"
            ),
            env!("CARGO_BIN_EXE_ggp"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // From here on the child is killed however the test ends.
    let child = Killed(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let addr = line
        .trim()
        .trim_start_matches("listening on ")
        .parse()
        .unwrap();
    (child, addr)
}

/// A child process killed when dropped, so that a failing test leaves no server behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The smaller version of `bench/hostile.py`: many more idle, dribbling, huge and garbage
/// connections than the process has descriptors for; INFO is still answered and a whole match
/// played. (The descriptors would run out at about 120 idle connections with tiny_http.)
#[test]
fn the_binary_keeps_answering_under_more_connections_than_descriptors() {
    let (mut child, addr) = serve_binary_with_fd_limit(128);
    let mut hostile: Vec<TcpStream> = Vec::new();
    for i in 0..300 {
        let Ok(mut stream) = TcpStream::connect(addr) else {
            continue;
        };
        let _ = match i % 4 {
            0 => Ok(()),
            1 => stream.write_all(b"POST / HTTP/1.0\r\nContent-Le"),
            2 => stream.write_all(b"POST / HTTP/1.0\r\nContent-Length: 99999999999\r\n\r\n(I"),
            _ => stream.write_all(b"\x00\x01garbage\xff\r\n\r\n"),
        };
        hostile.push(stream);
    }
    // The first INFO after the flood is answered. (It used to be reset about one run in five:
    // the server duplicated each socket to be able to close it, and with no descriptor left
    // for the duplicate it dropped the connection unread.)
    let (head, body) = exchange(addr, &ggp_base_request("( INFO )"));
    assert!(head.starts_with("HTTP/1.0 200 OK"), "{head}");
    assert_eq!(body, "((name ggp) (status available))");
    play_a_whole_match(addr, "h.1");
    drop(hostile);
    assert!(
        matches!(child.0.try_wait(), Ok(None)),
        "the server is running"
    );
}

/// Plays tic-tac-toe as the referee, the player being x and o always taking its first legal
/// move, to the end: every reply must be legal, and STOP is answered `done`.
fn play_a_whole_match(addr: SocketAddr, id: &str) {
    use ggp::protocol::message::{spaced, term_to_sexp};
    let mut game =
        ggp::datalog::DatalogMachine::new(&Description::from_text(TIC_TAC_TOE).unwrap()).unwrap();
    assert_eq!(send(addr, &start_message(id, "x", 10, 3)), "ready");
    let mut state = game.initial_state();
    let mut last = "NIL".to_string();
    loop {
        let reply = send(addr, &format!("( PLAY {id} {last} )"));
        let ours = game
            .find_move(&parse_term(&reply).unwrap())
            .unwrap_or_else(|| panic!("not a move: {reply}"));
        assert!(
            game.legal_moves(&state, 0).unwrap().contains(&ours),
            "{reply}"
        );
        let theirs = game.legal_moves(&state, 1).unwrap()[0];
        let joint = [ours, theirs];
        last = format!(
            "( {} {} )",
            spaced(&term_to_sexp(&game.move_term(ours))),
            spaced(&term_to_sexp(&game.move_term(theirs)))
        );
        state = game.next_state(&state, &joint).unwrap();
        if game.is_terminal(&state).unwrap() {
            break;
        }
    }
    assert_eq!(send(addr, &format!("( STOP {id} {last} )")), "done");
}
