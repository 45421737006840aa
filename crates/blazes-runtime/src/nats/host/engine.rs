//! Opening the engine objects a host reads through, retrying while the cluster fails over.

use std::time::Duration;

use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::{self, kv, stream};

use super::HostError;
use crate::deploy::ConsumerObject;
use crate::nats::deploy::consumer_config;
use crate::nats::{NatsError, retrying};

const PAUSE: Duration = Duration::from_millis(200);

pub(super) async fn get_stream(
    js: &jetstream::Context,
    name: &str,
    retry_for: Duration,
) -> Result<stream::Stream, NatsError> {
    retrying(name, retry_for, PAUSE, || js.get_stream(name)).await
}

/// Opens the durable consumer `wanted` (creating it if no deployment did). One that exists with
/// another filter would hand this instance other inputs than it needs: refused.
pub(super) async fn durable_consumer(
    s: &stream::Stream,
    wanted: &ConsumerObject,
    retry_for: Duration,
) -> Result<jetstream::consumer::Consumer<pull::Config>, HostError> {
    let config = consumer_config(wanted, None);
    let c = retrying(&wanted.name, retry_for, PAUSE, || {
        s.get_or_create_consumer(&wanted.name, config.clone())
    })
    .await?;
    let deployed = c.cached_info().config.filter_subject.clone();
    if deployed != wanted.filter {
        return Err(HostError::ConsumerDiffers {
            name: wanted.name.clone(),
            deployed,
            wanted: wanted.filter.clone(),
        });
    }
    Ok(c)
}

/// Opens the checkpoint bucket `bucket`, creating it as a deployment would (a replica's
/// latest checkpoint per key) if none did.
pub(super) async fn open_bucket(
    js: &jetstream::Context,
    bucket: &str,
    replicas: usize,
    retry_for: Duration,
) -> Result<kv::Store, NatsError> {
    crate::nats::ensure_bucket(js, bucket, replicas, retry_for).await
}
