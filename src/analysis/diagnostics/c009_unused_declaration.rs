//! C009 `unused-declaration`: a declared source or sink that no stream connects.

use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{Dataflow, SinkId, SourceId};

use super::super::work;

crate::codes::code! {
    /// A source with no stream out of it, or a sink with no stream into it, takes no part in the
    /// analysis. Connect it or remove it.
    pub static UNUSED_DECLARATION = "C009", "unused-declaration", Warning,
        "a declared source or sink is not connected to any stream";
}

/// A warning per source that feeds no stream and per declared sink that receives none.
pub(super) fn check(df: &Dataflow, out: &mut Vec<Diagnostic>) {
    for (i, s) in work::each(df.sources.iter())
        .enumerate()
        .filter(|(_, s)| s.streams.is_empty())
    {
        out.push(
            Diagnostic::new(
                &UNUSED_DECLARATION,
                format!("source `{}` feeds no stream", s.name),
            )
            .at(s.span, "unused source")
            .about(Subject::Source(SourceId(i as u32)))
            .help(format!(
                "connect it: `- {{ from: {}, to: Component.input }}`, or remove it",
                s.name
            )),
        );
    }
    let declared = work::each(df.sinks.iter())
        .enumerate()
        .filter(|(_, s)| s.implicit.is_none());
    for (i, s) in declared.filter(|(_, s)| s.streams.is_empty()) {
        out.push(
            Diagnostic::new(
                &UNUSED_DECLARATION,
                format!("sink `{}` receives no stream", s.name),
            )
            .at(s.span, "unused sink")
            .about(Subject::Sink(SinkId(i as u32)))
            .help(format!(
                "connect it: `- {{ from: Component.output, to: {} }}`, or remove it",
                s.name
            )),
        );
    }
}
