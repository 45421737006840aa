//! What a plan's guarantees assume of the servers it runs on, checked against a running system.
//!
//! The mechanisms promise that an acknowledged write stays (a commit, a release, a checkpoint,
//! a lease), that a replayed output lands once, and that a lease or an expectation is checked
//! by the server. Each promise holds only on a server configured for it:
//!
//! | assumption | why | found wrong |
//! |---|---|---|
//! | server 2.11 or later | leases are message TTLs, fencing names the lease subject (`Nats-Expected-Last-Subject-Sequence-Subject`) | error |
//! | file storage for every stream of the plan | a memory stream is empty after a restart | error |
//! | duplicate window longer than the replay horizon | a replay after the window is stored twice | error |
//! | writes synced before they are acknowledged (`sync_interval: always`) | with the default (about every two minutes) a machine crash loses acknowledged writes | warning |
//! | 3 or more replicas per stream | one node's disk is every copy | warning |
//! | TLS to a server that is not on this machine | credentials and data cross the network in clear | warning |
//!
//! The *replay horizon* is how long after its first copy an output can be published again: the
//! time until its input is handed out again (the acknowledgement wait of a durable consumer, or
//! a lease's TTL) plus how long a publish keeps retrying. [`assess`] decides from facts alone
//! (no IO, unit-tested); [`check`] gathers the facts from the client and, when given, the
//! server's monitoring endpoint (`/varz`, the only place the sync setting is visible).

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, stream};

use super::NatsError;
use crate::deploy::{Deployment, Object};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A guarantee of the plan does not hold on this system: `blazes deploy` refuses.
    Error,
    /// A guarantee holds under a condition the system does not meet everywhere (a machine
    /// crash, a lost node, an untrusted network): said, not refused.
    Warning,
}

/// One assumption found wrong, or not checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// What it is about: `server`, or `stream <name>`.
    pub about: String,
    /// What is wrong and what to do, one sentence.
    pub message: String,
}

/// How the server syncs its writes to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncSetting {
    /// Every write before it is acknowledged.
    Always,
    /// In the background, this often.
    Every(Duration),
}

/// What [`assess`] needs to know of the system.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The server's version (`2.12.1`).
    pub version: String,
    /// Whether the connection is encrypted.
    pub tls: bool,
    /// Whether every server URL is on this machine (loopback).
    pub loopback: bool,
    /// The sync setting; `None` when no monitoring endpoint was given.
    pub sync: Option<SyncSetting>,
    /// The configuration of every stream on the server, by name.
    pub streams: BTreeMap<String, stream::Config>,
}

/// How long after its first copy a deployment may publish an output again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    /// Until an input is handed out again: the acknowledgement wait or a lease's TTL.
    pub redelivery: Duration,
    /// How long a publish keeps retrying.
    pub retry_for: Duration,
}

impl Default for Horizon {
    /// The runtime's defaults: a 5 s acknowledgement wait and lease, 30 s of retries.
    fn default() -> Self {
        Horizon {
            redelivery: crate::deploy::ACK_WAIT.max(Duration::from_secs(5)),
            retry_for: super::DEFAULT_RETRY_FOR,
        }
    }
}

impl Horizon {
    fn total(&self) -> Duration {
        self.redelivery + self.retry_for
    }
}

/// The oldest server version the mechanisms work on.
const OLDEST: (u64, u64) = (2, 11);

/// Decides, from `facts`, which assumptions of `d`'s plan do not hold. Errors first, then
/// warnings, each group in the order above; a stream the server does not have yet is not
/// judged (a deployment creates it as planned).
pub fn assess(d: &Deployment, facts: &Facts, horizon: Horizon) -> Vec<Finding> {
    let mut out = Vec::new();
    let server = |severity, message: String| Finding {
        severity,
        about: "server".into(),
        message,
    };
    match version(&facts.version) {
        Some(v) if v >= OLDEST => {}
        _ => out.push(server(
            Severity::Error,
            format!(
                "nats-server {} is older than {}.{}, which leases (message TTLs) and fencing need; upgrade it",
                facts.version, OLDEST.0, OLDEST.1
            ),
        )),
    }
    let mut seen = std::collections::BTreeSet::new();
    for o in d.objects() {
        if matches!(o, Object::Consumer(_)) {
            continue;
        }
        let name = o.stream_name();
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(config) = facts.streams.get(&name) else {
            continue;
        };
        let about = format!("stream {name}");
        if config.storage != stream::StorageType::File {
            out.push(Finding {
                severity: Severity::Error,
                about: about.clone(),
                message: "keeps its messages in memory, so a server restart loses every commit and release; recreate it with file storage".into(),
            });
        }
        if matches!(o, Object::Stream(_)) && config.duplicate_window < horizon.total() {
            out.push(Finding {
                severity: Severity::Error,
                about: about.clone(),
                message: format!(
                    "its duplicate window ({}) is shorter than the replay horizon ({}: redelivery after {} plus {} of retries), so a replayed output can be stored twice; raise duplicate_window",
                    secs(config.duplicate_window),
                    secs(horizon.total()),
                    secs(horizon.redelivery),
                    secs(horizon.retry_for)
                ),
            });
        }
        if config.num_replicas < 3 {
            out.push(Finding {
                severity: Severity::Warning,
                about,
                message: format!(
                    "has {} replica{}: losing that node's disk loses the stream (fine for one development server; deploy with --replicas 3 on a cluster)",
                    config.num_replicas,
                    if config.num_replicas == 1 { "" } else { "s" }
                ),
            });
        }
    }
    match facts.sync {
        Some(SyncSetting::Always) => {}
        Some(SyncSetting::Every(every)) => out.push(server(
            Severity::Warning,
            format!(
                "syncs writes to disk every {} instead of before acknowledging them: a machine crash or power loss can lose acknowledged commits and releases; set `jetstream {{ sync_interval: always }}`",
                secs(every)
            ),
        )),
        None => out.push(server(
            Severity::Warning,
            "sync setting not checked: give the monitoring endpoint (--monitor http://host:8222) to check `sync_interval: always`".into(),
        )),
    }
    if !facts.tls && !facts.loopback {
        out.push(server(
            Severity::Warning,
            "the connection to a server on another machine is not encrypted; use tls:// URLs and a server that requires TLS".into(),
        ));
    }
    out.sort_by_key(|f| f.severity);
    out
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// `2.12.1` -> (2, 12).
fn version(v: &str) -> Option<(u64, u64)> {
    let mut parts = v.trim_start_matches('v').split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether `url`'s host is this machine.
pub fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host_port = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host = if let Some(h) = host_port.strip_prefix('[') {
        h.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Reads the sync setting from a monitoring endpoint's `/varz` (`http://host:port`).
pub async fn sync_setting(monitor: &str) -> Result<SyncSetting, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = monitor
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{monitor}` is not an http:// URL of a monitoring endpoint"))?
        .trim_end_matches('/');
    let request = async {
        let mut tcp = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| format!("cannot reach `{monitor}`: {e}"))?;
        tcp.write_all(
            format!("GET /varz HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .map_err(|e| format!("cannot ask `{monitor}`: {e}"))?;
        let mut body = Vec::new();
        tcp.read_to_end(&mut body)
            .await
            .map_err(|e| format!("cannot read `{monitor}`: {e}"))?;
        Ok::<_, String>(body)
    };
    let response = tokio::time::timeout(Duration::from_secs(10), request)
        .await
        .map_err(|_| format!("`{monitor}` did not answer within 10 s"))??;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("`{monitor}` did not answer with HTTP"))?;
    let status = head.split(' ').nth(1);
    if !head.starts_with("HTTP/1.") || status != Some("200") {
        return Err(format!(
            "`{monitor}/varz` answered `{}`",
            head.lines().next().unwrap_or_default()
        ));
    }
    parse_varz(body).ok_or_else(|| format!("`{monitor}/varz` holds no JetStream configuration"))
}

/// The sync setting in a `/varz` document.
fn parse_varz(body: &str) -> Option<SyncSetting> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let config = v.get("jetstream")?.get("config")?;
    if config.get("sync_always").and_then(|b| b.as_bool()) == Some(true) {
        return Some(SyncSetting::Always);
    }
    // Nanoseconds; the server's default when the field is left out.
    let every = config
        .get("sync_interval")
        .and_then(|n| n.as_u64())
        .map_or(Duration::from_secs(120), Duration::from_nanos);
    Some(SyncSetting::Every(every))
}

/// Gathers the facts of the system `client` is connected to (through `urls`) and assesses
/// `d`'s plan against them.
pub async fn check(
    client: &async_nats::Client,
    d: &Deployment,
    urls: &[String],
    monitor: Option<&str>,
    horizon: Horizon,
) -> Result<Vec<Finding>, NatsError> {
    use futures_util::StreamExt;
    let info = client.server_info();
    let js = jetstream::new(client.clone());
    let mut streams = BTreeMap::new();
    let mut list = js.streams();
    while let Some(s) = list.next().await {
        let s = s.map_err(|e| NatsError::Refused {
            subject: "$JS.API.STREAM.LIST".into(),
            reason: e.to_string(),
        })?;
        streams.insert(s.config.name.clone(), s.config);
    }
    let mut findings = Vec::new();
    let sync = match monitor {
        Some(m) => match sync_setting(m).await {
            Ok(s) => Some(s),
            Err(e) => {
                findings.push(Finding {
                    severity: Severity::Error,
                    about: "server".into(),
                    message: e,
                });
                return Ok(findings);
            }
        },
        None => None,
    };
    let facts = Facts {
        version: info.version.clone(),
        tls: info.tls_required || urls.iter().any(|u| u.starts_with("tls://")),
        loopback: urls.iter().all(|u| is_loopback(u)),
        sync,
        streams,
    };
    Ok(assess(d, &facts, horizon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            version: "2.12.1".into(),
            tls: false,
            loopback: true,
            sync: Some(SyncSetting::Always),
            streams: BTreeMap::new(),
        }
    }

    fn deployment() -> Deployment {
        let doc = r#"{"version": 2, "files": [{"path": "t.yaml", "name": "t", "status": "repaired",
            "mechanisms": [{"kind": "global-order", "component": "Sum"}]}]}"#;
        let plan = crate::deploy::read_plan(doc).unwrap().remove(0);
        crate::deploy::derive(&plan, 3).unwrap()
    }

    fn deployed(
        d: &Deployment,
        edit: impl Fn(&mut stream::Config),
    ) -> BTreeMap<String, stream::Config> {
        d.objects()
            .filter(|o| !matches!(o, Object::Consumer(_)))
            .map(|o| {
                let mut c = stream::Config {
                    name: o.stream_name(),
                    num_replicas: 3,
                    duplicate_window: Duration::from_secs(120),
                    storage: stream::StorageType::File,
                    ..Default::default()
                };
                edit(&mut c);
                (o.stream_name(), c)
            })
            .collect()
    }

    #[test]
    fn a_system_as_the_plan_assumes_has_no_finding() {
        let d = deployment();
        let mut f = facts();
        f.streams = deployed(&d, |_| {});
        assert_eq!(assess(&d, &f, Horizon::default()), []);
    }

    #[test]
    fn each_assumption_found_wrong_is_one_finding_errors_first() {
        let d = deployment();
        let mut f = facts();
        f.version = "2.10.22".into();
        f.sync = Some(SyncSetting::Every(Duration::from_secs(120)));
        f.loopback = false;
        f.streams = deployed(&d, |c| {
            if c.name.starts_with("KV_") {
                c.storage = stream::StorageType::Memory;
            } else {
                c.duplicate_window = Duration::from_secs(10);
                c.num_replicas = 1;
            }
        });
        let found = assess(&d, &f, Horizon::default());
        let lines: Vec<String> = found
            .iter()
            .map(|f| format!("{:?} {}: {}", f.severity, f.about, f.message))
            .collect();
        let text = lines.join("\n");
        assert!(
            text.contains("Error server: nats-server 2.10.22 is older than 2.11"),
            "{text}"
        );
        assert!(text.contains("in memory"), "{text}");
        assert!(
            text.contains("duplicate window (10 s) is shorter than the replay horizon (35 s"),
            "{text}"
        );
        assert!(
            text.contains("Warning server: syncs writes to disk every 120 s"),
            "{text}"
        );
        assert!(text.contains("has 1 replica:"), "{text}");
        assert!(text.contains("not encrypted"), "{text}");
        let first_warning = found
            .iter()
            .position(|f| f.severity == Severity::Warning)
            .unwrap();
        assert!(
            found[..first_warning]
                .iter()
                .all(|f| f.severity == Severity::Error)
        );
        // Two streams (the order and its outputs) with the short window and one replica.
        assert_eq!(found.len(), 8, "{text}");
    }

    #[test]
    fn an_unchecked_sync_setting_is_said() {
        let d = deployment();
        let mut f = facts();
        f.sync = None;
        f.streams = deployed(&d, |_| {});
        let found = assess(&d, &f, Horizon::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("--monitor"), "{:?}", found[0]);
    }

    #[test]
    fn varz_documents_give_the_sync_setting() {
        let always =
            r#"{"jetstream": {"config": {"sync_interval": 120000000000, "sync_always": true}}}"#;
        assert_eq!(parse_varz(always), Some(SyncSetting::Always));
        let default = r#"{"jetstream": {"config": {"sync_interval": 120000000000}}}"#;
        assert_eq!(
            parse_varz(default),
            Some(SyncSetting::Every(Duration::from_secs(120)))
        );
        assert_eq!(parse_varz(r#"{"version": "2.12.1"}"#), None);
    }

    #[test]
    fn loopback_urls_are_told_from_remote_ones() {
        for url in [
            "nats://127.0.0.1:4222",
            "localhost:4222",
            "nats://u:p@[::1]:4222",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in ["nats://10.0.0.5:4222", "tls://nats.example.com:4222"] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
