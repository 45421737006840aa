//! The clap definition of every subcommand's arguments: what `--help`, the man pages and the
//! completion scripts are generated from. No behaviour here beyond turning arguments into the
//! library's options.

use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand, ValueEnum};

use crate::import::Engine;
use crate::label::FailOn;
use crate::lint::Target;
use crate::report::format::{self, CheckWrite, Format, PlanWrite};
use crate::spec::Limits;

#[derive(Parser, Debug)]
#[command(
    name = "blazes",
    version,
    about = "Coordination analysis for dataflows: find where order matters, and the cheapest fix"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Analyse dataflow specs and report points of order and unsafe sinks.
    ///
    /// With `--witness`, each unsafe sink also gets a witness from the simulator (see `blazes
    /// simulate`): two executions whose outputs at the sink differ.
    ///
    /// Exit status: 0 when every sink gets a label it tolerates (warnings allowed), 1 when
    /// some sink's label is worse than it tolerates or a denied warning is found (`--deny`,
    /// or the spec's `lint:`), 2 when a spec cannot be read or is invalid.
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
    /// Each plan is then verified by execution: the simulator runs the spec with the plan in
    /// force (1000 schedules by default) and fails the plan if some sink is observed worse
    /// than it tolerates, which would be a bug in blazes (`--no-simulate` skips it).
    ///
    /// Exit status, the worst over the specs: 0 when a spec is ok or the plan repairs it, 1
    /// when nothing in reach repairs it or the plan fails its verification (with `--check`,
    /// also when the plan would repair it: repairable but not repaired), 2 when a spec is
    /// invalid, the usage is wrong or an output cannot be written. `blazes explain plan`
    /// describes the cost model and the search.
    Plan(PlanArgs),
    /// Execute each spec's dataflow under adversarial delivery orders and replicas, and show,
    /// for every sink observed receiving different contents, a witness: the input records, the
    /// point of order, the deliveries there in two executions, and the two outputs.
    ///
    /// `docs/simulation.md` defines what is executed and observed. Exit status: 0 when every
    /// sink observed is within its tolerance, 1 when a witness shows a sink beyond it, 2 when
    /// a spec cannot be read or is invalid, or the usage is wrong.
    Simulate(SimulateArgs),
    /// Create on a NATS JetStream server the streams and buckets a spec's plan needs (with
    /// `--dry-run`, print them).
    ///
    /// The spec is planned as `blazes plan` does; the runtime reads the plan document and
    /// derives, per mechanism, the objects the JetStream mechanisms open, named after the
    /// spec. A second deployment of the same plan changes nothing; when the server holds an
    /// object of the plan with another configuration, or an object of this spec no mechanism
    /// uses any more, nothing is changed and the differences are reported.
    ///
    /// Exit status: 0 when the objects exist as planned (created or already there), 1 when
    /// the server differs from the plan or the plan cannot repair the spec, 2 when the spec is
    /// invalid, the usage is wrong, the server cannot be reached, or this binary was built
    /// without the `nats` feature.
    Deploy(super::deploy::DeployArgs),
    /// Print the grey box that behaves as each spec's dataflow: a `replicated:`/`paths:`
    /// block that can stand in for the module where a spec uses it (`use:`).
    ///
    /// Each input (a source of the spec) to each output (a sink) gets the annotation that
    /// gives the output the label the dataflow gives it, for every label of the inputs; when
    /// no annotation does (a seal made or consumed inside, an order-sensitive step after a
    /// consumed seal), why is printed on standard error.
    ///
    /// Exit status: 0 when every spec has a summary, 1 when some spec has none, 2 when a spec
    /// cannot be read or is invalid.
    Summarize(SummarizeArgs),
    /// Write a random, valid spec of a given size (for benchmarks and stress tests).
    Gen(GenArgs),
    /// Turn a topology a stream engine prints into an annotated spec: a Kafka Streams
    /// `Topology#describe()` text, a Flink `getExecutionPlan()` JSON, or a Storm Flux YAML file.
    ///
    /// Each operator is annotated from the engine's built-in catalogue and the user's
    /// (`--catalog`, whose entries come first), with a comment saying which entry produced the
    /// annotation and why; an operator no entry matches gets `OW` with gate `*` and a warning.
    /// Warnings go to standard error. `blazes check --from ENGINE FILE` imports and checks in one
    /// step, located in FILE; see docs/import.md.
    ///
    /// Exit status: 0 when the spec was written (warnings allowed), 2 when the file or the
    /// catalogue is invalid, the usage is wrong or the output cannot be written.
    Import(ImportArgs),
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

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum GenFormat {
    Yaml,
    Json,
}

#[derive(clap::Args, Debug)]
pub(crate) struct GenArgs {
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
    /// The spec's format: YAML, or the same spec as one JSON document (read faster).
    #[arg(long, value_enum, default_value_t = GenFormat::Yaml)]
    pub format: GenFormat,
    /// Write to this file instead of standard output (atomically).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The engines whose topology `import` and `--from` read are the library's: their names and
/// help come from [`Engine`], so that a new engine is added there alone.
impl ValueEnum for Engine {
    fn value_variants<'a>() -> &'a [Self] {
        &Engine::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.about()))
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct ImportArgs {
    /// The engine whose topology FILE is.
    #[arg(value_enum)]
    pub engine: Engine,
    /// The topology file; `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A user catalogue (YAML) whose entries override the built-in catalogue's.
    #[arg(long, value_name = "CATALOG")]
    pub catalog: Option<PathBuf>,
    /// Write the spec to OUT (atomically) instead of standard output. An existing OUT that
    /// differs is not replaced unless --force is given (it may hold your edits).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Replace an existing OUT.
    #[arg(long, requires = "output")]
    pub force: bool,
    /// Print, instead of the spec, why each component has its annotation: the catalogue
    /// entry or importer rule that gave it, with its reason, located in FILE.
    #[arg(long, conflicts_with = "output")]
    pub explain: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `--from ENGINE`: the files are topologies of ENGINE, imported before the analysis.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct FromArgs {
    /// Read each file as a topology of this engine (see `blazes import`) instead of a spec;
    /// diagnostics are located in the file.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub from: Option<Engine>,
    /// With --from: a user catalogue (YAML) whose entries override the built-in catalogue's.
    #[arg(long, value_name = "CATALOG", requires = "from")]
    pub catalog: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SimulateFormat {
    /// One located report per sink, with the witness's traces and outputs side by side.
    Human,
    /// One versioned JSON document for all the specs.
    Json,
}

#[derive(clap::Args, Debug)]
pub(crate) struct SimulateArgs {
    /// The specs to simulate; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    #[command(flatten)]
    pub run: ScheduleArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimulateFormat::Human)]
    pub format: SimulateFormat,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How the simulator runs: shared by `simulate`, `check --witness` and `plan`, which differ
/// only in their default number of schedules. The values are options so that a command can
/// tell a flag given from a default (`check` refuses them without `--witness`).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ScheduleArgs {
    /// Instances of each replicated component [default: 2].
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub replicas: Option<u8>,
    /// Most schedules to run: all of them when a spec has fewer, else this many random ones
    /// [default: 10000; `blazes plan`: 1000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub schedules: Option<u64>,
    /// Seed of the random schedules: the same seed gives the same output [default: 1].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Show each witness as found, without shrinking its input to the fewest records and
    /// its schedule to the fewest reorderings (faster; the witness is as valid, only longer).
    #[arg(long)]
    pub no_shrink: bool,
}

impl ScheduleArgs {
    /// The simulator's options, with `schedules` when `--schedules` is not given.
    pub(crate) fn options(&self, schedules: usize) -> crate::simulate::Options {
        let d = crate::simulate::Options::default();
        crate::simulate::Options {
            replicas: self.replicas.map_or(d.replicas, usize::from),
            schedules: self.schedules.map_or(schedules, |n| n as usize),
            seed: self.seed.unwrap_or(d.seed),
            shrink: !self.no_shrink,
            ..d
        }
    }

    /// The first of these flags given on the command line, as it is spelt there.
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (self.replicas.is_some(), "--replicas"),
            (self.schedules.is_some(), "--schedules"),
            (self.seed.is_some(), "--seed"),
            (self.no_shrink, "--no-shrink"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailOnArg {
    Run,
    Inst,
    Diverge,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Color {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct LimitArgs {
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
    pub(crate) fn limits(&self) -> Limits {
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

/// `--max-results`'s value: a positive count. Zero would print nothing, which no one asks
/// for on purpose; "no limit" is spelt as a large number, so 0 is a usage error that says so.
fn max_results(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err(
            "0 would show no finding; pass N >= 1 (a large N, such as 1000000, shows every finding)"
                .to_string(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a count: pass a whole number N >= 1")),
    }
}

/// `--deny` and `--allow`'s values.
fn lint_target(s: &str) -> Result<Target, String> {
    Target::parse(s)
}

#[derive(clap::Args, Debug)]
pub(crate) struct CheckArgs {
    /// Spec files to check; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = format::CHECK[0])]
    pub format: &'static Format<CheckWrite>,
    /// How bad the label of a sink that declares no `tolerate:` must be to fail the check; a
    /// sink's own `tolerate:` decides alone, whatever this says.
    #[arg(long, value_enum, default_value_t = FailOnArg::Run)]
    pub fail_on: FailOnArg,
    /// Colour in human output.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// Most findings shown in full: by `--format human` (default 50), as results of `--format
    /// sarif` (default 5000, what GitHub code scanning shows of a run), or as annotations of each
    /// level of `--format github` (default 10, what GitHub shows per step). The most severe are
    /// kept; the output says how many were left out. N is at least 1 (0 is refused: pass a
    /// large N to show everything).
    #[arg(long, value_name = "N", value_parser = max_results)]
    pub max_results: Option<u64>,
    /// Execute each spec's dataflow under adversarial schedules (as `blazes simulate` does)
    /// and attach to every unsafe sink (C004) its witness, or say that none was found.
    #[arg(long)]
    pub witness: bool,
    /// Make the warnings of CODE (an id, `C005`, or a name, `implicit-source`) errors that fail
    /// the check (exit status 1); `warnings` denies every warning. Repeatable; overrides the
    /// spec's `lint:`. A code beats `warnings`: `--deny warnings --allow C007`.
    #[arg(long, value_name = "CODE|warnings", value_parser = lint_target)]
    pub deny: Vec<Target>,
    /// Do not report the warnings of CODE (`warnings`: every warning). Errors are reported
    /// whatever it says. Repeatable; overrides the spec's `lint:`.
    #[arg(long, value_name = "CODE|warnings", value_parser = lint_target)]
    pub allow: Vec<Target>,
    #[command(flatten)]
    pub run: ScheduleArgs,
    #[command(flatten)]
    pub from: FromArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenderFormat {
    /// Graphviz DOT text (no external program needed).
    Dot,
    /// SVG, produced by Graphviz's `dot` program.
    Svg,
}

/// Output format of `blazes summarize`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummarizeFormat {
    /// The `paths:` block of each spec, under a comment naming it.
    Yaml,
    /// One versioned JSON document for all the specs.
    Json,
}

#[derive(clap::Args, Debug)]
pub(crate) struct SummarizeArgs {
    /// The specs (modules) to summarize; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummarizeFormat::Yaml)]
    pub format: SummarizeFormat,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(clap::Args, Debug)]
pub(crate) struct RenderArgs {
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
    /// Draw each top-level instance of a composed spec (`use:`, `dataflow:`) as one box with
    /// the summary of the file it uses and the points of order inside, instead of its
    /// components.
    #[arg(long, conflicts_with = "plan")]
    pub collapse: bool,
    /// How the drawn plan is chosen (with --plan), as for `blazes plan`.
    #[command(flatten)]
    pub choice: PlanChoiceArgs,
    #[command(flatten)]
    pub from: FromArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// A kind of mechanism the plan may add (`--allow`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MechanismArg {
    /// `seal:` on a source that declares the key `sealable`.
    Seal,
    /// `order: [keys]` on a component.
    Keyed,
    /// `order: global` on a component.
    Global,
}

#[derive(clap::Args, Debug)]
pub(crate) struct PlanArgs {
    /// The specs to plan; `-` reads standard input.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Output format of the plan (json and yaml: one versioned document for all the specs).
    #[arg(long, value_enum, default_value_t = format::PLAN[0])]
    pub format: &'static Format<PlanWrite>,
    /// Write the spec with the plan's mechanisms recorded in it to OUT (atomically; one spec
    /// only), in the spec's own syntax (a JSON spec stays JSON). Refuses to overwrite SPEC
    /// unless --in-place is given, and an existing OUT that differs unless --force is given
    /// (it may hold your edits). For a composed spec, OUT ending in `/` (or an existing
    /// directory) receives a planned copy of the whole system; a file OUT is a copy of the
    /// root beside it, for a plan that changes the root alone.
    #[arg(long, value_name = "OUT", conflicts_with = "from")]
    pub apply: Option<PathBuf>,
    /// Replace an existing --apply OUT that differs from the planned spec.
    #[arg(long, requires = "apply")]
    pub force: bool,
    /// Write each spec's plan into the spec itself (alone, with one spec, it means
    /// `--apply SPEC`); for a composed spec, each mechanism into the file that declares its
    /// component, source or stream, all files or none.
    #[arg(long, conflicts_with = "from")]
    pub in_place: bool,
    /// For CI, like `cargo fmt --check`: exit 1 also when a spec is repairable but not
    /// repaired (the plan adds coordination the spec does not have yet), and say so on
    /// standard error. Writes nothing.
    #[arg(long, conflicts_with_all = ["apply", "in_place"])]
    pub check: bool,
    #[command(flatten)]
    pub choice: PlanChoiceArgs,
    /// Skip the verification of each plan by execution (the simulator run on the repaired
    /// spec, which fails the plan when some sink is observed worse than it tolerates).
    #[arg(long)]
    pub no_simulate: bool,
    #[command(flatten)]
    pub run: ScheduleArgs,
    #[command(flatten)]
    pub from: FromArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// What decides which plan is chosen: the same flags for `plan`, `render --plan` and
/// `deploy`, so that the plan drawn or deployed is the plan `blazes plan` printed.
#[derive(clap::Args, Debug)]
pub(crate) struct PlanChoiceArgs {
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
    /// plan is found greedily and says so. Any number: the search stays within
    /// --exact-budget, and a search the budget stops falls back to the greedy plan and says so.
    #[arg(long, value_name = "N", default_value_t = crate::plan::EXACT_LIMIT)]
    pub exact_limit: usize,
    /// Most analyses the exact search may run before it falls back to the greedy plan.
    #[arg(long, value_name = "N", default_value_t = crate::plan::EVALUATION_BUDGET)]
    pub exact_budget: usize,
}

impl PlanChoiceArgs {
    /// The planner's options these flags stand for.
    pub fn options(&self) -> crate::plan::Options {
        crate::plan::Options {
            fail_on: self.fail_on.into(),
            allowed: crate::plan::Allowed {
                seal: self.allow.contains(&MechanismArg::Seal),
                keyed: self.allow.contains(&MechanismArg::Keyed),
                global: self.allow.contains(&MechanismArg::Global),
            },
            exact_limit: self.exact_limit,
            evaluation_budget: self.exact_budget,
        }
    }
}

impl From<FailOnArg> for FailOn {
    fn from(a: FailOnArg) -> FailOn {
        match a {
            FailOnArg::Run => FailOn::Run,
            FailOnArg::Inst => FailOn::Inst,
            FailOnArg::Diverge => FailOn::Diverge,
            FailOnArg::Never => FailOn::Never,
        }
    }
}

/// The registry of output formats a `--format` chooses from.
pub(crate) trait Registry: Sized + 'static {
    fn registry() -> &'static [&'static Format<Self>];
}

impl Registry for CheckWrite {
    fn registry() -> &'static [&'static Format<Self>] {
        format::CHECK
    }
}

impl Registry for PlanWrite {
    fn registry() -> &'static [&'static Format<Self>] {
        format::PLAN
    }
}

/// `--format` offers the formats of a registry, by name, with their help.
impl<W: Registry> ValueEnum for &'static Format<W> {
    fn value_variants<'a>() -> &'a [Self] {
        W::registry()
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.name);
        Some(match self.help {
            Some(help) => value.help(help),
            None => value,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::spec::Limit;

    /// Each limit's S011 names a flag `check` takes, with the value name its help shows.
    #[test]
    fn every_limit_names_a_flag_of_the_cli() {
        let cli = Cli::command();
        let check = cli.find_subcommand("check").expect("check is a subcommand");
        for limit in Limit::ALL {
            let arg = check
                .get_arguments()
                .find(|a| a.get_long().map(|l| format!("--{l}")).as_deref() == Some(limit.flag()))
                .unwrap_or_else(|| panic!("{limit:?}: no {} on check", limit.flag()));
            let names: Vec<String> = arg
                .get_value_names()
                .unwrap_or_default()
                .iter()
                .map(|n| n.to_string())
                .collect();
            assert_eq!(names, [limit.value_name()], "{limit:?}");
        }
    }

    /// `import`'s ENGINE accepts every engine by its name, and nothing else.
    #[test]
    fn the_engines_of_the_cli_are_the_library_s() {
        for e in Engine::ALL {
            let cli = Cli::try_parse_from(["blazes", "import", e.name(), "t.txt"]).unwrap();
            let Command::Import(args) = cli.command else {
                panic!("not import")
            };
            assert_eq!(args.engine, e);
        }
        assert!(Cli::try_parse_from(["blazes", "import", "spark", "t.txt"]).is_err());
    }
}
