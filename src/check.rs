//! One file through the whole pipeline: bytes -> spec -> dataflow -> analysis.
//!
//! This is the library's entry point for `blazes check` and everything built on it: the CLI
//! reads the bytes, calls [`check_bytes`], and hands the [`FileReport`] to a `report` format.

use crate::analysis::{self, Analysis, FailOn};
use crate::compose::{self, Files, Loader};
use crate::diagnostic::{self, Diagnostic, Severity, Span};
use crate::graph::{self, Dataflow};
use crate::lint::Lints;
use crate::plan;
use crate::spec::{self, Limits};

/// How to check a spec: the failure threshold, the resource limits, and whether findings
/// carry their provenance notes. `Default` is what `blazes check` does without flags.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    pub fail_on: FailOn,
    pub limits: Limits,
    /// Findings carry their provenance chain as related notes (see
    /// [`analysis::analyze_with`]); a report format that prints no notes can do without.
    pub chain_notes: bool,
    /// `--deny`/`--allow`: which warnings fail the check or are not reported. They apply after
    /// the spec's own `lint:` and override it.
    pub lints: Lints,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fail_on: FailOn::default(),
            limits: Limits::default(),
            chain_notes: true,
            lints: Lints::default(),
        }
    }
}

blazes_plan::setters!(Options {
    /// Which sink verdicts fail the check (`--fail-on`).
    fail_on: FailOn,
    /// The resource limits (`--max-components` and the others).
    limits: Limits,
    /// Whether findings carry their provenance chain as related notes.
    chain_notes: bool,
    /// `--deny`/`--allow`: which warnings fail the check or are not reported.
    lints: Lints,
});

/// What checking a spec gave: diagnostics only, or the analysed dataflow.
#[derive(Debug)]
pub enum Outcome {
    /// The spec could not be read or is invalid: only diagnostics (all errors of the file).
    Invalid(Vec<Diagnostic>),
    Analysed(Box<Analysed>),
}

/// A spec that was read and analysed. The [`Spec`](spec::Spec) itself is not kept: the dataflow has all
/// of it that the reports need, and on a big input it is as large (`blazes plan --apply`
/// reads the text again for its spans).
#[derive(Debug)]
pub struct Analysed {
    pub dataflow: Dataflow,
    pub analysis: Analysis,
    /// Analysis diagnostics, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
    /// The codes of the warnings the lint settings denied (each once, sorted): reported as
    /// errors, they fail the check like an unsafe sink.
    pub denied: Vec<&'static str>,
    /// For a composed spec, the summary of each file it uses (in the order they were read).
    pub summaries: Vec<ModuleSummary>,
}

/// The summary of a used file: the grey box that behaves as its dataflow (section 10 of the
/// algebra), as it is written; the `order:` and `replicas:` of each composite using it apply
/// on top.
#[derive(Debug)]
pub struct ModuleSummary {
    /// The file's path as the `use:` makes it.
    pub file: String,
    /// The instances of it in the expanded graph (`Eu.Billing`).
    pub instances: Vec<String>,
    /// Its inputs (sources) and outputs (sinks), by name.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub summary: crate::analysis::summary::Summary,
    /// The instances that the composites around them coordinate (`order:`, `replicas:`), by
    /// that coordination, each group with the summary of the file under it: the grey box the
    /// instance behaves as, where `summary` is the file's as written.
    pub coordinated: Vec<Coordinated>,
    /// The points of order the file has checked on its own, by component name and path index:
    /// a point of an instance that is not among them exists only because of how the outer
    /// graph feeds the instance.
    pub points: Vec<(String, usize)>,
}

/// Instances of a used file under one coordination, and the file's summary with it applied.
#[derive(Debug)]
pub struct Coordinated {
    pub instances: Vec<String>,
    /// What the composites put on the instances, innermost first (only those that change
    /// something).
    pub coordination: Vec<compose::Coordination>,
    pub summary: crate::analysis::summary::Summary,
}

impl Coordinated {
    /// The coordination as the specs write it, innermost first: `` `replicas: 2` ``.
    pub fn describe(&self) -> String {
        self.coordination
            .iter()
            .map(compose::Coordination::describe)
            .collect::<Vec<_>>()
            .join(" inside ")
    }
}

impl Analysed {
    /// Whether the check fails: a sink fails, or a denied warning was found.
    pub fn failed(&self) -> bool {
        self.analysis.failing() || !self.denied.is_empty()
    }
}

/// The result of checking one spec: what every report format reads.
#[derive(Debug)]
pub struct FileReport {
    /// The path as the user wrote it (`<stdin>` for standard input).
    pub path: String,
    /// The spec text (lossily decoded when it was not UTF-8), for snippets.
    pub text: String,
    pub outcome: Outcome,
    /// The files a composed spec uses and where each span is (empty for a flat spec: every
    /// span is in `text`). Formats locate spans through [`FileReport::locate`].
    pub files: Files,
    /// What the file is: a spec, or with `--from` a topology (or the catalogue that failed).
    pub input: crate::spec::Input,
}

/// Exit status of a spec whose sinks all pass. The statuses are ripgrep's: 0 clean, 1
/// findings, 2 errors.
pub const EXIT_CLEAN: i32 = 0;
/// A sink fails, a denied warning was found (or a plan is unrepairable).
pub const EXIT_FINDINGS: i32 = 1;
/// The spec is invalid, or could not be read or written.
pub const EXIT_INVALID: i32 = 2;

impl FileReport {
    /// `blazes check`'s exit status for this spec: [`EXIT_CLEAN`], [`EXIT_FINDINGS`] or
    /// [`EXIT_INVALID`].
    pub fn exit_code(&self) -> i32 {
        match &self.outcome {
            Outcome::Invalid(_) => EXIT_INVALID,
            Outcome::Analysed(a) if a.failed() => EXIT_FINDINGS,
            Outcome::Analysed(_) => EXIT_CLEAN,
        }
    }

    /// The file, its text and the span in it of a span of this report: for a composed spec, the
    /// used file an instance's node was written in.
    pub fn locate(&self, span: Span) -> (&str, &str, Span) {
        if !self.files.is_composed() {
            return (&self.path, &self.text, span);
        }
        let l = self.files.locate(span);
        (
            self.files.path(l.file, &self.path),
            self.files.text(l.file, &self.text),
            l.span,
        )
    }

    /// Where a span of a used file was used from, innermost first, as the formats say it:
    /// "in `services/billing.yaml`, used as `Billing` by `system.yaml:12`". `None` for a span of
    /// the root file.
    pub fn used_from(&self, span: Span) -> Option<String> {
        if !self.files.is_composed() {
            return None;
        }
        let l = self.files.locate(span);
        let file = l.file?;
        let mut out = format!("in `{}`", self.files.files[file].path);
        for (instance, parent, at) in self.files.chain(l.region) {
            let text = self.files.text(parent, &self.text);
            let line = crate::diagnostic::LineIndex::new(text)
                .line_col(text, at.offset)
                .0;
            // The name the using file gives it (the region holds the whole instance path).
            let local = instance.rsplit('.').next().unwrap_or(instance);
            out.push_str(&format!(
                ", used as `{local}` by `{}:{line}`",
                self.files.path(parent, &self.path)
            ));
        }
        Some(out)
    }

    /// Every diagnostic of the spec (the reader's, the graph's and the analysis'), sorted by
    /// position.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match &self.outcome {
            Outcome::Invalid(d) => d,
            Outcome::Analysed(a) => &a.diagnostics,
        }
    }
}

/// The name a spec gets when it has no `name:` field: the file stem.
fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
        .to_string()
}

/// Reads and analyses one spec: everything `blazes check` does but printing. `path` is only
/// used for naming (the dataflow is named after its stem when the spec has no `name:`).
///
/// ```
/// use blazes::check::{self, EXIT_FINDINGS, Outcome};
///
/// let spec = "
/// sources:
///   tweets: {}
/// components:
///   Count:
///     paths:
///       - { from: words, to: counts, label: OW, gate: [word] }
/// streams:
///   - { from: tweets, to: Count.words }
///   - { from: Count.counts, to: db }
/// sinks:
///   db: {}
/// ";
/// let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
/// assert_eq!(report.exit_code(), EXIT_FINDINGS);
/// // Count writes its state in arrival order: an unordered write (C001), and `db` fails (C004).
/// let codes: Vec<&str> = report.diagnostics().iter().map(|d| d.code.id).collect();
/// assert_eq!(codes, ["C001", "C004"]);
/// let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
/// assert_eq!(a.dataflow.name, "count");
/// ```
pub fn check_bytes(path: &str, bytes: &[u8], options: &Options) -> FileReport {
    check_owned(path, bytes.to_vec(), options)
}

/// [`check_bytes`] on bytes the caller gives up: they become the report's text without a copy,
/// which for a big spec is hundreds of megabytes.
pub fn check_owned(path: &str, bytes: Vec<u8>, options: &Options) -> FileReport {
    check_composed(path, bytes, options, &mut NoFiles)
}

/// A loader for a spec checked on its own: a `use:` in it cannot be read.
struct NoFiles;

impl Loader for NoFiles {
    fn load(&mut self, _: &str) -> Result<Vec<u8>, String> {
        Err("this check reads no other files".to_string())
    }
}

/// [`check_owned`] for a spec that may use others (`use:`): `loader` reads them, by their path
/// joined to `path`'s directory.
pub fn check_composed(
    path: &str,
    bytes: Vec<u8>,
    options: &Options,
    loader: &mut (dyn Loader + Send),
) -> FileReport {
    // The reader needs a big stack, and the whole check on its thread lets the analysis reuse
    // the memory of the spec (see `on_reader_stack`).
    spec::yaml::on_reader_stack(&options.limits, || {
        check_here(path, bytes, options, loader, None, true)
    })
}

/// [`check_owned`] with `annotate` run on the spec once it is read, before it is analysed:
/// how `check --from ENGINE` gives the paths of an imported spec their catalogue origin and
/// reason, which the spec text does not carry.
pub fn check_annotated(
    path: &str,
    bytes: Vec<u8>,
    options: &Options,
    annotate: &(dyn Fn(&mut spec::Spec) + Sync),
) -> FileReport {
    spec::yaml::on_reader_stack(&options.limits, || {
        check_here(path, bytes, options, &mut NoFiles, Some(annotate), true)
    })
}

fn check_here(
    path: &str,
    bytes: Vec<u8>,
    options: &Options,
    loader: &mut (dyn Loader + Send),
    annotate: Option<&(dyn Fn(&mut spec::Spec) + Sync)>,
    summaries: bool,
) -> FileReport {
    let (spec, mut diags, text) = spec::parse_vec(bytes, &options.limits);
    let mut files = Files::default();
    let mut summaries_of_modules = Vec::new();
    let spec = match spec {
        Some(s)
            if compose::is_composed(&s) && !diags.iter().any(|d| d.severity == Severity::Error) =>
        {
            let x = compose::expand(path, &text, s, loader, &options.limits);
            files = x.files;
            diags.extend(x.diagnostics);
            if summaries && x.spec.is_some() {
                summaries_of_modules = module_summaries(&files, options);
                diags.extend(compose::contract::check(
                    &x.declared,
                    &summaries_of_modules,
                    &files,
                ));
            }
            x.spec
        }
        s => s,
    };
    let Some(mut spec) = spec else {
        diagnostic::sort(&mut diags);
        return FileReport {
            path: path.to_string(),
            text,
            outcome: Outcome::Invalid(diags),
            files,
            input: spec::Input::Spec,
        };
    };
    if let Some(annotate) = annotate {
        annotate(&mut spec);
    }
    let lints = std::mem::take(&mut spec.lint).then(&options.lints);
    // The spec is consumed by the build: the analysis reuses its memory.
    let (mut dataflow, graph_diags) = graph::build(spec, &stem(path));
    diags.extend(graph_diags);
    if diags.iter().any(|d| d.severity == Severity::Error) {
        diagnostic::sort(&mut diags);
        return FileReport {
            path: path.to_string(),
            text,
            outcome: Outcome::Invalid(diags),
            files,
            input: spec::Input::Spec,
        };
    }
    let mut analysis = analysis::analyze_with(&mut dataflow, options.fail_on, options.chain_notes);
    let mut found = std::mem::take(&mut analysis.diagnostics);
    // The help of a point of order names only fixes the planner's evaluation shows remove it.
    plan::advise(&dataflow, &analysis, &mut found, options.fail_on);
    // The analysis' diagnostics move into the report's list (big specs have hundreds of
    // thousands); usually there is nothing before them, and the list, sorted, is taken.
    if diags.is_empty() {
        diags = found;
    } else {
        diags.append(&mut found);
        diagnostic::sort(&mut diags);
    }
    if !summaries_of_modules.is_empty() {
        outer_feeds(&dataflow, &files, &summaries_of_modules, &mut diags);
    }
    let denied = lints.apply(&mut diags);
    FileReport {
        path: path.to_string(),
        text,
        outcome: Outcome::Analysed(Box::new(Analysed {
            dataflow,
            analysis,
            diagnostics: diags,
            denied,
            summaries: summaries_of_modules,
        })),
        files,
        input: spec::Input::Spec,
    }
}

/// The summary of every file a composed spec uses, each checked on its own (its own uses read
/// from the files already read).
fn module_summaries(files: &Files, options: &Options) -> Vec<ModuleSummary> {
    let mut loader: std::collections::BTreeMap<String, String> = files
        .files
        .iter()
        .map(|f| (f.path.clone(), f.text.clone()))
        .collect();
    files
        .files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let mut instances: Vec<String> = Vec::new();
            for u in files.regions.iter().filter(|r| r.file == Some(i)) {
                if let Some(u) = &u.used
                    && !instances.contains(&u.instance)
                {
                    instances.push(u.instance.clone());
                }
            }
            let r = match f.engine {
                None => check_here(
                    &f.path,
                    f.text.clone().into_bytes(),
                    options,
                    &mut loader,
                    None,
                    false,
                ),
                // A topology is its importer's spec, as the expansion read it.
                Some(engine) => {
                    let catalog =
                        crate::import::Catalog::load(engine, None, &options.limits).ok()?;
                    crate::import::check_imported(
                        engine,
                        &f.path,
                        f.text.clone().into_bytes(),
                        &catalog,
                        options,
                    )
                }
            };
            let Outcome::Analysed(a) = &r.outcome else {
                // Its errors are the composed spec's already.
                return None;
            };
            let df = &a.dataflow;
            let summary = crate::analysis::summary::summarize(df);
            Some(ModuleSummary {
                file: f.path.clone(),
                coordinated: coordinated(files, i, df, &summary),
                instances,
                inputs: df.sources.iter().map(|s| s.name.clone()).collect(),
                outputs: df.sinks.iter().map(|s| s.name.clone()).collect(),
                points: a
                    .analysis
                    .points
                    .iter()
                    .map(|p| (df.component(p.component).name.clone(), p.path))
                    .collect(),
                summary,
            })
        })
        .collect()
}

/// The instances of file `file` (whose dataflow, checked on its own, is `df`) that their
/// composites coordinate, grouped by that coordination, with the summary of `df` under it: the
/// expansion puts the same `order:` and `replicated` on each inner component
/// (`compose::apply_coordination`), so this is the instance's behaviour exactly.
fn coordinated(
    files: &Files,
    file: usize,
    df: &Dataflow,
    written: &crate::analysis::summary::Summary,
) -> Vec<Coordinated> {
    let mut groups: Vec<(Vec<compose::Coordination>, Vec<String>)> = Vec::new();
    for r in files.regions.iter().filter(|r| r.file == Some(file)) {
        let Some(u) = &r.used else { continue };
        let key: Vec<compose::Coordination> = u
            .coordination
            .iter()
            .filter(|c| !c.is_none())
            .cloned()
            .collect();
        if key.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, instances)) if instances.contains(&u.instance) => {}
            Some((_, instances)) => instances.push(u.instance.clone()),
            None => groups.push((key, vec![u.instance.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(coordination, instances)| {
            let mut copy = df.clone();
            for c in 0..copy.components.len() {
                for k in &coordination {
                    if k.replicated {
                        copy.components[c].replicated = true;
                    }
                    match &k.order {
                        Some(compose::InstanceOrder::Global) => {
                            copy.components[c].order = Some(graph::Order::Global);
                        }
                        Some(compose::InstanceOrder::Keys(names))
                            if copy.components[c].order.is_none() =>
                        {
                            let set = copy.keys.set_of(names.iter().map(String::as_str));
                            copy.components[c].order = Some(graph::Order::Keys(set));
                        }
                        _ => {}
                    }
                }
            }
            let prefer = match written {
                crate::analysis::summary::Summary::Exact(g) => Some(g),
                _ => None,
            };
            // The grey box gets the order its instance's components get: a global order from
            // any level, else the innermost keyed one.
            use crate::analysis::summary::OrderNames;
            let orders = coordination.iter().filter_map(|k| k.order.as_ref());
            let order = match orders.clone().any(|o| *o == compose::InstanceOrder::Global) {
                true => Some(OrderNames::Global),
                false => orders.clone().find_map(|o| match o {
                    compose::InstanceOrder::Keys(k) => Some(OrderNames::Keys(k.clone())),
                    compose::InstanceOrder::Global => None,
                }),
            };
            Coordinated {
                instances,
                summary: crate::analysis::summary::summarize_with(&copy, order.as_ref(), prefer),
                coordination,
            }
        })
        .collect()
}

/// Says, under each point of order of an instance that its file checked on its own does not
/// have, that the outer graph's feed makes it, pointing at the `use:` as well.
fn outer_feeds(
    df: &Dataflow,
    files: &Files,
    summaries: &[ModuleSummary],
    diags: &mut [Diagnostic],
) {
    for d in diags.iter_mut() {
        let Some(diagnostic::Subject::Point { component, path }) = d.subject else {
            continue;
        };
        let c = df.component(component);
        let at = files.locate(c.span);
        let Some(u) = files.regions.get(at.region).and_then(|r| r.used.as_ref()) else {
            continue;
        };
        let Some(file) = at.file.map(|f| &files.files[f].path) else {
            continue;
        };
        let Some(m) = summaries.iter().find(|m| &m.file == file) else {
            continue;
        };
        let inner = c
            .name
            .strip_prefix(&format!("{}.", u.instance))
            .unwrap_or(&c.name);
        if m.points
            .iter()
            .any(|(n, p)| n == inner && *p == path as usize)
        {
            continue;
        }
        d.related.push(diagnostic::Note {
            span: u.at,
            text: format!(
                "only because of how `{}` is fed here: `{file}` checked on its own has no point of order at `{inner}`",
                u.instance
            )
            .into(),
        });
    }
}
