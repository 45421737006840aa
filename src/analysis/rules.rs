//! The rules of section 5 of the label algebra, one path at a time: what a path contributes to
//! its output (`contribute`), how a contribution becomes the output's label (`reconcile`),
//! when an order-sensitive read is protected, the label a stream carries, and which point of
//! order a contribution makes. Every rule is monotone in the input labels.

use crate::graph::{Component, Dataflow, Direction, Iface, IfaceId, Path};
use crate::label::{Annotation, Gate, KeySet, Label};

use super::PointKind;

/// What one path contributes to its output interface, before reconciliation (section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contribution {
    pub label: Label,
    pub taint: bool,
    pub ndread: bool,
    /// A compatible seal consumed by an `O` path.
    pub barrier: bool,
}

/// Seals do not pass order-sensitive paths: the best such a path outputs is `Async`.
fn unsealed(l: Label) -> Label {
    match l {
        Label::Seal(_) => Label::Async,
        other => other,
    }
}

/// The label a stream carries given its producer's label and its own `seal:` declaration.
pub fn stream_label(produced: Option<Label>, seal: Option<KeySet>) -> Option<Label> {
    match (produced, seal) {
        // Only a deterministic stream can promise that its partitions are complete (C006).
        (Some(l), Some(k)) if l.is_safe() => Some(Label::Seal(k)),
        (l, _) => l,
    }
}

/// Whether the state an `OR` path `p` of `c` reads is written outside the spec: no path of `c`
/// writes it and the path does not declare it `state: static`. That writer is an unsealed
/// external input (section 5 of the algebra): `Async`, never a seal.
pub fn external_writer(c: &Component, p: &Path) -> bool {
    p.annotation.reads_written_state()
        && !p.static_state
        && !c.paths.iter().any(|w| w.annotation.writes())
}

/// Whether an `OR(gate)` read `p` of component `c` is protected: ordered for the gate, or every
/// input feeding a writing path carries a seal compatible with the gate (unreached inputs
/// carry nothing and protect trivially). State no path writes is written by an unsealed
/// external input (`external_writer`), which only an order protects against; `state:
/// static` state is never written, so reading it is protected.
pub fn read_protected(
    df: &Dataflow,
    c: &Component,
    p: &Path,
    gate: Gate,
    iface: &[Option<Label>],
) -> bool {
    if c.ordered_for(gate, &df.keys) {
        return true;
    }
    if external_writer(c, p) {
        return false;
    }
    c.paths
        .iter()
        .filter(|p| p.annotation.writes())
        .all(|w| match iface[w.input.index()] {
            None => true,
            Some(Label::Seal(k)) => gate.compatible(k, &df.keys),
            Some(_) => false,
        })
}

/// What an `OR` read's answers carry besides its input's label `l`: the state it reads, so the
/// worst label among the inputs that feed a writing path of `c`. A read answers with the
/// state: contents that differ between runs (or replicas) where the state is written differ
/// in the answers too, whether or not the read is protected (an order, or a seal, fixes when
/// the read happens, not what was written).
fn read_state(c: &Component, l: Label, iface: &[Option<Label>]) -> Label {
    c.paths
        .iter()
        .filter(|w| w.annotation.writes())
        .filter_map(|w| iface[w.input.index()])
        .fold(l, |acc, w| if w.is_at_least(acc) { w } else { acc })
}

/// The first writing input of `c` whose label does not protect an `OR(gate)` read.
pub fn unprotecting_input(
    df: &Dataflow,
    c: &Component,
    gate: Gate,
    iface: &[Option<Label>],
) -> Option<IfaceId> {
    c.paths
        .iter()
        .filter(|p| p.annotation.writes())
        .map(|w| w.input)
        .find(|i| match iface[i.index()] {
            None => false,
            Some(Label::Seal(k)) => !gate.compatible(k, &df.keys),
            Some(_) => true,
        })
}

/// Whether a path is a white box's clock (processing time, nondeterministic functions): an
/// internal unsealed input that no order of the component's inputs makes deterministic
/// (section 10 of the algebra).
fn clock(df: &Dataflow, p: &Path) -> bool {
    crate::whitebox::is_clock(p.note.as_deref(), &df.iface(p.input).name)
}

/// Section 5, rules 1-5, for one path whose input carries `l`.
pub fn contribute(
    df: &Dataflow,
    c: &Component,
    p: &Path,
    l: Label,
    iface: &[Option<Label>],
) -> Contribution {
    let none = Contribution {
        label: l,
        taint: false,
        ndread: false,
        barrier: false,
    };
    match p.annotation {
        Annotation::CR => none,
        Annotation::CW => Contribution {
            taint: l == Label::Inst,
            ..none
        },
        Annotation::OW => {
            let gate = p.gate.unwrap_or(Gate::Star);
            match l {
                Label::Seal(k) if gate.compatible(k, &df.keys) => Contribution {
                    label: Label::Async,
                    barrier: true,
                    ..none
                },
                // An order fixes the order, not the contents: an Inst input still writes a
                // transient disagreement into state, as on a CW path.
                _ if c.ordered_for(gate, &df.keys) && !clock(df, p) => Contribution {
                    label: unsealed(l),
                    taint: l == Label::Inst,
                    ..none
                },
                _ => Contribution {
                    label: unsealed(l),
                    taint: true,
                    ..none
                },
            }
        }
        Annotation::OR => {
            let gate = p.gate.unwrap_or(Gate::Star);
            let protected = read_protected(df, c, p, gate, iface);
            Contribution {
                label: unsealed(read_state(c, l, iface)),
                ndread: !protected,
                ..none
            }
        }
    }
}

/// Reconciliation at an output interface: the final label of one contribution.
pub fn reconcile(c: &Component, k: Contribution) -> Label {
    let mut rank_floor = k.label;
    let worse = |a: Label, b: Label| if a.is_at_least(b) { a } else { b };
    if k.taint {
        let tainted = if c.replicated {
            Label::Diverge
        } else {
            Label::Run
        };
        // The written input passes through as well (rule 2): an Inst written by one instance
        // stays Inst (the worst of Inst and the taint's Run). Consuming it into the taint's
        // Run would make writing an Inst stream look better than forwarding it, which breaks
        // the annotation monotonicity law.
        rank_floor = worse(rank_floor, tainted);
    }
    if k.ndread {
        rank_floor = worse(
            rank_floor,
            if c.replicated {
                Label::Inst
            } else {
                Label::Run
            },
        );
    }
    rank_floor
}

/// What point of order, if any, a path's contribution makes.
pub(super) fn point_kind(k: &Contribution) -> Option<PointKind> {
    if k.taint {
        Some(PointKind::Taint)
    } else if k.ndread {
        Some(PointKind::NdRead)
    } else {
        None
    }
}

/// Whether `f` is an input that no stream feeds: an external source, labelled
/// [`Label::UNFED_INPUT`] (and reported as C005).
pub fn is_unfed_input(f: &Iface) -> bool {
    f.direction == Direction::Input && f.streams.is_empty()
}
