//! What the component host's instances read their inputs with: the channel the plan gives a
//! component, the plain input stream of a component without a mechanism, and one durable
//! consumer per instance.

use std::time::Duration;

use super::{
    ACK_WAIT, ConsumerObject, DUPLICATE_WINDOW, DeployError, Deployment, HostedObjects,
    MAX_ACK_PENDING, MechanismKind, Object, PlanFile, Role, StreamObject, check_collisions,
    sanitize,
};

/// The subjects of a plain input stream (`blazes_runtime::nats::host`).
pub const PLAIN_SUBJECTS: [&str; 1] = [">"];

/// The stream `<spec>-<component>-in` on which a component the plan gives no mechanism
/// receives its inputs (`blazes_runtime::nats::host`), one subject per producing instance, with
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
        let channel = match m.kind {
            MechanismKind::SealBarrier => named(Role::Barrier).map(|stream| Channel::Barrier {
                stream,
                producers: m.producers.clone(),
            }),
            MechanismKind::GlobalOrder => match (named(Role::Sequence), named(Role::Checkpoints)) {
                (Some(stream), Some(checkpoints)) => Some(Channel::Sequence {
                    stream,
                    checkpoints,
                }),
                _ => None,
            },
            MechanismKind::KeyedOrder => named(Role::Keyed).map(|stream| Channel::Keyed { stream }),
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
/// input streams of components without a mechanism and the durable consumers. Instance `i` of
/// a component in `routed_by_instance` reads only the plain messages routed to key `i`, as a
/// host with `input_key = Some(i)` does. Fails when a routed component is not among
/// `components` or has a mechanism on its inputs (checked for every one, in the order given),
/// or when an added stream would share a name with another object.
pub fn with_hosts(
    plan: &PlanFile,
    d: Deployment,
    components: &[String],
    instances: usize,
    routed_by_instance: &[String],
) -> Result<Deployment, DeployError> {
    with_partitioned_hosts(plan, d, components, instances, routed_by_instance, &[])
}

/// [`with_hosts`], with the components of `partitions` (a name and its partition count, as
/// the spec's `partitions: N` says) deployed as that many instances instead of `instances`:
/// one per partition, and each reading only the plain messages routed to its partition's key
/// (`0` to `N - 1`) when the component has no mechanism on its inputs.
pub fn with_partitioned_hosts(
    plan: &PlanFile,
    mut d: Deployment,
    components: &[String],
    instances: usize,
    routed_by_instance: &[String],
    partitions: &[(String, usize)],
) -> Result<Deployment, DeployError> {
    d.instances = instances;
    d.hosted.clear();
    for routed in routed_by_instance {
        if !components.contains(routed) {
            return Err(DeployError::RouteUnknown {
                path: plan.path.clone(),
                component: routed.clone(),
                known: components.join(", "),
            });
        }
        let channel = channel_of(plan, &d, routed);
        if !matches!(channel, Channel::Plain { .. }) {
            return Err(DeployError::RouteNotPlain {
                path: plan.path.clone(),
                component: routed.clone(),
                channel: channel.describe(),
            });
        }
    }
    for component in components {
        let channel = channel_of(plan, &d, component);
        let partitioned = partitions
            .iter()
            .find(|(c, _)| c == component)
            .map(|&(_, n)| n);
        let plain = matches!(channel, Channel::Plain { .. });
        let routed =
            routed_by_instance.contains(component) || (partitioned.is_some_and(|n| n > 1) && plain);
        let instances = partitioned.unwrap_or(instances);
        let mut objects = Vec::new();
        if matches!(channel, Channel::Plain { .. }) {
            objects.push((
                Role::PlainInput,
                Object::Stream(plain_input(&d, component, d.replicas)),
            ));
        }
        for i in 0..instances {
            let instance = i.to_string();
            let key = routed.then_some(instance.as_str());
            if let Some(c) = input_consumer(&channel, component, &instance, key, ACK_WAIT) {
                objects.push((Role::Reader, Object::Consumer(c)));
            }
        }
        if !objects.is_empty() {
            d.hosted.push(HostedObjects {
                component: component.clone(),
                objects,
                routed_by_instance: routed,
                partitions: partitioned,
            });
        }
    }
    check_collisions(&d)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::derive;

    fn file(mechanisms: &str) -> PlanFile {
        crate::deploy::repaired_plan("s", mechanisms)
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
        let d = with_hosts(&f, derive(&f, 1).unwrap(), &components, 2, &[]).unwrap();
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
        let again = with_hosts(&f, d.clone(), &components, 2, &[]).unwrap();
        assert_eq!(again, d);
    }

    #[test]
    fn a_component_routed_by_instance_reads_its_own_key_and_others_are_refused() {
        let f = file(
            r#"{"kind": "seal-barrier", "component": "C", "input": "i", "key": ["k"]},
               {"kind": "keyed-order", "component": "K", "key": ["k"]}"#,
        );
        let components = ["A".to_string(), "B".to_string(), "C".to_string()];
        let filters = |routed: &[String]| -> Vec<String> {
            let d = with_hosts(&f, derive(&f, 1).unwrap(), &components, 2, routed).unwrap();
            d.hosted
                .iter()
                .flat_map(|h| h.objects.iter())
                .filter_map(|(_, o)| match o {
                    Object::Consumer(c) => Some(format!("{}: {}", c.name, c.filter)),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            filters(&["A".to_string()]),
            [
                "A-0: s-A-in.*.0",
                "A-1: s-A-in.*.1",
                "B-0: ",
                "B-1: ",
                "C-0: s-C-i-seal.rel.*",
                "C-1: s-C-i-seal.rel.*"
            ]
        );
        // Control: without the option every instance of A reads every subject.
        assert_eq!(filters(&[])[..2], ["A-0: ", "A-1: "]);
        let refused = |routed: &str| {
            with_hosts(
                &f,
                derive(&f, 1).unwrap(),
                &components,
                2,
                &[routed.to_string()],
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            refused("Z"),
            "cannot route the inputs of `Z` by instance: `s.yaml` has no component `Z` (its components: A, B, C)"
        );
        assert!(
            refused("C").contains("gives it its inputs through a seal barrier"),
            "{}",
            refused("C")
        );
    }
}
