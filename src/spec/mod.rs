//! The spec format (version 1): reading a YAML dataflow spec into [`Spec`], with a span on
//! every name and value a diagnostic may point at.
//!
//! The reader never stops at the first problem: it validates what it can, skips what it
//! cannot, and returns every diagnostic of the file. Cross-references (endpoints naming
//! components and interfaces) are resolved later, by `graph`, which adds its own diagnostics.
//! It validates each entry as the YAML reader streams it (`reader`), never a whole file's tree.
//!
//! Must not know: labels, the analysis, output formats.

mod reader;
pub mod yaml;
mod yaml_errors;

use std::collections::{BTreeMap, HashSet};

use crate::codes::{self, Code};
use crate::diagnostic::{Diagnostic, Span};
use crate::label::{Annotation, Tolerance};
pub use yaml::Limits;
use yaml::{Node, Value};

/// A name with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

/// A list of attribute names (`[batch, word]`), with the span of the whole list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyList {
    pub names: Vec<Name>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateDecl {
    Star(Span),
    Keys(KeyList),
}

impl GateDecl {
    pub fn span(&self) -> Span {
        match self {
            GateDecl::Star(s) => *s,
            GateDecl::Keys(k) => k.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderDecl {
    Global(Span),
    Keys(KeyList),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceDecl {
    pub name: Name,
    pub seal: Option<KeyList>,
    pub sealable: Vec<KeyList>,
    /// Span of the source's value (its mapping, or the null after `name:`).
    pub body: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkDecl {
    pub name: Name,
    pub tolerate: Option<(Tolerance, Span)>,
    pub body: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathDecl {
    pub from: Name,
    pub to: Name,
    pub label: Annotation,
    pub label_span: Span,
    pub gate: Option<GateDecl>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentDecl {
    pub name: Name,
    pub paths: Vec<PathDecl>,
    pub replicated: bool,
    /// `replicas: N` when given.
    pub replicas: Option<u64>,
    pub order: Option<OrderDecl>,
    pub body: Span,
    /// Some of its paths were invalid and dropped: endpoint errors naming it are suppressed,
    /// because they would only repeat the path error.
    pub incomplete: bool,
}

/// One end of a stream as written: `Component.interface` or a bare source/sink name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub text: String,
    pub span: Span,
    /// Where the dot of `Component.interface` is: the parts are slices of `text`, not strings
    /// of their own (a big spec has millions of endpoints).
    dot: Option<usize>,
}

impl Endpoint {
    /// The component of `Component.interface`; `None` for a source or sink.
    pub fn component(&self) -> Option<&str> {
        self.dot.map(|d| &self.text[..d])
    }

    /// The interface of `Component.interface`, or the source or sink name.
    pub fn name(&self) -> &str {
        self.dot.map_or(&self.text, |d| &self.text[d + 1..])
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDecl {
    pub from: Endpoint,
    pub to: Endpoint,
    pub seal: Option<KeyList>,
    pub span: Span,
}

/// A spec that is well-formed on its own (cross-references not yet checked).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    pub name: Option<Name>,
    pub sources: Vec<SourceDecl>,
    pub components: Vec<ComponentDecl>,
    pub streams: Vec<StreamDecl>,
    pub sinks: Vec<SinkDecl>,
    /// Span of the `sources:` key, when present: where `plan --apply` can add sources.
    pub sources_key: Option<Span>,
}

/// Reads a spec from raw bytes (UTF-8, optional BOM). Returns the spec (possibly partial)
/// and every diagnostic; the spec is usable only when no diagnostic is an error. The text is
/// returned for reports; [`parse_vec`] avoids copying it.
pub fn parse_bytes(bytes: &[u8], limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>, String) {
    parse_vec(bytes.to_vec(), limits)
}

/// [`parse_bytes`] on bytes the caller gives up: valid UTF-8 becomes the returned text in
/// place, so a big spec is in memory once.
pub fn parse_vec(bytes: Vec<u8>, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>, String) {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let (spec, diags) = parse(&text, limits);
            (spec, diags, text)
        }
        Err(e) => {
            // Show what we can of the text: up to the bad byte, so the caret has context.
            let good = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let mut text = String::from_utf8_lossy(&bytes[..good]).into_owned();
            let offset = text.len();
            text.push('\u{FFFD}');
            let diag = Diagnostic::new(
                &codes::NOT_UTF8,
                format!("the spec is not valid UTF-8: byte {good} (0x{:02x}) is not part of a UTF-8 character", bytes[good]),
            )
            .at(Span::new(offset, '\u{FFFD}'.len_utf8()), "invalid byte")
            .help("save the file as UTF-8 text");
            (None, vec![diag], text)
        }
    }
}

/// Reads a spec from text. A leading BOM is accepted (its bytes stay in the text, so spans
/// still index the original).
pub fn parse(text: &str, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>) {
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let bom = text.len() - body.len();
    if body.trim().is_empty()
        || body
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        let d = Diagnostic::new(&codes::EMPTY, "the spec is empty")
            .at(Span::new(0, 0), "no YAML document here")
            .help("a spec needs at least `components:` and `streams:`; see `blazes explain S009`");
        return (None, vec![d]);
    }
    let mut reader = reader::Reader::new(Validator {
        text,
        diags: Vec::new(),
        limits,
        attributes: Vec::new(),
        attribute_texts: HashSet::new(),
    });
    match yaml::read(body, bom, limits, &mut reader) {
        Ok(root) => {
            let (spec, diags) = reader.finish(root);
            (Some(spec), diags)
        }
        // What was validated before the reader gave up is dropped: an unreadable file has this
        // one diagnostic.
        Err(d) => {
            let mut d = *d;
            shift(&mut d, bom);
            (None, vec![d])
        }
    }
}

fn shift(d: &mut Diagnostic, by: usize) {
    if let Some(p) = &mut d.primary {
        p.span.offset += by;
    }
}

/// Edit distance for "did you mean" (optimal string alignment: a swap of two neighbours costs
/// one, because `pahts` is a typo of `paths`). Case-insensitive; small inputs only.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    // Three rolling rows (the swap looks two rows back) instead of the whole matrix: "did you
    // mean" runs this for every candidate name.
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within a third of the word's length (at least 1, at most 3 edits).
/// Words longer than 64 characters get no suggestion, and candidates whose length alone rules
/// them out are not compared: the edit distance is quadratic in the lengths, and names in a
/// hostile spec can be megabytes long.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = word.chars().count();
    if len > 64 {
        return None;
    }
    let limit = (len / 3).clamp(1, 3);
    candidates
        .into_iter()
        .filter(|c| c.len() <= 4 * (len + limit) && c.chars().count().abs_diff(len) <= limit)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| c)
}

struct Validator<'t> {
    text: &'t str,
    diags: Vec<Diagnostic>,
    limits: &'t Limits,
    /// The attribute names written, for the case-collision check: the first of each spelling
    /// since [`Validator::take_attributes`] (only the first is ever reported).
    attributes: Vec<Name>,
    attribute_texts: HashSet<String>,
}

/// Longest name accepted, in characters. A format rule rather than a resource limit: real
/// names are identifiers, and every message quotes them.
pub const MAX_NAME_CHARS: usize = 256;

/// What two names that differ only in case are, for the S016 warning.
fn fold(name: &str) -> String {
    name.to_lowercase()
}

/// The fields of one mapping, after unknown and duplicate fields were reported. A short
/// vector, not a map: mappings have a handful of fields and there is one per path.
struct Fields<'n> {
    found: Vec<(&'static str, &'n Node, &'n Node)>,
    /// Canonical fields that an unknown field was taken for a typo of, with the index of that
    /// "did you mean" diagnostic: a "missing field" error for them would only repeat it, and
    /// what the missing field implies is said there instead (see [`Validator::amend`]).
    suggested: Vec<(&'static str, usize)>,
}

impl<'n> Fields<'n> {
    fn entry(&self, name: &str) -> Option<&(&'static str, &'n Node, &'n Node)> {
        self.found.iter().find(|(f, _, _)| *f == name)
    }
    fn get(&self, name: &str) -> Option<&'n Node> {
        self.entry(name).map(|e| e.2)
    }
    fn key(&self, name: &str) -> Option<&'n Node> {
        self.entry(name).map(|e| e.1)
    }
    fn was_suggested(&self, name: &str) -> bool {
        self.suggested.iter().any(|(f, _)| *f == name)
    }
    /// The index of the "did you mean `name`" diagnostic, if an unknown field was taken for it.
    fn suggestion(&self, name: &str) -> Option<usize> {
        self.suggested
            .iter()
            .find(|(f, _)| *f == name)
            .map(|&(_, i)| i)
    }
}

impl Validator<'_> {
    fn error(&mut self, code: &'static Code, span: Span, message: String, label: &'static str) {
        self.diags
            .push(Diagnostic::new(code, message).at(span, label));
    }

    fn take_attributes(&mut self) -> Vec<Name> {
        self.attribute_texts.clear();
        std::mem::take(&mut self.attributes)
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Adds to the help of diagnostic `index` (a "did you mean") what the field it suggests
    /// means here, instead of a second error about the field being absent: the user wrote the
    /// field, only misspelt.
    fn amend(&mut self, index: usize, more: &str) {
        if let Some(d) = self.diags.get_mut(index) {
            d.help = Some(match d.help.take() {
                Some(h) => format!("{h} {more}"),
                None => more.to_string(),
            });
        }
    }

    fn limit(&mut self, span: Span, message: String, flag: &str) {
        let d = Diagnostic::new(&codes::LIMIT, message)
            .at(Span::char_at(self.text, span.offset), "limit reached here")
            .help(format!(
                "if this spec is trusted, raise the limit with {flag} N; see `blazes explain S011`"
            ));
        self.push(d);
    }

    /// Warns about names that differ only in case (`Count` and `count`): legal, and distinct
    /// to the analysis, but almost always a typo, and for attributes a silent one (a seal on
    /// `Word` does not close a gate on `word`). Comparison is Unicode lowercase; names are not
    /// NFC-normalised (see `docs/robustness.md`).
    fn collisions(&mut self, spec: &Spec) {
        let groups: [(&str, Vec<&Name>); 3] = [
            (
                "component",
                spec.components.iter().map(|c| &c.name).collect(),
            ),
            ("source", spec.sources.iter().map(|s| &s.name).collect()),
            ("sink", spec.sinks.iter().map(|s| &s.name).collect()),
        ];
        for (what, names) in groups {
            self.collide(what, names);
        }
        for c in &spec.components {
            let mut ifaces: Vec<&Name> = Vec::new();
            for p in &c.paths {
                for n in [&p.from, &p.to] {
                    if !ifaces.iter().any(|m| m.text == n.text) {
                        ifaces.push(n);
                    }
                }
            }
            self.collide(&format!("interface of component `{}`", c.name.text), ifaces);
        }
        let attributes = std::mem::take(&mut self.attributes);
        let mut distinct: Vec<&Name> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for a in &attributes {
            if seen.insert(a.text.as_str()) {
                distinct.push(a);
            }
        }
        self.collide("attribute", distinct);
    }

    fn collide(&mut self, what: &str, mut names: Vec<&Name>) {
        // "First" is first in the file, whatever order the sections were validated in.
        names.sort_by_key(|n| n.span.offset);
        let mut first: BTreeMap<String, &Name> = BTreeMap::new();
        for n in names {
            match first.get(&fold(&n.text)) {
                Some(m) if m.text != n.text => {
                    let d = Diagnostic::new(
                        &codes::NAME_COLLISION,
                        format!(
                            "{what} `{}` differs from `{}` only in case, so they are two different names",
                            n.text, m.text
                        ),
                    )
                    .at(n.span, "this spelling")
                    .related(m.span, "other spelling")
                    .help("use one spelling everywhere; if they are meant to be different, rename one");
                    self.push(d);
                }
                Some(_) => {}
                None => {
                    first.insert(fold(&n.text), n);
                }
            }
        }
    }

    fn wrong_type(&mut self, node: &Node, expected: &str, what: &str) {
        let mut d = Diagnostic::new(
            &codes::WRONG_TYPE,
            format!(
                "{what} must be {expected}, but it is {}",
                self.describe(node)
            ),
        )
        .at(node.span, format!("expected {expected}"));
        if matches!(node.value, Value::Bool(_) | Value::Int(_) | Value::Float(_))
            && expected.contains("name")
        {
            d = d.help("YAML reads unquoted `true`, `false` and numbers as values, not names; quote the name");
        }
        self.push(d);
    }

    /// What a node is, quoting the scalar as written (`yes`, not `true`).
    fn describe(&self, node: &Node) -> String {
        let written = self
            .text
            .get(node.span.offset..node.span.end())
            .filter(|w| !w.is_empty() && !w.contains('\n'));
        match (&node.value, written) {
            (Value::Bool(_), Some(w)) => format!("the boolean `{w}`"),
            (Value::Int(_) | Value::Float(_), Some(w)) => format!("the number `{w}`"),
            _ => node.describe(),
        }
    }

    /// The entries of a mapping node; `null` counts as an empty mapping.
    fn map<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [(Node, Node)]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            Value::Null => Some(&[]),
            _ => {
                self.wrong_type(node, "a mapping", what);
                None
            }
        }
    }

    fn seq<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.wrong_type(node, "a list", what);
                None
            }
        }
    }

    /// Checks a mapping's keys against `known` (`(field, canonical)` pairs, aliases map to their
    /// canonical field), reporting unknown fields with a suggestion and duplicates.
    fn fields<'n>(
        &mut self,
        entries: &'n [(Node, Node)],
        known: &[(&str, &'static str)],
        what: &str,
    ) -> Fields<'n> {
        let mut found: Vec<(&'static str, &'n Node, &'n Node)> = Vec::with_capacity(entries.len());
        let mut suggested = Vec::new();
        for (k, v) in entries {
            let first = |c: &str| found.iter().find(|e| e.0 == c).map(|e| e.1.span);
            if let Some(canonical) = self.field(k, known, what, &first, &mut suggested) {
                found.push((canonical, k, v));
            }
        }
        Fields { found, suggested }
    }

    /// One key of a mapping checked against `known` (see [`Validator::fields`]), given where
    /// each field found before it was (`first`): its canonical field, or `None` when it was
    /// reported (not a string, unknown, or a duplicate). A field that an unknown key was taken
    /// for a typo of is added to `suggested`.
    fn field(
        &mut self,
        k: &Node,
        known: &[(&str, &'static str)],
        what: &str,
        first: &dyn Fn(&str) -> Option<Span>,
        suggested: &mut Vec<(&'static str, usize)>,
    ) -> Option<&'static str> {
        let Some(key) = k.as_str() else {
            self.wrong_type(k, "a field name", &format!("a key in {what}"));
            return None;
        };
        let Some(&(_, canonical)) = known.iter().find(|(f, _)| *f == key) else {
            let mut d = Diagnostic::new(
                &codes::UNKNOWN_FIELD,
                format!("unknown field `{key}` in {what}"),
            )
            .at(k.span, "unknown field");
            let names: Vec<&str> = known.iter().map(|(f, _)| *f).collect();
            d = match did_you_mean(key, names.iter().copied()) {
                Some(s) => {
                    if let Some(&(_, c)) = known.iter().find(|(f, _)| *f == s) {
                        suggested.push((c, self.diags.len()));
                    }
                    d.help(format!("did you mean `{s}`?"))
                }
                None => d.help(format!(
                    "the fields of {what} are: {}",
                    known
                        .iter()
                        .filter(|(f, c)| f == c)
                        .map(|(f, _)| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            };
            self.push(d);
            return None;
        };
        if let Some(first) = first(canonical) {
            let d = Diagnostic::new(
                &codes::DUPLICATE,
                format!("field `{canonical}` is given twice in {what}"),
            )
            .at(k.span, "second definition")
            .related(first, "first defined here");
            self.push(d);
            return None;
        }
        Some(canonical)
    }

    /// A plain name: non-empty string, no dot, no whitespace.
    fn name(&mut self, node: &Node, what: &str) -> Option<Name> {
        let Some(s) = node.as_str() else {
            self.wrong_type(node, "a name (a string)", what);
            return None;
        };
        let chars = s.chars().count();
        if chars > MAX_NAME_CHARS {
            self.error(
                &codes::INVALID_NAME,
                Span::new(node.span.offset, s.chars().take(16).map(char::len_utf8).sum()),
                format!("{what} of {chars} characters is too long; names have at most {MAX_NAME_CHARS} characters"),
                "name too long",
            );
            return None;
        }
        let problem = if s.is_empty() {
            Some("is empty")
        } else if s.contains('.') {
            Some("contains a dot, which separates a component from its interface in endpoints")
        } else if s.chars().any(char::is_whitespace) {
            Some("contains whitespace")
        } else if s.chars().any(char::is_control) {
            Some("contains a control character")
        } else {
            None
        };
        if let Some(p) = problem {
            self.error(
                &codes::INVALID_NAME,
                node.span,
                format!("{what} `{s}` {p}"),
                "invalid name",
            );
            return None;
        }
        Some(Name {
            text: s.to_string(),
            span: node.span,
        })
    }

    /// A list of attribute names; duplicates are reported, `*` is not an attribute.
    fn key_list(&mut self, node: &Node, what: &str) -> Option<KeyList> {
        let items = self.seq(node, what)?;
        if items.len() > self.limits.max_attributes {
            let first_over = &items[self.limits.max_attributes];
            self.limit(
                first_over.span,
                format!(
                    "{what} lists {} {}, more than the limit of {} per list",
                    items.len(),
                    crate::vocabulary::noun(items.len(), "attribute", "attributes"),
                    self.limits.max_attributes
                ),
                "--max-attributes",
            );
            return None;
        }
        let mut names: Vec<Name> = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            if item.as_str() == Some("*") {
                self.error(
                    &codes::INVALID_NAME,
                    item.span,
                    format!("`*` is not an attribute name in {what}"),
                    "not an attribute",
                );
                ok = false;
                continue;
            }
            match self.name(item, &format!("an attribute in {what}")) {
                Some(n) => {
                    if !self.attribute_texts.contains(&n.text) {
                        self.attribute_texts.insert(n.text.clone());
                        self.attributes.push(n.clone());
                    }
                    if let Some(first) = names.iter().find(|m| m.text == n.text) {
                        let d = Diagnostic::new(
                            &codes::DUPLICATE,
                            format!("attribute `{}` is listed twice in {what}", n.text),
                        )
                        .at(n.span, "listed again")
                        .related(first.span, "first listed here");
                        self.push(d);
                        ok = false;
                    } else {
                        names.push(n);
                    }
                }
                None => ok = false,
            }
        }
        ok.then_some(KeyList {
            names,
            span: node.span,
        })
    }

    fn is_duplicate(&mut self, seen: &mut BTreeMap<String, Span>, name: &Name, what: &str) -> bool {
        if let Some(first) = seen.get(&name.text) {
            let d = Diagnostic::new(
                &codes::DUPLICATE,
                format!("{what} `{}` is defined twice", name.text),
            )
            .at(name.span, "second definition")
            .related(*first, "first defined here");
            self.push(d);
            return true;
        }
        seen.insert(name.text.clone(), name.span);
        false
    }

    fn source(&mut self, name: Name, node: &Node) -> Option<SourceDecl> {
        let what = format!("source `{}`", name.text);
        let entries = self.map(node, &what)?;
        let f = self.fields(
            entries,
            &[("seal", "seal"), ("sealable", "sealable")],
            &what,
        );
        let seal = f
            .get("seal")
            .and_then(|n| self.key_list(n, &format!("the seal of {what}")));
        let mut sealable = Vec::new();
        if let Some(n) = f.get("sealable")
            && let Some(items) = self.seq(n, &format!("`sealable` of {what}"))
        {
            for item in items {
                if let Some(k) = self.key_list(item, &format!("a sealable key of {what}")) {
                    sealable.push(k);
                }
            }
        }
        Some(SourceDecl {
            name,
            seal,
            sealable,
            body: node.span,
        })
    }

    fn sink(&mut self, name: Name, node: &Node) -> Option<SinkDecl> {
        let what = format!("sink `{}`", name.text);
        let entries = self.map(node, &what)?;
        let f = self.fields(entries, &[("tolerate", "tolerate")], &what);
        let mut tolerate = None;
        if let Some(n) = f.get("tolerate") {
            let t = match n.as_str() {
                Some("Run") => Some(Tolerance::Run),
                Some("Inst") => Some(Tolerance::Inst),
                Some("Diverge") => Some(Tolerance::Diverge),
                Some("Async") | Some("Seal") => Some(Tolerance::Async),
                _ => None,
            };
            match t {
                Some(t) => tolerate = Some((t, n.span)),
                None => {
                    // Every value the match above accepts, in order of the labels.
                    const ACCEPTED: [&str; 5] = ["Seal", "Async", "Run", "Inst", "Diverge"];
                    let mut d = Diagnostic::new(
                        &codes::INVALID_VALUE,
                        format!(
                            "`tolerate` of {what} must be Async (the default; `Seal` means the same), Run, Inst or Diverge, but it is {}",
                            n.describe()
                        ),
                    )
                    .at(n.span, "unknown label");
                    let written = n.as_str().unwrap_or_default();
                    d = match did_you_mean(written, ACCEPTED) {
                        Some(s) if s.eq_ignore_ascii_case(written) => {
                            d.help(format!("did you mean `{s}`? label names are capitalised"))
                        }
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help("write the worst label the sink accepts: `tolerate: Run` accepts Run and every better label (Async, Seal)"),
                    };
                    self.push(d);
                }
            }
        }
        Some(SinkDecl {
            name,
            tolerate,
            body: node.span,
        })
    }

    fn component(&mut self, name: Name, node: &Node) -> Option<ComponentDecl> {
        let what = format!("component `{}`", name.text);
        let entries = self.map(node, &what)?;
        let f = self.fields(
            entries,
            &[
                ("paths", "paths"),
                ("annotation", "paths"),
                ("replicated", "replicated"),
                ("Rep", "replicated"),
                ("replicas", "replicas"),
                ("order", "order"),
            ],
            &what,
        );
        let mut incomplete = false;
        let mut paths = Vec::new();
        match f.get("paths") {
            None if f.was_suggested("paths") => incomplete = true,
            None => {
                let d = Diagnostic::new(&codes::MISSING_FIELD, format!("{what} has no `paths`"))
                    .at(name.span, "declared here")
                    .help(
                        "list the component's paths: `paths: [{ from: in, to: out, label: CR }]`",
                    );
                self.push(d);
                incomplete = true;
            }
            Some(n) => match self.seq(n, &format!("`paths` of {what}")) {
                Some(items) => {
                    // Exactly: growing from empty would allot four paths (640 bytes) to a
                    // component of one, a third of a big spec's memory.
                    paths.reserve_exact(items.len());
                    for item in items {
                        match self.path(item, &what) {
                            Some(p) => paths.push(p),
                            None => incomplete = true,
                        }
                    }
                }
                None => incomplete = true,
            },
        }
        let mut replicated = false;
        if let Some(n) = f.get("replicated") {
            match n.value {
                Value::Bool(b) => replicated = b,
                _ => self.wrong_type(n, "true or false", &format!("`replicated` of {what}")),
            }
        }
        let mut replicas = None;
        if let Some(n) = f.get("replicas") {
            match n.value {
                Value::Int(i) if i >= 1 => {
                    replicas = Some(u64::try_from(i).unwrap_or(u64::MAX));
                    replicated |= i > 1;
                }
                _ => self.error(
                    &codes::INVALID_VALUE,
                    n.span,
                    format!(
                        "`replicas` of {what} must be a positive integer, but it is {}",
                        n.describe()
                    ),
                    "expected a positive integer",
                ),
            }
        }
        let order = f.get("order").and_then(|n| match &n.value {
            Value::Str(s) if s == "global" => Some(OrderDecl::Global(n.span)),
            Value::Seq(_) => self
                .key_list(n, &format!("the order of {what}"))
                .map(OrderDecl::Keys),
            _ => {
                self.error(
                    &codes::INVALID_VALUE,
                    n.span,
                    format!(
                        "`order` of {what} must be `global` or a list of attributes, but it is {}",
                        n.describe()
                    ),
                    "expected `global` or a list",
                );
                None
            }
        });
        Some(ComponentDecl {
            name,
            paths,
            replicated,
            replicas,
            order,
            body: node.span,
            incomplete,
        })
    }

    fn path(&mut self, node: &Node, component: &str) -> Option<PathDecl> {
        let what = format!("a path of {component}");
        let entries = self.map(node, &what)?;
        let f = self.fields(
            entries,
            &[
                ("from", "from"),
                ("to", "to"),
                ("label", "label"),
                ("gate", "gate"),
                ("subscript", "gate"),
            ],
            &what,
        );
        let mut ok = true;
        let mut required = |v: &mut Self, field: &str| {
            let n = f.get(field);
            if n.is_none() && f.was_suggested(field) {
                ok = false;
            } else if n.is_none() {
                let d = Diagnostic::new(&codes::MISSING_FIELD, format!("{what} has no `{field}`"))
                    .at(
                        Span::char_at(v.text, node.span.offset),
                        format!("`{field}` missing"),
                    );
                v.push(d);
                ok = false;
            }
            n
        };
        let from = required(self, "from");
        let to = required(self, "to");
        let label = required(self, "label");
        let from = from.and_then(|n| self.name(n, "an input interface name"));
        let to = to.and_then(|n| self.name(n, "an output interface name"));
        let mut annotation = None;
        if let Some(l) = label {
            match l.as_str() {
                Some(s) if Annotation::parse(s).is_some() => annotation = Annotation::parse(s),
                _ => {
                    let shown = l
                        .as_str()
                        .map_or_else(|| l.describe(), |s| format!("`{s}`"));
                    let mut d = Diagnostic::new(
                        &codes::UNKNOWN_LABEL,
                        format!("unknown label {shown} in {what}"),
                    )
                    .at(l.span, "not a path label");
                    let upper = l.as_str().map(|s| s.trim().to_ascii_uppercase());
                    let hint = upper.as_deref().and_then(|u| {
                        Annotation::ALL
                            .iter()
                            .map(|a| a.as_str())
                            .find(|a| u.starts_with(a) && u.len() > 2)
                    });
                    d = match (
                        hint,
                        l.as_str()
                            .and_then(|s| did_you_mean(s, ["CR", "CW", "OR", "OW"])),
                    ) {
                        (Some(a), _) => d.help(format!(
                            "write the label as `{a}` and the gate in `gate: [...]`"
                        )),
                        (None, Some(s)) => {
                            d.help(format!("did you mean `{s}`? labels are CR, CW, OR, OW"))
                        }
                        (None, None) => d.help("labels are CR, CW, OR, OW"),
                    };
                    self.push(d);
                }
            }
        }
        let gate_node = f.get("gate");
        let mut gate = None;
        if let Some(g) = gate_node {
            gate = match &g.value {
                Value::Str(s) if s == "*" => Some(GateDecl::Star(g.span)),
                Value::Seq(_) => self
                    .key_list(g, &format!("the gate of {what}"))
                    .map(GateDecl::Keys),
                _ => {
                    self.wrong_type(
                        g,
                        "a list of attributes or \"*\"",
                        &format!("the gate of {what}"),
                    );
                    None
                }
            };
            if gate.is_none() {
                ok = false;
            }
        }
        if let Some(a) = annotation
            && gate_node.is_none()
            && let Some(typo) = f.suggestion("gate")
        {
            // `gates:` was taken for `gate`: its did-you-mean says what this path needs.
            let more = if a.is_confluent() {
                format!("(a {} path takes no gate: remove the field)", a.as_str())
            } else {
                // Dropped like a path missing its gate: an OR/OW path without one is invalid.
                ok = false;
                format!(
                    "(an {} path needs a gate: the partitions within which order matters)",
                    a.as_str()
                )
            };
            self.amend(typo, &more);
        } else if let Some(a) = annotation {
            match (a.is_confluent(), gate_node) {
                (true, Some(g)) => {
                    let key = f.key("gate").map_or(g.span, |k| k.span);
                    let d = Diagnostic::new(&codes::GATE, format!("a {} path takes no gate, but {what} has one", a.as_str()))
                        .at(key, "gate on a confluent path")
                        .help("confluent paths (CR, CW) are insensitive to order; remove the gate, or use OR/OW if the path is order-sensitive");
                    self.push(d);
                    ok = false;
                }
                (false, None) => {
                    let span = label.map_or(node.span, |l| l.span);
                    let d = Diagnostic::new(&codes::GATE, format!("an {} path needs a gate, but {what} has none", a.as_str()))
                        .at(span, "order-sensitive path without a gate")
                        .help("add `gate: [attributes]` (the partitions within which order matters), or `gate: \"*\"` if unknown");
                    self.push(d);
                    ok = false;
                }
                _ => {}
            }
        }
        let (Some(from), Some(to), Some(label), true) = (from, to, annotation, ok) else {
            return None;
        };
        Some(PathDecl {
            from,
            to,
            label,
            label_span: f.get("label").map_or(node.span, |n| n.span),
            gate,
            span: node.span,
        })
    }

    fn endpoint(&mut self, node: &Node, field: &str) -> Option<Endpoint> {
        let Some(s) = node.as_str() else {
            self.wrong_type(
                node,
                "an endpoint name (`Component.interface` or a source/sink)",
                &format!("the stream's `{field}`"),
            );
            return None;
        };
        let (component, name) = match s.split_once('.') {
            Some((c, i)) => (Some(c), i),
            None => (None, s),
        };
        let bad = component.is_some_and(|c| c.is_empty())
            || name.is_empty()
            || name.contains('.')
            || s.chars().any(|c| c.is_whitespace() || c.is_control());
        if bad {
            self.error(
                &codes::INVALID_NAME,
                node.span,
                format!(
                    "stream endpoint `{s}` is not `Component.interface` or a plain source/sink name"
                ),
                "malformed endpoint",
            );
            return None;
        }
        Some(Endpoint {
            text: s.to_string(),
            span: node.span,
            dot: component.map(str::len),
        })
    }

    fn stream(&mut self, node: &Node) -> Option<StreamDecl> {
        let entries = self.map(node, "a stream")?;
        let f = self.fields(
            entries,
            &[("from", "from"), ("to", "to"), ("seal", "seal")],
            "a stream",
        );
        let mut ends = Vec::new();
        for field in ["from", "to"] {
            match f.get(field) {
                Some(n) => ends.push(self.endpoint(n, field)),
                None if f.was_suggested(field) => ends.push(None),
                None => {
                    let d = Diagnostic::new(
                        &codes::MISSING_FIELD,
                        format!("a stream has no `{field}`"),
                    )
                    .at(
                        Span::char_at(self.text, node.span.offset),
                        format!("`{field}` missing"),
                    );
                    self.push(d);
                    ends.push(None);
                }
            }
        }
        let seal = match f.get("seal") {
            Some(n) => Some(self.key_list(n, "the seal of a stream")?),
            None => None,
        };
        let to = ends.pop().flatten()?;
        let from = ends.pop().flatten()?;
        Some(StreamDecl {
            from,
            to,
            seal,
            span: node.span,
        })
    }
}
