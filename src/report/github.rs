//! `--format github`: GitHub Actions workflow commands (`::error file=...,line=...::msg`), one
//! per finding (a point of order carries the sinks it breaks), so findings appear inline on
//! the pull request's changed files. GitHub shows at most 10 error and 10 warning annotations
//! of a step (and 50 of a job); more would only be noise in the log, so the most severe of
//! each level are printed and a notice counts the rest.
//!
//! The escaping is the one GitHub's own toolkit (`@actions/core`) applies: `%`, CR and LF in
//! the message; additionally `:` and `,` in property values, which would otherwise end the
//! value early.

use super::escape;
use super::format::{CheckWrite, Format};
use crate::check::{FileReport, Outcome};
use crate::diagnostic::{LineIndex, Severity};
use crate::report::grouped::{self, Finding, Kind};
use crate::report::witness::{self, Witnesses};
use crate::vocabulary;

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(&escape::one_line(s))
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// GitHub resolves `file=` against the repository root; `./` prefixes confuse the matching
/// against the diff, so they are dropped.
fn file_property(path: &str) -> String {
    let mut p = path.replace('\\', "/");
    while let Some(r) = p.strip_prefix("./") {
        p = r.to_string();
    }
    p
}

/// How many annotations of each level are printed by default: what GitHub shows of a step
/// (10 errors and 10 warnings; 50 per job).
pub const DEFAULT_MAX_PER_LEVEL: usize = 10;

/// How many failing sinks a point of order's annotation lists; it counts the others.
pub const MAX_SINKS_LISTED: usize = 10;

/// The witness lines of sink `sink` of report `file` (`--witness`), indented under its line.
fn witness_lines(w: &Witnesses, file: usize, sink: usize) -> String {
    let (Some(r), Some(how)) = (w.sink(file, sink), w.exploration(file)) else {
        return String::new();
    };
    match &r.witness {
        Some(wt) => {
            let lines = witness::compact(wt, &r.name, &how);
            lines.iter().map(|l| format!("\n    {l}")).collect()
        }
        None => format!("\n    {}", witness::none_found(&r.name, r.observed, &how)),
    }
}

fn command(
    reports: &[FileReport],
    index: &LineIndex,
    f: &Finding,
    witnesses: Option<&Witnesses>,
) -> String {
    let r = &reports[f.file];
    let path = r.path.as_str();
    let d = grouped::diagnostic(reports, f);
    let kind = vocabulary::github_command(d.severity);
    let mut props = Vec::new();
    let places = super::located::Places::new(r);
    // A composed spec's finding in a used file is annotated on that file.
    let primary = d.primary.as_ref().map(|p| places.place(p.span));
    let path = primary.as_ref().map_or(path, |p| p.path);
    if path != "<stdin>" {
        props.push(format!("file={}", escape_property(&file_property(path))));
        if let Some(p) = &primary {
            let (text, index) = (p.text, p.index.unwrap_or(index));
            let (line, col) = index.line_col(text, p.span.offset);
            let (end_line, end_col) = index.line_col(text, p.span.end());
            props.push(format!("line={line}"));
            props.push(format!("col={col}"));
            // GitHub only honours endColumn on single-line annotations.
            if end_line == line {
                props.push(format!("endColumn={end_col}"));
            } else {
                props.push(format!("endLine={end_line}"));
            }
        }
    }
    props.push(format!(
        "title={}",
        escape_property(&format!("{} {}", d.code.id, d.code.name))
    ));
    let mut msg = d.message.clone();
    let at = |span: crate::diagnostic::Span| {
        let p = places.place(span);
        let (line, col) = p.index.unwrap_or(index).line_col(p.text, p.span.offset);
        (line, col)
    };
    if let Some(u) = d.primary.as_ref().and_then(|p| r.used_from(p.span)) {
        msg.push_str(&format!("\n  {u}"));
    }
    // A note in another file than the annotation's names it: its line alone would be read in
    // the annotated file.
    let home = d.primary.as_ref().map(|p| places.place(p.span).path);
    let note_at = |span: crate::diagnostic::Span| {
        let (line, col) = at(span);
        match places.place(span).path {
            p if Some(p) != home && r.files.is_composed() => format!("{p}:{line}:{col}"),
            _ => format!("{line}:{col}"),
        }
    };
    match (&r.outcome, &f.kind) {
        (Outcome::Analysed(a), Kind::Point { .. } | Kind::Sink { .. }) => {
            let (df, an) = (&a.dataflow, &a.analysis);
            if let Some(o) = f.origin(reports) {
                let streams = vocabulary::plural(o.streams, "stream", "streams");
                msg.push_str(&format!(
                    "\n  {}: {} from here ({streams} upstream)",
                    note_at(o.from_span),
                    o.label
                ));
            }
            if let (Some(w), Kind::Sink { verdict }) = (witnesses, &f.kind) {
                msg.push_str(&witness_lines(w, f.file, an.sinks[*verdict].sink.index()));
            }
            if let Kind::Point { sinks, .. } = &f.kind {
                let diags = r.diagnostics();
                for b in sinks.iter().take(MAX_SINKS_LISTED) {
                    let s = an.sinks[b.verdict].sink.index();
                    let sink = &df.sinks[s];
                    msg.push_str(&format!(
                        "\n  {}: {}",
                        note_at(sink.span),
                        diags[b.diagnostic].message
                    ));
                    if let Some(w) = witnesses {
                        msg.push_str(&witness_lines(w, f.file, s));
                    }
                }
                if sinks.len() > MAX_SINKS_LISTED {
                    msg.push_str(&format!(
                        "\n  and {} more failing sinks",
                        grouped::thousands(sinks.len() - MAX_SINKS_LISTED)
                    ));
                }
            }
            // The notes besides the chain (the feed of a module that makes the point).
            for n in d.notes_besides_chain() {
                msg.push_str(&format!("\n  {}: {}", note_at(n.span), n.text));
            }
        }
        _ => {
            for n in &d.related {
                msg.push_str(&format!("\n  {}: {}", note_at(n.span), n.text));
            }
        }
    }
    if let Some(h) = &d.help {
        msg.push_str(&format!("\nhelp: {h}"));
    }
    // GitHub's log viewer acts on ANSI sequences: the spec's text is escaped visibly first.
    format!(
        "::{kind} {}::{}\n",
        props.join(","),
        escape_data(&escape::visible(&msg))
    )
}

/// [`render_bounded`] with GitHub's per-step limits.
pub fn render(reports: &[FileReport]) -> String {
    render_bounded(reports, DEFAULT_MAX_PER_LEVEL)
}

/// One workflow command per finding (a point of order with the sinks it breaks, see
/// [`grouped`]), files in the order given, findings in their sorted order, at most
/// `max_per_level` errors and as many warnings: the most severe of each. When some were left
/// out, a final notice says how many. A file with no diagnostic prints nothing.
pub fn render_bounded(reports: &[FileReport], max_per_level: usize) -> String {
    render_bounded_with(reports, max_per_level, None)
}

/// [`render_bounded`], with a compact witness under each failing sink when `witnesses` is
/// given (`blazes check --witness`).
pub fn render_bounded_with(
    reports: &[FileReport],
    max_per_level: usize,
    witnesses: Option<&Witnesses>,
) -> String {
    let findings = grouped::findings(reports);
    let (errors, warnings): (Vec<usize>, Vec<usize>) =
        (0..findings.len()).partition(|&i| findings[i].severity == Severity::Error);
    let mut keep = vec![false; findings.len()];
    for level in [errors, warnings] {
        let chosen = grouped::select_among(&findings, &level, max_per_level);
        for i in chosen {
            keep[i] = true;
        }
    }
    let mut out = String::new();
    let mut index: Option<(usize, LineIndex)> = None;
    for (f, _) in findings.iter().zip(&keep).filter(|(_, k)| **k) {
        if index.as_ref().is_none_or(|(file, _)| *file != f.file) {
            index = Some((f.file, LineIndex::new(&reports[f.file].text)));
        }
        let (_, index) = index.as_ref().expect("set above");
        out.push_str(&command(reports, index, f, witnesses));
    }
    for r in reports {
        if let crate::check::Outcome::Analysed(a) = &r.outcome
            && !a.denied.is_empty()
        {
            out.push_str(&format!(
                "::error title={}::{}: failed by denied warnings: {}\n",
                escape_property("blazes: denied warnings"),
                escape_data(&escape::one_line(&r.path)),
                a.denied.join(", ")
            ));
        }
    }
    let (errors, warnings) = grouped::left_out(&findings, &keep);
    if errors + warnings > 0 {
        out.push_str(&format!(
            "::notice title={}::{} {} and {} {} left out: GitHub shows at most 10 error and 10 warning annotations per step (50 per job), and those above are the most severe. Run `blazes check` for every finding, or pass --max-results N.\n",
            escape_property(&format!(
                "blazes: {} {} not annotated",
                grouped::thousands(errors + warnings),
                vocabulary::noun(errors + warnings, "finding", "findings")
            )),
            grouped::thousands(errors),
            vocabulary::noun(errors, "error", "errors"),
            grouped::thousands(warnings),
            vocabulary::noun(warnings, "warning was", "warnings were")
        ));
    }
    out
}

/// `--format github` of `blazes check`: [`render_bounded`], at most
/// [`Settings::max_results`](super::format::Settings::max_results) annotations per level ([`DEFAULT_MAX_PER_LEVEL`] by default).
pub const FORMAT: Format<CheckWrite> = Format {
    name: "github",
    help: Some("GitHub Actions workflow commands: inline annotations on a pull request"),
    chain_notes: false,
    write: |reports, s, out| {
        let max = s.max_results.unwrap_or(DEFAULT_MAX_PER_LEVEL);
        out.write_all(render_bounded_with(reports, max, s.witnesses).as_bytes())
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_toolkit() {
        assert_eq!(escape_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(file_property("./specs/x.yaml"), "specs/x.yaml");
    }
}
