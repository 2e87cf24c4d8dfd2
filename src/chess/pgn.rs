//! Reading PGN files: games with their tags and main-line moves.
//!
//! The games are parsed by `pgn-reader`, which reads comments, variations (skipped: only the
//! main line is replayed), NAGs and tags. `pgn-reader` is lenient: it silently drops tokens it
//! cannot read (`Qc3w`, `Nf9`, stray words), which would make a broken record look valid. So
//! the text is first split into games the same way `pgn-reader` splits it (a game's movetext
//! ends at a blank line or a line starting with `[`), and every token of each game is checked
//! here; each game is then read by `pgn-reader` from its own slice, so a problem always
//! belongs to the right game. Two non-standard habits are accepted and rewritten before
//! `pgn-reader` reads the game: an en passant capture with `ep` run into it (`exf6ep` is read
//! as `exf6`), and a promotion without `=` (`h1Q` is read as `h1=Q`).

use std::ops::ControlFlow;

use pgn_reader::{RawTag, Reader, SanPlus, Visitor};

/// One game of a PGN file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgnGame {
    /// The game's number in its file, from 1.
    pub number: usize,
    /// The line where the game starts, from 1.
    pub line: usize,
    /// The tags, in order.
    pub tags: Vec<(String, String)>,
    /// The main line.
    pub moves: Vec<SanPlus>,
    /// The first thing in the game's text that is not valid PGN, with its line and column.
    pub problem: Option<String>,
    /// Tokens written with an accepted habit and read in standard form.
    pub rewritten: usize,
}

impl PgnGame {
    /// The value of a tag.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every game of a PGN text.
pub fn read_games(text: &[u8]) -> Vec<PgnGame> {
    let mut games = Vec::new();
    for chunk in split(text) {
        let mut slice = Vec::with_capacity(chunk.end - chunk.start);
        let mut from = chunk.start;
        for (range, replacement) in &chunk.edits {
            slice.extend_from_slice(&text[from..range.start]);
            slice.extend_from_slice(replacement);
            from = range.end;
        }
        slice.extend_from_slice(&text[from..chunk.end]);
        let mut reader = Reader::new(&slice[..]);
        let mut collector = Collector;
        let mut first = true;
        loop {
            let (tags, moves, error) = match reader.read_game(&mut collector) {
                Ok(Some((tags, moves))) => (tags, moves, None),
                Ok(None) => break,
                Err(e) => (Vec::new(), Vec::new(), Some(e.to_string())),
            };
            let problem = if first {
                chunk.problem.clone().or(error.clone())
            } else {
                error.clone()
            };
            let first_game = first;
            first = false;
            games.push(PgnGame {
                number: games.len() + 1,
                line: chunk.line,
                tags,
                moves,
                problem,
                rewritten: if first_game { chunk.edits.len() } else { 0 },
            });
            if error.is_some() {
                break;
            }
        }
    }
    games
}

/// A `pgn-reader` visitor that keeps the tags and the main line.
struct Collector;

type Tags = Vec<(String, String)>;

impl Visitor for Collector {
    type Tags = Tags;
    type Movetext = (Tags, Vec<SanPlus>);
    type Output = (Tags, Vec<SanPlus>);

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(Vec::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        tags.push((
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        ));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        ControlFlow::Continue((tags, Vec::new()))
    }

    fn san(
        &mut self,
        movetext: &mut Self::Movetext,
        san_plus: SanPlus,
    ) -> ControlFlow<Self::Output> {
        movetext.1.push(san_plus);
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, movetext: Self::Movetext) -> Self::Output {
        movetext
    }
}

/// A game's slice of the text, the first problem found in it, and the tokens to rewrite.
#[derive(Debug)]
struct Chunk {
    start: usize,
    end: usize,
    line: usize,
    problem: Option<String>,
    edits: Vec<(std::ops::Range<usize>, Vec<u8>)>,
}

/// Splits `text` into games, checking every token.
fn split(text: &[u8]) -> Vec<Chunk> {
    let mut s = Scanner {
        text,
        pos: 0,
        mark: std::cell::Cell::new((0, 1)),
        edits: Vec::new(),
    };
    if text.starts_with(b"\xef\xbb\xbf") {
        s.pos = 3;
    }
    let mut chunks = Vec::new();
    loop {
        s.skip_blank(true);
        if s.at_end() {
            break;
        }
        let start = s.pos;
        let line = s.line_col(start).0;
        let mut problem = None;
        s.tags(&mut problem);
        s.movetext(&mut problem);
        chunks.push(Chunk {
            start,
            end: s.pos,
            line,
            problem,
            edits: std::mem::take(&mut s.edits),
        });
    }
    chunks
}

struct Scanner<'a> {
    text: &'a [u8],
    pos: usize,
    /// A known line start: (byte offset, line number), to count lines from.
    mark: std::cell::Cell<(usize, usize)>,
    /// Byte ranges to read as blanks.
    edits: Vec<(std::ops::Range<usize>, Vec<u8>)>,
}

/// The bytes that end a token, as in `pgn-reader`.
fn is_token_end(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | b'{'
            | b'}'
            | b'('
            | b')'
            | b'!'
            | b'?'
            | b'$'
            | b';'
            | b'.'
            | b'*'
    )
}

impl<'a> Scanner<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.pos + ahead).copied()
    }

    fn line_col(&self, at: usize) -> (usize, usize) {
        let at = at.min(self.text.len());
        let (mut from, mut line) = self.mark.get();
        if at < from {
            (from, line) = (0, 1);
        }
        let mut line_start = from;
        for (i, &b) in self.text[from..at].iter().enumerate() {
            if b == b'\n' {
                line += 1;
                line_start = from + i + 1;
            }
        }
        self.mark.set((line_start, line));
        (line, at - line_start + 1)
    }

    fn note(&self, problem: &mut Option<String>, at: usize, what: String) {
        if problem.is_none() {
            let (line, col) = self.line_col(at);
            *problem = Some(format!("line {line}:{col}: {what}"));
        }
    }

    fn skip_to_line_end(&mut self) {
        while let Some(b) = self.peek(0) {
            if b == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    /// Skips white space, line breaks and `%` escape lines.
    fn skip_blank(&mut self, mut at_line_start: bool) {
        while let Some(b) = self.peek(0) {
            match b {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    at_line_start = true;
                    self.pos += 1;
                }
                b'%' if at_line_start => self.skip_to_line_end(),
                _ => return,
            }
        }
    }

    fn tags(&mut self, problem: &mut Option<String>) {
        while self.peek(0) == Some(b'[') {
            let start = self.pos;
            self.skip_to_line_end();
            let line = &self.text[start..self.pos];
            let quotes = line.iter().filter(|&&b| b == b'"').count();
            if !line.trim_ascii_end().ends_with(b"]") || quotes < 2 {
                self.note(
                    problem,
                    start,
                    format!(
                        "unterminated tag `{}`",
                        String::from_utf8_lossy(line).trim_end()
                    ),
                );
            }
            self.skip_blank(true);
        }
    }

    fn movetext(&mut self, problem: &mut Option<String>) {
        let mut depth = 0usize;
        let mut result_seen = false;
        while let Some(b) = self.peek(0) {
            match b {
                b'{' => {
                    let start = self.pos;
                    match self.text[self.pos..].iter().position(|&c| c == b'}') {
                        Some(i) => self.pos += i + 1,
                        None => {
                            self.note(problem, start, "unterminated comment".into());
                            self.pos = self.text.len();
                        }
                    }
                }
                b';' => self.skip_to_line_end(),
                b'\n' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some(b'%') => self.skip_to_line_end(),
                        Some(b'\n' | b'[') => break,
                        Some(b'\r') if self.peek(1) == Some(b'\n') => break,
                        _ => {}
                    }
                }
                b' ' | b'\t' | b'\r' | b'.' | b'!' | b'?' => self.pos += 1,
                b'(' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' => {
                    if depth == 0 {
                        self.note(problem, self.pos, "`)` without `(`".into());
                    }
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                }
                b'$' => {
                    let start = self.pos;
                    self.pos += 1;
                    let digits = self.token();
                    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                        self.note(problem, start, "`$` without a number".into());
                    }
                }
                b'*' => {
                    self.pos += 1;
                    if depth == 0 {
                        result_seen = true;
                    }
                }
                b'}' => {
                    self.note(problem, self.pos, "`}` without `{`".into());
                    self.pos += 1;
                }
                _ => {
                    let start = self.pos;
                    let token = self.token();
                    let mut kind = classify(token);
                    if kind == Token::Bad
                        && let Some(fixed) = repair(token)
                    {
                        kind = Token::Move;
                        self.edits.push((start..self.pos, fixed));
                    }
                    if kind == Token::Bad {
                        let shown = String::from_utf8_lossy(token);
                        self.note(
                            problem,
                            start,
                            format!("`{shown}` is not a move, move number, annotation or result"),
                        );
                    } else if result_seen && depth == 0 && kind != Token::Number {
                        let shown = String::from_utf8_lossy(token);
                        self.note(problem, start, format!("`{shown}` after the game's result"));
                    }
                    if kind == Token::Result && depth == 0 {
                        result_seen = true;
                    }
                }
            }
        }
        if depth > 0 {
            self.note(problem, self.pos, "unclosed variation `(`".into());
        }
    }

    /// The bytes up to the next token end (at least one byte).
    fn token(&mut self) -> &'a [u8] {
        let start = self.pos;
        while let Some(b) = self.peek(0) {
            if is_token_end(b) && self.pos > start {
                break;
            }
            self.pos += 1;
            if is_token_end(b) {
                break;
            }
        }
        &self.text[start..self.pos]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Number,
    Move,
    Result,
    Bad,
}

/// What a movetext token is.
fn classify(token: &[u8]) -> Token {
    let text = String::from_utf8_lossy(token).replace(['–', '—'], "-");
    // `1/2` alone is a common shorthand for a draw.
    if matches!(text.as_str(), "1-0" | "0-1" | "1/2-1/2" | "½-½" | "1/2") {
        return Token::Result;
    }
    let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
    if rest.is_empty() {
        return Token::Number;
    }
    let rest = if rest.len() < text.len() && !text.starts_with('0') {
        // A move number run into its move, as `12Nf3`.
        rest
    } else {
        text.as_str()
    };
    let castle = rest.trim_end_matches(['+', '#']).replace('0', "O");
    if castle == "O-O" || castle == "O-O-O" {
        return Token::Move;
    }
    if SanPlus::from_ascii(rest.as_bytes()).is_ok() {
        Token::Move
    } else {
        Token::Bad
    }
}

/// The standard SAN for a token written with one of the accepted habits: `ep` after an en
/// passant capture (`exf6ep`, `exf3ep+`), or a promotion without `=` (`h1Q`, `bxa8N+`).
fn repair(token: &[u8]) -> Option<Vec<u8>> {
    let body_len = token.len()
        - token
            .iter()
            .rev()
            .take_while(|&&b| b == b'+' || b == b'#')
            .count();
    let (body, suffix) = token.split_at(body_len);
    let pawn = |san: &[u8]| match SanPlus::from_ascii(san).map(|s| s.san) {
        Ok(shakmaty::san::San::Normal {
            role: shakmaty::Role::Pawn,
            capture,
            promotion,
            ..
        }) => Some((capture, promotion)),
        _ => None,
    };
    if let Some(capture) = body.strip_suffix(b"ep")
        && pawn(capture) == Some((true, None))
    {
        return Some([capture, suffix].concat());
    }
    if let [
        rest @ ..,
        rank @ (b'1' | b'8'),
        piece @ (b'Q' | b'R' | b'B' | b'N'),
    ] = body
    {
        let fixed = [rest, &[*rank, b'='], &[*piece], suffix].concat();
        if pawn(&fixed).is_some_and(|(_, p)| p.is_some()) {
            return Some(fixed);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sans(g: &PgnGame) -> Vec<String> {
        g.moves.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn comments_variations_nags_and_tags() {
        let text = b"[Event \"a\"]\n[FEN \"8/8/8/8/8/8/8/K6k w - - 0 1\"]\n\n1. e4 {best (by test)} e5 $1 (1... c5 2. Nf3) 2. Nf3!? ; rest\n2... Nc6 *\n\n[Event \"b\"]\n\n1. d4 0-0 1-0\n";
        let games = read_games(text);
        assert_eq!(games.len(), 2);
        assert_eq!(sans(&games[0]), ["e4", "e5", "Nf3", "Nc6"]);
        assert_eq!(games[0].tag("FEN"), Some("8/8/8/8/8/8/8/K6k w - - 0 1"));
        assert_eq!(games[0].problem, None);
        assert_eq!(games[1].line, 7);
        assert_eq!(sans(&games[1]), ["d4", "O-O"]);
        assert_eq!(games[1].problem, None);
    }

    #[test]
    fn unreadable_tokens_are_problems() {
        for (text, want) in [
            (
                &b"1. e4 e5 2. Qc3w *"[..],
                "line 1:13: `Qc3w` is not a move",
            ),
            (b"1. e4 Nf9 *", "line 1:7: `Nf9` is not a move"),
            (b"1. e4 INVALIDATING e5 *", "line 1:7: `INVALIDATING`"),
            (
                b"1. e4 e5 1-0 Nf3",
                "line 1:14: `Nf3` after the game's result",
            ),
            (b"1. e4 {open", "line 1:7: unterminated comment"),
            (b"1. e4 (e5 *", "unclosed variation"),
        ] {
            let games = read_games(text);
            let problem = games[0].problem.clone().unwrap_or_default();
            assert!(
                problem.contains(want),
                "{problem:?} for {:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn text_after_a_game_is_a_game_of_its_own() {
        let games = read_games(b"[Event \"a\"]\n\n1. e4 1-0\n\nInvalidating string\n");
        assert_eq!(games.len(), 2);
        assert_eq!(games[0].problem, None);
        assert!(
            games[1]
                .problem
                .as_deref()
                .unwrap()
                .contains("`Invalidating`")
        );
    }

    #[test]
    fn accepted_habits_are_rewritten() {
        let games = read_games(
            b"1. e4 d5 2. e5 f5 3. exf6ep a6 4. fxg7 a5 5. gxh8Q+ Kd7 6. Qg7 a4 7. exf3ep+ *",
        );
        assert_eq!(games[0].problem, None);
        assert_eq!(
            sans(&games[0]),
            [
                "e4", "d5", "e5", "f5", "exf6", "a6", "fxg7", "a5", "gxh8=Q+", "Kd7", "Qg7", "a4",
                "exf3+"
            ]
        );
        assert_eq!(repair(b"h1Q"), Some(b"h1=Q".to_vec()));
        assert_eq!(repair(b"Nf3Q"), None);
        assert_eq!(repair(b"Nxf3ep"), None);
    }

    #[test]
    fn byte_order_mark_and_blank_lines_between_tags() {
        let games = read_games(b"\xef\xbb\xbf[Event \"a\"]\n\n[Site \"b\"]\n\n1. e4 *\n");
        assert_eq!(games.len(), 1);
        assert_eq!(games[0].tags.len(), 2);
        assert_eq!(sans(&games[0]), ["e4"]);
    }

    proptest::proptest! {
        /// Any Unicode, blanks, controls, bytes that are not UTF-8 and deep nesting of
        /// variations and comments, around PGN words.
        #[test]
        fn never_panics(bytes in ggp_gdl::kif::fuzz::bytes(&[
            "[Event \"a\"]\n", "[FEN \"", "\"]", "1.", "e4", "Nf3", "O-O", "0-0", "{", "}", "(", ")",
            ";", "$1", "*", "1-0", "\n\n", "e8=Q", "x", "+", "#",
        ])) {
            let _ = read_games(&bytes);
        }
    }
}
