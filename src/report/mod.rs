//! Output formats, one per file. Each renders a slice of [`FileReport`]s to a `String`; the
//! CLI decides where it goes. Every format is deterministic: same input, same bytes.

pub mod github;
pub mod grouped;
pub mod human;
pub mod json;
pub mod plan_human;
pub mod plan_json;
pub mod plan_yaml;
pub mod sarif;

use crate::label::{Keys, Label};

/// `(label name, sorted key)` as the JSON format and others spell labels.
pub fn label_parts(l: Option<Label>, keys: &Keys) -> (&'static str, Option<Vec<String>>) {
    match l {
        None => ("Unreached", None),
        Some(Label::Seal(k)) => (
            "Seal",
            Some(keys.names(k).into_iter().map(str::to_string).collect()),
        ),
        Some(l) => (l.kind(), None),
    }
}
