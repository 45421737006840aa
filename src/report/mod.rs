//! Output formats, one per file, each with the one shape of [`format::Format`]: `blazes
//! check`'s formats write the [`FileReport`](crate::check::FileReport)s of every spec given
//! ([`format::CHECK`]), `blazes plan`'s the plans ([`format::PLAN`]). The caller decides where
//! the bytes go. Every format is deterministic: same input, same bytes.

pub mod escape;
pub mod format;
pub mod github;
pub mod grouped;
pub mod human;
pub mod json;
pub mod located;
pub mod plan_human;
pub mod plan_json;
pub mod plan_prose;
pub mod plan_yaml;
pub mod sarif;
pub mod summary;
pub mod witness;

use crate::label::{Keys, Label};

/// `(label name, sorted key)` as the JSON format and others spell labels; no name when no
/// source reaches the stream (it has no label, rather than a label of its own).
pub fn label_parts(l: Option<Label>, keys: &Keys) -> (Option<&'static str>, Option<Vec<String>>) {
    match l {
        None => (None, None),
        Some(Label::Seal(k)) => (
            Some("Seal"),
            Some(keys.names(k).into_iter().map(str::to_string).collect()),
        ),
        Some(l) => (Some(l.kind()), None),
    }
}
