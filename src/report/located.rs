//! Where a span of a composed spec is, for every format: the used file it was written in, its
//! line index (built once per file, when a span first lands in it), and the chain of uses.
//! A flat spec's spans are all in the report's own text; the formats keep their own index for
//! it and ask here only when [`FileReport::files`](crate::check::FileReport::files) is composed.

use std::cell::OnceCell;

use crate::check::FileReport;
use crate::diagnostic::{LineIndex, Span};

/// The line indexes of a report's used files.
pub struct Places<'r> {
    report: &'r FileReport,
    used: Vec<OnceCell<LineIndex>>,
}

/// A span in the file it is in.
pub struct Place<'r, 'p> {
    pub path: &'r str,
    pub text: &'r str,
    /// `None` for the root file: the caller's own index.
    pub index: Option<&'p LineIndex>,
    pub span: Span,
}

impl<'r> Places<'r> {
    pub fn new(report: &'r FileReport) -> Self {
        Places {
            report,
            used: report.files.files.iter().map(|_| OnceCell::new()).collect(),
        }
    }

    /// The file, text, index and local span of `span`.
    pub fn place(&self, span: Span) -> Place<'r, '_> {
        let r = self.report;
        if !r.files.is_composed() {
            return Place {
                path: &r.path,
                text: &r.text,
                index: None,
                span,
            };
        }
        let l = r.files.locate(span);
        let text = r.files.text(l.file, &r.text);
        Place {
            path: r.files.path(l.file, &r.path),
            text,
            index: l
                .file
                .map(|f| self.used[f].get_or_init(|| LineIndex::new(text))),
            span: l.span,
        }
    }

    /// Line and column (1-based, columns in characters) of `span`'s start, in its file;
    /// `root` is the caller's index of the root file.
    pub fn line_col(&self, span: Span, root: &LineIndex) -> (usize, usize) {
        let p = self.place(span);
        p.index.unwrap_or(root).line_col(p.text, p.span.offset)
    }
}
