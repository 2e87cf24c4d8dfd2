//! The one place that chooses an engine for a game: the propnet if the game grounds within a
//! budget, else the Datalog engine, and why it fell back.
//!
//! Everything that plays a game is generic over [`StateMachine`]; an [`Engine`] holds one
//! concrete machine, and [`Engine::run`] (or [`Engine::run_mut`]) hands it to a generic
//! [`UseMachine`] (or [`UseMachineMut`]) with one dispatch, so the hot loops stay
//! monomorphic and no per-call dispatch costs the propnet any speed.

use std::fmt;

use crate::datalog::{BuildError, DatalogMachine};
use crate::machine::StateMachine;
use crate::propnet::{Budget, GroundError, PropnetMachine};
use ggp_gdl::gdl::{Description, Term};

/// What the players, the referee and the command line need of a machine: a
/// [`StateMachine`] that can be copied for search threads and moved to one.
pub trait Machine: StateMachine + Clone + Send + 'static {}

impl<M: StateMachine + Clone + Send + 'static> Machine for M {}

/// Which engine runs a game. With the `clap` feature it is a `clap::ValueEnum`, for the
/// command line's `--engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EngineChoice {
    /// The propnet if the game grounds within the budget, else the Datalog engine.
    Auto,
    /// The bottom-up Datalog engine.
    Datalog,
    /// The propositional network (fails if the game does not ground within the budget).
    Propnet,
}

/// Why no engine could be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// The Datalog engine could not be built.
    #[error(transparent)]
    Datalog(#[from] BuildError),
    /// The propnet was asked for and the game does not ground within the budget.
    #[error(transparent)]
    Ground(#[from] GroundError),
}

/// A game loaded on one of the engines; a clone shares what the engine shares between
/// clones (the propnet's network).
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per game; moved once into its user
pub enum Engine {
    /// The Datalog engine.
    Datalog(Box<DatalogMachine>),
    /// The propositional network.
    Propnet(PropnetMachine),
}

/// Code generic over the machine, run by [`Engine::run`] with the machine itself.
pub trait UseMachine {
    /// What the code returns.
    type Output;
    /// Runs with the engine's machine.
    fn with<M: Machine>(self, machine: M) -> Self::Output;
}

/// Code generic over the machine, run by [`Engine::run_mut`] with a borrowed machine.
pub trait UseMachineMut {
    /// What the code returns.
    type Output;
    /// Runs with the engine's machine.
    fn with<M: Machine>(self, machine: &mut M) -> Self::Output;
}

impl Engine {
    /// The engine's name: `datalog` or `propnet`.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Datalog(_) => "datalog",
            Engine::Propnet(_) => "propnet",
        }
    }

    /// The game's roles.
    pub fn roles(&self) -> &[Term] {
        match self {
            Engine::Datalog(m) => m.roles(),
            Engine::Propnet(m) => m.roles(),
        }
    }

    /// Hands the machine to `user`.
    pub fn run<U: UseMachine>(self, user: U) -> U::Output {
        match self {
            Engine::Datalog(m) => user.with(*m),
            Engine::Propnet(m) => user.with(m),
        }
    }

    /// Lends the machine to `user`.
    pub fn run_mut<U: UseMachineMut>(&mut self, user: U) -> U::Output {
        match self {
            Engine::Datalog(m) => user.with(&mut **m),
            Engine::Propnet(m) => user.with(m),
        }
    }
}

/// An engine and, when `auto` fell back to the Datalog engine, why.
pub struct Loaded {
    /// The engine.
    pub engine: Engine,
    /// Why the propnet was not used, when `auto` fell back.
    pub fallback: Option<GroundError>,
}

impl Loaded {
    /// A line saying why the propnet was not used, if it was not.
    pub fn fallback_note(&self) -> Option<String> {
        self.fallback
            .as_ref()
            .map(|e| format!("propnet unavailable ({e}); using the datalog engine"))
    }
}

impl fmt::Display for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fallback {
            None => f.write_str(self.engine.name()),
            Some(e) => write!(f, "{} (propnet unavailable: {e})", self.engine.name()),
        }
    }
}

/// Loads `description` on the engine `choice` names; with [`EngineChoice::Auto`], the
/// propnet when the game grounds within `budget`, else the Datalog engine with the reason.
///
/// # Errors
/// The chosen engine (with `auto`, the Datalog engine after a failed grounding) cannot be
/// built.
pub fn load(
    description: &Description,
    choice: EngineChoice,
    budget: &Budget,
) -> Result<Loaded, LoadError> {
    let datalog = |fallback| -> Result<Loaded, LoadError> {
        Ok(Loaded {
            engine: Engine::Datalog(Box::new(DatalogMachine::new(description)?)),
            fallback,
        })
    };
    match choice {
        EngineChoice::Datalog => datalog(None),
        EngineChoice::Propnet => Ok(Loaded {
            engine: Engine::Propnet(PropnetMachine::new(description, budget)?),
            fallback: None,
        }),
        EngineChoice::Auto => match PropnetMachine::new(description, budget) {
            Ok(m) => Ok(Loaded {
                engine: Engine::Propnet(m),
                fallback: None,
            }),
            Err(e) => datalog(Some(e)),
        },
    }
}

/// A budget small enough that a person does not wait long for a game to load.
pub fn quick_budget() -> Budget {
    Budget {
        max_seconds: 5.0,
        max_atoms: 300_000,
        ..Budget::default()
    }
}

/// A grounding budget of half the time left before `deadline` (at least 0.1 s, at most the
/// default), for a player that must be ready by then.
pub fn budget_before(deadline: std::time::Instant) -> Budget {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    Budget {
        max_seconds: (left.as_secs_f64() / 2.0).clamp(0.1, Budget::default().max_seconds),
        ..Budget::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAME: &str = "(role a) (init (p)) (legal a go) (<= (next (q)) (does a go))
        (<= terminal (true (q))) (goal a 100)";

    struct Roles;
    impl UseMachine for Roles {
        type Output = usize;
        fn with<M: Machine>(self, machine: M) -> usize {
            machine.roles().len()
        }
    }

    #[test]
    fn auto_prefers_the_propnet_and_reports_a_fallback() {
        let d = Description::from_text(GAME).unwrap();
        let loaded = load(&d, EngineChoice::Auto, &Budget::default()).unwrap();
        assert_eq!(loaded.engine.name(), "propnet");
        assert!(loaded.fallback_note().is_none());
        let tiny = Budget {
            max_seconds: 0.0,
            ..Budget::default()
        };
        let loaded = load(&d, EngineChoice::Auto, &tiny).unwrap();
        assert_eq!(loaded.engine.name(), "datalog");
        assert!(
            loaded
                .fallback_note()
                .unwrap()
                .starts_with("propnet unavailable (")
        );
        assert_eq!(loaded.engine.run(Roles), 1);
        assert!(matches!(
            load(&d, EngineChoice::Propnet, &tiny),
            Err(LoadError::Ground(_))
        ));
    }
}
