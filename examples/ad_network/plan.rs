//! The deployment's engine objects, from the plan of the query's spec.
//!
//! The driver plans `specs/ad-<query>.yaml` with the CLI (`ad_network plan ...` is `blazes
//! plan ...`), writes the plan document to a temporary file and hands its path to every role;
//! each role derives the names of the objects it opens with `runtime::deploy`, the one place
//! that names them (and the names `blazes deploy` creates).

use std::path::{Path, PathBuf};

use blazes::runtime::deploy::{self, Object, PlanFile, Role, read_plan};

use super::*;

/// The replicated component whose inputs the plan coordinates.
const REPORT: &str = "Report";
/// Report's input the ad servers' clicks arrive on.
const CLICK: &str = "click";

/// The spec whose plan a coordinated deployment of `query` follows.
pub(crate) fn spec(query: Query) -> String {
    format!("specs/ad-{}.yaml", query.name())
}

/// The objects a deployment's mechanism uses, named by `runtime::deploy`.
pub(crate) enum Engine {
    /// The uncoordinated deployment: no plan, the example's own plain stream.
    Plain,
    /// The keyed order on `Report` by `id`: its stream.
    Keyed { stream: String },
    /// The seal barrier on `Report.click`: its stream.
    Barrier { stream: String },
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

/// The engine objects of `setup`'s deployment: the mechanism it needs, found in the plan; a
/// one-sentence error when the plan has no such mechanism or keys it differently.
pub(crate) fn engine(setup: &Setup, plan: Option<&Path>) -> Result<Engine, String> {
    let (kind, role, key) = match setup.coordination {
        Coordination::None => return Ok(Engine::Plain),
        Coordination::Ordered => ("keyed-order", Role::Keyed, "id"),
        Coordination::Sealed | Coordination::IndependentSeal => (
            "seal-barrier",
            Role::Barrier,
            match setup.query {
                Query::Window => "window",
                _ => "campaign",
            },
        ),
    };
    let plan = plan.ok_or_else(|| {
        format!(
            "--coordination {} needs the plan of {} (--plan)",
            setup.coordination.name(),
            spec(setup.query)
        )
    })?;
    let file = plan_file(plan)?;
    // One object per mechanism, both lists in the plan's order; replicas as the example's
    // one-node server has them.
    let deployment = deploy::derive(&file, 1).map_err(|e| e.to_string())?;
    let found = file
        .mechanisms
        .iter()
        .zip(&deployment.mechanisms)
        .find(|(m, _)| {
            m.kind == kind
                && m.component.as_deref() == Some(REPORT)
                && (kind != "seal-barrier" || m.input.as_deref() == Some(CLICK))
        });
    let where_ = if kind == "seal-barrier" {
        format!("{REPORT}.{CLICK}")
    } else {
        REPORT.to_string()
    };
    let Some((mechanism, objects)) = found else {
        let instead = match kind {
            "keyed-order" => "--query poor",
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
    let stream = objects
        .objects
        .iter()
        .find_map(|(r, o)| match o {
            Object::Stream(s) if *r == role => Some(s.name.clone()),
            _ => None,
        })
        .ok_or_else(|| format!("the {kind} on {where_} has no stream in the deployment"))?;
    Ok(match setup.coordination {
        Coordination::Ordered => Engine::Keyed { stream },
        _ => Engine::Barrier { stream },
    })
}

impl Engine {
    /// The keyed order's configuration, for the ordered deployment.
    pub(crate) fn keyed_config(&self) -> Result<KeyedConfig, Failure> {
        let Engine::Keyed { stream } = self else {
            return Err("the deployment has no keyed order".into());
        };
        let mut config = KeyedConfig::new(stream, PARTITIONS);
        config.replicas = 1;
        Ok(config)
    }

    /// The seal barrier's configuration, waiting for every ad server, for the sealed ones.
    pub(crate) fn barrier_config(&self, setup: &Setup) -> Result<BarrierConfig, Failure> {
        let Engine::Barrier { stream } = self else {
            return Err("the deployment has no seal barrier".into());
        };
        let names: Vec<String> = (0..setup.producers).map(Setup::adserver).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut config = BarrierConfig::new(stream, &refs);
        config.replicas = 1;
        Ok(config)
    }
}
