//! Witnesses in reports: what `blazes check --witness` attaches to its unsafe sinks (C004), and
//! what `blazes plan` shows when a plan fails its verification by execution. The simulator
//! ([`crate::simulate`]) finds them; this module only presents them, the same way in every
//! format: the point of order, the input records, the deliveries there in the two executions
//! (or instances), and the two outputs.

use serde::Serialize;

use crate::check::Analysed;
use crate::codes::UNSAFE_SINK;
use crate::diagnostic::Subject;
use crate::simulate::{Observed, Side, Simulation, SinkResult, Witness};

/// The simulations behind `blazes check --witness`, one per report (`None` for an invalid
/// spec), and how they ran.
#[derive(Clone, Debug)]
pub struct Witnesses {
    pub seed: u64,
    pub replicas: usize,
    pub files: Vec<Option<Simulation>>,
    /// Per report: why its exploration ran fewer schedules than asked (a big spec's budget),
    /// said wherever the exploration is.
    pub notes: Vec<Option<String>>,
}

impl Witnesses {
    /// What the simulator observed at sink `sink` (an index into the dataflow's sinks) of the
    /// report `file`.
    pub fn sink(&self, file: usize, sink: usize) -> Option<&SinkResult> {
        self.files.get(file)?.as_ref()?.sinks.get(sink)
    }

    /// How the report `file` was explored, e.g. `1,000 random schedules with seed 1`.
    pub fn exploration(&self, file: usize) -> Option<String> {
        let sim = self.files.get(file)?.as_ref()?;
        let how = exploration(sim.schedules, sim.exhaustive, self.seed);
        Some(match self.notes.get(file).and_then(Option::as_ref) {
            Some(note) => format!("{how} ({note})"),
            None => how,
        })
    }
}

/// `the 37 schedules that cover every delivery order` or `1,000 random schedules with seed 1`.
pub fn exploration(schedules: usize, exhaustive: bool, seed: u64) -> String {
    let noun = crate::vocabulary::noun(schedules, "schedule", "schedules");
    if exhaustive {
        let cover = if schedules == 1 { "covers" } else { "cover" };
        format!(
            "the {} {noun} that {cover} every delivery order",
            thousands(schedules)
        )
    } else {
        format!("{} random {noun} with seed {seed}", thousands(schedules))
    }
}

fn thousands(n: usize) -> String {
    super::grouped::thousands(n)
}

/// For each diagnostic of an analysed spec, the sink (an index into the dataflow's sinks) its
/// C004 reports, if it is one: the diagnostic's subject, as [`super::grouped`] matches them.
pub fn c004_sinks(a: &Analysed) -> Vec<Option<usize>> {
    a.diagnostics
        .iter()
        .map(|d| match d.subject {
            Some(Subject::Sink(s)) if d.code == &UNSAFE_SINK => Some(s.index()),
            _ => None,
        })
        .collect()
}

/// What the two sides' outputs are, as a row title: the sink's contents for `Run`, what the
/// point-of-order component emitted for `Inst` and `Diverge`.
pub fn output_name(w: &Witness, sink: &str) -> String {
    match w.observed {
        Observed::Run => sink.to_string(),
        _ => format!("{} emits", w.component),
    }
}

/// Side-by-side columns: a row title, then the two sides, each line indented by `indent`.
fn columns(rows: &[(String, Vec<String>, Vec<String>)], indent: &str, out: &mut String) {
    let title = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let left = rows
        .iter()
        .flat_map(|r| r.1.iter().map(|s| s.chars().count()))
        .max()
        .unwrap_or(0)
        .max("(nothing)".len());
    for (name, a, b) in rows {
        let n = a.len().max(b.len()).max(1);
        for i in 0..n {
            let t = if i == 0 { name.as_str() } else { "" };
            let nothing = if i == 0 { "(nothing)" } else { "" };
            let l = a.get(i).map_or(nothing, String::as_str);
            let r = b.get(i).map_or(nothing, String::as_str);
            let line = format!("{indent}{t:<title$}  {l:<left$} | {r}");
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

/// The witness as text: the point of order, the input records, then the deliveries at the
/// point of order and the two outputs side by side. Every line starts with `indent`.
pub fn side_by_side(w: &Witness, sink: &str, indent: &str) -> String {
    let mut out = format!(
        "{indent}= point of order: {} ({} -> {})\n",
        w.component, w.from, w.to
    );
    for (source, recs) in &w.inputs {
        out.push_str(&format!("{indent}= input {source}: {}\n", recs.join(" ")));
    }
    let [a, b] = &w.sides;
    columns(
        &[
            (String::new(), vec![a.name.clone()], vec![b.name.clone()]),
            (w.traced.join(" + "), a.trace.clone(), b.trace.clone()),
            (output_name(w, sink), a.output.clone(), b.output.clone()),
        ],
        indent,
        &mut out,
    );
    out
}

/// The witness in a few lines, for a place with no room for columns (a GitHub annotation):
/// the input records, then per side what the point of order took and what came out.
pub fn compact(w: &Witness, sink: &str, exploration: &str) -> Vec<String> {
    let mut lines = vec![format!(
        "witness for `{sink}` (observed {} in {exploration}): point of order {} ({} -> {})",
        w.observed.as_str(),
        w.component,
        w.from,
        w.to
    )];
    for (source, recs) in &w.inputs {
        lines.push(format!("  input {source}: {}", recs.join(" ")));
    }
    let out = output_name(w, sink);
    for s in &w.sides {
        lines.push(format!(
            "  {}: {} takes {}; {out}: {}",
            s.name,
            w.component,
            list(&s.trace),
            list(&s.output)
        ));
    }
    lines
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_string()
    } else {
        items.join(" ")
    }
}

/// The sentence that says no witness was found (no final period).
pub fn none_found(sink: &str, observed: Observed, exploration: &str) -> String {
    match observed {
        Observed::Deterministic => format!(
            "no witness for `{sink}` in {exploration}: every schedule delivered the same contents to it"
        ),
        o => format!(
            "no witness for `{sink}` in {exploration}: it was observed {} but the evidence could not be replayed",
            o.as_str()
        ),
    }
}

/// The first line of a witness in the human formats (no final period).
pub fn headline(w: &Witness, sink: &str, exploration: &str) -> String {
    let what = match w.observed {
        Observed::Run | Observed::Deterministic => {
            format!("`{sink}` receives different contents in two schedules")
        }
        Observed::Inst => format!(
            "two instances of a replicated component emit different contents towards `{sink}`"
        ),
        Observed::Diverge => format!(
            "two instances of a replicated component upstream of `{sink}` end with different states"
        ),
    };
    format!(
        "witness: {what} (observed {} in {exploration})",
        w.observed.as_str()
    )
}

/// The JSON object of a witness, the one `blazes simulate --format json` writes: fields in
/// alphabetical order, as every JSON document of blazes has them.
#[derive(Serialize)]
pub struct WitnessOut<'a> {
    pub component: &'a str,
    pub executions: [SideOut<'a>; 2],
    pub from: &'a str,
    pub inputs: Vec<InputOut<'a>>,
    pub observed: &'static str,
    pub to: &'a str,
    /// The inputs whose deliveries the traces show (a read's, and the writes it races with).
    pub traced: &'a [String],
}

#[derive(Serialize)]
pub struct SideOut<'a> {
    pub name: &'a str,
    pub output: &'a [String],
    pub trace: &'a [String],
}

#[derive(Serialize)]
pub struct InputOut<'a> {
    pub records: &'a [String],
    pub source: &'a str,
}

impl<'a> WitnessOut<'a> {
    pub fn new(w: &'a Witness) -> Self {
        let side = |s: &'a Side| SideOut {
            name: &s.name,
            output: &s.output,
            trace: &s.trace,
        };
        WitnessOut {
            component: &w.component,
            executions: [side(&w.sides[0]), side(&w.sides[1])],
            from: &w.from,
            inputs: w
                .inputs
                .iter()
                .map(|(source, records)| InputOut { records, source })
                .collect(),
            observed: w.observed.as_str(),
            to: &w.to,
            traced: &w.traced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn witness() -> Witness {
        Witness {
            observed: Observed::Run,
            component: "Count".into(),
            from: "Count.words".into(),
            to: "Count.counts".into(),
            traced: vec!["Count.words".into()],
            inputs: vec![("tweets".into(), vec!["(a)".into(), "(b)".into()])],
            sides: [
                Side {
                    name: "schedule 0".into(),
                    trace: vec!["(a)".into(), "(b)".into()],
                    output: vec!["(x)".into()],
                },
                Side {
                    name: "schedule 4".into(),
                    trace: vec!["(b)".into(), "(a)".into()],
                    output: vec![],
                },
            ],
        }
    }

    #[test]
    fn columns_line_up_and_say_nothing_for_an_empty_side() {
        let text = side_by_side(&witness(), "db", "  ");
        assert_eq!(
            text,
            "  = point of order: Count (Count.words -> Count.counts)\n  = input tweets: (a) (b)\n               schedule 0 | schedule 4\n  Count.words  (a)        | (b)\n               (b)        | (a)\n  db           (x)        | (nothing)\n"
        );
    }

    #[test]
    fn compact_names_both_sides() {
        let lines = compact(&witness(), "db", "9 random schedules with seed 1");
        assert_eq!(
            lines[0],
            "witness for `db` (observed Run in 9 random schedules with seed 1): point of order Count (Count.words -> Count.counts)"
        );
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2], "  schedule 0: Count takes (a) (b); db: (x)",
            "{lines:?}"
        );
        assert!(lines[3].ends_with("db: nothing"), "{lines:?}");
    }
}
