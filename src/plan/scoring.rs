//! The score the searches lower and the incremental labeling keeps: per component, its points
//! of order and the unsealed streams arriving at them; over the dataflow, the failing sinks
//! first. It reads labels only, so both [`super::labeling`] and the searches may depend on it.
//!
//! Must not know: candidates, costs or the search.

use crate::analysis;
use crate::graph::{CompId, Dataflow, IfaceId, Producer, StreamId};
use crate::label::{Annotation, Gate, KeySet, Label};

/// `(failing sinks, points of order, unsealed arrivals)`: the score the greedy search lowers.
/// Unsealed arrivals are the streams into the inputs a point of order depends on (an `OW`
/// path's input, an `OR` path's writing inputs) that carry no seal compatible with its gate:
/// they measure progress that fixes no point yet, such as the first of the two seals an input
/// fed by two sources needs.
pub type Score = (usize, usize, usize);

/// Component `cid`'s share of the [`Score`]: (points of order, unsealed arrivals at them).
pub fn local_score(
    df: &Dataflow,
    cid: CompId,
    iface: &[Option<Label>],
    stream: &[Option<Label>],
) -> (u32, u32) {
    let c = df.component(cid);
    let arrivals = |input: IfaceId, gate: Gate| {
        df.iface(input)
            .streams
            .iter()
            .filter(|s| match stream[s.index()] {
                Some(Label::Seal(k)) => !gate.compatible(k, &df.keys),
                Some(_) => true,
                None => false,
            })
            .count() as u32
    };
    let (mut points, mut unsealed) = (0, 0);
    for p in &c.paths {
        let Some(l) = iface[p.input.index()] else {
            continue;
        };
        let k = analysis::contribute(df, c, p, l, iface);
        if !(k.taint || k.ndread) {
            continue;
        }
        points += 1;
        let gate = p.gate.unwrap_or(Gate::Star);
        unsealed += match p.annotation {
            Annotation::OW => arrivals(p.input, gate),
            Annotation::OR => c
                .paths
                .iter()
                .filter(|w| w.annotation.writes())
                .map(|w| arrivals(w.input, gate))
                .sum(),
            // A confluent path's point is an `Inst` written (C003): no seal fixes it.
            Annotation::CR | Annotation::CW => 0,
        };
    }
    (points, unsealed)
}

/// Failing sinks dominate; then a point of order weighs as much as one unsealed arrival
/// (removing a point also removes its arrivals), so that a cheap seal that is half of a fix
/// can beat a dearer order that fixes one point outright.
pub fn weight(s: Score) -> u64 {
    s.0 as u64 * 1_000_000_000 + s.1 as u64 + s.2 as u64
}

/// Whether the producer of internal stream `stream` can punctuate it per `key`: every input of
/// its paths to that output is unreached or sealed on a key within `key`, so it knows when
/// each of its output's partitions is complete. The analysis trusts a stream's `seal:` as
/// declared; a seal the plan adds to a stream holds only when this does.
pub fn punctuates(df: &Dataflow, iface: &[Option<Label>], stream: StreamId, key: KeySet) -> bool {
    let Producer::Output(o) = df.streams[stream.index()].from else {
        return false;
    };
    let c = df.component(df.iface(o).component);
    c.paths
        .iter()
        .filter(|p| p.output == o)
        .all(|p| match iface[p.input.index()] {
            None => true,
            Some(Label::Seal(s)) => df.keys.is_subset(s, key),
            Some(_) => false,
        })
}
