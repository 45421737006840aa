//! `blazes check`: analyse each spec and print the reports in the chosen format.

use std::io::Write;

use super::args::CheckArgs;
use super::import::check_files;
use super::io::{is_stdin, use_color};
use crate::check::{EXIT_CLEAN, EXIT_INVALID, FileReport, Options};
use crate::report::format::Settings;

pub(crate) fn run(args: &CheckArgs) -> i32 {
    if args.specs.iter().filter(|s| is_stdin(s)).count() > 1 {
        eprintln!("error: `-` is given more than once, but standard input can be read only once");
        return EXIT_INVALID;
    }
    let options = Options {
        fail_on: args.fail_on.into(),
        limits: args.limits.limits(),
        chain_notes: args.format.chain_notes,
    };
    let reports = check_files(&args.specs, &args.from, &options);
    let cwd = std::env::current_dir().ok();
    let settings = Settings {
        color: use_color(args.color, &std::io::stdout()),
        max_results: args.max_results.map(|n| n as usize),
        cwd: cwd.as_deref(),
    };
    // Written as it is serialised: on a big spec a JSON or SARIF document is hundreds of
    // megabytes, as much again as the analysis.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed pipe (`blazes check ... | head`) is not an error worth a panic.
    let _ = (args.format.write)(&reports, &settings, &mut out).and_then(|()| out.flush());
    drop(out);
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
