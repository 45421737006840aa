//! `--format sarif`: one SARIF 2.1.0 log with one run, as GitHub code scanning ingests it.
//!
//! The rules are the diagnostic code registry ([`crate::codes`]), with the same text
//! `blazes explain` prints, so the code scanning UI and the terminal never disagree. Columns
//! are UTF-16 code units (SARIF's default `columnKind`, stated explicitly on the run) because
//! that is what GitHub and the SARIF viewers compute positions in.

mod codeflow;
mod fingerprint;
mod uri;

use std::io::{self, Write};

use serde::{Serialize, Serializer};
use serde_sarif::sarif::{
    MultiformatMessageString, ReportingConfiguration, ReportingDescriptor, Tool, ToolComponent,
};

use super::format::{CheckWrite, Format};
use crate::check::{FileReport, Outcome};
use crate::codes::{self, Code};
use crate::diagnostic::{LineIndex, Severity, Span};
use crate::report::grouped::{self, Finding, Kind};
use crate::report::witness::Witnesses;
use crate::vocabulary;
use fingerprint::fingerprints;
pub use uri::artifact_uri;

/// The OASIS schema of the format version we write.
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Where people learn what the tool does: the crate's repository when Cargo.toml names one,
/// else the paper the analysis implements.
pub const INFORMATION_URI: &str = {
    let repo = env!("CARGO_PKG_REPOSITORY");
    if repo.is_empty() {
        "https://arxiv.org/abs/1309.3324"
    } else {
        repo
    }
};

/// The key of our `partialFingerprints` entry; bump the version when the hashed fields change,
/// so code scanning treats old and new fingerprints as different schemes instead of
/// mismatching them.
pub const FINGERPRINT_KEY: &str = "blazes/v2";

/// The base the artifact URIs are relative to (GitHub resolves it to the repository root).
pub const SRCROOT: &str = "%SRCROOT%";

/// How many results a log keeps by default: what GitHub code scanning shows of a run (it
/// rejects a run of more than 25,000 and shows the 5,000 most severe).
pub const DEFAULT_MAX_RESULTS: usize = 5000;

/// How many failing sinks a point of order's result names; the message counts the others.
pub const MAX_SINKS_LISTED: usize = 10;

/// Renders the reports as one SARIF log (pretty-printed JSON, trailing newline) of at most
/// [`DEFAULT_MAX_RESULTS`] results. `cwd` makes absolute spec paths relative; relative paths
/// are used as given.
pub fn render(reports: &[FileReport], cwd: Option<&std::path::Path>) -> String {
    let mut out = Vec::new();
    write(reports, cwd, DEFAULT_MAX_RESULTS, &mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Writes the reports as one SARIF log of at most `max_results` results (the most severe,
/// see [`grouped::select`]; the run's notifications say how many were left out). The results
/// are serialised one by one as they are written: the log is never held whole.
pub fn write(
    reports: &[FileReport],
    cwd: Option<&std::path::Path>,
    max_results: usize,
    out: &mut impl Write,
) -> io::Result<()> {
    write_with(reports, cwd, max_results, None, out)
}

/// [`write()`], with the witnesses of `blazes check --witness`: each result that reports a
/// failing sink says whether a witness was found, and carries it as a `codeFlow`.
pub fn write_with(
    reports: &[FileReport],
    cwd: Option<&std::path::Path>,
    max_results: usize,
    witnesses: Option<&Witnesses>,
    out: &mut impl Write,
) -> io::Result<()> {
    let findings = grouped::findings(reports);
    let keep = grouped::select(&findings, max_results);
    let uris: Vec<Option<(String, bool)>> =
        reports.iter().map(|r| artifact_uri(&r.path, cwd)).collect();
    let fingerprints = fingerprints(reports, &uris, &findings);
    let (errors, warnings) = grouped::left_out(&findings, &keep);
    let notifications = if errors + warnings == 0 {
        Vec::new()
    } else {
        vec![Notification {
            level: vocabulary::sarif_level(Severity::Warning),
            message: Text {
                text: format!(
                    "{} of {} results {} left out ({} {}, {} {}): this log keeps the {} most severe (--max-results {}). GitHub code scanning rejects a run of more than 25,000 results and shows its 5,000 most severe; pass --max-results N to keep more, or run `blazes check` for every finding.",
                    grouped::thousands(errors + warnings),
                    grouped::thousands(findings.len()),
                    vocabulary::noun(errors + warnings, "was", "were"),
                    grouped::thousands(errors),
                    vocabulary::noun(errors, "error", "errors"),
                    grouped::thousands(warnings),
                    vocabulary::noun(warnings, "warning", "warnings"),
                    grouped::thousands(max_results),
                    max_results
                ),
            },
        }]
    };
    let rules: Vec<ReportingDescriptor> = codes::ALL.iter().map(|c| rule(c)).collect();
    let driver = ToolComponent::builder()
        .name("blazes")
        .full_name(format!("blazes {}", env!("CARGO_PKG_VERSION")))
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri(INFORMATION_URI)
        .rules(rules)
        .build();
    let log = Log {
        schema: SCHEMA,
        runs: [RunOut {
            column_kind: "utf16CodeUnits",
            invocations: [Invocation {
                execution_successful: true,
                tool_execution_notifications: notifications,
            }],
            results: Results {
                reports,
                uris: &uris,
                findings: &findings,
                keep: &keep,
                fingerprints: &fingerprints,
                witnesses,
                cwd,
            },
            tool: Tool::builder().driver(driver).build(),
        }],
        version: "2.1.0",
    };
    serde_json::to_writer_pretty(&mut *out, &log)?;
    out.write_all(b"\n")
}

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    runs: [RunOut<'a>; 1],
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunOut<'a> {
    column_kind: &'static str,
    invocations: [Invocation; 1],
    results: Results<'a>,
    tool: Tool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
struct Notification {
    level: &'static str,
    message: Text,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Snippet<'a> {
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RegionOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    end_column: Option<i64>,
    end_line: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<Snippet<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<i64>,
    start_line: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactOut {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Physical<'a> {
    artifact_location: ArtifactOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_region: Option<RegionOut<'a>>,
    region: RegionOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LocationOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Text>,
    physical_location: Physical<'a>,
}

#[derive(Serialize)]
struct Fingerprints {
    #[serde(rename = "blazes/v2")]
    blazes: String,
    #[serde(rename = "primaryLocationLineHash")]
    line_hash: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultOut<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    code_flows: Vec<codeflow::CodeFlow<'a>>,
    level: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<LocationOut<'a>>,
    message: Text,
    partial_fingerprints: Fingerprints,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<LocationOut<'a>>,
    rule_id: &'static str,
    /// Index of the rule in the driver's `rules`; omitted rather than pointing at another
    /// rule if a code were ever missing from the registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
}

/// The kept findings, serialised one at a time.
struct Results<'a> {
    reports: &'a [FileReport],
    uris: &'a [Option<(String, bool)>],
    findings: &'a [Finding],
    keep: &'a [bool],
    fingerprints: &'a [String],
    witnesses: Option<&'a Witnesses>,
    cwd: Option<&'a std::path::Path>,
}

impl Serialize for Results<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The line index of the file being written; files come one after the other.
        let mut index: Option<(usize, LineIndex)> = None;
        let mut places: Option<(usize, super::located::Places)> = None;
        s.collect_seq(
            self.findings
                .iter()
                .zip(self.keep)
                .zip(self.fingerprints)
                .filter(|((_, keep), _)| **keep)
                .map(|((f, _), fp)| {
                    if index.as_ref().is_none_or(|(file, _)| *file != f.file) {
                        index = Some((f.file, LineIndex::new(&self.reports[f.file].text)));
                    }
                    let (_, index) = index.as_ref().expect("set above");
                    if places.as_ref().is_none_or(|(file, _)| *file != f.file) {
                        places = Some((f.file, super::located::Places::new(&self.reports[f.file])));
                    }
                    let (_, places) = places.as_ref().expect("set above");
                    let at = At {
                        text: &self.reports[f.file].text,
                        index,
                        uri: &self.uris[f.file],
                        places,
                        cwd: self.cwd,
                    };
                    result(self.reports, f, &at, fp, self.witnesses)
                }),
        )
    }
}

/// Where a file's locations point.
struct At<'a, 'i> {
    text: &'a str,
    index: &'i LineIndex,
    uri: &'a Option<(String, bool)>,
    /// A composed spec's used files: a span in one is located in it.
    places: &'i super::located::Places<'a>,
    cwd: Option<&'a std::path::Path>,
}

impl<'a> At<'a, '_> {
    /// A location at `span`; `context` adds the snippet and the lines around it, which the
    /// primary location carries so that viewers without the repository can show it.
    fn location(&self, span: Span, context: bool) -> Option<Physical<'a>> {
        let place = self.places.place(span);
        let used_uri;
        let (uri, text, index, span) = match place.index {
            Some(i) => {
                used_uri = artifact_uri(place.path, self.cwd);
                (&used_uri, place.text, i, place.span)
            }
            None => (self.uri, self.text, self.index, span),
        };
        let (u, relative) = uri.as_ref()?;
        let (sl, sc) = line_col_utf16(text, index, span.offset);
        let (el, ec) = line_col_utf16(text, index, span.end());
        let snippet = text
            .get(span.offset..span.end())
            .filter(|t| context && !t.is_empty())
            .map(|t| Snippet { text: t });
        Some(Physical {
            artifact_location: ArtifactOut {
                uri: u.clone(),
                uri_base_id: relative.then_some(SRCROOT),
            },
            context_region: if context {
                context_region(text, index, span)
            } else {
                None
            },
            region: RegionOut {
                end_column: Some(ec),
                end_line: el,
                snippet,
                start_column: Some(sc),
                start_line: sl,
            },
        })
    }
}

/// Escapes `\`, `[` and `]`, which SARIF reads as the syntax of an embedded link, in text that
/// goes inside one.
fn link_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Message text that is not a link: a `[` that would start something of the form
/// `[text](3)` (a name can contain brackets) is escaped, so that only our links are links.
fn plain(s: &str) -> String {
    let bytes = s.as_bytes();
    let looks_like_link = |open: usize| {
        let Some(close) = s[open..].find(']').map(|i| open + i) else {
            return false;
        };
        let rest = &bytes[close + 1..];
        let digits = rest
            .iter()
            .skip(1)
            .take_while(|b| b.is_ascii_digit())
            .count();
        rest.first() == Some(&b'(') && digits > 0 && rest.get(1 + digits) == Some(&b')')
    };
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        if c == '[' && looks_like_link(i) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        grouped::thousands(n),
        vocabulary::noun(n, one, many)
    )
}

fn result<'a>(
    reports: &'a [FileReport],
    f: &Finding,
    at: &At<'a, '_>,
    fp: &str,
    witnesses: Option<&Witnesses>,
) -> ResultOut<'a> {
    let r = &reports[f.file];
    let d = grouped::diagnostic(reports, f);
    let mut text = plain(&sentence(&d.message));
    let mut related = Vec::new();
    let mut code_flows = Vec::new();
    if let (Outcome::Analysed(a), Kind::Point { .. } | Kind::Sink { .. }) = (&r.outcome, &f.kind) {
        let (df, an) = (&a.dataflow, &a.analysis);
        if let Some(o) = f.origin(reports) {
            let label = o.label;
            if let Some(pl) = at.location(o.from_span, false) {
                let what = if matches!(f.kind, Kind::Point { .. }) {
                    "input"
                } else {
                    "label"
                };
                text.push_str(&format!(
                    " Its {what} comes [from `{}`](1), {} upstream, where it is {}.",
                    link_text(o.from_text),
                    plural(o.streams, "stream", "streams"),
                    plain(&label)
                ));
                related.push(LocationOut {
                    id: Some(1),
                    message: Some(Text {
                        text: format!("{label} from here."),
                    }),
                    physical_location: pl,
                });
            }
        }
        if let Kind::Point { sinks, .. } = &f.kind
            && !sinks.is_empty()
        {
            let diags = r.diagnostics();
            let mut listed = Vec::new();
            for b in sinks.iter().take(MAX_SINKS_LISTED) {
                let v = &an.sinks[b.verdict];
                let sink = &df.sinks[v.sink.index()];
                let Some(pl) = at.location(sink.span, false) else {
                    continue;
                };
                // Id 1 is the origin; the sinks are 2, 3, ...
                let id = listed.len() + 2;
                let label = v.label.map_or(crate::label::UNREACHED, |l| l.kind());
                listed.push(format!("[`{}`]({id}) ({label})", link_text(&sink.name)));
                related.push(LocationOut {
                    id: Some(id),
                    message: Some(Text {
                        text: sentence(&diags[b.diagnostic].message),
                    }),
                    physical_location: pl,
                });
            }
            text.push_str(&format!(
                " It makes {} fail",
                plural(sinks.len(), "sink", "sinks")
            ));
            if !listed.is_empty() {
                text.push_str(": ");
                text.push_str(&listed.join(", "));
                if sinks.len() > listed.len() {
                    text.push_str(&format!(
                        " and {} more",
                        grouped::thousands(sinks.len() - listed.len())
                    ));
                }
            }
            text.push('.');
        }
        // The notes besides the chain (the feed of a module that makes the point), after the
        // origin and the sinks.
        for n in d.notes_besides_chain() {
            if let Some(pl) = at.location(n.span, false) {
                let id = related.iter().filter_map(|l| l.id).max().unwrap_or(0) + 1;
                related.push(LocationOut {
                    id: Some(id),
                    message: (!n.text.is_empty()).then(|| Text {
                        text: sentence(&n.text),
                    }),
                    physical_location: pl,
                });
            }
        }
        // The failing sinks the result reports, in the order it lists them.
        let verdicts: Vec<usize> = match &f.kind {
            Kind::Point { sinks, .. } => sinks
                .iter()
                .take(MAX_SINKS_LISTED)
                .map(|b| b.verdict)
                .collect(),
            Kind::Sink { verdict } => vec![*verdict],
            Kind::Other => Vec::new(),
        };
        for v in verdicts.into_iter().filter(|_| witnesses.is_some()) {
            let w = witnesses.expect("filtered above");
            let (said, flow) = codeflow::witness_flow(a, w, f.file, v, at);
            if !said.is_empty() {
                text.push(' ');
                text.push_str(&plain(&said));
            }
            code_flows.extend(flow);
        }
    } else {
        // Other diagnostics keep their related notes (a duplicate's first definition, ...).
        for (i, n) in d.related.iter().enumerate() {
            if let Some(pl) = at.location(n.span, false) {
                related.push(LocationOut {
                    id: Some(i),
                    message: (!n.text.is_empty()).then(|| Text {
                        text: sentence(&n.text),
                    }),
                    physical_location: pl,
                });
            }
        }
    }
    if let Some(u) = d
        .primary
        .as_ref()
        .and_then(|p| reports[f.file].used_from(p.span))
    {
        text.push(' ');
        text.push_str(&plain(&sentence(&u)));
    }
    if let Some(h) = &d.help {
        text.push_str("\nHelp: ");
        text.push_str(&plain(&sentence(h)));
    }
    let span = d.primary.as_ref().map_or(Span::new(0, 0), |p| p.span);
    let locations = at
        .location(span, true)
        .map(|pl| LocationOut {
            id: None,
            message: d
                .primary
                .as_ref()
                .filter(|p| !p.text.is_empty())
                .map(|p| Text {
                    text: sentence(&p.text),
                }),
            physical_location: pl,
        })
        .into_iter()
        .collect();
    ResultOut {
        code_flows,
        level: vocabulary::sarif_level(d.severity),
        locations,
        message: Text { text },
        partial_fingerprints: Fingerprints {
            blazes: fp.to_string(),
            line_hash: fp.to_string(),
        },
        related_locations: related,
        rule_id: d.code.id,
        rule_index: codes::ALL.iter().position(|c| c.id == d.code.id),
    }
}
/// SARIF validators want sentences; our messages and summaries are written without the final
/// period so they compose into other sentences.
fn sentence(s: &str) -> String {
    let t = s.trim_end();
    if t.ends_with(['.', '?', '!']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// `unordered-write` -> `UnorderedWrite`: SARIF's convention for a rule's friendly name.
fn pascal(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| {
                f.to_uppercase().collect::<String>() + c.as_str()
            })
        })
        .collect()
}

fn rule(c: &Code) -> ReportingDescriptor {
    let explain = format!("{} ({}): {}\n\n{}", c.id, c.name, c.summary, c.explanation);
    ReportingDescriptor::builder()
        .id(c.id)
        .name(pascal(c.name))
        .short_description(
            MultiformatMessageString::builder()
                .text(sentence(c.summary))
                .build(),
        )
        .full_description(
            MultiformatMessageString::builder()
                .text(sentence(c.explanation))
                .build(),
        )
        .help(
            MultiformatMessageString::builder()
                .text(explain.clone())
                .markdown(format!(
                    "**{}** ({}): {}\n\n{}\n\nRun `blazes explain {}` for this text in a terminal.",
                    c.id, c.name, c.summary, c.explanation, c.id
                ))
                .build(),
        )
        .help_uri(INFORMATION_URI)
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::json!(vocabulary::sarif_level(c.severity)))
                .build(),
        )
        .build()
}

/// 1-based line and UTF-16 column of a byte offset.
fn line_col_utf16(text: &str, index: &LineIndex, offset: usize) -> (i64, i64) {
    let offset = offset.min(text.len());
    let (line, _) = index.line_col(text, offset);
    let start = index.offset(text, line, 1).min(offset);
    let col = text
        .get(start..offset)
        .map_or(offset - start, |s| s.encode_utf16().count());
    (line as i64, col as i64 + 1)
}

/// The lines of the span with one line of context either side, so viewers without the
/// repository can still show where the finding is.
fn context_region<'a>(text: &'a str, index: &LineIndex, span: Span) -> Option<RegionOut<'a>> {
    if text.is_empty() {
        return None;
    }
    let (sl, _) = index.line_col(text, span.offset);
    let (el, _) = index.line_col(text, span.end());
    let first = sl.saturating_sub(1).max(1);
    let start = index.offset(text, first, 1);
    let end = text[span.end().min(text.len())..]
        .match_indices('\n')
        .nth(1)
        .map_or(text.len(), |(i, _)| span.end().min(text.len()) + i + 1);
    let (last, _) = index.line_col(text, end.saturating_sub(1).max(start));
    let snippet = text.get(start..end)?;
    Some(RegionOut {
        end_column: None,
        end_line: last.max(el) as i64,
        snippet: Some(Snippet { text: snippet }),
        start_column: None,
        start_line: first as i64,
    })
}

/// `--format sarif` of `blazes check`: [`write()`], at most [`Settings::max_results`](super::format::Settings::max_results) results
/// ([`DEFAULT_MAX_RESULTS`] by default), paths relative to [`Settings::cwd`](super::format::Settings::cwd).
pub const FORMAT: Format<CheckWrite> = Format {
    name: "sarif",
    help: Some("SARIF 2.1.0, for GitHub code scanning and other SARIF viewers"),
    chain_notes: false,
    write: |reports, s, mut out| {
        let max = s.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        write_with(reports, s.cwd, max, s.witnesses, &mut out)
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_surrogate_pairs() {
        // `😀` is one char but two UTF-16 code units; `é` is one of each.
        let text = "a: é😀x\n";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(line_col_utf16(text, &index, x), (1, 7));
    }

    #[test]
    fn friendly_names_are_pascal_case() {
        assert_eq!(pascal("unordered-write"), "UnorderedWrite");
        assert_eq!(pascal("gate"), "Gate");
    }
}
