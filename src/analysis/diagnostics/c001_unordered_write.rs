//! C001 `unordered-write`: an order-sensitive write fed records in a nondeterministic order.

use super::points::PointText;

crate::codes::code! {
    /// An `OW(gate)` path writes state whose value depends on the order of its input records within
    /// each gate partition (a running count committed per batch, last-writer-wins). When the input
    /// is `Async`, `Run`, `Inst`, or sealed on a key that is not part of the gate, two runs (or two
    /// replicas) can apply the records in different orders and write different state: the path
    /// produces `Taint`, which becomes `Run` on an unreplicated component and `Diverge` on a
    /// replicated one (or the input's own label, when that is worse).
    ///
    /// Fixes, cheapest first:
    /// - seal the input on a key K contained in the gate: a source that can punctuate K
    ///   (`sources.<name>.seal: [K]`) lets the component buffer each partition until it is complete
    ///   (a seal barrier);
    /// - order the component per key: `order: [keys]` with keys taken from the gate (keyed
    ///   sessions);
    /// - order the component globally: `order: global` (a sequencer).
    ///
    /// `blazes plan` picks the cheapest of these for the whole dataflow.
    pub static UNORDERED_WRITE = "C001", "unordered-write", Error,
        "an order-sensitive write (OW) receives records in a nondeterministic order";
}

/// The message of a C001 finding.
pub(super) fn message(t: &PointText) -> String {
    let PointText {
        component,
        input,
        output,
        path,
        label,
        result,
    } = t;
    format!(
        "{component} writes order-sensitive state on {input} -> {output} ({path}) from an input labelled {label}, so {result}"
    )
}
