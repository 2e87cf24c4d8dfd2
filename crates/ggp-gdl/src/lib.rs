//! ggp-gdl: rule sheets read and checked, the first layer of ggp.
//!
//! Its one job is to turn the text of a rule sheet into a game description that can be trusted:
//! [`kif`] reads KIF text into positioned S-expressions, and [`gdl`] reads those as rules over
//! interned symbols, validates them (every problem at once) and normalises them into a
//! [`gdl::Description`], the one value the engines of `ggp-engine` accept. Nothing here runs a
//! game.
#![warn(missing_docs)]

pub mod gdl;
pub mod kif;
