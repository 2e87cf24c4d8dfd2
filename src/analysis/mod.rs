//! Analysis of a game's rules, for the searches and for sheet writers: static, on the ground
//! rules ([`factor`]), or along random games ([`parts`]).
//!
//! - [`factor`]: independent sub-games (components), shared facts, and which components the
//!   goals and the terminal condition read.
//! - [`parts`]: a simultaneous game's turn-taking parts (boards each role moves on in turn),
//!   found by joining components along random games.

pub mod factor;
pub mod parts;

pub use factor::{Component, Factoring};
pub use parts::{TurnTakingParts, turn_taking_parts};
