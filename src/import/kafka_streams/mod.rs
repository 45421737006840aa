//! Kafka Streams: the text `Topology#describe()` prints.
//!
//! ```text
//! Topologies:
//!    Sub-topology: 0
//!     Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
//!       --> KSTREAM-FLATMAPVALUES-0000000001
//!     Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
//!       --> KSTREAM-SINK-0000000002
//!       <-- KSTREAM-SOURCE-0000000000
//!     Sink: KSTREAM-SINK-0000000002 (topic: words)
//!       <-- KSTREAM-FLATMAPVALUES-0000000001
//! ```
//!
//! Every processor becomes a component. A topic that a sink of the topology writes and a
//! source reads (a repartition topic, or a `to`/`stream` pair) becomes a stream between them;
//! the other topics are the spec's sources and sinks. A state store listed by several
//! processors links the ones that write it to the ones whose entry says `reads-state`.
//!
//! Order: the records of one partition of a topic are totally and durably ordered, and a
//! task processes each record through its sub-topology before the next, so a processor whose
//! only input comes from one topic the topology does not write, through processors that keep
//! each key's order (catalogue `keeps-key-order`), sees each key's records in an order that
//! is the same on every replay: it gets `order: [key]`. A topic written inside the topology
//! is written by several tasks at once; the interleaving its readers see is not replayable.
//!
//! Names: the class of a processor is its name without the numeric suffixes Kafka Streams
//! adds (`KSTREAM-AGGREGATE-0000000003` is `KSTREAM-AGGREGATE`); every source is class
//! `KSTREAM-SOURCE` and every sink `KSTREAM-SINK`, whatever their names.
//!
//! The parts: `describe` reads the describe text into a [`Topology`] (processors, their
//! topics and stores, the edges between them); `orders` links state stores' readers to their
//! writers and derives each processor's per-key order; this module decodes a describe output
//! written as a Java string and maps its spans back to the file.

mod describe;
mod named;
mod orders;

use super::Topology;
use crate::diagnostic::{Diagnostic, Span};
use crate::spec::Limits;

pub use named::judge;
pub use orders::derive_orders;

use describe::parse_plain;

/// The class a processor's name stands for: without the numeric suffixes, and without a
/// user's prefix before a generated name (`orders-KSTREAM-FILTER-0000000003`).
pub fn class_of(name: &str) -> String {
    let mut s = strip_numbers(name);
    for generated in ["-KSTREAM-", "-KTABLE-", "-COGROUPKSTREAM-"] {
        if let Some(i) = s.find(generated)
            && s.len() < name.len()
        {
            s = &s[i + 1..];
            break;
        }
    }
    s.to_string()
}

/// A name without the numeric suffixes Kafka Streams adds.
fn strip_numbers(name: &str) -> &str {
    let mut s = name;
    while let Some(i) = s.rfind('-') {
        let tail = &s[i + 1..];
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) && i > 0 {
            s = &s[..i];
        } else {
            break;
        }
    }
    s
}

/// If the text is a describe output written as a Java string (a log line, a test's expected
/// value: one line with `\n` escapes, maybe quoted), its decoded text and, for each decoded
/// byte, the offset in the file it came from.
fn java_string(text: &str) -> Option<(String, Vec<usize>)> {
    let trimmed = text.trim();
    if trimmed.contains('\n') || !trimmed.contains("\\n") {
        return None;
    }
    let start = text.len() - text.trim_start().len();
    let body_start = start + usize::from(trimmed.starts_with('"'));
    let body_end = start + trimmed.len() - usize::from(trimmed.len() > 1 && trimmed.ends_with('"'));
    let body = &text[body_start..body_end.max(body_start)];
    let mut out = String::new();
    let mut at = Vec::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let from = body_start + i;
        let decoded = if c == '\\' {
            match chars.next() {
                Some((_, 'n')) => '\n',
                Some((_, 'r')) => '\r',
                Some((_, 't')) => '\t',
                Some((_, '"')) => '"',
                Some((_, '\'')) => '\'',
                Some((_, '\\')) => '\\',
                Some((j, 'u')) => {
                    let hex = body.get(j + 1..j + 5).unwrap_or("");
                    match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                        Some(d) if hex.len() == 4 => {
                            for _ in 0..4 {
                                chars.next();
                            }
                            d
                        }
                        _ => '\u{fffd}',
                    }
                }
                Some((_, other)) => other,
                None => '\\',
            }
        } else {
            c
        };
        for _ in 0..decoded.len_utf8() {
            at.push(from);
        }
        out.push(decoded);
    }
    at.push(body_end);
    Some((out, at))
}

/// Maps a span of the decoded text to the file.
fn back(at: &[usize], span: Span) -> Span {
    let start = at[span.offset.min(at.len() - 1)];
    let end = at[span.end().min(at.len() - 1)];
    Span::new(start, end.saturating_sub(start))
}

/// Parses a describe text.
pub fn parse(text: &str, limits: &Limits) -> Result<Topology, Vec<Diagnostic>> {
    match java_string(text) {
        None => parse_plain(text, limits),
        Some((decoded, at)) => {
            let fix = |d: &mut Diagnostic| {
                if let Some(p) = &mut d.primary {
                    p.span = back(&at, p.span);
                }
                for n in &mut d.related {
                    n.span = back(&at, n.span);
                }
            };
            match parse_plain(&decoded, limits) {
                Err(mut ds) => {
                    ds.iter_mut().for_each(fix);
                    Err(ds)
                }
                Ok(mut t) => {
                    for op in &mut t.operators {
                        op.span = back(&at, op.span);
                        for x in op.reads.iter_mut().chain(&mut op.writes) {
                            x.span = back(&at, x.span);
                        }
                    }
                    for e in &mut t.edges {
                        e.span = back(&at, e.span);
                    }
                    for s in &mut t.stores {
                        s.2 = back(&at, s.2);
                    }
                    t.warnings.iter_mut().for_each(fix);
                    Ok(t)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::describe::lines;
    use super::*;

    #[test]
    fn classes_drop_numeric_suffixes() {
        assert_eq!(
            class_of("KSTREAM-AGGREGATE-0000000003"),
            "KSTREAM-AGGREGATE"
        );
        assert_eq!(class_of("KSTREAM-BRANCH-0000000001-0"), "KSTREAM-BRANCH");
        assert_eq!(class_of("orders-this-join"), "orders-this-join");
        assert_eq!(class_of("-1"), "-1");
        assert_eq!(
            class_of("orders-KSTREAM-FILTER-0000000003"),
            "KSTREAM-FILTER"
        );
        // A user's name that happens to hold the word, without a generated suffix, is kept.
        assert_eq!(class_of("to-KTABLE-view"), "to-KTABLE-view");
    }

    #[test]
    fn lines_end_at_lf_crlf_and_cr() {
        let v: Vec<_> = lines("a\r\nb\rc\nd").collect();
        assert_eq!(v, [(0, "a"), (3, "b"), (5, "c"), (7, "d")]);
    }

    #[test]
    fn a_java_string_is_decoded_with_its_offsets() {
        let (s, at) = java_string(r#""Topologies:\n  Source: A (topics: [t\u00e9])\n""#).unwrap();
        assert!(s.starts_with("Topologies:\n  Source: A"));
        assert!(s.contains("té"));
        let a = s.find("A (").unwrap();
        assert_eq!(at[a], r#""Topologies:\n  Source: "#.len());
    }
}
