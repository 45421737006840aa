//! The describe text read line by line into a [`Topology`]: sources, processors and sinks
//! with their topics, stores, successors and predecessors, every error located at once.

use std::collections::HashMap;

use super::class_of;
use crate::diagnostic::{Diagnostic, Span};
use crate::import::{Edge, External, Operator, Partition, Topology, invalid};
use crate::spec::{Input, Limit, Limits};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Source,
    Processor,
    Sink,
}

struct Node {
    kind: Kind,
    name: String,
    span: Span,
    topics: Vec<(String, Span)>,
    /// A source reading a pattern, or a sink choosing its topic per record.
    dynamic: Option<(String, Span)>,
    stores: Vec<(String, Span)>,
    successors: Vec<(String, Span)>,
    predecessors: Vec<(String, Span)>,
    global: bool,
}

/// Lines of `text` with their offsets, without their line ends (`\n`, `\r\n`, `\r`).
pub(super) fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    let bytes = text.as_bytes();
    std::iter::from_fn(move || {
        if start > text.len() || (start == text.len() && start > 0) {
            return None;
        }
        let rest = &bytes[start..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(text.len(), |i| start + i);
        let line = (start, &text[start..end]);
        start = if end < text.len() && bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
            end + 2
        } else {
            end + 1
        };
        Some(line)
    })
}

/// The items of a `[a, b]` list (or a `a, b` list), with their spans; `offset` is where
/// `s` starts in the file.
fn items(s: &str, offset: usize) -> Vec<(String, Span)> {
    let (inner, at) = match s.trim().strip_prefix('[') {
        Some(rest) => {
            let lead = s.len() - s.trim_start().len() + 1;
            (rest.strip_suffix(']').unwrap_or(rest), offset + lead)
        }
        None => (s, offset),
    };
    let mut out = Vec::new();
    let mut pos = 0;
    for part in inner.split(',') {
        let lead = part.len() - part.trim_start().len();
        let name = part.trim();
        if !name.is_empty() {
            out.push((name.to_string(), Span::new(at + pos + lead, name.len())));
        }
        pos += part.len() + 1;
    }
    out
}

pub(super) fn parse_plain(text: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut global = false;
    let mut defined: HashMap<String, Span> = HashMap::new();
    for (offset, raw) in lines(text) {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let lead = raw.len() - raw.trim_start().len();
        let at = offset + lead;
        if line == "Topologies:" || line == "Topology:" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Sub-topology:") {
            global = rest.contains("for global store");
            continue;
        }
        let (kind, rest, skip) = if let Some(r) = line.strip_prefix("Source:") {
            (Some(Kind::Source), r, "Source:".len())
        } else if let Some(r) = line.strip_prefix("Processor:") {
            (Some(Kind::Processor), r, "Processor:".len())
        } else if let Some(r) = line.strip_prefix("Sink:") {
            (Some(Kind::Sink), r, "Sink:".len())
        } else {
            (None, line, 0)
        };
        if let Some(kind) = kind {
            if nodes.len() >= limits.max_components {
                errors.push(
                    Limit::Components
                        .exceeded(
                            Input::Topology,
                            format!(
                                "the topology has more than {} processors, the limit (--max-components)",
                                limits.max_components
                            ),
                        )
                        .at(Span::new(at, 0), "limit reached here"),
                );
                // The processors past the limit are not read: the edges that name them
                // would only repeat it.
                return Err(errors);
            }
            let lead_name = rest.len() - rest.trim_start().len();
            let rest_at = at + skip + lead_name;
            let rest = rest.trim_start();
            // `NAME (details)`: the details are the last parenthesised group.
            let (name, details) = match rest.rfind(" (") {
                Some(i) if rest.ends_with(')') => (
                    &rest[..i],
                    Some((&rest[i + 2..rest.len() - 1], rest_at + i + 2)),
                ),
                _ => (rest, None),
            };
            let name = name.trim_end();
            if details.is_none()
                && let Some(open) = rest.find(" (")
            {
                errors.push(invalid(
                    Span::new(rest_at + open + 1, rest.len() - open - 1),
                    format!("the `(` after `{}` is never closed", &rest[..open]),
                    "unclosed",
                ));
                continue;
            }
            if name.is_empty() {
                errors.push(invalid(
                    Span::new(at, line.len()),
                    "a processor line names no processor",
                    "no name",
                ));
                continue;
            }
            let span = Span::new(rest_at, name.len());
            let mut node = Node {
                kind,
                name: name.to_string(),
                span,
                topics: Vec::new(),
                dynamic: None,
                stores: Vec::new(),
                successors: Vec::new(),
                predecessors: Vec::new(),
                global,
            };
            if let Some((d, d_at)) = details {
                let (key, value, v_at) = match d.find(':') {
                    Some(i) => {
                        let v = &d[i + 1..];
                        (d[..i].trim(), v, d_at + i + 1)
                    }
                    None => (d.trim(), "", d_at),
                };
                match (kind, key) {
                    (Kind::Source, "topics") => node.topics = items(value, v_at),
                    (Kind::Source, "topicPattern") => {
                        node.dynamic =
                            Some((value.trim().to_string(), Span::new(v_at, value.len())))
                    }
                    (Kind::Processor, "stores") => node.stores = items(value, v_at),
                    (Kind::Sink, "topic") => {
                        node.topics = items(value, v_at).into_iter().take(1).collect()
                    }
                    (Kind::Sink, _) => {
                        node.dynamic = Some((d.trim().to_string(), Span::new(d_at, d.len())))
                    }
                    _ => errors.push(invalid(
                        Span::new(d_at, d.len()),
                        format!("unexpected `({d})` after a {} name", kind_word(kind)),
                        "not understood",
                    )),
                }
            }
            if kind == Kind::Source && node.topics.is_empty() && node.dynamic.is_none() {
                errors.push(invalid(
                    span,
                    format!("source `{name}` reads no topic (expected `(topics: [...])`)"),
                    "no topics",
                ));
            }
            if let Some(first) = defined.get(name) {
                errors.push(
                    invalid(
                        span,
                        format!("processor `{name}` is described twice"),
                        "second description",
                    )
                    .related(*first, "first description"),
                );
                continue;
            }
            defined.insert(name.to_string(), span);
            nodes.push(node);
            continue;
        }
        if let Some(list) = line
            .strip_prefix("-->")
            .or_else(|| line.strip_prefix("<--"))
        {
            let forward = line.starts_with("-->");
            let Some(node) = nodes.last_mut() else {
                errors.push(invalid(
                    Span::new(at, line.len()),
                    "an edge line (`-->` or `<--`) before any processor",
                    "no processor above",
                ));
                continue;
            };
            let names: Vec<(String, Span)> = items(list, at + 3)
                .into_iter()
                .filter(|(n, _)| n != "none")
                .collect();
            if forward {
                node.successors.extend(names);
            } else {
                node.predecessors.extend(names);
            }
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or(line);
        errors.push(
            invalid(
                Span::new(at, word.len()),
                format!(
                    "a line of a Kafka Streams topology description starts with `Sub-topology:`, `Source:`, `Processor:`, `Sink:`, `-->` or `<--`, not `{}`",
                    word.chars().take(40).collect::<String>()
                ),
                "not understood",
            )
            .help("give `blazes import kafka-streams` the text of `topology.describe().toString()`"),
        );
        if errors.len() >= 100 {
            break;
        }
    }
    if nodes.is_empty() && errors.is_empty() {
        errors.push(invalid(
            Span::new(0, 0),
            "the file describes no processor; expected the text of `Topology#describe()`",
            "nothing to import",
        ));
    }
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut edges: Vec<Edge> = Vec::new();
    let mut seen: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let both = n
            .successors
            .iter()
            .map(|s| (s, true))
            .chain(n.predecessors.iter().map(|p| (p, false)));
        for ((other, span), forward) in both {
            let Some(&j) = index.get(other.as_str()) else {
                errors.push(invalid(
                    *span,
                    format!("`{other}` is not a processor of this topology"),
                    "unknown processor",
                ));
                continue;
            };
            let (from, to) = if forward { (i, j) } else { (j, i) };
            if seen.insert((from, to)) {
                edges.push(Edge {
                    from,
                    to,
                    input: "in".into(),
                    partition: Partition::Keys(vec!["key".into()]),
                    via: None,
                    store: None,
                    span: *span,
                });
            }
        }
    }
    // Kafka Streams names the processor of the side that emits unmatched records of a left
    // join JOINTHIS, like an inner join's; its partner is then OUTEROTHER. So a join whose
    // partner (the other input of their merge) is an OUTER processor is outer on both sides.
    let mut outer: std::collections::HashSet<usize> = std::collections::HashSet::new();
    {
        let mut preds: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut succs: HashMap<usize, Vec<usize>> = HashMap::new();
        for e in &edges {
            preds.entry(e.to).or_default().push(e.from);
            succs.entry(e.from).or_default().push(e.to);
        }
        for (i, n) in nodes.iter().enumerate() {
            let class = class_of(&n.name);
            if class != "KSTREAM-JOINTHIS" && class != "KSTREAM-JOINOTHER" {
                continue;
            }
            let next = succs.get(&i).map_or(&[][..], Vec::as_slice);
            let partner_outer = next.iter().take(4).any(|s| {
                preds.get(s).is_some_and(|ps| {
                    ps.len() <= 8
                        && ps
                            .iter()
                            .any(|&p| class_of(&nodes[p].name).starts_with("KSTREAM-OUTER"))
                })
            });
            if partner_outer {
                outer.insert(i);
            }
        }
    }
    if edges.len() > limits.max_streams {
        errors.push(invalid(
            Span::new(0, 0),
            format!(
                "the topology has {} edges, more than the limit of {} (--max-streams)",
                edges.len(),
                limits.max_streams
            ),
            "too many edges",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Topics written by a sink of the topology and read by a source: internal.
    let mut writers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.kind == Kind::Sink {
            for (t, _) in &n.topics {
                writers.entry(t.as_str()).or_default().push(i);
            }
        }
    }
    let mut readers: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut operators: Vec<Operator> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let class = match n.kind {
            Kind::Source => "KSTREAM-SOURCE".to_string(),
            Kind::Sink => "KSTREAM-SINK".to_string(),
            Kind::Processor if outer.contains(&i) => {
                class_of(&n.name).replace("KSTREAM-JOIN", "KSTREAM-OUTER")
            }
            Kind::Processor => class_of(&n.name),
        };
        let mut op = Operator::new(n.name.clone(), class, kind_word(n.kind), n.span);
        if n.global {
            op.replicated = Some(
                "in a global-store sub-topology: every application instance reads every partition and keeps the whole store".into(),
            );
        }
        if n.kind == Kind::Source {
            for (t, span) in &n.topics {
                readers.insert(t);
                match writers.get(t.as_str()) {
                    Some(ws) => {
                        for &w in ws {
                            let kind = if t.ends_with("-repartition") {
                                "repartition topic"
                            } else {
                                "topic"
                            };
                            edges.push(Edge {
                                from: w,
                                to: i,
                                input: "in".into(),
                                partition: Partition::Keys(vec!["key".into()]),
                                via: Some(format!(
                                    "{kind} `{t}`, written by this topology's tasks: its readers see their records interleaved in no replayable order"
                                )),
                                store: None,
                                span: *span,
                            });
                        }
                    }
                    None => op.reads.push(External {
                        name: t.clone(),
                        what: format!("topic `{t}`"),
                        span: *span,
                    }),
                }
            }
            if let Some((p, span)) = &n.dynamic {
                op.reads.push(External {
                    name: format!("pattern-{p}"),
                    what: format!("the topics matching `{p}`"),
                    span: *span,
                });
            }
        }
        operators.push(op);
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.kind != Kind::Sink {
            continue;
        }
        for (t, span) in &n.topics {
            if !readers.contains(t.as_str()) {
                operators[i].writes.push(External {
                    name: t.clone(),
                    what: format!("topic `{t}`"),
                    span: *span,
                });
            }
        }
        if let Some((d, span)) = &n.dynamic {
            operators[i].writes.push(External {
                name: format!("{}-topics", n.name),
                what: format!("topics chosen per record ({d})"),
                span: *span,
            });
        }
    }
    let stores = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.stores.iter().map(move |(s, span)| (i, s.clone(), *span)))
        .collect();
    Ok(Topology {
        name: None,
        operators,
        edges,
        stores,
        warnings: Vec::new(),
    })
}

fn kind_word(k: Kind) -> &'static str {
    match k {
        Kind::Source => "source",
        Kind::Processor => "processor",
        Kind::Sink => "sink",
    }
}
