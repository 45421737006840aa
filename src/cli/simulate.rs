//! `blazes simulate`: check each spec, execute its dataflow under adversarial schedules
//! (`crate::simulate`), and print per sink what was observed, with a witness when the sink
//! received different contents.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::args::{SimulateArgs, SimulateFormat};
use super::io::{check_file, is_stdin};
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, FileReport, Options, Outcome};
use crate::diagnostic::{LineIndex, Severity};
use crate::label::FailOn;
use crate::report::escape;
use crate::report::format::{self, Settings};
use crate::report::grouped::thousands;
use crate::simulate::{self, Observed, Simulation, Witness, verify};
use crate::vocabulary::{noun, plural};

/// Version of the JSON document; bumped on any incompatible change.
const JSON_VERSION: u64 = 1;

pub(crate) fn run(args: &SimulateArgs) -> i32 {
    if args.specs.iter().filter(|s| is_stdin(s)).count() > 1 {
        say!("error: `-` is given more than once, but standard input can be read only once");
        return EXIT_INVALID;
    }
    let options = Options {
        fail_on: FailOn::default(),
        limits: args.limits.limits(),
        chain_notes: false,
        ..Options::default()
    };
    let sim_options = args.run.options(simulate::DEFAULT_SCHEDULES);
    let mut code = EXIT_CLEAN;
    let mut files: Vec<(FileReport, Option<Simulation>)> = Vec::new();
    // Per file: why it ran fewer schedules than asked, or none.
    let mut notes: Vec<Option<String>> = Vec::new();
    for spec in &args.specs {
        let report = check_file(spec, &options);
        let (sim, note) = match &report.outcome {
            Outcome::Invalid(_) => {
                // The diagnostics of an invalid spec go to standard error, as `check` prints them.
                let mut err = std::io::stderr().lock();
                let _ = (format::CHECK[0].write)(
                    std::slice::from_ref(&report),
                    &Settings::default(),
                    &mut err,
                );
                code = code.max(EXIT_INVALID);
                (None, None)
            }
            Outcome::Analysed(a) => {
                let budget = budget(
                    &report.path,
                    a.dataflow.components.len(),
                    args,
                    &sim_options,
                );
                let sim = budget.schedules.map(|schedules| {
                    let o = simulate::Options {
                        schedules,
                        ..sim_options.clone()
                    };
                    let mut progress = Progress::new(&report.path, schedules);
                    let sim =
                        simulate::simulate_with_progress(&a.dataflow, &a.analysis, &o, &mut |n| {
                            progress.update(n)
                        });
                    progress.finish();
                    sim
                });
                if sim.as_ref().is_some_and(Simulation::failing) {
                    code = code.max(EXIT_FINDINGS);
                }
                (sim, budget.note)
            }
        };
        files.push((report, sim));
        notes.push(note);
    }
    let text = match args.format {
        // The report quotes the spec's names and records' values: escaped.
        SimulateFormat::Human => escape::visible(&human(&files, &notes, &sim_options)).into_owned(),
        SimulateFormat::Json => json_document(&files, &notes, &sim_options),
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (`blazes simulate ... | head`) is not an error worth a panic.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    code
}

/// How many schedules a spec gets, and why when it is not what was asked.
struct Budget {
    /// `None`: the spec is too big to simulate by default.
    schedules: Option<usize>,
    note: Option<String>,
}

/// The schedules of one spec: `--schedules` when given, else the size-aware budget `blazes
/// check --witness` and `blazes plan` use (a schedule of a 100-component spec costs about as
/// much as 250 of a 20-component one), and none past its limit.
fn budget(path: &str, components: usize, args: &SimulateArgs, o: &simulate::Options) -> Budget {
    if args.run.schedules.is_some() {
        return Budget {
            schedules: Some(o.schedules),
            note: None,
        };
    }
    match verify::size_budget(components, o.schedules) {
        Some(n) if n < o.schedules => Budget {
            schedules: Some(n),
            note: Some(format!(
                "budget: at most {} {}, reduced from {} for a spec of {} {}; --schedules N runs more",
                thousands(n),
                noun(n, "schedule", "schedules"),
                thousands(o.schedules),
                thousands(components),
                noun(components, "component", "components")
            )),
        },
        Some(n) => Budget {
            schedules: Some(n),
            note: None,
        },
        None => {
            let note = format!(
                "not simulated: the spec has {} components, more than `blazes simulate` simulates by default ({}); pass --schedules N to simulate it anyway",
                thousands(components),
                verify::PLAN_MAX_COMPONENTS
            );
            say!("note: `{}`: {note}", escape::one_line(path));
            Budget {
                schedules: None,
                note: Some(note),
            }
        }
    }
}

/// A count of the schedules run, on standard error when it is a terminal and the simulation
/// has run for a second: `\r` updates of one line, erased at the end.
struct Progress {
    path: String,
    total: usize,
    started: Instant,
    last: Option<Instant>,
    on: bool,
}

impl Progress {
    /// Shown only after this long: short runs print nothing.
    const AFTER: Duration = Duration::from_secs(1);
    /// At most this often.
    const EVERY: Duration = Duration::from_millis(100);

    fn new(path: &str, total: usize) -> Self {
        Progress {
            path: escape::one_line(path).into_owned(),
            total,
            started: Instant::now(),
            last: None,
            on: std::io::stderr().is_terminal(),
        }
    }

    fn update(&mut self, at: simulate::Progress) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        // A new witness is always said (there are few); schedules at most every EVERY.
        let often = matches!(at, simulate::Progress::Schedules(_))
            && self
                .last
                .is_some_and(|l| now.duration_since(l) < Self::EVERY);
        if now.duration_since(self.started) < Self::AFTER || often {
            return;
        }
        self.last = Some(now);
        let mut err = std::io::stderr().lock();
        let _ = match at {
            simulate::Progress::Schedules(done) => write!(
                err,
                "\r\x1b[K{}: simulating, {} of at most {} schedules",
                self.path,
                thousands(done),
                thousands(self.total)
            ),
            simulate::Progress::Witness { n, of } => {
                write!(err, "\r\x1b[K{}: shrinking witness {n} of {of}", self.path)
            }
        };
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.last.is_some() {
            // Carriage return, then erase the line: the report starts on a clean line.
            eprint!("\r\x1b[K");
        }
    }
}

fn label_text(report: &FileReport, s: usize) -> Option<String> {
    let Outcome::Analysed(a) = &report.outcome else {
        return None;
    };
    a.analysis.labels.sink[s].map(|l| l.display(&a.dataflow.keys))
}

fn exploration(sim: &Simulation, o: &simulate::Options) -> String {
    let how = if sim.exhaustive {
        format!(
            "exhaustive, {} every delivery order that matters",
            plural(sim.schedules, "schedule covers", "schedules cover")
        )
    } else {
        format!(
            "not exhaustive, {} {} (depth-first, then random with seed {})",
            thousands(sim.schedules),
            noun(sim.schedules, "schedule", "schedules"),
            o.seed
        )
    };
    let inconclusive = match sim.inconclusive {
        0 => String::new(),
        n => format!(", {n} inconclusive (delivery budget exhausted)"),
    };
    format!(
        "{how}, {} per replicated component{inconclusive}",
        plural(o.replicas, "instance", "instances")
    )
}

fn what(o: Observed) -> &'static str {
    match o {
        Observed::Deterministic => "the same contents in every schedule",
        Observed::Run => "different contents in two schedules",
        Observed::Inst => "different contents from two instances of a replicated component",
        Observed::Diverge => "output of a replicated component whose instances' states diverged",
    }
}

/// Side-by-side columns: a row title, then the two sides.
fn columns(rows: &[(String, Vec<String>, Vec<String>)], out: &mut String) {
    let title = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let left = rows
        .iter()
        .flat_map(|r| r.1.iter().map(|s| s.chars().count()))
        .max()
        .unwrap_or(0);
    for (name, a, b) in rows {
        let n = a.len().max(b.len()).max(1);
        for i in 0..n {
            let t = if i == 0 { name.as_str() } else { "" };
            let l = a
                .get(i)
                .map_or(if i == 0 { "(nothing)" } else { "" }, String::as_str);
            let r = b
                .get(i)
                .map_or(if i == 0 { "(nothing)" } else { "" }, String::as_str);
            let line = format!("   {t:<title$}  {l:<left$} | {r}");
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

fn human_witness(w: &Witness, sink: &str, out: &mut String) {
    out.push_str(&format!(
        "   = point of order: {} ({} -> {})\n",
        w.component, w.from, w.to
    ));
    for (source, recs) in &w.inputs {
        out.push_str(&format!("   = input {source}: {}\n", recs.join(" ")));
    }
    let [a, b] = &w.sides;
    let output_name = match w.observed {
        Observed::Run => sink.to_string(),
        _ => format!("{} emits", w.component),
    };
    columns(
        &[
            (String::new(), vec![a.name.clone()], vec![b.name.clone()]),
            (w.from.clone(), a.trace.clone(), b.trace.clone()),
            (output_name, a.output.clone(), b.output.clone()),
        ],
        out,
    );
}

fn human(
    files: &[(FileReport, Option<Simulation>)],
    notes: &[Option<String>],
    o: &simulate::Options,
) -> String {
    let mut out = String::new();
    for ((report, sim), note) in files.iter().zip(notes) {
        let Some(sim) = sim else {
            match note {
                Some(note) => out.push_str(&format!("{}: {note}\n", report.path)),
                None => out.push_str(&format!(
                    "{}: not simulated: the spec is invalid (see standard error)\n",
                    report.path
                )),
            }
            continue;
        };
        let Outcome::Analysed(a) = &report.outcome else {
            continue;
        };
        let note = note.as_ref().map_or(String::new(), |n| format!(" ({n})"));
        out.push_str(&format!("{}: {}{note}\n", report.path, exploration(sim, o)));
        let index = LineIndex::new(&report.text);
        for (s, r) in sim.sinks.iter().enumerate() {
            let label = label_text(report, s).unwrap_or_else(|| "unreached".to_string());
            let severity = if r.fails {
                Severity::Error.as_str()
            } else if r.observed > Observed::Deterministic {
                Severity::Warning.as_str()
            } else {
                "ok"
            };
            out.push_str(&format!(
                "{severity}: `{}` receives {} (label {label}, observed {})\n",
                r.name,
                what(r.observed),
                r.observed.as_str()
            ));
            let span = a.dataflow.sinks[s].span;
            let (path, text, local) = report.locate(span);
            let (line, col) = if report.files.is_composed() {
                crate::diagnostic::LineIndex::new(text).line_col(text, local.offset)
            } else {
                index.line_col(text, local.offset)
            };
            out.push_str(&format!("  --> {path}:{line}:{col}\n"));
            if let Some(w) = &r.witness {
                human_witness(w, &r.name, &mut out);
            }
        }
    }
    out
}

fn witness_json(w: &Witness) -> Value {
    let side = |s: &simulate::Side| json!({"name": s.name, "trace": s.trace, "output": s.output});
    json!({
        "observed": w.observed.as_str(),
        "component": w.component,
        "from": w.from,
        "to": w.to,
        "inputs": w.inputs.iter().map(|(s, r)| json!({"source": s, "records": r})).collect::<Vec<_>>(),
        "executions": [side(&w.sides[0]), side(&w.sides[1])],
    })
}

fn json_document(
    files: &[(FileReport, Option<Simulation>)],
    notes: &[Option<String>],
    o: &simulate::Options,
) -> String {
    let files: Vec<Value> = files
        .iter()
        .zip(notes)
        .map(|((report, sim), note)| match sim {
            None if note.is_some() => json!({
                "path": report.path,
                "note": note,
            }),
            None => json!({
                "path": report.path,
                "error": "the spec is invalid",
                "diagnostics": report.diagnostics().iter().filter(|d| d.severity == Severity::Error).map(|d| format!("{}: {}", d.code.id, d.message)).collect::<Vec<_>>(),
            }),
            Some(sim) => json!({
                "path": report.path,
                "schedules": sim.schedules,
                "exhaustive": sim.exhaustive,
                "seed": o.seed,
                "replicas": o.replicas,
                "inconclusive": sim.inconclusive,
                "note": note,
                "sinks": sim.sinks.iter().enumerate().map(|(s, r)| json!({
                    "name": r.name,
                    "label": label_text(report, s),
                    "observed": r.observed.as_str(),
                    "fails": r.fails,
                    "witness": r.witness.as_ref().map(witness_json),
                })).collect::<Vec<_>>(),
            }),
        })
        .collect();
    let doc = json!({"version": JSON_VERSION, "files": files});
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
