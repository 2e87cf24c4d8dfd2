//! KIF text to S-expressions, and back.
//!
//! This module knows nothing of what GDL means: it reads the bracket structure of a rule sheet,
//! drops `;` comments, and keeps the position of every atom and list so that later stages can
//! name `file:line:col` in their diagnostics.
//! Tokens are recognised with nom; nesting is tracked with an explicit stack rather than by
//! recursion, so no input, however deep, can overflow the stack.
//!
//! Blanks are every Unicode white space character (`\v`, `\f`, U+00A0 from copied sheets,
//! U+0085, U+2028/2029, U+3000, ...) plus the byte order mark and the zero-width space,
//! which editors insert invisibly. Any other control character (`\0`, escape, the C1
//! controls) has no place in a rule sheet and is refused with its position.

use std::fmt;

use nom::IResult;
use nom::Parser;
use nom::bytes::complete::{take_till, take_while1};
use nom::character::complete::char;

/// A 1-based line and column in the source text (columns count characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// Line number, from 1.
    pub line: u32,
    /// Column number, from 1.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// An S-expression: an atom or a parenthesised list, with where it starts.
#[derive(Clone, Debug)]
pub enum Sexp {
    /// A symbol, number or variable (`?x`), spelt as in the source.
    Atom {
        /// The text of the atom.
        text: String,
        /// Where it starts.
        pos: Pos,
    },
    /// A parenthesised list.
    List {
        /// The elements, in order.
        items: Vec<Sexp>,
        /// Where its `(` is.
        pos: Pos,
    },
}

impl Sexp {
    /// Where this expression starts.
    pub fn pos(&self) -> Pos {
        match self {
            Sexp::Atom { pos, .. } | Sexp::List { pos, .. } => *pos,
        }
    }
}

impl PartialEq for Sexp {
    /// Structural equality: positions are ignored.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Sexp::Atom { text: a, .. }, Sexp::Atom { text: b, .. }) => a == b,
            (Sexp::List { items: a, .. }, Sexp::List { items: b, .. }) => a == b,
            _ => false,
        }
    }
}

impl Eq for Sexp {}

impl fmt::Display for Sexp {
    /// Compact KIF: single spaces between elements, none inside the parentheses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sexp::Atom { text, .. } => f.write_str(text),
            Sexp::List { items, .. } => {
                f.write_str("(")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// A syntax error: where it is, what was expected there, and what was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: expected {expected}, found {found}")]
pub struct ParseError {
    /// Where the problem was seen.
    pub pos: Pos,
    /// What would have been acceptable there.
    pub expected: String,
    /// What was there instead.
    pub found: String,
}

/// How deeply lists may nest. Real rule sheets stay below 20; the cap keeps every later
/// recursive walk over a term safe from stack overflow.
pub const MAX_DEPTH: usize = 1000;

/// Whether `c` separates tokens: Unicode white space, the byte order mark and the
/// zero-width space.
pub fn is_blank(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}' || c == '\u{200b}'
}

/// Whether `c` may appear in an atom.
fn is_atom_char(c: char) -> bool {
    !is_blank(c) && !c.is_control() && c != '(' && c != ')' && c != ';'
}

/// Skips blanks and `;` comments (a comment may end the file without a newline).
fn skip_blank(mut input: &str) -> &str {
    loop {
        let blank: IResult<&str, &str> = take_while1(is_blank).parse(input);
        if let Ok((rest, _)) = blank {
            input = rest;
            continue;
        }
        let comment: IResult<&str, (char, &str)> =
            (char(';'), take_till(|c| c == '\n')).parse(input);
        match comment {
            Ok((rest, _)) => input = rest,
            Err(_) => return input,
        }
    }
}

/// Tracks line and column as the parser moves forward through the text.
struct Cursor<'a> {
    text: &'a str,
    offset: usize,
    pos: Pos,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            text,
            offset: 0,
            pos: Pos { line: 1, col: 1 },
        }
    }

    /// Moves to the start of `rest`, which must be a suffix of the text.
    fn advance_to(&mut self, rest: &str) {
        let target = self.text.len() - rest.len();
        for c in self.text[self.offset..target].chars() {
            if c == '\n' {
                self.pos.line += 1;
                self.pos.col = 1;
            } else {
                self.pos.col += 1;
            }
        }
        self.offset = target;
    }
}

/// Parses a whole KIF text into its top-level expressions.
///
/// # Errors
/// Unbalanced parentheses: a `)` with nothing open, or the end of the text inside a list.
pub fn parse(text: &str) -> Result<Vec<Sexp>, ParseError> {
    let mut cursor = Cursor::new(text);
    // Each open list: its position and the items read so far. The bottom entry is the file.
    let mut stack: Vec<(Pos, Vec<Sexp>)> = vec![(Pos::default(), Vec::new())];
    let mut input = text;
    loop {
        input = skip_blank(input);
        cursor.advance_to(input);
        let pos = cursor.pos;
        let Some(c) = input.chars().next() else {
            break;
        };
        match c {
            '(' => {
                if stack.len() > MAX_DEPTH {
                    return Err(ParseError {
                        pos,
                        expected: format!("at most {MAX_DEPTH} nested lists"),
                        found: "a deeper list".into(),
                    });
                }
                stack.push((pos, Vec::new()));
                input = &input[1..];
            }
            ')' => {
                if stack.len() == 1 {
                    return Err(ParseError {
                        pos,
                        expected: "'(' or an atom".into(),
                        found: "')' with no list open".into(),
                    });
                }
                let (open, items) = stack.pop().expect("stack holds more than the file");
                stack
                    .last_mut()
                    .expect("file entry remains")
                    .1
                    .push(Sexp::List { items, pos: open });
                input = &input[1..];
            }
            _ => {
                let atom: IResult<&str, &str> = take_while1(is_atom_char).parse(input);
                let Ok((rest, word)) = atom else {
                    return Err(ParseError {
                        pos,
                        expected: "'(', ')', an atom or white space".into(),
                        found: format!("the control character {}", c.escape_unicode()),
                    });
                };
                stack
                    .last_mut()
                    .expect("file entry remains")
                    .1
                    .push(Sexp::Atom {
                        text: word.to_string(),
                        pos,
                    });
                input = rest;
            }
        }
    }
    if stack.len() > 1 {
        let (open, _) = stack.last().expect("checked length");
        return Err(ParseError {
            pos: cursor.pos,
            expected: format!("')' to close the '(' at {open}"),
            found: "end of file".into(),
        });
    }
    Ok(stack.pop().map(|(_, items)| items).unwrap_or_default())
}

/// The bytes as text, or where the first byte that is not UTF-8 stands.
///
/// # Errors
/// The bytes are not UTF-8: the error names the line and column of the first bad byte.
pub fn decode(bytes: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = e.valid_up_to();
        let prefix = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
        let mut cursor = Cursor::new(prefix);
        cursor.advance_to("");
        ParseError {
            pos: cursor.pos,
            expected: "UTF-8 text".into(),
            found: format!("the byte 0x{:02x}", bytes[good]),
        }
    })
}

/// Parses text that must hold exactly one expression (a move, a term in a message).
///
/// # Errors
/// A syntax error, no expression, or more than one.
pub fn parse_one(text: &str) -> Result<Sexp, ParseError> {
    let mut all = parse(text)?;
    match all.len() {
        1 => Ok(all.pop().expect("one element")),
        0 => Err(ParseError {
            pos: Pos { line: 1, col: 1 },
            expected: "an expression".into(),
            found: "nothing".into(),
        }),
        _ => Err(ParseError {
            pos: all[1].pos(),
            expected: "end of input".into(),
            found: format!("a second expression `{}`", all[1]),
        }),
    }
}

/// Fuzz inputs shared by the parsers' tests: every Unicode blank, control bytes, brackets,
/// any character, and deep nesting. The crates above use them through the `fuzz` feature.
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz {
    use proptest::prelude::*;

    /// Every Unicode white space character, the invisible blanks, and some controls.
    pub const ODD: &[char] = &[
        '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}',
        '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}',
        '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}',
        '\u{3000}', '\u{feff}', '\u{200b}', '\u{0}', '\u{1}', '\u{1b}', '\u{7f}', '\u{80}',
        '\u{9f}', '\u{180e}', '\u{fffd}',
    ];

    /// Text of up to 80 characters weighted towards blanks, controls and `words`, possibly
    /// wrapped in up to 2,000 levels of brackets.
    pub fn text(words: &'static [&'static str]) -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::sample::select(ODD).prop_map(String::from),
            prop::sample::select(words).prop_map(String::from),
            any::<char>().prop_map(String::from),
        ];
        (
            prop::collection::vec(piece, 0..40),
            0usize..2000,
            any::<bool>(),
        )
            .prop_map(|(pieces, depth, nest)| {
                let body: String = pieces.concat();
                if nest {
                    "(".repeat(depth) + &body + &")".repeat(depth)
                } else {
                    body
                }
            })
    }

    /// Bytes: the text above, with some bytes that are not UTF-8 mixed in.
    pub fn bytes(words: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
        (
            text(words),
            prop::collection::vec((0usize..200, any::<u8>()), 0..4),
        )
            .prop_map(|(text, bad)| {
                let mut bytes = text.into_bytes();
                for (at, b) in bad {
                    let at = at.min(bytes.len());
                    bytes.insert(at, b);
                }
                bytes
            })
    }
}

#[cfg(test)]
mod tests {
    use super::fuzz::ODD;
    use super::*;
    use proptest::prelude::*;

    fn check(text: &str, expected: &str) {
        let got: Vec<String> = parse(text).unwrap().iter().map(|s| s.to_string()).collect();
        assert_eq!(got.join(" "), expected);
    }

    fn check_err(text: &str, expected: &str) {
        assert_eq!(parse(text).unwrap_err().to_string(), expected);
    }

    #[test]
    fn parses_lists_atoms_and_comments() {
        check(
            "(cell 1 1 b) ; comment\n(<= (p ?x) (q ?x))",
            "(cell 1 1 b) (<= (p ?x) (q ?x))",
        );
        check("( sentence  baz )\n\t(x)", "(sentence baz) (x)");
        check("; only a comment", "");
        check("(a) ; comment at end of file without newline", "(a)");
        check("0123 (5 01)", "0123 (5 01)");
    }

    #[test]
    fn reports_positions_of_errors() {
        check_err(
            "(a\n (b c)",
            "2:7: expected ')' to close the '(' at 1:1, found end of file",
        );
        check_err(
            "(a))",
            "1:4: expected '(' or an atom, found ')' with no list open",
        );
        check_err(
            "0123(5;(8\n01)345)",
            "2:7: expected '(' or an atom, found ')' with no list open",
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let ok = "(".repeat(MAX_DEPTH) + &")".repeat(MAX_DEPTH);
        assert_eq!(parse(&ok).unwrap().len(), 1);
        let deep = "(".repeat(200_000) + &")".repeat(200_000);
        let err = parse(&deep).unwrap_err();
        assert_eq!(err.expected, format!("at most {MAX_DEPTH} nested lists"));
    }

    #[test]
    fn parse_one_wants_exactly_one() {
        assert_eq!(parse_one(" (mark 1 2) ").unwrap().to_string(), "(mark 1 2)");
        assert!(parse_one("").is_err());
        assert!(parse_one("a b").is_err());
    }

    #[test]
    fn every_unicode_blank_separates() {
        for &c in ODD.iter().filter(|&&c| is_blank(c)) {
            let text = format!("{c}(role{c}x){c}(b){c}");
            check(&text, "(role x) (b)");
        }
    }

    #[test]
    fn controls_are_refused_with_their_position() {
        check_err(
            "(a)\n (b\u{0}c)",
            "2:4: expected '(', ')', an atom or white space, found the control character \\u{0}",
        );
        check_err(
            "(\u{1b})",
            "1:2: expected '(', ')', an atom or white space, found the control character \\u{1b}",
        );
    }

    #[test]
    fn non_utf8_is_refused_with_its_position() {
        let err = decode(b"(role x)\n(ro\xffle)").unwrap_err();
        assert_eq!(
            err.to_string(),
            "2:4: expected UTF-8 text, found the byte 0xff"
        );
        assert_eq!(decode(b"(a)").unwrap(), "(a)");
    }

    fn arb_sexp() -> impl Strategy<Value = Sexp> {
        let atom = "[a-zA-Z0-9?<=_+.-]{1,6}".prop_map(|text| Sexp::Atom {
            text,
            pos: Pos::default(),
        });
        atom.prop_recursive(4, 64, 6, |inner| {
            prop::collection::vec(inner, 0..6).prop_map(|items| Sexp::List {
                items,
                pos: Pos::default(),
            })
        })
    }

    proptest! {
        #[test]
        fn print_then_parse_is_identity(exprs in prop::collection::vec(arb_sexp(), 0..5)) {
            let text: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
            let parsed = parse(&text.join("\n")).unwrap();
            prop_assert_eq!(parsed, exprs);
        }

        #[test]
        fn never_panics(text in "[()a-z ;?\n\t]{0,80}") {
            let _ = parse(&text);
        }

        /// Any character at all, weighted towards blanks, controls and brackets.
        #[test]
        fn never_panics_on_any_unicode(text in fuzz::text(&["(", ")", ";", "?x", "a", "<="])) {
            let _ = parse(&text);
        }

        #[test]
        fn decode_never_panics(bytes in fuzz::bytes(&["(", ")", "a"])) {
            let _ = decode(&bytes).map(parse);
        }
    }
}
