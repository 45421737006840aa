//! blazes: coordination analysis for dataflows (Alvaro, Conway, Hellerstein, Maier, ICDE 2014).
//!
//! The library reads a dataflow spec ([`spec`]), resolves it into an IR ([`graph`]), derives
//! stream labels and points of order ([`analysis`]) over the label lattice ([`label`]), and
//! renders the results ([`report`]). The analyzer does no file IO and never prints: the
//! binary (`src/main.rs` and its `cli` module) is the edge. [`runtime`] is the other half: the mechanisms
//! that enforce a coordination plan in services, independent of the analyzer.

pub mod analysis;
pub mod check;
#[doc(hidden)]
pub mod cli;
pub mod codes;
pub mod diagnostic;
#[doc(hidden)]
pub mod fuzzing;
pub mod generator;
pub mod graph;
pub mod label;
pub mod plan;
pub mod render;
pub mod report;
// Its documentation is its own (`src/runtime/mod.rs`): a doc comment here would be resolved
// in this module's scope, where the runtime's intra-doc links name nothing.
pub mod runtime;
pub mod simulate;
pub mod spec;
pub mod topics;
pub mod vocabulary;
