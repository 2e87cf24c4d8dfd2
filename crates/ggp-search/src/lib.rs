//! ggp-search: the players, which choose a move in any game.
//!
//! Its one job is move selection against `ggp-engine`'s `StateMachine` trait alone: a
//! [`search::Player`] is started with the start clock and asked for a move before each
//! deadline; [`search::new_player`] builds one from a [`search::PlayerKind`], or with options
//! from a [`search::PlayerSpec`] (`mcts:c=0.7`), and `auto` chooses among the searches at the
//! start clock. [`belief`] follows what a role of a GDL-II game can know without seeing the true
//! state, for the information-set search of [`search::hidden`] and the layers above.
#![warn(missing_docs)]

pub mod belief;
pub mod search;
