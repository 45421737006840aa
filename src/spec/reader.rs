//! Validating the spec as the YAML reader streams it ([`yaml::read`]): each component, stream,
//! source and sink is validated as soon as its small tree is read, and the tree dropped, so a
//! big spec never exists as one tree (which took several times the size of its text).
//!
//! The result must be what validating a whole tree gives: the same spec and the same
//! diagnostics in the same order, whatever order the file has its sections in. So each section
//! keeps its own items, diagnostics and attributes ([`Part`]), and [`Reader::finish`] puts them
//! together in the format's order: the root's fields, `version`, `name`, `sources`,
//! `components`, `streams`, `sinks`, stopping after a section over its limit (such a spec is
//! not worth validating further, and its limit is the one thing to report about it).

use std::collections::BTreeMap;

use super::yaml::{Consumer, Limit, Node, Take, Value};
use super::{ComponentDecl, Name, SinkDecl, SourceDecl, Spec, StreamDecl, Validator};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};

const ROOT_FIELDS: &[(&str, &str)] = &[
    ("version", "version"),
    ("name", "name"),
    ("sources", "sources"),
    ("components", "components"),
    ("streams", "streams"),
    ("sinks", "sinks"),
    ("lint", "lint"),
    ("engine", "engine"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Version,
    Name,
    Sources,
    Components,
    Streams,
    Sinks,
    Lint,
    Engine,
}

impl Section {
    fn of(field: &str) -> Option<Section> {
        Some(match field {
            "version" => Section::Version,
            "name" => Section::Name,
            "sources" => Section::Sources,
            "components" => Section::Components,
            "streams" => Section::Streams,
            "sinks" => Section::Sinks,
            "lint" => Section::Lint,
            "engine" => Section::Engine,
            _ => return None,
        })
    }
}

/// One section as validated so far.
struct Part<T> {
    items: Vec<T>,
    diags: Vec<Diagnostic>,
    attributes: Vec<Name>,
    /// Entries read, valid or not: what the limits count.
    count: usize,
    /// The first entry past the section's limit, once there is one; from there on the section
    /// is only counted, for the message.
    over: Option<Span>,
    /// The names defined so far (mapping sections), for duplicates.
    seen: BTreeMap<String, Span>,
}

impl<T> Default for Part<T> {
    fn default() -> Self {
        Part {
            items: Vec::new(),
            diags: Vec::new(),
            attributes: Vec::new(),
            count: 0,
            over: None,
            seen: BTreeMap::new(),
        }
    }
}

impl<T> Part<T> {
    /// Hands the section's diagnostics and attributes to `v`, and its items back; past its
    /// limit, reports the limit (with the total count) and gives no items: the spec stops
    /// there, as it did when the whole file was read first.
    fn finish(
        self,
        v: &mut Validator,
        (one, many): (&str, &str),
        limit: usize,
        which: Limit,
    ) -> Option<Vec<T>> {
        v.diags.extend(self.diags);
        if let Some(over) = self.over {
            v.limit(
                over,
                format!(
                    "the spec declares {} {}, more than the limit of {limit}",
                    self.count,
                    crate::vocabulary::noun(self.count, one, many)
                ),
                which,
            );
            return None;
        }
        v.attributes.extend(self.attributes);
        Some(self.items)
    }

    /// Counts one more entry; whether it is within `limit`.
    fn within(&mut self, limit: usize) -> bool {
        self.count += 1;
        self.count <= limit
    }

    /// Records the first entry past the limit and drops what was validated of the section
    /// (including what the validator holds for it): a section over its limit reports the limit
    /// alone, as when the count was known before validating.
    fn overflow(&mut self, span: Span, v: &mut Validator) {
        self.over = Some(span);
        self.items = Vec::new();
        self.diags = Vec::new();
        self.attributes = Vec::new();
        self.seen = BTreeMap::new();
        v.diags.clear();
        v.take_attributes();
    }

    /// Adds what the validator collected while reading this section.
    fn collect(&mut self, v: &mut Validator) {
        self.diags.append(&mut v.diags);
        self.attributes.append(&mut v.take_attributes());
    }
}

pub(super) struct Reader<'t> {
    v: Validator<'t>,
    /// The root's own diagnostics (keys unknown, duplicated or not strings; a root that is not
    /// a mapping), in file order.
    top: Vec<Diagnostic>,
    /// The root's fields found so far, with the span of their key.
    found: Vec<(&'static str, Span)>,
    /// Fields that an unknown root key was taken for a typo of (with the index of that
    /// diagnostic among the validator's, which the root's are moved out of at once).
    suggested: Vec<(&'static str, usize)>,
    /// The root is not a mapping (and was reported as such).
    not_a_map: bool,
    version: Option<Node>,
    name: Option<Node>,
    lint: Option<Node>,
    engine: Option<Node>,
    sources: Part<SourceDecl>,
    components: Part<ComponentDecl>,
    streams: Part<StreamDecl>,
    sinks: Part<SinkDecl>,
    /// The section whose value is being read.
    current: Option<Section>,
    /// The valid, new name of the mapping entry whose value comes next.
    entry: Option<Name>,
}

impl<'t> Reader<'t> {
    pub(super) fn new(v: Validator<'t>) -> Self {
        Reader {
            v,
            top: Vec::new(),
            found: Vec::new(),
            suggested: Vec::new(),
            not_a_map: false,
            version: None,
            name: None,
            lint: None,
            engine: None,
            sources: Part::default(),
            components: Part::default(),
            streams: Part::default(),
            sinks: Part::default(),
            current: None,
            entry: None,
        }
    }

    /// A key of `sources`, `components` or `sinks`: whether its value is to be validated.
    fn entry_name(&mut self, key: &Node) -> bool {
        let (what, name_what) = match self.current {
            Some(Section::Sources) => ("source", "a source name"),
            Some(Section::Components) => ("component", "a component name"),
            Some(Section::Sinks) => ("sink", "a sink name"),
            _ => return false,
        };
        if self.current == Some(Section::Components)
            && !self.components.within(self.v.limits.max_components)
        {
            if self.components.over.is_none() {
                self.components.overflow(key.span, &mut self.v);
            }
            return false;
        }
        let Some(name) = self.v.name(key, name_what) else {
            return false;
        };
        let seen = match self.current {
            Some(Section::Sources) => &mut self.sources.seen,
            Some(Section::Components) => &mut self.components.seen,
            _ => &mut self.sinks.seen,
        };
        if self.v.is_duplicate(seen, &name, what) {
            return false;
        }
        self.entry = Some(name);
        true
    }

    fn entry(&mut self, value: &Node) {
        let Some(name) = self.entry.take() else {
            return;
        };
        match self.current {
            Some(Section::Sources) => {
                if let Some(s) = self.v.source(name, value) {
                    self.sources.items.push(s);
                }
            }
            Some(Section::Components) => {
                if let Some(c) = self.v.component(name, value) {
                    self.components.items.push(c);
                }
            }
            Some(Section::Sinks) => {
                if let Some(s) = self.v.sink(name, value) {
                    self.sinks.items.push(s);
                }
            }
            _ => {}
        }
    }

    fn stream(&mut self, item: &Node) {
        if self.streams.count > self.v.limits.max_streams {
            if self.streams.over.is_none() {
                self.streams.overflow(item.span, &mut self.v);
            }
            return;
        }
        if let Some(s) = self.v.stream(item) {
            self.streams.items.push(s);
        }
    }

    /// The spec and every diagnostic, once the whole document was read; `root` is its span.
    pub(super) fn finish(mut self, root: Span) -> (Spec, Vec<Diagnostic>) {
        let mut spec = Spec::default();
        let rest = std::mem::replace(&mut self.v.diags, std::mem::take(&mut self.top));
        debug_assert!(rest.is_empty(), "every section collected its diagnostics");
        let has_components = self.found.iter().any(|(f, _)| *f == "components");
        let components = self.components.count;
        let streams = self.streams.count;
        if !self.not_a_map {
            self.assemble(&mut spec, root);
        }
        self.v.collisions(&spec);
        self.v.lone_attributes(&spec);
        self.v.duplicate_streams(&spec);
        // A dataflow without components, or without streams between them, has nothing to
        // analyse: no source reaches anything. Said only when nothing else is wrong: another
        // error may be why the section is empty.
        let clean = !self
            .v
            .diags
            .iter()
            .any(|d| d.severity == crate::diagnostic::Severity::Error);
        // A composite brings its own streams: a system of modules wired to nothing outside
        // is still a dataflow.
        let composed = spec.components.iter().any(|c| c.composite.is_some());
        if !self.not_a_map && has_components && components > 0 && streams == 0 && clean && !composed
        {
            let at = self
                .found
                .iter()
                .find(|(f, _)| *f == "streams")
                .map_or(Span::new(root.offset, 0), |e| e.1);
            let d = Diagnostic::new(&codes::EMPTY, "the spec declares no streams")
                .at(at, "no streams")
                .help(
                    "a spec needs at least `components:` and `streams:` between its sources, components and sinks; see `blazes explain S009`",
                );
            self.v.push(d);
        }
        if !self.not_a_map && has_components && components == 0 && clean {
            let at = self
                .found
                .iter()
                .find(|(f, _)| *f == "components")
                .map_or(Span::new(root.offset, 0), |e| e.1);
            let d = Diagnostic::new(&codes::EMPTY, "the spec declares no components")
                .at(at, "no components")
                .help(
                    "a spec needs at least `components:` and `streams:`; see `blazes explain S009`",
                );
            self.v.push(d);
        }
        (spec, self.v.diags)
    }

    fn assemble(&mut self, spec: &mut Spec, root: Span) {
        let v = &mut self.v;
        if let Some(n) = &self.version
            && n.value != Value::Int(1)
        {
            v.error(
                &codes::INVALID_VALUE,
                n.span,
                match &n.value {
                    Value::Int(i) => {
                        format!("this blazes reads spec version 1, but the spec says version `{i}`")
                    }
                    _ => format!(
                        "this blazes reads spec version 1, but the spec gives {} as its version",
                        n.describe()
                    ),
                },
                "unsupported version",
            );
        }
        if let Some(n) = &self.name {
            match n.as_str() {
                Some(s) => {
                    spec.name = Some(Name {
                        text: s.to_string(),
                        span: n.span,
                    })
                }
                None => v.wrong_type(n, "a string", "`name`"),
            }
        }
        if let Some(n) = &self.lint {
            spec.lint = v.lint(n);
        }
        if let Some(n) = &self.engine {
            spec.engine = v.engine(n);
        }
        spec.sources_key = self
            .found
            .iter()
            .find(|(f, _)| *f == "sources")
            .map(|e| e.1);
        let sources = std::mem::take(&mut self.sources);
        v.diags.extend(sources.diags);
        v.attributes.extend(sources.attributes);
        spec.sources = sources.items;

        let has_components = self.found.iter().any(|(f, _)| *f == "components");
        if !has_components {
            if !self.suggested.iter().any(|(f, _)| *f == "components") {
                let d =
                    Diagnostic::new(&codes::MISSING_FIELD, "the spec has no `components` field")
                        .at(Span::new(root.offset, 0), "the spec starts here")
                        .help("a spec lists its components under `components:`; see the README");
                v.push(d);
            }
        } else {
            let limit = v.limits.max_components;
            let components = std::mem::take(&mut self.components);
            let Some(items) =
                components.finish(v, ("component", "components"), limit, Limit::Components)
            else {
                return;
            };
            spec.components = items;
        }

        let limit = v.limits.max_streams;
        let streams = std::mem::take(&mut self.streams);
        let Some(items) = streams.finish(v, ("stream", "streams"), limit, Limit::Streams) else {
            return;
        };
        spec.streams = items;
        clocks(spec);
        ddl_watermarks(spec);

        let sinks = std::mem::take(&mut self.sinks);
        v.diags.extend(sinks.diags);
        v.attributes.extend(sinks.attributes);
        spec.sinks = sinks.items;
    }
}

impl Consumer for Reader<'_> {
    fn key(&mut self, key: Node) -> Take {
        let found = &self.found;
        let first = |c: &str| found.iter().find(|e| e.0 == c).map(|e| e.1);
        let canonical = self
            .v
            .field(&key, ROOT_FIELDS, "the spec", &first, &mut self.suggested);
        self.top.append(&mut self.v.diags);
        self.current = None;
        let Some(section) = canonical.and_then(Section::of) else {
            return Take::Skip;
        };
        self.found.push((canonical.unwrap_or_default(), key.span));
        self.current = Some(section);
        // What follows a section over its limit is not reported: no need to build it.
        let stopped = self.components.over.is_some()
            || (section == Section::Sinks && self.streams.over.is_some());
        match section {
            Section::Version | Section::Name | Section::Lint | Section::Engine => Take::Whole,
            Section::Streams | Section::Sinks if stopped => Take::Skip,
            Section::Sources | Section::Components | Section::Sinks => Take::Entries,
            Section::Streams => Take::Items,
        }
    }

    fn value(&mut self, value: Node) {
        match self.current {
            Some(Section::Version) => self.version = Some(value),
            Some(Section::Name) => self.name = Some(value),
            Some(Section::Lint) => self.lint = Some(value),
            Some(Section::Engine) => self.engine = Some(value),
            // A streamed section comes here only when it is not the collection expected: the
            // type error, or for null an empty mapping.
            Some(Section::Streams) => {
                let _ = self.v.seq(&value, "`streams`");
            }
            Some(section) => {
                let what = match section {
                    Section::Sources => "`sources`",
                    Section::Components => "`components`",
                    _ => "`sinks`",
                };
                let _ = self.v.map(&value, what);
            }
            None => {}
        }
    }

    fn entry_key(&mut self, key: Node) -> bool {
        self.entry_name(&key)
    }

    fn entry_value(&mut self, value: Node) {
        self.entry(&value);
    }

    fn want_item(&mut self) -> bool {
        // The first item past the limit is built too: the report points at it.
        self.streams.within(self.v.limits.max_streams) || self.streams.over.is_none()
    }

    fn item(&mut self, item: Node) {
        self.stream(&item);
    }

    fn end(&mut self) {
        match self.current.take() {
            Some(Section::Sources) => self.sources.collect(&mut self.v),
            Some(Section::Components) => self.components.collect(&mut self.v),
            Some(Section::Streams) => self.streams.collect(&mut self.v),
            Some(Section::Sinks) => self.sinks.collect(&mut self.v),
            // `version` and `name` are checked in `finish`, after the root's fields, as the
            // format orders them.
            Some(Section::Version | Section::Name | Section::Lint | Section::Engine) | None => {}
        }
        self.entry = None;
    }

    fn root(&mut self, root: Node) {
        if self.v.map(&root, "the spec").is_none() {
            self.not_a_map = true;
        }
        self.top.append(&mut self.v.diags);
    }
}

/// A white box's `WATERMARK FOR t` on an input fed straight from a source is that source's
/// watermark (the engine's source operator generates it): the stream is sealed on the windows
/// of `t`, unless it is sealed already or the source declares a watermark of its own (then
/// the source's is what the stream carries). From a component the stream is left as it is:
/// a watermark generated in the middle of a dataflow closes windows over records whose order
/// nothing fixed, so the window waits for a seal the stream must carry itself.
fn ddl_watermarks(spec: &mut Spec) {
    for c in &spec.components {
        for (input, attr) in &c.watermarks {
            let to = format!("{}.{input}", c.name.text);
            for st in spec
                .streams
                .iter_mut()
                .filter(|s| s.to.text == to && s.seal.is_none())
            {
                let Some(src) = spec.sources.iter().find(|s| s.name.text == st.from.text) else {
                    continue;
                };
                if src.watermark.is_none() {
                    st.seal = Some(super::KeyList {
                        names: vec![attr.clone()],
                        span: attr.span,
                    });
                }
            }
        }
    }
}

/// A white box whose program reads processing time or calls a nondeterministic function has a
/// path from its internal `clock` input: it is fed by an internal unsealed source of its own,
/// `clock@Component`, so that the analysis sees nondeterminism that no order of the declared
/// inputs fixes.
fn clocks(spec: &mut Spec) {
    use crate::whitebox::CLOCK;
    for c in &spec.components {
        let Some(p) = c
            .paths
            .iter()
            .find(|p| crate::whitebox::is_clock(p.note.as_deref(), &p.from.text))
        else {
            continue;
        };
        let name = format!("{CLOCK}@{}", c.name.text);
        spec.sources.push(super::SourceDecl {
            name: Name {
                text: name.clone(),
                span: p.span,
            },
            seal: None,
            sealable: Vec::new(),
            watermark: None,
            body: p.span,
        });
        spec.streams.push(super::StreamDecl {
            from: super::Endpoint::internal(name, p.span),
            to: super::Endpoint::internal(format!("{}.{CLOCK}", c.name.text), p.span),
            seal: None,
            span: p.span,
        });
    }
}
