//! Composition: a component that is itself a dataflow (`use: FILE` or `dataflow:`), expanded
//! into the flat graph the analysis reads (`docs/compose.md`; the algebra's §10: a composite
//! means its flattened dataflow).
//!
//! An instance's nodes are named by the path of instances (`Eu.Billing.Join`); its streams are
//! the module's, with each outer stream into `Billing.orders` joined to every inner stream out
//! of the source `orders`, and each inner stream into the sink `invoices` to every outer stream
//! out of `Billing.invoices`. An interface nothing outside connects keeps the module's own
//! source or sink (`Eu.orders`), as the module's file declares it. Every instance of a used file
//! gets its own range of offsets ([`Files`]), so a diagnostic's span names the file, the line and
//! the chain of uses.
//!
//! No IO: files come through a [`Loader`] (the CLI reads the disk, tests a map).
//! The expansion is bounded before it is built: the components an expansion would make are
//! counted per file first (a file that uses another twice, eight levels deep, is 256 copies),
//! and a count over `--max-components` is the S011 of the `use:` that makes it.

pub mod contract;
pub mod files;

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use files::{Coordination, Files, InstanceOrder, Located, Region, SourceFile, Use};

use crate::codes;
use crate::diagnostic::{Diagnostic, Severity, Span};
use crate::spec::{
    self, ComponentDecl, Composite, Endpoint, Input, KeyList, Limit, Limits, Name, OrderDecl,
    SinkDecl, SourceDecl, Spec, StreamDecl,
};

/// Reads the spec files a composed spec uses.
pub trait Loader {
    /// The bytes of the file at `path` (the using file's directory joined with its `use:`), or
    /// the reason it cannot be read.
    fn load(&mut self, path: &str) -> Result<Vec<u8>, String>;
}

/// In-memory files, by path: for tests and for tools that hold the files already.
impl Loader for BTreeMap<String, String> {
    fn load(&mut self, path: &str) -> Result<Vec<u8>, String> {
        self.get(path)
            .map(|t| t.as_bytes().to_vec())
            .ok_or_else(|| "no such file".to_string())
    }
}

/// Whether a spec has a composite component anywhere (only such a spec needs [`expand`]).
pub fn is_composed(spec: &Spec) -> bool {
    spec.components.iter().any(|c| c.composite.is_some())
}

/// What [`expand`] gives: the flat spec (`None` when an error stopped it), the files it read
/// with the regions of their instances, and the diagnostics (errors and the used files'
/// warnings), spans in the regions' offsets.
#[derive(Debug)]
pub struct Expanded {
    pub spec: Option<Spec>,
    pub files: Files,
    pub diagnostics: Vec<Diagnostic>,
    /// The composites that declare `paths:` beside `use:`: the grey boxes their modules must
    /// behave as ([`contract`]).
    pub declared: Vec<contract::Declared>,
}

/// The directory of `path` joined with `used`, `.` and `..` resolved: the path a `use:` names.
pub fn join(path: &str, used: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let absolute = used.starts_with('/');
    if !absolute {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        if path.starts_with('/') {
            parts.push("");
        }
        parts.extend(dir.split('/').filter(|p| !p.is_empty() && *p != "."));
    } else {
        parts.push("");
    }
    for p in used.split('/') {
        match p {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| !l.is_empty() && *l != "..") => {
                parts.pop();
            }
            _ => parts.push(p),
        }
    }
    parts.join("/")
}

/// A used file once read: its spec (`None` when it is invalid) and the files its `use:`s name.
struct Loaded {
    spec: Option<Spec>,
    /// The components one instance of it expands to (saturating).
    components: u64,
}

struct Expander<'a> {
    loader: &'a mut dyn Loader,
    limits: &'a Limits,
    files: Files,
    /// File index by path; `None` while the file is being read (a `use:` of it then is a cycle).
    by_path: HashMap<String, usize>,
    loaded: Vec<Loaded>,
    diags: Vec<Diagnostic>,
    next_base: usize,
    streams: usize,
    /// `--max-streams` was passed (and reported): the expansion stops.
    streams_over: bool,
    /// The root file's path.
    root: String,
    declared: Vec<contract::Declared>,
}

/// Expands every composite of `spec` (the root file, at `path` with its `text`) into the flat
/// spec, reading the used files through `loader`. Must run on the reader's stack
/// (`spec::yaml::on_reader_stack`), as parsing does.
pub fn expand(
    path: &str,
    text: &str,
    spec: Spec,
    loader: &mut dyn Loader,
    limits: &Limits,
) -> Expanded {
    let mut x = Expander {
        loader,
        limits,
        files: Files {
            files: Vec::new(),
            regions: vec![Region {
                base: 0,
                file: None,
                used: None,
            }],
        },
        by_path: HashMap::new(),
        loaded: Vec::new(),
        diags: Vec::new(),
        // One past the end: a span at the end of a file stays in it.
        next_base: text.len() + 1,
        streams: 0,
        streams_over: false,
        root: path.to_string(),
        declared: Vec::new(),
    };
    let mut stack = vec![path.to_string()];
    let components = x.load_uses(&spec, path, 0, &mut stack);
    let failed = |d: &[Diagnostic]| d.iter().any(|d| d.severity == Severity::Error);
    if failed(&x.diags) {
        return x.finish(None);
    }
    if components > x.limits.max_components as u64 {
        let at = biggest_use(&spec, &x).unwrap_or(Span::new(0, 0));
        let d = Limit::Components
            .exceeded(
                Input::Spec,
                format!(
                    "the composed spec expands to {components} components, more than the limit of {}",
                    x.limits.max_components
                ),
            )
            .at(at, "expands past the limit");
        x.diags.push(d);
        return x.finish(None);
    }
    let flat = x.flatten(spec, 0, "", &[]);
    if failed(&x.diags) {
        return x.finish(None);
    }
    x.finish(Some(flat))
}

/// The `use:` of the root whose file expands to the most components: where a bomb is.
fn biggest_use(spec: &Spec, x: &Expander) -> Option<Span> {
    spec.components
        .iter()
        .filter_map(|c| match c.composite.as_deref() {
            Some(Composite::Use(n, _)) => Some((x.count_use(&n.text, ""), n.span)),
            Some(Composite::Inline(s)) => Some((x.count(s, ""), c.name.span)),
            None => None,
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, s)| s)
}

impl Expander<'_> {
    fn finish(mut self, spec: Option<Spec>) -> Expanded {
        crate::diagnostic::sort(&mut self.diags);
        Expanded {
            spec,
            files: self.files,
            diagnostics: self.diags,
            declared: self.declared,
        }
    }

    fn region(&mut self, file: Option<usize>, len: usize, used: Option<Use>) -> (usize, usize) {
        let base = self.next_base;
        self.next_base = base.saturating_add(len).saturating_add(1);
        self.files.regions.push(Region { base, file, used });
        (self.files.regions.len() - 1, base)
    }

    /// Reads every file `spec` uses (it is the text of region `region`, at `path`), depth first,
    /// each once; returns the components one instance of `spec` expands to. `stack` is the chain
    /// of files being read, for cycles.
    fn load_uses(
        &mut self,
        spec: &Spec,
        path: &str,
        region: usize,
        stack: &mut Vec<String>,
    ) -> u64 {
        let mut total: u64 = 0;
        for c in &spec.components {
            let n = match c.composite.as_deref() {
                None => 1,
                Some(Composite::Inline(s)) => self.load_uses(s, path, region, stack),
                Some(Composite::Use(used, from)) => {
                    self.load_use(c, used, from.as_ref(), path, region, stack)
                }
            };
            total = total.saturating_add(n);
        }
        total
    }

    #[allow(clippy::too_many_arguments)]
    fn load_use(
        &mut self,
        c: &ComponentDecl,
        used: &Name,
        from: Option<&Name>,
        path: &str,
        region: usize,
        stack: &mut Vec<String>,
    ) -> u64 {
        let target = join(path, &used.text);
        // The spec of a used file is read in its own offsets: the `use:` in region offsets.
        let base = self.files.regions[region].base;
        let at = Span::new(used.span.offset + base, used.span.len);
        if let Some(i) = stack.iter().position(|p| *p == target) {
            let mut chain: Vec<&str> = stack[i..].iter().map(String::as_str).collect();
            chain.push(&target);
            let d = Diagnostic::new(
                &codes::INVALID_VALUE,
                format!(
                    "`{}` uses itself: {}",
                    target,
                    chain
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(" uses ")
                ),
            )
            .at(at, "closes the cycle of uses")
            .help("a dataflow cannot contain itself: break the cycle of `use:`");
            self.diags.push(d);
            return 0;
        }
        if let Some(&f) = self.by_path.get(&target) {
            return self.loaded[f].components;
        }
        // Each level of uses is a level of recursion here and in the expansion: a chain of
        // files each using the next is nesting, bounded like the YAML's.
        if stack.len() > self.limits.max_depth {
            let d = Limit::Depth
                .exceeded(
                    Input::Spec,
                    format!(
                        "the chain of `use:` is more than {} files deep",
                        self.limits.max_depth
                    ),
                )
                .at(at, "too deep");
            self.diags.push(d);
            return 0;
        }
        let bytes = match self.loader.load(&target) {
            Ok(b) => b,
            Err(reason) => {
                let d = Diagnostic::new(
                    &codes::UNREADABLE,
                    format!(
                        "cannot read `{target}`, used as `{}` by `{}`: {reason}",
                        c.name.text,
                        stack
                            .iter()
                            .rev()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join("` used by `")
                    ),
                )
                .at(at, "used here")
                .help("the path of `use:` is relative to the file that says it");
                self.diags.push(d);
                return 0;
            }
        };
        let engine = match from {
            None => None,
            Some(e) => match crate::import::Engine::parse(&e.text) {
                Some(engine) => Some(engine),
                None => {
                    let base = self.files.regions[region].base;
                    let d = Diagnostic::new(
                        &codes::INVALID_VALUE,
                        format!(
                            "`from` of composite `{}` names no engine: `{}`",
                            c.name.text, e.text
                        ),
                    )
                    .at(
                        Span::new(e.span.offset + base, e.span.len),
                        "unknown engine",
                    )
                    .help({
                        let names = crate::import::Engine::ALL.map(|e| e.name());
                        let all = names.map(|n| format!("`{n}`")).join(", ");
                        match spec::did_you_mean(&e.text, names) {
                            Some(m) => {
                                format!("did you mean `{m}`? the engines blazes imports are: {all}")
                            }
                            None => format!("the engines blazes imports are: {all}"),
                        }
                    });
                    self.diags.push(d);
                    return 0;
                }
            },
        };
        let (parsed, diags, text) = match engine {
            None => spec::parse_vec(bytes, self.limits),
            Some(engine) => topology_module(engine, &target, bytes, self.limits),
        };
        let f = self.files.files.len();
        let len = text.len();
        self.files.files.push(SourceFile {
            path: target.clone(),
            text,
            engine,
        });
        let (sub, base) = self.region(
            Some(f),
            len,
            Some(Use {
                instance: c.name.text.clone(),
                parent: region,
                at,
                // The region a file is read in is no instance: nothing applies to it.
                coordination: Vec::new(),
            }),
        );
        let mut errors = false;
        for mut d in diags {
            errors |= d.severity == Severity::Error;
            shift_diag(&mut d, base);
            self.diags.push(d);
        }
        self.by_path.insert(target.clone(), f);
        self.loaded.push(Loaded {
            spec: None,
            components: 0,
        });
        let spec = parsed.filter(|_| !errors);
        let mut n = 0;
        if let Some(s) = &spec {
            stack.push(target.clone());
            n = self.load_uses(s, &target, sub, stack);
            stack.pop();
        }
        self.loaded[f] = Loaded {
            spec,
            components: n,
        };
        n
    }

    fn count_use(&self, used: &str, path: &str) -> u64 {
        self.by_path
            .get(&join(path, used))
            .map_or(0, |&f| self.loaded[f].components)
    }

    fn count(&self, spec: &Spec, path: &str) -> u64 {
        spec.components
            .iter()
            .map(|c| match c.composite.as_deref() {
                None => 1,
                Some(Composite::Inline(s)) => self.count(s, path),
                Some(Composite::Use(u, _)) => self.count_use(&u.text, path),
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The path of the file of a region.
    fn path_of(&self, region: usize, root: &str) -> String {
        self.files
            .path(self.files.regions[region].file, root)
            .to_string()
    }

    /// `spec` (in the offsets of `region`) with every composite replaced by its instance's
    /// nodes, names prefixed by the composite's; `prefix` is the instance path of `spec` itself.
    ///
    /// `outer` is the coordination the composites around `spec` put on it, innermost first.
    fn flatten(&mut self, spec: Spec, region: usize, prefix: &str, outer: &[Coordination]) -> Spec {
        let Spec {
            name,
            sources,
            components,
            streams,
            sinks,
            sources_key,
            lint,
            engine,
        } = spec;
        let mut out = Spec {
            name,
            sources,
            components: Vec::with_capacity(components.len()),
            streams: Vec::new(),
            sinks,
            sources_key,
            lint,
            engine,
        };
        let mut modules: BTreeMap<String, Module> = BTreeMap::new();
        for mut c in components {
            if self.over() {
                break;
            }
            let Some(composite) = c.composite.take() else {
                out.components.push(c);
                continue;
            };
            let instance = format!("{prefix}{}", c.name.text);
            let around: Vec<Coordination> = std::iter::once(Coordination::of(&c))
                .chain(outer.iter().cloned())
                .collect();
            let inner = match *composite {
                Composite::Inline(s) => self.flatten(s, region, &format!("{instance}."), &around),
                Composite::Use(used, _) => {
                    let here = self.path_of(region, &self.root.clone());
                    let target = join(&here, &used.text);
                    let Some(&f) = self.by_path.get(&target) else {
                        continue;
                    };
                    let Some(mut s) = self.loaded[f].spec.clone() else {
                        continue;
                    };
                    let len = self.files.files[f].text.len();
                    let (sub, base) = self.region(
                        Some(f),
                        len,
                        Some(Use {
                            instance: instance.clone(),
                            parent: region,
                            at: used.span,
                            coordination: around.clone(),
                        }),
                    );
                    s.shift(base);
                    if !c.paths.is_empty() {
                        self.declared.push(contract::Declared {
                            instance: instance.clone(),
                            file: f,
                            name: c.name.clone(),
                            paths: std::mem::take(&mut c.paths),
                        });
                    }
                    self.flatten(s, sub, &format!("{instance}."), &around)
                }
            };
            let m = self.instantiate(&c, inner, &mut out);
            modules.insert(c.name.text.clone(), m);
        }
        for s in streams {
            self.connect(s, &modules, &mut out);
        }
        for (name, m) in modules {
            m.unconnected(&name, &mut out, self);
        }
        out
    }

    /// Adds the nodes of the flattened module `inner` as the instance `c` to `out`, and returns
    /// its interface.
    fn instantiate(&mut self, c: &ComponentDecl, inner: Spec, out: &mut Spec) -> Module {
        let x = &c.name.text;
        let mut m = Module {
            span: c.name.span,
            ..Module::default()
        };
        let sources: BTreeSet<String> = inner
            .sources
            .iter()
            // A white box's clock is internal to its component, not an input of the module.
            .filter(|s| {
                !s.name
                    .text
                    .starts_with(&format!("{}@", crate::whitebox::CLOCK))
            })
            .map(|s| s.name.text.clone())
            .collect();
        let sinks: BTreeSet<String> = inner.sinks.iter().map(|s| s.name.text.clone()).collect();
        for s in inner.sources {
            if sources.contains(&s.name.text) {
                m.inputs.entry(s.name.text.clone()).or_default();
                m.sources.insert(s.name.text.clone(), s);
            } else {
                out.sources.push(renamed_source(s, x));
            }
        }
        for s in inner.sinks {
            m.outputs.entry(s.name.text.clone()).or_default();
            m.sinks.insert(s.name.text.clone(), s);
        }
        for mut ic in inner.components {
            ic.name.text = format!("{x}.{}", ic.name.text);
            // A task is the instance's: two instances of one file run two tasks.
            if let Some(t) = &mut ic.task {
                t.text = format!("{x}.{}", t.text);
            }
            apply_coordination(c, &mut ic);
            out.components.push(ic);
        }
        for s in inner.streams {
            // What `count_stream` counts is the streams the expansion holds: one behind an
            // interface is replaced by the joins `connect` or `unconnected` count.
            let from_source = s.from.component().is_none() && sources.contains(s.from.name());
            let to_sink = s.to.component().is_none() && sinks.contains(s.to.name());
            if from_source || to_sink {
                self.streams = self.streams.saturating_sub(1);
            }
            match (from_source, to_sink) {
                (true, true) => {
                    let d = Diagnostic::new(
                        &codes::INVALID_VALUE,
                        format!(
                            "the dataflow of composite `{x}` streams its input `{}` straight to its output `{}`",
                            s.from.name(),
                            s.to.name()
                        ),
                    )
                    .at(s.span, "no component in between")
                    .related(c.name.span, "used here")
                    .help("a composite's inputs and outputs are joined through its components: put a component between them");
                    self.diags.push(d);
                }
                (true, false) => {
                    m.inputs
                        .entry(s.from.name().to_string())
                        .or_default()
                        .push(Inner {
                            end: prefixed(&s.to, x),
                            seal: s.seal,
                            span: s.span,
                        })
                }
                (false, true) => {
                    m.outputs
                        .entry(s.to.name().to_string())
                        .or_default()
                        .push(Inner {
                            end: prefixed(&s.from, x),
                            seal: s.seal,
                            span: s.span,
                        })
                }
                // Counted when the module's flattening made it: it only moves up.
                (false, false) => out.streams.push(StreamDecl {
                    from: prefixed(&s.from, x),
                    to: prefixed(&s.to, x),
                    seal: s.seal,
                    span: s.span,
                }),
            }
        }
        m
    }

    /// An outer stream, its ends that name a composite's interface replaced by the module's
    /// streams behind it.
    fn connect(&mut self, s: StreamDecl, modules: &BTreeMap<String, Module>, out: &mut Spec) {
        let from: Vec<(Endpoint, Option<KeyList>)> = match s
            .from
            .component()
            .and_then(|c| modules.get(c).map(|m| (c, m)))
        {
            Some((c, m)) => match m.outputs.get(s.from.name()) {
                Some(inner) => {
                    m.used_out.borrow_mut().insert(s.from.name().to_string());
                    inner
                        .iter()
                        .map(|i| (i.end.clone(), i.seal.clone()))
                        .collect()
                }
                None => {
                    self.no_interface(&s.from, c, m, "output");
                    return;
                }
            },
            None => vec![(s.from.clone(), None)],
        };
        let to: Vec<Endpoint> = match s
            .to
            .component()
            .and_then(|c| modules.get(c).map(|m| (c, m)))
        {
            Some((c, m)) => match m.inputs.get(s.to.name()) {
                Some(inner) => {
                    m.used_in.borrow_mut().insert(s.to.name().to_string());
                    inner.iter().map(|i| i.end.clone()).collect()
                }
                None => {
                    self.no_interface(&s.to, c, m, "input");
                    return;
                }
            },
            None => vec![s.to.clone()],
        };
        for (f, inner_seal) in &from {
            for t in &to {
                if !self.count_stream(s.span) {
                    return;
                }
                // The producer declares a seal: an inner producer's stream says it, an outer one's
                // the outer stream (the module's source, which it replaces, no longer exists).
                out.streams.push(StreamDecl {
                    from: f.clone(),
                    to: t.clone(),
                    seal: inner_seal.clone().or_else(|| s.seal.clone()),
                    span: s.span,
                });
            }
        }
    }

    /// Counts one more stream of the expansion, made at `at`; whether it is within
    /// `--max-streams` (past it, reported once, and the expansion stops: an instance's copies
    /// of its file's streams multiply with its uses).
    fn count_stream(&mut self, at: Span) -> bool {
        self.streams += 1;
        if self.streams > self.limits.max_streams && !self.streams_over {
            self.streams_over = true;
            let d = Limit::Streams
                .exceeded(
                    Input::Spec,
                    format!(
                        "the composed spec expands to more than {} streams",
                        self.limits.max_streams
                    ),
                )
                .at(at, "expands past the limit");
            self.diags.push(d);
        }
        !self.streams_over
    }

    fn over(&self) -> bool {
        self.streams_over
    }

    fn no_interface(&mut self, e: &Endpoint, c: &str, m: &Module, dir: &str) {
        let known = if dir == "input" {
            &m.inputs
        } else {
            &m.outputs
        };
        let names: Vec<String> = known.keys().map(|k| format!("`{k}`")).collect();
        let what = if dir == "input" { "sources" } else { "sinks" };
        let d = Diagnostic::new(
            &codes::DANGLING_ENDPOINT,
            format!("composite {c} has no {dir} `{}`", e.name()),
        )
        .at(e.span, format!("unknown {dir}"))
        .related(m.span, "the composite")
        .help(if names.is_empty() {
            format!("the {dir}s of a composite are its dataflow's {what}, and {c} has none")
        } else {
            format!(
                "the {dir}s of {c} (its dataflow's {what}) are: {}",
                names.join(", ")
            )
        });
        self.diags.push(d);
    }
}

/// A topology file that `engine` printed, read as a module: the spec the importer writes from
/// it with the built-in catalogue, every span moved into the topology's text, so findings
/// inside the module point at the operators in the file. Gives what `spec::parse_vec` gives:
/// the spec (`None` on an error), the diagnostics (the importer's warnings too) and the text.
fn topology_module(
    engine: crate::import::Engine,
    path: &str,
    bytes: Vec<u8>,
    limits: &Limits,
) -> (Option<Spec>, Vec<Diagnostic>, String) {
    use crate::import;
    let text = match import::decode(&bytes, limits) {
        Ok(t) => t,
        Err(diags) => return (None, diags, String::from_utf8_lossy(&bytes).into_owned()),
    };
    let catalog = match import::Catalog::load(engine, None, limits) {
        Ok(c) => c,
        Err(diags) => return (None, diags, text),
    };
    let imported = match import::import(engine, &text, &catalog, &import::stem(path), limits) {
        Ok(i) => i,
        Err(diags) => return (None, diags, text),
    };
    // The file was bounded when it was read; the spec written from it is linear in it.
    let unbounded = Limits {
        max_bytes: usize::MAX,
        ..limits.clone()
    };
    let (spec, mut diags) = spec::parse(&imported.spec, &unbounded);
    let map = &imported.map;
    for d in &mut diags {
        if let Some(p) = &mut d.primary {
            p.span = map.map(p.span);
        }
        for n in &mut d.related {
            n.span = map.map(n.span);
        }
    }
    let spec = spec.map(|mut s| {
        s.map_spans(&mut |span| map.map(span));
        s
    });
    diags.extend(imported.warnings);
    (spec, diags, text)
}

/// One inner stream behind an interface: its other end (prefixed), its seal, where it is.
#[derive(Debug)]
struct Inner {
    end: Endpoint,
    seal: Option<KeyList>,
    span: Span,
}

/// A composite's interface once instantiated.
#[derive(Debug, Default)]
struct Module {
    span: Span,
    inputs: BTreeMap<String, Vec<Inner>>,
    outputs: BTreeMap<String, Vec<Inner>>,
    sources: BTreeMap<String, SourceDecl>,
    sinks: BTreeMap<String, SinkDecl>,
    used_in: std::cell::RefCell<BTreeSet<String>>,
    used_out: std::cell::RefCell<BTreeSet<String>>,
}

impl Module {
    /// The module's own sources and sinks for the interfaces nothing outside connects: the
    /// module then runs as its file says there.
    fn unconnected(self, x: &str, out: &mut Spec, expander: &mut Expander) {
        let used_in = self.used_in.into_inner();
        let used_out = self.used_out.into_inner();
        for (name, source) in self.sources {
            if used_in.contains(&name) {
                continue;
            }
            let source = renamed_source(source, x);
            for i in self.inputs.get(&name).into_iter().flatten() {
                if !expander.count_stream(i.span) {
                    return;
                }
                out.streams.push(StreamDecl {
                    from: Endpoint::bare(&source.name.text, i.span),
                    to: i.end.clone(),
                    seal: i.seal.clone(),
                    span: i.span,
                });
            }
            out.sources.push(source);
        }
        for (name, mut sink) in self.sinks {
            if used_out.contains(&name) {
                continue;
            }
            sink.name.text = format!("{x}.{}", sink.name.text);
            for i in self.outputs.get(&name).into_iter().flatten() {
                if !expander.count_stream(i.span) {
                    return;
                }
                out.streams.push(StreamDecl {
                    from: i.end.clone(),
                    to: Endpoint::bare(&sink.name.text, i.span),
                    seal: i.seal.clone(),
                    span: i.span,
                });
            }
            out.sinks.push(sink);
        }
    }
}

fn renamed_source(mut s: SourceDecl, x: &str) -> SourceDecl {
    s.name.text = format!("{x}.{}", s.name.text);
    s
}

/// An inner endpoint with the instance's name in front.
fn prefixed(e: &Endpoint, x: &str) -> Endpoint {
    match e.component() {
        Some(c) => Endpoint::joined(&format!("{x}.{c}"), e.name(), e.span),
        None => Endpoint::bare(&format!("{x}.{}", e.name()), e.span),
    }
}

/// The composite's `replicas:`/`replicated:` and `order:` apply to every component inside:
/// replicas multiply (each replica of the composite holds the inner component's replicas), a
/// global order covers any order inside, a keyed order applies where there is none, and so
/// does a task (a composite run as one task runs everything inside in it).
fn apply_coordination(c: &ComponentDecl, inner: &mut ComponentDecl) {
    if inner.task.is_none() {
        inner.task.clone_from(&c.task);
    }
    if c.replicated {
        let was = inner.replicated;
        inner.replicated = true;
        inner.replicas = match (c.replicas, inner.replicas) {
            (Some(a), Some(b)) => Some(a.saturating_mul(b)),
            (Some(a), None) if !was => Some(a),
            (_, b) => b,
        };
    } else if let (Some(a), Some(b)) = (c.replicas, inner.replicas) {
        inner.replicas = Some(a.saturating_mul(b));
    }
    match &c.order {
        Some(OrderDecl::Global(s)) => inner.order = Some(OrderDecl::Global(*s)),
        Some(OrderDecl::Keys(k)) if inner.order.is_none() => {
            inner.order = Some(OrderDecl::Keys(k.clone()))
        }
        _ => {}
    }
}

/// Moves a diagnostic of a used file into its region's offsets.
pub(crate) fn shift_diag(d: &mut Diagnostic, by: usize) {
    if let Some(p) = &mut d.primary {
        p.span.offset += by;
    }
    for n in &mut d.related {
        n.span.offset += by;
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn a_use_is_relative_to_the_using_file() {
        assert_eq!(join("system.yaml", "services/b.yaml"), "services/b.yaml");
        assert_eq!(
            join("specs/system.yaml", "./services/b.yaml"),
            "specs/services/b.yaml"
        );
        assert_eq!(join("specs/sub/a.yaml", "../b.yaml"), "specs/b.yaml");
        assert_eq!(join("/repo/specs/a.yaml", "b.yaml"), "/repo/specs/b.yaml");
        assert_eq!(join("specs/a.yaml", "/etc/b.yaml"), "/etc/b.yaml");
        // Above the checked file's directory the `..` stays: the path is the user's.
        assert_eq!(join("a.yaml", "../b.yaml"), "../b.yaml");
        assert_eq!(join("../x/a.yaml", "../b.yaml"), "../b.yaml");
    }
}
