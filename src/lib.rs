//! blazes: coordination analysis for dataflows.

/// Replication runtime: durable log, sequencer, keyed sessions, seal barrier, replicated state
/// machines and dedup. Independent of the analyzer; see `docs/runtime.md`.
pub mod runtime;
