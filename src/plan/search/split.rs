//! Independent parts: the candidates split into groups that can be searched one at a time.
//!
//! Why it is exact: a sink's label is a function of what is upstream of it, so a candidate
//! changes only the sinks it reaches (and a stream seal's validity, which reads the labels of
//! the stream's producer: its reach starts there). Mechanisms only lower labels, so a sink
//! that passes keeps passing whatever is added: the plan's constraints are the failing
//! sinks, one per sink, over the candidates that reach it. Two candidates that reach no
//! common failing sink share no constraint. Group the candidates by shared failing sinks;
//! then a set of candidates repairs every sink exactly when each group's share of it repairs
//! that group's sinks, and costs add up. The cheapest plan is the union of each group's
//! cheapest plan, and each group can be solved with the others held at any plan that repairs
//! theirs (the greedy one). Candidates that exclude each other (two orders of one component)
//! start at the same vertex, so they are always in one group.
//!
//! How: the vertices with a path to a failing sink are marked by one walk upstream from the
//! failing sinks ("relevant": two candidates reach a common relevant vertex exactly when they
//! reach a common failing sink). Then one walk downstream from each candidate, in index
//! order, through relevant vertices only, that stops at a vertex an earlier walk claimed and
//! joins the two groups there. Everything downstream of a claimed vertex already belongs to
//! its claimer's group, so each vertex is walked once: linear in the graph.
//!
//! Must not know: costs, labels, or how a part is searched.

use petgraph::Direction;
use petgraph::graph::NodeIndex;

use crate::graph::{Dataflow, Producer, SinkId};
use crate::plan::candidates::Candidate;
use crate::plan::model::Choice;

/// The candidates (indices into `cands`) in independent groups, each sorted, groups ordered
/// by their first member; and per sink, the group whose candidates reach it (`None`: no
/// candidate does, or it passes). A candidate that reaches no failing sink is in no group:
/// no plan needs it.
pub(super) struct Parts {
    pub groups: Vec<Vec<usize>>,
    pub group_of_sink: Vec<Option<usize>>,
}

/// Where a candidate's influence starts: the vertices whose labels it can change first.
pub(super) fn starts(df: &Dataflow, choice: Choice) -> Vec<NodeIndex> {
    match choice {
        Choice::AddSeal { source, .. } => vec![df.source_vertex[source.index()]],
        Choice::SealStream { stream, .. } => match df.streams[stream.index()].from {
            Producer::Source(s) => vec![df.source_vertex[s.index()]],
            Producer::Output(i) => vec![df.component_vertex[df.iface(i).component.index()]],
        },
        Choice::Order { component, .. } => df
            .order_group(component)
            .map(|m| df.component_vertex[m.index()])
            .collect(),
    }
}

/// Union-find over candidate indices.
struct Groups(Vec<usize>);

impl Groups {
    fn find(&mut self, mut i: usize) -> usize {
        while self.0[i] != i {
            self.0[i] = self.0[self.0[i]];
            i = self.0[i];
        }
        i
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        // The smaller index is the root, so that a group is named by its first member.
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        self.0[hi] = lo;
    }
}

/// The vertices with a path to one of `failing` (themselves included).
fn relevant(df: &Dataflow, failing: &[SinkId]) -> Vec<bool> {
    let mut mark = vec![false; df.graph.node_count()];
    let mut stack: Vec<NodeIndex> = failing.iter().map(|k| df.sink_vertex[k.index()]).collect();
    while let Some(v) = stack.pop() {
        if !std::mem::replace(&mut mark[v.index()], true) {
            stack.extend(df.graph.neighbors_directed(v, Direction::Incoming));
        }
    }
    mark
}

/// Splits `cands` into independent groups (see the module's documentation); `failing` are
/// the sinks that fail without any candidate.
pub(super) fn parts(df: &Dataflow, cands: &[Candidate], failing: &[SinkId]) -> Parts {
    let relevant = relevant(df, failing);
    let mut groups = Groups((0..cands.len()).collect());
    let mut claimed: Vec<Option<usize>> = vec![None; df.graph.node_count()];
    let mut useful = vec![false; cands.len()];
    let mut stack: Vec<NodeIndex> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        stack.extend(starts(df, c.choice));
        while let Some(v) = stack.pop() {
            if !relevant[v.index()] {
                continue;
            }
            useful[i] = true;
            match claimed[v.index()] {
                Some(j) => groups.join(i, j),
                None => {
                    claimed[v.index()] = Some(i);
                    stack.extend(df.graph.neighbors_directed(v, Direction::Outgoing));
                }
            }
        }
    }
    let mut slot: Vec<Option<usize>> = vec![None; cands.len()];
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in (0..cands.len()).filter(|&i| useful[i]) {
        let root = groups.find(i);
        let g = *slot[root].get_or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[g].push(i);
    }
    let group_of_sink = (0..df.sinks.len())
        .map(|k| {
            claimed[df.sink_vertex[k].index()]
                .map(|i| slot[groups.find(i)].expect("every root has a group"))
        })
        .collect();
    Parts {
        groups: out,
        group_of_sink,
    }
}
