//! ggp: a General Game Playing player, the top of its workspace.
//!
//! Its one job is what people and the command line see: [`cli`] (the `ggp` binary's commands),
//! [`play`] (a match with human seats, in the terminal), [`web`] (the same in a browser),
//! [`board`] (boards found in a game's states, for display and move entry) and [`chess`] (chess
//! sheets checked against a real move generator). Below it, each layer is a crate that cannot
//! name the ones above: `ggp-gdl` reads and checks rule sheets ([`kif`], [`gdl`]), `ggp-engine`
//! runs them behind the [`machine::StateMachine`] trait ([`engine::load`] chooses the propnet
//! or the Datalog engine), `ggp-search` holds the players ([`search`], [`belief`]), and
//! `ggp-match` plays and referees matches ([`protocol`], [`referee`], [`tournament`]). Their
//! modules are re-exported here under the paths the binary and `tests/` use. ARCHITECTURE.md at
//! the repository's root maps every crate and module.
#![warn(missing_docs)]

pub mod board;
pub mod chess;
pub mod cli;
pub mod play;
pub mod web;

// The lower crates' modules, under the paths the binary and `tests/` name them by.
#[doc(no_inline)]
pub use ggp_engine::{analysis, datalog, engine, machine, propnet, resources, trace};
#[doc(no_inline)]
pub use ggp_gdl::{gdl, kif};
#[doc(no_inline)]
pub use ggp_match::{http, protocol, record, referee, tournament};
#[doc(no_inline)]
pub use ggp_search::{belief, search};
