//! What the component host's instances read their inputs with: the channel the plan gives a
//! component, the plain input stream of a component without a mechanism, and one durable
//! consumer per instance.

use std::time::Duration;

use super::{
    ACK_WAIT, ConsumerObject, DUPLICATE_WINDOW, DeployError, Deployment, HostedObjects,
    MAX_ACK_PENDING, Object, PlanFile, Role, StreamObject, check_collisions, sanitize,
};

/// The subjects of a plain input stream (`runtime::nats::host`).
pub const PLAIN_SUBJECTS: [&str; 1] = [">"];

/// The stream `<spec>-<component>-in` on which a component the plan gives no mechanism
/// receives its inputs (`runtime::nats::host`), one subject per producing instance, with
/// `replicas` Raft replicas. Listed by [`with_hosts`]; the host also creates it when a
/// component reads or writes it before a deployment did.
pub fn plain_input(d: &Deployment, component: &str, replicas: usize) -> StreamObject {
    StreamObject {
        name: format!("{}-{}-in", d.prefix, sanitize(component)),
        subjects: PLAIN_SUBJECTS
            .iter()
            .map(|s| format!("{}-{}-in.{s}", d.prefix, sanitize(component)))
            .collect(),
        replicas,
        duplicate_window: DUPLICATE_WINDOW,
        allow_msg_ttl: false,
    }
}

/// How a component receives its inputs, with the engine names the plan gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// A seal barrier on its input: the stream and the producers the plan names.
    Barrier {
        /// The barrier's stream.
        stream: String,
        /// The producers the plan says it waits for.
        producers: Vec<String>,
    },
    /// A global order: the sequenced stream and the checkpoint bucket.
    Sequence {
        /// The sequencer's stream.
        stream: String,
        /// The checkpoint bucket.
        checkpoints: String,
    },
    /// A keyed order: the component's keyed stream.
    Keyed {
        /// The keyed stream.
        stream: String,
    },
    /// No mechanism: a plain stream.
    Plain {
        /// The stream (`<spec>-<component>-in`).
        stream: String,
    },
}

impl Channel {
    /// How the component receives its inputs, in words.
    pub fn describe(&self) -> &'static str {
        match self {
            Channel::Barrier { .. } => "its inputs through a seal barrier",
            Channel::Sequence { .. } => "its inputs through a global order",
            Channel::Keyed { .. } => "its inputs through a keyed order",
            Channel::Plain { .. } => "its inputs on a plain stream",
        }
    }
}

/// The channel `plan` (derived as `d`) gives `component`'s inputs: the first mechanism on the
/// component that has one, a plain stream when none does.
pub fn channel_of(plan: &PlanFile, d: &Deployment, component: &str) -> Channel {
    for (m, objects) in plan.mechanisms.iter().zip(&d.mechanisms) {
        if m.component.as_deref() != Some(component) {
            continue;
        }
        let named = |role: Role| {
            objects
                .objects
                .iter()
                .find(|(r, _)| *r == role)
                .map(|(_, o)| o.name().to_string())
        };
        let channel = match m.kind.as_str() {
            "seal-barrier" => named(Role::Barrier).map(|stream| Channel::Barrier {
                stream,
                producers: m.producers.clone(),
            }),
            "global-order" => match (named(Role::Sequence), named(Role::Checkpoints)) {
                (Some(stream), Some(checkpoints)) => Some(Channel::Sequence {
                    stream,
                    checkpoints,
                }),
                _ => None,
            },
            "keyed-order" => named(Role::Keyed).map(|stream| Channel::Keyed { stream }),
            _ => None,
        };
        if let Some(c) = channel {
            return c;
        }
    }
    Channel::Plain {
        stream: plain_input(d, component, d.replicas).name,
    }
}

/// The durable consumer's name of instance `instance` of `component`.
pub fn consumer_name(component: &str, instance: &str) -> String {
    format!("{}-{instance}", sanitize(component))
}

/// The durable consumer instance `instance` of `component` reads `channel` with, if the
/// channel has one (barrier releases, a plain stream; a `key` reads only the plain messages
/// routed to it). The orders keep their progress in checkpoints and commits instead.
pub fn input_consumer(
    channel: &Channel,
    component: &str,
    instance: &str,
    key: Option<&str>,
    ack_wait: Duration,
) -> Option<ConsumerObject> {
    let (stream, filter) = match channel {
        Channel::Barrier { stream, .. } => (stream, format!("{stream}.rel.*")),
        Channel::Plain { stream } => (
            stream,
            key.map_or_else(String::new, |k| format!("{stream}.*.{k}")),
        ),
        Channel::Sequence { .. } | Channel::Keyed { .. } => return None,
    };
    Some(ConsumerObject {
        stream: stream.clone(),
        name: consumer_name(component, instance),
        filter,
        ack_wait,
        max_ack_pending: MAX_ACK_PENDING,
    })
}

/// Adds to `d` (derived from `plan`) what `instances` instances (`0`, `1`, ...) of each of
/// `components` read their inputs with, as the host opens them with its defaults: the plain
/// input streams of components without a mechanism and the durable consumers. Fails when an
/// added stream would share a name with another object.
pub fn with_hosts(
    plan: &PlanFile,
    mut d: Deployment,
    components: &[String],
    instances: usize,
) -> Result<Deployment, DeployError> {
    d.instances = instances;
    d.hosted.clear();
    for component in components {
        let channel = channel_of(plan, &d, component);
        let mut objects = Vec::new();
        if matches!(channel, Channel::Plain { .. }) {
            objects.push((
                Role::PlainInput,
                Object::Stream(plain_input(&d, component, d.replicas)),
            ));
        }
        for i in 0..instances {
            if let Some(c) = input_consumer(&channel, component, &i.to_string(), None, ACK_WAIT) {
                objects.push((Role::Reader, Object::Consumer(c)));
            }
        }
        if !objects.is_empty() {
            d.hosted.push(HostedObjects {
                component: component.clone(),
                objects,
            });
        }
    }
    check_collisions(&d)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::deploy::{derive, read_plan};

    fn file(mechanisms: &str) -> PlanFile {
        let doc = format!(
            r#"{{"version": 2, "files": [{{"path": "s.yaml", "name": "s", "status": "repaired", "mechanisms": [{mechanisms}]}}]}}"#
        );
        read_plan(&doc).unwrap().remove(0)
    }

    #[test]
    fn hosts_get_a_plain_stream_without_a_mechanism_and_a_consumer_per_instance() {
        let f = file(
            r#"{"kind": "seal-barrier", "component": "C", "input": "i", "key": ["k"]},
               {"kind": "keyed-order", "component": "K", "key": ["k"]}"#,
        );
        let names = |d: &Deployment| -> Vec<String> {
            d.hosted
                .iter()
                .flat_map(|h| h.objects.iter())
                .map(|(_, o)| format!("{} {}/{}", o.kind(), o.stream_name(), o.name()))
                .collect()
        };
        let components = ["A".to_string(), "C".to_string(), "K".to_string()];
        let d = with_hosts(&f, derive(&f, 1).unwrap(), &components, 2).unwrap();
        assert_eq!(
            names(&d),
            [
                "stream s-A-in/s-A-in",
                "consumer s-A-in/A-0",
                "consumer s-A-in/A-1",
                "consumer s-C-i-seal/C-0",
                "consumer s-C-i-seal/C-1",
            ]
        );
        // Deterministic, and a second call replaces rather than adds.
        let again = with_hosts(&f, d.clone(), &components, 2).unwrap();
        assert_eq!(again, d);
    }
}
