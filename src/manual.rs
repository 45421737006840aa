//! What `blazes` says about itself: shell completion scripts (clap_complete) and man pages
//! (clap_mangen), both generated from the same clap definition as `--help`, so they cannot
//! drift from the arguments. Returns bytes; `cli` prints them.

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`, for a binary named `blazes`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "blazes", &mut out);
    out
}

/// The names `blazes man COMMAND` accepts: every visible subcommand.
pub fn commands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The roff source of `blazes(1)`, or of `blazes-COMMAND(1)` for a subcommand; `None` when
/// there is no such subcommand.
pub fn man_page(command: Option<&str>) -> Option<Vec<u8>> {
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
