//! The checks every entry of a spec shares: a node's type, a mapping's fields (unknown ones
//! with "did you mean", duplicates), names, attribute lists, limits, duplicate definitions,
//! and the case-only collisions of names over the whole spec (S016). The entries themselves
//! are validated in `entries`.

use std::collections::{BTreeMap, HashSet};

use super::yaml::{Input, Limit, Limits, Node, Value};
use super::{GateDecl, KeyList, MAX_NAME_CHARS, Name, OrderDecl, Spec, did_you_mean};

/// Most distinct attributes a spec may have for S017 to be checked (each attribute named once
/// is compared with every other; real specs have a handful).
pub(super) const MAX_LONE_ATTRIBUTES: usize = 512;

/// Shortest attribute name S017 compares: shorter ones are one edit away from too many others.
const MIN_LONE_CHARS: usize = 4;
use crate::codes::{self, Code};
use crate::diagnostic::{Diagnostic, Span};

pub(super) struct Validator<'t> {
    pub(super) text: &'t str,
    pub(super) diags: Vec<Diagnostic>,
    pub(super) limits: &'t Limits,
    /// The attribute names written, for the case-collision check: the first of each spelling
    /// since [`Validator::take_attributes`] (only the first is ever reported).
    pub(super) attributes: Vec<Name>,
    pub(super) attribute_texts: HashSet<String>,
    /// The text's line starts, built on the first white box (whose reasons name file lines).
    pub(super) lines: std::cell::OnceCell<crate::diagnostic::LineIndex>,
}

/// What two names that differ only in case are, for the S016 warning.
fn fold(name: &str) -> String {
    name.to_lowercase()
}

/// The fields of one mapping, after unknown and duplicate fields were reported. A short
/// vector, not a map: mappings have a handful of fields and there is one per path.
pub(super) struct Fields<'n> {
    found: Vec<(&'static str, &'n Node, &'n Node)>,
    /// Canonical fields that an unknown field was taken for a typo of, with the index of that
    /// "did you mean" diagnostic: a "missing field" error for them would only repeat it, and
    /// what the missing field implies is said there instead (see [`Validator::amend`]).
    suggested: Vec<(&'static str, usize)>,
}

impl<'n> Fields<'n> {
    pub(super) fn entry(&self, name: &str) -> Option<&(&'static str, &'n Node, &'n Node)> {
        self.found.iter().find(|(f, _, _)| *f == name)
    }
    pub(super) fn get(&self, name: &str) -> Option<&'n Node> {
        self.entry(name).map(|e| e.2)
    }
    pub(super) fn key(&self, name: &str) -> Option<&'n Node> {
        self.entry(name).map(|e| e.1)
    }
    pub(super) fn was_suggested(&self, name: &str) -> bool {
        self.suggested.iter().any(|(f, _)| *f == name)
    }
    /// The index of the "did you mean `name`" diagnostic, if an unknown field was taken for it.
    pub(super) fn suggestion(&self, name: &str) -> Option<usize> {
        self.suggested
            .iter()
            .find(|(f, _)| *f == name)
            .map(|&(_, i)| i)
    }
}

impl Validator<'_> {
    pub(super) fn error(
        &mut self,
        code: &'static Code,
        span: Span,
        message: String,
        label: &'static str,
    ) {
        self.diags
            .push(Diagnostic::new(code, message).at(span, label));
    }

    pub(super) fn take_attributes(&mut self) -> Vec<Name> {
        self.attribute_texts.clear();
        std::mem::take(&mut self.attributes)
    }

    pub(super) fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Adds to the help of diagnostic `index` (a "did you mean") what the field it suggests
    /// means here, instead of a second error about the field being absent: the user wrote the
    /// field, only misspelt.
    pub(super) fn amend(&mut self, index: usize, more: &str) {
        if let Some(d) = self.diags.get_mut(index) {
            d.help = Some(match d.help.take() {
                Some(h) => format!("{h} {more}"),
                None => more.to_string(),
            });
        }
    }

    pub(super) fn limit(&mut self, span: Span, message: String, limit: Limit) {
        let d = limit
            .exceeded(Input::Spec, message)
            .at(Span::char_at(self.text, span.offset), "limit reached here");
        self.push(d);
    }

    /// Warns about names that differ only in case (`Count` and `count`): legal, and distinct
    /// to the analysis, but almost always a typo, and for attributes a silent one (a seal on
    /// `Word` does not close a gate on `word`). Comparison is Unicode lowercase; names are not
    /// NFC-normalised (see `docs/robustness.md`).
    pub(super) fn collisions(&mut self, spec: &Spec) {
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

    /// S017: an attribute that one list names and no other list of the spec does, when an
    /// attribute that exists is spelt almost like it (`epoc` where the others say `epoch`): a
    /// seal or an order on a misspelt key silently protects nothing. Names that differ only in
    /// case are S016's. Past [`MAX_LONE_ATTRIBUTES`] distinct attributes the check is skipped:
    /// it compares each lone attribute with every other.
    pub(super) fn lone_attributes(&mut self, spec: &Spec) {
        let mut lists: Vec<&KeyList> = Vec::new();
        for s in &spec.sources {
            lists.extend(s.seal.iter());
            lists.extend(s.sealable.iter());
        }
        for c in &spec.components {
            if let Some(OrderDecl::Keys(k)) = &c.order {
                lists.push(k);
            }
            if let Some(p) = &c.partitions {
                lists.push(&p.by);
            }
            for p in &c.paths {
                if let Some(GateDecl::Keys(k)) = &p.gate {
                    lists.push(k);
                }
            }
        }
        lists.extend(spec.streams.iter().filter_map(|s| s.seal.as_ref()));
        // For each attribute: how many lists name it, and where it is first named.
        let mut named: BTreeMap<&str, (usize, &Name)> = BTreeMap::new();
        for k in lists {
            for (i, n) in k.names.iter().enumerate() {
                if k.names[..i].iter().any(|m| m.text == n.text) {
                    continue;
                }
                named.entry(n.text.as_str()).or_insert((0, n)).0 += 1;
            }
        }
        if named.len() > MAX_LONE_ATTRIBUTES {
            return;
        }
        let mut found: Vec<Diagnostic> = Vec::new();
        for (&text, &(count, n)) in &named {
            // Short names (`k`, `id`) are one edit from many others: not compared.
            if count != 1 || text.chars().count() < MIN_LONE_CHARS {
                continue;
            }
            let others = named.keys().copied().filter(|o| {
                *o != text && fold(o) != fold(text) && o.chars().count() >= MIN_LONE_CHARS
            });
            if let Some(m) = did_you_mean(text, others) {
                let (m_count, first) = named[m];
                // Two attributes each named once: which one is misspelt is not known; the one
                // later in the file is reported, once.
                if m_count == 1 && first.span.offset > n.span.offset {
                    continue;
                }
                found.push(
                    Diagnostic::new(
                        &codes::LONE_ATTRIBUTE,
                        format!(
                            "attribute `{text}` is named nowhere else in the spec, but `{m}` is"
                        ),
                    )
                    .at(n.span, "named only here")
                    .related(first.span, "the attribute that exists")
                    .help(format!("did you mean `{m}`? a seal, gate or order on a misspelt key matches nothing")),
                );
            }
        }
        found.sort_by_key(|d| d.offset());
        self.diags.extend(found);
    }

    /// S018: a stream declared twice with the same ends and the same seal. It changes no label
    /// (the two join to the same), but it is a copy left behind, or an edit meant for another
    /// stream.
    pub(super) fn duplicate_streams(&mut self, spec: &Spec) {
        let mut first: std::collections::HashMap<(&str, &str, Vec<&str>), Span> =
            std::collections::HashMap::new();
        for st in &spec.streams {
            let seal = st
                .seal
                .as_ref()
                .map(|k| {
                    let mut v: Vec<&str> = k.names.iter().map(|n| n.text.as_str()).collect();
                    v.sort_unstable();
                    v
                })
                .unwrap_or_default();
            let key = (st.from.text.as_str(), st.to.text.as_str(), seal);
            match first.get(&key) {
                Some(&at) => {
                    let d = Diagnostic::new(
                        &codes::DUPLICATE_STREAM,
                        format!(
                            "the stream from `{}` to `{}` is declared twice",
                            st.from.text, st.to.text
                        ),
                    )
                    .at(st.span, "declared again")
                    .related(at, "first declared here")
                    .help("remove one of them; if another stream was meant, fix its endpoints");
                    self.push(d);
                }
                None => {
                    first.insert(key, st.span);
                }
            }
        }
    }

    pub(super) fn collide(&mut self, what: &str, mut names: Vec<&Name>) {
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

    pub(super) fn wrong_type(&mut self, node: &Node, expected: &str, what: &str) {
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
    pub(super) fn describe(&self, node: &Node) -> String {
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
    pub(super) fn map<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [(Node, Node)]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            Value::Null => Some(&[]),
            _ => {
                self.wrong_type(node, "a mapping", what);
                None
            }
        }
    }

    pub(super) fn seq<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
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
    pub(super) fn fields<'n>(
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
    pub(super) fn field(
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
    pub(super) fn name(&mut self, node: &Node, what: &str) -> Option<Name> {
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
            // An empty name cannot be quoted: "a component name `` is empty" reads as a typo.
            let message = if s.is_empty() {
                format!("{what} is empty (`\"\"`); names have at least one character")
            } else {
                format!("{what} `{s}` {p}")
            };
            self.error(&codes::INVALID_NAME, node.span, message, "invalid name");
            return None;
        }
        Some(Name {
            text: s.to_string(),
            span: node.span,
        })
    }

    /// A list of attribute names; duplicates are reported, `*` is not an attribute.
    pub(super) fn key_list(&mut self, node: &Node, what: &str) -> Option<KeyList> {
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
                Limit::Attributes,
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

    pub(super) fn is_duplicate(
        &mut self,
        seen: &mut BTreeMap<String, Span>,
        name: &Name,
        what: &str,
    ) -> bool {
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
}
