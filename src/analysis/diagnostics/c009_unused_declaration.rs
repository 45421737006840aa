//! C009 `unused-declaration`: a declared source or sink that no stream connects.

use crate::diagnostic::Diagnostic;
use crate::graph::Dataflow;

use super::super::work;

crate::codes::code! {
    /// A source with no stream out of it, or a sink with no stream into it, takes no part in the
    /// analysis. Connect it or remove it.
    pub static UNUSED_DECLARATION = "C009", "unused-declaration", Warning,
        "a declared source or sink is not connected to any stream";
}

/// A warning per source that feeds no stream and per declared sink that receives none.
pub(super) fn check(df: &Dataflow, out: &mut Vec<Diagnostic>) {
    for s in work::each(df.sources.iter()).filter(|s| s.streams.is_empty()) {
        out.push(
            Diagnostic::new(
                &UNUSED_DECLARATION,
                format!("source `{}` feeds no stream", s.name),
            )
            .at(s.span, "unused source")
            .help(format!(
                "connect it: `- {{ from: {}, to: Component.input }}`, or remove it",
                s.name
            )),
        );
    }
    let declared = work::each(df.sinks.iter()).filter(|s| s.implicit.is_none());
    for s in declared.filter(|s| s.streams.is_empty()) {
        out.push(
            Diagnostic::new(
                &UNUSED_DECLARATION,
                format!("sink `{}` receives no stream", s.name),
            )
            .at(s.span, "unused sink")
            .help(format!(
                "connect it: `- {{ from: Component.output, to: {} }}`, or remove it",
                s.name
            )),
        );
    }
}
