//! What the labels at the fixpoint mean: the points of order (paths where coordination must
//! be inserted), the seal barriers (inputs buffered until a partition is sealed) with the
//! producers they wait for, each sink's verdict, and which point of order causes a failing
//! sink's label.

use std::collections::BTreeSet;

use crate::graph::{CompId, Dataflow, IfaceId, Producer, SinkId, StreamId};
use crate::label::{FailOn, Gate, KeySet, Label};

use super::provenance::{Origins, chain};
use super::rules::{contribute, external_writer, point_kind, unprotecting_input};
use super::{Labels, PointKind, PointOfOrder, SealBarrier, SealProducer, SinkVerdict, work};

/// Each sink's verdict: its label, and whether that label fails it.
pub(super) fn sink_verdicts(df: &Dataflow, labels: &Labels, fail_on: FailOn) -> Vec<SinkVerdict> {
    work::each(df.sinks.iter())
        .enumerate()
        .map(|(i, s)| {
            let label = labels.sink[i];
            let failing = label.is_some_and(|l| s.fails(l, fail_on));
            SinkVerdict {
                sink: SinkId(i as u32),
                label,
                failing,
            }
        })
        .collect()
}

/// The points of order of one component under `iface`: (path index, kind), in path order.
pub fn component_points(
    df: &Dataflow,
    cid: CompId,
    iface: &[Option<Label>],
) -> Vec<(usize, PointKind)> {
    let c = &df.components[cid.index()];
    c.paths
        .iter()
        .enumerate()
        .filter_map(|(pi, p)| {
            let l = iface[p.input.index()]?;
            point_kind(&contribute(df, c, p, l, iface)).map(|k| (pi, k))
        })
        .collect()
}

pub(super) fn points_and_barriers(
    df: &Dataflow,
    labels: &Labels,
) -> (Vec<PointOfOrder>, Vec<SealBarrier>) {
    let mut points = Vec::new();
    let mut barrier_keys: BTreeSet<(CompId, IfaceId, KeySet)> = BTreeSet::new();
    for (ci, c) in work::each(df.components.iter()).enumerate() {
        let cid = CompId(ci as u32);
        for (pi, p) in work::each(c.paths.iter()).enumerate() {
            let Some(l) = labels.iface[p.input.index()] else {
                continue;
            };
            let k = contribute(df, c, p, l, &labels.iface);
            if let Some(kind) = point_kind(&k) {
                let cause_input = match kind {
                    PointKind::Taint => p.input,
                    PointKind::NdRead => {
                        unprotecting_input(df, c, p.gate.unwrap_or(Gate::Star), &labels.iface)
                            .unwrap_or(p.input)
                    }
                };
                // State no path writes is written by an unsealed external input: it is the
                // cause, with no stream of the spec to follow upstream.
                let external = kind == PointKind::NdRead && external_writer(c, p);
                let input_label = if external {
                    Label::UNFED_INPUT
                } else {
                    labels.iface[cause_input.index()].unwrap_or(l)
                };
                points.push(PointOfOrder {
                    component: cid,
                    path: pi,
                    kind,
                    input_label,
                    cause_input,
                    chain: if external {
                        Vec::new()
                    } else {
                        chain(df, labels, cause_input)
                    },
                });
            }
            if k.barrier
                && let Label::Seal(key) = l
            {
                barrier_keys.insert((cid, p.input, key));
            }
            if p.annotation.reads_written_state()
                && !k.ndread
                && !c.ordered_for(p.gate.unwrap_or(Gate::Star), &df.keys)
            {
                // A read protected by seals: each sealed writing input needs its barrier.
                for w in work::each(c.paths.iter()).filter(|w| w.annotation.writes()) {
                    if let Some(Label::Seal(key)) = labels.iface[w.input.index()] {
                        barrier_keys.insert((cid, w.input, key));
                    }
                }
            }
        }
    }
    let mut origins = Origins::default();
    let barriers = barrier_keys
        .into_iter()
        .map(|(component, input, key)| {
            let mut producers: Vec<SealProducer> = origins
                .of_input(df, labels, input, &mut BTreeSet::new())
                .into_iter()
                .collect();
            work::add(producers.len() as u64 + 1);
            producers.sort_by(|a, b| (a.name(df), a).cmp(&(b.name(df), b)));
            SealBarrier {
                component,
                input,
                key,
                producers,
            }
        })
        .collect();
    (points, barriers)
}

/// Where each component's points of order are in the list of points (they are contiguous:
/// points are found component by component), for [`sink_cause`].
pub struct PointsByComponent {
    first: Vec<u32>,
}

impl PointsByComponent {
    /// Indexes `points`, which the analysis lists component by component.
    pub fn new(df: &Dataflow, points: &[PointOfOrder]) -> Self {
        let mut first = vec![u32::MAX; df.components.len()];
        for (i, p) in work::each(points.iter()).enumerate().rev() {
            first[p.component.index()] = i as u32;
        }
        PointsByComponent { first }
    }

    fn has(&self, c: CompId) -> bool {
        self.first[c.index()] != u32::MAX
    }
}

/// The point of order that causes a failing sink's label, as an index into `points`: on the
/// first-declared component of the sink's chain (`chain`, from
/// [`sink_chain`](super::sink_chain)) that has a point of order (the one the C004 help names),
/// the point on the path the chain leaves that component by (or its first point).
/// Only streams already carrying a bad label count: the point that spoilt the label is the
/// cause, not an earlier one the chain merely passes through. A lookup per chain step, not a
/// scan of all points: big specs have thousands of both.
pub fn sink_cause(
    df: &Dataflow,
    labels: &Labels,
    points: &[PointOfOrder],
    by_component: &PointsByComponent,
    v: &SinkVerdict,
    chain: &[StreamId],
) -> Option<usize> {
    let producers = work::each(chain.iter()).filter_map(|s| match df.streams[s.index()].from {
        Producer::Output(o) if !labels.stream[s.index()].is_none_or(Label::is_safe) => Some(o),
        _ => None,
    });
    let own = df.sinks[v.sink.index()].implicit;
    let output = producers
        .chain(own)
        .filter(|o| by_component.has(df.ifaces[o.index()].component))
        .min_by_key(|o| df.ifaces[o.index()].component.index())?;
    let c = df.ifaces[output.index()].component;
    let first = by_component.first[c.index()] as usize;
    let on_chain = labels.cause[output.index()].map(|pi| pi as usize);
    let of_c = work::each(points[first..].iter())
        .take_while(|p| p.component == c)
        .position(|p| Some(p.path) == on_chain)
        .unwrap_or(0);
    Some(first + of_c)
}
