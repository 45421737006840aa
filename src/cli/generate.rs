//! `blazes gen`: a random, valid spec of a given size.

use super::args::{GenArgs, GenFormat};
use super::io::{write_atomically, write_out};
use crate::check::{EXIT_CLEAN, EXIT_INVALID};
use crate::generator::{self, GenOptions};

pub(crate) fn run(args: &GenArgs) -> i32 {
    for (name, v) in [("--cycles", args.cycles), ("--replicated", args.replicated)] {
        if !(0.0..=1.0).contains(&v) {
            say!("error: {name} must be between 0 and 1, got {v}");
            return EXIT_INVALID;
        }
    }
    if args.components == 0 {
        say!("error: --components must be at least 1");
        return EXIT_INVALID;
    }
    let text = generator::generate(&GenOptions {
        components: args.components,
        seed: args.seed,
        cycle_share: args.cycles,
        replicated_share: args.replicated,
        ..Default::default()
    });
    let text = match args.format {
        GenFormat::Yaml => text,
        GenFormat::Json => match generator::to_json(&text) {
            Ok(json) => json,
            Err(e) => {
                say!("error: the generated spec cannot be written as JSON: {e}");
                return EXIT_INVALID;
            }
        },
    };
    match &args.output {
        None => {
            write_out(text.as_bytes());
            EXIT_CLEAN
        }
        Some(path) => match write_atomically(path, text.as_bytes()) {
            Ok(()) => EXIT_CLEAN,
            Err(e) => {
                say!("error: cannot write `{}`: {e}", path.display());
                EXIT_INVALID
            }
        },
    }
}
