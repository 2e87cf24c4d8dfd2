//! Analysis of a game along random games, for the searches and for sheet writers: a
//! simultaneous game's turn-taking parts ([`turn_taking`]: boards each role moves on in turn),
//! found by joining the components of the game's [`Factoring`](crate::machine::Factoring)
//! (which the propnet computes from its ground rules) along random games.

pub mod turn_taking;

pub use turn_taking::{TurnTakingParts, turn_taking_parts};
