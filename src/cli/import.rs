//! `blazes import`, and `--from ENGINE` of `check`, `plan` and `render`: reading a topology
//! file and a user catalogue, importing, and reporting in the topology file.

use std::path::{Path, PathBuf};

use super::args::{Color, FromArgs, ImportArgs};
use super::io::{
    Access, check_file as check_spec, io_reason, is_stdin, read_spec, same_file, use_color,
    write_atomically, write_out,
};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_INVALID, FileReport, Options, Outcome};
use crate::codes;
use crate::diagnostic::{self, Diagnostic, Span};
use crate::import::{self, Catalog, Engine};
use crate::report;
use crate::spec::{Input, Limits};

/// A report of a file that could not be used: its diagnostics, located in its text.
fn invalid_report(
    input: Input,
    path: String,
    text: String,
    mut diags: Vec<Diagnostic>,
) -> FileReport {
    diagnostic::sort(&mut diags);
    FileReport {
        path,
        text,
        outcome: Outcome::Invalid(diags),
        files: Default::default(),
        input,
    }
}

fn unreadable(input: Input, shown: String, reason: &str) -> FileReport {
    let d = Diagnostic::new(
        &codes::UNREADABLE,
        format!("cannot read `{shown}`: {reason}"),
    )
    .at(Span::new(0, 0), "");
    invalid_report(input, shown, String::new(), vec![d])
}

/// The catalogue of `engine` with the user's at `path`, or the report of what is wrong with
/// the user's (located in it).
fn load_catalog(
    engine: Engine,
    path: Option<&Path>,
    limits: &Limits,
) -> Result<Catalog, Box<FileReport>> {
    let user = match path {
        None => None,
        Some(p) => match read_spec(p, limits) {
            Err((shown, reason)) => {
                return Err(Box::new(unreadable(Input::Catalogue, shown, &reason)));
            }
            Ok((shown, bytes)) => match import::decode(&bytes, limits) {
                Ok(text) => Some((shown, text)),
                Err(d) => {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    return Err(Box::new(invalid_report(Input::Catalogue, shown, text, d)));
                }
            },
        },
    };
    let user_ref = user.as_ref().map(|(p, t)| (p.as_str(), t.as_str()));
    Catalog::load(engine, user_ref, limits).map_err(|d| {
        let (path, text) = user.unwrap_or_else(|| {
            (
                format!("built-in {} catalogue", engine.name()),
                engine.builtin_catalog().to_string(),
            )
        });
        Box::new(invalid_report(Input::Catalogue, path, text, d))
    })
}

/// `--from` with standard input given twice is the same mistake as two `-` specs.
fn stdin_twice(files: &[PathBuf], from: &FromArgs) -> bool {
    from.catalog.as_deref().is_some_and(is_stdin) && files.iter().any(|f| is_stdin(f))
}

/// Checks each file: specs, or with `--from`, topologies imported first (a user catalogue
/// that is invalid is the one report).
pub(crate) fn check_files(
    files: &[PathBuf],
    from: &FromArgs,
    options: &Options,
) -> Vec<FileReport> {
    let Some(engine) = from.from else {
        return super::io::check_files(files, options);
    };
    if stdin_twice(files, from) {
        let d = Diagnostic::new(
            &codes::UNREADABLE,
            "`-` is given for both the catalogue and a file, but standard input can be read only once",
        )
        .at(Span::new(0, 0), "");
        return vec![invalid_report(
            Input::Topology,
            "<stdin>".into(),
            String::new(),
            vec![d],
        )];
    }
    match load_catalog(engine, from.catalog.as_deref(), &options.limits) {
        Err(report) => vec![*report],
        Ok(catalog) => files
            .iter()
            .map(|f| import_and_check(engine, f, &catalog, options))
            .collect(),
    }
}

/// Checks one file, a spec or, with `--from`, a topology.
pub(crate) fn check_file(file: &Path, from: &FromArgs, options: &Options) -> FileReport {
    check_files(&[file.to_path_buf()], from, options)
        .pop()
        .unwrap_or_else(|| check_spec(file, options))
}

fn import_and_check(
    engine: Engine,
    file: &Path,
    catalog: &Catalog,
    options: &Options,
) -> FileReport {
    match read_spec(file, &options.limits) {
        Err((shown, reason)) => unreadable(Input::Topology, shown, &reason),
        Ok((shown, bytes)) => import::check_imported(engine, &shown, bytes, catalog, options),
    }
}

/// `--explain`: for each component, where its operator is in the file, what gave its
/// annotation, and each path, order and replication with its reason.
fn explanation(path: &str, text: &str, explained: &[import::Explained]) -> String {
    let index = diagnostic::LineIndex::new(text);
    let mut out = String::new();
    for x in explained {
        let (line, column) = index.line_col(text, x.span.offset);
        let named = if x.component == x.operator {
            String::new()
        } else {
            format!(", component `{}`", x.component)
        };
        out.push_str(&format!(
            "{path}:{line}:{column}: {} `{}` (class `{}`){named}\n  annotated {}\n",
            x.kind,
            import::catalog::one_line(&x.operator),
            import::catalog::one_line(&x.class),
            x.by
        ));
        for w in &x.why {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}

pub(crate) fn run(args: &ImportArgs) -> i32 {
    let engine = args.engine;
    let limits = args.limits.limits();
    if let Some(out) = &args.output {
        for (what, input) in [
            ("topology", Some(&args.file)),
            ("catalogue", args.catalog.as_ref()),
        ] {
            if let Some(input) = input
                && !is_stdin(input)
                && same_file(out, input)
            {
                return usage_error(&format!(
                    "refusing to write the spec over the {what} `{}`; choose another `-o` file",
                    input.display()
                ));
            }
        }
    }
    if is_stdin(&args.file) && args.catalog.as_deref().is_some_and(is_stdin) {
        return usage_error(
            "`-` is given for both the catalogue and the file, but standard input can be read only once",
        );
    }
    let style = report::human::Style {
        color: use_color(Color::Auto, &std::io::stderr()),
        ..Default::default()
    };
    let show = |r: &FileReport| {
        let page = report::human::Page::new(&r.path, &r.text);
        for d in r.diagnostics() {
            say!("{}", report::human::render_on(d, &page, style));
        }
    };
    let catalog = match load_catalog(engine, args.catalog.as_deref(), &limits) {
        Ok(c) => c,
        Err(r) => {
            show(&r);
            return EXIT_INVALID;
        }
    };
    let (shown, bytes) = match read_spec(&args.file, &limits) {
        Ok(x) => x,
        Err((shown, reason)) => {
            show(&unreadable(Input::Topology, shown, &reason));
            return EXIT_INVALID;
        }
    };
    let text = match import::decode(&bytes, &limits) {
        Ok(t) => t,
        Err(d) => {
            show(&invalid_report(
                Input::Topology,
                shown,
                String::from_utf8_lossy(&bytes).into_owned(),
                d,
            ));
            return EXIT_INVALID;
        }
    };
    let imported = match import::import(engine, &text, &catalog, &import::stem(&shown), &limits) {
        Ok(i) => i,
        Err(d) => {
            show(&invalid_report(Input::Topology, shown, text, d));
            return EXIT_INVALID;
        }
    };
    let mut warnings = imported.warnings;
    diagnostic::sort(&mut warnings);
    if args.explain {
        write_out(explanation(&shown, &text, &imported.explained).as_bytes());
        show(&invalid_report(Input::Topology, shown, text, warnings));
        return EXIT_CLEAN;
    }
    show(&invalid_report(
        Input::Topology,
        shown.clone(),
        text,
        warnings,
    ));
    let Some(out) = &args.output else {
        write_out(imported.spec.as_bytes());
        return EXIT_CLEAN;
    };
    match std::fs::read(out) {
        Ok(existing) if existing == imported.spec.as_bytes() => {
            say!("`{}` already holds this spec; left as it is", out.display());
            return EXIT_CLEAN;
        }
        Ok(_) if !args.force => {
            say!(
                "error: refusing to overwrite `{}`, which exists and differs (it may hold your edits); pass --force to replace it, or choose another -o file",
                out.display()
            );
            return EXIT_INVALID;
        }
        _ => {}
    }
    match write_atomically(out, imported.spec.as_bytes()) {
        Ok(()) => {
            say!(
                "wrote the spec imported from `{shown}` to `{}`",
                out.display()
            );
            EXIT_CLEAN
        }
        Err(e) => {
            say!(
                "error: cannot write `{}`: {}",
                out.display(),
                io_reason(&e, Access::Write)
            );
            EXIT_INVALID
        }
    }
}
