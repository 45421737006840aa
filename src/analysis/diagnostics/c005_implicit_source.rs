//! C005 `implicit-source`: an input no stream feeds, treated as an external `Async` source.

use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{Dataflow, IfaceId};

use super::super::rules::is_unfed_input;
use super::super::work;

crate::codes::code! {
    /// An input that no stream feeds is an external source labelled `Async`. If that is intended,
    /// declare the source under `sources:` and connect it with a stream, which also lets you
    /// declare `seal:` or `sealable:` on it; if not, a stream is missing.
    pub static IMPLICIT_SOURCE = "C005", "implicit-source", Warning,
        "an input interface has no stream into it and is treated as an external Async source";
}

/// A warning per input that no stream feeds.
pub(super) fn check(df: &Dataflow, out: &mut Vec<Diagnostic>) {
    for (i, f) in work::each(df.ifaces.iter())
        .enumerate()
        .filter(|(_, f)| is_unfed_input(f))
    {
        let c = &df.components[f.component.index()];
        out.push(
            Diagnostic::new(&IMPLICIT_SOURCE, format!("input `{}.{}` has no stream into it, so it is an external source labelled Async", c.name, f.name))
                .at(f.span, "no stream feeds this input")
                .about(Subject::Iface(IfaceId(i as u32)))
                .help(format!("declare the source under `sources:` and add `- {{ from: <source>, to: {}.{} }}` to `streams:`", c.name, f.name)),
        );
    }
}
