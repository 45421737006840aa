//! The paper's ad reporting network on the runtime: ad servers publish click records keyed by
//! campaign into keyed sessions; the replicated `Report` component answers an order-sensitive
//! per-campaign query (the first clicked ad id, and the click count, per campaign). Each of three
//! replicas consumes the sessions with two competing workers, one of which stalls and loses its
//! lease halfway; the other takes over from the committed state. All replicas agree.
//!
//! Run with `cargo run --example ad_network`.

use std::collections::BTreeMap;

use blazes::runtime::{BrokerConfig, Lease, MemLog, SessionBroker, SessionError, partition_for};

const PARTITIONS: u32 = 4;
const TTL: u64 = 5;
const CONFIG: BrokerConfig = BrokerConfig {
    lease_ttl: TTL,
    now: 0,
    secret: 0x5eed,
};

/// Report state per campaign: (first ad id clicked, clicks).
type Report = BTreeMap<String, (u32, u64)>;

fn encode(r: &Report) -> Vec<u8> {
    serde_json::to_vec(r).expect("report serializes")
}

fn decode(b: &[u8]) -> Report {
    if b.is_empty() {
        Report::new()
    } else {
        serde_json::from_slice(b).expect("report state")
    }
}

/// Ten ad servers' clicks, in the order the partitioned log received them. Each server is a
/// producer numbering its clicks per partition, so a resent click would be recognised.
fn partition_logs() -> Vec<MemLog> {
    let logs: Vec<MemLog> = (0..PARTITIONS).map(|_| MemLog::new()).collect();
    let mut broker = SessionBroker::open(logs, MemLog::new(), CONFIG).expect("empty logs open");
    let mut seqs: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for server in 0..10u32 {
        for click in 0..20u32 {
            let campaign = format!("campaign-{}", (server * 7 + click) % 5);
            let id = (server * 31 + click * 17) % 50;
            let seq = seqs
                .entry((server, partition_for(campaign.as_bytes(), PARTITIONS)))
                .or_insert(0);
            *seq += 1;
            broker
                .publish(
                    u64::from(server),
                    0,
                    *seq,
                    campaign.as_bytes(),
                    &id.to_le_bytes(),
                )
                .expect("in-memory publish");
        }
    }
    broker.into_logs().0
}

/// One replica: two workers; worker 1 stalls after a few messages and loses its lease.
fn run_replica(replica: u64) -> Result<Report, SessionError> {
    let mut broker = SessionBroker::open(partition_logs(), MemLog::new(), CONFIG)?;
    let mut now = 0;
    let mut sessions: Vec<(u64, Lease, Report, u64)> = Vec::new();
    // Worker 1 grabs sessions first; which ones depends on the replica, to vary the schedule.
    for _ in 0..=(replica % 2) {
        if let Some(s) = broker.accept(1, now)? {
            sessions.push((1, s.lease, decode(&s.state), s.committed_offset));
        }
    }
    for (_, lease, report, next) in sessions.iter_mut() {
        for m in broker.poll(lease, now, 3 + replica as usize)? {
            apply(report, &m.key, &m.payload);
            *next = m.offset + 1;
        }
        broker.commit(lease, *next, &encode(report), now)?;
    }
    // Worker 1 stalls; its leases lapse and the broker reports it.
    now += TTL;
    for event in broker.tick(now) {
        println!("  replica {replica}: {event:?}");
    }
    // Worker 2 takes every session over and finishes from the committed state.
    for p in 0..PARTITIONS {
        let Some(s) = broker.accept_partition(2, p, now)? else {
            continue;
        };
        let (mut report, mut next) = (decode(&s.state), s.committed_offset);
        loop {
            let msgs = broker.poll(&s.lease, now, 16)?;
            if msgs.is_empty() {
                break;
            }
            for m in msgs {
                apply(&mut report, &m.key, &m.payload);
                next = m.offset + 1;
            }
        }
        broker.commit(&s.lease, next, &encode(&report), now)?;
        broker.release(&s.lease, now)?;
    }
    // A stale commit from worker 1 is fenced, not merged.
    if let Some((_, stale, report, next)) = sessions.first() {
        let err = broker
            .commit(stale, *next, &encode(report), now)
            .unwrap_err();
        println!("  replica {replica}: stale commit refused: {err}");
    }
    let mut merged = Report::new();
    for p in 0..PARTITIONS {
        merged.extend(decode(
            broker.committed(p).map(|(_, s)| s).unwrap_or_default(),
        ));
    }
    Ok(merged)
}

fn apply(report: &mut Report, key: &[u8], payload: &[u8]) {
    let campaign = String::from_utf8_lossy(key).into_owned();
    let id = u32::from_le_bytes(payload[..4].try_into().expect("4-byte ad id"));
    let entry = report.entry(campaign).or_insert((id, 0));
    entry.1 += 1;
}

fn main() -> Result<(), SessionError> {
    let replicas: Vec<Report> = (0..3).map(run_replica).collect::<Result<_, _>>()?;
    for (i, r) in replicas.iter().enumerate() {
        println!("replica {i}: {r:?}");
    }
    let agree = replicas.iter().all(|r| r == &replicas[0]);
    println!("replicas agree: {agree}");
    assert!(agree);
    Ok(())
}
