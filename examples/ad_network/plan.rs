//! The plan a deployment's roles are hosted by.
//!
//! The driver plans `specs/ad-<query>.yaml` with the CLI (`ad_network plan ...` is `blazes
//! plan ...`), writes the plan document to a temporary file and hands its path to every role;
//! each role opens its component host on it, which derives the engine objects' names with
//! `runtime::deploy` (the names `blazes deploy` creates).

use std::path::{Path, PathBuf};

use blazes_runtime::deploy::{MechanismKind, PlanFile, read_plan};

use super::*;

/// Report's input the ad servers' clicks arrive on.
const CLICK: &str = "click";

/// The spec whose plan a coordinated deployment of `query` follows.
pub(crate) fn spec(query: Query) -> String {
    format!("specs/ad-{}.yaml", query.name())
}

/// `blazes plan --format json SPEC`, run by this binary, written to a file in `dir`.
pub(crate) fn plan_document(spec: &str, dir: &Path) -> Result<PathBuf, String> {
    // From the crate's root, so that the plan names the spec as the docs do.
    let o = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(["plan", "--format", "json", spec])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map_err(|e| format!("cannot run the planner: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    read_plan(&text).map_err(|e| format!("the plan of {spec}: {e}"))?;
    let file = dir.join("plan.json");
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(file)
}

fn plan_file(plan: &Path) -> Result<PlanFile, String> {
    let text = std::fs::read_to_string(plan)
        .map_err(|e| format!("cannot read the plan {}: {e}", plan.display()))?;
    read_plan(&text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .ok_or_else(|| format!("the plan document {} has no spec", plan.display()))
}

/// The plan `setup`'s roles are deployed by: the plan of the query's spec, whose mechanism on
/// Report the coordination needs (a one-sentence error when it has none or keys it
/// differently); the uncoordinated deployment takes the same spec without its mechanisms.
pub(crate) fn deployed(setup: &Setup, plan: &Path) -> Result<PlanFile, String> {
    let mut file = plan_file(plan)?;
    let (kind, key) = match setup.coordination {
        Coordination::None => {
            file.mechanisms.clear();
            return Ok(file);
        }
        Coordination::Ordered => (MechanismKind::KeyedOrder, "id"),
        Coordination::Sealed | Coordination::IndependentSeal => (
            MechanismKind::SealBarrier,
            match setup.query {
                Query::Window => "window",
                _ => "campaign",
            },
        ),
    };
    let found = file.mechanisms.iter().find(|m| {
        m.kind == kind
            && m.component.as_deref() == Some(REPORT)
            && (kind != MechanismKind::SealBarrier || m.input.as_deref() == Some(CLICK))
    });
    let where_ = if kind == MechanismKind::SealBarrier {
        format!("{REPORT}.{CLICK}")
    } else {
        REPORT.to_string()
    };
    let Some(mechanism) = found else {
        let instead = match kind {
            MechanismKind::KeyedOrder => "--query poor",
            _ => "--query campaign or window",
        };
        return Err(format!(
            "the plan of {} has no {kind} on {where_}, which --coordination {} needs (use {instead})",
            file.path,
            setup.coordination.name()
        ));
    };
    if mechanism.key != [key] {
        return Err(format!(
            "the plan of {} keys its {kind} on {where_} by [{}], but --query {} partitions by [{key}]",
            file.path,
            mechanism.key.join(", "),
            setup.query.name()
        ));
    }
    Ok(file)
}
