//! The default output: miette's graphical diagnostics (caret under the offending token, the
//! provenance chain as secondary labels), then a one-line summary per file.

use std::fmt;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};

use super::format::{CheckWrite, Format, Settings};
use super::witness::{self, Witnesses};
use crate::check::{FileReport, Outcome};
use crate::diagnostic::{Diagnostic, LineIndex, Severity};
use crate::label::Label;
use crate::vocabulary::plural;

/// How the human report looks: colours, and the width it wraps at.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    /// Terminal width to wrap to.
    pub width: usize,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            color: false,
            width: 100,
        }
    }
}

/// The spec text under the path the user gave.
///
/// miette's own `read_span` on a `str` walks the text from its start to find line numbers, so
/// rendering every diagnostic of a file would be quadratic: a hostile spec with a hundred
/// thousand errors would hang the check. This reads only the lines around the span, numbered
/// with a line index built once per file.
struct Source<'a> {
    name: &'a str,
    text: &'a str,
    index: &'a LineIndex,
}

impl SourceCode for Source<'_> {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset().min(self.text.len());
        let end = (start + span.len()).min(self.text.len());
        // Two spare lines on each side: miette's context algorithm must see the same
        // neighbourhood as in the whole text, or adjacent contexts stop merging.
        let first = self.index.line_of(start).saturating_sub(before + 2);
        let last = self.index.line_of(end).saturating_add(after + 3);
        let from = self.index.line_start(first, self.text);
        let to = self.index.line_start(last, self.text);
        let window = &self.text[from..to];
        let local = SourceSpan::new((start - from).into(), end - start);
        let inner = window.read_span(&local, before, after)?;
        // miette counts the column in bytes (it is 0 when context lines are asked for); the
        // `[file:line:column]` it prints must count characters, as every other format does.
        let column = match inner.column() {
            0 => 0,
            _ => self.index.line_col(self.text, start).1 - 1,
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            inner.data(),
            SourceSpan::new((inner.span().offset() + from).into(), inner.span().len()),
            inner.line() + first,
            column,
            // miette merges two labels' snippets when `line() + line_count()` of the first
            // reaches the second's `line()`. For a `str`, miette's `line_count` counts from the
            // start of the input, so every label after the first merged into one snippet that
            // printed every line in between: thousands of lines per finding on a generated
            // fleet (a 17 MB spec printed 2.4 GB). Counted from the window's start, only
            // snippets within a few lines of each other merge.
            inner.line_count(),
        )))
    }
}

struct Rendered<'a> {
    d: &'a Diagnostic,
    source: Source<'a>,
    /// Whether miette draws the snippet (see [`MAX_SNIPPET_LINE`]).
    snippet: bool,
}

/// Longest line, in bytes, drawn as a snippet. miette pads labels with `format!` widths, which
/// panic past 65535 columns; a minified one-line spec would crash the report. Longer lines
/// get a plain location instead of a drawing.
const MAX_SNIPPET_LINE: usize = 2000;

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl std::error::Error for Rendered<'_> {}

fn clamp(text: &str, offset: usize, len: usize) -> SourceSpan {
    let offset = offset.min(text.len());
    let len = len.min(text.len() - offset);
    SourceSpan::new(offset.into(), len)
}

impl miette::Diagnostic for Rendered<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!(
            "{}({})",
            self.d.code.id, self.d.code.name
        )))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.d
            .primary
            .as_ref()
            .filter(|_| self.snippet)
            .map(|_| &self.source as &dyn SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if !self.snippet {
            return None;
        }
        let text = self.source.text;
        let primary = self.d.primary.as_ref()?;
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some(primary.text.to_string()),
            clamp(text, primary.span.offset, primary.span.len),
        )];
        for n in &self.d.related {
            labels.push(LabeledSpan::new_with_span(
                Some(n.text.to_string()),
                clamp(text, n.span.offset, n.span.len),
            ));
        }
        Some(Box::new(labels.into_iter()))
    }
}

fn handler(style: Style) -> GraphicalReportHandler {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_links(false)
}

/// One diagnostic, rendered with its snippet. Builds a line index of `text`: to render many
/// diagnostics of one file, use [`render_diagnostic_indexed`] with one index.
pub fn render_diagnostic(d: &Diagnostic, path: &str, text: &str, style: Style) -> String {
    render_diagnostic_indexed(d, path, text, &LineIndex::new(text), style)
}

/// [`render_diagnostic`] with the file's line index.
pub fn render_diagnostic_indexed(
    d: &Diagnostic,
    path: &str,
    text: &str,
    index: &LineIndex,
    style: Style,
) -> String {
    let mut out = String::new();
    let line_len = |offset: usize| {
        let line = index.line_of(offset.min(text.len()));
        index.line_start(line + 1, text) - index.line_start(line, text)
    };
    let snippet = d.primary.iter().chain(&d.related).all(|n| {
        line_len(n.span.offset) <= MAX_SNIPPET_LINE && line_len(n.span.end()) <= MAX_SNIPPET_LINE
    });
    let r = Rendered {
        d,
        source: Source {
            name: path,
            text,
            index,
        },
        snippet,
    };
    handler(style)
        .render_report(&mut out, &r)
        .expect("writing to a String cannot fail");
    if !snippet {
        for (i, n) in d.primary.iter().chain(&d.related).enumerate() {
            let (line, col) = index.line_col(text, n.span.offset);
            let what = if n.text.is_empty() { "here" } else { &n.text };
            let long = if i == 0 {
                " (the line is too long to show)"
            } else {
                ""
            };
            out.push_str(&format!("   at [{path}:{line}:{col}]: {what}{long}\n"));
        }
    }
    out
}

/// A diagnostic of a composed spec, drawn in the file its primary span is in: its notes in
/// that file are drawn with it, a note in another file is a line `at [file:line:col]`, and the
/// chain of uses ends it.
fn render_composed(
    r: &FileReport,
    places: &super::located::Places,
    d: &Diagnostic,
    root: &LineIndex,
    style: Style,
) -> String {
    let Some(primary) = &d.primary else {
        return render_diagnostic_indexed(d, &r.path, &r.text, root, style);
    };
    let home = places.place(primary.span);
    let mut local = d.clone();
    let mut elsewhere = Vec::new();
    if let Some(p) = &mut local.primary {
        p.span = home.span;
    }
    local.related.clear();
    for n in &d.related {
        let at = places.place(n.span);
        if at.path == home.path && std::ptr::eq(at.text, home.text) {
            local.related.push(crate::diagnostic::Note {
                span: at.span,
                text: n.text.clone(),
            });
        } else {
            let (line, col) = at.index.unwrap_or(root).line_col(at.text, at.span.offset);
            let what = if n.text.is_empty() { "here" } else { &n.text };
            elsewhere.push(format!("   at [{}:{line}:{col}]: {what}\n", at.path));
        }
    }
    let mut out = render_diagnostic_indexed(
        &local,
        home.path,
        home.text,
        home.index.unwrap_or(root),
        style,
    );
    for e in elsewhere {
        out.push_str(&e);
    }
    if let Some(u) = r.used_from(primary.span) {
        out.push_str(&format!("   {u}\n"));
    }
    out
}

/// The one-line summary of a file.
pub fn summary(r: &FileReport) -> String {
    match &r.outcome {
        Outcome::Invalid(d) => format!(
            "{}: invalid spec, {}",
            r.path,
            plural(d.len(), "error", "errors")
        ),
        Outcome::Analysed(a) => {
            let df = &a.dataflow;
            let failing: Vec<String> = a
                .analysis
                .sinks
                .iter()
                .filter(|v| v.failing)
                .map(|v| {
                    format!(
                        "{} ({})",
                        df.sinks[v.sink.index()].name,
                        v.label.map_or("no source reaches it".into(), |l: Label| l
                            .display(&df.keys))
                    )
                })
                .collect();
            let warnings = a
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Warning)
                .count();
            let points = a.analysis.points.len();
            let barriers = a.analysis.barriers.len();
            let mut parts = vec![];
            if failing.is_empty() && !a.denied.is_empty() {
                parts.push(format!(
                    "failed by denied warnings: {} ({})",
                    a.denied.join(", "),
                    plural(a.analysis.sinks.len(), "sink", "sinks")
                ));
            } else if failing.is_empty() {
                parts.push(format!(
                    "ok, every sink gets what it tolerates ({})",
                    plural(a.analysis.sinks.len(), "sink", "sinks")
                ));
            } else {
                // A generated fleet can have thousands of failing sinks: name a few, count the rest.
                const SHOWN: usize = 5;
                let mut names = failing
                    .iter()
                    .take(SHOWN)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if failing.len() > SHOWN {
                    names.push_str(&format!(" and {} more", failing.len() - SHOWN));
                }
                parts.push(format!(
                    "{}: {names}",
                    plural(failing.len(), "unsafe sink", "unsafe sinks")
                ));
            }
            if !failing.is_empty() && !a.denied.is_empty() {
                parts.push(format!("denied warnings: {}", a.denied.join(", ")));
            }
            parts.push(plural(points, "point of order", "points of order"));
            parts.push(plural(barriers, "seal barrier", "seal barriers"));
            parts.push(plural(warnings, "warning", "warnings"));
            format!("{}: {}", r.path, parts.join("; "))
        }
    }
}

/// Every diagnostic of every file, then a summary line per file.
pub fn render(reports: &[FileReport], style: Style) -> String {
    render_with(reports, style, None)
}

/// [`render`], with the witness of each unsafe sink (C004) under its diagnostic when
/// `witnesses` is given (`blazes check --witness`).
pub fn render_with(reports: &[FileReport], style: Style, witnesses: Option<&Witnesses>) -> String {
    let mut out = String::new();
    for (file, r) in reports.iter().enumerate() {
        let index = LineIndex::new(&r.text);
        let sinks = match (&r.outcome, witnesses) {
            (Outcome::Analysed(a), Some(_)) => witness::c004_sinks(a),
            _ => Vec::new(),
        };
        let places = super::located::Places::new(r);
        for (i, d) in r.diagnostics().iter().enumerate() {
            if r.files.is_composed() {
                out.push_str(&render_composed(r, &places, d, &index, style));
            } else {
                out.push_str(&render_diagnostic_indexed(
                    d, &r.path, &r.text, &index, style,
                ));
            }
            if let (Some(w), Some(Some(sink))) = (witnesses, sinks.get(i)) {
                out.push_str(&witness_block(w, file, *sink));
            }
            out.push('\n');
        }
    }
    for r in reports {
        out.push_str(&summary(r));
        out.push('\n');
    }
    out
}

/// The witness of sink `sink` of report `file`, indented under its C004 diagnostic.
fn witness_block(w: &Witnesses, file: usize, sink: usize) -> String {
    let (Some(r), Some(how)) = (w.sink(file, sink), w.exploration(file)) else {
        return String::new();
    };
    let how = format!(
        "{how}, {} per replicated component",
        plural(w.replicas, "instance", "instances")
    );
    match &r.witness {
        Some(wt) => format!(
            "  {}\n{}",
            witness::headline(wt, &r.name, &how),
            witness::side_by_side(wt, &r.name, "   ")
        ),
        None => format!("  {}\n", witness::none_found(&r.name, r.observed, &how)),
    }
}

/// `--format human` of `blazes check`: [`render`], coloured as [`Settings::color`] says.
pub const FORMAT: Format<CheckWrite> = Format {
    name: "human",
    help: Some("Diagnostics with carets under the spec text, and a summary per file"),
    chain_notes: true,
    write: write_format,
};

fn write_format(
    reports: &[FileReport],
    s: &Settings,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let style = Style {
        color: s.color,
        ..Default::default()
    };
    out.write_all(render_with(reports, style, s.witnesses).as_bytes())
}
