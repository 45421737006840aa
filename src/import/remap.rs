//! Moving a report on a generated spec into the topology file it was generated from.
//!
//! Reports locate everything by spans into [`FileReport::text`]: diagnostics and the spans the
//! dataflow keeps (paths' labels, streams, sinks), which some formats read directly (SARIF's
//! related locations, GitHub's annotations, the JSON's points of order) and match with the
//! diagnostics' spans. So every span of both is mapped through the same [`SourceMap`], and the
//! text becomes the file's: every format then points into the file without knowing it was
//! imported.

use super::SourceMap;
use crate::check::{FileReport, Outcome};
use crate::diagnostic::Diagnostic;

pub(super) fn into_file(report: &mut FileReport, map: &SourceMap, text: String) {
    let m = |s: &mut crate::diagnostic::Span| *s = map.map(*s);
    let diagnostics = |ds: &mut [Diagnostic]| {
        for d in ds {
            if let Some(p) = &mut d.primary {
                p.span = map.map(p.span);
            }
            for n in &mut d.related {
                n.span = map.map(n.span);
            }
        }
    };
    match &mut report.outcome {
        Outcome::Invalid(ds) => diagnostics(ds),
        Outcome::Analysed(a) => {
            diagnostics(&mut a.diagnostics);
            diagnostics(&mut a.analysis.diagnostics);
            let df = &mut a.dataflow;
            for c in &mut df.components {
                m(&mut c.span);
                m(&mut c.body);
                for p in &mut c.paths {
                    m(&mut p.label_span);
                    m(&mut p.span);
                }
            }
            for i in &mut df.ifaces {
                m(&mut i.span);
            }
            for s in &mut df.sources {
                m(&mut s.span);
                m(&mut s.body);
            }
            for s in &mut df.sinks {
                m(&mut s.span);
            }
            for s in &mut df.streams {
                m(&mut s.from_span);
                m(&mut s.to_span);
                m(&mut s.span);
                if let Some(seal) = &mut s.seal_span {
                    m(seal);
                }
            }
        }
    }
    report.text = text;
}
