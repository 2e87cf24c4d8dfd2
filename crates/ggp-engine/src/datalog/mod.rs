//! The bottom-up Datalog reasoner: the reference engine, and the fallback for games too big
//! to ground.
//!
//! `relation` holds tables and indexes, `eval` (the [`Evaluator`]) evaluates rules over them
//! and knows nothing of GDL, `lower` turns GDL rules into evaluator rules, and `machine` runs a
//! game with them.

mod eval;
mod lower;
mod machine;
mod magic;
mod relation;

pub use eval::{
    BodyLit, Evaluator, Limits, MAX_TERM_DEPTH, MAX_TERM_SIZE, MemoryLimit, Pat, RelId, RuleSpec,
    Stop, Stratum,
};
pub use lower::{Layer, LowerError, Lowered, lower, lower_with};
pub use machine::{BuildError, DatalogMachine, DatalogState};
pub use magic::Demand;
pub use relation::{IndexSpec, Path, Relation};
