//! SARIF `partialFingerprints`: what lets code scanning match an alert to its finding across
//! runs.

use std::collections::HashMap;

use crate::check::{FileReport, Outcome};
use crate::report::grouped::{self, Finding, Kind};

/// FNV-1a, 64 bits: small, stable across platforms and releases (unlike `DefaultHasher`).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(std::iter::once(&0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The identity of each finding, `hash:occurrence`, the same under both fingerprint keys: a
/// hash of what the finding is about, never of positions, so that code scanning matches an
/// alert to its finding when lines move. A point of order is its rule, file, component and
/// path (not the labels in its message, which change with what happens upstream); a failing
/// sink its rule, file and name; anything else its rule, file, message and the text under it.
/// Identical findings in one file get an occurrence number, so their fingerprints differ and
/// stay stable as long as their relative order does. Computed over every finding, kept or
/// not, so that truncation does not renumber them.
pub(super) fn fingerprints(
    reports: &[FileReport],
    uris: &[Option<(String, bool)>],
    findings: &[Finding],
) -> Vec<String> {
    let mut out = Vec::with_capacity(findings.len());
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut file = usize::MAX;
    for f in findings {
        if f.file != file {
            seen.clear();
            file = f.file;
        }
        let r = &reports[f.file];
        let d = grouped::diagnostic(reports, f);
        let path = uris[f.file]
            .as_ref()
            .map_or(r.path.as_str(), |(u, _)| u.as_str());
        let base = match (&r.outcome, &f.kind) {
            (Outcome::Analysed(a), Kind::Point { point, .. }) => {
                let df = &a.dataflow;
                let p = &a.analysis.points[*point];
                let c = df.component(p.component);
                let on = &c.paths[p.path];
                fnv1a(&[
                    d.code.id,
                    path,
                    &c.name,
                    &df.iface(on.input).name,
                    &df.iface(on.output).name,
                ])
            }
            (Outcome::Analysed(a), Kind::Sink { verdict }) => {
                let sink = &a.dataflow.sinks[a.analysis.sinks[*verdict].sink.index()];
                fnv1a(&[d.code.id, path, &sink.name])
            }
            _ => {
                let under = d
                    .primary
                    .as_ref()
                    .and_then(|p| r.text.get(p.span.offset..p.span.end()))
                    .unwrap_or("");
                fnv1a(&[d.code.id, path, &d.message, under.trim()])
            }
        };
        let n = seen.entry(base).or_insert(0);
        *n += 1;
        out.push(format!("{base:016x}:{n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_reference_function() {
        // FNV-1a 64 of "a" followed by our 0 separator byte, computed by hand from the
        // published constants; guards against accidental changes to the fingerprint scheme.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in [b'a', 0] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        assert_eq!(fnv1a(&["a"]), h);
    }
}
