//! What the labeling precomputes from the dataflow's shape: its SCCs in topological order,
//! and the interfaces from which a bad enough label is sure to fail a sink.

use petgraph::algo::kosaraju_scc;

use crate::analysis::FailOn;
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, SinkId, Vertex};
use crate::label::Label;

/// [`Labeling::dooms`]: interfaces from which a label of rank `Run` or more reaches a sink
/// that fails on `Run` (and so on anything above it: failing is upward closed). A walk back
/// from those sinks along streams and paths.
pub(super) fn dooms(df: &Dataflow, fail_on: FailOn) -> Vec<bool> {
    let fails_on_run = |k: SinkId| df.sinks[k.index()].fails(Label::Run, fail_on);
    let mut doomed = vec![false; df.ifaces.len()];
    let mut stack: Vec<IfaceId> = Vec::new();
    for (i, f) in df.ifaces.iter().enumerate() {
        // Only outputs have implicit sinks or streams into sinks.
        let to_sink = f.implicit_sink.is_some_and(fails_on_run)
            || f.streams
                .iter()
                .any(|s| matches!(df.streams[s.index()].to, Consumer::Sink(k) if fails_on_run(k)));
        if to_sink {
            doomed[i] = true;
            stack.push(IfaceId(i as u32));
        }
    }
    // Walking back: an output is fed by its component's paths, an input by its streams.
    let mut feeding: Vec<Vec<IfaceId>> = vec![Vec::new(); df.ifaces.len()];
    for c in &df.components {
        for p in &c.paths {
            feeding[p.output.index()].push(p.input);
        }
    }
    while let Some(i) = stack.pop() {
        let f = df.iface(i);
        let back: Vec<IfaceId> = match f.direction {
            crate::graph::Direction::Output => feeding[i.index()].clone(),
            crate::graph::Direction::Input => f
                .streams
                .iter()
                .filter_map(|s| match df.streams[s.index()].from {
                    crate::graph::Producer::Output(o) => Some(o),
                    crate::graph::Producer::Source(_) => None,
                })
                .collect(),
        };
        for j in back {
            if !doomed[j.index()] {
                doomed[j.index()] = true;
                stack.push(j);
            }
        }
    }
    doomed
}

/// Components by SCC, SCCs in topological order (upstream first): `(scc of each component,
/// start of each SCC in the list (plus the end), the list, whether each SCC is a cycle)`.
/// Kosaraju's algorithm, because petgraph's Tarjan recurses once per vertex on a path and a
/// million-component chain would overflow the stack.
pub(super) fn sccs(df: &Dataflow) -> (Vec<u32>, Vec<u32>, Vec<CompId>, Vec<bool>) {
    let mut found = kosaraju_scc(&df.graph);
    // kosaraju_scc lists SCCs downstream first.
    found.reverse();
    let mut scc_of = vec![0u32; df.components.len()];
    let mut start = Vec::new();
    let mut list = Vec::with_capacity(df.components.len());
    let mut cyclic = Vec::new();
    for members in found {
        let comps: Vec<CompId> = members
            .iter()
            .filter_map(|&v| match df.graph[v] {
                Vertex::Component(c) => Some(c),
                _ => None,
            })
            .collect();
        if comps.is_empty() {
            continue;
        }
        let id = start.len() as u32;
        start.push(list.len() as u32);
        let self_loop = comps.len() == 1 && {
            let c = df.component(comps[0]);
            c.outputs.iter().any(|&o| {
                df.iface(o).streams.iter().any(|s| {
                    matches!(df.streams[s.index()].to,
                        Consumer::Input(i) if df.iface(i).component == comps[0])
                })
            })
        };
        cyclic.push(comps.len() > 1 || self_loop);
        for c in comps {
            scc_of[c.index()] = id;
            list.push(c);
        }
    }
    start.push(list.len() as u32);
    (scc_of, start, list, cyclic)
}
