//! `blazes summarize`: each spec's grey box, as a block to paste where the module is used, or
//! JSON.

use super::args::{Color, SummarizeArgs, SummarizeFormat};
use super::io::{check_file, use_color, write_out};
use crate::analysis::summary::{self, Summary};
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, Options, Outcome};
use crate::report;

pub(crate) fn run(args: &SummarizeArgs) -> i32 {
    let options = Options {
        limits: args.limits.limits(),
        ..Options::default()
    };
    let stderr_color = use_color(Color::Auto, &std::io::stderr());
    let mut code = EXIT_CLEAN;
    let mut yaml = String::new();
    let mut files = Vec::new();
    for spec in &args.specs {
        let report = check_file(spec, &options);
        let Outcome::Analysed(a) = &report.outcome else {
            let text = report::human::render(
                std::slice::from_ref(&report),
                report::human::Style {
                    color: stderr_color,
                    ..Default::default()
                },
            );
            say_part!("{text}");
            code = code.max(EXIT_INVALID);
            if args.format == SummarizeFormat::Json {
                files.push(serde_json::json!({
                    "path": report.path,
                    "valid": false,
                }));
            }
            continue;
        };
        let s = summary::summarize(&a.dataflow);
        let module = &a.dataflow.name;
        match &s {
            Summary::Exact(g) => {
                yaml.push_str(&format!(
                    "# `{}`: the grey box that behaves as `{}`\n{}",
                    report::escape::one_line(&report.path),
                    report::escape::one_line(module),
                    report::summary::grey_box_yaml(g, 0)
                ));
            }
            Summary::None(why) | Summary::TooBig(why) => {
                code = code.max(EXIT_FINDINGS);
                say!("`{}`: no summary of `{module}`: {why}", report.path);
                yaml.push_str(&format!(
                    "# `{}`: no grey box behaves as `{}` (see the message on standard error)\n",
                    report::escape::one_line(&report.path),
                    report::escape::one_line(module)
                ));
            }
        }
        if args.format == SummarizeFormat::Json {
            files.push(serde_json::json!({
                "path": report.path,
                "valid": true,
                "module": module,
                "summary": report::summary::json(&s),
            }));
        }
    }
    match args.format {
        SummarizeFormat::Yaml => write_out(yaml.as_bytes()),
        SummarizeFormat::Json => {
            let doc = serde_json::json!({ "version": 1, "files": files });
            let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            text.push('\n');
            write_out(text.as_bytes());
        }
    }
    code
}
