//! A deployment in words: what `blazes deploy --dry-run` prints.

use std::fmt::Write as _;
use std::time::Duration;

use super::{Deployment, Object};

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// One object's configuration, one `field: value` per line, indented by `indent`.
pub fn describe_object(o: &Object, indent: &str) -> String {
    let mut s = String::new();
    match o {
        Object::Stream(st) => {
            let _ = writeln!(s, "{indent}subjects: {}", st.subjects.join(", "));
            let _ = writeln!(s, "{indent}replicas: {}", st.replicas);
            let _ = writeln!(
                s,
                "{indent}duplicate window: {}",
                seconds(st.duplicate_window)
            );
            let _ = writeln!(
                s,
                "{indent}message TTLs: {}",
                if st.allow_msg_ttl {
                    "allowed"
                } else {
                    "not allowed"
                }
            );
        }
        Object::Bucket(b) => {
            let _ = writeln!(s, "{indent}history: {}", b.history);
            let _ = writeln!(s, "{indent}replicas: {}", b.replicas);
        }
        Object::Consumer(c) => {
            let _ = writeln!(s, "{indent}stream: {}", c.stream);
            let _ = writeln!(
                s,
                "{indent}filter: {}",
                if c.filter.is_empty() {
                    "every subject"
                } else {
                    &c.filter
                }
            );
            let _ = writeln!(
                s,
                "{indent}acknowledgements: explicit, wait {}, at most {} pending",
                seconds(c.ack_wait),
                c.max_ack_pending
            );
        }
    }
    s
}

/// The deployment in words: per mechanism its objects and their configuration. Deterministic.
pub fn render(d: &Deployment) -> String {
    let objects = d.objects().count();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: spec `{}`, {} mechanism{}, {} engine object{}",
        d.path,
        d.spec,
        d.mechanisms.len(),
        if d.mechanisms.len() == 1 { "" } else { "s" },
        objects,
        if objects == 1 { "" } else { "s" },
    );
    if d.mechanisms.is_empty() && d.hosted.is_empty() {
        let _ = writeln!(s, "  nothing to deploy: the spec needs no coordination");
    } else if d.mechanisms.is_empty() {
        let _ = writeln!(s, "  no mechanism: the spec needs no coordination");
    }
    for m in &d.mechanisms {
        let _ = writeln!(s, "\n  {}", m.mechanism);
        if let Some(note) = &m.note {
            let _ = writeln!(s, "    {note}");
        }
        for (role, o) in &m.objects {
            let _ = writeln!(s, "    {} {} ({})", o.kind(), o.name(), role.describe());
            s.push_str(&describe_object(o, "      "));
        }
    }
    if !d.hosted.is_empty() {
        let _ = writeln!(
            s,
            "\n  hosted components: {} instance{} each (0{})",
            d.instances,
            if d.instances == 1 { "" } else { "s" },
            if d.instances > 1 {
                format!(" to {}", d.instances - 1)
            } else {
                String::new()
            }
        );
    }
    for h in &d.hosted {
        if let Some(n) = h.partitions {
            let routed = if h.routed_by_instance {
                ", instance i reads only the messages routed to key i"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "    {} (partitions: {n}: {}{routed})",
                h.component,
                match n {
                    1 => "1 instance, 0".to_string(),
                    n => format!("{n} instances, 0 to {}", n - 1),
                }
            );
        } else if h.routed_by_instance {
            let _ = writeln!(
                s,
                "    {} (routed by instance: instance i reads only the messages routed to key i)",
                h.component
            );
        } else {
            let _ = writeln!(s, "    {}", h.component);
        }
        for (role, o) in &h.objects {
            let _ = writeln!(s, "      {} {} ({})", o.kind(), o.name(), role.describe());
            s.push_str(&describe_object(o, "        "));
        }
    }
    if objects > 0 {
        let _ = writeln!(
            s,
            "\n  other consumers: none durable (the mechanisms' readers create their own ordered consumers)"
        );
    }
    s
}
