//! Applying a plan's engine objects ([`crate::runtime::deploy`]) to a JetStream server.
//!
//! A deployment first compares every object of the plan with what the server holds, and
//! changes nothing unless the comparison is clean:
//!
//! - an object that is missing is created (with a description naming the spec, which is how a
//!   later deployment recognises it);
//! - an object that exists with the plan's configuration is left alone, whoever created it (a
//!   mechanism's own `open` creates the same configuration);
//! - an object that exists with another configuration, or an object of this spec that no
//!   mechanism of the plan uses any more, is a *difference*: the deployment refuses, reports
//!   every difference, and creates nothing. Services may be running on those objects; a plan
//!   that changed under them needs a person to decide (drain and delete, or rename the spec).
//!
//! A second deployment of the same plan therefore finds every object unchanged and does nothing.

use std::collections::BTreeMap;

use async_nats::jetstream::{self, kv, stream};
use futures_util::StreamExt;

use super::NatsError;
use crate::runtime::deploy::{BucketObject, DESCRIPTION_PREFIX, Deployment, Object, StreamObject};

/// One field whose deployed value is not the planned one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// The field (`subjects`, `replicas`, ...).
    pub field: &'static str,
    /// Its value on the server.
    pub deployed: String,
    /// Its value in the plan.
    pub planned: String,
}

/// How one object of the server compares with the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The plan needs it and the server does not have it.
    Create(Object),
    /// The server has it, configured as the plan says.
    Unchanged(Object),
    /// The server has it, configured otherwise.
    Differs {
        /// The planned object.
        object: Object,
        /// The fields that differ.
        fields: Vec<FieldDiff>,
    },
    /// A stream of this spec's earlier deployment that no mechanism of the plan uses.
    Orphan {
        /// The stream's name (`KV_<bucket>` for a bucket).
        stream: String,
        /// Its description (which mechanism created it).
        description: String,
    },
}

impl Change {
    /// Whether the change blocks the deployment.
    pub fn is_difference(&self) -> bool {
        matches!(self, Change::Differs { .. } | Change::Orphan { .. })
    }

    /// The change in one line, then one indented line per differing field.
    pub fn describe(&self) -> String {
        match self {
            Change::Create(o) => format!("missing {} {}", o.kind(), o.name()),
            Change::Unchanged(o) => format!("unchanged {} {}", o.kind(), o.name()),
            Change::Differs { object, fields } => {
                let mut s = format!(
                    "differs {} {}: deployed with another configuration",
                    object.kind(),
                    object.name()
                );
                for f in fields {
                    s.push_str(&format!(
                        "\n    {}: deployed {}, planned {}",
                        f.field, f.deployed, f.planned
                    ));
                }
                s
            }
            Change::Orphan {
                stream,
                description,
            } => format!(
                "orphan stream {stream}: deployed for this spec ({}) but no mechanism of the plan uses it",
                description
                    .strip_prefix(DESCRIPTION_PREFIX)
                    .unwrap_or(description)
            ),
        }
    }
}

/// What [`deploy`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every object existed as planned: nothing was changed.
    NoChange(Vec<Change>),
    /// The missing objects were created (the others were already as planned).
    Applied(Vec<Change>),
    /// The server differs from the plan: nothing was changed.
    Refused(Vec<Change>),
}

/// Every stream's configuration on the server, by name.
async fn server_streams(
    js: &jetstream::Context,
) -> Result<BTreeMap<String, stream::Config>, NatsError> {
    let mut out = BTreeMap::new();
    let mut streams = js.streams();
    while let Some(info) = streams.next().await {
        let info = info.map_err(|e| NatsError::Refused {
            subject: "$JS.API.STREAM.LIST".into(),
            reason: e.to_string(),
        })?;
        out.insert(info.config.name.clone(), info.config);
    }
    Ok(out)
}

fn list(v: &[String]) -> String {
    format!("[{}]", v.join(", "))
}

fn diff_stream(planned: &StreamObject, deployed: &stream::Config) -> Vec<FieldDiff> {
    let mut fields = Vec::new();
    let mut want = planned.subjects.clone();
    let mut have = deployed.subjects.clone();
    want.sort();
    have.sort();
    if want != have {
        fields.push(FieldDiff {
            field: "subjects",
            deployed: list(&deployed.subjects),
            planned: list(&planned.subjects),
        });
    }
    if deployed.num_replicas.max(1) != planned.replicas {
        fields.push(FieldDiff {
            field: "replicas",
            deployed: deployed.num_replicas.to_string(),
            planned: planned.replicas.to_string(),
        });
    }
    if deployed.duplicate_window != planned.duplicate_window {
        fields.push(FieldDiff {
            field: "duplicate window",
            deployed: format!("{:?}", deployed.duplicate_window),
            planned: format!("{:?}", planned.duplicate_window),
        });
    }
    if deployed.allow_message_ttl != planned.allow_msg_ttl {
        fields.push(FieldDiff {
            field: "message TTLs allowed",
            deployed: deployed.allow_message_ttl.to_string(),
            planned: planned.allow_msg_ttl.to_string(),
        });
    }
    fields
}

fn diff_bucket(planned: &BucketObject, deployed: &stream::Config) -> Vec<FieldDiff> {
    let mut fields = Vec::new();
    if deployed.max_messages_per_subject != planned.history {
        fields.push(FieldDiff {
            field: "history",
            deployed: deployed.max_messages_per_subject.to_string(),
            planned: planned.history.to_string(),
        });
    }
    if deployed.num_replicas.max(1) != planned.replicas {
        fields.push(FieldDiff {
            field: "replicas",
            deployed: deployed.num_replicas.to_string(),
            planned: planned.replicas.to_string(),
        });
    }
    fields
}

/// Compares the plan's objects with the server's, in the plan's order, then the orphans (by
/// name). Reads only.
pub async fn compare(js: &jetstream::Context, d: &Deployment) -> Result<Vec<Change>, NatsError> {
    let streams = server_streams(js).await?;
    let mut changes = Vec::new();
    let mut planned = std::collections::BTreeSet::new();
    for o in d.objects() {
        planned.insert(o.stream_name());
        let change = match streams.get(&o.stream_name()) {
            None => Change::Create(o.clone()),
            Some(config) => {
                let fields = match o {
                    Object::Stream(s) => diff_stream(s, config),
                    Object::Bucket(b) => diff_bucket(b, config),
                };
                if fields.is_empty() {
                    Change::Unchanged(o.clone())
                } else {
                    Change::Differs {
                        object: o.clone(),
                        fields,
                    }
                }
            }
        };
        changes.push(change);
    }
    let mine = d.description();
    for (name, config) in &streams {
        let description = config.description.clone().unwrap_or_default();
        if description.starts_with(&mine) && !planned.contains(name) {
            changes.push(Change::Orphan {
                stream: name.clone(),
                description,
            });
        }
    }
    Ok(changes)
}

/// The description a deployed object carries: the spec, then the mechanism.
fn description(d: &Deployment, mechanism: &str) -> String {
    format!("{} {mechanism}", d.description())
}

async fn create(js: &jetstream::Context, d: &Deployment, o: &Object) -> Result<(), NatsError> {
    let mechanism = d
        .mechanisms
        .iter()
        .find(|m| m.objects.iter().any(|(_, x)| x == o))
        .map_or("", |m| m.mechanism.as_str());
    let refused = |reason: String| NatsError::Refused {
        subject: o.stream_name(),
        reason,
    };
    match o {
        Object::Stream(s) => js
            .create_stream(stream::Config {
                name: s.name.clone(),
                description: Some(description(d, mechanism)),
                subjects: s.subjects.clone(),
                num_replicas: s.replicas,
                duplicate_window: s.duplicate_window,
                allow_message_ttl: s.allow_msg_ttl,
                ..Default::default()
            })
            .await
            .map(drop)
            .map_err(|e| refused(e.to_string())),
        Object::Bucket(b) => js
            .create_key_value(kv::Config {
                bucket: b.name.clone(),
                description: description(d, mechanism),
                history: b.history,
                num_replicas: b.replicas,
                ..Default::default()
            })
            .await
            .map(drop)
            .map_err(|e| refused(e.to_string())),
    }
}

/// Deploys the plan's objects: compares, then creates the missing objects only if nothing
/// differs. Idempotent; never modifies or deletes an existing object.
pub async fn deploy(js: &jetstream::Context, d: &Deployment) -> Result<Outcome, NatsError> {
    let changes = compare(js, d).await?;
    if changes.iter().any(Change::is_difference) {
        return Ok(Outcome::Refused(changes));
    }
    if !changes.iter().any(|c| matches!(c, Change::Create(_))) {
        return Ok(Outcome::NoChange(changes));
    }
    for c in &changes {
        if let Change::Create(o) = c {
            // `create_stream` fails on a stream that appeared since the comparison (another
            // deployment racing this one) rather than updating it.
            create(js, d, o).await?;
        }
    }
    Ok(Outcome::Applied(changes))
}

/// Updates an existing object to the plan's configuration, in place: its messages are kept.
async fn update(js: &jetstream::Context, o: &Object) -> Result<(), NatsError> {
    let name = o.stream_name();
    let refused = |reason: String| NatsError::Refused {
        subject: name.clone(),
        reason,
    };
    let mut s = js
        .get_stream(&name)
        .await
        .map_err(|e| refused(e.to_string()))?;
    let mut config = s
        .info()
        .await
        .map_err(|e| refused(e.to_string()))?
        .config
        .clone();
    match o {
        Object::Stream(planned) => {
            config.subjects = planned.subjects.clone();
            config.num_replicas = planned.replicas;
            config.duplicate_window = planned.duplicate_window;
            config.allow_message_ttl = planned.allow_msg_ttl;
        }
        Object::Bucket(planned) => {
            config.max_messages_per_subject = planned.history;
            config.num_replicas = planned.replicas;
        }
    }
    js.update_stream(config)
        .await
        .map(drop)
        .map_err(|e| refused(e.to_string()))
}

/// Deploys the plan's objects over a server that differs from it (`blazes deploy --force`):
/// creates the missing objects and updates the differing ones in place (their messages are
/// kept); objects no longer in the plan (orphans) are left alone, since deleting them would
/// delete their messages. Returns the comparison it acted on.
pub async fn deploy_forced(
    js: &jetstream::Context,
    d: &Deployment,
) -> Result<Vec<Change>, NatsError> {
    let changes = compare(js, d).await?;
    for c in &changes {
        match c {
            Change::Create(o) => create(js, d, o).await?,
            Change::Differs { object, .. } => update(js, object).await?,
            Change::Unchanged(_) | Change::Orphan { .. } => {}
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use crate::runtime::deploy::{CHECKPOINT_HISTORY, DEFAULT_REPLICAS, DUPLICATE_WINDOW};
    use crate::runtime::nats::{barrier, sequencer, session, smr};

    /// The sans-IO module restates the mechanisms' defaults (it builds without the `nats`
    /// feature); they must agree. The subjects and flags are compared on a real server in
    /// `tests/deploy_nats.rs`.
    #[test]
    fn the_defaults_agree_with_the_mechanisms_configs() {
        let s = sequencer::SequencerConfig::new("x");
        let k = session::KeyedConfig::new("x", 1);
        let b = barrier::BarrierConfig::new("x", &[]);
        let r = smr::ReplicaConfig::new("x", "r");
        for (replicas, window) in [
            (s.replicas, s.duplicate_window),
            (k.replicas, k.duplicate_window),
            (b.replicas, b.duplicate_window),
            (r.replicas, r.duplicate_window),
        ] {
            assert_eq!(replicas, DEFAULT_REPLICAS);
            assert_eq!(window, DUPLICATE_WINDOW);
        }
        assert_eq!(r.outputs, "x-out");
        assert_eq!(r.checkpoints, "x-replicas");
        assert_eq!(CHECKPOINT_HISTORY, 1);
    }
}
