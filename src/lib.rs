//! ggp: a General Game Playing player.
//!
//! Rule sheets in GDL (KIF syntax) are read by [`kif`], turned into checked rules by [`gdl`],
//! and simulated by an engine behind the [`machine::StateMachine`] trait, today the bottom-up
//! [`datalog`] reasoner.
#![warn(missing_docs)]

pub mod analysis;
pub mod belief;
pub mod board;
pub mod chess;
pub mod cli;
pub mod datalog;
pub mod engine;
pub mod gdl;
pub mod http;
pub mod kif;
pub mod machine;
pub mod play;
pub mod propnet;
pub mod protocol;
pub mod record;
pub mod referee;
pub mod resources;
pub mod search;
pub mod tournament;
pub mod trace;
pub mod web;
