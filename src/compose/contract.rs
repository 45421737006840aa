//! A composite that declares `paths:` beside `use:` promises that its module behaves as that
//! grey box: the declaration is checked against the module's summary (the algebra's §10), as
//! a white box's declared paths are checked against its program (W003, W004). The analysis
//! itself reads the module's flattened dataflow either way; the declaration is a contract that
//! fails when the module changes under it.

use crate::analysis::summary::Summary;
use crate::check::ModuleSummary;
use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::spec::{GateDecl, Name, PathDecl};
use crate::whitebox::{self, Coverage, DerivedGate};

use super::Files;

/// The grey box a composite declares.
#[derive(Clone, Debug)]
pub struct Declared {
    /// Its instance path (`Eu.Billing`).
    pub instance: String,
    /// The used file, an index into [`Files::files`].
    pub file: usize,
    pub name: Name,
    pub paths: Vec<PathDecl>,
}

fn signature(a: crate::label::Annotation, g: &Option<DerivedGate>) -> String {
    match g {
        Some(g) => format!("{}({})", a.as_str(), g.show()),
        None => a.as_str().to_string(),
    }
}

/// The diagnostics of every declared grey box against its module's summary.
pub fn check(declared: &[Declared], summaries: &[ModuleSummary], files: &Files) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for d in declared {
        let path = &files.files[d.file].path;
        let Some(m) = summaries.iter().find(|m| &m.file == path) else {
            // The module is invalid: its errors are reported already.
            continue;
        };
        let what = format!("component `{}`", d.instance);
        let g = match &m.summary {
            Summary::Exact(g) => g,
            Summary::None(why) => {
                out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONFLICT,
                        format!(
                            "{what} declares the paths of `{path}`, but no grey box behaves as that module: {why}"
                        ),
                    )
                    .at(d.name.span, "declared as a grey box here")
                    .help("remove `paths:` (the module's dataflow is analysed as it is)"),
                );
                continue;
            }
            Summary::TooBig(why) => {
                out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONSERVATIVE,
                        format!(
                            "the paths {what} declares cannot be checked against `{path}`: {why}"
                        ),
                    )
                    .at(d.name.span, "declared as a grey box here")
                    .help("the module's dataflow is analysed as it is; the declaration is not checked"),
                );
                continue;
            }
        };
        for p in &d.paths {
            let declared_gate = p.gate.as_ref().map(GateDecl::as_derived);
            let declared = signature(p.label, &declared_gate);
            let (from, to) = (&p.from.text, &p.to.text);
            if !m.inputs.contains(from) || !m.outputs.contains(to) {
                let (bad, list, kind) = if m.inputs.contains(from) {
                    (to, &m.outputs, "outputs")
                } else {
                    (from, &m.inputs, "inputs")
                };
                out.push(
                    Diagnostic::new(
                        &codes::DANGLING_ENDPOINT,
                        format!(
                            "{what} declares a path of `{bad}`, which `{path}` does not have: its {kind} are {}",
                            list.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ),
                    )
                    .at(if bad == from { p.from.span } else { p.to.span }, "not an interface of the module"),
                );
                continue;
            }
            let Some(s) = g.paths.iter().find(|s| &s.from == from && &s.to == to) else {
                out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONSERVATIVE,
                        format!(
                            "{what} declares the path {from} -> {to} ({declared}), but no data of `{from}` reaches `{to}` in `{path}`"
                        ),
                    )
                    .at(p.label_span, "declared here")
                    .help("the declared path is kept; remove it to match the module"),
                );
                continue;
            };
            let summary = s.signature();
            match whitebox::coverage(p.label, declared_gate.as_ref(), s.annotation, s.gate.as_ref()) {
                Coverage::Same => {}
                Coverage::Conflict => out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONFLICT,
                        format!(
                            "the path {from} -> {to} of {what} is declared {declared}, but its module `{path}` behaves as {summary}"
                        ),
                    )
                    .at(p.label_span, "declared here")
                    .help(format!(
                        "declare it `{summary}` (`blazes summarize {path}` prints the module's paths) or remove `paths:`"
                    )),
                ),
                Coverage::Conservative => out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONSERVATIVE,
                        format!(
                            "the path {from} -> {to} of {what} is declared {declared}, more conservative than the {summary} its module `{path}` behaves as"
                        ),
                    )
                    .at(p.label_span, "declared here")
                    .help("the module's dataflow is analysed as it is; the declaration only documents it"),
                ),
            }
        }
        for s in &g.paths {
            if !d
                .paths
                .iter()
                .any(|p| p.from.text == s.from && p.to.text == s.to)
            {
                out.push(
                    Diagnostic::new(
                        &codes::WHITEBOX_CONFLICT,
                        format!(
                            "{what} does not declare the path {} -> {} ({}) that its module `{path}` has",
                            s.from, s.to, s.signature()
                        ),
                    )
                    .at(d.name.span, "declared as a grey box here")
                    .help(format!(
                        "add `{{ from: {}, to: {}, label: ... }}` as `blazes summarize {path}` prints it",
                        s.from, s.to
                    )),
                );
            }
        }
    }
    out
}
