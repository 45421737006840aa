//! Flink: the JSON `StreamExecutionEnvironment#getExecutionPlan()` prints.
//!
//! ```json
//! { "nodes": [
//!   { "id": 1, "type": "Source: Socket Stream", "pact": "Data Source", "parallelism": 1 },
//!   { "id": 2, "type": "Flat Map", "pact": "Operator", "parallelism": 4,
//!     "predecessors": [ { "id": 1, "ship_strategy": "REBALANCE", "side": "second" } ] } ] }
//! ```
//!
//! Every node becomes a component (a node whose type chains several operators, `A -> B`,
//! one component each, linked in order). The class of a node is its `type` (the operator's
//! name: `Map`, `Window(...)`, or what `.name(...)` set); its name is the type up to the first
//! `(` and its id, `Window-4`. A `HASH` shipment is a `keyBy`: the consumer is keyed, by a key
//! the plan does not name (`key` in gates, with a warning); `BROADCAST` gives every instance
//! every record (the consumer is replicated); the other strategies do not partition by key.
//! The job graph of the REST API (`description`, `inputs`) is read the same way, and Flink
//! SQL's `EXPLAIN` text by `explain`.

mod explain;
mod sql;

use std::collections::HashMap;

use super::{Edge, External, Operator, Partition, Topology, invalid};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::spec::yaml::{self, Node, Value};
use crate::spec::{Input, Limit, Limits};

pub(crate) fn get<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// HTML entities the plan's JSON may carry (the web UI's escaping), and its line breaks.
fn unescape(s: &str) -> String {
    s.replace("<br/>", " ")
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The name of an operator of type `ty` with id `id`: the type before its first `(`.
fn short(ty: &str, id: &str) -> String {
    let head = ty.split('(').next().unwrap_or(ty).trim();
    let head: String = head.chars().take(60).collect();
    if head.is_empty() {
        format!("node-{id}")
    } else {
        format!("{head}-{id}")
    }
}

fn id_of(node: &Node) -> Option<String> {
    match &node.value {
        Value::Int(i) => Some(i.to_string()),
        Value::Str(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn partition_of(strategy: &str) -> Option<Partition> {
    Some(match strategy.to_ascii_uppercase().as_str() {
        "HASH" => Partition::UnnamedKey,
        "BROADCAST" => Partition::All,
        "FORWARD" | "REBALANCE" | "RESCALE" | "SHUFFLE" | "GLOBAL" | "CUSTOM"
        | "FORWARD_FOR_BATCH" | "CUSTOM_PARTITIONER" => Partition::None,
        _ => return None,
    })
}

/// The SQL planner's operators by their kind (see the `sql` module): the class is the kind, with
/// the time it runs on for a timed one; the keys it groups by are `$group`; a sink's writer
/// and committer are sinks.
fn planner_operators(operators: &mut [Operator], texts: &[String]) {
    let mut times = sql::Times::default();
    for t in texts {
        times.read(t);
    }
    for (op, text) in operators.iter_mut().zip(texts) {
        let text = sql::without_ids(text);
        let Some(kind) = sql::kind(&op.class) else {
            continue;
        };
        op.class = times.class(kind, &text);
        op.group = sql::group_keys(kind, &text);
        if sql::is_sink(kind) {
            op.kind = "sink";
        }
    }
}

/// Parses an execution plan.
pub fn parse(text: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    if explain::is_explain(text) {
        return explain::parse(text, limits);
    }
    let root = yaml::parse(text, limits).map_err(|d| vec![*d])?;
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let Some(nodes_node) = get(&root, "nodes") else {
        return Err(vec![
            invalid(
                Span::new(root.span.offset, 0),
                "a Flink execution plan is a JSON object with a `nodes` list; this file has none",
                "no `nodes`",
            )
            .help("give `blazes import flink` the output of `env.getExecutionPlan()`"),
        ]);
    };
    let Value::Seq(items) = &nodes_node.value else {
        return Err(vec![invalid(
            nodes_node.span,
            format!("`nodes` must be a list, found {}", nodes_node.describe()),
            "expected a list",
        )]);
    };
    if items.len() > limits.max_components {
        return Err(vec![
            Limit::Components
                .exceeded(
                    Input::Topology,
                    format!(
                        "the plan has {} nodes, more than the limit of {} (--max-components)",
                        items.len(),
                        limits.max_components
                    ),
                )
                .at(nodes_node.span, "too many nodes"),
        ]);
    }
    // Each node: its id, its operators (first and last index), its inputs.
    let mut operators: Vec<Operator> = Vec::new();
    let mut by_id: HashMap<String, (usize, usize, Span)> = HashMap::new();
    let mut inputs: Vec<(usize, &Node)> = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    // What each operator's node says of it (its type, and a lone operator's description), for
    // the SQL planner's operators.
    let mut texts: Vec<String> = Vec::new();
    for item in items {
        if !matches!(item.value, Value::Map(_)) {
            errors.push(invalid(
                item.span,
                format!(
                    "a node of the plan must be an object, found {}",
                    item.describe()
                ),
                "expected an object",
            ));
            continue;
        }
        let Some(id_node) = get(item, "id") else {
            errors.push(invalid(
                Span::new(item.span.offset, 1),
                "a node of the plan has no `id`",
                "no id",
            ));
            continue;
        };
        let Some(id) = id_of(id_node) else {
            errors.push(invalid(
                id_node.span,
                format!(
                    "a node's `id` must be a number or a string, found {}",
                    id_node.describe()
                ),
                "bad id",
            ));
            continue;
        };
        let ty_node = get(item, "type")
            .filter(|t| t.as_str().is_some_and(|s| !s.trim().is_empty()))
            .or_else(|| get(item, "description"))
            .or_else(|| get(item, "contents"));
        let Some((ty, ty_span)) = ty_node.and_then(|t| t.as_str().map(|s| (unescape(s), t.span)))
        else {
            errors.push(invalid(
                id_node.span,
                format!("node {id} has no `type` (its operator's name)"),
                "no type",
            ));
            continue;
        };
        if let Some(&(_, _, first)) = by_id.get(&id) {
            errors.push(
                invalid(
                    id_node.span,
                    format!("node id {id} is used twice"),
                    "second use",
                )
                .related(first, "first use"),
            );
            continue;
        }
        let pact = get(item, "pact").and_then(Node::as_str).unwrap_or("");
        let parallelism = get(item, "parallelism").and_then(|p| match p.value {
            Value::Int(n) if n > 0 => u64::try_from(n).ok(),
            _ => None,
        });
        // A chain `A -> B -> C` is one node of the job graph and three operators.
        let chain: Vec<String> = ty
            .split(" -> ")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let first = operators.len();
        let described = ["contents", "description"]
            .iter()
            .filter_map(|k| get(item, k).and_then(Node::as_str))
            .map(unescape)
            .find(|d| d.contains('('))
            .filter(|_| chain.len() == 1);
        for (k, part) in chain.iter().enumerate() {
            texts.push(match &described {
                Some(d) => format!("{part} {d}"),
                None => part.clone(),
            });
            let suffix = if chain.len() > 1 {
                format!("{id}.{}", k + 1)
            } else {
                id.clone()
            };
            let plain = sql::without_ids(part);
            let mut op = Operator::new(short(&plain, &suffix), plain, "operator", ty_span);
            op.parallelism = parallelism;
            if k == 0 && (pact == "Data Source" || part.starts_with("Source:")) {
                op.kind = "source";
                op.reads.push(External {
                    name: format!("{}-input", op.name),
                    what: format!("what `{part}` reads"),
                    span: ty_span,
                });
            } else if pact == "Data Sink" || part.starts_with("Sink:") {
                op.kind = "sink";
            }
            if k > 0 {
                edges.push(Edge {
                    from: operators.len() - 1,
                    to: operators.len(),
                    input: "in".into(),
                    output: "out".into(),
                    partition: Partition::None,
                    via: Some("chained in one task (FORWARD)".into()),
                    store: None,
                    span: ty_span,
                });
            }
            operators.push(op);
        }
        if chain.is_empty() {
            errors.push(invalid(
                ty_span,
                format!("node {id} has an empty `type`"),
                "empty",
            ));
            continue;
        }
        by_id.insert(id, (first, operators.len() - 1, id_node.span));
        for key in ["predecessors", "inputs"] {
            if let Some(p) = get(item, key) {
                inputs.push((first, p));
            }
        }
    }
    for (to, list) in inputs {
        let Value::Seq(preds) = &list.value else {
            errors.push(invalid(
                list.span,
                format!("a node's inputs must be a list, found {}", list.describe()),
                "expected a list",
            ));
            continue;
        };
        let sides: std::collections::BTreeSet<&str> = preds
            .iter()
            .filter_map(|p| get(p, "side").and_then(Node::as_str))
            .collect();
        for p in preds {
            let Some(pid_node) = get(p, "id") else {
                errors.push(invalid(
                    Span::new(p.span.offset, 1),
                    "an input of a node has no `id`",
                    "no id",
                ));
                continue;
            };
            let Some(&(_, from, _)) = id_of(pid_node).and_then(|pid| by_id.get(&pid)) else {
                errors.push(invalid(
                    pid_node.span,
                    format!("input {} is not a node of this plan", pid_node.describe()),
                    "unknown node",
                ));
                continue;
            };
            let strategy = get(p, "ship_strategy");
            let partition = match strategy.and_then(Node::as_str) {
                None => Partition::None,
                Some(s) => partition_of(s).unwrap_or_else(|| {
                    warnings.push(
                        Diagnostic::new(
                            &codes::MISSING_INFORMATION,
                            format!("ship strategy `{s}` is not one blazes knows; it is taken as not partitioning by key"),
                        )
                        .at(strategy.map_or(pid_node.span, |n| n.span), "unknown strategy"),
                    );
                    Partition::None
                }),
            };
            let input = match get(p, "side").and_then(Node::as_str) {
                Some(side) if sides.len() > 1 => side
                    .chars()
                    .map(|c| if c.is_alphanumeric() { c } else { '_' })
                    .take(40)
                    .collect(),
                _ => "in".to_string(),
            };
            let via = strategy
                .and_then(Node::as_str)
                .map(|s| format!("ship_strategy {s}"));
            edges.push(Edge {
                from,
                to,
                input,
                output: "out".into(),
                partition,
                via,
                store: None,
                span: strategy.map_or(pid_node.span, |n| n.span),
            });
        }
    }
    if edges.len() > limits.max_streams {
        errors.push(invalid(
            nodes_node.span,
            format!(
                "the plan has {} edges, more than the limit of {} (--max-streams)",
                edges.len(),
                limits.max_streams
            ),
            "too many edges",
        ));
    }
    if operators.is_empty() && errors.is_empty() {
        errors.push(invalid(
            nodes_node.span,
            "the plan has no nodes",
            "nothing to import",
        ));
    }
    planner_operators(&mut operators, &texts);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Topology {
        name: None,
        operators,
        edges,
        stores: Vec::new(),
        warnings,
    })
}
