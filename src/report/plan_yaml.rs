//! `blazes plan --format yaml`: the JSON document of [`super::plan_json`], written as YAML
//! (same fields, same version), for people who keep plans next to their specs.

use super::format::{Format, PlanWrite, Planned, Settings};
use super::plan_json::{self, PlannedFile};
use crate::plan::Named;

/// The document for the specs of one invocation.
pub fn render_files(files: &[PlannedFile]) -> String {
    let v = plan_json::document(files);
    match serde_saphyr::to_string(&v) {
        Ok(s) => s,
        // Serialising a JSON value cannot fail; keep the output usable if it ever does.
        Err(e) => format!("# cannot render the plan as YAML: {e}\n"),
    }
}

/// The document of one valid spec's plan.
pub fn render(path: &str, plan: Named) -> String {
    render_files(&[plan_json::single(path, plan)])
}

/// `--format yaml` of `blazes plan`: [`render_files`].
pub const FORMAT: Format<PlanWrite> = Format {
    name: "yaml",
    help: None,
    chain_notes: false,
    write: write_format,
};

fn write_format(
    planned: &[Planned],
    _: &Settings,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let files: Vec<PlannedFile> = planned.iter().map(Planned::file).collect();
    out.write_all(render_files(&files).as_bytes())
}
