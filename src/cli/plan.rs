//! `blazes plan`: the cheapest coordination that repairs each spec, printed in the chosen
//! format and, with `--apply` or `--in-place`, written into a copy of the spec or the spec.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::{Color, PlanArgs};
use super::import::check_file;
use super::io::{
    Access, io_reason, is_stdin, same_file, use_color, write_all_atomically, write_atomically,
};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, FileReport, Options, Outcome};
use crate::label::FailOn;
use crate::plan::apply_composed::FileChange;
use crate::plan::{self, Plan, Status};
use crate::report::format::{Planned, Settings};
use crate::report::plan_json::{Applied, AppliedFile, AppliedStatus};
use crate::simulate::verify::{self, Verification};
use crate::spec::Limits;

/// One spec of `blazes plan`: its report, its plan when it is valid, what `--apply` did, and
/// the plan's verification by execution.
struct PlanOutcome {
    report: FileReport,
    plan: Option<Plan>,
    applied: Option<Applied>,
    simulation: Option<Verification>,
}

impl PlanOutcome {
    fn exit_code(&self) -> i32 {
        match &self.plan {
            None => EXIT_INVALID,
            Some(_) if self.applied.as_ref().map(|a| a.status) == Some(AppliedStatus::Failed) => {
                EXIT_INVALID
            }
            Some(p) if p.status == Status::Unrepairable => EXIT_FINDINGS,
            // A plan that execution refutes leaves a sink worse than it tolerates: exit 1, as
            // `blazes simulate` exits when it shows such a sink.
            Some(_) if self.simulation.as_ref().is_some_and(Verification::refuted) => EXIT_FINDINGS,
            Some(_) => EXIT_CLEAN,
        }
    }
}

/// Checks the combination of specs, `--apply` and `--in-place`; returns where each spec's
/// plan is written (if anywhere), or the usage error.
fn plan_outputs(args: &PlanArgs) -> Result<Vec<Option<PathBuf>>, String> {
    let n = args.specs.len();
    if args.in_place
        && let Some(s) = args.specs.iter().find(|s| is_stdin(s))
    {
        return Err(format!(
            "--in-place needs a spec file, not standard input (`{}`)",
            s.display()
        ));
    }
    match &args.apply {
        Some(out) if n > 1 => Err(format!(
            "`--apply {}` writes one file but {n} specs were given; plan them one at a time, or use --in-place to write each plan into its spec",
            out.display()
        )),
        Some(out) => {
            let spec = &args.specs[0];
            if !args.in_place && !is_stdin(spec) && same_file(spec, out) {
                return Err(format!(
                    "refusing to overwrite the input spec `{}`; pass --in-place to edit it, or --apply another file",
                    spec.display()
                ));
            }
            Ok(vec![Some(out.clone())])
        }
        None if args.in_place => Ok(args.specs.iter().map(|s| Some(s.clone())).collect()),
        None => Ok(vec![None; n]),
    }
}

pub(crate) fn run(args: &PlanArgs) -> i32 {
    let outputs = match plan_outputs(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    if args.no_simulate
        && let Some(flag) = args.run.first_given()
    {
        return usage_error(&format!(
            "`{flag}` sets how the plan is verified by execution, which --no-simulate skips; drop one of them"
        ));
    }
    // `--schedules` runs that many on any spec; without it the budget scales with the spec.
    let sim_options = args.run.options(verify::PLAN_SCHEDULES);
    let budget = |df: &crate::graph::Dataflow| {
        match args.run.schedules {
        Some(_) => Ok(sim_options.clone()),
        None => verify::plan_budget(df.components.len())
            .map(|schedules| crate::simulate::Options {
                schedules,
                ..sim_options.clone()
            })
            .ok_or_else(|| {
                format!(
                    "the spec has {} components, more than `blazes plan` simulates by default ({}); pass --schedules N, or run `blazes simulate` on the applied spec",
                    crate::report::grouped::thousands(df.components.len()),
                    verify::PLAN_MAX_COMPONENTS
                )
            }),
    }
    };
    let limits = args.limits.limits();
    let plan_options = args.choice.options();
    let options = Options {
        fail_on: plan_options.fail_on,
        limits: limits.clone(),
        ..Options::default()
    };
    let mut outcomes: Vec<PlanOutcome> = Vec::with_capacity(args.specs.len());
    for (spec, out) in args.specs.iter().zip(outputs) {
        let report = check_file(spec, &args.from, &options);
        let plan = match &report.outcome {
            Outcome::Analysed(a) => Some(plan::plan(&a.dataflow, &plan_options)),
            Outcome::Invalid(_) => None,
        };
        let simulation = match (&report.outcome, &plan) {
            (Outcome::Analysed(a), Some(p))
                if !args.no_simulate && p.status != Status::Unrepairable =>
            {
                let v = match budget(&a.dataflow) {
                    Ok(o) => verify::verify_plan(&a.dataflow, p, options.fail_on, &o),
                    Err(reason) => Verification::skipped(reason, &sim_options),
                };
                if let Some(f) = &v.failure {
                    say!(
                        "error: the plan for `{}` does not hold when executed: sink `{}` was observed {} with the plan in force, but it tolerates {}; this is a bug in blazes (the analysis or the planner), please report it with the spec",
                        report.path,
                        f.sink,
                        f.observed.as_str(),
                        f.tolerate.as_str()
                    );
                }
                Some(v)
            }
            _ => None,
        };
        let refuted = simulation.as_ref().is_some_and(Verification::refuted);
        let applied = match (&plan, out) {
            (Some(plan), Some(o)) => Some(apply(
                args,
                &report,
                plan,
                &o,
                refuted,
                &limits,
                options.fail_on,
            )),
            _ => None,
        };
        outcomes.push(PlanOutcome {
            report,
            plan,
            applied,
            simulation,
        });
    }
    let planned: Vec<Planned> = outcomes
        .iter()
        .map(|o| Planned {
            report: &o.report,
            plan: o.plan.as_ref(),
            applied: o.applied.as_ref(),
            simulation: o.simulation.as_ref(),
        })
        .collect();
    let settings = Settings {
        color: use_color(Color::Auto, &std::io::stdout()),
        ..Settings::default()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed pipe (`blazes plan ... | head`) is not an error worth a panic.
    let _ = (args.format.write)(&planned, &settings, &mut out).and_then(|()| out.flush());
    drop(out);
    let mut code = EXIT_CLEAN;
    for o in &outcomes {
        code = code.max(o.exit_code());
        if args.check
            && let Some(p) = &o.plan
            && p.status == Status::Repaired
        {
            say!(
                "error: `{}` is repairable but not repaired: the plan adds {} (`blazes plan --apply OUT` writes it)",
                o.report.path,
                crate::vocabulary::plural(p.mechanisms.len(), "mechanism", "mechanisms")
            );
            code = code.max(EXIT_FINDINGS);
        }
    }
    code
}

/// What `--apply`/`--in-place` does with one spec's plan, written to `o` (the root's output),
/// and said on standard error.
fn apply(
    args: &PlanArgs,
    report: &FileReport,
    plan: &Plan,
    o: &Path,
    refuted: bool,
    limits: &Limits,
    fail_on: FailOn,
) -> Applied {
    let output = o.display().to_string();
    let outcome = if refuted {
        // A plan known not to hold is not written where it would be trusted.
        Err((
            AppliedStatus::Skipped,
            format!("nothing written to `{output}`: the plan failed its verification by execution"),
        ))
    } else if plan.status == Status::Unrepairable {
        Err((
            AppliedStatus::Skipped,
            format!("nothing written to `{output}`: the plan cannot repair this spec"),
        ))
    } else if report.files.is_composed() {
        apply_files(args, report, plan, o, limits, fail_on)
    } else {
        apply_flat(args, report, plan, o, limits, fail_on)
    };
    match outcome {
        Ok(files) if files.is_empty() => {
            say!("`{output}` needs no change; left as it is");
            Applied {
                output,
                status: AppliedStatus::Unchanged,
                message: None,
                files,
            }
        }
        Ok(files) => {
            for f in &files {
                match (report.files.is_composed(), f.edits.is_empty()) {
                    (true, false) => {
                        say!("wrote the plan into `{}`: {}", f.path, f.edits.join("; "))
                    }
                    (true, true) => say!("wrote `{}`, which the plan does not change", f.path),
                    (false, _) => say!("wrote the planned spec to `{}`", f.path),
                }
            }
            Applied {
                output,
                status: AppliedStatus::Written,
                message: None,
                files,
            }
        }
        Err((status, message)) => {
            say!("error: {message}");
            Applied {
                output,
                status,
                message: Some(message),
                files: Vec::new(),
            }
        }
    }
}

type ApplyResult = Result<Vec<AppliedFile>, (AppliedStatus, String)>;

/// A flat spec's plan, written to `o`: the files written (none when `o` already holds it).
fn apply_flat(
    args: &PlanArgs,
    report: &FileReport,
    plan: &Plan,
    o: &Path,
    limits: &Limits,
    fail_on: FailOn,
) -> ApplyResult {
    let (text, edits) = plan::apply::apply_verified(&report.text, plan, limits, fail_on)
        .map_err(|m| (AppliedStatus::Failed, m))?;
    // What OUT holds now: the spec itself under --in-place, else whatever file is there (a
    // previous plan, or the user's own edits).
    let existing = match args.in_place {
        true => Some(report.text.clone().into_bytes()),
        false => std::fs::read(o).ok(),
    };
    let edits = edits.iter().map(plan::apply::Edit::describe).collect();
    write_one(args, o, &text, existing, edits)
}

/// Writes `text` to `o`, which holds `existing` (the spec itself under --in-place): nothing
/// when it holds `text` already, and an error when it holds something else, unless
/// --in-place or --force says to replace it. The file written, with `edits`.
fn write_one(
    args: &PlanArgs,
    o: &Path,
    text: &str,
    existing: Option<Vec<u8>>,
    edits: Vec<String>,
) -> ApplyResult {
    let output = o.display().to_string();
    let failed = |m: String| (AppliedStatus::Failed, m);
    // Rewriting an unchanged file would still bump its modification time and trigger
    // watchers and rebuilds for nothing.
    if existing.as_deref() == Some(text.as_bytes()) {
        return Ok(Vec::new());
    }
    if !args.in_place && !args.force && existing.is_some() {
        return Err(failed(format!(
            "refusing to overwrite `{output}`, which exists and differs (it may hold your edits); pass --force to replace it, or --apply another file"
        )));
    }
    write_atomically(o, text.as_bytes()).map_err(|e| {
        failed(format!(
            "cannot write `{output}`: {}",
            io_reason(&e, Access::Write)
        ))
    })?;
    Ok(vec![AppliedFile {
        path: output,
        edits,
    }])
}

/// A composed spec's plan, each mechanism written into the file that declares what it acts
/// on: the root's edits to `o`, a used file's in place (with `--in-place` only: a copy of the
/// root elsewhere would not be what the used files are used by). All files or none.
fn apply_files(
    args: &PlanArgs,
    report: &FileReport,
    plan: &Plan,
    o: &Path,
    limits: &Limits,
    fail_on: FailOn,
) -> ApplyResult {
    let output = o.display().to_string();
    let failed = |m: String| (AppliedStatus::Failed, m);
    let Outcome::Analysed(a) = &report.outcome else {
        return Err(failed(format!(
            "nothing written to `{output}`: the spec is invalid"
        )));
    };
    let changes = plan::apply_composed::apply_composed(
        &report.path,
        &report.text,
        &report.files,
        &a.dataflow,
        plan,
        limits,
        fail_on,
    )
    .map_err(|e| failed(format!("nothing written: {e}")))?;
    let used: Vec<&str> = changes
        .iter()
        .filter(|c| c.file.is_some())
        .map(|c| c.path.as_str())
        .collect();
    if !args.in_place && (o.is_dir() || output.ends_with('/')) {
        return apply_tree(args, report, &changes, o);
    }
    if !args.in_place {
        if !used.is_empty() {
            return Err(failed(format!(
                "nothing written to `{output}`: the plan changes {} the spec uses, which `--apply FILE` does not write beside a copy; pass --apply DIR/ to write a planned copy of every file into DIR, or --in-place to write the plan into the files",
                used.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let spec_dir = std::fs::canonicalize(parent(Path::new(&report.path)));
        let out_dir = std::fs::canonicalize(parent(o));
        if !matches!((&spec_dir, &out_dir), (Ok(a), Ok(b)) if a == b) {
            return Err(failed(format!(
                "nothing written to `{output}`: a composed spec's `use:` paths are relative to its file, so its planned copy must be in the same directory; --apply a file beside `{}`, or pass --in-place",
                report.path
            )));
        }
        let root = changes.iter().find(|c| c.file.is_none());
        let text = root.map_or(report.text.as_str(), |c| c.after.as_str());
        let edits = root.map(|c| c.edits.clone()).unwrap_or_default();
        return write_one(args, o, text, std::fs::read(o).ok(), edits);
    }
    let targets: Vec<(PathBuf, &FileChange)> = changes
        .iter()
        .map(|c| match c.file {
            None => (o.to_path_buf(), c),
            Some(_) => (PathBuf::from(&c.path), c),
        })
        .collect();
    let writes: Vec<(&Path, &[u8])> = targets
        .iter()
        .map(|(p, c)| (p.as_path(), c.after.as_bytes()))
        .collect();
    write_all_atomically(&writes).map_err(|(p, e)| {
        failed(format!(
            "nothing written: cannot write `{}`: {}",
            p.display(),
            io_reason(&e, Access::Write)
        ))
    })?;
    Ok(targets
        .into_iter()
        .map(|(p, c)| AppliedFile {
            path: p.display().to_string(),
            edits: c.edits.clone(),
        })
        .collect())
}

/// `--apply DIR` on a composed spec: a planned copy of the whole system in DIR, every file at
/// its place relative to the root's directory (the `use:` paths hold there), the plan's
/// edits in the files it changes and the others as they are. All files or none; a file of DIR
/// that exists and differs is kept unless `--force`.
fn apply_tree(
    args: &PlanArgs,
    report: &FileReport,
    changes: &[FileChange],
    dir: &Path,
) -> ApplyResult {
    let output = dir.display().to_string();
    let failed = |m: String| (AppliedStatus::Failed, m);
    let root_dir = report.path.rsplit_once('/').map_or("", |(d, _)| d);
    // Each file's path relative to the root's directory; one above it cannot be placed in DIR.
    let relative = |p: &str| -> Option<String> {
        let rest = match root_dir {
            "" => p,
            d => p.strip_prefix(d)?.strip_prefix('/')?,
        };
        (!rest.starts_with("../") && !rest.starts_with('/')).then(|| rest.to_string())
    };
    let name = Path::new(&report.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut writes: Vec<(PathBuf, &str, Vec<String>)> = vec![(
        dir.join(&name),
        changes
            .iter()
            .find(|c| c.file.is_none())
            .map_or(report.text.as_str(), |c| c.after.as_str()),
        changes
            .iter()
            .find(|c| c.file.is_none())
            .map(|c| c.edits.clone())
            .unwrap_or_default(),
    )];
    for (i, f) in report.files.files.iter().enumerate() {
        let Some(rel) = relative(&f.path) else {
            return Err(failed(format!(
                "nothing written to `{output}`: `{}` is outside the directory of `{}`, so a copy of the system in `{output}` would not find it; pass --in-place to write the plan into the files",
                f.path, report.path
            )));
        };
        let change = changes.iter().find(|c| c.file == Some(i));
        writes.push((
            dir.join(rel),
            change.map_or(f.text.as_str(), |c| c.after.as_str()),
            change.map(|c| c.edits.clone()).unwrap_or_default(),
        ));
    }
    // Files DIR holds already: the same bytes need no write; other bytes may be your edits.
    let mut pending = Vec::new();
    for (path, text, edits) in writes {
        match std::fs::read(&path) {
            Ok(bytes) if bytes == text.as_bytes() => continue,
            Ok(_) if !args.force => {
                return Err(failed(format!(
                    "nothing written: refusing to overwrite `{}`, which exists and differs (it may hold your edits); pass --force to replace it, or --apply another directory",
                    path.display()
                )));
            }
            _ => pending.push((path, text, edits)),
        }
    }
    for (path, _, _) in &pending {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| {
                failed(format!(
                    "nothing written: cannot create `{}`: {}",
                    d.display(),
                    io_reason(&e, Access::Write)
                ))
            })?;
        }
    }
    let bytes: Vec<(&Path, &[u8])> = pending
        .iter()
        .map(|(p, t, _)| (p.as_path(), t.as_bytes()))
        .collect();
    write_all_atomically(&bytes).map_err(|(p, e)| {
        failed(format!(
            "nothing written: cannot write `{}`: {}",
            p.display(),
            io_reason(&e, Access::Write)
        ))
    })?;
    Ok(pending
        .into_iter()
        .map(|(p, _, edits)| AppliedFile {
            path: p.display().to_string(),
            edits,
        })
        .collect())
}

/// The directory of a path as a path to open (`.` for a bare file name).
fn parent(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_bytes;
    use crate::label::FailOn;
    use crate::simulate;

    /// The exit code of a spec whose plan is verified, and of the same spec with a mechanism
    /// of its plan removed, which execution refutes: 1, as for a sink beyond its tolerance.
    #[test]
    fn a_refuted_plan_exits_1() {
        let text = include_str!("../../specs/wordcount.yaml");
        let report = check_bytes("wordcount.yaml", text.as_bytes(), &Options::default());
        let Outcome::Analysed(a) = &report.outcome else {
            panic!("the shipped spec is valid");
        };
        let plan = plan::plan(&a.dataflow, &plan::Options::default());
        assert_eq!(plan.status, Status::Repaired);
        let o = simulate::Options {
            schedules: 200,
            ..simulate::Options::default()
        };
        let held = verify::verify_plan(&a.dataflow, &plan, FailOn::default(), &o);
        let mut less = plan.clone();
        less.mechanisms.clear();
        let refuted = verify::verify_plan(&a.dataflow, &less, FailOn::default(), &o);
        let code = |simulation: Verification| {
            PlanOutcome {
                report: check_bytes("wordcount.yaml", text.as_bytes(), &Options::default()),
                plan: Some(plan.clone()),
                applied: None,
                simulation: Some(simulation),
            }
            .exit_code()
        };
        assert_eq!(code(held), EXIT_CLEAN);
        assert_eq!(code(refuted), EXIT_FINDINGS);
    }
}
