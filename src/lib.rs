//! blazes: coordination analysis for dataflows (Alvaro, Conway, Hellerstein, Maier, ICDE 2014).
//!
//! The library reads a dataflow spec ([`spec`]), resolves it into an IR ([`graph`]), derives
//! stream labels and points of order ([`analysis`]) over the label lattice ([`label`]), and
//! renders the results ([`report`]); [`import`] turns the topologies of stream engines (Kafka
//! Streams, Flink, Storm Flux) into specs. The analyzer does no file IO and never prints: the
//! binary (`src/main.rs` and its `cli` module) is the edge. The other half is the crate
//! `blazes-runtime`: the mechanisms that enforce a coordination plan in services, which
//! depends on no analyzer code; the two meet in the plan document (the crate `blazes-plan`),
//! which [`report::plan_json`] writes and the runtime reads.
//!
//! From a spec to its findings, its plan and its picture:
//!
//! ```
//! use blazes::check::{self, Outcome};
//! use blazes::{plan, render, report};
//!
//! let spec = "
//! sources:
//!   tweets: { sealable: [[batch]] }
//! components:
//!   Count:
//!     paths:
//!       - { from: words, to: counts, label: OW, gate: [word, batch] }
//! streams:
//!   - { from: tweets, to: Count.words }
//!   - { from: Count.counts, to: db }
//! sinks:
//!   db: {}
//! ";
//! // Read, build and analyse (`blazes check`); every format reads the report.
//! let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
//! assert_eq!(report.exit_code(), check::EXIT_FINDINGS);
//! let json = report::json::render(std::slice::from_ref(&report));
//! assert!(json.contains("\"C004\""));
//!
//! // The cheapest coordination that repairs it (`blazes plan`).
//! let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
//! let p = plan::plan(&a.dataflow, &plan::Options::default());
//! assert_eq!(p.status, plan::Status::Repaired);
//! let text = report::plan_human::render("count.yaml", p.named(&a.dataflow));
//! assert!(text.contains("add `seal: [batch]` to source `tweets`"));
//!
//! // The dataflow as it will be with the plan applied (`blazes render --plan`).
//! let dot = render::plan_dot(&a.dataflow, &p, Default::default());
//! assert!(dot.contains("added by the plan"));
//! ```

pub mod analysis;
pub mod check;
#[doc(hidden)]
pub mod cli;
pub mod codes;
pub mod compose;
pub mod diagnostic;
#[doc(hidden)]
pub mod fuzzing;
pub mod generator;
pub mod graph;
pub mod import;
pub mod label;
pub mod lint;
pub mod plan;
pub mod render;
pub mod report;
pub mod simulate;
pub mod spec;
pub mod topics;
pub mod vocabulary;
pub mod whitebox;
