//! The grounded engine: a propositional network ("propnet") behind the
//! [`StateMachine`](crate::machine::StateMachine) trait.
//!
//! Building a net takes three steps:
//!
//! - [`ground`](mod@ground) instantiates the game with the Datalog engine itself. A relaxed
//!   program (negation dropped, `true` read as every `init` and `next` fact, `does` as every
//!   `legal` fact) is evaluated to its least model, which holds every atom that can ever be
//!   true; each rule is then instantiated with every binding whose positive literals lie in
//!   that model.
//! - [`net`] turns ground rules into AND/OR/NOT gates over base (`true`) and input (`does`)
//!   propositions, evaluates everything that depends on neither once (constants), folds the
//!   constants, drops logic that reaches no `legal`, `goal`, `terminal` or `next`, and
//!   flattens the rest into arrays in topological order. Recursive rules can give cycles of
//!   gates; each cycle (always positive in a stratified game) is evaluated by iterating from
//!   all-false to its least fixpoint.
//! - [`machine`] runs the net: a state is a bitset over base propositions, and each query
//!   evaluates the gates in order into preallocated buffers.
//!
//! Grounding is bounded by a [`Budget`]; a game that exceeds it gives
//! [`GroundError::Budget`], and the caller falls back to the Datalog engine.

pub mod ground;
pub mod machine;
pub mod net;
mod optimize;

pub use ground::{
    AtomId, Budget, GroundError, GroundLit, GroundProgram, GroundRule, Keywords, ground,
};
pub use machine::{PropnetMachine, PropnetState};
pub use net::{MoveId, Net, NetStats};
