//! Diagnostics: what the analysis and the spec reader have to say, located in the spec text.
//!
//! A diagnostic is plain data (code, severity, message, spans); rendering it is the job of
//! `report`. Spans are byte ranges into the spec text; line and column are derived from them
//! by [`LineIndex`] only when a report needs them.

use std::borrow::Cow;

use crate::codes::Code;
use crate::graph::{CompId, IfaceId, SinkId, SourceId, StreamId};

/// A byte range in the spec text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub offset: usize,
    pub len: usize,
}

impl Span {
    /// `len` bytes from `offset`.
    pub fn new(offset: usize, len: usize) -> Self {
        Span { offset, len }
    }

    /// The character of `text` at `offset`, as a span (empty at the end of the text). A caret
    /// span must cover whole characters: a byte inside one breaks every renderer.
    pub fn char_at(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let len = text[offset..].chars().next().map_or(0, char::len_utf8);
        Span { offset, len }
    }

    /// The offset just past the span.
    pub fn end(self) -> usize {
        self.offset + self.len
    }
}

/// How bad a diagnostic is: an error makes the spec invalid (or, for an analysis code, is
/// upstream of a failing sink); a warning does not change the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// `error` or `warning`, as JSON and the human report print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A span with the text to print under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub span: Span,
    /// Usually a fixed phrase ("first defined here", "Run from here"), borrowed rather than
    /// allocated: a big spec has millions of notes.
    pub text: Cow<'static, str>,
}

/// What a diagnostic of the analysis is about, by id in the dataflow it was made for. Reports
/// match a diagnostic to the analysis' points of order and sink verdicts by it, never by its
/// text: a message is cut at 400 characters, and the names it quotes can be longer (an
/// implicit sink's name is two names of up to 256 characters each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A point of order (C001-C003): the component's path, by its index in the component's
    /// paths (a path is at most one point of order).
    Point { component: CompId, path: u32 },
    /// A sink: a failing one (C004), or a declared one no stream reaches (C009).
    Sink(SinkId),
    /// A source no stream leaves (C009).
    Source(SourceId),
    /// A component as a whole (C008: it reads state no path of it writes).
    Component(CompId),
    /// An interface: an input no stream feeds (C005).
    Iface(IfaceId),
    /// A stream (C006, C007).
    Stream(StreamId),
}

/// One finding about a spec: its code, where it is, what it says, and what to do about it.
/// Built with [`Diagnostic::new`] and the builder methods; every format prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: &'static Code,
    pub severity: Severity,
    /// One sentence, no trailing period, no location: the location is in `primary`.
    pub message: String,
    pub primary: Option<Note>,
    /// The provenance chain or other related places, in order.
    pub related: Vec<Note>,
    /// Which of `related` are the provenance chain (one note per stream, added by the analysis
    /// when it is asked for chains): formats that print no chains print the other notes.
    pub chain: std::ops::Range<u32>,
    pub help: Option<String>,
    /// What it is about, for the analysis' diagnostics (`None` for the spec's: they are about
    /// text, which `primary` locates).
    pub subject: Option<Subject>,
}

/// Longest message kept, in characters; past it the message is cut with `…`.
const MAX_MESSAGE_CHARS: usize = 400;

/// Messages quote what the user wrote (unknown keys, strings where a mapping belongs), and a
/// spec can put newlines, control characters or a megabyte into those. A message stays one
/// line of bounded length: control characters are shown escaped and the tail is cut.
fn one_line(message: String) -> String {
    if message.chars().all(|c| !c.is_control()) && message.len() <= MAX_MESSAGE_CHARS {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(4 * MAX_MESSAGE_CHARS));
    for (i, c) in message.chars().enumerate() {
        if i == MAX_MESSAGE_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

impl Diagnostic {
    /// A diagnostic of `code` with its default severity; the message is made one line.
    pub fn new(code: &'static Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.severity,
            message: one_line(message.into()),
            primary: None,
            related: Vec::new(),
            chain: 0..0,
            help: None,
            subject: None,
        }
    }

    /// The related notes that are not the provenance chain ([`Diagnostic::chain`]).
    pub fn notes_besides_chain(&self) -> impl Iterator<Item = &Note> {
        let chain = self.chain.start as usize..self.chain.end as usize;
        self.related
            .iter()
            .enumerate()
            .filter(move |(i, _)| !chain.contains(i))
            .map(|(_, n)| n)
    }

    /// What it is about, by id (see [`Subject`]).
    pub fn about(mut self, subject: Subject) -> Self {
        self.subject = Some(subject);
        self
    }

    /// Where it is, with the text printed under it.
    pub fn at(mut self, span: Span, text: impl Into<Cow<'static, str>>) -> Self {
        self.primary = Some(Note {
            span,
            text: text.into(),
        });
        self
    }

    /// Adds a related place (a provenance step, a first definition).
    pub fn related(mut self, span: Span, text: impl Into<Cow<'static, str>>) -> Self {
        self.related.push(Note {
            span,
            text: text.into(),
        });
        self
    }

    /// What to do about it, in one sentence.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Overrides the code's default severity (points of order are errors only upstream of a
    /// failing sink).
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// The byte offset of its primary place (0 without one): the first sort key of every output.
    pub fn offset(&self) -> usize {
        self.primary.as_ref().map_or(0, |n| n.span.offset)
    }
}

/// Sorts diagnostics by position, then code, then message: the order every output uses.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        (a.offset(), a.code.id, &a.message).cmp(&(b.offset(), b.code.id, &b.message))
    });
}

/// Maps byte offsets to 1-based line and column (columns count characters, as editors do).
/// Lines end as YAML ends them: at `\n`, `\r\n`, or a `\r` alone (the YAML reader and miette
/// count a lone `\r` as a line break too, and every format must give the same line).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// The index of `text`'s line starts.
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// 0-based line of a byte offset (clamped to the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// Byte offset where a 0-based line starts; the text's length past the last line.
    pub fn line_start(&self, line: usize, text: &str) -> usize {
        self.starts.get(line).copied().unwrap_or(text.len())
    }

    /// 1-based (line, column) of a byte offset; the column counts Unicode scalar values.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col = text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// Byte offset of a 1-based (line, character column); clamps to the text.
    pub fn offset(&self, text: &str, line: usize, col: usize) -> usize {
        let Some(&start) = self.starts.get(line.saturating_sub(1)) else {
            return text.len();
        };
        let rest = &text[start..];
        let end_of_line = rest.find(['\n', '\r']).map_or(rest.len(), |i| i);
        rest[..end_of_line]
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(start + end_of_line, |(i, _)| start + i)
    }
}
