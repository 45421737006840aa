//! The command line: argument parsing, reading files, choosing a format, exit codes.
//! Everything that touches the outside world lives here (and in `main.rs`, which only calls
//! [`run`]). Not part of the library's API: only [`run`] is public, for the binary.
//!
//! `args` holds the clap definition, `io` reading, writing and colour, and each
//! subcommand has its module, which turns the arguments into the library's options, calls it,
//! and prints through a format of [`crate::report::format`].

/// `eprintln!`, with the text's control characters shown escaped ([`crate::report::escape`]):
/// messages on standard error quote paths, names and server errors, and none of them may
/// drive the user's terminal. Escaping is idempotent, so text already escaped passes as it is.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", crate::report::escape::visible(&format!($($arg)*)))
    };
}

/// `eprint!`, escaped as [`say!`] escapes.
macro_rules! say_part {
    ($($arg:tt)*) => {
        eprint!("{}", crate::report::escape::visible(&format!($($arg)*)))
    };
}

mod args;
mod check;
mod deploy;
mod explain;
mod generate;
mod import;
mod io;
mod man;
mod plan;
mod render;
mod simulate;
mod summarize;

use clap::Parser;

use crate::check::{EXIT_CLEAN, EXIT_INVALID};
use args::{Cli, Command};

/// A usage error: one sentence on standard error, exit 2.
fn usage_error(message: &str) -> i32 {
    say!("error: {message}");
    EXIT_INVALID
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
        say!(
            "error: internal error in blazes{at} ({what}); this is a bug in blazes, not in the spec: please report it with the spec that caused it"
        );
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            say!("{}", std::backtrace::Backtrace::force_capture());
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
        Command::Check(args) => check::run(args),
        Command::Render(args) => render::run(args),
        Command::Explain { code } => explain::run(code.as_deref()),
        Command::Plan(args) => plan::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Summarize(args) => summarize::run(args),
        Command::Gen(args) => generate::run(args),
        Command::Import(args) => import::run(args),
        Command::Completions { shell } => man::run_completions(*shell),
        Command::Man { command } => man::run_man(command.as_deref()),
    }
}
