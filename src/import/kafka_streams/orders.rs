//! What the topology's structure says beyond its edges: state stores link the processors that
//! read them to the ones that write them, and a processor fed by one topic through processors
//! that keep each key's order sees each key's records in the partition's durable order.

use std::collections::HashMap;

use crate::diagnostic::Diagnostic;
use crate::import::catalog::Catalog;
use crate::import::{Edge, Partition, Topology};
use crate::spec::{Input, Limit, Limits};

/// Links the processors that read a store to the ones that write it, and gives `order:
/// [key]` to the processors that see a topic partition's order (see the module's doc).
/// Store links count against the edge limit: a store listed by many processors links each
/// reader to each writer.
pub fn derive_orders(
    topology: &mut Topology,
    catalog: &Catalog,
    entries: &[Option<usize>],
    limits: &Limits,
) -> Result<(), Vec<Diagnostic>> {
    let entry = |i: usize| entries[i].map(|e| &catalog.entries[e]);
    // The writers of each store: the processors listing it that do not only read it.
    let mut writers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s, _) in &topology.stores {
        if !entry(*i).is_some_and(|e| e.reads_state) {
            writers.entry(s.as_str()).or_default().push(*i);
        }
    }
    let mut store_edges = Vec::new();
    for (i, s, span) in &topology.stores {
        if !entry(*i).is_some_and(|e| e.reads_state) {
            continue;
        }
        for &w in writers.get(s.as_str()).map_or(&[][..], Vec::as_slice) {
            if w != *i {
                let iface: String = s
                    .chars()
                    .map(|c| {
                        if c.is_alphanumeric() || c == '-' || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .take(120)
                    .collect();
                if topology.edges.len() + store_edges.len() >= limits.max_streams {
                    return Err(vec![
                        Limit::Streams
                            .exceeded(
                                Input::Topology,
                                format!(
                                    "linking the readers of store `{s}` to its writers makes more than {} edges, the limit (--max-streams)",
                                    limits.max_streams
                                ),
                            )
                            .at(*span, "limit reached here"),
                    ]);
                }
                store_edges.push(Edge {
                    from: w,
                    to: *i,
                    input: format!("store-{iface}"),
                    output: "out".into(),
                    partition: Partition::Keys(vec!["key".into()]),
                    via: Some(format!("state store `{s}`")),
                    store: Some(s.clone()),
                    span: *span,
                });
            }
        }
    }
    topology.edges.extend(store_edges);

    let n = topology.operators.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &topology.edges {
        preds[e.to].push(e.from);
        succs[e.from].push(e.to);
    }
    // Which topic's partition order each operator's input has, upstream first (Kahn's order;
    // operators on a cycle are never reached and get none).
    let mut ordered: Vec<Option<(String, usize)>> = vec![None; n];
    let mut pending: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut queue: std::collections::VecDeque<usize> =
        (0..n).filter(|&i| pending[i] == 0).collect();
    while let Some(i) = queue.pop_front() {
        let op = &topology.operators[i];
        ordered[i] = match (preds[i].as_slice(), op.reads.as_slice()) {
            ([], [one]) if op.class == "KSTREAM-SOURCE" && !one.name.starts_with("pattern-") => {
                Some((one.name.clone(), 0))
            }
            ([p], []) if entry(*p).is_some_and(|e| e.keeps_key_order) => {
                ordered[*p].as_ref().map(|(t, hops)| (t.clone(), hops + 1))
            }
            _ => None,
        };
        for &s in &succs[i] {
            pending[s] -= 1;
            if pending[s] == 0 {
                queue.push_back(s);
            }
        }
    }
    for (i, o) in ordered.into_iter().enumerate() {
        if let Some((topic, hops)) = o {
            let through = match hops {
                0 => "directly".to_string(),
                1 => "through 1 processor that keeps each key's order".to_string(),
                h => format!("through {h} processors that keep each key's order"),
            };
            topology.operators[i].order = Some((
                vec!["key".into()],
                format!(
                    "its records come from topic `{topic}` alone, {through}: each key's records arrive in the partition's order, which is durable and the same on every replay"
                ),
            ));
        }
    }
    Ok(())
}
