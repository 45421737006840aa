//! `blazes check`: analyse each spec and print the reports in the chosen format.

use std::io::Write;

use super::args::CheckArgs;
use super::import::check_files;
use super::io::{is_stdin, use_color};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_INVALID, FileReport, Options, Outcome};
use crate::lint::{Level, Lints};
use crate::report::format::Settings;
use crate::report::grouped::thousands;
use crate::report::witness::Witnesses;
use crate::simulate::{self, verify};

/// The simulation behind the witnesses of one spec, with a note when it ran fewer schedules
/// than asked. Without `--schedules` a big spec gets the size-aware budget `blazes plan` uses
/// (a schedule of a 100-component spec costs about as much as 250 of a 20-component one), and
/// a spec past its limit none: each is said on standard error as well.
fn witness_run(
    path: &str,
    df: &crate::graph::Dataflow,
    analysis: &crate::analysis::Analysis,
    args: &CheckArgs,
    o: &simulate::Options,
) -> (Option<simulate::Simulation>, Option<String>) {
    let components = df.components.len();
    let schedules = match args.run.schedules {
        Some(_) => o.schedules,
        None => match verify::size_budget(components, o.schedules) {
            Some(n) => n,
            None => {
                say!(
                    "note: `{path}`: no witness searched for: the spec has {} components, more than `blazes check --witness` simulates by default ({}); pass --schedules N to simulate it anyway",
                    thousands(components),
                    verify::PLAN_MAX_COMPONENTS
                );
                return (None, None);
            }
        },
    };
    let note = (schedules < o.schedules).then(|| {
        format!(
            "reduced from {} for a spec of {} components; --schedules N runs more",
            thousands(o.schedules),
            thousands(components)
        )
    });
    if let Some(note) = &note {
        say!(
            "note: `{path}`: witnesses searched for in {} {} at most ({note})",
            thousands(schedules),
            crate::vocabulary::noun(schedules, "schedule", "schedules")
        );
    }
    let o = simulate::Options {
        schedules,
        ..o.clone()
    };
    (Some(simulate::simulate(df, analysis, &o)), note)
}

pub(crate) fn run(args: &CheckArgs) -> i32 {
    if args.specs.iter().filter(|s| is_stdin(s)).count() > 1 {
        say!("error: `-` is given more than once, but standard input can be read only once");
        return EXIT_INVALID;
    }
    if !args.witness
        && let Some(flag) = args.run.first_given()
    {
        return usage_error(&format!(
            "`{flag}` applies only with --witness (it sets how witnesses are searched for)"
        ));
    }
    if let Some(t) = args.deny.iter().find(|t| args.allow.contains(t)) {
        return usage_error(&format!(
            "`{}` is given to both --deny and --allow; name it once",
            t.as_str()
        ));
    }
    let lints = Lints {
        settings: args
            .allow
            .iter()
            .map(|&t| (t, Level::Allow))
            .chain(args.deny.iter().map(|&t| (t, Level::Deny)))
            .collect(),
    };
    let options = Options {
        fail_on: args.fail_on.into(),
        limits: args.limits.limits(),
        chain_notes: args.format.chain_notes,
        lints,
    };
    let reports = check_files(&args.specs, &args.from, &options);
    let witnesses = args.witness.then(|| {
        let o = args.run.options(simulate::DEFAULT_SCHEDULES);
        let mut notes = Vec::with_capacity(reports.len());
        let files = reports
            .iter()
            .map(|r| match &r.outcome {
                // A spec without an unsafe sink has nothing to attach a witness to.
                Outcome::Analysed(a) if a.analysis.failing() => {
                    let (sim, note) = witness_run(&r.path, &a.dataflow, &a.analysis, args, &o);
                    notes.push(note);
                    sim
                }
                _ => {
                    notes.push(None);
                    None
                }
            })
            .collect();
        Witnesses {
            seed: o.seed,
            replicas: o.replicas,
            files,
            notes,
        }
    });
    let cwd = std::env::current_dir().ok();
    let settings = Settings {
        color: use_color(args.color, &std::io::stdout()),
        max_results: args.max_results.map(|n| n as usize),
        cwd: cwd.as_deref(),
        witnesses: witnesses.as_ref(),
    };
    // Written as it is serialised: on a big spec a JSON or SARIF document is hundreds of
    // megabytes, as much again as the analysis.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed pipe (`blazes check ... | head`) is not an error worth a panic.
    let _ = (args.format.write)(&reports, &settings, &mut out).and_then(|()| out.flush());
    drop(out);
    let code = reports
        .iter()
        .map(FileReport::exit_code)
        .max()
        .unwrap_or(EXIT_CLEAN);
    // The process exits next: freeing a 100k-component analysis piece by piece costs a tenth
    // of the run, and the OS reclaims it anyway.
    std::mem::forget(reports);
    code
}
