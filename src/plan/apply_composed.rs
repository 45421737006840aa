//! Writing a plan into the files of a composed spec (`blazes plan --in-place` on a spec with
//! `use:` or `dataflow:`).
//!
//! A mechanism of the expanded graph belongs in the file that declares the node it acts on: the
//! order of `Eu.Billing.Join` is the `order:` of `Join` in the file `Eu.Billing` uses. The
//! node's span in the expanded graph locates that file and the declaration in it
//! ([`Files::locate`]); each file is then edited with the same splices as a flat spec
//! ([`splice_targets`]), so comments and layout survive in every file.
//!
//! A used file is shared by all its instances: an edit there applies to each of them. Two
//! instances that need different keys on one declaration cannot both be written, and the plan
//! is refused (naming them) rather than weakened. The edited files are expanded and analysed
//! again before anything is returned, exactly as `blazes check` reads them: the result either
//! carries every mechanism and passes, or it is an error and no file changes.
//!
//! No IO: the files come in as texts ([`Files`]) and go out as texts ([`FileChange`]).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::analysis::{self, FailOn};
use crate::compose::{self, Files};
use crate::diagnostic::{Diagnostic, Severity, Span};
use crate::graph::{self, Dataflow, Order};
use crate::spec::{self, ComponentDecl, Composite, Limits, SourceDecl, Spec, StreamDecl};

use super::apply::{self, Syntax, Target, is_json, splice_targets};
use super::{Choice, Plan};

/// One file the plan changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Index in [`Files::files`]; `None` for the root spec.
    pub file: Option<usize>,
    /// The file's path as the root's directory and the `use:`s make it.
    pub path: String,
    /// The file's text with the plan's edits in it.
    pub after: String,
    /// The edits, in the file's own words (its names, not the instances').
    pub edits: Vec<String>,
}

/// The kind of declaration an edit goes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Seal,
    StreamSeal,
    Order,
}

/// One edit of the expanded graph, located: the file, the offset of its declaration there, what
/// it writes and the expanded node it was planned for.
struct Wanted {
    file: Option<usize>,
    kind: Kind,
    /// The local offset of the declaration: a component's or source's name, a stream's entry.
    offset: usize,
    /// `None` is `order: global`.
    key: Option<Vec<String>>,
    /// The node in the expanded graph (`Eu.Billing.Join`, or `a -> b` for a stream).
    node: String,
}

/// The plan written into the files of the composed spec at `path` (with `text`, expanded into
/// `files` and `df`): the files that change, root first, then in the order they were read.
/// Fails, and changes nothing, when a declaration cannot be found or edited, when instances of
/// one file need different edits, or when the edited files do not carry the plan and pass.
pub fn apply_composed(
    path: &str,
    text: &str,
    files: &Files,
    df: &Dataflow,
    plan: &Plan,
    limits: &Limits,
    fail_on: FailOn,
) -> Result<Vec<FileChange>, String> {
    spec::yaml::on_reader_stack(limits, || {
        let changes = edit_files(path, text, files, df, plan, limits)?;
        verify(path, text, files, df, plan, limits, fail_on, &changes)?;
        Ok(changes)
    })
}

fn wanted(files: &Files, df: &Dataflow, plan: &Plan) -> Vec<Wanted> {
    let mut out = Vec::new();
    let mut push = |span: Span, kind, key: Option<Vec<String>>, node: String| {
        let at = files.locate(span);
        out.push(Wanted {
            file: at.file,
            kind,
            offset: at.span.offset,
            key,
            node,
        });
    };
    for m in &plan.mechanisms {
        match m.choice {
            Choice::AddSeal { source, .. } => {
                let s = &df.sources[source.index()];
                push(s.span, Kind::Seal, Some(m.key.clone()), s.name.clone());
            }
            Choice::SealStream { stream, .. } => {
                let s = &df.streams[stream.index()];
                let node = format!("{} -> {}", s.from_text, s.to_text);
                push(s.span, Kind::StreamSeal, Some(m.key.clone()), node);
            }
            Choice::Order { order, .. } => {
                for c in &m.components {
                    let c = &df.components[c.index()];
                    let key = match order {
                        Order::Global => None,
                        Order::Keys(_) => Some(m.key.clone()),
                    };
                    push(c.span, Kind::Order, key, c.name.clone());
                }
            }
        }
    }
    out
}

/// Each declaration's edit with every node it was planned for (one edit of a shared file's
/// declaration serves all its instances), by file, then offset; an error when two nodes of one
/// declaration need different edits.
fn group<'p>(
    wanted: Vec<Wanted>,
    path_of: impl Fn(Option<usize>) -> &'p str,
) -> Result<BTreeMap<Decl, Planned>, String> {
    let mut by_decl: BTreeMap<Decl, Planned> = BTreeMap::new();
    for w in wanted {
        match by_decl.entry((w.file, w.offset, w.kind)) {
            Entry::Vacant(e) => {
                e.insert((w.key, vec![w.node]));
            }
            Entry::Occupied(mut e) => {
                let (key, nodes) = e.get_mut();
                if *key != w.key {
                    return Err(format!(
                        "`{}` and `{}` are instances of one declaration in `{}`, and the plan needs {} on the first but {} on the second; one file cannot say both: give the instances their own files, or add the mechanisms by hand",
                        nodes[0],
                        w.node,
                        path_of(w.file),
                        describe_key(w.kind, key.as_deref()),
                        describe_key(w.kind, w.key.as_deref()),
                    ));
                }
                nodes.push(w.node);
            }
        }
    }
    Ok(by_decl)
}

/// A declaration: its file, its offset there and the kind of edit.
type Decl = (Option<usize>, usize, Kind);

/// What a declaration gets: the key (`None`: `order: global`) and the nodes it is for.
type Planned = (Option<Vec<String>>, Vec<String>);

/// The edits of every file, spliced; only the files that change.
fn edit_files(
    path: &str,
    text: &str,
    files: &Files,
    df: &Dataflow,
    plan: &Plan,
    limits: &Limits,
) -> Result<Vec<FileChange>, String> {
    let by_decl = group(wanted(files, df, plan), |f| files.path(f, path))?;
    let mut parsed: BTreeMap<Option<usize>, Spec> = BTreeMap::new();
    for (&(file, _, kind), (key, nodes)) in &by_decl {
        if parsed.contains_key(&file) {
            continue;
        }
        // A topology is what its engine prints: the mechanism goes into the application.
        if let Some(engine) = file.and_then(|f| files.files[f].engine) {
            return Err(format!(
                "the plan needs {} on `{}`, inside `{}`, a topology {} prints; make the application provide it (blazes cannot edit an engine's output), or plan the module's spec from `blazes import` instead",
                describe_key(kind, key.as_deref()),
                nodes[0],
                files.path(file, path),
                engine.display()
            ));
        }
        let (spec, diags) = spec::parse(files.text(file, text), limits);
        let spec = spec
            .filter(|_| !has_error(&diags))
            .ok_or_else(|| format!("`{}` does not read without errors", files.path(file, path)))?;
        parsed.insert(file, spec);
    }
    let mut changes = Vec::new();
    for (&file, spec) in &parsed {
        let file_text = files.text(file, text);
        let file_path = files.path(file, path);
        let mut targets = Vec::new();
        let mut edits = Vec::new();
        let of_file = by_decl.iter().filter(|((f, _, _), _)| *f == file);
        for ((_, offset, kind), (key, nodes)) in of_file {
            let (target, local) =
                target(spec, *kind, *offset, key.as_deref()).ok_or_else(|| {
                    format!(
                        "cannot find the declaration of `{}` in `{file_path}`; add {} by hand",
                        nodes[0],
                        describe_key(*kind, key.as_deref())
                    )
                })?;
            targets.push(target);
            edits.push(describe(&local, *kind, key.as_deref(), nodes));
        }
        let after = splice_targets(file_text, &targets, Syntax::of(file_text))
            .map_err(|e| format!("in `{file_path}`: {e}"))?;
        if after != file_text {
            changes.push(FileChange {
                file,
                path: file_path.to_string(),
                after,
                edits,
            });
        }
    }
    Ok(changes)
}

fn has_error(diags: &[Diagnostic]) -> bool {
    diags.iter().any(|d| d.severity == Severity::Error)
}

/// The declaration of `spec` (inline composites included) at `offset`, as a target, with its
/// name as the file writes it.
fn target<'s>(
    spec: &'s Spec,
    kind: Kind,
    offset: usize,
    key: Option<&'s [String]>,
) -> Option<(Target<'s>, String)> {
    match kind {
        Kind::Order => find_component(spec, offset).map(|decl| {
            (
                Target::Order { decl, key },
                format!("component `{}`", decl.name.text),
            )
        }),
        Kind::Seal => find_source(spec, offset).map(|decl| {
            (
                Target::Seal {
                    decl,
                    key: key.unwrap_or_default(),
                },
                format!("source `{}`", decl.name.text),
            )
        }),
        Kind::StreamSeal => find_stream(spec, offset).map(|decl| {
            (
                Target::StreamSeal {
                    decl,
                    key: key.unwrap_or_default(),
                },
                format!("the stream {} -> {}", decl.from.text, decl.to.text),
            )
        }),
    }
}

/// The specs of `spec`'s inline composites (`dataflow:`), whose declarations are in its file.
fn inline(spec: &Spec) -> impl Iterator<Item = &Spec> {
    spec.components
        .iter()
        .filter_map(|c| match c.composite.as_deref() {
            Some(Composite::Inline(s)) => Some(s),
            _ => None,
        })
}

fn find_component(spec: &Spec, offset: usize) -> Option<&ComponentDecl> {
    spec.components
        .iter()
        .find(|c| c.name.span.offset == offset && c.composite.is_none())
        .or_else(|| inline(spec).find_map(|s| find_component(s, offset)))
}

fn find_source(spec: &Spec, offset: usize) -> Option<&SourceDecl> {
    spec.sources
        .iter()
        .find(|s| s.name.span.offset == offset)
        .or_else(|| inline(spec).find_map(|s| find_source(s, offset)))
}

fn find_stream(spec: &Spec, offset: usize) -> Option<&StreamDecl> {
    spec.streams
        .iter()
        .find(|s| s.span.offset == offset)
        .or_else(|| inline(spec).find_map(|s| find_stream(s, offset)))
}

fn describe_key(kind: Kind, key: Option<&[String]>) -> String {
    let list = |k: &[String]| format!("[{}]", k.join(", "));
    match (kind, key) {
        (Kind::Order, None) => "`order: global`".to_string(),
        (Kind::Order, Some(k)) => format!("`order: {}`", list(k)),
        (_, k) => format!("`seal: {}`", list(k.unwrap_or_default())),
    }
}

/// An edit in the file's words, with the instances it applies to when they are not the
/// declaration itself.
fn describe(local: &str, kind: Kind, key: Option<&[String]>, nodes: &[String]) -> String {
    let what = format!("{} on {local}", describe_key(kind, key));
    let named = |n: &String| format!("`{n}`");
    // A declaration of the root outside any composite is its own node: nothing to add.
    match nodes {
        [one] if local.ends_with(&format!("`{one}`")) => what,
        _ => format!(
            "{what} (for {})",
            nodes.iter().map(named).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Reads the edited files back as `blazes check` reads them: expanded, built and analysed. The
/// expanded graph must carry every mechanism of the plan (by its nodes' names) and pass, and a
/// JSON file must stay JSON.
#[allow(clippy::too_many_arguments)]
fn verify(
    path: &str,
    text: &str,
    files: &Files,
    df: &Dataflow,
    plan: &Plan,
    limits: &Limits,
    fail_on: FailOn,
    changes: &[FileChange],
) -> Result<(), String> {
    for c in changes {
        if is_json(files.text(c.file, text)) && !is_json(&c.after) {
            return Err(format!(
                "the edited `{}` is no longer JSON; its layout defeated the editor",
                c.path
            ));
        }
    }
    let after = |file: Option<usize>| {
        changes
            .iter()
            .find(|c| c.file == file)
            .map_or(files.text(file, text), |c| c.after.as_str())
    };
    let mut loader: BTreeMap<String, String> = files
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.clone(), after(Some(i)).to_string()))
        .collect();
    let root = after(None);
    let (spec, diags) = spec::parse(root, limits);
    let first_error = |diags: &[Diagnostic], x: &Files| {
        diags
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| {
                let file = d
                    .primary
                    .as_ref()
                    .map_or(path, |p| x.path(x.locate(p.span).file, path));
                format!(
                    "the edited spec does not read back: in `{file}`: {}",
                    d.message
                )
            })
    };
    if let Some(e) = first_error(&diags, &Files::default()) {
        return Err(e);
    }
    let spec = spec.ok_or("the edited spec does not read back")?;
    let x = compose::expand(path, root, spec, &mut loader, limits);
    if let Some(e) = first_error(&x.diagnostics, &x.files) {
        return Err(e);
    }
    let flat = x.spec.ok_or("the edited spec does not expand")?;
    let (mut again, gdiags) = graph::build(flat, &plan.name);
    if let Some(e) = first_error(&gdiags, &x.files) {
        return Err(e);
    }
    apply::carries(&again, &apply::edits_of(plan, df))?;
    if analysis::verdicts(&mut again, fail_on).failing() {
        return Err("the edited spec still fails `blazes check`".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{self, Outcome};

    const MODULE: &str = "# A keyed read and a keyed write.\nsources:\n  a: {}\n  b: {}\ncomponents:\n  J:\n    paths:\n      - { from: x, to: out, label: OR, gate: [id] }\n  Y:\n    paths:\n      - { from: y, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: a, to: J.x }\n  - { from: b, to: Y.y }\n  - { from: J.out, to: o1 }\n  - { from: Y.out, to: o2 }\nsinks:\n  o1: {}\n  o2: {}\n";

    /// The files' changes for the plan of `root` in `files`, with the plan.
    fn changes(
        files: &BTreeMap<String, String>,
        root: &str,
        less: bool,
    ) -> Result<Vec<FileChange>, String> {
        let mut loader = files.clone();
        let text = files[root].clone();
        let r = check::check_composed(root, text.into_bytes(), &Default::default(), &mut loader);
        let Outcome::Analysed(a) = &r.outcome else {
            panic!("valid: {:?}", r.diagnostics())
        };
        let mut plan = super::super::plan(&a.dataflow, &Default::default());
        if less {
            plan.mechanisms.pop();
        }
        apply_composed(
            &r.path,
            &r.text,
            &r.files,
            &a.dataflow,
            &plan,
            &Limits::default(),
            FailOn::default(),
        )
    }

    fn system(root: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("sys/svc/m.yaml".to_string(), MODULE.to_string()),
            ("sys/root.yaml".to_string(), root.to_string()),
        ])
    }

    #[test]
    fn each_mechanism_goes_into_the_file_that_declares_its_node() {
        let root = "sources:\n  s1: {}\n  s2: {}\ncomponents:\n  M: { use: svc/m.yaml }\n  P:\n    paths:\n      - { from: in, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: s1, to: M.a }\n  - { from: s2, to: M.b }\n  - { from: M.o1, to: P.in }\n  - { from: M.o2, to: db }\n  - { from: P.out, to: db }\nsinks:\n  db: {}\n";
        let got = changes(&system(root), "sys/root.yaml", false).unwrap();
        let summary: Vec<(Option<usize>, &str, Vec<&str>)> = got
            .iter()
            .map(|c| {
                (
                    c.file,
                    c.path.as_str(),
                    c.edits.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (None, "sys/root.yaml", vec!["`order: [k]` on component `P`"]),
                (
                    Some(0),
                    "sys/svc/m.yaml",
                    vec![
                        "`order: [id]` on component `J` (for `M.J`)",
                        "`order: [k]` on component `Y` (for `M.Y`)"
                    ]
                ),
            ]
        );
        assert_eq!(
            got[0].after,
            root.replace("  P:\n", "  P:\n    order: [k]\n")
        );
        assert_eq!(
            got[1].after,
            MODULE
                .replace("  J:\n", "  J:\n    order: [id]\n")
                .replace("  Y:\n", "  Y:\n    order: [k]\n")
        );
    }

    #[test]
    fn a_shared_file_is_edited_once_for_all_its_instances() {
        let root = "sources:\n  s1: {}\n  s2: {}\ncomponents:\n  Eu: { use: svc/m.yaml }\n  Us: { use: svc/m.yaml }\nstreams:\n  - { from: s1, to: Eu.a }\n  - { from: s2, to: Eu.b }\n  - { from: s1, to: Us.a }\n  - { from: s2, to: Us.b }\n  - { from: Eu.o1, to: db }\n  - { from: Eu.o2, to: db }\n  - { from: Us.o1, to: db }\n  - { from: Us.o2, to: db }\nsinks:\n  db: {}\n";
        let got = changes(&system(root), "sys/root.yaml", false).unwrap();
        assert_eq!(got.len(), 1, "only the module changes: {got:?}");
        assert_eq!(
            got[0].edits,
            [
                "`order: [id]` on component `J` (for `Eu.J`, `Us.J`)",
                "`order: [k]` on component `Y` (for `Eu.Y`, `Us.Y`)"
            ]
        );
    }

    #[test]
    fn an_inline_dataflow_is_edited_where_it_is_written() {
        let root = "sources:\n  s: {}\ncomponents:\n  B:\n    dataflow:\n      sources:\n        i: {}\n      components:\n        J:\n          paths: [{ from: x, to: y, label: OW, gate: [k] }]\n      streams:\n        - { from: i, to: J.x }\n        - { from: J.y, to: o }\n      sinks:\n        o: {}\nstreams:\n  - { from: s, to: B.i }\n  - { from: B.o, to: db }\nsinks:\n  db: {}\n";
        let files = BTreeMap::from([("inline.yaml".to_string(), root.to_string())]);
        let got = changes(&files, "inline.yaml", false).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].edits, ["`order: [k]` on component `J` (for `B.J`)"]);
        assert_eq!(
            got[0].after,
            root.replace("        J:\n", "        J:\n          order: [k]\n")
        );
    }

    /// The verification is real: the same files with one mechanism of the plan left out read
    /// back, but still fail, and nothing is returned to write.
    #[test]
    fn edits_that_do_not_repair_the_spec_are_refused() {
        let root = "sources:\n  s1: {}\n  s2: {}\ncomponents:\n  M: { use: svc/m.yaml }\nstreams:\n  - { from: s1, to: M.a }\n  - { from: s2, to: M.b }\n  - { from: M.o1, to: db }\n  - { from: M.o2, to: db }\nsinks:\n  db: {}\n";
        assert!(changes(&system(root), "sys/root.yaml", false).is_ok());
        assert_eq!(
            changes(&system(root), "sys/root.yaml", true),
            Err("the edited spec still fails `blazes check`".to_string())
        );
    }

    #[test]
    fn instances_of_one_declaration_needing_different_edits_are_refused() {
        let at = |node: &str, key: Option<&str>| Wanted {
            file: Some(0),
            kind: Kind::Order,
            offset: 42,
            key: key.map(|k| vec![k.to_string()]),
            node: node.to_string(),
        };
        let same = group(
            vec![at("Eu.J", Some("id")), at("Us.J", Some("id"))],
            |_| "m.yaml",
        );
        assert_eq!(same.unwrap().len(), 1);
        let differ = group(vec![at("Eu.J", Some("id")), at("Us.J", None)], |_| "m.yaml");
        assert_eq!(
            differ.unwrap_err(),
            "`Eu.J` and `Us.J` are instances of one declaration in `m.yaml`, and the plan needs `order: [id]` on the first but `order: global` on the second; one file cannot say both: give the instances their own files, or add the mechanisms by hand"
        );
    }
}
