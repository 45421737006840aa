//! C006 `ineffective-seal`: a `seal:` declared on a stream whose contents are not
//! deterministic.

use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{Dataflow, Producer, StreamId};
use crate::label::Label;

use super::super::{Labels, work};

crate::codes::code! {
    /// A stream's `seal: [keys]` says its producer punctuates every partition of those keys. That
    /// only yields `Seal(keys)` when the stream's derived label is `Async` or a seal: a producer
    /// whose output is already `Run` or worse cannot promise that a partition is complete and
    /// correct. Fix the point of order upstream first.
    pub static INEFFECTIVE_SEAL = "C006", "ineffective-seal", Warning,
        "a stream declares a seal, but its contents are not deterministic, so the seal means nothing";
}

/// A warning per stream whose `seal:` declaration changes nothing (see
/// [`stream_label`](super::super::stream_label)).
pub(super) fn check(df: &Dataflow, labels: &Labels, out: &mut Vec<Diagnostic>) {
    for (i, s) in work::each(df.streams.iter()).enumerate() {
        let produced = match s.from {
            Producer::Source(k) => Some(Label::of_source(df.sources[k.index()].seal)),
            Producer::Output(o) => labels.iface[o.index()],
        };
        if let (Some(span), Some(l)) = (s.seal_span, produced)
            && !l.is_safe()
        {
            out.push(
                Diagnostic::new(&INEFFECTIVE_SEAL, format!("stream {} -> {} declares a seal, but it carries {}, so the seal changes nothing", s.from_text, s.to_text, l.display(&df.keys)))
                    .at(span, "seal on a nondeterministic stream")
                    .about(Subject::Stream(StreamId(i as u32)))
                    .help("fix the point of order upstream of this stream first"),
            );
        }
    }
}
