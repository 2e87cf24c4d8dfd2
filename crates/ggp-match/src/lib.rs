//! ggp-match: matches over the GGP protocol, from both sides of the wire.
//!
//! Its one job is playing and refereeing matches between players that talk HTTP: [`http`] is
//! the one HTTP/1.x server layer; [`protocol`] parses and prints the match messages, plays one
//! match as our player ([`protocol::launch`] starts a [`protocol::MatchSession`]) and serves
//! matches to a referee ([`protocol::Server`], behind `ggp serve`), with the client a referee
//! talks to players with; [`referee::run_match`] referees one match, checking every move;
//! [`tournament`] plans, schedules, resumes and counts many; [`record`] is the ggp.org match
//! record they write and read. The engine and the player are always the caller's (a
//! [`protocol::SessionFactory`], a closure): this crate never picks one.
#![warn(missing_docs)]

pub mod http;
pub mod protocol;
pub mod record;
pub mod referee;
pub mod tournament;
