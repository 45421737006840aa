//! C008 `read-without-writer`: an `OR` path on a component that writes no state.

use crate::analysis::rules::external_writer;
use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{CompId, Dataflow};

use super::super::work;

crate::codes::code! {
    /// An `OR(gate)` path is order-sensitive because it reads state. This component has no `CW` or
    /// `OW` path, so no path of the spec writes what it reads: a cache, a database, a blocklist the
    /// spec does not model. State nobody declared is state something else writes, so the read is
    /// treated as reading state written by an unsealed external input (`Async`): unless the
    /// component is ordered for the gate, the read is a point of order (C002).
    ///
    /// Fixes: if nothing writes the state while the dataflow runs (a table loaded before it
    /// starts), declare `state: static` on the path; if something does, model it: a `CW` or `OW`
    /// path fed by the writer's stream (sealed, if the writer seals), so that the analysis sees
    /// the writes; if the path reads no state, it is `CR`.
    pub static READ_WITHOUT_WRITER = "C008", "read-without-writer", Warning,
        "an OR path reads state that no path of the spec writes: an unsealed external input writes it";
}

/// A warning per component with an `OR` path reading state that no path writes and that is not
/// declared `state: static` (on its first such path).
pub(super) fn check(df: &Dataflow, out: &mut Vec<Diagnostic>) {
    for (i, c) in work::each(df.components.iter()).enumerate() {
        if let Some(p) = work::each(c.paths.iter()).find(|p| external_writer(c, p)) {
            out.push(
                Diagnostic::new(&READ_WITHOUT_WRITER, format!("{} has an OR path but no path that writes state, so the read is treated as reading state written by an unsealed external input", c.name))
                    .at(p.label_span, "reads state no path of the spec writes")
                    .about(Subject::Component(CompId(i as u32)))
                    .help("declare `state: static` on the path if nothing writes the state while the dataflow runs; otherwise model the writer as a CW or OW path fed by its stream (a stateless path is CR)"),
            );
        }
    }
}
