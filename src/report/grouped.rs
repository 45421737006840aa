//! Findings grouped by cause, ranked, and bounded: what `--format sarif` and `--format github`
//! report, so that a big spec gives one result per thing to fix rather than one per symptom.
//!
//! A point of order (C001-C003) is one finding, carrying the failing sinks (C004) it causes;
//! those sinks are not reported again. A failing sink no point of order explains, and every
//! other diagnostic, is a finding of its own. The cause of a sink is the one its C004 help
//! names ([`analysis::sink_cause`]), so the grouping and the text never disagree.
//!
//! When there are more findings than a format may print, [`select`] keeps the most severe:
//! errors before warnings; then by impact (an invalid file, then the worst label the finding
//! brings to a sink); then by how many sinks it breaks; then in output order.

use std::collections::HashMap;

use crate::analysis::{self, PointsByComponent};
use crate::check::{FileReport, Outcome};
use crate::codes::UNSAFE_SINK;
use crate::diagnostic::{Diagnostic, Severity, Span, Subject};
use crate::graph::CompId;

/// What a finding reports, beyond its diagnostic.
#[derive(Debug)]
pub enum Kind {
    /// A point of order (index into the analysis' points), with the failing sinks it causes,
    /// worst label first.
    Point { point: usize, sinks: Vec<Broken> },
    /// A failing sink (index into the analysis' sink verdicts) that no point of order explains.
    Sink { verdict: usize },
    /// Any other diagnostic (warnings, spec errors), reported as it is.
    Other,
}

/// A failing sink grouped under the point of order that causes it.
#[derive(Debug)]
pub struct Broken {
    /// Index into the analysis' sink verdicts.
    pub verdict: usize,
    /// Index of the sink's own C004 diagnostic in the file's diagnostics (its message says
    /// what the sink receives and tolerates).
    pub diagnostic: usize,
}

/// One result (SARIF) or annotation (GitHub).
#[derive(Debug)]
pub struct Finding {
    /// Index into the reports.
    pub file: usize,
    /// Index into the file's diagnostics.
    pub diagnostic: usize,
    pub severity: Severity,
    pub kind: Kind,
    /// How bad: 5 for an error of an invalid file (nothing in it was analysed), else the rank
    /// of the worst label the finding brings to a failing sink (`Diverge` 4 ... ), else 0.
    pub impact: u8,
}

/// Where a finding's bad label comes from: the first stream of its provenance chain.
pub struct Origin<'a> {
    /// The stream's producer, as the spec writes it.
    pub from_text: &'a str,
    pub from_span: Span,
    /// The stream's label, as every format shows it.
    pub label: String,
    /// How many streams the chain follows from there to the finding.
    pub streams: usize,
}

impl Finding {
    /// The origin of a point's or a sink's bad label; `None` for other findings, and for a
    /// chain with no stream.
    pub fn origin<'a>(&self, reports: &'a [FileReport]) -> Option<Origin<'a>> {
        let Outcome::Analysed(a) = &reports[self.file].outcome else {
            return None;
        };
        let (df, an) = (&a.dataflow, &a.analysis);
        let chain = match &self.kind {
            Kind::Point { point, .. } => {
                // The input's label begins at the first stream that carries it (or worse): an
                // `Inst` written into state (C003) comes from the read that made it, not from
                // the source at the head of the chain, where the stream was still `Async`.
                let p = &an.points[*point];
                let first = p
                    .chain
                    .iter()
                    .position(|s| {
                        an.labels.stream[s.index()].is_some_and(|l| l.is_at_least(p.input_label))
                    })
                    .unwrap_or(0);
                p.chain[first..].to_vec()
            }
            Kind::Sink { verdict } => analysis::sink_chain(df, &an.labels, &an.sinks[*verdict]),
            Kind::Other => return None,
        };
        let &s = chain.first()?;
        let st = &df.streams[s.index()];
        Some(Origin {
            from_text: &st.from_text,
            from_span: st.from_span,
            label: crate::label::show(an.labels.stream[s.index()], &df.keys),
            streams: chain.len(),
        })
    }

    fn sinks_broken(&self) -> usize {
        match &self.kind {
            Kind::Point { sinks, .. } => sinks.len(),
            Kind::Sink { .. } => 1,
            Kind::Other => 0,
        }
    }
}

/// Every finding of the reports, in output order: files in the order given, each file's
/// findings in the order of its diagnostics (by position).
pub fn findings(reports: &[FileReport]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (file, r) in reports.iter().enumerate() {
        match &r.outcome {
            Outcome::Invalid(diags) => {
                out.extend(diags.iter().enumerate().map(|(i, d)| Finding {
                    file,
                    diagnostic: i,
                    severity: d.severity,
                    kind: Kind::Other,
                    impact: if d.severity == Severity::Error { 5 } else { 0 },
                }));
            }
            Outcome::Analysed(a) => file_findings(file, a, &mut out),
        }
    }
    out
}

fn file_findings(file: usize, a: &crate::check::Analysed, out: &mut Vec<Finding>) {
    let (df, an) = (&a.dataflow, &a.analysis);
    let by_component = PointsByComponent::new(df, &an.points);
    let mut cause: Vec<Option<u32>> = vec![None; an.sinks.len()];
    for (vi, v) in an.sinks.iter().enumerate().filter(|(_, v)| v.failing) {
        let chain = analysis::sink_chain(df, &an.labels, v);
        cause[vi] = analysis::sink_cause(df, &an.labels, &an.points, &by_component, v, &chain)
            .map(|p| p as u32);
    }
    // Diagnostics to what they report, by their subject (never by their text: a message is
    // cut, and the names it quotes can be longer than the cut).
    let mut point_of: HashMap<(CompId, u32), u32> = HashMap::with_capacity(an.points.len());
    for (i, p) in an.points.iter().enumerate() {
        point_of.insert((p.component, p.path as u32), i as u32);
    }
    let mut verdict_of: Vec<Option<u32>> = vec![None; df.sinks.len()];
    for (vi, v) in an.sinks.iter().enumerate().filter(|(_, v)| v.failing) {
        verdict_of[v.sink.index()] = Some(vi as u32);
    }
    let mut point_diag: Vec<Option<u32>> = vec![None; an.points.len()];
    let mut sink_diag: Vec<Option<u32>> = vec![None; an.sinks.len()];
    for (di, d) in a.diagnostics.iter().enumerate() {
        match d.subject {
            Some(Subject::Point { component, path }) => {
                if let Some(&p) = point_of.get(&(component, path)) {
                    point_diag[p as usize] = Some(di as u32);
                }
            }
            Some(Subject::Sink(s)) if d.code == &UNSAFE_SINK => {
                if let Some(vi) = verdict_of[s.index()] {
                    sink_diag[vi as usize] = Some(di as u32);
                }
            }
            _ => {}
        }
    }
    // A sink is grouped when its cause is reported; otherwise it stays a finding of its own.
    let grouped = |vi: usize| {
        sink_diag[vi].is_some() && cause[vi].is_some_and(|p| point_diag[p as usize].is_some())
    };
    let mut broken: Vec<Vec<Broken>> = (0..an.points.len()).map(|_| Vec::new()).collect();
    for vi in (0..an.sinks.len()).filter(|&vi| grouped(vi)) {
        let p = cause[vi].expect("grouped sinks have a cause") as usize;
        broken[p].push(Broken {
            verdict: vi,
            diagnostic: sink_diag[vi].expect("grouped sinks have a diagnostic") as usize,
        });
    }
    let rank = |vi: usize| an.sinks[vi].label.map_or(0, |l| l.rank());
    let mut reported: Vec<Option<(u8, Kind)>> = Vec::new();
    reported.resize_with(a.diagnostics.len(), || None);
    for (p, di) in point_diag.iter().enumerate() {
        if let Some(di) = di {
            let mut sinks = std::mem::take(&mut broken[p]);
            // Worst label first, then in the order the sinks appear in the file.
            sinks.sort_by_key(|b| (std::cmp::Reverse(rank(b.verdict)), b.diagnostic));
            let impact = sinks.first().map_or(0, |b| rank(b.verdict));
            reported[*di as usize] = Some((impact, Kind::Point { point: p, sinks }));
        }
    }
    for (vi, di) in sink_diag.iter().enumerate() {
        if let Some(di) = di
            && !grouped(vi)
        {
            reported[*di as usize] = Some((rank(vi), Kind::Sink { verdict: vi }));
        }
    }
    let mut absorbed = vec![false; a.diagnostics.len()];
    for (vi, di) in sink_diag.iter().enumerate() {
        if let Some(di) = di
            && grouped(vi)
        {
            absorbed[*di as usize] = true;
        }
    }
    for (di, d) in a.diagnostics.iter().enumerate() {
        if absorbed[di] {
            continue;
        }
        let (impact, kind) = reported[di].take().unwrap_or((0, Kind::Other));
        out.push(Finding {
            file,
            diagnostic: di,
            severity: d.severity,
            kind,
            impact,
        });
    }
}

/// The diagnostic a finding reports.
pub fn diagnostic<'a>(reports: &'a [FileReport], f: &Finding) -> &'a Diagnostic {
    &reports[f.file].diagnostics()[f.diagnostic]
}

/// The order of severity: errors first, then by impact, by sinks broken, and output order.
fn severity_key(
    f: &Finding,
    i: usize,
) -> (u8, std::cmp::Reverse<u8>, std::cmp::Reverse<usize>, usize) {
    let level = match f.severity {
        Severity::Error => 0,
        Severity::Warning => 1,
    };
    (
        level,
        std::cmp::Reverse(f.impact),
        std::cmp::Reverse(f.sinks_broken()),
        i,
    )
}

/// Which findings to keep when at most `max` may be printed: the `max` most severe. The kept
/// ones stay in output order.
pub fn select(findings: &[Finding], max: usize) -> Vec<bool> {
    let all: Vec<usize> = (0..findings.len()).collect();
    let mut keep = vec![false; findings.len()];
    for i in select_among(findings, &all, max) {
        keep[i] = true;
    }
    keep
}

/// The `max` most severe of the findings at `candidates` (indices into `findings`).
pub fn select_among(findings: &[Finding], candidates: &[usize], max: usize) -> Vec<usize> {
    let mut order = candidates.to_vec();
    if order.len() > max {
        order.sort_unstable_by_key(|&i| severity_key(&findings[i], i));
        order.truncate(max);
    }
    order
}

/// What was left out: (errors, warnings).
pub fn left_out(findings: &[Finding], keep: &[bool]) -> (usize, usize) {
    findings
        .iter()
        .zip(keep)
        .filter(|(_, k)| !**k)
        .fold((0, 0), |(e, w), (f, _)| match f.severity {
            Severity::Error => (e + 1, w),
            Severity::Warning => (e, w + 1),
        })
}

/// `12345` -> `12,345`: counts in messages people read.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{self, Options};

    fn generated(components: usize) -> Vec<FileReport> {
        let text = crate::generator::generate(&crate::generator::GenOptions {
            components,
            seed: 5,
            ..Default::default()
        });
        let options = Options {
            chain_notes: false,
            ..Options::default()
        };
        vec![check::check_bytes("gen.yaml", text.as_bytes(), &options)]
    }

    /// Each failing sink reported exactly once: under one point of order, or on its own.
    fn each_failing_sink_once(reports: &[FileReport], found: &[Finding]) -> Result<(), String> {
        let Outcome::Analysed(a) = &reports[0].outcome else {
            return Err("not analysed".into());
        };
        let mut seen = vec![0u32; a.analysis.sinks.len()];
        for f in found {
            match &f.kind {
                Kind::Point { sinks, .. } => sinks.iter().for_each(|b| seen[b.verdict] += 1),
                Kind::Sink { verdict } => seen[*verdict] += 1,
                Kind::Other if diagnostic(reports, f).code.id == "C004" => {
                    return Err("a C004 reported without its sink".into());
                }
                Kind::Other => {}
            }
        }
        for (vi, v) in a.analysis.sinks.iter().enumerate() {
            let expected = u32::from(v.failing);
            if seen[vi] != expected {
                return Err(format!("sink {vi} reported {} times", seen[vi]));
            }
        }
        Ok(())
    }

    #[test]
    fn every_failing_sink_is_reported_once() {
        let reports = generated(600);
        let mut found = findings(&reports);
        let grouped: usize = found
            .iter()
            .map(|f| match &f.kind {
                Kind::Point { sinks, .. } => sinks.len(),
                _ => 0,
            })
            .sum();
        assert!(
            grouped > 10,
            "the spec groups sinks under points ({grouped})"
        );
        assert_eq!(each_failing_sink_once(&reports, &found), Ok(()));
        // Negative controls: the grouping minus one sink, and the grouping plus the sink's own
        // result again, both fail the same check.
        let p = found
            .iter()
            .position(|f| matches!(&f.kind, Kind::Point { sinks, .. } if !sinks.is_empty()))
            .unwrap();
        let Kind::Point { sinks, .. } = &mut found[p].kind else {
            unreachable!()
        };
        let dropped = sinks.pop().unwrap();
        assert!(each_failing_sink_once(&reports, &found).is_err());
        found.push(Finding {
            file: 0,
            diagnostic: dropped.diagnostic,
            severity: Severity::Error,
            kind: Kind::Sink {
                verdict: dropped.verdict,
            },
            impact: 0,
        });
        assert_eq!(each_failing_sink_once(&reports, &found), Ok(()));
        found.push(Finding {
            file: 0,
            diagnostic: dropped.diagnostic,
            severity: Severity::Error,
            kind: Kind::Sink {
                verdict: dropped.verdict,
            },
            impact: 0,
        });
        assert!(each_failing_sink_once(&reports, &found).is_err());
    }

    /// No left-out finding is more severe than a kept one.
    fn keeps_the_most_severe(found: &[Finding], keep: &[bool]) -> bool {
        let key = |f: &Finding| severity_key(f, 0);
        let worst_kept = found
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(f, _)| key(f))
            .max();
        found
            .iter()
            .zip(keep)
            .filter(|(_, k)| !**k)
            .all(|(f, _)| worst_kept.is_none_or(|w| key(f) >= w))
    }

    #[test]
    fn truncation_keeps_the_most_severe() {
        let reports = generated(600);
        let found = findings(&reports);
        assert!(found.len() > 100);
        for max in [1, 10, 50, found.len() - 1] {
            let keep = select(&found, max);
            assert_eq!(keep.iter().filter(|k| **k).count(), max);
            assert!(keeps_the_most_severe(&found, &keep), "max {max}");
            let (e, w) = left_out(&found, &keep);
            assert_eq!(e + w, found.len() - max);
        }
        assert!(select(&found, found.len()).iter().all(|k| *k));
        // Negative control: keeping the first ones in output order is not the most severe.
        let first: Vec<bool> = (0..found.len()).map(|i| i < 50).collect();
        assert!(!keeps_the_most_severe(&found, &first));
    }

    /// A failing implicit sink whose name is longer than a message keeps (its C004 message is
    /// cut inside the name) is grouped under its point by the diagnostic's subject; the
    /// control: without the subject, the same C004 is a finding of its own.
    #[test]
    fn sinks_are_grouped_by_subject_not_by_text() {
        let (component, output) = ("C".repeat(250), "o".repeat(250));
        let text = format!(
            "sources:\n  s: {{}}\ncomponents:\n  {component}:\n    paths:\n      - {{ from: i, to: {output}, label: OW, gate: [k] }}\nstreams:\n  - {{ from: s, to: {component}.i }}\n"
        );
        let mut reports = vec![check::check_bytes(
            "long.yaml",
            text.as_bytes(),
            &Options::default(),
        )];
        let Outcome::Analysed(a) = &reports[0].outcome else {
            panic!("not analysed: {:?}", reports[0].diagnostics());
        };
        let sink = &a.dataflow.sinks[0];
        assert_eq!(sink.name.chars().count(), 501);
        let c004 = a
            .diagnostics
            .iter()
            .position(|d| d.code.id == "C004")
            .unwrap();
        assert!(!a.diagnostics[c004].message.contains(&sink.name));
        let kinds = |reports: &[FileReport]| -> Vec<(&'static str, usize)> {
            findings(reports)
                .iter()
                .map(|f| {
                    let sinks = match &f.kind {
                        Kind::Point { sinks, .. } => sinks.len(),
                        Kind::Sink { .. } | Kind::Other => 0,
                    };
                    (diagnostic(reports, f).code.id, sinks)
                })
                .collect()
        };
        assert_eq!(kinds(&reports), [("C001", 1)]);
        let Outcome::Analysed(a) = &mut reports[0].outcome else {
            unreachable!()
        };
        a.diagnostics[c004].subject = None;
        assert_eq!(kinds(&reports), [("C004", 0), ("C001", 0)]);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
