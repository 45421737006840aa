//! Key-value reads that see the last write, and compare-and-set writes that survive a lost
//! answer: what checkpoints and high-water marks are stored with.
//!
//! A bucket made by `create_key_value` allows direct gets, and the client's `entry` and `get`
//! then ask any replica, a follower too, which may not have applied the newest write yet: a
//! restarted instance could resume from an older checkpoint than its last one. The reads here
//! go to the stream's leader (the stream's "last message for subject" API), which answers with
//! what it has committed.
//!
//! A write names the revision it replaces (`create` for none). When its answer is lost (a
//! timeout while a leader is elected) the write may or may not have been stored, and the retry
//! then finds another revision than it expects. [`compare_and_set`] reads the key back: if it
//! holds this write's value, the first attempt landed and that is its revision; otherwise
//! another writer replaced it and the write is [`NatsError::Fenced`]. Every other failure is
//! retried for `retry_for`.

use std::time::Duration;

use async_nats::jetstream::kv;
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use bytes::Bytes;

use super::{BoxError, NatsError};

/// The newest entry of a key, read from the stream's leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Last {
    /// The value; `None` when the newest entry deletes or purges the key.
    pub(crate) value: Option<Bytes>,
    /// The entry's revision: what the next write of the key expects.
    pub(crate) revision: u64,
}

/// The KV header that marks a delete or a purge.
const OPERATION: &str = "KV-Operation";

const PAUSE: Duration = Duration::from_millis(100);

/// The newest entry of `key` in `store` (`None`: the key was never written), from the leader.
pub(crate) async fn read_last(
    store: &kv::Store,
    key: &str,
    retry_for: Duration,
) -> Result<Option<Last>, NatsError> {
    let subject = format!("{}{key}", store.prefix);
    super::retrying(key, retry_for, PAUSE, || async {
        match store.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(m) => {
                let deleted = m
                    .headers
                    .get(OPERATION)
                    .is_some_and(|op| op.as_str() != "PUT");
                Ok(Some(Last {
                    value: (!deleted).then(|| m.payload.clone()),
                    revision: m.sequence,
                }))
            }
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(BoxError::from(e)),
        }
    })
    .await
}

/// Writes `value` under `key` if the key's newest revision is `expected` (0: the key has no
/// entry, or its newest one deletes it); returns the new revision. `Fenced` when another
/// writer's entry is the newest.
pub(crate) async fn compare_and_set(
    store: &kv::Store,
    key: &str,
    value: Bytes,
    expected: u64,
    retry_for: Duration,
) -> Result<u64, NatsError> {
    let started = tokio::time::Instant::now();
    loop {
        let attempt = if expected == 0 {
            store
                .create(key, value.clone())
                .await
                .map_err(|e| match e.kind() {
                    kv::CreateErrorKind::AlreadyExists => Attempt::Conflict,
                    kv::CreateErrorKind::InvalidKey => Attempt::Permanent(e.to_string()),
                    _ => Attempt::Retry(e.into()),
                })
        } else {
            store
                .update(key, value.clone(), expected)
                .await
                .map_err(|e| match e.kind() {
                    kv::UpdateErrorKind::WrongLastRevision => Attempt::Conflict,
                    kv::UpdateErrorKind::InvalidKey => Attempt::Permanent(e.to_string()),
                    _ => Attempt::Retry(e.into()),
                })
        };
        let failure = match attempt {
            Ok(revision) => return Ok(revision),
            Err(Attempt::Permanent(reason)) => {
                return Err(NatsError::Refused {
                    subject: key.to_string(),
                    reason,
                });
            }
            // Either an earlier attempt of this write landed, or another writer's did.
            Err(Attempt::Conflict) => match read_last(store, key, retry_for).await? {
                Some(Last {
                    value: Some(v),
                    revision,
                }) if v == value && revision > expected => return Ok(revision),
                _ => {
                    return Err(NatsError::Fenced {
                        subject: key.to_string(),
                    });
                }
            },
            Err(Attempt::Retry(e)) => e,
        };
        if started.elapsed() >= retry_for {
            return Err(NatsError::Unavailable {
                subject: key.to_string(),
                waited: started.elapsed(),
                source: failure,
            });
        }
        tracing::debug!(key, error = %failure, "key-value write retried");
        tokio::time::sleep(PAUSE).await;
    }
}

enum Attempt {
    /// The newest revision is not the expected one.
    Conflict,
    /// The server cannot take this write, ever.
    Permanent(String),
    /// The outcome is unknown: retry.
    Retry(BoxError),
}
