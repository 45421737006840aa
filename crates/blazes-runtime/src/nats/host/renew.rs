//! Keeping the inputs an instance holds from being redelivered while it still handles them.
//!
//! The host fetches inputs in batches (one request for up to 256) and hands them to the logic
//! one at a time, while the server starts each input's ack wait when it delivers it. Without
//! renewal, a batch whose handling takes longer than the ack wait comes back: the server
//! redelivers inputs this instance still holds, and the logic handles them twice (a stage that
//! counts what it handled ends early; one that does not pays twice). As a Service Bus receiver
//! renews a message's lock while its handler runs, the host tells the server, every third of
//! the ack wait, that each input it holds is in progress, until the logic marks it done. An
//! instance that crashes stops renewing, so its inputs come back after one ack wait, as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind};

/// The inputs fetched and not yet marked done, by position.
#[derive(Default)]
pub(super) struct InFlight {
    held: Mutex<BTreeMap<u64, Arc<jetstream::Message>>>,
}

impl InFlight {
    /// A set whose inputs are renewed every third of `ack_wait` for as long as the set lives.
    pub(super) fn renewed(ack_wait: Duration) -> Arc<InFlight> {
        let set = Arc::new(InFlight::default());
        let every = (ack_wait / 3).max(Duration::from_millis(50));
        tokio::spawn(renew(Arc::downgrade(&set), every));
        set
    }

    pub(super) fn hold(&self, position: u64, message: Arc<jetstream::Message>) {
        self.lock().insert(position, message);
    }

    pub(super) fn release(&self, position: u64) {
        self.lock().remove(&position);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<jetstream::Message>>> {
        // A panic while holding this lock leaves the map as it was: keep using it.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn renew(set: Weak<InFlight>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(set) = set.upgrade() else {
            return;
        };
        let held: Vec<Arc<jetstream::Message>> = set.lock().values().cloned().collect();
        drop(set);
        for m in held {
            // A renewal that does not reach the server only lets the ack wait run out: the
            // input is redelivered, which the host's output ids already make harmless. Worth
            // a word all the same: a slow handler then pays twice.
            if let Err(e) = m.ack_with(AckKind::Progress).await {
                tracing::warn!(subject = %m.subject, error = %e, "in-progress renewal failed");
            }
        }
    }
}
