//! How the plan gives a component its inputs, and what an instance opens to read them: the
//! names and configurations come from [`crate::deploy`], which `blazes deploy` lists.

use std::collections::BTreeMap;

use super::{HostConfig, HostError};
use crate::deploy::{self, ConsumerObject, Deployment, MechanismKind, PlanFile, StreamObject};

pub use crate::deploy::Channel;

/// The channel the plan gives `component`'s inputs (a plain stream when it gives none).
pub fn channel_of(
    plan: &PlanFile,
    deployment: &Deployment,
    component: &str,
) -> Result<Channel, HostError> {
    Ok(deploy::channel_of(plan, deployment, component))
}

/// What instance `config` of a component reading `channel` opens besides the mechanism: the
/// plain input stream (if any) and its durable consumer (if any), as [`deploy::with_hosts`]
/// lists them for a host with the default configuration.
pub fn input_objects(
    deployment: &Deployment,
    channel: &Channel,
    config: &HostConfig,
) -> (Option<StreamObject>, Option<ConsumerObject>) {
    let stream = matches!(channel, Channel::Plain { .. })
        .then(|| deploy::plain_input(deployment, &config.component, config.replicas));
    let consumer = deploy::input_consumer(
        channel,
        &config.component,
        &config.instance,
        config.input_key.as_deref(),
        config.ack_wait,
    );
    (stream, consumer)
}

/// The plan's components that have a mechanism on their inputs, by name (what a host would
/// open for each).
pub fn channels(plan: &PlanFile, replicas: usize) -> Result<BTreeMap<String, Channel>, HostError> {
    let deployment = deploy::derive(plan, replicas)?;
    let mut out = BTreeMap::new();
    for m in &plan.mechanisms {
        if let Some(c) = &m.component
            && m.kind != MechanismKind::AddSeal
        {
            out.insert(c.clone(), channel_of(plan, &deployment, c)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::Object;

    fn plan(mechanisms: &str) -> PlanFile {
        crate::deploy::repaired_plan("wc", mechanisms)
    }

    #[test]
    fn channels_are_named_as_deploy_lists_them() {
        let p = plan(
            r#"{"kind": "add-seal", "source": "tweets", "key": ["batch"]},
               {"kind": "seal-barrier", "component": "Count", "input": "words", "key": ["batch"], "producers": ["tweets"]},
               {"kind": "global-order", "component": "Rank"},
               {"kind": "keyed-order", "component": "Report", "key": ["id"]}"#,
        );
        let d = deploy::derive(&p, 1).unwrap();
        let listed: Vec<&str> = d.objects().map(Object::name).collect();
        let c = channels(&p, 1).unwrap();
        assert_eq!(
            c["Count"],
            Channel::Barrier {
                stream: "wc-Count-words-seal".into(),
                producers: vec!["tweets".into()]
            }
        );
        assert_eq!(
            c["Rank"],
            Channel::Sequence {
                stream: "wc-Rank-seq".into(),
                checkpoints: "wc-Rank-replicas".into()
            }
        );
        assert_eq!(
            c["Report"],
            Channel::Keyed {
                stream: "wc-Report-keyed".into()
            }
        );
        for channel in c.values() {
            let name = match channel {
                Channel::Barrier { stream, .. }
                | Channel::Sequence { stream, .. }
                | Channel::Keyed { stream }
                | Channel::Plain { stream } => stream,
            };
            assert!(
                listed.contains(&name.as_str()),
                "{name} is not in {listed:?}"
            );
        }
        // A component without a mechanism reads the plain stream deploy names for it.
        assert_eq!(
            channel_of(&p, &d, "Commit").unwrap(),
            Channel::Plain {
                stream: "wc-Commit-in".into()
            }
        );
    }

    /// What a host with the default configuration opens besides the mechanism, for instances
    /// `0..n` of every component of `p`; an instance of a component in `keyed` reads with its
    /// own name as its input key.
    fn opened(
        p: &PlanFile,
        components: &[&str],
        instances: &[&str],
        keyed: &[&str],
    ) -> Vec<Object> {
        let d = deploy::derive(p, 1).unwrap();
        let mut out = Vec::new();
        for c in components {
            let channel = channel_of(p, &d, c).unwrap();
            for (n, i) in instances.iter().enumerate() {
                let mut config = HostConfig::new(c, i).replicas(1);
                if keyed.contains(c) {
                    config = config.input_key(i.to_string());
                }
                let (stream, consumer) = input_objects(&d, &channel, &config);
                if n == 0 {
                    out.extend(stream.map(Object::Stream));
                }
                out.extend(consumer.map(Object::Consumer));
            }
        }
        out
    }

    #[test]
    fn the_host_opens_exactly_what_deploy_lists() {
        let p = plan(
            r#"{"kind": "add-seal", "source": "tweets", "key": ["batch"]},
               {"kind": "seal-barrier", "component": "Count", "input": "words", "key": ["batch"], "producers": ["tweets"]},
               {"kind": "global-order", "component": "Rank"},
               {"kind": "keyed-order", "component": "Report", "key": ["id"]}"#,
        );
        let components = ["Split", "Count", "Rank", "Report", "Commit"];
        let names: Vec<String> = components.iter().map(|c| c.to_string()).collect();
        let listed_routed = |instances: usize, routed: &[&str]| -> Vec<Object> {
            let routed: Vec<String> = routed.iter().map(|c| c.to_string()).collect();
            let d = deploy::with_hosts(
                &p,
                deploy::derive(&p, 1).unwrap(),
                &names,
                instances,
                &routed,
            )
            .unwrap();
            d.hosted
                .iter()
                .flat_map(|h| h.objects.iter().map(|(_, o)| o.clone()))
                .collect()
        };
        let listed = |instances: usize| listed_routed(instances, &[]);
        assert_eq!(opened(&p, &components, &["0"], &[]), listed(1));
        assert_eq!(opened(&p, &components, &["0", "1", "2"], &[]), listed(3));
        assert_eq!(
            listed(1).len(),
            5,
            "Split and Commit: stream and consumer; Count: consumer"
        );
        // Negative control: an instance named otherwise than deploy numbers them opens a
        // consumer deploy does not list.
        assert_ne!(opened(&p, &components, &["a"], &[]), listed(1));

        // Key-routed readers (instance i reads key i, as the word count's splitters do) open
        // what deploy lists for components routed by instance.
        let three = ["0", "1", "2"];
        assert_eq!(
            opened(&p, &components, &three, &["Split", "Commit"]),
            listed_routed(3, &["Split", "Commit"])
        );
        assert_eq!(
            opened(&p, &components, &three, &["Split"]),
            listed_routed(3, &["Split"])
        );
        // Negative controls: the listing without the option is not what keyed hosts open (their
        // consumers filter on their key), nor is the keyed listing what unkeyed hosts open.
        assert_ne!(opened(&p, &components, &three, &["Split"]), listed(3));
        assert_ne!(
            opened(&p, &components, &three, &[]),
            listed_routed(3, &["Split"])
        );
        let d = deploy::derive(&p, 1).unwrap();
        let keyed = HostConfig::new("Commit", "0").input_key("0");
        let channel = channel_of(&p, &d, "Commit").unwrap();
        let (_, consumer) = input_objects(&d, &channel, &keyed);
        let consumer = Object::Consumer(consumer.unwrap());
        assert!(!listed(1).contains(&consumer));
        assert!(listed_routed(1, &["Commit"]).contains(&consumer));
    }
}
