//! `blazes render`: the analysed dataflow (or, with `--plan`, the planned one) as DOT or SVG,
//! on standard output or into files.

use std::path::{Path, PathBuf};

use super::args::{Color, RenderArgs, RenderFormat};
use super::import::check_file;
use super::io::{Access, io_reason, is_stdin, same_file, use_color, write_atomically, write_out};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_INVALID, Options, Outcome};
use crate::report;

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
fn format_of_extension(path: &Path) -> Result<Option<RenderFormat>, String> {
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
fn names_directory(path: &Path) -> bool {
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
            let Some(stem) = spec.file_stem().filter(|_| !is_stdin(spec)) else {
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

pub(crate) fn run(args: &RenderArgs) -> i32 {
    // Said first: whatever else is wrong with `-o`, this is the mistake that would cost data.
    if let Some(out) = &args.output
        && let Some(spec) = args
            .specs
            .iter()
            .find(|s| !is_stdin(s) && same_file(out, s))
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
                .find(|s| !is_stdin(s) && same_file(out, s))
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
            say!(
                "error: cannot create the directory `{}`: {}",
                out.display(),
                io_reason(&e, Access::Write)
            );
            return EXIT_INVALID;
        }
    }
    let options = Options {
        limits: args.limits.limits(),
        ..Options::default()
    };
    let stderr_color = use_color(Color::Auto, &std::io::stderr());
    let mut code = EXIT_CLEAN;
    for (n, spec) in args.specs.iter().enumerate() {
        let report = check_file(spec, &args.from, &options);
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
            say_part!("{text}");
            code = code.max(EXIT_INVALID);
            continue;
        };
        let dot = if args.plan {
            let plan_options = args.choice.options();
            let plan = crate::plan::plan(&a.dataflow, &plan_options);
            crate::render::plan_dot(&a.dataflow, &plan, plan_options.fail_on)
        } else if args.collapse {
            crate::render::to_dot_collapsed(&a.dataflow, &a.analysis, &a.summaries)
        } else {
            crate::render::to_dot_summarized(&a.dataflow, &a.analysis, &[], &a.summaries)
        };
        let bytes = match format {
            RenderFormat::Dot => dot.into_bytes(),
            RenderFormat::Svg => match crate::render::svg::dot_to_svg(&dot) {
                Ok(b) => b,
                Err(e @ crate::render::svg::SvgError::DotMissing) => {
                    // Every other spec would fail the same way.
                    say!("error: cannot render SVG: {e}");
                    return EXIT_INVALID;
                }
                Err(e) => {
                    say!("error: cannot render SVG of `{}`: {e}", report.path);
                    code = code.max(EXIT_INVALID);
                    continue;
                }
            },
        };
        match &target {
            RenderTarget::Files(files) => {
                let out = &files[n];
                if let Err(e) = write_atomically(out, &bytes) {
                    say!(
                        "error: cannot write `{}`: {}",
                        out.display(),
                        io_reason(&e, Access::Write)
                    );
                    code = code.max(EXIT_INVALID);
                }
            }
            RenderTarget::Stdout => write_out(&bytes),
        }
    }
    code
}
