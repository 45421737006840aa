//! C002 `unprotected-read`: an order-sensitive read of state written in a nondeterministic
//! order.

use super::points::PointText;

crate::codes::code! {
    /// An `OR(gate)` path reads state that the component's writing paths (`CW`, `OW`) build. Unless
    /// every writing input is sealed on a key contained in the gate, a read can observe a partition
    /// before all its writes arrived, and different runs or replicas answer differently: the read's
    /// output becomes `Inst` on a replicated component and `Run` otherwise.
    ///
    /// State that no path of the spec writes (a cache, a database, a blocklist the spec does not
    /// model) is written by something outside it: the read is treated as reading state written by
    /// an unsealed external input (`Async`), and reported here, unless the path declares `state:
    /// static` (nothing writes it while the dataflow runs).
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

/// The message of a C002 finding whose state no path of the spec writes: an unsealed external
/// input writes it.
pub(super) fn external_message(t: &PointText) -> String {
    let PointText {
        component,
        input,
        output,
        path,
        result,
        ..
    } = t;
    format!(
        "{component} answers order-sensitive reads on {input} -> {output} ({path}) from state that no path of the spec writes (so an unsealed external input writes it), so {result}"
    )
}
