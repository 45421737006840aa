//! C002 `unprotected-read`: an order-sensitive read of state written in a nondeterministic
//! order.

use super::points::PointText;

crate::codes::code! {
    /// An `OR(gate)` path reads state that the component's writing paths (`CW`, `OW`) build. Unless
    /// every writing input is sealed on a key contained in the gate, a read can observe a partition
    /// before all its writes arrived, and different runs or replicas answer differently: the read's
    /// output becomes `Inst` on a replicated component and `Run` otherwise.
    ///
    /// Fixes: seal the writing inputs on a key within the gate (the read then waits for each
    /// partition to be sealed), or order the component's inputs (`order: [keys]` within the gate,
    /// or `order: global`).
    pub static UNPROTECTED_READ = "C002", "unprotected-read", Error,
        "an order-sensitive read (OR) observes state written in a nondeterministic order";
}

/// The message of a C002 finding; `cause` is the writing input that leaves the read
/// unprotected.
pub(super) fn message(t: &PointText, cause: &str) -> String {
    let PointText {
        component,
        input,
        output,
        path,
        label,
        result,
    } = t;
    format!(
        "{component} answers order-sensitive reads on {input} -> {output} ({path}) from state written by input `{cause}` labelled {label}, so {result}"
    )
}
