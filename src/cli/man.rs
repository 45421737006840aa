//! `blazes completions` and `blazes man`: what `blazes` says about itself, shell completion
//! scripts (clap_complete) and man pages (clap_mangen), both generated from the same clap
//! definition as `--help`, so they cannot drift from the arguments.

use clap::CommandFactory;

use super::args::Cli;
use super::io::write_out;
use crate::check::{EXIT_CLEAN, EXIT_INVALID};

/// The completion script for `shell`, for a binary named `blazes`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "blazes", &mut out);
    out
}

/// The names `blazes man COMMAND` accepts: every visible subcommand.
pub(crate) fn commands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The roff source of `blazes(1)`, or of `blazes-COMMAND(1)` for a subcommand; `None` when
/// there is no such subcommand.
pub(crate) fn man_page(command: Option<&str>) -> Option<Vec<u8>> {
    let mut root = Cli::command().disable_help_subcommand(true);
    // Building gives subcommands their display names (`blazes-check`), which become the
    // pages' titles and the NAME section.
    root.build();
    let cmd = match command {
        None => root,
        Some(name) => root
            .get_subcommands()
            .find(|c| c.get_name() == name && !c.is_hide_set())?
            .clone(),
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut out)
        .expect("rendering into a Vec cannot fail");
    Some(out)
}

/// `blazes completions SHELL`.
pub(crate) fn run_completions(shell: clap_complete::Shell) -> i32 {
    write_out(&completions(shell));
    EXIT_CLEAN
}

/// `blazes man [COMMAND]`.
pub(crate) fn run_man(command: Option<&str>) -> i32 {
    match man_page(command) {
        Some(page) => {
            write_out(&page);
            EXIT_CLEAN
        }
        None => {
            let q = command.unwrap_or_default();
            let names = commands();
            let hint = crate::spec::did_you_mean(q, names.iter().map(String::as_str))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            say!(
                "error: `{q}` is not a blazes command{hint}; the commands are: {}",
                names.join(", ")
            );
            EXIT_INVALID
        }
    }
}
