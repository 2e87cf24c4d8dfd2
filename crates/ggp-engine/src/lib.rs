//! ggp-engine: the engines that run a GDL game, the researcher's library of ggp.
//!
//! Its one job is to answer the rules' questions about a game (roles, the initial state, legal
//! moves, the next state, terminal, goals) fast and exactly. [`machine::StateMachine`] is the
//! one interface every engine implements and every player uses; [`datalog`] is the bottom-up
//! engine, [`propnet`] the grounded network, and [`engine::load`] the one choice between them
//! (the propnet when the game grounds within its budget, else the Datalog engine, with the
//! reason). [`analysis`] finds a game's turn-taking parts, [`trace`] replays reference traces
//! against any engine, and [`resources`] reads the process's memory and processor time.
//!
//! # Example
//!
//! A rule sheet read from a string (with `ggp-gdl`), loaded on the engine `auto` chooses, and
//! one random playout to a terminal state:
//!
//! ```
//! use ggp_engine::engine::{self, EngineChoice, Machine, UseMachine};
//! use ggp_engine::machine::MachineError;
//! use ggp_engine::propnet::Budget;
//! use ggp_gdl::gdl::Description;
//! use rand::SeedableRng;
//!
//! // Two players add 1 or 2 to a count in turn; whoever brings it to 3 or more wins.
//! const RULES: &str = "
//!     (role white) (role black)
//!     (init (count 0)) (init (control white))
//!     (plus 1 0 1) (plus 1 1 2) (plus 1 2 3) (plus 2 0 2) (plus 2 1 3) (plus 2 2 4)
//!     (<= (legal ?r (add 1)) (true (control ?r)))
//!     (<= (legal ?r (add 2)) (true (control ?r)))
//!     (<= (legal ?r noop) (role ?r) (not (true (control ?r))))
//!     (<= (next (count ?n)) (does ?r (add ?k)) (true (count ?m)) (plus ?k ?m ?n))
//!     (<= (next (control white)) (true (control black)))
//!     (<= (next (control black)) (true (control white)))
//!     (<= (next (moved ?r)) (true (control ?r)))
//!     (<= terminal (true (count 3)))
//!     (<= terminal (true (count 4)))
//!     (<= (goal ?r 100) (true (moved ?r)))
//!     (<= (goal ?r 0) (role ?r) (not (true (moved ?r))))
//! ";
//!
//! /// One random playout on whichever machine the engine holds; the goals at its end.
//! struct Playout;
//!
//! impl UseMachine for Playout {
//!     type Output = Result<Vec<u8>, MachineError>;
//!     fn with<M: Machine>(self, mut machine: M) -> Self::Output {
//!         let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
//!         let (end, steps) = machine.playout(&machine.initial_state(), &mut rng, 100)?;
//!         assert!(machine.is_terminal(&end)?, "ended after {steps} moves");
//!         machine.goals(&end)
//!     }
//! }
//!
//! let description = Description::from_text(RULES).expect("the sheet is valid");
//! let loaded = engine::load(&description, EngineChoice::Auto, &Budget::default())?;
//! println!("engine: {loaded}");
//! let roles = loaded.engine.roles().to_vec();
//! let goals = loaded.engine.run(Playout)?;
//! for (role, goal) in roles.iter().zip(&goals) {
//!     println!("{role}: {goal}");
//! }
//! assert_eq!(goals.iter().map(|&g| u32::from(g)).sum::<u32>(), 100);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod analysis;
pub mod datalog;
pub mod engine;
pub mod machine;
pub mod propnet;
pub mod resources;
pub mod trace;
