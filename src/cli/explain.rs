//! `blazes explain`: the long explanation of a diagnostic code or a topic, or the index of
//! them all.

use super::io::write_out;
use crate::check::{EXIT_CLEAN, EXIT_INVALID};
use crate::{codes, topics};

pub(crate) fn run(query: Option<&str>) -> i32 {
    let Some(q) = query else {
        write_out(topics::index().as_bytes());
        return EXIT_CLEAN;
    };
    // Topics first: `gate` is both a topic and the name of S004, which its id still reaches.
    if let Some(t) = topics::find(q) {
        write_out(topics::page(t).as_bytes());
        return EXIT_CLEAN;
    }
    if let Some(c) = codes::find(q) {
        write_out(
            format!(
                "{} ({}): {}\n\n{}\n",
                c.id, c.name, c.summary, c.explanation
            )
            .as_bytes(),
        );
        return EXIT_CLEAN;
    }
    let mut msg = format!("error: unknown diagnostic code or topic `{q}`");
    let names = codes::ALL
        .iter()
        .flat_map(|c| [c.id, c.name])
        .chain(topics::ALL.iter().map(|t| t.name))
        .chain(topics::ALIASES.iter().map(|&(a, _)| a));
    if let Some(s) = crate::spec::did_you_mean(q, names) {
        msg.push_str(&format!("; did you mean `{s}`?"));
    }
    msg.push_str("\nrun `blazes explain` to list every code and topic\n");
    say_part!("{msg}");
    EXIT_INVALID
}
