//! ggp: a General Game Playing player.
//!
//! Rule sheets in GDL (KIF syntax) are read by [`kif`], turned into a checked
//! [`gdl::Description`] by [`gdl`], and run by an engine behind the [`machine::StateMachine`]
//! trait: [`engine::load`] chooses the grounded network of [`propnet`] when the game grounds
//! within its budget, else the bottom-up [`datalog`] engine. The players of [`search`] are
//! written against the trait alone; [`protocol`] serves them to a referee, [`referee`] and
//! [`tournament`] run matches, and [`play`] and [`web`] let people play. ARCHITECTURE.md at
//! the repository's root maps every module.
#![warn(missing_docs)]

pub mod board;
pub mod chess;
pub mod cli;
pub mod http;
pub mod play;
pub mod protocol;
pub mod record;
pub mod referee;
pub mod tournament;
pub mod web;

// The lower crates' modules, under the paths the binary and `tests/` name them by.
#[doc(no_inline)]
pub use ggp_engine::{analysis, datalog, engine, machine, propnet, resources, trace};
#[doc(no_inline)]
pub use ggp_gdl::{gdl, kif};
#[doc(no_inline)]
pub use ggp_search::{belief, search};
