//! White boxes: a component's annotations derived from its program instead of written by hand.
//!
//! A component may give its logic as streaming SQL (`sql:`, Flink's dialect, [`sql`]) or as a
//! Bloom module (`bloom:`, the Bud subset of [`bloom`]). Each reads the program and derives, for
//! every input→output pair the data can flow along, the annotation of the most order-sensitive
//! operator on the way, its gate (the input attributes those operators partition by, traced
//! through column lineage; `*` when they cannot be traced) and the reason, located in the text.
//! The derived paths are ordinary paths: the graph, the analysis, the planner, the renderer and
//! the simulator see no difference.
//!
//! Processing time and nondeterministic functions are a path of their own: from an internal
//! input named [`CLOCK`], annotated `OW(*)`, which the spec reader feeds from an internal
//! unsealed source, so that the output is nondeterministic whatever the order of the declared
//! inputs (`docs/whitebox.md`).
//!
//! Must not know: YAML, the graph, the analysis, output formats. No IO.

pub mod bloom;
pub mod sql;

use crate::diagnostic::{Diagnostic, LineIndex, Span};
use crate::label::Annotation;

/// The internal input interface through which processing time and nondeterministic functions
/// enter a white box.
pub const CLOCK: &str = "clock";

/// The seal attribute a watermark on `t` stands for: the windows over `t`. A source's
/// `watermark: t` seals it, and a window aggregation on `t` has it in its gate.
pub fn window_attr(t: &str) -> String {
    format!("window-{t}")
}

/// Where a path's annotation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Written in `paths:`.
    Declared,
    /// Derived from the component's `sql:`.
    Sql,
    /// Derived from the component's `bloom:`.
    Bloom,
    /// Given by an importer's catalogue entry or rule (`check --from ENGINE`).
    Catalog,
}

impl Origin {
    /// The name every format prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Declared => "declared",
            Origin::Sql => "sql",
            Origin::Bloom => "bloom",
            Origin::Catalog => "catalog",
        }
    }

    /// Whether the path was derived from the component's own program, whose `clock` input is
    /// its processing time (a catalogue's paths come from an operator's class, and an input of
    /// an imported operator named `clock` is an ordinary input).
    pub fn from_program(self) -> bool {
        matches!(self, Origin::Sql | Origin::Bloom)
    }
}

/// Whether a path with `note` from the input named `input` is a white box's clock.
pub fn is_clock(note: Option<&crate::spec::PathNote>, input: &str) -> bool {
    input == CLOCK && note.is_some_and(|n| n.origin.from_program())
}

/// A derived gate: a sorted set of attribute names, or `*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DerivedGate {
    Star,
    Keys(Vec<String>),
}

impl DerivedGate {
    /// `*`, or the attributes joined by `, `.
    pub fn show(&self) -> String {
        match self {
            DerivedGate::Star => "*".to_string(),
            DerivedGate::Keys(k) => k.join(", "),
        }
    }
}

/// How a declared path stands to the one its component's insides give it (its program, or
/// the summary of the module it uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The same annotation and gate.
    Same,
    /// At least as order-sensitive everywhere, and more somewhere: safe, maybe costly.
    Conservative,
    /// Less order-sensitive somewhere (a confluent label for an order-sensitive path, no write
    /// for a write, a gate naming attributes the insides do not partition by): a wrong verdict.
    Conflict,
}

/// Compares a declared annotation and gate with the derived ones (the annotation
/// monotonicity order of section 5: `CR` -> `CW` -> `OW`, `CR` -> `OR` -> `OW`, a gate by a
/// smaller one, `*` the smallest).
pub fn coverage(
    declared: Annotation,
    declared_gate: Option<&DerivedGate>,
    derived: Annotation,
    derived_gate: Option<&DerivedGate>,
) -> Coverage {
    let sens = |a: Annotation| (!a.is_confluent(), a.writes());
    let (dor, dwr) = sens(declared);
    let (gor, gwr) = sens(derived);
    let gate_ok = match (declared_gate, derived_gate) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(DerivedGate::Star), Some(_)) => true,
        (Some(DerivedGate::Keys(_)), Some(DerivedGate::Star)) => false,
        (Some(DerivedGate::Keys(a)), Some(DerivedGate::Keys(b))) => a.iter().all(|x| b.contains(x)),
    };
    if !(dor >= gor && dwr >= gwr && gate_ok) {
        Coverage::Conflict
    } else if declared == derived && declared_gate == derived_gate {
        Coverage::Same
    } else {
        Coverage::Conservative
    }
}

/// One derived path: from an input interface to an output interface, with its annotation, its
/// gate (for `OR`/`OW`), why, and where in the spec file the deciding construct is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedPath {
    pub from: String,
    pub to: String,
    pub annotation: Annotation,
    pub gate: Option<DerivedGate>,
    pub reason: String,
    pub span: Span,
}

impl DerivedPath {
    /// `OW(auction, window-dateTime)`, `CR`.
    pub fn shown(&self) -> String {
        match &self.gate {
            Some(g) => format!("{}({})", self.annotation.as_str(), g.show()),
            None => self.annotation.as_str().to_string(),
        }
    }
}

/// What a program derives: its paths (sorted by input, then output) and its diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Derivation {
    pub paths: Vec<DerivedPath>,
    pub diagnostics: Vec<Diagnostic>,
    /// The program could not be read: no path is derived.
    pub failed: bool,
    /// The `WATERMARK FOR` of its DDL on an input: (input, the window attribute it closes,
    /// where). The spec reader seals the input's stream with it when a source feeds it
    /// directly (the engine's source operator generates the watermark); from a component it
    /// seals nothing, and the window waits for a seal the stream must carry.
    pub watermarks: Vec<(String, String, Span)>,
}

/// The annotation of a path from what its operators do: order-sensitive or not, writing state
/// or not.
pub(crate) fn annotation(order: bool, writes: bool) -> Annotation {
    match (order, writes) {
        (false, false) => Annotation::CR,
        (false, true) => Annotation::CW,
        (true, false) => Annotation::OR,
        (true, true) => Annotation::OW,
    }
}

/// Maps positions in a program (1-based line, 1-based column in characters) to byte offsets in
/// the spec file. The program is the value of a YAML scalar; each of its lines is found in the
/// file's text after the previous one, which holds for the literal blocks (`sql: |`) programs
/// are written in, and for one-line scalars.
#[derive(Clone, Debug)]
pub struct TextMap {
    /// Byte offset in the file of each program line's start; `None` when not found.
    lines: Vec<Option<usize>>,
    /// The program's lines, to count characters.
    texts: Vec<String>,
    /// The 1-based line in the file of each program line, for reasons (`line N`).
    file_lines: Vec<usize>,
    fallback: usize,
}

impl TextMap {
    /// `program` is the scalar's value; `file` the spec's text; `from` where the scalar starts;
    /// `index` the file's line starts.
    pub fn new(program: &str, file: &str, from: usize, index: &LineIndex) -> TextMap {
        let mut at = from.min(file.len());
        let mut lines = Vec::new();
        let mut texts = Vec::new();
        for line in program.split('\n') {
            let content = line.trim_start();
            let found = if content.is_empty() || !file.is_char_boundary(at) {
                None
            } else {
                file[at..].find(content).map(|i| at + i)
            };
            let start = found.map(|f| f - (line.len() - content.len()));
            if let Some(f) = found {
                at = f + content.len();
            }
            lines.push(start.filter(|s| file.is_char_boundary(*s)));
            texts.push(line.to_string());
        }
        // A line not found (blank) is the one after the previous line's.
        let mut file_lines = Vec::with_capacity(lines.len());
        let mut previous = index.line_of(from.min(file.len()));
        for start in &lines {
            let n = match start {
                Some(s) => index.line_of(*s) + 1,
                None => previous + 1,
            };
            file_lines.push(n);
            previous = n;
        }
        TextMap {
            lines,
            texts,
            file_lines,
            fallback: from.min(file.len()),
        }
    }

    /// The 1-based line in the spec file of a program line (1-based).
    pub fn file_line(&self, line: u64) -> usize {
        let i = (line.max(1) - 1) as usize;
        self.file_lines
            .get(i)
            .or(self.file_lines.last())
            .copied()
            .unwrap_or(1)
    }

    /// The byte offset in the file of a program position.
    pub fn offset(&self, line: u64, column: u64) -> usize {
        let i = (line.max(1) - 1) as usize;
        match (self.lines.get(i).copied().flatten(), self.texts.get(i)) {
            (Some(start), Some(text)) => {
                let col = (column.max(1) - 1) as usize;
                start + text.char_indices().nth(col).map_or(text.len(), |(b, _)| b)
            }
            _ => self.fallback,
        }
    }

    /// A span of `len` bytes (at least one character) at a program position, within the file.
    pub fn span(&self, line: u64, column: u64, len: usize, file: &str) -> Span {
        let offset = self.offset(line, column);
        let mut end = (offset + len.max(1)).min(file.len());
        while end > offset && !file.is_char_boundary(end) {
            end -= 1;
        }
        if end == offset && offset < file.len() {
            return Span::char_at(file, offset);
        }
        Span::new(offset, end - offset)
    }
}
