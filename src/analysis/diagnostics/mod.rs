//! The findings of the analysis, one module per diagnostic code. Each module defines its code
//! with [`code!`](crate::codes::code), whose doc comment is the explanation `blazes explain`
//! prints, and builds that code's diagnostics; [`crate::codes::ALL`] registers them.
//!
//! The three codes of a point of order (C001-C003) share `points`: which of them a point is
//! reported with, its note, its severity and its fix; each builds its own message.

mod c001_unordered_write;
mod c002_unprotected_read;
mod c003_transient_write;
mod c004_unsafe_sink;
mod c005_implicit_source;
mod c006_ineffective_seal;
mod c007_unreached;
mod c008_read_without_writer;
mod c009_unused_declaration;
mod points;

use std::borrow::Cow;

use petgraph::visit::{Bfs, Reversed};

pub use c001_unordered_write::UNORDERED_WRITE;
pub use c002_unprotected_read::UNPROTECTED_READ;
pub use c003_transient_write::INST_WRITE;
pub use c004_unsafe_sink::UNSAFE_SINK;
pub use c005_implicit_source::IMPLICIT_SOURCE;
pub use c006_ineffective_seal::INEFFECTIVE_SEAL;
pub use c007_unreached::UNREACHED;
pub use c008_read_without_writer::READ_WITHOUT_WRITER;
pub use c009_unused_declaration::UNUSED_DECLARATION;
pub use points::{PLAN_HELP, needs_advice, point_code};

use crate::diagnostic::{self, Diagnostic};
use crate::graph::{Dataflow, Path, StreamId, Vertex};
use crate::label::{FailOn, Label};

use super::verdicts::PointsByComponent;
use super::work::{self, NameLookup};
use super::{Analysis, Labels, SinkVerdict};

/// Every diagnostic of an analysed dataflow, sorted by position: a finding per point of order
/// and per failing sink, then the warnings.
pub(super) fn diagnose(
    df: &Dataflow,
    a: &Analysis,
    chain_notes: bool,
    fail_on: FailOn,
    lookup: NameLookup,
) -> Vec<Diagnostic> {
    let notes = Notes {
        df,
        labels: &a.labels,
        on: chain_notes,
    };
    let mut out = Vec::new();
    let upstream = upstream_of_failing_sinks(df, &a.sinks);
    for point in work::each(a.points.iter()) {
        let error = upstream[point.component.index()];
        out.push(notes.add(points::finding(df, point, error), &point.chain));
    }
    let by_component = PointsByComponent::new(df, &a.points);
    let taken = c004_unsafe_sink::TakenNames::new(df, lookup);
    for v in work::each(a.sinks.iter()).filter(|v| v.failing) {
        let (d, chain) =
            c004_unsafe_sink::finding(df, &a.labels, &a.points, &by_component, &taken, v, fail_on);
        out.push(notes.add(d, &chain));
    }
    c005_implicit_source::check(df, &mut out);
    c006_ineffective_seal::check(df, &a.labels, &mut out);
    c007_unreached::check(df, &a.labels, &mut out);
    c008_read_without_writer::check(df, &mut out);
    c009_unused_declaration::check(df, &mut out);
    diagnostic::sort(&mut out);
    out
}

/// The severity search: the components upstream of a failing sink. Their points of order are
/// errors; the others, whose damage every sink tolerates, are warnings.
fn upstream_of_failing_sinks(df: &Dataflow, sinks: &[SinkVerdict]) -> Vec<bool> {
    let mut upstream = vec![false; df.components.len()];
    let rev = Reversed(&df.graph);
    let mut failing = work::each(sinks.iter())
        .filter(|v| v.failing)
        .map(|v| df.sink_vertex[v.sink.index()]);
    if let Some(first) = failing.next() {
        // One breadth-first walk from all failing sinks at once: linear in the graph.
        let mut bfs = Bfs::new(rev, first);
        for v in failing {
            if !bfs.discovered.contains(v.index()) {
                bfs.discovered.insert(v.index());
                bfs.stack.push_back(v);
            }
        }
        while let Some(n) = bfs.next(rev) {
            work::add(1);
            if let Vertex::Component(c) = df.graph[n] {
                upstream[c.index()] = true;
            }
        }
    }
    upstream
}

/// Whether findings carry their provenance chain as related notes, one per stream.
struct Notes<'a> {
    df: &'a Dataflow,
    labels: &'a Labels,
    on: bool,
}

impl Notes<'_> {
    /// Adds the chain of streams as related notes, when they are on.
    fn add(&self, mut d: Diagnostic, chain: &[StreamId]) -> Diagnostic {
        work::add(chain.len() as u64);
        if !self.on {
            return d;
        }
        // Exactly: a big spec has millions of these notes, and growing would leave a quarter
        // of the room unused.
        d.related.reserve_exact(chain.len());
        let start = d.related.len();
        for &s in chain {
            let st = &self.df.streams[s.index()];
            let text: Cow<'static, str> = match self.labels.stream[s.index()] {
                None => "no source reaches this stream".into(),
                Some(Label::Async) => "Async from here".into(),
                Some(Label::Run) => "Run from here".into(),
                Some(Label::Inst) => "Inst from here".into(),
                Some(Label::Diverge) => "Diverge from here".into(),
                Some(l @ Label::Seal(_)) => {
                    format!("{} from here", l.display(&self.df.keys)).into()
                }
            };
            d = d.related(st.from_span, text);
        }
        // Bounded by the streams of a spec (`--max-streams`), far below u32::MAX.
        d.chain = start as u32..d.related.len() as u32;
        d
    }
}

/// A path's annotation as the messages write it: `OW(batch, word)`, `CW`.
fn path_desc(df: &Dataflow, p: &Path) -> String {
    crate::vocabulary::signature(p.annotation, p.gate, &df.keys)
}
