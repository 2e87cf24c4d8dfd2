//! ggp-base's `Content-Length` quirk: a body read on past its announced length while its KIF
//! parentheses are open.
//!
//! ggp-base's referee announces the body's length in Java chars (`String.length()`) and then
//! writes it in UTF-8, so a message with non-ASCII symbols has more bytes than announced. No
//! server crate reads past `Content-Length` (the bytes after it would be the next request),
//! which is one reason the HTTP layer is written by hand. The servers that take KIF bodies
//! turn this on with [`super::Config::kif_bodies`].

use std::net::TcpStream;
use std::time::Instant;

use tracing::{debug, info};

use super::read;

/// Where the parentheses of a KIF text stand: how many are open, and whether a `;` comment
/// runs to the end of the line. KIF has no strings, and the bytes of a UTF-8 sequence are
/// never ASCII, so bytes can be scanned as they arrive.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Balance {
    open: usize,
    comment: bool,
}

impl Balance {
    /// Reads `bytes` on; where the last open parenthesis closes in them (the index after it),
    /// if it does. A `)` with nothing open is left to the parser.
    fn feed(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'\n' => self.comment = false,
                _ if self.comment => {}
                b';' => self.comment = true,
                b'(' => self.open += 1,
                b')' if self.open > 0 => {
                    self.open -= 1;
                    if self.open == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// The body framed by `Content-Length: n`, its first bytes (at least `n`) being `buf`.
///
/// ggp-base's referee announces the body's length in Java chars (`String.length()`) and then
/// writes it in UTF-8, so a message with non-ASCII symbols (a byte-order mark read as the
/// three Latin-1 chars `ï»¿`) has more bytes than announced. When the announced bytes leave a
/// parenthesis open, the body goes on as far as the one that closes it, read from the
/// connection if need be, until it balances, the client closes, `max` bytes have come or
/// the deadline passes; what has arrived then is the body (the parser judges it). A body
/// that balances is exactly the announced bytes and waits for nothing more: the referee
/// keeps its connection open for the reply.
pub(super) fn complete_unbalanced(
    stream: &TcpStream,
    mut buf: Vec<u8>,
    n: usize,
    max: usize,
    deadline: Instant,
) -> Vec<u8> {
    let mut balance = Balance::default();
    let mut at = 0;
    while let Some(end) = balance.feed(&buf[at..n]) {
        at += end;
    }
    if balance.open == 0 {
        buf.truncate(n);
        return buf;
    }
    let mut scanned = n;
    loop {
        let upto = buf.len().min(max);
        if let Some(end) = balance.feed(&buf[scanned..upto]) {
            buf.truncate(scanned + end);
            info!(
                "the body runs {} bytes past its Content-Length of {n} to close its parentheses",
                buf.len() - n
            );
            return buf;
        }
        if upto == max {
            buf.truncate(max);
            debug!("the body is still unbalanced at {max} bytes: it is cut there");
            return buf;
        }
        scanned = upto;
        match read::fill(stream, &mut buf, deadline, "1.0") {
            Ok(0) => {
                debug!("the body's parentheses are unbalanced and the client closed");
                return buf;
            }
            Ok(_) => {}
            Err(why) => {
                debug!("the body's parentheses are still unbalanced when reading stops: {why:?}");
                return buf;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{Shutdown, TcpListener};
    use std::time::Duration;

    use super::*;
    use crate::http::Config;
    use crate::http::read::read_request;

    #[test]
    fn parentheses_are_counted_outside_comments() {
        let mut b = Balance::default();
        assert_eq!(b.feed(b"( a ; ) ) ( comment\n ( b )"), None);
        assert_eq!(b.open, 1);
        assert_eq!(b.feed(b" ) ) junk"), Some(2));
        let mut b = Balance::default();
        assert_eq!(b.feed(b") x"), None, "a stray `)` is the parser's business");
        assert_eq!(b, Balance::default());
        let mut b = Balance::default();
        assert_eq!(b.feed(b"; ( \r\n(\xc3\xaf)"), Some(10));
    }

    /// A client connected to a listener, and the server's side of the connection.
    fn connected() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (client, listener.accept().unwrap().0)
    }

    /// Reads a request within `timeout` and `max_body`; its body as text (lossily), and how
    /// long the reading took.
    fn body_read(server: &TcpStream, timeout: Duration, max_body: usize) -> (String, Duration) {
        let config = Config {
            request_timeout: timeout,
            kif_bodies: true,
            ..Config::default()
        };
        let accepted = Instant::now();
        let request = read_request(server, &config, |_, _| max_body, accepted).unwrap();
        (
            String::from_utf8_lossy(&request.body).into_owned(),
            accepted.elapsed(),
        )
    }

    fn post(length: usize, body: &str) -> Vec<u8> {
        format!("POST / HTTP/1.0\nContent-Length: {length}\n\n{body}").into_bytes()
    }

    /// ggp-base announces the body in Java chars and writes it in UTF-8: each of the three
    /// chars of a mangled byte-order mark is two bytes.
    const START: &str = "( START m x (\u{ef}\u{bb}\u{bf} ( role x ) ) 5 3)";

    #[test]
    fn a_balanced_body_is_the_announced_bytes_and_waits_for_nothing() {
        let (mut client, server) = connected();
        // The connection stays open, as the referee's does while it waits for the reply.
        client.write_all(&post(8, "( INFO )( PLAY")).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, "( INFO )");
        assert!(took < Duration::from_secs(1), "{took:?}");
        // Non-ASCII bytes in a balanced body are announced bytes like any other.
        let (mut client, server) = connected();
        client.write_all(&post(4, "(\u{ef})\u{bb}")).unwrap();
        assert_eq!(
            body_read(&server, Duration::from_secs(5), 1000).0,
            "(\u{ef})"
        );
        drop(client);
    }

    #[test]
    fn an_unbalanced_body_is_completed_from_the_stream() {
        let chars = START.chars().count();
        assert_eq!(START.len(), chars + 3);
        // All of it at once, as ggp-base writes it; anything after the last `)` is not read.
        let (mut client, server) = connected();
        client
            .write_all(&post(chars, &format!("{START}(extra")))
            .unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, START);
        assert!(took < Duration::from_secs(1), "{took:?}");
        // The rest in a later packet.
        let (mut client, server) = connected();
        let (first, rest) = START.split_at(chars);
        client.write_all(&post(chars, first)).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            client.write_all(rest.as_bytes()).unwrap();
            client
        });
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, START);
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(writer.join());
    }

    #[test]
    fn an_unbalanced_body_whose_client_closes_is_what_arrived() {
        let (mut client, server) = connected();
        client.write_all(&post(9, "( START m x")).unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 1000);
        assert_eq!(body, "( START m x");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn a_body_that_never_balances_is_cut_at_the_deadline_or_the_size_limit() {
        // A client that keeps dribbling open parentheses: the deadline ends the body.
        let (mut client, server) = connected();
        client.write_all(&post(2, "((")).unwrap();
        let dribbler = std::thread::spawn(move || {
            while client.write_all(b"(").is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let (body, took) = body_read(&server, Duration::from_millis(300), 1000);
        assert!(body.len() > 2 && body.bytes().all(|b| b == b'('), "{body}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(server);
        dribbler.join().unwrap();
        // One that sends more than the limit: the body is cut there.
        let (mut client, server) = connected();
        client.write_all(&post(1, &"(".repeat(5000))).unwrap();
        let (body, took) = body_read(&server, Duration::from_secs(5), 100);
        assert_eq!(body, "(".repeat(100));
        assert!(took < Duration::from_secs(1), "{took:?}");
        drop(client);
    }
}
