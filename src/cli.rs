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
    /// One graph per spec: on standard output, consecutive `digraph`s (DOT only; `dot` reads
    /// them all); with `-o FILE`, one spec into FILE, its format from the extension (.dot,
    /// .gv, .svg) unless `--format` says it; with `-o DIR/`, one file per spec, named after it.
    /// An invalid spec's diagnostics go to standard error (standard output carries only
    /// graphs); the other specs are still drawn.
    ///
    /// Exit status: 0 when every graph was written, 2 when a spec is invalid, the usage is
    /// wrong or an output cannot be produced.
    Render(RenderArgs),
    /// Print the long explanation of a diagnostic code (`blazes explain C001`) or of a topic
    /// (`blazes explain OW`); without an argument, list every code and topic.
    Explain {
        /// A code (`C001`), its name (`unordered-write`), or a topic: labels, CR, CW, OR, OW,
        /// seal, gate, order, tolerate, plan.
        code: Option<String>,
    },
    /// Find the cheapest coordination (seals, keyed or global orders) that makes every sink
    /// meet its tolerance, and optionally write it into a copy of the spec.
    ///
    /// Several specs give one report (JSON and YAML: one versioned document with a `files`
    /// array); an invalid spec is reported in it, with its diagnostics, like `blazes check`.
    ///
    /// Exit status, the worst over the specs: 0 when a spec is ok or the plan repairs it, 1
    /// when nothing in reach repairs it, 2 when a spec is invalid, the usage is wrong or an
    /// output cannot be written. `blazes explain plan` describes the cost model and the search.
    Plan(PlanArgs),
    /// Write a random, valid spec of a given size (for benchmarks and stress tests).
    Gen(GenArgs),
    /// Print a shell completion script to standard output.
    ///
    /// For example: `blazes completions bash > ~/.local/share/bash-completion/completions/blazes`,
    /// `blazes completions zsh > ~/.zfunc/_blazes` (with `~/.zfunc` in `fpath`),
    /// `blazes completions fish > ~/.config/fish/completions/blazes.fish`.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) to standard output: `blazes(1)`, or `blazes-COMMAND(1)`.
    ///
    /// For example: `blazes man | man -l -`, or
    /// `blazes man > ~/.local/share/man/man1/blazes.1` and
    /// `blazes man check > ~/.local/share/man/man1/blazes-check.1`.
    Man {
        /// A subcommand whose page to print (`check`, `plan`, ...) instead of the main page.
        command: Option<String>,
    },
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
    /// How bad the label of a sink that declares no `tolerate:` must be to fail the check; a
    /// sink's own `tolerate:` decides alone, whatever this says.
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
    if args.specs.iter().filter(|s| s.as_os_str() == "-").count() > 1 {
        eprintln!("error: `-` is given more than once, but standard input can be read only once");
        return EXIT_INVALID;
    }
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

fn run_explain(query: Option<&str>) -> i32 {
    let Some(q) = query else {
        write_out(&crate::topics::index());
        return EXIT_CLEAN;
    };
    // Topics first: `gate` is both a topic and the name of S004, which its id still reaches.
    if let Some(t) = crate::topics::find(q) {
        write_out(&crate::topics::page(t));
        return EXIT_CLEAN;
    }
    if let Some(c) = codes::find(q) {
        write_out(&format!(
            "{} ({}): {}\n\n{}\n",
            c.id, c.name, c.summary, c.explanation
        ));
        return EXIT_CLEAN;
    }
    let mut msg = format!("error: unknown diagnostic code or topic `{q}`");
    let names = codes::ALL
        .iter()
        .flat_map(|c| [c.id, c.name])
        .chain(crate::topics::ALL.iter().map(|t| t.name));
    if let Some(s) = crate::spec::did_you_mean(q, names) {
        msg.push_str(&format!("; did you mean `{s}`?"));
    }
    msg.push_str("\nrun `blazes explain` to list every code and topic\n");
    eprint!("{msg}");
    EXIT_INVALID
}

fn write_bytes(b: &[u8]) {
    // A closed pipe (`blazes man | head`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b);
    let _ = out.flush();
}

fn run_man(command: Option<&str>) -> i32 {
    match crate::manual::man_page(command) {
        Some(page) => {
            write_bytes(&page);
            EXIT_CLEAN
        }
        None => {
            let q = command.unwrap_or_default();
            let names = crate::manual::commands();
            let hint = crate::spec::did_you_mean(q, names.iter().map(String::as_str))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            eprintln!(
                "error: `{q}` is not a blazes command{hint}; the commands are: {}",
                names.join(", ")
            );
            EXIT_INVALID
        }
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
    /// The specs to draw, one graph each; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format [default: from the extension of `-o FILE`, else dot]. Contradicting the
    /// extension of `-o FILE` is an error.
    #[arg(long, value_enum)]
    pub format: Option<RenderFormat>,
    /// Write to FILE (atomically) instead of standard output; the extension (.dot, .gv, .svg)
    /// sets the format. With a directory, written with a trailing slash (`-o DIR/`, created if
    /// missing), write one file per spec, named after the spec (`specs/wordcount.yaml` ->
    /// `DIR/wordcount.dot`).
    #[arg(short, long, value_name = "FILE|DIR/")]
    pub output: Option<PathBuf>,
    /// Draw the spec as `blazes plan` leaves it: the labels once the plan is applied, the
    /// mechanisms it adds marked `+` (dashed), and a legend.
    #[arg(long)]
    pub plan: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// A usage error: one sentence on standard error, exit 2.
fn usage_error(message: &str) -> i32 {
    eprintln!("error: {message}");
    EXIT_INVALID
}

impl RenderFormat {
    fn extension(self) -> &'static str {
        match self {
            RenderFormat::Dot => "dot",
            RenderFormat::Svg => "svg",
        }
    }

    fn name(self) -> &'static str {
        match self {
            RenderFormat::Dot => "DOT",
            RenderFormat::Svg => "SVG",
        }
    }
}

/// The format a file extension names: `Ok(None)` without an extension, `Err` for one that
/// names no format `blazes render` writes.
fn format_of_extension(path: &std::path::Path) -> Result<Option<RenderFormat>, String> {
    match path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
    {
        None => Ok(None),
        Some(e) if e == "dot" || e == "gv" => Ok(Some(RenderFormat::Dot)),
        Some(e) if e == "svg" => Ok(Some(RenderFormat::Svg)),
        Some(e) => Err(e),
    }
}

/// Whether `-o` names a directory: written with a trailing separator. An existing directory
/// named without one is refused rather than guessed at (see [`render_target`]).
fn names_directory(path: &std::path::Path) -> bool {
    let s = path.as_os_str().to_string_lossy();
    s.ends_with('/') || s.ends_with(std::path::MAIN_SEPARATOR)
}

/// Where `blazes render` writes each spec's graph.
enum RenderTarget {
    Stdout,
    /// One file per spec, same order as the specs.
    Files(Vec<PathBuf>),
}

/// Checks the combination of specs, `-o` and `--format`; returns the format and where each
/// graph goes, or the usage error.
fn render_target(args: &RenderArgs) -> Result<(RenderFormat, RenderTarget), String> {
    let n = args.specs.len();
    let Some(out) = &args.output else {
        let format = args.format.unwrap_or(RenderFormat::Dot);
        if n > 1 && format == RenderFormat::Svg {
            return Err(format!(
                "{n} SVG documents cannot share standard output; give `-o DIR/` to write one file per spec"
            ));
        }
        return Ok((format, RenderTarget::Stdout));
    };
    if names_directory(out) {
        let format = args.format.unwrap_or(RenderFormat::Dot);
        let mut files: Vec<PathBuf> = Vec::with_capacity(n);
        for spec in &args.specs {
            let Some(stem) = spec.file_stem().filter(|_| spec.as_os_str() != "-") else {
                return Err(format!(
                    "`{}` has no file name to name its graph after in `{}`; use `-o FILE` for it",
                    spec.display(),
                    out.display()
                ));
            };
            let file = out.join(format!("{}.{}", stem.to_string_lossy(), format.extension()));
            if let Some(i) = files.iter().position(|f| *f == file) {
                return Err(format!(
                    "`{}` and `{}` would both be drawn into `{}`; render them into different directories",
                    args.specs[i].display(),
                    spec.display(),
                    file.display()
                ));
            }
            files.push(file);
        }
        return Ok((format, RenderTarget::Files(files)));
    }
    if out.is_dir() {
        return Err(format!(
            "cannot write the graph to `{}`: it is a directory; write `{}/` to put one file per spec in it",
            out.display(),
            out.display()
        ));
    }
    if n > 1 {
        return Err(format!(
            "`-o {}` names one file but {n} specs were given; use `-o DIR/` for one file per spec, or no `-o` for all the graphs on standard output",
            out.display()
        ));
    }
    let format = match (format_of_extension(out), args.format) {
        (Ok(Some(by_ext)), Some(given)) if by_ext != given => {
            return Err(format!(
                "`--format {}` contradicts the extension of `{}`, which means {}; drop one of them",
                given.extension(),
                out.display(),
                by_ext.name()
            ));
        }
        (Ok(by_ext), given) => given.or(by_ext).unwrap_or(RenderFormat::Dot),
        (Err(_), Some(given)) => given,
        (Err(ext), None) => {
            return Err(format!(
                "cannot tell the format of `{}` from its extension `.{ext}`; name it .dot, .gv or .svg, or pass --format dot or --format svg",
                out.display()
            ));
        }
    };
    Ok((format, RenderTarget::Files(vec![out.clone()])))
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
    // Said first: whatever else is wrong with `-o`, this is the mistake that would cost data.
    if let Some(out) = &args.output
        && let Some(spec) = args
            .specs
            .iter()
            .find(|s| s.as_os_str() != "-" && same_file(out, s))
    {
        return usage_error(&format!(
            "refusing to write the graph over the spec `{}`; choose another `-o` file",
            spec.display()
        ));
    }
    let (format, target) = match render_target(args) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    if let RenderTarget::Files(files) = &target {
        // Inside `-o DIR/`, a graph's name may be a spec's (`DIR/g.dot` from `DIR/g.dot`).
        for out in files {
            if let Some(spec) = args
                .specs
                .iter()
                .find(|s| s.as_os_str() != "-" && same_file(out, s))
            {
                return usage_error(&format!(
                    "refusing to write the graph over the spec `{}`; choose another `-o` file",
                    spec.display()
                ));
            }
        }
        if let Some(out) = &args.output
            && names_directory(out)
            && let Err(e) = std::fs::create_dir_all(out)
        {
            eprintln!(
                "error: cannot create the directory `{}`: {}",
                out.display(),
                io_reason(&e)
            );
            return EXIT_INVALID;
        }
    }
    let options = Options {
        limits: args.limits.limits(),
        ..Options::default()
    };
    let stderr_color = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut code = EXIT_CLEAN;
    for (n, spec) in args.specs.iter().enumerate() {
        let report = check_files(std::slice::from_ref(spec), &options)
            .pop()
            .expect("one spec in, one report out");
        let Outcome::Analysed(a) = &report.outcome else {
            // Standard output carries only graphs (it is piped into `dot`): the diagnostics
            // that say why there is nothing to draw go to standard error.
            let text = report::human::render(
                std::slice::from_ref(&report),
                report::human::Style {
                    color: stderr_color,
                    ..Default::default()
                },
            );
            eprint!("{text}");
            code = code.max(EXIT_INVALID);
            continue;
        };
        let dot = if args.plan {
            let plan = crate::plan::plan(&a.dataflow, &crate::plan::Options::default());
            crate::render::plan_dot(&a.dataflow, &plan, options.fail_on)
        } else {
            crate::render::to_dot(&a.dataflow, &a.analysis, &[])
        };
        let bytes = match format {
            RenderFormat::Dot => dot.into_bytes(),
            RenderFormat::Svg => match crate::render::svg::dot_to_svg(&dot) {
                Ok(b) => b,
                Err(e @ crate::render::svg::SvgError::DotMissing) => {
                    // Every other spec would fail the same way.
                    eprintln!("error: cannot render SVG: {e}");
                    return EXIT_INVALID;
                }
                Err(e) => {
                    eprintln!("error: cannot render SVG of `{}`: {e}", report.path);
                    code = code.max(EXIT_INVALID);
                    continue;
                }
            },
        };
        match &target {
            RenderTarget::Files(files) => {
                let out = &files[n];
                if let Err(e) = write_atomically(out, &bytes) {
                    eprintln!("error: cannot write `{}`: {}", out.display(), io_reason(&e));
                    code = code.max(EXIT_INVALID);
                }
            }
            RenderTarget::Stdout => {
                let mut o = std::io::stdout().lock();
                // A closed pipe (`blazes render ... | head`) is not an error worth a panic.
                let _ = o.write_all(&bytes);
                let _ = o.flush();
            }
        }
    }
    code
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
        Command::Completions { shell } => {
            write_bytes(&crate::manual::completions(*shell));
            EXIT_CLEAN
        }
        Command::Man { command } => run_man(command.as_deref()),
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
    /// The specs to plan; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format of the plan (json and yaml: one versioned document for all the specs).
    #[arg(long, value_enum, default_value_t = PlanFormat::Human)]
    pub format: PlanFormat,
    /// Write the spec with the plan's mechanisms recorded in it to OUT (atomically; one spec
    /// only), in the spec's own syntax (a JSON spec stays JSON). Refuses to overwrite SPEC
    /// unless --in-place is given.
    #[arg(long, value_name = "OUT")]
    pub apply: Option<PathBuf>,
    /// Write each spec's plan into the spec itself (alone, with one spec, it means
    /// `--apply SPEC`).
    #[arg(long)]
    pub in_place: bool,
    /// How bad the label of a sink that declares no `tolerate:` must be to need repair; a
    /// sink's own `tolerate:` decides alone, whatever this says.
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

/// One spec of `blazes plan`: its report, its plan when it is valid, what `--apply` did.
struct PlanOutcome {
    report: FileReport,
    plan: Option<crate::plan::Plan>,
    applied: Option<report::plan_json::Applied>,
}

impl PlanOutcome {
    fn exit_code(&self) -> i32 {
        use report::plan_json::AppliedStatus;
        match &self.plan {
            None => EXIT_INVALID,
            Some(_) if self.applied.as_ref().map(|a| a.status) == Some(AppliedStatus::Failed) => {
                EXIT_INVALID
            }
            Some(p) if p.status == crate::plan::Status::Unrepairable => EXIT_FINDINGS,
            Some(_) => EXIT_CLEAN,
        }
    }
}

/// Checks the combination of specs, `--apply` and `--in-place`; returns where each spec's
/// plan is written (if anywhere), or the usage error.
fn plan_outputs(args: &PlanArgs) -> Result<Vec<Option<PathBuf>>, String> {
    let n = args.specs.len();
    if args.in_place
        && let Some(s) = args.specs.iter().find(|s| s.as_os_str() == "-")
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
            if !args.in_place && spec.as_os_str() != "-" && same_file(spec, out) {
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

fn run_plan(args: &PlanArgs) -> i32 {
    use report::plan_json::{Applied, AppliedStatus, PlannedFile};
    let outputs = match plan_outputs(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let limits = args.limits.limits();
    let options = Options {
        fail_on: fail_on_of(args.fail_on),
        limits: limits.clone(),
        ..Options::default()
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
    let mut outcomes: Vec<PlanOutcome> = Vec::with_capacity(args.specs.len());
    for (spec, out) in args.specs.iter().zip(outputs) {
        let report = check_files(std::slice::from_ref(spec), &options)
            .pop()
            .expect("one report per spec");
        let plan = match &report.outcome {
            Outcome::Analysed(a) => Some(crate::plan::plan(&a.dataflow, &plan_options)),
            Outcome::Invalid(_) => None,
        };
        let applied = match (&plan, out) {
            (Some(plan), Some(o)) => {
                let output = o.display().to_string();
                Some(if plan.status == crate::plan::Status::Unrepairable {
                    let message =
                        format!("nothing written to `{output}`: the plan cannot repair this spec");
                    eprintln!("error: {message}");
                    Applied {
                        output,
                        status: AppliedStatus::Skipped,
                        message: Some(message),
                    }
                } else {
                    let edited = crate::plan::apply::apply_verified(
                        &report.text,
                        plan,
                        &limits,
                        options.fail_on,
                    );
                    // Rewriting an unchanged file would still bump its modification time and
                    // trigger watchers and rebuilds for nothing.
                    let unchanged = args.in_place && edited.as_deref() == Ok(report.text.as_str());
                    let written = edited.and_then(|t| match unchanged {
                        true => Ok(()),
                        false => write_atomically(&o, t.as_bytes())
                            .map_err(|e| format!("cannot write `{output}`: {}", io_reason(&e))),
                    });
                    match written {
                        Ok(()) if unchanged => {
                            eprintln!("`{output}` needs no change; left as it is");
                            Applied {
                                output,
                                status: AppliedStatus::Unchanged,
                                message: None,
                            }
                        }
                        Ok(()) => {
                            eprintln!("wrote the planned spec to `{output}`");
                            Applied {
                                output,
                                status: AppliedStatus::Written,
                                message: None,
                            }
                        }
                        Err(e) => {
                            eprintln!("error: {e}");
                            Applied {
                                output,
                                status: AppliedStatus::Failed,
                                message: Some(e),
                            }
                        }
                    }
                })
            }
            _ => None,
        };
        outcomes.push(PlanOutcome {
            report,
            plan,
            applied,
        });
    }
    let files: Vec<PlannedFile> = outcomes
        .iter()
        .map(|o| PlannedFile {
            path: &o.report.path,
            text: &o.report.text,
            diagnostics: o.report.diagnostics(),
            plan: o.plan.as_ref(),
            applied: o.applied.as_ref(),
        })
        .collect();
    let text = match args.format {
        PlanFormat::Human => {
            let mut s = String::new();
            for o in &outcomes {
                match &o.plan {
                    Some(plan) => s.push_str(&report::plan_human::render(&o.report.path, plan)),
                    None => s.push_str(&report::human::render(
                        std::slice::from_ref(&o.report),
                        report::human::Style {
                            color: use_color(Color::Auto),
                            ..Default::default()
                        },
                    )),
                }
            }
            s
        }
        PlanFormat::Json => report::plan_json::render_files(&files),
        PlanFormat::Yaml => report::plan_yaml::render_files(&files),
    };
    write_out(&text);
    outcomes
        .iter()
        .map(PlanOutcome::exit_code)
        .max()
        .unwrap_or(EXIT_CLEAN)
}
