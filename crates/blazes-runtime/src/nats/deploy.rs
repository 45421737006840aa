//! Applying a plan's engine objects ([`crate::deploy`]) to a JetStream server.
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
//! Durable consumers are compared the same way, within the stream they read: one that a
//! host created with the listed configuration is unchanged, one this spec's deployment created
//! that is no longer listed (fewer instances) is an orphan.

use std::collections::BTreeMap;

use async_nats::jetstream::consumer::{self, AckPolicy, pull};
use async_nats::jetstream::{self, kv, stream};
use futures_util::StreamExt;

use super::NatsError;
use crate::deploy::{
    BucketObject, ConsumerObject, DESCRIPTION_PREFIX, Deployment, Object, StreamObject,
};

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
    /// A stream (or a durable consumer) of this spec's earlier deployment that the plan no
    /// longer lists.
    Orphan {
        /// The stream's name (`KV_<bucket>` for a bucket, `<stream>/<consumer>` for a
        /// consumer).
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
                "orphan {} {stream}: deployed for this spec ({}) but the plan no longer lists it",
                if stream.contains('/') {
                    "consumer"
                } else {
                    "stream"
                },
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

fn diff_consumer(planned: &ConsumerObject, deployed: &consumer::Config) -> Vec<FieldDiff> {
    let mut fields = Vec::new();
    if deployed.filter_subject != planned.filter {
        fields.push(FieldDiff {
            field: "filter",
            deployed: format!("{:?}", deployed.filter_subject),
            planned: format!("{:?}", planned.filter),
        });
    }
    if deployed.ack_policy != AckPolicy::Explicit {
        fields.push(FieldDiff {
            field: "acknowledgements",
            deployed: format!("{:?}", deployed.ack_policy),
            planned: format!("{:?}", AckPolicy::Explicit),
        });
    }
    if deployed.ack_wait != planned.ack_wait {
        fields.push(FieldDiff {
            field: "ack wait",
            deployed: format!("{:?}", deployed.ack_wait),
            planned: format!("{:?}", planned.ack_wait),
        });
    }
    if deployed.max_ack_pending != planned.max_ack_pending {
        fields.push(FieldDiff {
            field: "max ack pending",
            deployed: deployed.max_ack_pending.to_string(),
            planned: planned.max_ack_pending.to_string(),
        });
    }
    fields
}

/// The durable consumers of `stream` on the server, by name (none when it does not exist).
pub async fn server_consumers(
    js: &jetstream::Context,
    stream: &str,
) -> Result<BTreeMap<String, consumer::Config>, NatsError> {
    let mut out = BTreeMap::new();
    let Ok(s) = js.get_stream(stream).await else {
        return Ok(out);
    };
    let mut consumers = s.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.map_err(|e| NatsError::Refused {
            subject: format!("$JS.API.CONSUMER.LIST.{stream}"),
            reason: e.to_string(),
        })?;
        if info.config.durable_name.is_some() {
            out.insert(info.name.clone(), info.config);
        }
    }
    Ok(out)
}

/// Compares the plan's objects with the server's, in the plan's order, then the orphans (by
/// name). Reads only.
pub async fn compare(js: &jetstream::Context, d: &Deployment) -> Result<Vec<Change>, NatsError> {
    let streams = server_streams(js).await?;
    let mut consumers: BTreeMap<String, BTreeMap<String, consumer::Config>> = BTreeMap::new();
    for o in d.objects() {
        if let Object::Consumer(c) = o
            && !consumers.contains_key(&c.stream)
        {
            consumers.insert(c.stream.clone(), server_consumers(js, &c.stream).await?);
        }
    }
    let mut changes = Vec::new();
    let mut planned = std::collections::BTreeSet::new();
    let mut planned_consumers = std::collections::BTreeSet::new();
    for o in d.objects() {
        if let Object::Consumer(c) = o {
            planned_consumers.insert((c.stream.clone(), c.name.clone()));
            let change = match consumers.get(&c.stream).and_then(|m| m.get(&c.name)) {
                None => Change::Create(o.clone()),
                Some(config) => match diff_consumer(c, config) {
                    fields if fields.is_empty() => Change::Unchanged(o.clone()),
                    fields => Change::Differs {
                        object: o.clone(),
                        fields,
                    },
                },
            };
            changes.push(change);
            continue;
        }
        planned.insert(o.stream_name());
        let change = match streams.get(&o.stream_name()) {
            None => Change::Create(o.clone()),
            Some(config) => {
                let fields = match o {
                    Object::Stream(s) => diff_stream(s, config),
                    Object::Bucket(b) => diff_bucket(b, config),
                    Object::Consumer(_) => unreachable!("consumers are compared above"),
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
    for (stream, on_stream) in &consumers {
        for (name, config) in on_stream {
            let description = config.description.clone().unwrap_or_default();
            if description.starts_with(&mine)
                && !planned_consumers.contains(&(stream.clone(), name.clone()))
            {
                changes.push(Change::Orphan {
                    stream: format!("{stream}/{name}"),
                    description,
                });
            }
        }
    }
    Ok(changes)
}

/// The configuration a durable consumer is created with (by a deployment or by the host).
pub fn consumer_config(c: &ConsumerObject, description: Option<String>) -> pull::Config {
    pull::Config {
        durable_name: Some(c.name.clone()),
        description,
        filter_subject: c.filter.clone(),
        ack_policy: AckPolicy::Explicit,
        ack_wait: c.ack_wait,
        max_ack_pending: c.max_ack_pending,
        ..Default::default()
    }
}

/// The configuration a stream is created with, without a description (the host's).
pub fn stream_config(s: &StreamObject) -> stream::Config {
    stream::Config {
        name: s.name.clone(),
        subjects: s.subjects.clone(),
        num_replicas: s.replicas,
        duplicate_window: s.duplicate_window,
        allow_message_ttl: s.allow_msg_ttl,
        ..Default::default()
    }
}

/// The configuration a key-value bucket is created with, without a description (the host's and
/// the replicas' own).
pub fn bucket_config(b: &BucketObject) -> kv::Config {
    kv::Config {
        bucket: b.name.clone(),
        history: b.history,
        num_replicas: b.replicas,
        ..Default::default()
    }
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
        .map(|m| m.mechanism.clone())
        .or_else(|| {
            d.hosted
                .iter()
                .find(|h| h.objects.iter().any(|(_, x)| x == o))
                .map(|h| format!("hosted component {}", h.component))
        })
        .unwrap_or_default();
    let mechanism = mechanism.as_str();
    let refused = |reason: String| NatsError::Refused {
        subject: o.stream_name(),
        reason,
    };
    match o {
        Object::Stream(s) => js
            .create_stream(stream::Config {
                description: Some(description(d, mechanism)),
                ..stream_config(s)
            })
            .await
            .map(drop)
            .map_err(|e| refused(e.to_string())),
        Object::Bucket(b) => js
            .create_key_value(kv::Config {
                description: description(d, mechanism),
                ..bucket_config(b)
            })
            .await
            .map(drop)
            .map_err(|e| refused(e.to_string())),
        Object::Consumer(c) => put_consumer(js, c, description(d, mechanism)).await,
    }
}

/// Creates durable consumer `c`, or updates it to `c`'s configuration (the server keeps its
/// position).
async fn put_consumer(
    js: &jetstream::Context,
    c: &ConsumerObject,
    description: String,
) -> Result<(), NatsError> {
    let refused = |reason: String| NatsError::Refused {
        subject: format!("{}/{}", c.stream, c.name),
        reason,
    };
    let s = js
        .get_stream(&c.stream)
        .await
        .map_err(|e| refused(e.to_string()))?;
    s.create_consumer(consumer_config(c, Some(description)))
        .await
        .map(drop)
        .map_err(|e| refused(e.to_string()))
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
async fn update(js: &jetstream::Context, d: &Deployment, o: &Object) -> Result<(), NatsError> {
    if let Object::Consumer(_) = o {
        // Creating a durable consumer that exists updates it in place.
        return create(js, d, o).await;
    }
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
        Object::Consumer(_) => unreachable!("consumers are updated above"),
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
            Change::Differs { object, .. } => update(js, d, object).await?,
            Change::Unchanged(_) | Change::Orphan { .. } => {}
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use crate::deploy::{CHECKPOINT_HISTORY, DEFAULT_REPLICAS, DUPLICATE_WINDOW};
    use crate::nats::{barrier, sequencer, session, smr};

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
