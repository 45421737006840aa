//! The describe text read line by line into a [`Topology`]: sources, processors and sinks
//! with their topics, stores, successors and predecessors, every error located at once.

use std::collections::{HashMap, HashSet};

use super::class_of;
use crate::codes;
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
    /// The sub-topology it is described in (`Sub-topology: N`), when that names one.
    sub_topology: Option<String>,
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

/// Reads the text of `Topology#describe()`: every error of the file at once, or the
/// topology.
pub(super) fn parse_plain(text: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    let mut reader = Reader {
        limits,
        errors: Vec::new(),
        nodes: Vec::new(),
        global: false,
        sub_topology: None,
        defined: HashMap::new(),
        skipped: None,
        trailing: None,
        rejected: false,
        rejected_names: HashSet::new(),
    };
    if !reader.read(text) {
        return Err(reader.errors);
    }
    let warnings = reader.skip_warnings();
    let Reader {
        mut errors,
        nodes,
        rejected_names,
        ..
    } = reader;
    if nodes.is_empty() && errors.is_empty() {
        errors.push(invalid(
            Span::new(0, 0),
            "the file describes no processor; expected the text of `Topology#describe()`",
            "nothing to import",
        ));
    }
    let mut edges = edges_between(&nodes, &rejected_names, &mut errors);
    let outer = outer_joins(&nodes, &edges);
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
    let operators = operators(&nodes, &outer, &mut edges);
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
        warnings,
    })
}

/// The describe text read line by line into nodes, with the errors so far.
struct Reader<'l> {
    limits: &'l Limits,
    errors: Vec<Diagnostic>,
    nodes: Vec<Node>,
    /// Whether the current sub-topology is a global store's.
    global: bool,
    /// The current sub-topology's number (`Sub-topology: N`).
    sub_topology: Option<String>,
    /// Where each node name was first described.
    defined: HashMap<String, Span>,
    /// The first line skipped before the topology, and how many were.
    skipped: Option<(Span, usize)>,
    /// The first line of the text skipped after the topology.
    trailing: Option<Span>,
    /// Whether the last node line was rejected: the edge lines below it belong to it, and its
    /// error is enough.
    rejected: bool,
    /// The names of the node lines rejected: the edges naming them are not reported again.
    rejected_names: HashSet<String>,
}

impl Reader<'_> {
    /// Reads every line; false when the file has more processors than the limit, whose error
    /// is then the last.
    ///
    /// Every layout Kafka Streams has printed is read: the 2.x+ one (`Topologies:`, one edge
    /// list per line), the 1.0 one (`Sub-topologies:`, `Global Stores:`, a node and its edges
    /// on one line, `NAME(topics: t)` without a space or brackets), and either copied from a
    /// web page or a log (tabs, no-break spaces, any indentation). Text before the topology (a
    /// log line, the head of ksqlDB's `EXPLAIN`) and after it, past a blank line (ksqlDB's
    /// `Overridden Properties`), is skipped with a warning.
    fn read(&mut self, text: &str) -> bool {
        let mut started = false;
        let mut after_blank = false;
        let mut global_stores_header = false;
        for (offset, raw) in lines(text) {
            let line = raw.trim();
            if line.is_empty() {
                after_blank = started;
                continue;
            }
            let lead = raw.len() - raw.trim_start().len();
            let at = offset + lead;
            let blank_before = std::mem::take(&mut after_blank);
            if let Some(header) = header(line) {
                started = true;
                global_stores_header = false;
                match header {
                    Header::Topologies => self.sub_topology = None,
                    Header::SubTopology { global, id } => {
                        self.global = global;
                        self.sub_topology = id;
                    }
                    Header::GlobalStores => {
                        global_stores_header = true;
                        self.global = true;
                        self.sub_topology = None;
                    }
                }
                continue;
            }
            if global_stores_header && line == "none" {
                continue;
            }
            if let Some((kind, rest, skip)) = node_line(line) {
                started = true;
                if self.nodes.len() >= self.limits.max_components {
                    self.too_many_nodes(at);
                    // The processors past the limit are not read: the edges that name them
                    // would only repeat it.
                    return false;
                }
                self.node(kind, rest, at + skip, Span::new(at, line.len()));
                continue;
            }
            if line.starts_with("-->") || line.starts_with("<--") {
                started = true;
                self.edge_lines(line, at);
                continue;
            }
            if !started || blank_before {
                // Not the topology: what precedes it, or what follows it past a blank line.
                self.skipped(started, line, at);
                if started {
                    break;
                }
                continue;
            }
            self.not_understood(line, at);
            // A file of lines nothing understands is likely not a describe output at all:
            // stop at 100 errors rather than report every line.
            if self.errors.len() >= 100 {
                break;
            }
        }
        if self.nodes.is_empty()
            && let Some((span, _)) = self.skipped.take()
        {
            // Nothing but skipped text: it was not a topology at all, and its first line is
            // the one to show.
            let line = &text[span.offset..span.end()];
            self.not_understood(line, span.offset);
        }
        true
    }

    /// A line outside the topology (`after`: past its end), remembered for the warning.
    fn skipped(&mut self, after: bool, line: &str, at: usize) {
        let span = Span::new(at, line.len());
        if after {
            self.trailing = Some(span);
            return;
        }
        match &mut self.skipped {
            Some((_, n)) => *n += 1,
            None => self.skipped = Some((span, 1)),
        }
    }

    /// The warnings of lines the reader skipped, before and after the topology.
    fn skip_warnings(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if let Some((span, n)) = self.skipped {
            let lines = if n == 1 {
                "1 line before the topology (a log line, the head of ksqlDB's `EXPLAIN`) is not a topology description and was skipped".to_string()
            } else {
                format!(
                    "{n} lines before the topology (a log line, the head of ksqlDB's `EXPLAIN`) are not a topology description and were skipped"
                )
            };
            out.push(
                Diagnostic::new(&codes::MISSING_INFORMATION, lines).at(span, "skipped from here"),
            );
        }
        if let Some(span) = self.trailing {
            out.push(
                Diagnostic::new(
                    &codes::MISSING_INFORMATION,
                    "the topology ends at the blank line above: the text from here is not a topology description and was skipped",
                )
                .at(span, "skipped from here")
                .help("if the topology goes on below, remove the blank line and what is not the topology"),
            );
        }
        out
    }
    fn too_many_nodes(&mut self, at: usize) {
        self.errors.push(
            Limit::Components
                .exceeded(
                    Input::Topology,
                    format!(
                        "the topology has more than {} processors, the limit (--max-components)",
                        self.limits.max_components
                    ),
                )
                .at(Span::new(at, 0), "limit reached here"),
        );
    }

    /// A `Source:`, `Processor:` or `Sink:` line: `rest` follows the prefix, starting at
    /// offset `rest_at` (before its leading blanks); `line` is the whole line. In the 1.0
    /// layout the node's edges follow on the same line.
    fn node(&mut self, kind: Kind, rest: &str, rest_at: usize, line: Span) {
        self.rejected = true;
        let (head, edges) = split_edges(rest);
        let lead_name = head.len() - head.trim_start().len();
        let rest_at = rest_at + lead_name;
        let head = head.trim();
        let candidate = head.split('(').next().unwrap_or(head).trim();
        self.rejected_names.insert(candidate.to_string());
        let (name, details) = match name_and_details(head, rest_at) {
            Ok(x) => x,
            Err(e) => {
                self.errors.push(*e);
                return;
            }
        };
        if name.is_empty() {
            self.errors.push(invalid(
                line,
                "a processor line names no processor",
                "no name",
            ));
            return;
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
            global: self.global,
            sub_topology: self.sub_topology.clone(),
        };
        if let Some((d, d_at)) = details
            && let Some(e) = node.read_details(d, d_at)
        {
            self.errors.push(e);
        }
        if kind == Kind::Source && node.topics.is_empty() && node.dynamic.is_none() {
            self.errors.push(invalid(
                span,
                format!("source `{name}` reads no topic (expected `(topics: [...])`)"),
                "no topics",
            ));
        }
        if let Some(first) = self.defined.get(name) {
            self.errors.push(
                invalid(
                    span,
                    format!("processor `{name}` is described twice"),
                    "second description",
                )
                .related(*first, "first description"),
            );
            return;
        }
        self.defined.insert(name.to_string(), span);
        self.nodes.push(node);
        self.rejected = false;
        self.rejected_names.remove(name);
        let base = rest_at - lead_name;
        let rest_start = rest.as_ptr() as usize;
        for (forward, list) in edges {
            let list_at = base + (list.as_ptr() as usize - rest_start);
            self.edges_of_last(forward, list, list_at);
        }
    }

    /// A line of edges (`-->` or `<--`, maybe both, as in the 1.0 layout) at offset `at`: the
    /// successors or predecessors of the node above.
    fn edge_lines(&mut self, line: &str, at: usize) {
        if self.rejected {
            return;
        }
        if self.nodes.is_empty() {
            self.errors.push(invalid(
                Span::new(at, line.len()),
                "an edge line (`-->` or `<--`) before any processor",
                "no processor above",
            ));
            return;
        }
        let (_, edges) = split_edges(line);
        let start = line.as_ptr() as usize;
        for (forward, list) in edges {
            self.edges_of_last(forward, list, at + (list.as_ptr() as usize - start));
        }
    }

    /// The names of `list` (at offset `at`) as successors or predecessors of the last node.
    fn edges_of_last(&mut self, forward: bool, list: &str, at: usize) {
        let Some(node) = self.nodes.last_mut() else {
            return;
        };
        let names: Vec<(String, Span)> = items(list, at)
            .into_iter()
            .filter(|(n, _)| n != "none")
            .collect();
        if forward {
            node.successors.extend(names);
        } else {
            node.predecessors.extend(names);
        }
    }

    fn not_understood(&mut self, line: &str, at: usize) {
        let word = line.split_whitespace().next().unwrap_or(line);
        self.errors.push(
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
    }
}

/// The kind of node a line describes, what follows its prefix, and the prefix's length.
fn node_line(line: &str) -> Option<(Kind, &str, usize)> {
    [
        ("Source:", Kind::Source),
        ("Processor:", Kind::Processor),
        ("Sink:", Kind::Sink),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| Some((kind, line.strip_prefix(prefix)?, prefix.len())))
}

/// The headers of a describe text.
enum Header {
    /// `Topologies:` (2.x+), `Sub-topologies:` (1.0), `Topology:`.
    Topologies,
    /// `Sub-topology: N`, maybe `for global store (will not generate tasks)`; `id` is `N`
    /// for a sub-topology that generates tasks.
    SubTopology { global: bool, id: Option<String> },
    /// `Global Stores:` (1.0), followed by `none` or `GlobalStore: N` sub-topologies.
    GlobalStores,
}

fn header(line: &str) -> Option<Header> {
    match line {
        "Topologies:" | "Topology:" | "Sub-topologies:" => return Some(Header::Topologies),
        "Global Stores:" => return Some(Header::GlobalStores),
        _ => {}
    }
    if let Some(rest) = line.strip_prefix("Sub-topology:") {
        let global = rest.contains("for global store");
        let id = rest
            .split_whitespace()
            .next()
            .filter(|_| !global)
            .map(str::to_string);
        return Some(Header::SubTopology { global, id });
    }
    if line.starts_with("GlobalStore:") {
        return Some(Header::SubTopology {
            global: true,
            id: None,
        });
    }
    None
}

/// The part of a line before its first `-->` or `<--` (one that starts a word), and each
/// edge list after it with its direction (`true` for `-->`).
fn split_edges(s: &str) -> (&str, Vec<(bool, &str)>) {
    let marks: Vec<(usize, bool)> = s
        .match_indices("-->")
        .map(|(i, _)| (i, true))
        .chain(s.match_indices("<--").map(|(i, _)| (i, false)))
        .filter(|&(i, _)| {
            s[..i]
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || c == ')')
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let Some(&(first, _)) = marks.first() else {
        return (s, Vec::new());
    };
    let lists = marks
        .iter()
        .enumerate()
        .map(|(k, &(i, forward))| {
            let end = marks.get(k + 1).map_or(s.len(), |m| m.0);
            (forward, &s[i + 3..end])
        })
        .collect();
    (&s[..first], lists)
}

/// A node's name, and its details with the offset where they start.
type NameAndDetails<'a> = (&'a str, Option<(&'a str, usize)>);

/// `NAME (details)` or `NAME(details)` (`head` starts at offset `at`): the name, and the
/// details (the parenthesised group that ends the head) with where they start; or the error
/// that says what is wrong with the head.
fn name_and_details(head: &str, at: usize) -> Result<NameAndDetails<'_>, Box<Diagnostic>> {
    if head.ends_with(')') {
        // The group that ends the head, from its matching `(`: a name may hold parentheses.
        let mut depth = 0usize;
        for (i, c) in head.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        let details = &head[i + 1..head.len() - 1];
                        return Ok((head[..i].trim_end(), Some((details, at + i + 1))));
                    }
                }
                _ => {}
            }
        }
        return Err(Box::new(invalid(
            Span::new(at + head.len() - 1, 1),
            format!("the `)` that ends `{}` closes no `(`", shown(head)),
            "unmatched",
        )));
    }
    let Some(open) = head.find('(') else {
        return Ok((head, None));
    };
    let name = head[..open].trim_end();
    let mut depth = 0usize;
    for (i, c) in head[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    // Closed, and something follows that is neither details nor edges.
                    let tail = &head[open + i + 1..];
                    let after = tail.trim();
                    let after_at = at + open + i + 1 + (tail.len() - tail.trim_start().len());
                    return Err(Box::new(invalid(
                        Span::new(after_at, after.len()),
                        format!(
                            "unexpected `{}` after `{}`: a node line ends with its details, or its edges (`-->`, `<--`)",
                            shown(after),
                            shown(&head[open..open + i + 1])
                        ),
                        "not understood",
                    )));
                }
            }
            _ => {}
        }
    }
    Err(Box::new(invalid(
        Span::new(at + open, head.len() - open),
        format!(
            "the `(` after `{}` is never closed (expected `(topics: [...])`, `(stores: [...])` or `(topic: ...)`)",
            shown(name)
        ),
        "unclosed",
    )))
}

/// A piece of a line as a message quotes it: at most 60 characters.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

impl Node {
    /// The details of a node line, `key: value` (`d` starts at offset `d_at`): a source's
    /// topics or pattern, a processor's stores, a sink's topic or topic extractor; the error
    /// when they are none of these.
    fn read_details(&mut self, d: &str, d_at: usize) -> Option<Diagnostic> {
        let (key, value, v_at) = match d.find(':') {
            Some(i) => {
                let v = &d[i + 1..];
                (d[..i].trim(), v, d_at + i + 1)
            }
            None => (d.trim(), "", d_at),
        };
        match (self.kind, key) {
            (Kind::Source, "topics") => self.topics = items(value, v_at),
            (Kind::Source, "topicPattern") => {
                self.dynamic = Some((value.trim().to_string(), Span::new(v_at, value.len())))
            }
            (Kind::Processor, "stores") => self.stores = items(value, v_at),
            (Kind::Sink, "topic") => self.topics = items(value, v_at).into_iter().take(1).collect(),
            // Anything else in a sink's parentheses names how it chooses a topic per record.
            (Kind::Sink, _) => {
                self.dynamic = Some((d.trim().to_string(), Span::new(d_at, d.len())))
            }
            _ => {
                return Some(invalid(
                    Span::new(d_at, d.len()),
                    format!("unexpected `({d})` after a {} name", kind_word(self.kind)),
                    "not understood",
                ));
            }
        }
        None
    }
}

/// The edges the `-->` and `<--` lines name, once per pair, in the order of the nodes; a name
/// that is no node's is an error.
fn edges_between(
    nodes: &[Node],
    rejected: &HashSet<String>,
    errors: &mut Vec<Diagnostic>,
) -> Vec<Edge> {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut edges: Vec<Edge> = Vec::new();
    // Each edge is usually described from both ends: `-->` below one, `<--` below the other.
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let both = n
            .successors
            .iter()
            .map(|s| (s, true))
            .chain(n.predecessors.iter().map(|p| (p, false)));
        for ((other, span), forward) in both {
            let Some(&j) = index.get(other.as_str()) else {
                if rejected.contains(other) {
                    // Its line is wrong, and reported: the edge is not a second error.
                    continue;
                }
                let role = if forward {
                    "a successor"
                } else {
                    "a predecessor"
                };
                errors.push(
                    invalid(
                        *span,
                        format!(
                            "`{other}` is named as {role} of `{}` but never described: the topology looks cut short",
                            n.name
                        ),
                        "never described",
                    )
                    .help("give the whole text of `describe()`: each processor an edge names has its own `Source:`, `Processor:` or `Sink:` line"),
                );
                continue;
            };
            let (from, to) = if forward { (i, j) } else { (j, i) };
            if seen.insert((from, to)) {
                edges.push(keyed_edge(from, to, None, *span));
            }
        }
    }
    edges
}

/// An edge between processors of the topology: Kafka Streams partitions every stream by its
/// record key.
fn keyed_edge(from: usize, to: usize, via: Option<String>, span: Span) -> Edge {
    Edge {
        from,
        to,
        input: "in".into(),
        output: "out".into(),
        partition: Partition::Keys(vec!["key".into()]),
        via,
        store: None,
        span,
    }
}

/// The joins that are outer on both sides.
///
/// Kafka Streams names the processor of the side that emits unmatched records of a left
/// join JOINTHIS, like an inner join's; its partner is then OUTEROTHER. So a join whose
/// partner (the other input of their merge) is an OUTER processor is outer on both sides.
fn outer_joins(nodes: &[Node], edges: &[Edge]) -> HashSet<usize> {
    let mut outer: HashSet<usize> = HashSet::new();
    let mut preds: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut succs: HashMap<usize, Vec<usize>> = HashMap::new();
    for e in edges {
        preds.entry(e.to).or_default().push(e.from);
        succs.entry(e.from).or_default().push(e.to);
    }
    for (i, n) in nodes.iter().enumerate() {
        let class = class_of(&n.name);
        if class != "KSTREAM-JOINTHIS" && class != "KSTREAM-JOINOTHER" {
            continue;
        }
        // The bounds keep the check a few steps per join, however many neighbours it has.
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
    outer
}

/// The operator of each node, with the topics it reads and writes; a topic written by a sink
/// of the topology and read by a source is internal: an edge (added to `edges`), not a
/// source and a sink of the spec.
fn operators(nodes: &[Node], outer: &HashSet<usize>, edges: &mut Vec<Edge>) -> Vec<Operator> {
    let mut writers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if n.kind == Kind::Sink {
            for (t, _) in &n.topics {
                writers.entry(t.as_str()).or_default().push(i);
            }
        }
    }
    let mut readers: HashSet<&str> = HashSet::new();
    let mut operators: Vec<Operator> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let mut op = operator_of(n, outer.contains(&i));
        if n.kind == Kind::Source {
            for (t, span) in &n.topics {
                readers.insert(t);
                match writers.get(t.as_str()) {
                    Some(ws) => edges.extend(ws.iter().map(|&w| internal_topic(w, i, t, *span))),
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
    // Sinks once every source is read: a topic some source reads is not the spec's sink.
    for (i, n) in nodes.iter().enumerate() {
        if n.kind == Kind::Sink {
            operators[i].writes.extend(sink_writes(n, &readers));
        }
    }
    operators
}

/// A node as an operator, without its topics; `outer`: a join outer on both sides.
fn operator_of(n: &Node, outer: bool) -> Operator {
    let class = match n.kind {
        Kind::Source => "KSTREAM-SOURCE".to_string(),
        Kind::Sink => "KSTREAM-SINK".to_string(),
        Kind::Processor if outer => class_of(&n.name).replace("KSTREAM-JOIN", "KSTREAM-OUTER"),
        Kind::Processor => class_of(&n.name),
    };
    let mut op = Operator::new(n.name.clone(), class, kind_word(n.kind), n.span);
    if let Some(id) = &n.sub_topology {
        op.task = Some((
            format!("sub-topology-{id}"),
            format!(
                "in sub-topology {id}: each of its tasks passes a record through every processor of the sub-topology before it reads the next, so an order of the task's input partitions orders them all"
            ),
        ));
    }
    if n.global {
        op.replicated = Some(
            "in a global-store sub-topology: every application instance reads every partition and keeps the whole store".into(),
        );
    }
    op
}

/// The edge from sink `w` to source `to` through topic `t`, which the topology both writes
/// and reads.
fn internal_topic(w: usize, to: usize, t: &str, span: Span) -> Edge {
    let kind = if t.ends_with("-repartition") {
        "repartition topic"
    } else {
        "topic"
    };
    keyed_edge(
        w,
        to,
        Some(format!(
            "{kind} `{t}`, written by this topology's tasks: its readers see their records interleaved in no replayable order"
        )),
        span,
    )
}

/// What a sink writes outside the topology: its topics no source reads, or the topics it
/// chooses per record.
fn sink_writes(n: &Node, readers: &HashSet<&str>) -> Vec<External> {
    let mut writes: Vec<External> = n
        .topics
        .iter()
        .filter(|(t, _)| !readers.contains(t.as_str()))
        .map(|(t, span)| External {
            name: t.clone(),
            what: format!("topic `{t}`"),
            span: *span,
        })
        .collect();
    if let Some((d, span)) = &n.dynamic {
        writes.push(External {
            name: format!("{}-topics", n.name),
            what: format!("topics chosen per record ({d})"),
            span: *span,
        });
    }
    writes
}

fn kind_word(k: Kind) -> &'static str {
    match k {
        Kind::Source => "source",
        Kind::Processor => "processor",
        Kind::Sink => "sink",
    }
}
