//! C007 `unreached`: a stream no source reaches, which keeps no label.

use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{Dataflow, StreamId};

use super::super::{Labels, work};

crate::codes::code! {
    /// Streams that no source reaches (for example a cycle with no way in) carry no data the
    /// analysis can reason about; they are reported as having no label instead of being given an
    /// invented one. Connect the cycle to a source, or remove it.
    pub static UNREACHED = "C007", "unreached", Warning,
        "no source reaches this stream, so it has no label";
}

/// A warning per stream without a label at the fixpoint.
pub(super) fn check(df: &Dataflow, labels: &Labels, out: &mut Vec<Diagnostic>) {
    for (i, (s, l)) in work::each(df.streams.iter())
        .zip(&labels.stream)
        .enumerate()
    {
        if l.is_none() {
            out.push(
                Diagnostic::new(
                    &UNREACHED,
                    format!("no source reaches stream {} -> {}", s.from_text, s.to_text),
                )
                .at(s.from_span, "no source reaches this stream")
                .about(Subject::Stream(StreamId(i as u32)))
                .help("connect this part of the dataflow to a source, or remove it"),
            );
        }
    }
}
