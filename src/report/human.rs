//! The default output: miette's graphical diagnostics (caret under the offending token, the
//! provenance chain as secondary labels), then a one-line summary per file.

use std::borrow::Cow;
use std::fmt;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};

use super::escape::{self, Escaped};
use super::format::{CheckWrite, Format, Settings};
use super::witness::{self, Witnesses};
use crate::check::{FileReport, Outcome};
use crate::diagnostic::{Diagnostic, LineIndex, Severity, Span};
use crate::label::Label;
use crate::report::grouped::thousands;
use crate::vocabulary::{noun, plural};

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

/// A file made ready to draw diagnostics on: its path and text with every control character
/// escaped ([`escape`]), so a spec cannot drive the terminal of whoever reads its report, and
/// the line indexes every diagnostic of the file shares.
pub struct Page<'a> {
    path: Cow<'a, str>,
    original: &'a str,
    escaped: Escaped<'a>,
    /// The line index of the escaped text.
    index: LineIndex,
    /// The original text's, for columns, when escaping changed the text.
    original_index: Option<LineIndex>,
}

impl<'a> Page<'a> {
    pub fn new(path: &'a str, text: &'a str) -> Self {
        let escaped = Escaped::new(text);
        let index = LineIndex::new(&escaped.text);
        let original_index = escaped.changed().then(|| LineIndex::new(text));
        Page {
            path: escape::one_line(path),
            original: text,
            escaped,
            index,
            original_index,
        }
    }

    fn text(&self) -> &str {
        &self.escaped.text
    }

    /// Line and column (characters of the spec's own text) of an offset of the escaped text.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        match &self.original_index {
            Some(index) => index.line_col(self.original, self.escaped.original(offset)),
            None => self.index.line_col(self.text(), offset),
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
    page: &'a Page<'a>,
}

impl SourceCode for Source<'_> {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let (text, index) = (self.page.text(), &self.page.index);
        let start = span.offset().min(text.len());
        let end = (start + span.len()).min(text.len());
        // Two spare lines on each side: miette's context algorithm must see the same
        // neighbourhood as in the whole text, or adjacent contexts stop merging.
        let first = index.line_of(start).saturating_sub(before + 2);
        let last = index.line_of(end).saturating_add(after + 3);
        let from = index.line_start(first, text);
        let to = index.line_start(last, text);
        let window = &text[from..to];
        let local = SourceSpan::new((start - from).into(), end - start);
        let inner = window.read_span(&local, before, after)?;
        // miette counts the column in bytes (it is 0 when context lines are asked for); the
        // `[file:line:column]` it prints must count characters, as every other format does.
        let column = match inner.column() {
            0 => 0,
            _ => self.page.line_col(start).1 - 1,
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.page.path.to_string(),
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
    /// The message, the notes' texts and the help, escaped to one line each.
    message: Cow<'a, str>,
    help: Option<Cow<'a, str>>,
    /// Whether miette draws the snippet (see [`MAX_SNIPPET_LINE`]).
    snippet: bool,
}

/// Longest line, in bytes, drawn as a snippet. miette pads labels with `format!` widths, which
/// panic past 65535 columns; a minified one-line spec would crash the report. Longer lines
/// get a plain location instead of a drawing.
const MAX_SNIPPET_LINE: usize = 2000;

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered<'_> {}

/// A span of the original text as a span of the page's escaped text, inside it.
fn clamp(page: &Page, span: Span) -> SourceSpan {
    let text = page.text();
    let offset = page.escaped.offset(span.offset).min(text.len());
    let end = page.escaped.offset(span.end()).clamp(offset, text.len());
    SourceSpan::new(offset.into(), end - offset)
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
        self.help
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
        let page = self.source.page;
        let primary = self.d.primary.as_ref()?;
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some(escape::one_line(&primary.text).into_owned()),
            clamp(page, primary.span),
        )];
        for n in &self.d.related {
            labels.push(LabeledSpan::new_with_span(
                Some(escape::one_line(&n.text).into_owned()),
                clamp(page, n.span),
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

/// One diagnostic, rendered with its snippet. Prepares the whole file: to render many
/// diagnostics of one file, use [`render_on`] with one [`Page`].
pub fn render_diagnostic(d: &Diagnostic, path: &str, text: &str, style: Style) -> String {
    render_on(d, &Page::new(path, text), style)
}

/// One diagnostic of the file `page` shows, with its snippet.
pub fn render_on(d: &Diagnostic, page: &Page, style: Style) -> String {
    let mut out = String::new();
    let (text, index) = (page.text(), &page.index);
    let line_len = |offset: usize| {
        let line = index.line_of(page.escaped.offset(offset).min(text.len()));
        index.line_start(line + 1, text) - index.line_start(line, text)
    };
    // A file with no text (unreadable, binary) has no snippet to draw: an empty box says
    // nothing, and the message already names the file.
    let empty = page.original.is_empty();
    let snippet = !empty
        && d.primary.iter().chain(&d.related).all(|n| {
            line_len(n.span.offset) <= MAX_SNIPPET_LINE
                && line_len(n.span.end()) <= MAX_SNIPPET_LINE
        });
    let r = Rendered {
        d,
        source: Source { page },
        message: escape::one_line(&d.message),
        help: d.help.as_deref().map(escape::visible),
        snippet,
    };
    handler(style)
        .render_report(&mut out, &r)
        .expect("writing to a String cannot fail");
    if empty && d.primary.is_some() {
        // Where, without a box around nothing: the file itself.
        out.push_str(&format!("   at [{}]\n", page.path));
    }
    if !snippet && !empty {
        for (i, n) in d.primary.iter().chain(&d.related).enumerate() {
            let at = page.escaped.offset(n.span.offset.min(page.original.len()));
            let (line, col) = page.line_col(at);
            let what = if n.text.is_empty() {
                "here".into()
            } else {
                escape::one_line(&n.text)
            };
            let long = if i == 0 {
                " (the line is too long to show)"
            } else {
                ""
            };
            out.push_str(&format!(
                "   at [{}:{line}:{col}]: {what}{long}\n",
                page.path
            ));
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
    page: &Page,
    style: Style,
) -> String {
    let Some(primary) = &d.primary else {
        return render_on(d, page, style);
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
            let (line, col) = match at.index {
                Some(index) => index.line_col(at.text, at.span.offset),
                None => LineIndex::new(at.text).line_col(at.text, at.span.offset),
            };
            let what = if n.text.is_empty() { "here" } else { &n.text };
            elsewhere.push(format!(
                "   at [{}:{line}:{col}]: {}\n",
                escape::one_line(at.path),
                escape::one_line(what)
            ));
        }
    }
    let mut out = render_on(&local, &Page::new(home.path, home.text), style);
    for e in elsewhere {
        out.push_str(&e);
    }
    if let Some(u) = r.used_from(primary.span) {
        out.push_str(&format!("   {}\n", escape::one_line(&u.to_string())));
    }
    out
}

/// The one-line summary of a file, escaped to one line ([`escape::one_line`]).
pub fn summary(r: &FileReport) -> String {
    escape::one_line(&summary_text(r)).into_owned()
}

fn summary_text(r: &FileReport) -> String {
    match &r.outcome {
        Outcome::Invalid(d) => format!(
            "{}: invalid {}, {}",
            r.path,
            r.input.noun(),
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
            parts.push(barriers_named(a));
            parts.push(plural(warnings, "warning", "warnings"));
            format!("{}: {}", r.path, parts.join("; "))
        }
    }
}

/// The seal barriers the runtime must provide, named as JSON's `seal_barriers` names them
/// (`Count.words by [batch], waiting for tweets`): the first few, and a count of the rest.
fn barriers_named(a: &crate::check::Analysed) -> String {
    const SHOWN: usize = 3;
    let (df, bs) = (&a.dataflow, &a.analysis.barriers);
    let counted = plural(bs.len(), "seal barrier", "seal barriers");
    if bs.is_empty() {
        return counted;
    }
    let mut named: Vec<String> = bs
        .iter()
        .take(SHOWN)
        .map(|b| {
            let keys = df.keys.names(b.key);
            let by = if keys.is_empty() {
                "whole (a bounded input)".to_string()
            } else {
                format!("by [{}]", keys.join(", "))
            };
            format!(
                "{}.{} {by}, waiting for {}",
                df.component(b.component).name,
                df.iface(b.input).name,
                crate::analysis::producer_names(df, &b.producers).join(", ")
            )
        })
        .collect();
    if bs.len() > SHOWN {
        named.push(format!("and {} more", thousands(bs.len() - SHOWN)));
    }
    format!("{counted} ({})", named.join("; "))
}

/// How many diagnostics the human report shows in full by default: a screenful or two of the
/// most severe; a count says how many more there are.
pub const DEFAULT_MAX_RESULTS: usize = 50;

/// The most severe [`DEFAULT_MAX_RESULTS`] diagnostics of every file, then a summary line per
/// file.
pub fn render(reports: &[FileReport], style: Style) -> String {
    render_with(reports, style, None, DEFAULT_MAX_RESULTS)
}

/// Which diagnostics to show when at most `max` may be: errors before warnings, each in output
/// order (files in the order given, a file's diagnostics by position). `keep[file][i]`.
fn select(reports: &[FileReport], max: usize) -> Vec<Vec<bool>> {
    let mut left = max;
    let mut keep: Vec<Vec<bool>> = reports
        .iter()
        .map(|r| vec![false; r.diagnostics().len()])
        .collect();
    for severity in [Severity::Error, Severity::Warning] {
        for (file, r) in reports.iter().enumerate() {
            for (i, d) in r.diagnostics().iter().enumerate() {
                if left > 0 && d.severity == severity {
                    keep[file][i] = true;
                    left -= 1;
                }
            }
        }
    }
    keep
}

/// [`render`], at most `max` diagnostics in full (the most severe: see [`DEFAULT_MAX_RESULTS`];
/// a line counts the others), with the witness of each unsafe sink (C004) under its diagnostic
/// when `witnesses` is given (`blazes check --witness`).
pub fn render_with(
    reports: &[FileReport],
    style: Style,
    witnesses: Option<&Witnesses>,
    max: usize,
) -> String {
    let keep = select(reports, max);
    let mut out = String::new();
    for (file, r) in reports.iter().enumerate() {
        if !keep[file].contains(&true) {
            continue;
        }
        let page = Page::new(&r.path, &r.text);
        let sinks = match (&r.outcome, witnesses) {
            (Outcome::Analysed(a), Some(_)) => witness::c004_sinks(a),
            _ => Vec::new(),
        };
        let places = super::located::Places::new(r);
        for (i, d) in r.diagnostics().iter().enumerate() {
            if !keep[file][i] {
                continue;
            }
            if r.files.is_composed() {
                out.push_str(&render_composed(r, &places, d, &page, style));
            } else {
                out.push_str(&render_on(d, &page, style));
            }
            if let (Some(w), Some(Some(sink))) = (witnesses, sinks.get(i)) {
                out.push_str(&escape::visible(&witness_block(w, file, *sink)));
            }
            out.push('\n');
        }
    }
    let total: usize = reports.iter().map(|r| r.diagnostics().len()).sum();
    if total > max {
        let more = total - max;
        out.push_str(&format!(
            "... and {} more {} (use --max-results to show more)\n\n",
            thousands(more),
            noun(more, "finding", "findings")
        ));
    }
    for r in reports {
        if let Outcome::Analysed(a) = &r.outcome {
            out.push_str(&super::summary::human(&a.summaries));
        }
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

/// `--format human` of `blazes check`: [`render_with`], coloured as [`Settings::color`] says,
/// at most [`Settings::max_results`] diagnostics in full ([`DEFAULT_MAX_RESULTS`] by default).
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
    let max = s.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
    out.write_all(render_with(reports, style, s.witnesses, max).as_bytes())
}
