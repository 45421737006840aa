//! `bench`: one deployment's completion time, as one JSON line that `scripts/paper-eval` reads.

use super::*;

/// The bench workload: unpaced ad servers; POOR for the ordered and uncoordinated deployments,
/// CAMPAIGN for the sealed ones.
pub(crate) fn setup(
    coordination: Coordination,
    producers: u32,
    clicks: u32,
    replicas: u32,
) -> Setup {
    let query = if coordination.sealed() {
        Query::Campaign
    } else {
        Query::Poor
    };
    Setup {
        query,
        coordination,
        producers,
        replicas,
        clicks,
        ids: 4,
        queries: 20,
        pace_us: 0,
        query_every_ms: 10,
    }
}

/// The measurement: a line on stderr for people, the JSON record on stdout.
pub(crate) fn report(setup: &Setup, completion: f64) {
    eprintln!(
        "ad_network: {} with {} ad servers: {completion:.3} s",
        setup.coordination.name(),
        setup.producers
    );
    say(&format!(
        "{{\"experiment\": \"ad_network\", \"coordination\": \"{}\", \"producers\": {}, \"completion_s\": {completion:.3}}}",
        setup.coordination.name(),
        setup.producers
    ));
}
