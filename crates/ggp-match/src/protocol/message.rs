//! The match messages: parsing what a referee sends, and printing what a referee sends.
//!
//! Messages are S-expressions read with [`kif`]. The message name (`START`, `play`, ...) is
//! matched case-insensitively, because the Dresden referee uppercases whole messages; every
//! other symbol keeps its spelling, and the rules, role and moves are read with the same
//! interner as the rules, so an uppercased match stays consistent with itself.
//! Argument counts follow ggp-base's player: PLAY and STOP take exactly two arguments, START at
//! least five (extra trailing ones are ignored), ABORT one, INFO and PING none, PREVIEW two.
//! PLAY and STOP with four arguments are Dresden's GDL-II form, `(PLAY id turn lastmove
//! percepts)`: the move the referee applied for us and what we saw, not the joint move.
//!
//! The printing side reproduces the bytes ggp-base's referee sends ([`Style::GgpBase`]: lists
//! as `( a b )`, and the hand-built `(m1 m2 )` move and rule lists), or the Dresden form
//! ([`Style::Dresden`]: compact and wholly uppercased).

use std::fmt::Write as _;
use std::time::Duration;

use ggp_gdl::gdl::{self, Term};
use ggp_gdl::kif::{self, Pos, Sexp};

/// What a PLAY or STOP tells of the last step.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    /// GDL: the joint move, one move per role in role order.
    Joint(Vec<Term>),
    /// GDL-II: the move the referee applied for us and our percepts.
    Seen {
        /// Our move, as applied (the referee's replacement if ours was late or illegal).
        mv: Term,
        /// What we saw.
        percepts: Vec<Term>,
    },
}

/// A message from a referee.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `(INFO)`: who are you, and are you free?
    Info,
    /// `(PING)`: are you there?
    Ping,
    /// `(PREVIEW (rules) clock)`: a game that may be played soon.
    Preview {
        /// The rule sheet, one expression per rule.
        rules: Vec<Sexp>,
        /// Seconds to look at it.
        clock: Duration,
    },
    /// `(START id role (rules) startclock playclock)`.
    Start {
        /// The match id.
        id: String,
        /// Our role.
        role: Term,
        /// The rule sheet, one expression per rule.
        rules: Vec<Sexp>,
        /// Seconds until the first PLAY may come.
        start_clock: Duration,
        /// Seconds for each move.
        play_clock: Duration,
    },
    /// `(PLAY id moves)` or `(PLAY id turn lastmove percepts)`: what happened in the
    /// previous step (`None` on the first turn), and our move is wanted.
    Play {
        /// The match id.
        id: String,
        /// The previous step, or `None` (`NIL`) on the first turn.
        moves: Option<Heard>,
    },
    /// `(STOP id moves)` or `(STOP id turn lastmove percepts)`: the match is over after this
    /// last step.
    Stop {
        /// The match id.
        id: String,
        /// The last step, or `None` (`NIL`) if the initial state was terminal.
        moves: Option<Heard>,
    },
    /// `(ABORT id)`.
    Abort {
        /// The match id.
        id: String,
    },
}

impl Message {
    /// The message name, in upper case, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Info => "INFO",
            Message::Ping => "PING",
            Message::Preview { .. } => "PREVIEW",
            Message::Start { .. } => "START",
            Message::Play { .. } => "PLAY",
            Message::Stop { .. } => "STOP",
            Message::Abort { .. } => "ABORT",
        }
    }

    /// The match id, for messages that carry one.
    pub fn match_id(&self) -> Option<&str> {
        match self {
            Message::Start { id, .. }
            | Message::Play { id, .. }
            | Message::Stop { id, .. }
            | Message::Abort { id } => Some(id),
            _ => None,
        }
    }
}

/// Why a text is not a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The brackets do not balance, or there is not exactly one expression.
    #[error(transparent)]
    Syntax(#[from] kif::ParseError),
    /// The expression is not a message we know, or an argument has the wrong form.
    #[error("{pos}: {message}")]
    Shape {
        /// Where the offending part starts.
        pos: Pos,
        /// What is wrong.
        message: String,
    },
}

fn shape(pos: Pos, message: impl Into<String>) -> MessageError {
    MessageError::Shape {
        pos,
        message: message.into(),
    }
}

/// Parses one message.
///
/// # Errors
/// A syntax error, an unknown message name, a wrong number of arguments, or an argument of the
/// wrong form (a list where a match id must be, a clock that is not a number, a move that is
/// not a ground term).
pub fn parse_message(text: &str) -> Result<Message, MessageError> {
    let sexp = kif::parse_one(text)?;
    let (items, pos) = match &sexp {
        Sexp::List { items, pos } => (items.as_slice(), *pos),
        // A bare atom is a message without arguments: `INFO` as well as `(INFO)`.
        Sexp::Atom { pos, .. } => (std::slice::from_ref(&sexp), *pos),
    };
    let Some(Sexp::Atom { text: name, .. }) = items.first() else {
        return Err(shape(
            pos,
            "expected a message name at the start of the list",
        ));
    };
    let args = &items[1..];
    let want = |n: usize| -> Result<(), MessageError> {
        if args.len() == n {
            Ok(())
        } else {
            Err(shape(
                pos,
                format!(
                    "{} takes {n} arguments, found {}",
                    name.to_uppercase(),
                    args.len()
                ),
            ))
        }
    };
    match name.to_ascii_lowercase().as_str() {
        "info" => want(0).map(|()| Message::Info),
        "ping" => want(0).map(|()| Message::Ping),
        "preview" => {
            want(2)?;
            Ok(Message::Preview {
                rules: rule_list(&args[0])?,
                clock: clock(&args[1])?,
            })
        }
        "start" => {
            if args.len() < 5 {
                return Err(shape(
                    pos,
                    format!("START takes 5 arguments, found {}", args.len()),
                ));
            }
            Ok(Message::Start {
                id: match_id(&args[0])?,
                role: ground_term(&args[1])?,
                rules: rule_list(&args[2])?,
                start_clock: clock(&args[3])?,
                play_clock: clock(&args[4])?,
            })
        }
        "play" | "stop" => {
            let moves = match args.len() {
                2 => joint_move(&args[1])?.map(Heard::Joint),
                4 => seen(&args[1..])?,
                n => {
                    return Err(shape(
                        pos,
                        format!(
                            "{} takes 2 arguments (or 4 in GDL-II), found {n}",
                            name.to_uppercase()
                        ),
                    ));
                }
            };
            let id = match_id(&args[0])?;
            Ok(if name.eq_ignore_ascii_case("play") {
                Message::Play { id, moves }
            } else {
                Message::Stop { id, moves }
            })
        }
        "abort" => {
            want(1)?;
            Ok(Message::Abort {
                id: match_id(&args[0])?,
            })
        }
        _ => Err(shape(pos, format!("unknown message `{name}`"))),
    }
}

fn match_id(sexp: &Sexp) -> Result<String, MessageError> {
    match sexp {
        Sexp::Atom { text, .. } => Ok(text.clone()),
        Sexp::List { pos, .. } => Err(shape(*pos, "expected a match id, found a list")),
    }
}

fn rule_list(sexp: &Sexp) -> Result<Vec<Sexp>, MessageError> {
    match sexp {
        Sexp::List { items, .. } => Ok(items.clone()),
        Sexp::Atom { text, pos } => Err(shape(
            *pos,
            format!("expected the list of rules, found `{text}`"),
        )),
    }
}

fn clock(sexp: &Sexp) -> Result<Duration, MessageError> {
    if let Sexp::Atom { text, .. } = sexp
        && let Ok(seconds) = text.parse::<f64>()
        && seconds.is_finite()
        && (0.0..=1e7).contains(&seconds)
    {
        return Ok(Duration::from_secs_f64(seconds));
    }
    Err(shape(
        sexp.pos(),
        format!("expected a clock in seconds, found `{sexp}`"),
    ))
}

fn ground_term(sexp: &Sexp) -> Result<Term, MessageError> {
    let term = gdl::term_from_sexp(sexp).map_err(|e| shape(e.pos(), e.to_string()))?;
    if !term.is_ground() {
        return Err(shape(
            sexp.pos(),
            format!("expected a ground term, found `{sexp}`"),
        ));
    }
    Ok(term)
}

/// A joint move: an atom (`NIL`) means none; a list holds one move per role.
fn joint_move(sexp: &Sexp) -> Result<Option<Vec<Term>>, MessageError> {
    match sexp {
        Sexp::Atom { .. } => Ok(None),
        Sexp::List { items, .. } => items
            .iter()
            .map(ground_term)
            .collect::<Result<_, _>>()
            .map(Some),
    }
}

/// `turn lastmove percepts` of a GDL-II PLAY or STOP: `None` for turn 0's `0 NIL NIL`.
fn seen(args: &[Sexp]) -> Result<Option<Heard>, MessageError> {
    let turn = match &args[0] {
        Sexp::Atom { text, .. } => text.parse::<u64>().ok(),
        Sexp::List { .. } => None,
    };
    let Some(turn) = turn else {
        return Err(shape(
            args[0].pos(),
            format!("expected a turn number, found `{}`", args[0]),
        ));
    };
    let is_nil =
        |s: &Sexp| matches!(s, Sexp::Atom { text, .. } if text.eq_ignore_ascii_case("nil"));
    if is_nil(&args[1]) {
        if turn == 0 {
            return Ok(None);
        }
        return Err(shape(
            args[1].pos(),
            format!("turn {turn} without our last move"),
        ));
    }
    let mv = ground_term(&args[1])?;
    let percepts = match &args[2] {
        s if is_nil(s) => Vec::new(),
        Sexp::List { items, .. } => items.iter().map(ground_term).collect::<Result<_, _>>()?,
        Sexp::Atom { pos, text } => {
            return Err(shape(
                *pos,
                format!("expected a list of percepts, found `{text}`"),
            ));
        }
    };
    Ok(Some(Heard::Seen { mv, percepts }))
}

/// How a referee prints its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// ggp-base's GameServer: `( PLAY id (( mark 1 1 ) noop ) )`.
    #[default]
    GgpBase,
    /// The Dresden gamecontroller: `(PLAY ID ((MARK 1 1) NOOP))`, everything uppercased.
    Dresden,
}

/// Prints an expression as ggp-base does: every list as `( a b c )`.
pub fn spaced(sexp: &Sexp) -> String {
    let mut out = String::new();
    write_spaced(sexp, &mut out);
    out
}

fn write_spaced(sexp: &Sexp, out: &mut String) {
    // Iterative, so that no expression the parser accepts can overflow the stack.
    enum Step<'a> {
        Open(&'a Sexp),
        Close,
    }
    let mut stack = vec![Step::Open(sexp)];
    let mut first = true;
    while let Some(step) = stack.pop() {
        match step {
            Step::Open(Sexp::Atom { text, .. }) => {
                if !first {
                    out.push(' ');
                }
                out.push_str(text);
            }
            Step::Open(Sexp::List { items, .. }) => {
                if !first {
                    out.push(' ');
                }
                out.push('(');
                stack.push(Step::Close);
                stack.extend(items.iter().rev().map(Step::Open));
            }
            Step::Close => out.push_str(" )"),
        }
        first = false;
    }
}

/// A term as an S-expression (for printing and scrambling).
pub fn term_to_sexp(term: &Term) -> Sexp {
    let atom = |text: String| Sexp::Atom {
        text,
        pos: Pos::default(),
    };
    match term {
        Term::Const(s) | Term::Var(s) => atom(s.name().to_string()),
        Term::App(f, args) => {
            let mut items = vec![atom(f.name().to_string())];
            items.extend(args.iter().map(term_to_sexp));
            Sexp::List {
                items,
                pos: Pos::default(),
            }
        }
    }
}

/// A hand-built list as ggp-base's referee writes rule and move lists: `(a b )`.
fn hand_list(items: &[Sexp]) -> String {
    let mut out = String::from("(");
    for item in items {
        out.push_str(&spaced(item));
        out.push(' ');
    }
    out.push(')');
    out
}

fn compact_list(items: &[Sexp]) -> String {
    let texts: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    format!("({})", texts.join(" "))
}

impl Style {
    fn finish(self, text: String) -> String {
        match self {
            Style::GgpBase => text,
            Style::Dresden => text.to_uppercase(),
        }
    }

    fn list(self, items: &[Sexp]) -> String {
        match self {
            Style::GgpBase => hand_list(items),
            Style::Dresden => compact_list(items),
        }
    }

    fn item(self, sexp: &Sexp) -> String {
        match self {
            Style::GgpBase => spaced(sexp),
            Style::Dresden => sexp.to_string(),
        }
    }

    /// `( START id role (rules ) startclock playclock)`.
    pub fn start(self, id: &str, role: &Sexp, rules: &[Sexp], start: u64, play: u64) -> String {
        let text = match self {
            Style::GgpBase => format!(
                "( START {id} {} {} {start} {play})",
                spaced(role),
                hand_list(rules)
            ),
            Style::Dresden => format!(
                "(START {id} {} {} {start} {play})",
                role,
                compact_list(rules)
            ),
        };
        self.finish(text)
    }

    /// `( PLAY id NIL )` or `( PLAY id (m1 m2 ) )`.
    pub fn play(self, id: &str, joint: Option<&[Sexp]>) -> String {
        self.with_moves("PLAY", id, joint)
    }

    /// `( STOP id (m1 m2 ) )`, or with `NIL` if no move was made.
    pub fn stop(self, id: &str, joint: Option<&[Sexp]>) -> String {
        self.with_moves("STOP", id, joint)
    }

    /// GDL-II: `(PLAY id turn lastmove percepts)` (`(PLAY id 0 NIL NIL)` first).
    pub fn play_seen(self, id: &str, turn: usize, seen: Option<(&Sexp, &[Sexp])>) -> String {
        self.with_seen("PLAY", id, turn, seen)
    }

    /// GDL-II: `(STOP id turn lastmove percepts)`.
    pub fn stop_seen(self, id: &str, turn: usize, seen: Option<(&Sexp, &[Sexp])>) -> String {
        self.with_seen("STOP", id, turn, seen)
    }

    fn with_seen(
        self,
        name: &str,
        id: &str,
        turn: usize,
        seen: Option<(&Sexp, &[Sexp])>,
    ) -> String {
        let (mv, percepts) = match seen {
            None => ("NIL".to_string(), "NIL".to_string()),
            Some((mv, percepts)) => (self.item(mv), self.list(percepts)),
        };
        let text = match self {
            Style::GgpBase => format!("( {name} {id} {turn} {mv} {percepts} )"),
            Style::Dresden => format!("({name} {id} {turn} {mv} {percepts})"),
        };
        self.finish(text)
    }

    fn with_moves(self, name: &str, id: &str, joint: Option<&[Sexp]>) -> String {
        let moves = joint.map_or_else(|| "NIL".to_string(), |j| self.list(j));
        let text = match self {
            Style::GgpBase => format!("( {name} {id} {moves} )"),
            Style::Dresden => format!("({name} {id} {moves})"),
        };
        self.finish(text)
    }

    /// `( ABORT id )`.
    pub fn abort(self, id: &str) -> String {
        self.finish(match self {
            Style::GgpBase => format!("( ABORT {id} )"),
            Style::Dresden => format!("(ABORT {id})"),
        })
    }

    /// `( INFO )`.
    pub fn info(self) -> String {
        match self {
            Style::GgpBase => "( INFO )".into(),
            Style::Dresden => "(INFO)".into(),
        }
    }

    /// One move or state fact as this style prints it (used in match records too).
    pub fn term(self, sexp: &Sexp) -> String {
        self.finish(self.item(sexp))
    }
}

/// A state as ggp-base records it: `( f1 f2 ... )` with `true` stripped.
pub fn state_text(facts: &[Term]) -> String {
    let mut out = String::from("(");
    for fact in facts {
        let _ = write!(out, " {}", spaced(&term_to_sexp(fact)));
    }
    out.push_str(" )");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sexps(text: &str) -> Vec<Sexp> {
        kif::parse(text).unwrap()
    }

    #[test]
    fn reads_every_message_any_case() {
        assert_eq!(parse_message("( INFO )").unwrap(), Message::Info);
        assert_eq!(parse_message("(info)").unwrap(), Message::Info);
        assert_eq!(parse_message("ping").unwrap(), Message::Ping);
        let start =
            parse_message("( START m.1 xplayer (( role xplayer ) ( init p ) ) 5 3)").unwrap();
        let Message::Start {
            id,
            role,
            rules,
            start_clock,
            play_clock,
        } = start
        else {
            panic!("not a START");
        };
        assert_eq!(
            (id.as_str(), role.to_string(), rules.len()),
            ("m.1", "xplayer".to_string(), 2)
        );
        assert_eq!((start_clock.as_secs(), play_clock.as_secs()), (5, 3));
        assert_eq!(
            parse_message("( PLAY m.1 NIL )").unwrap(),
            Message::Play {
                id: "m.1".into(),
                moves: None
            }
        );
        let play = parse_message("(PLAY M ((MARK 1 1) NOOP))").unwrap();
        let Message::Play {
            moves: Some(Heard::Joint(moves)),
            ..
        } = play
        else {
            panic!("no moves");
        };
        assert_eq!(
            moves.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            ["(MARK 1 1)", "NOOP"]
        );
        assert_eq!(
            parse_message("( STOP m nil )").unwrap(),
            Message::Stop {
                id: "m".into(),
                moves: None
            }
        );
        assert_eq!(
            parse_message("(abort m)").unwrap(),
            Message::Abort { id: "m".into() }
        );
        assert!(matches!(
            parse_message("(PREVIEW ((role a)) 10)").unwrap(),
            Message::Preview { .. }
        ));
        // Extra START arguments are for future fields.
        assert!(parse_message("(START m r ((role r)) 5 3 extra)").is_ok());
    }

    #[test]
    fn refuses_malformed_messages_with_a_reason() {
        let err = |text: &str| parse_message(text).unwrap_err().to_string();
        assert_eq!(
            err("(PLAY m)"),
            "1:1: PLAY takes 2 arguments (or 4 in GDL-II), found 1"
        );
        assert_eq!(
            err("(START m r ((role r)) 5)"),
            "1:1: START takes 5 arguments, found 4"
        );
        assert_eq!(err("(DANCE)"), "1:1: unknown message `DANCE`");
        assert_eq!(
            err("(START m r ((role r)) five 3)"),
            "1:23: expected a clock in seconds, found `five`"
        );
        assert_eq!(
            err("(PLAY (m) NIL)"),
            "1:7: expected a match id, found a list"
        );
        assert_eq!(
            err("(PLAY m ((mark ?x) noop))"),
            "1:10: expected a ground term, found `(mark ?x)`"
        );
        assert_eq!(
            err("(START m r rules 5 3)"),
            "1:12: expected the list of rules, found `rules`"
        );
        assert_eq!(
            err("((a) b)"),
            "1:1: expected a message name at the start of the list"
        );
        assert!(err("(PLAY m (").contains("expected ')'"));
        assert!(err("").contains("expected an expression"));
        assert!(err("(INFO) (INFO)").contains("second expression"));
    }

    #[test]
    fn prints_as_ggp_base_does() {
        let rules = sexps("(role xplayer) (<= (legal ?w (mark ?x ?y)) (true (cell ?x ?y b)))");
        let role = sexps("xplayer").remove(0);
        assert_eq!(
            Style::GgpBase.start("demo.ttt.1", &role, &rules, 5, 3),
            "( START demo.ttt.1 xplayer (( role xplayer ) ( <= ( legal ?w ( mark ?x ?y ) ) ( true ( cell ?x ?y b ) ) ) ) 5 3)"
        );
        let joint = sexps("(mark 2 3) noop");
        assert_eq!(
            Style::GgpBase.play("demo.ttt.1", Some(&joint)),
            "( PLAY demo.ttt.1 (( mark 2 3 ) noop ) )"
        );
        assert_eq!(
            Style::GgpBase.play("demo.ttt.1", None),
            "( PLAY demo.ttt.1 NIL )"
        );
        assert_eq!(
            Style::GgpBase.stop("m", Some(&joint)),
            "( STOP m (( mark 2 3 ) noop ) )"
        );
        assert_eq!(Style::GgpBase.abort("m"), "( ABORT m )");
        assert_eq!(Style::GgpBase.info(), "( INFO )");
        assert_eq!(spaced(&sexps("(f)").remove(0)), "( f )");
    }

    #[test]
    fn prints_as_dresden_does() {
        let rules = sexps("(role xplayer) (<= terminal (not open))");
        let role = sexps("xplayer").remove(0);
        assert_eq!(
            Style::Dresden.start("m.1", &role, &rules, 5, 3),
            "(START M.1 XPLAYER ((ROLE XPLAYER) (<= TERMINAL (NOT OPEN))) 5 3)"
        );
        let joint = sexps("(mark 1 1) noop");
        assert_eq!(
            Style::Dresden.play("m.1", Some(&joint)),
            "(PLAY M.1 ((MARK 1 1) NOOP))"
        );
        assert_eq!(Style::Dresden.play("m.1", None), "(PLAY M.1 NIL)");
    }

    #[test]
    fn printed_messages_parse_back() {
        let rules = sexps("(role r) (init (p 1))");
        let role = sexps("r").remove(0);
        for style in [Style::GgpBase, Style::Dresden] {
            assert!(matches!(
                parse_message(&style.start("id", &role, &rules, 10, 2)).unwrap(),
                Message::Start { rules, .. } if rules.len() == 2
            ));
            let joint = sexps("(a 1) b");
            let Message::Play {
                moves: Some(Heard::Joint(m)),
                ..
            } = parse_message(&style.play("id", Some(&joint))).unwrap()
            else {
                panic!("no moves");
            };
            assert_eq!(m.len(), 2);
            // GDL-II: turn 0 is NIL NIL; later our move and percepts.
            assert!(matches!(
                parse_message(&style.play_seen("id", 0, None)).unwrap(),
                Message::Play { moves: None, .. }
            ));
            let percepts = sexps("(p 1) q");
            let Message::Stop {
                moves: Some(Heard::Seen { mv, percepts }),
                ..
            } = parse_message(&style.stop_seen("id", 3, Some((&joint[0], &percepts)))).unwrap()
            else {
                panic!("no percepts");
            };
            assert_eq!(mv.to_string().to_lowercase(), "(a 1)");
            assert_eq!(percepts.len(), 2);
        }
    }

    #[test]
    fn dresden_gdl2_play_forms() {
        assert_eq!(
            parse_message("(PLAY M 0 NIL NIL)").unwrap(),
            Message::Play {
                id: "M".into(),
                moves: None
            }
        );
        let Message::Play {
            moves: Some(Heard::Seen { mv, percepts }),
            ..
        } = parse_message("(PLAY M 2 (CHOOSE 1) ((OPEN_DOOR 3) (DOES CANDIDATE NOOP)))").unwrap()
        else {
            panic!("no percepts");
        };
        assert_eq!(mv.to_string(), "(CHOOSE 1)");
        assert_eq!(percepts.len(), 2);
        let Message::Play {
            moves: Some(Heard::Seen { percepts, .. }),
            ..
        } = parse_message("(PLAY M 1 NOOP NIL)").unwrap()
        else {
            panic!("no move");
        };
        assert!(percepts.is_empty());
        assert!(parse_message("(PLAY M 1 NIL NIL)").is_err());
        assert!(parse_message("(PLAY M X NOOP NIL)").is_err());
        assert!(parse_message("(PLAY M 1 NOOP)").is_err());
    }

    #[test]
    fn states_print_as_records_hold_them() {
        let facts = vec![
            gdl::parse_term("(control xplayer)").unwrap(),
            gdl::parse_term("(cell 1 1 b)").unwrap(),
        ];
        assert_eq!(state_text(&facts), "( ( control xplayer ) ( cell 1 1 b ) )");
        assert_eq!(state_text(&[]), "( )");
    }

    proptest! {
        #[test]
        fn never_panics(text in "[()a-zA-Z0-9 ?.\n]{0,60}") {
            let _ = parse_message(&text);
        }

        #[test]
        fn never_panics_on_message_shapes(
            name in "(INFO|PING|PLAY|STOP|START|ABORT|PREVIEW|play)",
            args in "[()a-z0-9 ?.]{0,40}",
        ) {
            let _ = parse_message(&format!("({name} {args})"));
        }

        /// Any Unicode, blanks, controls and deep nesting around message words.
        #[test]
        fn never_panics_on_any_unicode(text in ggp_gdl::kif::fuzz::text(&[
            "(", ")", "INFO", "PLAY", "START", "STOP", "ABORT", "PREVIEW", "NIL", "m", "x", "1",
            "((role x))", "(role x)",
        ])) {
            let _ = parse_message(&text);
            let _ = parse_message(&format!("(PLAY m {text})"));
            let _ = parse_message(&format!("(START m x (({text})) 5 1)"));
        }
    }
}
