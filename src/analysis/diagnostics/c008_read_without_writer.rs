//! C008 `read-without-writer`: an `OR` path on a component that writes no state.

use crate::diagnostic::Diagnostic;
use crate::graph::Dataflow;

use super::super::work;

crate::codes::code! {
    /// An `OR(gate)` path is order-sensitive because it reads state written by other paths of the
    /// same component. This component has no `CW` or `OW` path, so there is nothing to read: the
    /// read is treated as protected. Check the annotation (perhaps it is `CR`, or a writing path is
    /// missing).
    pub static READ_WITHOUT_WRITER = "C008", "read-without-writer", Warning,
        "an OR path reads state, but its component has no path that writes state";
}

/// A warning per component with an `OR` path and no writing path (on its first `OR` path).
pub(super) fn check(df: &Dataflow, out: &mut Vec<Diagnostic>) {
    for c in work::each(df.components.iter()) {
        let writes = work::each(c.paths.iter()).any(|p| p.annotation.writes());
        if let Some(p) = work::each(c.paths.iter()).find(|p| p.annotation.reads_written_state())
            && !writes
        {
            out.push(
                Diagnostic::new(&READ_WITHOUT_WRITER, format!("{} has an OR path but no path that writes state, so the read is treated as protected", c.name))
                    .at(p.label_span, "reads state nobody writes")
                    .help("check the annotation: a stateless path is CR; or add the missing writing path"),
            );
        }
    }
}
