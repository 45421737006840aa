//! The words every output format shares, each written once: a path's annotation with its
//! gate, severity names in each vocabulary a format speaks, and counted nouns.
//!
//! A severity's own name (human summaries, JSON `severity`) is
//! [`Severity::as_str`]; the names other tools give it are here, beside each other, so that a
//! new severity is named for every format in one file.
//!
//! Labels have their own display in [`crate::label`]: [`Label::display`](crate::label::Label::display),
//! and [`label::show`](crate::label::show) with [`label::UNREACHED`](crate::label::UNREACHED)
//! for a stream no source reaches.

use crate::diagnostic::Severity;
use crate::label::{Annotation, Gate, Keys};

/// A path's annotation as the algebra writes it: `OW(batch, word)`, `OR(*)`, or a bare `CR`
/// when it has no gate.
///
/// ```
/// use blazes::label::{Annotation, Gate, Keys};
/// use blazes::vocabulary::signature;
///
/// let mut keys = Keys::new();
/// let k = keys.set_of(["word", "batch"]);
/// assert_eq!(signature(Annotation::OW, Some(Gate::Keys(k)), &keys), "OW(batch, word)");
/// assert_eq!(signature(Annotation::OR, Some(Gate::Star), &keys), "OR(*)");
/// assert_eq!(signature(Annotation::CR, None, &keys), "CR");
/// ```
pub fn signature(annotation: Annotation, gate: Option<Gate>, keys: &Keys) -> String {
    match gate {
        Some(g) => format!("{}({})", annotation.as_str(), g.display(keys)),
        None => annotation.as_str().to_string(),
    }
}

/// Every annotation, as a sentence offers the choice: `CR, CW, OR or OW`.
pub fn annotation_choices() -> String {
    let names = Annotation::ALL.map(Annotation::as_str);
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A severity as a SARIF result's `level`.
pub fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// A severity as a GitHub Actions workflow command (`::error ...`, `::warning ...`).
pub fn github_command(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The noun for a count of `n`: `one` for 1, `many` otherwise (0 included).
pub fn noun<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// A count with its noun: `1 error`, `0 warnings`, `3 mechanisms`.
///
/// ```
/// assert_eq!(blazes::vocabulary::plural(1, "error", "errors"), "1 error");
/// assert_eq!(blazes::vocabulary::plural(0, "error", "errors"), "0 errors");
/// ```
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_choices_name_every_annotation_once() {
        let text = annotation_choices();
        assert_eq!(text, "CR, CW, OR or OW");
        for a in Annotation::ALL {
            assert_eq!(text.matches(a.as_str()).count(), 1, "{a:?} in {text}");
        }
    }
}
