//! Helpers shared by the engine's end-to-end tests and, through a `#[path]` module, by the
//! `ggp` package's (`tests/common/mod.rs`).

/// How much of something a test covers: a sample in the default run, all of it in the run of
/// the ignored tests (`cargo test -- --ignored`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The default run's sample.
    Sample,
    /// Everything.
    All,
}
