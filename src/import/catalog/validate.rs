//! A catalogue's YAML read into entries: the fields of the document and of each entry, checked
//! with the spec's codes and located in the catalogue's text, every error at once.

use super::{Entry, GROUP_KEY, Order, PARTITION_KEY, one_line};
use crate::codes::{self, Code};
use crate::diagnostic::{Diagnostic, LineIndex, Span};
use crate::import::Engine;
use crate::label::Annotation;
use crate::spec::yaml::{self, Node, Value};
use crate::spec::{Input, Limit, Limits, MAX_NAME_CHARS, did_you_mean};

const TOP_FIELDS: &[&str] = &["version", "engine", "operators"];
const ENTRY_FIELDS: &[&str] = &[
    "class",
    "name",
    "label",
    "gate",
    "seal",
    "order",
    "replicated",
    "replicas",
    "keeps-key-order",
    "reads-state",
    "warn",
    "reason",
];

/// Validates a catalogue's text into entries, or every error of it.
pub fn parse(
    engine: Engine,
    text: &str,
    origin: &str,
    limits: &Limits,
) -> Result<Vec<Entry>, Vec<Diagnostic>> {
    let root = yaml::parse(text, limits).map_err(|d| vec![*d])?;
    let mut v = Validator {
        diags: Vec::new(),
        index: LineIndex::new(text),
        text,
        origin,
        limits,
    };
    let entries = v.root(&root, engine);
    if v.diags.is_empty() {
        Ok(entries)
    } else {
        Err(v.diags)
    }
}

struct Validator<'a> {
    diags: Vec<Diagnostic>,
    index: LineIndex,
    text: &'a str,
    origin: &'a str,
    limits: &'a Limits,
}

impl Validator<'_> {
    fn error(&mut self, code: &'static Code, span: Span, message: String, label: &'static str) {
        self.diags
            .push(Diagnostic::new(code, message).at(span, label));
    }

    /// The fields of a mapping, with unknown and duplicate ones reported.
    fn fields<'n>(
        &mut self,
        node: &'n Node,
        known: &[&'static str],
        what: &str,
    ) -> Option<Vec<(&'static str, &'n Node)>> {
        let Value::Map(pairs) = &node.value else {
            self.error(
                &codes::WRONG_TYPE,
                node.span,
                format!("{what} must be a mapping, found {}", node.describe()),
                "expected a mapping",
            );
            return None;
        };
        let mut out: Vec<(&'static str, &Node)> = Vec::new();
        let mut spans: Vec<Span> = Vec::new();
        for (k, value) in pairs {
            let Some(key) = k.as_str() else {
                self.error(
                    &codes::WRONG_TYPE,
                    k.span,
                    format!(
                        "a field name in {what} must be a string, found {}",
                        k.describe()
                    ),
                    "expected a field name",
                );
                continue;
            };
            let Some(&canonical) = known.iter().find(|f| **f == key) else {
                let mut d = Diagnostic::new(
                    &codes::UNKNOWN_FIELD,
                    format!("unknown field `{key}` in {what}"),
                )
                .at(k.span, "unknown field");
                d = match did_you_mean(key, known.iter().copied()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d.help(format!("the fields are: {}", known.join(", "))),
                };
                self.diags.push(d);
                continue;
            };
            if let Some(i) = out.iter().position(|(f, _)| *f == canonical) {
                let d = Diagnostic::new(
                    &codes::DUPLICATE,
                    format!("field `{canonical}` is given twice in {what}"),
                )
                .at(k.span, "second definition")
                .related(spans[i], "first definition");
                self.diags.push(d);
                continue;
            }
            out.push((canonical, value));
            spans.push(k.span);
        }
        Some(out)
    }

    fn root(&mut self, root: &Node, engine: Engine) -> Vec<Entry> {
        if root.value == Value::Null {
            self.error(
                &codes::EMPTY,
                root.span,
                "the catalogue is empty; it needs `operators:`".into(),
                "empty",
            );
            return Vec::new();
        }
        let Some(fields) = self.fields(root, TOP_FIELDS, "the catalogue") else {
            return Vec::new();
        };
        let mut entries = Vec::new();
        let mut saw_operators = false;
        for (field, value) in fields {
            match field {
                "version" => {
                    if value.value != Value::Int(1) {
                        self.error(
                            &codes::INVALID_VALUE,
                            value.span,
                            format!("catalogue `version` must be 1, found {}", value.describe()),
                            "unsupported version",
                        );
                    }
                }
                "engine" => match value.as_str() {
                    Some(e) if e == engine.name() => {}
                    Some(e) if Engine::parse(e).is_some() => self.error(
                        &codes::INVALID_VALUE,
                        value.span,
                        format!(
                            "this catalogue is for `{e}`, but the topology is imported as `{}`",
                            engine.name()
                        ),
                        "another engine",
                    ),
                    _ => self.error(
                        &codes::INVALID_VALUE,
                        value.span,
                        format!(
                            "catalogue `engine` must be one of kafka-streams, flink, storm-flux, found {}",
                            value.describe()
                        ),
                        "unknown engine",
                    ),
                },
                _ => {
                    saw_operators = true;
                    let Value::Seq(items) = &value.value else {
                        self.error(
                            &codes::WRONG_TYPE,
                            value.span,
                            format!("`operators` must be a list of entries, found {}", value.describe()),
                            "expected a list",
                        );
                        continue;
                    };
                    if items.len() > self.limits.max_components {
                        self.diags.push(
                            Limit::Components
                                .exceeded(
                                    Input::Catalogue,
                                    format!(
                                        "the catalogue has {} entries, more than the limit of {} (--max-components)",
                                        items.len(),
                                        self.limits.max_components
                                    ),
                                )
                                .at(value.span, "too many entries"),
                        );
                        continue;
                    }
                    for item in items {
                        if let Some(e) = self.entry(item) {
                            entries.push(e);
                        }
                    }
                }
            }
        }
        if !saw_operators {
            self.error(
                &codes::MISSING_FIELD,
                Span::new(root.span.offset, 0),
                "the catalogue has no `operators:` list".into(),
                "missing `operators`",
            );
        }
        entries
    }

    fn entry(&mut self, node: &Node) -> Option<Entry> {
        let what = "a catalogue entry";
        let fields = self.fields(node, ENTRY_FIELDS, what)?;
        let before = self.diags.len();
        let get = |f: &str| fields.iter().find(|(n, _)| *n == f).map(|(_, v)| *v);
        let classes = get("class").map_or_else(Vec::new, |n| self.patterns(n, "class"));
        let names = get("name").map_or_else(Vec::new, |n| self.patterns(n, "name"));
        if get("class").is_none() && get("name").is_none() {
            self.error(
                &codes::MISSING_FIELD,
                node.span,
                "a catalogue entry needs `class:` or `name:` patterns to match operators".into(),
                "matches nothing",
            );
        }
        let label = match get("label") {
            None => {
                self.error(
                    &codes::MISSING_FIELD,
                    node.span,
                    format!(
                        "a catalogue entry needs a `label:` ({})",
                        crate::vocabulary::annotation_choices()
                    ),
                    "no label",
                );
                None
            }
            Some(l) => match l.as_str().and_then(Annotation::parse) {
                Some(a) => Some(a),
                None => {
                    let found = l.describe();
                    let mut d = Diagnostic::new(
                        &codes::UNKNOWN_LABEL,
                        format!(
                            "a catalogue entry's label must be {}, found {found}",
                            crate::vocabulary::annotation_choices()
                        ),
                    )
                    .at(l.span, "unknown label");
                    if let Some(s) = l.as_str().and_then(|s| {
                        did_you_mean(&s.to_uppercase(), Annotation::ALL.map(Annotation::as_str))
                            .map(str::to_string)
                    }) {
                        d = d.help(format!("did you mean `{s}`?"));
                    }
                    self.diags.push(d);
                    None
                }
            },
        };
        let gate = get("gate").and_then(|g| self.gate(g));
        if let Some(a) = label {
            let ordered = !a.is_confluent();
            match (ordered, get("gate")) {
                (true, None) => self.error(
                    &codes::GATE,
                    node.span,
                    format!(
                        "an `{}` entry needs a `gate:` (attributes, `$key`, or \"*\")",
                        a.as_str()
                    ),
                    "no gate",
                ),
                (false, Some(g)) => self.error(
                    &codes::GATE,
                    g.span,
                    format!("a `{}` entry is confluent and takes no gate", a.as_str()),
                    "gate on a confluent label",
                ),
                _ => {}
            }
        }
        let seal = get("seal").and_then(|s| self.keys(s, "seal", false));
        let order = get("order").and_then(|o| match &o.value {
            Value::Str(s) if s == "global" => Some(Order::Global),
            Value::Seq(_) => self.keys(o, "order", true).map(Order::Keys),
            _ => {
                self.error(
                    &codes::INVALID_VALUE,
                    o.span,
                    format!(
                        "`order` must be `global` or a list of attributes, found {}",
                        o.describe()
                    ),
                    "expected `global` or a list",
                );
                None
            }
        });
        let replicated = get("replicated").and_then(|r| self.boolean(r, "replicated"));
        let replicas = get("replicas").and_then(|r| match r.value {
            Value::Int(n) if n >= 1 && n <= i128::from(u32::MAX) => Some(n as u64),
            _ => {
                self.error(
                    &codes::INVALID_VALUE,
                    r.span,
                    format!(
                        "`replicas` must be a positive integer, found {}",
                        r.describe()
                    ),
                    "expected a positive integer",
                );
                None
            }
        });
        let keeps_key_order = get("keeps-key-order")
            .and_then(|r| self.boolean(r, "keeps-key-order"))
            .unwrap_or(false);
        let reads_state = get("reads-state")
            .and_then(|r| self.boolean(r, "reads-state"))
            .unwrap_or(false);
        let warn = get("warn").and_then(|w| self.sentence(w, "warn"));
        let reason = match get("reason") {
            Some(r) => self.sentence(r, "reason"),
            None => {
                self.error(
                    &codes::MISSING_FIELD,
                    node.span,
                    "a catalogue entry needs a `reason:` saying why the operator gets its label (it becomes the spec's comment)".into(),
                    "no reason",
                );
                None
            }
        };
        if self.diags.len() > before {
            return None;
        }
        let line = self.index.line_col(self.text, node.span.offset).0;
        Some(Entry {
            classes,
            names,
            label: label?,
            gate,
            seal,
            order,
            replicated,
            replicas,
            keeps_key_order,
            reads_state,
            warn,
            reason: reason?,
            origin: format!("{}, line {line}", self.origin),
        })
    }

    fn patterns(&mut self, node: &Node, field: &str) -> Vec<String> {
        let items: Vec<&Node> = match &node.value {
            Value::Seq(items) => items.iter().collect(),
            _ => vec![node],
        };
        if items.is_empty() {
            self.error(
                &codes::INVALID_VALUE,
                node.span,
                format!("`{field}` needs at least one pattern"),
                "empty list",
            );
        }
        let mut out = Vec::new();
        for item in items {
            match item.as_str() {
                Some(s) if !s.is_empty() && s.chars().count() <= MAX_NAME_CHARS => {
                    out.push(s.to_string())
                }
                Some(_) => self.error(
                    &codes::INVALID_VALUE,
                    item.span,
                    format!("a `{field}` pattern must have 1 to {MAX_NAME_CHARS} characters"),
                    "bad pattern",
                ),
                None => self.error(
                    &codes::WRONG_TYPE,
                    item.span,
                    format!(
                        "a `{field}` pattern must be a string, found {}",
                        item.describe()
                    ),
                    "expected a string",
                ),
            }
        }
        out
    }

    fn gate(&mut self, node: &Node) -> Option<Vec<String>> {
        if node.as_str() == Some("*") {
            return Some(vec!["*".to_string()]);
        }
        self.keys(node, "gate", true)
    }

    /// A list of attribute names; `$key` where `partition` allows it.
    fn keys(&mut self, node: &Node, field: &str, partition: bool) -> Option<Vec<String>> {
        let Value::Seq(items) = &node.value else {
            let also = if field == "gate" { " or \"*\"" } else { "" };
            self.error(
                &codes::WRONG_TYPE,
                node.span,
                format!(
                    "`{field}` must be a list of attributes{also}, found {}",
                    node.describe()
                ),
                "expected a list",
            );
            return None;
        };
        if items.len() > self.limits.max_attributes {
            self.diags.push(
                Limit::Attributes
                    .exceeded(
                        Input::Catalogue,
                        format!(
                            "`{field}` has {} attributes, more than the limit of {} (--max-attributes)",
                            items.len(),
                            self.limits.max_attributes
                        ),
                    )
                    .at(node.span, "too many attributes"),
            );
            return None;
        }
        if items.is_empty() && field != "seal" {
            self.error(
                &codes::INVALID_VALUE,
                node.span,
                format!("`{field}` needs at least one attribute"),
                "empty list",
            );
            return None;
        }
        let mut out: Vec<String> = Vec::new();
        let mut ok = true;
        for item in items {
            let Some(s) = item.as_str() else {
                self.error(
                    &codes::WRONG_TYPE,
                    item.span,
                    format!(
                        "an attribute in `{field}` must be a string, found {}",
                        item.describe()
                    ),
                    "expected a name",
                );
                ok = false;
                continue;
            };
            let problem = if s == PARTITION_KEY || s == GROUP_KEY {
                (!partition)
                    .then_some("is the partition key, which only a gate or an order can name")
            } else if s.is_empty() {
                Some("is empty")
            } else if s == "*" {
                Some("is not an attribute (a gate of unknown partitioning is `gate: \"*\"`)")
            } else if s.contains('.') {
                Some("contains a dot")
            } else if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
                Some("contains whitespace or a control character")
            } else if s.chars().count() > MAX_NAME_CHARS {
                Some("is too long")
            } else {
                None
            };
            if let Some(p) = problem {
                self.error(
                    &codes::INVALID_NAME,
                    item.span,
                    format!("the attribute `{s}` in `{field}` {p}"),
                    "invalid attribute",
                );
                ok = false;
            } else if out.iter().any(|o| o == s) {
                self.error(
                    &codes::DUPLICATE,
                    item.span,
                    format!("the attribute `{s}` is given twice in `{field}`"),
                    "repeated",
                );
                ok = false;
            } else {
                out.push(s.to_string());
            }
        }
        ok.then_some(out)
    }

    fn boolean(&mut self, node: &Node, field: &str) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.error(
                    &codes::WRONG_TYPE,
                    node.span,
                    format!("`{field}` must be true or false, found {}", node.describe()),
                    "expected a boolean",
                );
                None
            }
        }
    }

    /// A one-line text (newlines become spaces: it goes into a comment).
    fn sentence(&mut self, node: &Node, field: &str) -> Option<String> {
        match node.as_str() {
            Some(s) if !s.trim().is_empty() => Some(one_line(s)),
            _ => {
                self.error(
                    &codes::WRONG_TYPE,
                    node.span,
                    format!(
                        "`{field}` must be a non-empty text, found {}",
                        node.describe()
                    ),
                    "expected a text",
                );
                None
            }
        }
    }
}
