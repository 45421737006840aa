//! `--format json`: one versioned document per invocation (`"version": 1`).
//!
//! The field names are a contract other tools read: add fields, never rename or remove them
//! within a version. Keys are written in alphabetical order, so the document reads the same
//! whichever serde_json features are enabled. The document is serialised straight from
//! borrowed structs, never built as a `serde_json::Value`: on a 100k-component spec the value
//! tree would cost more memory than the analysis itself. For the same reason its long lists
//! are written from iterators as they are serialised (`Seq`), and [`write()`] writes to any
//! `io::Write`: the CLI passes standard output, so the document is never held whole either.

use std::cell::Cell;
use std::io::{self, Write};
use std::rc::Rc;

use serde::Serialize;
use serde::ser::{Error as _, Serializer};

use super::format::{CheckWrite, Format};
use crate::analysis::{point_code, producer_names};
use crate::check::{FileReport, Outcome};
use crate::diagnostic::{Diagnostic, LineIndex};
use crate::label::Label;
use crate::report::label_parts;
use crate::report::witness::{self, WitnessOut, Witnesses};
use crate::simulate::Witness;

/// The version of the document's shape (`"version"`); see the module's documentation.
pub const VERSION: u32 = 2;

#[derive(Serialize)]
struct Document<'a> {
    files: Vec<File<'a>>,
    version: u32,
}

#[derive(Serialize)]
struct File<'a> {
    /// Every component with its paths, declared or derived from its program (additive).
    components: Seq<'a, ComponentOut<'a>>,
    /// The codes of the warnings the lint settings denied (`--deny`, `lint:`), when any: they
    /// fail the check (`status` is then `findings`).
    #[serde(skip_serializing_if = "<[&str]>::is_empty")]
    denied: &'a [&'static str],
    diagnostics: Seq<'a, Diag<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    path: &'a str,
    points_of_order: Seq<'a, Point<'a>>,
    seal_barriers: Seq<'a, Barrier<'a>>,
    /// `--witness` only: how the simulator explored the spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    simulation: Option<SimulationOut>,
    sinks: Seq<'a, Sink<'a>>,
    status: &'static str,
    streams: Seq<'a, Stream<'a>>,
    /// A composed spec's used files, each with its summary (additive; absent for a flat spec).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    summaries: Vec<serde_json::Value>,
}

/// A list serialised from an iterator, item by item, instead of collected first: a big spec
/// has millions of streams. It can be serialised once.
struct Seq<'a, T>(Cell<Option<Box<dyn Iterator<Item = T> + 'a>>>);

impl<'a, T: 'a> Seq<'a, T> {
    fn new(items: impl Iterator<Item = T> + 'a) -> Self {
        Seq(Cell::new(Some(Box::new(items))))
    }

    fn empty() -> Self {
        Seq::new(std::iter::empty())
    }
}

impl<T: Serialize> Serialize for Seq<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let items = self
            .0
            .take()
            .ok_or_else(|| S::Error::custom("a list of the report serialised twice"))?;
        s.collect_seq(items)
    }
}

#[derive(Serialize)]
struct Diag<'a> {
    code: &'static str,
    column: usize,
    /// The used file the diagnostic is in, for a composed spec (`line` and `column` are in it);
    /// absent when it is in the checked file.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
    line: usize,
    message: &'a str,
    name: &'static str,
    /// The other places it names (a duplicate's first definition, the `use:` whose feed makes
    /// a module's point of order), without the provenance chain (`points_of_order` has it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related: Vec<RelatedOut<'a>>,
    severity: &'static str,
    /// How the used file `file` came into the checked one: "in `services/billing.yaml`, used as
    /// `Billing` by `system.yaml:12`".
    #[serde(skip_serializing_if = "Option::is_none")]
    used_from: Option<String>,
    /// `--witness` only, on a C004: the sink's witness, or `null` when none was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<Option<WitnessOut<'a>>>,
}

/// A related note: where, in the fields of a diagnostic, and what it says there.
#[derive(Serialize)]
struct RelatedOut<'a> {
    column: usize,
    /// As a diagnostic's `file`: absent when the note is in the checked file.
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    line: usize,
    message: &'a str,
}

#[derive(Serialize)]
struct SimulationOut {
    exhaustive: bool,
    inconclusive: usize,
    /// Why fewer schedules ran than asked (a big spec's budget), when they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    replicas: usize,
    schedules: usize,
    seed: u64,
}

#[derive(Serialize)]
struct Sink<'a> {
    failing: bool,
    implicit: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<Vec<String>>,
    /// `null` when no source reaches the sink.
    label: Option<&'static str>,
    name: &'a str,
    tolerate: &'static str,
}

#[derive(Serialize)]
struct Stream<'a> {
    from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<Vec<String>>,
    /// `null` when no source reaches the stream.
    label: Option<&'static str>,
    to: &'a str,
}

#[derive(Serialize)]
struct ComponentOut<'a> {
    name: &'a str,
    paths: Vec<PathOut<'a>>,
}

#[derive(Serialize)]
struct PathOut<'a> {
    annotation: &'static str,
    from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<Vec<String>>,
    line: usize,
    /// `declared` (in `paths:`), `sql` or `bloom` (derived from the component's program).
    origin: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    to: &'a str,
}

#[derive(Serialize)]
struct Point<'a> {
    annotation: &'static str,
    /// The diagnostic code the point is reported with; `kind` is that code's name.
    code: &'static str,
    column: usize,
    component: &'a str,
    /// The used file the path is written in, for a composed spec (as a diagnostic's `file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    from: &'a str,
    gate: Vec<String>,
    input_label: &'static str,
    kind: &'static str,
    line: usize,
    to: &'a str,
}

#[derive(Serialize)]
struct Barrier<'a> {
    component: &'a str,
    input: &'a str,
    key: Vec<&'a str>,
    producers: Vec<&'a str>,
}

/// The diagnostics; `witnesses[i]` is what `--witness` attaches to the `i`th (nothing when it
/// is `None` or the list is shorter).
fn diagnostics<'a>(
    r: &'a FileReport,
    diags: &'a [Diagnostic],
    text: &'a str,
    index: Rc<LineIndex>,
    witnesses: Vec<Option<Option<&'a Witness>>>,
) -> Seq<'a, Diag<'a>> {
    let places = super::located::Places::new(r);
    let composed = r.files.is_composed();
    Seq::new(diags.iter().enumerate().map(move |(i, d)| {
        let (line, column) = match &d.primary {
            None => (1, 1),
            Some(p) if composed => places.line_col(p.span, &index),
            Some(p) => index.line_col(text, p.span.offset),
        };
        let span = d.primary.as_ref().map(|p| p.span).filter(|_| composed);
        let file = span
            .map(|s| places.place(s).path)
            .filter(|p| *p != r.path.as_str());
        let related = d
            .notes_besides_chain()
            .map(|n| {
                let (line, column) = match composed {
                    true => places.line_col(n.span, &index),
                    false => index.line_col(text, n.span.offset),
                };
                let file =
                    Some(places.place(n.span).path).filter(|p| composed && *p != r.path.as_str());
                RelatedOut {
                    column,
                    file,
                    line,
                    message: &n.text,
                }
            })
            .collect();
        Diag {
            code: d.code.id,
            column,
            file,
            used_from: span.and_then(|s| r.used_from(s)),
            help: d.help.as_deref(),
            line,
            message: &d.message,
            name: d.code.name,
            related,
            severity: d.severity.as_str(),
            witness: witnesses
                .get(i)
                .copied()
                .flatten()
                .map(|w| w.map(WitnessOut::new)),
        }
    }))
}

/// `diags` (of `r`) as `check --format json` writes them, without witnesses: the plan
/// document's diagnostics.
pub(crate) fn diagnostic_values(r: &FileReport, diags: &[Diagnostic]) -> Vec<serde_json::Value> {
    let index = Rc::new(LineIndex::new(&r.text));
    let seq = diagnostics(r, diags, &r.text, index, Vec::new());
    match serde_json::to_value(&seq) {
        Ok(serde_json::Value::Array(v)) => v,
        // Plain data serialises: nothing else can come back.
        _ => Vec::new(),
    }
}

fn file<'a>(r: &'a FileReport, at: usize, witnesses: Option<&'a Witnesses>) -> File<'a> {
    let index = Rc::new(LineIndex::new(&r.text));
    let text = r.text.as_str();
    match &r.outcome {
        Outcome::Invalid(diags) => File {
            denied: &[],
            components: Seq::empty(),
            diagnostics: diagnostics(r, diags, text, index, Vec::new()),
            name: None,
            path: &r.path,
            points_of_order: Seq::empty(),
            seal_barriers: Seq::empty(),
            simulation: None,
            sinks: Seq::empty(),
            status: "invalid",
            streams: Seq::empty(),
            summaries: Vec::new(),
        },
        Outcome::Analysed(a) => {
            let df = &a.dataflow;
            let an = &a.analysis;
            let parts = move |l: Option<Label>| label_parts(l, &df.keys);
            let sim = witnesses.and_then(|w| w.files.get(at)?.as_ref().map(|s| (w, s)));
            let attached = match sim {
                Some((w, _)) => witness::c004_sinks(a)
                    .into_iter()
                    .map(|sink| Some(w.sink(at, sink?)?.witness.as_ref()))
                    .collect(),
                None => Vec::new(),
            };
            let idx = index.clone();
            let places = super::located::Places::new(r);
            File {
                denied: &a.denied,
                components: Seq::new(df.components.iter().map(move |c| {
                    let places = &places;
                    ComponentOut {
                        name: &c.name,
                        paths: c
                            .paths
                            .iter()
                            .map(|p| PathOut {
                                annotation: p.annotation.as_str(),
                                from: &df.iface(p.input).name,
                                gate: p.gate.map(|g| g.names(&df.keys)),
                                line: places.line_col(p.label_span, &idx).0,
                                origin: p.note.as_ref().map_or("declared", |n| n.origin.as_str()),
                                reason: p.note.as_ref().map(|n| n.reason.as_str()),
                                to: &df.iface(p.output).name,
                            })
                            .collect(),
                    }
                })),
                diagnostics: diagnostics(r, &a.diagnostics, text, index.clone(), attached),
                simulation: sim.map(|(w, s)| SimulationOut {
                    exhaustive: s.exhaustive,
                    inconclusive: s.inconclusive,
                    note: w.notes.get(at).cloned().flatten(),
                    replicas: w.replicas,
                    schedules: s.schedules,
                    seed: w.seed,
                }),
                name: Some(&df.name),
                path: &r.path,
                points_of_order: Seq::new(an.points.iter().map({
                    let places = super::located::Places::new(r);
                    move |p| {
                        let c = df.component(p.component);
                        let path = &c.paths[p.path];
                        let (line, column, file) = if r.files.is_composed() {
                            let (line, column) = places.line_col(path.label_span, &index);
                            let file = places.place(path.label_span).path;
                            (line, column, Some(file).filter(|f| *f != r.path.as_str()))
                        } else {
                            let (line, column) = index.line_col(text, path.label_span.offset);
                            (line, column, None)
                        };
                        let code = point_code(c, path, p.kind, p.input_label, &df.keys);
                        Point {
                            code: code.id,
                            annotation: path.annotation.as_str(),
                            column,
                            component: &c.name,
                            file,
                            from: &df.iface(path.input).name,
                            gate: path.gate.map_or_else(Vec::new, |g| g.names(&df.keys)),
                            input_label: p.input_label.kind(),
                            kind: code.name,
                            line,
                            to: &df.iface(path.output).name,
                        }
                    }
                })),
                seal_barriers: Seq::new(an.barriers.iter().map(move |b| Barrier {
                    component: &df.component(b.component).name,
                    input: &df.iface(b.input).name,
                    key: df.keys.names(b.key),
                    producers: producer_names(df, &b.producers),
                })),
                sinks: Seq::new(an.sinks.iter().map(move |v| {
                    let s = &df.sinks[v.sink.index()];
                    let (label, key) = parts(v.label);
                    Sink {
                        failing: v.failing,
                        implicit: s.implicit.is_some(),
                        key,
                        label,
                        name: &s.name,
                        tolerate: s.tolerance().as_str(),
                    }
                })),
                status: if a.failed() { "findings" } else { "ok" },
                streams: Seq::new(
                    df.streams
                        .iter()
                        .zip(&an.labels.stream)
                        .map(move |(s, &l)| {
                            let (label, key) = parts(l);
                            Stream {
                                from: &s.from_text,
                                key,
                                label,
                                to: &s.to_text,
                            }
                        }),
                ),
                summaries: super::summary::json_list(&a.summaries),
            }
        }
    }
}

/// Writes the whole document, pretty-printed, with a trailing newline.
pub fn write(reports: &[FileReport], out: &mut impl Write) -> io::Result<()> {
    write_with(reports, None, out)
}

/// [`write()`], with the witnesses of `blazes check --witness`: a `simulation` object per
/// simulated file, and a `witness` (an object, or `null` when none was found) on each C004.
pub fn write_with(
    reports: &[FileReport],
    witnesses: Option<&Witnesses>,
    out: &mut impl Write,
) -> io::Result<()> {
    let doc = Document {
        files: reports
            .iter()
            .enumerate()
            .map(|(i, r)| file(r, i, witnesses))
            .collect(),
        version: VERSION,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    out.write_all(b"\n")
}

/// The whole document, pretty-printed, with a trailing newline.
pub fn render(reports: &[FileReport]) -> String {
    let mut out = Vec::new();
    write(reports, &mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `--format json` of `blazes check`: [`write()`].
pub const FORMAT: Format<CheckWrite> = Format {
    name: "json",
    help: Some("One versioned JSON document: labels, points of order, barriers, diagnostics"),
    chain_notes: false,
    write: |reports, s, mut out| write_with(reports, s.witnesses, &mut out),
};
