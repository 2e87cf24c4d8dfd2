//! The GGP match protocol: messages, the player's HTTP server, and the referee's client.
//!
//! - [`message`]: parsing what a referee sends, printing what a referee sends (ggp-base and
//!   Dresden styles).
//! - [`match_session`]: one match as our player plays it, with the search on its own thread
//!   and a legal fallback move always at hand.
//! - [`server`]: the server behind `ggp serve`: clocks, one match at a time, served over the
//!   crate's HTTP layer ([`crate::http`]).
//! - [`client`]: the reqwest client the referee talks to players with.
//!
//! **Boundary:** this module sees games only through the [`StateMachine`] trait and players
//! only through the [`Player`] trait; the engine and the player are chosen by a
//! [`SessionFactory`] that the caller (the command line) supplies.
//!
//! [`StateMachine`]: ggp_engine::machine::StateMachine
//! [`Player`]: ggp_search::search::Player

pub mod client;
pub mod match_session;
pub mod message;
pub mod server;

pub use client::{Client, SendError};
pub use match_session::{MatchSession, Played, SessionError, SessionFactory, launch};
pub use message::{Heard, Message, MessageError, Style, parse_message};
pub use server::{RunningServer, Server, ServerConfig};
