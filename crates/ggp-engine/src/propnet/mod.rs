//! The grounded engine: a propositional network ("propnet") behind the
//! [`StateMachine`](crate::machine::StateMachine) trait.
//!
//! Building a net takes three steps:
//!
//! - [`ground`](mod@ground) instantiates the game with the Datalog engine itself. Static
//!   relations are computed exactly; a relaxed copy of the rest (negations of non-static
//!   relations dropped, `true` read as every `init` and `next` fact, `does` as every `legal`
//!   fact) is evaluated to its least model, which holds every atom that can ever be true; each
//!   rule is then instantiated with every binding whose positive literals lie in that model.
//! - [`net`] turns ground rules into AND/OR gates over literals (a node or its negation) of
//!   base (`true`) and input (`does`) propositions, optimises them (constants folded, identical
//!   gates merged, single-reader gates merged into their reader, common literals factored out
//!   of ORs, shared "whose turn" literals taken out of legal moves as guards, dead logic
//!   dropped; see `optimize`), and flattens the rest into arrays in topological order.
//! - [`machine`] runs the net by differential propagation: each gate keeps a count of its true
//!   inputs, and a change of the state or of the joint move flips only the bases and inputs
//!   that differ, visiting the gates whose value changed in topological order.
//!
//! Grounding is bounded by a [`Budget`] (time, rows, gates, and the process's resident
//! memory); if the rules as written exceed it, they are grounded again after the magic-sets
//! rewrite; a game that still exceeds it gives [`GroundError::Budget`] (what it outgrew, an
//! [`Exceeded`]; both tries: [`Exceeded::Retried`]) or
//! [`GroundError::Time`], and the caller falls back to the Datalog engine.

pub mod batch;
mod factor;
pub mod ground;
pub mod machine;
pub mod net;
mod optimize;

pub use batch::{BatchRunner, LANES, LaneRecord, Width};
pub use factor::factoring;
pub use ground::{
    AtomId, Budget, DEFAULT_MAX_MEMORY_BYTES, Exceeded, GroundError, GroundLit, GroundProgram,
    GroundRule, Keywords, Phase, TimeUp, default_max_memory, ground,
};
pub use machine::{PropnetMachine, PropnetState};
pub use net::{MoveId, Net, NetStats};
