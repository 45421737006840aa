//! The command line: argument parsing, reading files, choosing a format, exit codes.
//! Everything that touches the outside world lives here (and in `main.rs`, which only calls
//! [`run`]).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::analysis::FailOn;
use crate::check::{self, EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, FileReport, Options, Outcome};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::report;
use crate::spec::Limits;

#[derive(Parser, Debug)]
#[command(
    name = "blazes",
    version,
    about = "Coordination analysis for dataflows: find where order matters, and the cheapest fix"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Analyse dataflow specs and report points of order and unsafe sinks.
    ///
    /// Exit status: 0 when every sink gets a label it tolerates (warnings allowed), 1 when
    /// some sink's label is worse than it tolerates, 2 when a spec cannot be read or is invalid.
    Check(CheckArgs),
    /// Draw the analysed dataflow as a graph (Graphviz DOT, or SVG through `dot`).
    ///
    /// Exit status: 0 when the graph was written, 2 when the spec is invalid or the output
    /// cannot be produced.
    Render(RenderArgs),
    /// Print the long explanation of a diagnostic code (`blazes explain C001`) or of a topic
    /// (`blazes explain plan`); without an argument, list every code.
    Explain {
        /// A code (`C001`), its name (`unordered-write`), or the topic `plan`.
        code: Option<String>,
    },
    /// Find the cheapest coordination (seals, keyed or global orders) that makes every sink
    /// meet its tolerance, and optionally write it into a copy of the spec.
    ///
    /// Exit status: 0 when the spec is ok or the plan repairs it, 1 when nothing in reach
    /// repairs it, 2 when the spec is invalid, the usage is wrong or the output cannot be
    /// written. `blazes explain plan` describes the cost model and the search.
    Plan(PlanArgs),
    /// Write a random, valid spec of a given size (for benchmarks and stress tests).
    Gen(GenArgs),
}

#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// Number of components.
    #[arg(long, default_value_t = 1000)]
    pub components: usize,
    /// Seed: the same seed gives the same spec.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share of components that take a back edge, closing a cycle (0 to 1).
    #[arg(long, default_value_t = 0.02)]
    pub cycles: f64,
    /// Share of replicated components (0 to 1).
    #[arg(long, default_value_t = 0.1)]
    pub replicated: f64,
    /// Write to this file instead of standard output (atomically).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Diagnostics with carets under the spec text, and a summary per file.
    Human,
    /// One versioned JSON document: labels, points of order, barriers, diagnostics.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands: inline annotations on a pull request.
    Github,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOnArg {
    Run,
    Inst,
    Diverge,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args, Debug, Clone)]
pub struct LimitArgs {
    /// Largest spec accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_bytes)]
    pub max_file_size: usize,
    /// Deepest nesting of YAML mappings and lists accepted.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_depth)]
    pub max_depth: usize,
    /// Most YAML nodes (scalars, lists, mappings) accepted.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_nodes)]
    pub max_nodes: usize,
    /// Most YAML events that aliases (`*name`) and merge keys may copy in total (alias
    /// expansion; bounds "billion laughs" specs).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_aliases)]
    pub max_aliases: usize,
    /// Most components in one spec.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_components)]
    pub max_components: usize,
    /// Most streams in one spec.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams)]
    pub max_streams: usize,
    /// Most attribute names in one gate, seal, order or sealable list.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_attributes)]
    pub max_attributes: usize,
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.max_file_size,
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
            max_aliases: self.max_aliases,
            max_components: self.max_components,
            max_streams: self.max_streams,
            max_attributes: self.max_attributes,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Spec files to check; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// How bad a sink's label must be to fail the check (a sink's own `tolerate` still wins).
    #[arg(long, value_enum, default_value_t = FailOnArg::Run)]
    pub fail_on: FailOnArg,
    /// Colour in human output.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Most results of `--format sarif` (default 5000, what GitHub code scanning shows of a
    /// run), or most annotations of each level of `--format github` (default 10, what GitHub
    /// shows per step). The most severe are kept; the output says how many were left out.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_results: Option<u64>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Reads a spec from a path (`-` is standard input), bounded by the size limit.
pub fn read_spec(path: &PathBuf, limits: &Limits) -> Result<(String, Vec<u8>), (String, String)> {
    let shown = if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let mut bytes = Vec::new();
    // Read one byte past the limit so an oversized input is detected without reading it all.
    let cap = limits.max_bytes as u64 + 1;
    let result = if path.as_os_str() == "-" {
        std::io::stdin().lock().take(cap).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(cap).read_to_end(&mut bytes))
    };
    match result {
        Ok(_) => Ok((shown, bytes)),
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
                _ => e.to_string(),
            };
            Err((shown, reason))
        }
    }
}

/// Checks every spec; unreadable files become invalid reports so the others still run.
pub fn check_files(specs: &[PathBuf], options: &Options) -> Vec<FileReport> {
    specs
        .iter()
        .map(|p| match read_spec(p, &options.limits) {
            Ok((shown, bytes)) => check::check_owned(&shown, bytes, options),
            Err((shown, reason)) => FileReport {
                path: shown.clone(),
                text: String::new(),
                outcome: Outcome::Invalid(vec![
                    Diagnostic::new(
                        &codes::UNREADABLE,
                        format!("cannot read `{shown}`: {reason}"),
                    )
                    .at(Span::new(0, 0), ""),
                ]),
            },
        })
        .collect()
}

fn use_color(c: Color) -> bool {
    match c {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

fn write_out(s: &str) {
    // A closed pipe (`blazes check ... | head`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

fn run_check(args: &CheckArgs) -> i32 {
    let options = Options {
        fail_on: match args.fail_on {
            FailOnArg::Run => FailOn::Run,
            FailOnArg::Inst => FailOn::Inst,
            FailOnArg::Diverge => FailOn::Diverge,
            FailOnArg::Never => FailOn::Never,
        },
        limits: args.limits.limits(),
        // Only the human format prints the provenance chains as notes (the others take what
        // they need from the points of order); on a big spec they are a quarter of the
        // analysis' memory.
        chain_notes: matches!(args.format, Format::Human),
    };
    let reports = check_files(&args.specs, &options);
    let text = match args.format {
        Format::Human => Some(report::human::render(
            &reports,
            report::human::Style {
                color: use_color(args.color),
                ..Default::default()
            },
        )),
        Format::Json => {
            // Written as it is serialised: on a big spec the document is hundreds of
            // megabytes, as much again as the analysis.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            // A closed pipe (`blazes check ... | head`) is not an error worth a panic.
            let _ = report::json::write(&reports, &mut out).and_then(|()| out.flush());
            None
        }
        Format::Sarif => {
            let cwd = std::env::current_dir().ok();
            let max = args
                .max_results
                .map_or(report::sarif::DEFAULT_MAX_RESULTS, |n| n as usize);
            // Written as it is serialised, like JSON.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let _ = report::sarif::write(&reports, cwd.as_deref(), max, &mut out)
                .and_then(|()| out.flush());
            None
        }
        Format::Github => Some(report::github::render_bounded(
            &reports,
            args.max_results
                .map_or(report::github::DEFAULT_MAX_PER_LEVEL, |n| n as usize),
        )),
    };
    if let Some(text) = text {
        write_out(&text);
    }
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

fn run_explain(code: Option<&str>) -> i32 {
    if code == Some("plan") {
        write_out(crate::plan::EXPLAIN);
        return EXIT_CLEAN;
    }
    match code {
        None => {
            let mut s = String::from("Diagnostic codes (`blazes explain CODE` for details):\n\n");
            for c in codes::ALL {
                s.push_str(&format!(
                    "  {}  {:<22} {:<7}  {}\n",
                    c.id,
                    c.name,
                    c.severity.as_str(),
                    c.summary
                ));
            }
            s.push_str("\nTopics:\n\n  plan  the cost model and search of `blazes plan`\n");
            write_out(&s);
            EXIT_CLEAN
        }
        Some(q) => match codes::find(q) {
            Some(c) => {
                write_out(&format!(
                    "{} ({}): {}\n\n{}\n",
                    c.id, c.name, c.summary, c.explanation
                ));
                EXIT_CLEAN
            }
            None => {
                let mut msg = format!("error: unknown diagnostic code `{q}`");
                let names = codes::ALL.iter().flat_map(|c| [c.id, c.name]);
                if let Some(s) = crate::spec::did_you_mean(q, names) {
                    msg.push_str(&format!("; did you mean `{s}`?"));
                }
                msg.push_str("\nrun `blazes explain` to list every code\n");
                eprint!("{msg}");
                EXIT_INVALID
            }
        },
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenderFormat {
    /// Graphviz DOT text (no external program needed).
    Dot,
    /// SVG, produced by Graphviz's `dot` program.
    Svg,
}

#[derive(clap::Args, Debug)]
pub struct RenderArgs {
    /// The spec to draw; `-` reads standard input.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RenderFormat::Dot)]
    pub format: RenderFormat,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also draw the mechanisms of `blazes plan` where they go: added seals, orders, seal barriers.
    #[arg(long)]
    pub plan: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Whether `out` names the same file as `spec` (so writing it would destroy the input).
fn same_file(out: &std::path::Path, spec: &std::path::Path) -> bool {
    match (std::fs::canonicalize(out), std::fs::canonicalize(spec)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// readers never see a half-written file and a failure leaves the old file intact.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the output path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.blazes-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn run_gen(args: &GenArgs) -> i32 {
    for (name, v) in [("--cycles", args.cycles), ("--replicated", args.replicated)] {
        if !(0.0..=1.0).contains(&v) {
            eprintln!("error: {name} must be between 0 and 1, got {v}");
            return EXIT_INVALID;
        }
    }
    if args.components == 0 {
        eprintln!("error: --components must be at least 1");
        return EXIT_INVALID;
    }
    let text = crate::generator::generate(&crate::generator::GenOptions {
        components: args.components,
        seed: args.seed,
        cycle_share: args.cycles,
        replicated_share: args.replicated,
        ..Default::default()
    });
    match &args.output {
        None => {
            write_out(&text);
            EXIT_CLEAN
        }
        Some(path) => match write_atomically(path, text.as_bytes()) {
            Ok(()) => EXIT_CLEAN,
            Err(e) => {
                eprintln!("error: cannot write `{}`: {e}", path.display());
                EXIT_INVALID
            }
        },
    }
}

fn run_render(args: &RenderArgs) -> i32 {
    if let Some(out) = &args.output
        && args.spec.as_os_str() != "-"
        && same_file(out, &args.spec)
    {
        eprintln!(
            "error: refusing to write the graph over the spec `{}`; choose another `-o` file",
            args.spec.display()
        );
        return EXIT_INVALID;
    }
    let options = Options {
        limits: args.limits.limits(),
        ..Options::default()
    };
    let report = check_files(std::slice::from_ref(&args.spec), &options)
        .pop()
        .expect("one spec in, one report out");
    let Outcome::Analysed(a) = &report.outcome else {
        // The diagnostics say why there is nothing to draw; stdout stays clean for the graph.
        let text = report::human::render(
            std::slice::from_ref(&report),
            report::human::Style {
                color: std::io::stderr().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
                ..Default::default()
            },
        );
        eprint!("{text}");
        return EXIT_INVALID;
    };
    let drawn = if args.plan {
        let plan = crate::plan::plan(&a.dataflow, &crate::plan::Options::default());
        crate::render::mechanisms(&a.dataflow, &plan)
    } else {
        Vec::new()
    };
    let dot = crate::render::to_dot(&a.dataflow, &a.analysis, &drawn);
    let bytes = match args.format {
        RenderFormat::Dot => dot.into_bytes(),
        RenderFormat::Svg => match crate::render::svg::dot_to_svg(&dot) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: cannot render SVG: {e}");
                return EXIT_INVALID;
            }
        },
    };
    match &args.output {
        Some(out) => {
            if let Err(e) = write_atomically(out, &bytes) {
                eprintln!("error: cannot write `{}`: {e}", out.display());
                return EXIT_INVALID;
            }
        }
        None => {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(&bytes);
            let _ = o.flush();
        }
    }
    EXIT_CLEAN
}

/// A panic is a bug in `blazes`, never the spec author's fault, and the default report (thread
/// names, `RUST_BACKTRACE` advice) reads like a crash log in their CI. Print one sentence that
/// says so instead; the backtrace only when `RUST_BACKTRACE` asks for it.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = what.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!(
            "error: internal error in blazes{at} ({what}); this is a bug in blazes, not in the spec: please report it with the spec that caused it"
        );
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            eprintln!("{}", std::backtrace::Backtrace::force_capture());
        }
    }));
}

/// Parses the arguments and runs; returns the exit status.
pub fn run() -> i32 {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // clap's own help and version requests are successes; usage errors are exit 2.
            return if e.use_stderr() {
                EXIT_INVALID
            } else {
                EXIT_CLEAN
            };
        }
    };
    match &cli.command {
        Command::Check(args) => run_check(args),
        Command::Render(args) => run_render(args),
        Command::Explain { code } => run_explain(code.as_deref()),
        Command::Plan(args) => run_plan(args),
        Command::Gen(args) => run_gen(args),
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanFormat {
    Human,
    Yaml,
    Json,
}

/// A kind of mechanism the plan may add (`--allow`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MechanismArg {
    /// `seal:` on a source that declares the key `sealable`.
    Seal,
    /// `order: [keys]` on a component.
    Keyed,
    /// `order: global` on a component.
    Global,
}

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// The spec to plan; `-` reads standard input.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Output format of the plan.
    #[arg(long, value_enum, default_value_t = PlanFormat::Human)]
    pub format: PlanFormat,
    /// Write the spec with the plan's mechanisms recorded in it to OUT (atomically). Refuses
    /// to overwrite SPEC unless --in-place is given.
    #[arg(long, value_name = "OUT")]
    pub apply: Option<PathBuf>,
    /// Allow writing the plan into SPEC itself (alone, it means `--apply SPEC`).
    #[arg(long)]
    pub in_place: bool,
    /// How bad a sink's label must be to need repair (a sink's own `tolerate` still wins).
    #[arg(long, value_enum, default_value_t = FailOnArg::Run)]
    pub fail_on: FailOnArg,
    /// Mechanisms the plan may add, comma-separated (e.g. `--allow seal,keyed` for a runtime
    /// without a sequencer).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_values_t = [MechanismArg::Seal, MechanismArg::Keyed, MechanismArg::Global]
    )]
    pub allow: Vec<MechanismArg>,
    /// Most candidate mechanisms the exact search (branch and bound) takes on; above it the
    /// plan is found greedily and says so. At most 63.
    #[arg(long, value_name = "N", default_value_t = crate::plan::EXACT_LIMIT as u8,
          value_parser = clap::value_parser!(u8).range(0..=63))]
    pub exact_limit: u8,
    /// Most analyses the exact search may run before it falls back to the greedy plan.
    #[arg(long, value_name = "N", default_value_t = crate::plan::EVALUATION_BUDGET)]
    pub exact_budget: usize,
    #[command(flatten)]
    pub limits: LimitArgs,
}

fn fail_on_of(a: FailOnArg) -> FailOn {
    match a {
        FailOnArg::Run => FailOn::Run,
        FailOnArg::Inst => FailOn::Inst,
        FailOnArg::Diverge => FailOn::Diverge,
        FailOnArg::Never => FailOn::Never,
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        _ => e.to_string(),
    }
}

fn run_plan(args: &PlanArgs) -> i32 {
    let stdin = args.spec.as_os_str() == "-";
    let out = match (&args.apply, args.in_place) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => Some(args.spec.clone()),
        (None, false) => None,
    };
    if let Some(o) = &out {
        if stdin && args.in_place {
            eprintln!("error: --in-place needs a spec file, not standard input");
            return EXIT_INVALID;
        }
        if !args.in_place && !stdin && same_file(&args.spec, o) {
            eprintln!(
                "error: refusing to overwrite the input spec `{}`; pass --in-place to edit it, or --apply another file",
                args.spec.display()
            );
            return EXIT_INVALID;
        }
    }
    let limits = args.limits.limits();
    let options = Options {
        fail_on: fail_on_of(args.fail_on),
        limits: limits.clone(),
        ..Options::default()
    };
    let report = check_files(std::slice::from_ref(&args.spec), &options)
        .pop()
        .expect("one report per spec");
    let analysed = match &report.outcome {
        Outcome::Analysed(a) => a,
        Outcome::Invalid(_) => {
            let text = report::human::render(
                std::slice::from_ref(&report),
                report::human::Style {
                    color: false,
                    ..Default::default()
                },
            );
            eprint!("{text}");
            return EXIT_INVALID;
        }
    };
    let plan_options = crate::plan::Options {
        fail_on: options.fail_on,
        allowed: crate::plan::Allowed {
            seal: args.allow.contains(&MechanismArg::Seal),
            keyed: args.allow.contains(&MechanismArg::Keyed),
            global: args.allow.contains(&MechanismArg::Global),
        },
        exact_limit: usize::from(args.exact_limit),
        evaluation_budget: args.exact_budget,
    };
    let plan = crate::plan::plan(&analysed.dataflow, &plan_options);
    let text = match args.format {
        PlanFormat::Human => report::plan_human::render(&report.path, &plan),
        PlanFormat::Json => report::plan_json::render(&report.path, &plan),
        PlanFormat::Yaml => report::plan_yaml::render(&report.path, &plan),
    };
    write_out(&text);
    let unrepairable = plan.status == crate::plan::Status::Unrepairable;
    if let Some(o) = out {
        if unrepairable {
            eprintln!(
                "error: nothing written to `{}`: the plan cannot repair this spec",
                o.display()
            );
            return EXIT_FINDINGS;
        }
        let edited =
            crate::plan::apply::apply_verified(&report.text, &plan, &limits, options.fail_on);
        let written = edited.and_then(|t| {
            write_atomically(&o, t.as_bytes())
                .map_err(|e| format!("cannot write `{}`: {}", o.display(), io_reason(&e)))
        });
        match written {
            Ok(()) => eprintln!("wrote the planned spec to `{}`", o.display()),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INVALID;
            }
        }
    }
    if unrepairable {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }
}
