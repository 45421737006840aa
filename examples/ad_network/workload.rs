//! The workload every role computes alike from the driver's arguments, and the messages.

use super::*;

/// The deployment and workload; every role gets the same one from the driver.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct Setup {
    #[arg(long, value_enum, default_value_t = Query::Poor)]
    pub(crate) query: Query,
    #[arg(long, value_enum, default_value_t = Coordination::None)]
    pub(crate) coordination: Coordination,
    /// Ad servers.
    #[arg(long, default_value_t = 3)]
    pub(crate) producers: u32,
    /// Report server replicas.
    #[arg(long, default_value_t = 3)]
    pub(crate) replicas: u32,
    /// Clicks per ad server.
    #[arg(long, default_value_t = 1500)]
    pub(crate) clicks: u32,
    /// Distinct ad ids.
    #[arg(long, default_value_t = 4)]
    pub(crate) ids: u32,
    /// Requests the cache sends.
    #[arg(long, default_value_t = 40)]
    pub(crate) queries: u32,
    /// Microseconds between two clicks of one ad server (0: as fast as it can).
    #[arg(long, default_value_t = 1000)]
    pub(crate) pace_us: u64,
    /// Milliseconds between two requests of the cache.
    #[arg(long, default_value_t = 25)]
    pub(crate) query_every_ms: u64,
}

impl Setup {
    pub(crate) fn campaigns(&self) -> u32 {
        self.producers * CAMPAIGNS_PER_PRODUCER
    }

    pub(crate) fn total_clicks(&self) -> u64 {
        u64::from(self.producers) * u64::from(self.clicks)
    }

    /// What every ad gets: its clicks spread evenly (`ids` is coprime to 13, checked).
    pub(crate) fn share(&self) -> u64 {
        self.total_clicks() / u64::from(self.ids)
    }

    /// Ad server `i`'s name as a producer: the host names a source's instance
    /// `<source>-<instance>`, and the ad servers are the spec's source `adservers`.
    pub(crate) fn adserver(i: u32) -> String {
        format!("{ADSERVERS}-{i}")
    }

    /// Click `k` of ad server `s`.
    pub(crate) fn click(&self, s: u32, k: u32) -> Click {
        let id = (s * 7 + k * 13) % self.ids;
        let campaign = if self.coordination == Coordination::IndependentSeal {
            let block = self.clicks.div_ceil(CAMPAIGNS_PER_PRODUCER);
            s * CAMPAIGNS_PER_PRODUCER + k / block
        } else {
            k / self.clicks.div_ceil(self.campaigns())
        };
        let window = k / self.clicks.div_ceil(WINDOWS);
        Click {
            s,
            k,
            id,
            campaign,
            window,
        }
    }

    /// The seal partition of a click (the plan's seal key), for the sealed deployments.
    pub(crate) fn partition(&self, c: &Click) -> String {
        match self.query {
            Query::Window => format!("w{}", c.window),
            _ => format!("c{}", c.campaign),
        }
    }

    /// Request `q` of the cache. Clients ask about the campaign (window) the ad servers are in
    /// when the request is sent, by the paced schedule; unpaced, they go round the campaigns.
    pub(crate) fn request(&self, q: u32) -> Request {
        let s = q % self.producers;
        let sent_us = u64::from(q) * self.query_every_ms * 1000;
        let now = sent_us.checked_div(self.pace_us).map(|k| {
            let k = k.min(u64::from(self.clicks - 1));
            self.click(s, k as u32)
        });
        let part = match (self.query, now) {
            (Query::Campaign, Some(c)) => Some(c.campaign),
            (Query::Campaign, None) => Some((q * 7) % self.campaigns()),
            (Query::Window, Some(c)) => Some(c.window),
            (Query::Window, None) => Some(q % WINDOWS),
            (Query::Poor | Query::Thresh, _) => None,
        };
        Request {
            q,
            id: q % self.ids,
            part,
        }
    }

    pub(crate) fn request_partition(&self, r: &Request) -> Option<String> {
        match (self.query, r.part) {
            (Query::Campaign, Some(c)) => Some(format!("c{c}")),
            (Query::Window, Some(w)) => Some(format!("w{w}")),
            _ => None,
        }
    }

    /// The combinations that mean something; a located, one-sentence error otherwise.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.producers == 0 || self.replicas == 0 || self.clicks == 0 || self.queries == 0 {
            return Err(
                "--producers, --replicas, --clicks and --queries must be at least 1".into(),
            );
        }
        if self.ids == 0 || self.ids.is_multiple_of(13) {
            return Err(format!(
                "--ids {}: needs at least 1 and not a multiple of 13 (clicks are spread over ids by steps of 13)",
                self.ids
            ));
        }
        if self.clicks < self.campaigns().max(WINDOWS) {
            return Err(format!(
                "--clicks {}: every ad server needs at least one click per campaign and window ({})",
                self.clicks,
                self.campaigns().max(WINDOWS)
            ));
        }
        match (self.query, self.coordination) {
            (Query::Poor | Query::Thresh, c) if c.sealed() => Err(format!(
                "--coordination {}: the {} query has no seal key (use none or ordered)",
                c.name(),
                self.query.name().to_uppercase()
            )),
            (Query::Window, Coordination::IndependentSeal) => Err(
                "--coordination independent-seal: every ad server has clicks in every window, so a window has no single producer (use sealed)".into(),
            ),
            _ => Ok(()),
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Click {
    pub(crate) s: u32,
    pub(crate) k: u32,
    pub(crate) id: u32,
    pub(crate) campaign: u32,
    pub(crate) window: u32,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Request {
    pub(crate) q: u32,
    pub(crate) id: u32,
    pub(crate) part: Option<u32>,
}

/// An input of Report that is not a sealed record: a click (ordered, uncoordinated) or a request
/// (ordered).
#[derive(Serialize, Deserialize, Debug)]
pub(crate) enum ReportInput {
    Click(Click),
    Request(Request),
}

#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct Response {
    pub(crate) replica: u32,
    pub(crate) q: u32,
    pub(crate) answer: String,
}

/// What the cache saw, printed as one JSON line for the driver.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct CacheReport {
    /// Per request: each replica's answer, by replica index.
    pub(crate) answers: BTreeMap<u32, BTreeMap<u32, String>>,
    /// Per request: the replica whose answer the cache stored and served (the first to come).
    pub(crate) served: BTreeMap<u32, u32>,
}
