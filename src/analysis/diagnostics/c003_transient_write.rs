//! C003 `transient-write`: a state-writing path fed an `Inst` stream.

use super::points::PointText;

crate::codes::code! {
    /// A `CW` (or ordered `OW`) path writes into state a stream whose replicas disagree for a while
    /// (`Inst`). On a replicated component the transient disagreement becomes permanent once
    /// written: its output is `Diverge`. On a single instance the written state depends on the run,
    /// and the `Inst` itself passes on: its output is `Inst`, never better than forwarding the
    /// stream would give. The cause is upstream: fix the point of order that makes the stream
    /// `Inst` (usually an unprotected read on a replicated component).
    pub static INST_WRITE = "C003", "transient-write", Error,
        "a state-writing path receives a transiently inconsistent (Inst) stream";
}

/// The message of a C003 finding.
pub(super) fn message(t: &PointText) -> String {
    let PointText {
        component,
        input,
        output,
        path,
        ..
    } = t;
    format!(
        "{component} writes the Inst stream {input} into state ({input} -> {output}, {path}), making a transient replica disagreement permanent"
    )
}
