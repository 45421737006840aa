//! `blazes plan --format yaml`: the JSON document of [`super::plan_json`], written as YAML
//! (same fields, same version), for people who keep plans next to their specs.

use crate::plan::Plan;

pub fn render(path: &str, plan: &Plan) -> String {
    let v = super::plan_json::value(path, plan);
    match serde_saphyr::to_string(&v) {
        Ok(s) => s,
        // Serialising a JSON value cannot fail; keep the output usable if it ever does.
        Err(e) => format!("# cannot render the plan as YAML: {e}\n"),
    }
}
