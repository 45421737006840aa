//! Storm Flux: the YAML file `flux` submits.
//!
//! ```yaml
//! name: wordcount
//! spouts:
//!   - { id: sentences, className: org.apache.storm.testing.TestWordSpout, parallelism: 1 }
//! bolts:
//!   - { id: count, className: org.apache.storm.testing.TestWordCounter, parallelism: 4 }
//! streams:
//!   - { from: sentences, to: count, grouping: { type: FIELDS, args: [word] } }
//! ```
//!
//! Spouts and bolts become components, by class name; each spout reads an external source
//! named after it. A bolt's input interfaces are named after the components that feed it. A
//! FIELDS grouping partitions by its fields (they are `$key` in the bolt's gate); ALL gives
//! every instance every tuple (the bolt is replicated); SHUFFLE, LOCAL_OR_SHUFFLE, GLOBAL,
//! NONE, DIRECT and CUSTOM do not partition by key.

use std::collections::HashMap;

use super::catalog::{Catalog, Entry, PARTITION_KEY};
use super::flink::get;
use super::{Edge, External, Operator, Partition, Topology, Window, invalid};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::label::Annotation;
use crate::spec::yaml::{self, Node, Value};
use crate::spec::{Input, Limit, Limits};

const GROUPINGS: &[&str] = &[
    "ALL",
    "CUSTOM",
    "DIRECT",
    "SHUFFLE",
    "LOCAL_OR_SHUFFLE",
    "FIELDS",
    "GLOBAL",
    "NONE",
];

fn list<'n>(root: &'n Node, key: &str, errors: &mut Vec<Diagnostic>) -> &'n [Node] {
    match get(root, key) {
        None => &[],
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => items,
        Some(Node {
            value: Value::Null, ..
        }) => &[],
        Some(other) => {
            errors.push(invalid(
                other.span,
                format!("`{key}` must be a list, found {}", other.describe()),
                "expected a list",
            ));
            &[]
        }
    }
}

fn text<'n>(
    item: &'n Node,
    key: &str,
    what: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<(&'n str, Span)> {
    match get(item, key) {
        Some(n) => match n.as_str() {
            Some(s) if !s.trim().is_empty() => Some((s, n.span)),
            _ => {
                errors.push(invalid(
                    n.span,
                    format!(
                        "`{key}` of {what} must be a non-empty string, found {}",
                        n.describe()
                    ),
                    "expected a string",
                ));
                None
            }
        },
        None => {
            errors.push(invalid(
                Span::new(item.span.offset, 0),
                format!("{what} has no `{key}`"),
                "missing",
            ));
            None
        }
    }
}

/// The window a bolt's `configMethods` configure (a `BaseWindowedBolt`'s `withWindow` or
/// `withTumblingWindow`): by count when a length or interval is a `Count` bean, on event time
/// when a timestamp field (or extractor) is set, else on the wall clock.
fn window_of(bolt: &Node, components: &HashMap<&str, &str>) -> Option<Window> {
    let Some(Node {
        value: Value::Seq(methods),
        ..
    }) = get(bolt, "configMethods")
    else {
        return None;
    };
    fn name_of(m: &Node) -> &str {
        get(m, "name").and_then(Node::as_str).unwrap_or("")
    }
    let windows: Vec<&Node> = methods
        .iter()
        .filter(|m| matches!(name_of(m), "withWindow" | "withTumblingWindow"))
        .collect();
    if windows.is_empty() {
        return None;
    }
    let by_count = windows
        .iter()
        .any(|m| match get(m, "args").map(|a| &a.value) {
            Some(Value::Seq(args)) => args.iter().any(|a| {
                get(a, "ref")
                    .and_then(Node::as_str)
                    .and_then(|r| components.get(r))
                    .is_some_and(|class| class.ends_with("Count"))
            }),
            _ => false,
        });
    let timestamped = methods
        .iter()
        .any(|m| matches!(name_of(m), "withTimestampField" | "withTimestampExtractor"));
    Some(if by_count {
        Window::Count
    } else if timestamped {
        Window::EventTime
    } else {
        Window::ProcessingTime
    })
}

/// The Storm importer's rules for what no catalogue entry knows, appended to the catalogue as
/// entries with no pattern: a spout is a source (CR, with a note), and a window bolt is
/// judged by its window. `entries[i]` is set to the rule of operator `i` it applies to.
pub fn judge(topology: &Topology, catalog: &mut Catalog, entries: &mut [Option<usize>]) {
    let first = catalog.entries.len();
    let rule =
        |label, gate: Option<&[&str]>, seal: bool, warn: &str, what: &str, reason: &str| Entry {
            classes: Vec::new(),
            names: Vec::new(),
            label,
            gate: gate.map(|g| g.iter().map(|k| k.to_string()).collect()),
            seal: seal.then(|| vec!["window".to_string()]),
            order: None,
            replicated: None,
            replicas: None,
            keeps_key_order: false,
            reads_state: false,
            warn: Some(warn.to_string()),
            reason: reason.to_string(),
            origin: format!("the Storm importer's rule for {what}"),
        };
    let window_gate: &[&str] = &[PARTITION_KEY, "window"];
    catalog.entries.extend([
        rule(
            Annotation::CR,
            None,
            false,
            "no catalogue entry knows this spout's class: a spout is where tuples enter the topology, so it is taken as a source that emits what it reads (CR); if it punctuates or batches what it emits, an entry with `seal:` says so",
            "spouts no entry matches",
            "a spout emits what it reads from outside; that input is the spec's source, not a point of order",
        ),
        rule(
            Annotation::OW,
            Some(window_gate),
            false,
            "what the bolt computes over each window is user code; its count window is known from configMethods",
            "window bolts with a count window",
            "a count window fires every N tuples: which tuples fall in one depends on the order they arrive",
        ),
        rule(
            Annotation::OW,
            Some(window_gate),
            true,
            "what the bolt computes over each window is user code; its event-time window (timestamp field and lag) is known from configMethods",
            "window bolts on event time",
            "a window on a timestamp field fires when the watermark (the latest timestamp less the lag) passes its end: the watermark seals it (tuples later than the lag are dropped, which does depend on order)",
        ),
        rule(
            Annotation::OW,
            Some(window_gate),
            false,
            "what the bolt computes over each window is user code; its window, on the wall clock, is known from configMethods",
            "window bolts on processing time",
            "a window on the wall clock: which tuples fall in one depends on when they arrive, and nothing seals it",
        ),
    ]);
    for (i, op) in topology.operators.iter().enumerate() {
        if entries[i].is_some() {
            continue;
        }
        entries[i] = match (op.kind, op.window) {
            ("spout", _) => Some(first),
            (_, Some(Window::Count)) => Some(first + 1),
            (_, Some(Window::EventTime)) => Some(first + 2),
            (_, Some(Window::ProcessingTime)) => Some(first + 3),
            _ => None,
        };
    }
}

/// A name as an interface name: letters, digits, `-` and `_` (anything else `_`), at most 120
/// characters.
fn plain(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect()
}

/// Parses a Flux file (or a Heron ECO file, which has Flux's shape).
pub fn parse(source: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    let root = yaml::parse(source, limits).map_err(|d| vec![*d])?;
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    if !matches!(root.value, Value::Map(_)) {
        return Err(vec![invalid(
            Span::new(root.span.offset, 0),
            format!(
                "a Flux topology is a YAML mapping with `spouts`, `bolts` and `streams`, found {}",
                root.describe()
            ),
            "not a Flux file",
        )]);
    }
    let spouts = list(&root, "spouts", &mut errors);
    let bolts = list(&root, "bolts", &mut errors);
    let streams = list(&root, "streams", &mut errors);
    if let Some(ts) = get(&root, "topologySource")
        && spouts.is_empty()
        && bolts.is_empty()
    {
        return Err(vec![invalid(
            ts.span,
            "this Flux file builds its topology in Java (`topologySource`); there are no spouts or bolts to import",
            "topology defined in Java",
        )]);
    }
    if let Some(inc) = get(&root, "includes") {
        warnings.push(
            Diagnostic::new(
                &codes::MISSING_INFORMATION,
                "`includes` are not followed: the spouts, bolts and streams of the included files are missing from the import",
            )
            .at(inc.span, "not followed")
            .help("Flux has no option that prints the merged topology: copy the spouts, bolts and streams of the included files into this one by hand (with `override: true` an included file's sections replace this file's, with `false` this file's are kept), and import the merged file"),
        );
    }
    if spouts.len() + bolts.len() > limits.max_components {
        return Err(vec![
            Limit::Components
                .exceeded(
                    Input::Topology,
                    format!(
                        "the topology has {} spouts and bolts, more than the limit of {} (--max-components)",
                        spouts.len() + bolts.len(),
                        limits.max_components
                    ),
                )
                .at(Span::new(root.span.offset, 0), "too many components"),
        ]);
    }
    if streams.len() > limits.max_streams {
        return Err(vec![
            Limit::Streams
                .exceeded(
                    Input::Topology,
                    format!(
                        "the topology has {} streams, more than the limit of {} (--max-streams)",
                        streams.len(),
                        limits.max_streams
                    ),
                )
                .at(Span::new(root.span.offset, 0), "too many streams"),
        ]);
    }
    // The beans `configMethods` refer to (`ref: id`), by id: their classes.
    let components: HashMap<&str, &str> = list(&root, "components", &mut errors)
        .iter()
        .filter_map(|c| {
            Some((
                get(c, "id").and_then(Node::as_str)?,
                get(c, "className").and_then(Node::as_str)?,
            ))
        })
        .collect();
    let mut operators: Vec<Operator> = Vec::new();
    let mut by_id: HashMap<String, (usize, Span)> = HashMap::new();
    for (items, kind) in [(spouts, "spout"), (bolts, "bolt")] {
        for item in items {
            if !matches!(item.value, Value::Map(_)) {
                errors.push(invalid(
                    item.span,
                    format!("a {kind} must be a mapping, found {}", item.describe()),
                    "expected a mapping",
                ));
                continue;
            }
            let what = format!("a {kind}");
            let id = text(item, "id", &what, &mut errors);
            let class = text(item, "className", &what, &mut errors);
            let (Some((id, id_span)), Some((class, _))) = (id, class) else {
                continue;
            };
            if let Some(&(_, first)) = by_id.get(id) {
                errors.push(
                    invalid(id_span, format!("id `{id}` is used twice"), "second use")
                        .related(first, "first use"),
                );
                continue;
            }
            let mut op = Operator::new(id.to_string(), class.to_string(), kind, id_span);
            op.parallelism = get(item, "parallelism").and_then(|p| match p.value {
                Value::Int(n) if n > 0 => u64::try_from(n).ok(),
                _ => None,
            });
            if kind == "bolt" {
                op.window = window_of(item, &components);
            }
            if kind == "spout" {
                op.reads.push(External {
                    name: format!("{id}-input"),
                    what: format!("what spout `{id}` emits"),
                    span: id_span,
                });
            }
            by_id.insert(id.to_string(), (operators.len(), id_span));
            operators.push(op);
        }
    }
    let mut edges = Vec::new();
    for s in streams {
        if !matches!(s.value, Value::Map(_)) {
            errors.push(invalid(
                s.span,
                format!("a stream must be a mapping, found {}", s.describe()),
                "expected a mapping",
            ));
            continue;
        }
        let from = text(s, "from", "a stream", &mut errors);
        let to = text(s, "to", "a stream", &mut errors);
        let mut ends = [None, None];
        for (k, end) in [from, to].into_iter().enumerate() {
            if let Some((name, span)) = end {
                match by_id.get(name) {
                    Some(&(i, _)) => ends[k] = Some(i),
                    None => errors.push(invalid(
                        span,
                        format!("`{name}` is not the id of a spout or bolt of this topology"),
                        "unknown component",
                    )),
                }
            }
        }
        if let (Some(_), Some(t)) = (ends[0], ends[1])
            && operators[t].kind == "spout"
        {
            errors.push(invalid(
                to.map_or(s.span, |t| t.1),
                format!(
                    "a stream cannot flow into spout `{}`; spouts only emit",
                    operators[t].name
                ),
                "into a spout",
            ));
            continue;
        }
        let grouping = get(s, "grouping");
        let (partition, g_span) = match grouping {
            None => (Partition::None, s.span),
            Some(g) => {
                let ty = get(g, "type");
                match ty.and_then(Node::as_str).map(str::to_ascii_uppercase) {
                    None => {
                        errors.push(invalid(
                            ty.map_or(Span::new(g.span.offset, 0), |t| t.span),
                            "a grouping needs a `type` (FIELDS, SHUFFLE, ALL, GLOBAL, NONE, LOCAL_OR_SHUFFLE, DIRECT or CUSTOM)",
                            "no type",
                        ));
                        continue;
                    }
                    Some(t) if !GROUPINGS.contains(&t.as_str()) => {
                        errors.push(invalid(
                            ty.map_or(g.span, |t| t.span),
                            format!("`{t}` is not a Storm grouping (FIELDS, SHUFFLE, ALL, GLOBAL, NONE, LOCAL_OR_SHUFFLE, DIRECT, CUSTOM)"),
                            "unknown grouping",
                        ));
                        continue;
                    }
                    Some(t) if t == "FIELDS" => {
                        let args = get(g, "args");
                        let fields: Option<Vec<String>> = match args.map(|a| &a.value) {
                            Some(Value::Seq(xs)) if !xs.is_empty() => {
                                xs.iter().map(|x| x.as_str().map(str::to_string)).collect()
                            }
                            _ => None,
                        };
                        match fields {
                            Some(f)
                                if f.iter().all(|f| {
                                    !f.is_empty()
                                        && !f.contains('.')
                                        && !f.chars().any(|c| c.is_whitespace() || c.is_control())
                                        && f.chars().count() <= crate::spec::MAX_NAME_CHARS
                                }) && f.len() <= limits.max_attributes =>
                            {
                                (Partition::Keys(f), ty.map_or(g.span, |t| t.span))
                            }
                            _ => {
                                errors.push(invalid(
                                    args.map_or(g.span, |a| a.span),
                                    "a FIELDS grouping needs `args`: a list of field names (no dots or spaces)",
                                    "no fields",
                                ));
                                continue;
                            }
                        }
                    }
                    Some(t) if t == "ALL" => (Partition::All, ty.map_or(g.span, |t| t.span)),
                    Some(_) => (Partition::None, ty.map_or(g.span, |t| t.span)),
                }
            }
        };
        let (Some(f), Some(t)) = (ends[0], ends[1]) else {
            continue;
        };
        // A named stream (`streamId`) is its own output of the component that emits it, and
        // its own input of the bolt that subscribes to it.
        let stream_id = grouping
            .and_then(|g| get(g, "streamId"))
            .and_then(Node::as_str)
            .filter(|id| !id.is_empty() && *id != "default")
            .map(plain);
        let via = grouping
            .and_then(|g| get(g, "type"))
            .and_then(Node::as_str)
            .map(|t| format!("{} grouping", t.to_ascii_uppercase()));
        let from_name = plain(&operators[f].name);
        edges.push(Edge {
            from: f,
            to: t,
            input: match &stream_id {
                Some(id) => format!("{from_name}-{id}"),
                None => from_name,
            },
            output: stream_id.unwrap_or_else(|| "out".to_string()),
            partition,
            via,
            store: None,
            span: g_span,
        });
    }
    if operators.is_empty() && errors.is_empty() {
        errors.push(invalid(
            Span::new(root.span.offset, 0),
            "the Flux file has no spouts or bolts",
            "nothing to import",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = get(&root, "name")
        .and_then(Node::as_str)
        .map(str::to_string);
    Ok(Topology {
        name,
        operators,
        edges,
        stores: Vec::new(),
        warnings,
    })
}
