//! Flink SQL's `EXPLAIN` text: the tree of the optimised plan.
//!
//! ```text
//! == Optimized Execution Plan ==
//! Sink(table=[default_catalog.default_database.totals], fields=[user_id, total])
//! +- GroupAggregate(groupBy=[user_id], select=[user_id, SUM(amount) AS total])
//!    +- Exchange(distribution=[hash[user_id]])
//!       +- TableSourceScan(table=[[default_catalog, default_database, orders]], fields=[...])
//! ```
//!
//! The section read is `== Optimized Execution Plan ==`, else `== Optimized Physical Plan ==`
//! (the abstract syntax tree is the logical plan, before the planner chose operators). Each
//! line is an operator; the lines indented under it (`+- `, `:- `, `:  `) are its inputs. An
//! `Exchange` is not an operator but how its input reaches its parent: `hash[a, b]`
//! partitions by those columns, `broadcast` gives every instance every row, `single` and the
//! others do not partition by key. A `TableSourceScan` reads its table, a `Sink` writes its.

use super::sql;
use crate::diagnostic::{Diagnostic, Span};
use crate::import::{Edge, External, Operator, Partition, Topology, invalid};
use crate::spec::{Input, Limit, Limits};

/// Whether `text` is an `EXPLAIN` output rather than a JSON plan.
pub fn is_explain(text: &str) -> bool {
    text.trim_start().starts_with("== ")
}

/// One line of the tree: its depth, the operator's text and where it starts.
struct Line<'t> {
    depth: usize,
    text: &'t str,
    at: usize,
}

/// The lines of the section headed `header`, if the text has it.
fn section<'t>(text: &'t str, header: &str) -> Option<Vec<Line<'t>>> {
    let start = text.find(header)?;
    let mut offset = start + header.len();
    let mut out = Vec::new();
    for raw in text[offset..].split_inclusive('\n') {
        let at = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            if out.is_empty() {
                continue;
            }
            break;
        }
        if line.starts_with("== ") {
            break;
        }
        // The tree's drawing: groups of three characters (`+- `, `:- `, `:  `, `   `).
        let body = line.trim_start_matches([' ', ':', '+', '-']);
        let indent = line.len() - body.len();
        out.push(Line {
            depth: indent.div_ceil(3),
            text: body.trim_end(),
            at: at + indent,
        });
    }
    Some(out)
}

fn partition_of(exchange: &str) -> Partition {
    let Some(i) = exchange.find("distribution=[") else {
        return Partition::None;
    };
    let d = &exchange[i + "distribution=[".len()..];
    if let Some(rest) = d.strip_prefix("hash[") {
        let cols: Vec<String> = rest
            .split(']')
            .next()
            .unwrap_or("")
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        if cols.is_empty() {
            return Partition::UnnamedKey;
        }
        return Partition::Keys(cols);
    }
    if d.starts_with("broadcast") {
        return Partition::All;
    }
    Partition::None
}

/// The list inside `table=[...]` (`[[catalog, db, t]]` or `[catalog.db.t]`): the table's
/// name, its last part.
fn table_of(text: &str) -> Option<String> {
    let i = text.find("table=[")?;
    let body = text[i + "table=[".len()..].trim_start_matches('[');
    let inner = body.split(']').next()?;
    let last = inner.rsplit([',', '.']).next()?.trim();
    (!last.is_empty()).then(|| last.to_string())
}

/// A line above the current one in the tree: its depth, and the operator it is, or the
/// exchange (how it partitions, where it is).
type Open = (usize, Option<usize>, Option<(Partition, Span)>);

/// Parses an `EXPLAIN` text.
pub fn parse(text: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    let Some(lines) = section(text, "== Optimized Execution Plan ==")
        .or_else(|| section(text, "== Optimized Physical Plan =="))
    else {
        return Err(vec![
            invalid(
                Span::new(0, 0),
                "this `EXPLAIN` output has no `== Optimized Execution Plan ==` or `== Optimized Physical Plan ==` section (the abstract syntax tree alone does not say which operators run)",
                "no optimised plan",
            )
            .help("give `blazes import flink` the whole output of `EXPLAIN` (or `tableEnv.explainSql(...)`)"),
        ]);
    };
    let mut operators: Vec<Operator> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    // The operator (or exchange) each depth's latest line is, to find a line's parent.
    let mut stack: Vec<Open> = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    let mut errors: Vec<Diagnostic> = Vec::new();
    for line in &lines {
        while stack.last().is_some_and(|(d, _, _)| *d >= line.depth) {
            stack.pop();
        }
        let head = line.text.split('(').next().unwrap_or(line.text).trim();
        let head_span = Span::new(line.at, head.len());
        // The operator this line feeds, and how (through the exchanges between them).
        let mut via = None;
        let mut parent = None;
        for (_, op, exchange) in stack.iter().rev() {
            if let Some(p) = op {
                parent = Some((*p, via.take()));
                break;
            }
            if via.is_none() {
                via = exchange.clone();
            }
        }
        if head == "Exchange" {
            let via = (partition_of(line.text), head_span);
            stack.push((line.depth, None, Some(via)));
            continue;
        }
        if operators.len() >= limits.max_components {
            return Err(vec![
                Limit::Components
                    .exceeded(
                        Input::Topology,
                        format!(
                            "the plan has more than {} operators, the limit (--max-components)",
                            limits.max_components
                        ),
                    )
                    .at(head_span, "limit reached here"),
            ]);
        }
        if head.is_empty() {
            errors.push(invalid(
                Span::new(line.at, line.text.len()),
                "a line of the plan names no operator",
                "no operator",
            ));
            continue;
        }
        let i = operators.len();
        let plain = sql::without_ids(head);
        let mut op = Operator::new(format!("{plain}-{}", i + 1), plain, "operator", head_span);
        let table = table_of(line.text);
        if head == "TableSourceScan" || head.ends_with("SourceScan") {
            op.kind = "source";
            let t = table
                .clone()
                .unwrap_or_else(|| format!("{}-input", op.name));
            op.reads.push(External {
                what: format!("table `{t}`"),
                name: t,
                span: head_span,
            });
        } else if head == "Sink" {
            op.kind = "sink";
            let t = table
                .clone()
                .unwrap_or_else(|| format!("{}-output", op.name));
            op.writes.push(External {
                what: format!("table `{t}`"),
                name: t,
                span: head_span,
            });
        }
        operators.push(op);
        texts.push(line.text.to_string());
        if let Some((p, via)) = parent {
            let (partition, span, shown) = match via {
                Some((partition, span)) => {
                    let shown = format!("Exchange {}", exchange_words(&partition));
                    (partition, span, Some(shown))
                }
                None => (
                    Partition::None,
                    head_span,
                    Some("forward (no exchange)".into()),
                ),
            };
            edges.push(Edge {
                from: i,
                to: p,
                input: "in".into(),
                output: "out".into(),
                partition,
                via: shown,
                store: None,
                span,
            });
        }
        stack.push((line.depth, Some(i), None));
    }
    if operators.is_empty() && errors.is_empty() {
        errors.push(invalid(
            Span::new(0, 0),
            "the plan's section lists no operator",
            "nothing to import",
        ));
    }
    if edges.len() > limits.max_streams {
        errors.push(invalid(
            Span::new(0, 0),
            format!(
                "the plan has {} edges, more than the limit of {} (--max-streams)",
                edges.len(),
                limits.max_streams
            ),
            "too many edges",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // A join's (or a union's) inputs are distinct interfaces, each partitioned its own way:
    // the first child line is its left input, the second its right.
    let mut children: Vec<usize> = vec![0; operators.len()];
    for e in &edges {
        children[e.to] += 1;
    }
    let mut seen: Vec<usize> = vec![0; operators.len()];
    // Edges were pushed top-down, so a parent's children come in the order of the lines.
    for e in &mut edges {
        let k = seen[e.to];
        seen[e.to] += 1;
        e.input = match (children[e.to], k) {
            (1, _) => "in".into(),
            (2, 0) => "left".into(),
            (2, _) => "right".into(),
            (_, k) => format!("in-{}", k + 1),
        };
    }
    super::planner_operators(&mut operators, &texts);
    Ok(Topology {
        name: None,
        operators,
        edges,
        stores: Vec::new(),
        warnings: Vec::new(),
    })
}

fn exchange_words(p: &Partition) -> String {
    match p {
        Partition::Keys(k) => format!("hash[{}]", k.join(", ")),
        Partition::UnnamedKey => "hash".into(),
        Partition::All => "broadcast".into(),
        Partition::None => "(not by key)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_gives_operators_and_exchanges() {
        let text = "== Optimized Execution Plan ==\nSink(table=[c.d.totals], fields=[a])\n+- GroupAggregate(groupBy=[a], select=[a])\n   +- Exchange(distribution=[hash[a]])\n      +- TableSourceScan(table=[[c, d, orders]], fields=[a])\n";
        let t = parse(text, &Limits::default()).unwrap();
        let classes: Vec<&str> = t.operators.iter().map(|o| o.class.as_str()).collect();
        assert_eq!(classes, ["Sink", "GroupAggregate", "TableSourceScan"]);
        assert_eq!(t.edges.len(), 2);
        let scan = t.edges.iter().find(|e| e.from == 2).unwrap();
        assert_eq!(scan.to, 1);
        assert_eq!(scan.partition, Partition::Keys(vec!["a".into()]));
        assert_eq!(t.operators[2].reads[0].name, "orders");
        assert_eq!(t.operators[0].writes[0].name, "totals");
        assert_eq!(t.operators[1].group, Some(vec!["a".to_string()]));
    }
}
