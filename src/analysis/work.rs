//! A count of the work the analysis does beyond propagation (points of order, barriers, sink
//! verdicts, provenance chains, diagnostics), in steps: items of the dataflow visited, chain
//! streams followed, names looked up. Not a stable API: it exists so that a test can show,
//! without timing anything, that this work stays linear in the size of a spec (`tests/work.rs`:
//! the steps per component of a generated spec do not grow when the spec grows 10x). A scan of
//! the whole dataflow per diagnostic, per sink or per point shows there as steps per component
//! growing with the spec, provided the scan counts its steps here: every loop of these phases
//! does.
//!
//! The count is per thread (the analysis of a file runs on one thread), so tests that run in
//! parallel do not see each other's steps.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// Counts `n` steps.
#[inline]
pub(crate) fn add(n: u64) {
    STEPS.with(|s| s.set(s.get().wrapping_add(n)));
}

/// Counts a step per item of `items`, passing them through (the iterator keeps its traits:
/// double-ended, exact size).
#[inline]
pub(crate) fn each<I: Iterator>(items: I) -> std::iter::Inspect<I, fn(&I::Item)> {
    items.inspect(step::<I::Item>)
}

fn step<T>(_: &T) {
    add(1);
}

/// The steps counted on this thread since the last [`reset`].
#[doc(hidden)]
pub fn steps() -> u64 {
    STEPS.with(Cell::get)
}

/// Sets this thread's count to zero.
#[doc(hidden)]
pub fn reset() {
    STEPS.with(|s| s.set(0));
}

/// How the help of an implicit sink finds out whether a name is taken by a sink or a source.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameLookup {
    /// A set of the names, built once per analysis: what the analysis does.
    Set,
    /// A scan of every sink and source per lookup, one step per name compared: the analysis
    /// before issue 29, quadratic in the size of a spec (an implicit sink per component). Kept
    /// only as the negative control of the guard in `tests/work.rs`.
    Scan,
}

/// [`analyze_with`](super::analyze_with) (without provenance notes) with the names of an
/// implicit sink's help looked up as `lookup` says: for the work guard and its negative
/// control. The findings are the same either way.
#[doc(hidden)]
pub fn analyze_looking_up(
    df: &mut crate::graph::Dataflow,
    fail_on: super::FailOn,
    lookup: NameLookup,
) -> super::Analysis {
    let mut a = super::verdicts(df, fail_on);
    a.diagnostics = super::diagnostics::diagnose(df, &a, false, fail_on, lookup);
    a
}
