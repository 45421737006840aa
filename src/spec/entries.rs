//! Validation of each entry of a spec as the reader hands it over: a source, a sink, a
//! component with its paths, a stream with its endpoints. Every problem is reported and the
//! entry is kept when what remains is usable.

use super::validator::Validator;
use super::yaml::{Node, Value};
use super::{
    ComponentDecl, Composite, Endpoint, GateDecl, KeyList, Name, OrderDecl, Partitions, PathDecl,
    PathNote, SinkDecl, SourceDecl, StreamDecl, did_you_mean,
};
use crate::codes;
use crate::diagnostic::{Diagnostic, LineIndex, Span};
use crate::label::{Annotation, Tolerance};
use crate::lint::{Level, Lints, Target};
use crate::whitebox::{self, Coverage, DerivedGate, DerivedPath, Origin, TextMap};

impl Validator<'_> {
    /// The spec's `engine:`: the name of an engine `blazes import` reads.
    pub(super) fn engine(&mut self, node: &Node) -> Option<crate::import::Engine> {
        use crate::import::Engine;
        let names = || Engine::ALL.map(Engine::name);
        let found = match &node.value {
            Value::Str(s) => Engine::parse(s),
            _ => None,
        };
        if found.is_none() {
            let listed = names().map(|n| format!("`{n}`")).join(", ");
            let mut d = Diagnostic::new(
                &codes::INVALID_VALUE,
                format!(
                    "`engine` names the engine the spec was imported from, one of {listed}, but it is {}",
                    node.describe()
                ),
            )
            .at(node.span, "not an engine blazes imports");
            if let Value::Str(s) = &node.value
                && let Some(m) = did_you_mean(s, names())
            {
                d = d.help(format!("did you mean `engine: {m}`?"));
            } else {
                d = d.help("leave `engine:` out of a spec that no engine's topology produced");
            }
            self.push(d);
        }
        found
    }

    /// The spec's `lint:`: `{ allow: [CODE, ...], warn: [...], deny: [CODE or warnings, ...] }`.
    /// A target in two lists is an error: the spec would not say which it means.
    pub(super) fn lint(&mut self, node: &Node) -> Lints {
        let mut lints = Lints::default();
        let Some(entries) = self.map(node, "`lint`") else {
            return lints;
        };
        let f = self.fields(
            entries,
            &[("allow", "allow"), ("warn", "warn"), ("deny", "deny")],
            "`lint`",
        );
        let mut seen: Vec<(Target, Level, Span)> = Vec::new();
        for level in [Level::Allow, Level::Warn, Level::Deny] {
            let field = level.as_str();
            let Some(n) = f.get(field) else { continue };
            let what = format!("`lint.{field}`");
            let Some(items) = self.seq(n, &what) else {
                continue;
            };
            for item in items {
                let Some(s) = item.as_str() else {
                    self.wrong_type(item, "a diagnostic code or `warnings`", &what);
                    continue;
                };
                match Target::parse(s) {
                    Ok(t) => {
                        if let Some(&(_, other, first)) = seen.iter().find(|e| e.0 == t) {
                            let d = Diagnostic::new(
                                &codes::INVALID_VALUE,
                                format!(
                                    "`lint` sets `{}` to both {} and {field}",
                                    t.as_str(),
                                    other.as_str()
                                ),
                            )
                            .at(item.span, "set again here")
                            .related(first, "first set here")
                            .help("name each code in one of `allow`, `warn` and `deny`");
                            self.push(d);
                            continue;
                        }
                        seen.push((t, level, item.span));
                        lints.settings.push((t, level));
                    }
                    Err(message) => self.error(
                        &codes::INVALID_VALUE,
                        item.span,
                        format!("in {what}: {message}"),
                        "unknown code",
                    ),
                }
            }
        }
        lints
    }

    pub(super) fn source(&mut self, name: Name, node: &Node) -> Option<SourceDecl> {
        let what = format!("source `{}`", name.text);
        let entries = self.map(node, &what)?;
        let f = self.fields(
            entries,
            &[
                ("seal", "seal"),
                ("sealable", "sealable"),
                ("watermark", "watermark"),
            ],
            &what,
        );
        let mut seal = f
            .get("seal")
            .and_then(|n| self.key_list(n, &format!("the seal of {what}")));
        let watermark = f
            .get("watermark")
            .and_then(|n| self.name(n, "the event-time attribute of a watermark"));
        if let Some(w) = &watermark {
            // A watermark on t seals the windows over t (docs/algebra.md, "Event time").
            let attr = Name {
                text: crate::whitebox::window_attr(&w.text),
                span: w.span,
            };
            match &mut seal {
                Some(k) => k.names.push(attr),
                None => {
                    seal = Some(KeyList {
                        names: vec![attr],
                        span: w.span,
                    })
                }
            }
        }
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
            watermark,
            body: node.span,
        })
    }

    pub(super) fn sink(&mut self, name: Name, node: &Node) -> Option<SinkDecl> {
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

    pub(super) fn component(&mut self, name: Name, node: &Node) -> Option<ComponentDecl> {
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
                ("partitions", "partitions"),
                ("partition_by", "partition_by"),
                ("task", "task"),
                ("sql", "sql"),
                ("bloom", "bloom"),
                ("use", "use"),
                ("from", "from"),
                ("dataflow", "dataflow"),
            ],
            &what,
        );
        let composite = self.composite(&f, &what, node);
        let mut incomplete = false;
        let mut paths = Vec::new();
        let logic = f
            .get("sql")
            .map(|n| (n, Origin::Sql))
            .or(f.get("bloom").map(|n| (n, Origin::Bloom)));
        if f.get("sql").is_some() && f.get("bloom").is_some() {
            let key = f.key("bloom").map_or(node.span, |k| k.span);
            self.error(
                &codes::INVALID_VALUE,
                key,
                format!("{what} gives both `sql` and `bloom`; a component has one program"),
                "second program",
            );
        }
        match f.get("paths") {
            None if logic.is_some() || composite.is_some() => {}
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
        let mut watermarks = Vec::new();
        if let Some((n, origin)) = logic {
            match n.as_str() {
                Some(program) => {
                    let index = self.lines.get_or_init(|| LineIndex::new(self.text));
                    let map = TextMap::new(program, self.text, n.span.offset, index);
                    let d = match origin {
                        Origin::Bloom => {
                            whitebox::bloom::derive(program, &map, self.text, &name.text)
                        }
                        _ => whitebox::sql::derive(program, &map, self.text, &name.text),
                    };
                    if d.failed {
                        incomplete = true;
                    }
                    for diag in d.diagnostics {
                        self.push(diag);
                    }
                    watermarks = d
                        .watermarks
                        .into_iter()
                        .map(|(input, attr, span)| (input, Name { text: attr, span }))
                        .collect();
                    self.merge_derived(&mut paths, d.paths, origin, &what);
                }
                None => {
                    self.wrong_type(
                        n,
                        "a program as a string (`sql: |` and the text below)",
                        &format!("the program of {what}"),
                    );
                    incomplete = true;
                }
            }
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
                    let said = f.get("replicated").and_then(|r| match r.value {
                        Value::Bool(b) => Some((b, r.span)),
                        _ => None,
                    });
                    match said {
                        Some((b, at)) if b != (i > 1) => {
                            let d = Diagnostic::new(
                                &codes::INVALID_VALUE,
                                format!(
                                    "{what} says `replicated: {b}` but `replicas: {i}`"
                                ),
                            )
                            .at(n.span, if b { "one instance is not replicated" } else { "more than one replica" })
                            .related(at, "contradicted here")
                            .help(if b {
                                "write `replicas: N` with N > 1 for a replicated component, or drop `replicated: true`"
                            } else {
                                "drop `replicated: false` (replicas > 1 is replicated); instances that each take a share of the records are `partitions: N` with `partition_by: [keys]`"
                            });
                            self.push(d);
                        }
                        _ => replicated |= i > 1,
                    }
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
        let mut partitions = None;
        if let Some(n) = f.get("partitions") {
            match n.value {
                Value::Int(i) if i >= 1 => partitions = Some(u64::try_from(i).unwrap_or(u64::MAX)),
                _ => self.error(
                    &codes::INVALID_VALUE,
                    n.span,
                    format!(
                        "`partitions` of {what} must be a positive integer, but it is {}",
                        n.describe()
                    ),
                    "expected a positive integer",
                ),
            }
        }
        let partition_by = f
            .get("partition_by")
            .and_then(|n| self.key_list(n, &format!("`partition_by` of {what}")));
        match (f.get("partitions"), &partition_by, f.get("partition_by")) {
            (Some(n), None, None) if partitions.is_some_and(|p| p > 1) => {
                let d = Diagnostic::new(
                    &codes::MISSING_FIELD,
                    format!("{what} has `partitions` but no `partition_by`"),
                )
                .at(n.span, "partitioned by what?")
                .help("name the attributes that route a record to its partition: `partition_by: [key]`");
                self.push(d);
            }
            (None, _, Some(n)) => {
                let d = Diagnostic::new(
                    &codes::MISSING_FIELD,
                    format!("{what} has `partition_by` but no `partitions`"),
                )
                .at(n.span, "no partition count")
                .help("say how many instances share the records: `partitions: N`");
                self.push(d);
            }
            _ => {}
        }
        if let Some(k) = &partition_by
            && k.names.is_empty()
        {
            self.error(
                &codes::INVALID_VALUE,
                k.span,
                format!("`partition_by` of {what} is an empty list of attributes"),
                "no attributes",
            );
        }
        if let Some(w) = paths.iter().find(|p| p.label.writes()) {
            for p in paths.iter().filter(|p| p.static_state.is_some()) {
                let span = p.static_state.unwrap_or(p.span);
                let d = Diagnostic::new(
                    &codes::INVALID_VALUE,
                    format!(
                        "`state: static` on a read of {what}, but its path `{} -> {}` ({}) writes that state",
                        w.from.text,
                        w.to.text,
                        w.label.as_str()
                    ),
                )
                .at(span, "declared static")
                .related(w.label_span, "writes the state")
                .help("state a path of the spec writes is not static: remove `state: static`");
                self.push(d);
            }
        }
        let order = f.get("order").and_then(|n| match &n.value {
            Value::Str(s) if s == "global" => Some(OrderDecl::Global(n.span)),
            Value::Seq(items) if items.is_empty() => {
                let d = Diagnostic::new(
                    &codes::INVALID_VALUE,
                    format!("`order` of {what} is an empty list of keys"),
                )
                .at(n.span, "no keys")
                .help("did you mean `order: global` (one order of all the component's inputs)? a keyed order names its keys: `order: [key]`");
                self.push(d);
                None
            }
            Value::Seq(_) => self
                .key_list(n, &format!("the order of {what}"))
                .map(OrderDecl::Keys),
            _ => {
                let mut d = Diagnostic::new(
                    &codes::INVALID_VALUE,
                    format!(
                        "`order` of {what} must be `global` or a list of attributes, but it is {}",
                        n.describe()
                    ),
                )
                .at(n.span, "expected `global` or a list");
                d = match &n.value {
                    Value::Str(s) if did_you_mean(s, ["global"]).is_some() => {
                        d.help("did you mean `order: global`?")
                    }
                    Value::Str(_) => d.help(
                        "a keyed order is a list of attributes, `order: [key]`; one order of all the inputs is `order: global`",
                    ),
                    _ => d,
                };
                self.push(d);
                None
            }
        });
        let task = f.get("task").and_then(|n| match &n.value {
            Value::Str(s) if !s.trim().is_empty() => Some(Name {
                text: s.clone(),
                span: n.span,
            }),
            Value::Int(i) => Some(Name {
                text: i.to_string(),
                span: n.span,
            }),
            _ => {
                self.wrong_type(
                    n,
                    "the name of the engine task that runs it (`task: sub-topology-0`)",
                    &format!("`task` of {what}"),
                );
                None
            }
        });
        Some(ComponentDecl {
            name,
            paths,
            task,
            watermarks,
            replicated,
            replicas,
            order,
            partitions: partitions.map(|count| Partitions {
                count,
                by: partition_by.unwrap_or(super::KeyList {
                    names: Vec::new(),
                    span: node.span,
                }),
            }),
            body: node.span,
            incomplete,
            composite: composite.map(Box::new),
        })
    }

    /// A component's `use:` or `dataflow:`, which make it a composite: its own paths, program
    /// and partitions would contradict the dataflow it is (the expansion applies `replicas:` and
    /// `order:` to everything inside).
    fn composite(
        &mut self,
        f: &super::validator::Fields,
        what: &str,
        node: &Node,
    ) -> Option<Composite> {
        // `from:` says which engine printed the used file: it goes with `use:` alone.
        if let Some(k) = f.key("from")
            && (f.get("use").is_none() || f.get("dataflow").is_some())
        {
            let d = Diagnostic::new(
                &codes::INVALID_VALUE,
                format!("{what} gives `from` without `use`"),
            )
            .at(k.span, "no topology to read")
            .help("`from: ENGINE` names the engine that printed the topology a composite uses (`use: billing-topology.txt`, `from: kafka-streams`); add the `use`, or remove `from`");
            self.push(d);
        }
        let (key, value) = match (f.get("use"), f.get("dataflow")) {
            (None, None) => return None,
            (Some(u), Some(_)) => {
                let at = f.key("dataflow").map_or(node.span, |k| k.span);
                self.error(
                    &codes::INVALID_VALUE,
                    at,
                    format!("{what} gives both `use` and `dataflow`; a composite has one dataflow"),
                    "second dataflow",
                );
                ("use", u)
            }
            (Some(u), None) => ("use", u),
            (None, Some(d)) => ("dataflow", d),
        };
        for other in ["paths", "sql", "bloom", "partitions", "partition_by"] {
            // `paths:` beside `use:` is the grey box the module promises to behave as, checked
            // against its summary (`compose::contract`).
            if key == "use" && other == "paths" {
                continue;
            }
            if let Some(k) = f.key(other) {
                let d = Diagnostic::new(
                    &codes::INVALID_VALUE,
                    format!("{what} is a composite (`{key}`), so it cannot have `{other}`"),
                )
                .at(k.span, "not for a composite")
                .help(format!(
                    "a composite's paths are those of its dataflow; remove `{other}`, or `{key}`"
                ));
                self.push(d);
            }
        }
        if key == "use" {
            return match value.as_str() {
                Some(p) if !p.trim().is_empty() => {
                    let from = match f.get("from") {
                        None => None,
                        Some(n) => match n.as_str() {
                            Some(e) => Some(Name {
                                text: e.to_string(),
                                span: n.span,
                            }),
                            None => {
                                self.wrong_type(
                                    n,
                                    "the engine that printed the topology (`from: kafka-streams`)",
                                    &format!("`from` of {what}"),
                                );
                                return None;
                            }
                        },
                    };
                    Some(Composite::Use(
                        Name {
                            text: p.to_string(),
                            span: value.span,
                        },
                        from,
                    ))
                }
                _ => {
                    self.wrong_type(
                        value,
                        "the path of a spec file (`use: services/billing.yaml`)",
                        &format!("`use` of {what}"),
                    );
                    None
                }
            };
        }
        self.map(value, &format!("`dataflow` of {what}"))?;
        let mut reader = super::reader::Reader::new(Validator {
            text: self.text,
            diags: Vec::new(),
            limits: self.limits,
            attributes: Vec::new(),
            attribute_texts: std::collections::HashSet::new(),
            lines: std::cell::OnceCell::new(),
        });
        super::replay::replay(value.clone(), &mut reader);
        let (spec, diags) = reader.finish(value.span);
        for d in diags {
            self.push(d);
        }
        Some(Composite::Inline(spec))
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
                ("state", "state"),
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
                    let names = Annotation::ALL.map(Annotation::as_str);
                    let all = names.join(", ");
                    d = match (hint, l.as_str().and_then(|s| did_you_mean(s, names))) {
                        (Some(a), _) => d.help(format!(
                            "write the label as `{a}` and the gate in `gate: [...]`"
                        )),
                        (None, Some(s)) => d.help(format!("did you mean `{s}`? labels are {all}")),
                        (None, None) => d.help(format!("labels are {all}")),
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
                Value::Seq(items) if items.is_empty() => {
                    let d = Diagnostic::new(
                        &codes::GATE,
                        format!("the gate of {what} is an empty list of attributes"),
                    )
                    .at(g.span, "no attributes")
                    .help("did you mean `gate: \"*\"` (the partitioning is unknown)? otherwise name the attributes within whose partitions order matters: `gate: [key]`");
                    self.push(d);
                    None
                }
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
        let mut static_state = None;
        if let Some(n) = f.get("state") {
            match n.as_str() {
                Some("static") if annotation.is_none_or(|a| a == Annotation::OR) => {
                    static_state = Some(n.span);
                }
                Some("static") => {
                    let a = annotation.map_or("", |a| a.as_str());
                    let d = Diagnostic::new(
                        &codes::INVALID_VALUE,
                        format!("`state: static` is for an OR path, but {what} is {a}"),
                    )
                    .at(n.span, "not a read of state")
                    .help("`state: static` says what an OR path reads never changes while the dataflow runs; remove it here");
                    self.push(d);
                    ok = false;
                }
                _ => {
                    let mut d = Diagnostic::new(
                        &codes::INVALID_VALUE,
                        format!(
                            "`state` of {what} must be `static`, but it is {}",
                            n.describe()
                        ),
                    )
                    .at(n.span, "expected `static`");
                    d = match n.as_str().and_then(|s| did_you_mean(s, ["static"])) {
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help("`state: static` says the state an OR path reads never changes while the dataflow runs; state something writes is modelled by a writing path (CW/OW) and its stream"),
                    };
                    self.push(d);
                    ok = false;
                }
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
            static_state,
            span: node.span,
            note: None,
        })
    }

    /// Adds the paths a program derives to the declared ones: a declared path for the same
    /// input and output stays, checked against the derived one (W003, W004).
    fn merge_derived(
        &mut self,
        paths: &mut Vec<PathDecl>,
        derived: Vec<DerivedPath>,
        origin: Origin,
        what: &str,
    ) {
        for d in derived {
            if let Some(p) = paths
                .iter()
                .find(|p| p.note.is_none() && p.from.text == d.from && p.to.text == d.to)
            {
                let declared_gate = p.gate.as_ref().map(GateDecl::as_derived);
                let c = whitebox::coverage(
                    p.label,
                    declared_gate.as_ref(),
                    d.annotation,
                    d.gate.as_ref(),
                );
                let (safe, same) = (c != Coverage::Conflict, c == Coverage::Same);
                let declared = match &declared_gate {
                    Some(g) => format!("{}({})", p.label.as_str(), g.show()),
                    None => p.label.as_str().to_string(),
                };
                let lang = if origin == Origin::Bloom {
                    "Bloom"
                } else {
                    "SQL"
                };
                if !safe {
                    let diag = Diagnostic::new(
                        &codes::WHITEBOX_CONFLICT,
                        format!(
                            "the path {} -> {} of {what} is declared {declared}, but its {lang} makes it {}: {}",
                            d.from, d.to, d.shown(), d.reason
                        ),
                    )
                    .at(p.label_span, "declared here")
                    .related(d.span, "what the program does")
                    .help(format!("declare it `{}` or remove the declared path", d.shown()));
                    self.push(diag);
                } else if !same {
                    let diag = Diagnostic::new(
                        &codes::WHITEBOX_CONSERVATIVE,
                        format!(
                            "the path {} -> {} of {what} is declared {declared}, more conservative than the {} its {lang} derives: {}",
                            d.from, d.to, d.shown(), d.reason
                        ),
                    )
                    .at(p.label_span, "declared here")
                    .related(d.span, "what the program does")
                    .help("the declared annotation is kept; remove it to use the derived one");
                    self.push(diag);
                }
                continue;
            }
            let gate = d.gate.as_ref().map(|g| match g {
                DerivedGate::Star => GateDecl::Star(d.span),
                DerivedGate::Keys(k) => GateDecl::Keys(KeyList {
                    names: k
                        .iter()
                        .map(|t| Name {
                            text: t.clone(),
                            span: d.span,
                        })
                        .collect(),
                    span: d.span,
                }),
            });
            paths.push(PathDecl {
                from: Name {
                    text: d.from,
                    span: d.span,
                },
                to: Name {
                    text: d.to,
                    span: d.span,
                },
                label: d.annotation,
                label_span: d.span,
                gate,
                span: d.span,
                // A program says what its state is; a table it reads and never writes is
                // read from outside, as for a declared path without `state: static`.
                static_state: None,
                note: Some(Box::new(PathNote {
                    origin,
                    reason: d.reason,
                })),
            });
        }
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

    pub(super) fn stream(&mut self, node: &Node) -> Option<StreamDecl> {
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
