//! Static analysis of a game's ground rules, for the searches and for sheet writers.
//!
//! - [`factor`]: independent sub-games (components), shared facts, and which components the
//!   goals and the terminal condition read.

pub mod factor;

pub use factor::{Component, Factoring};
