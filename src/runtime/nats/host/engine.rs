//! Opening the engine objects a host reads through, retrying while the cluster fails over.

use std::time::Duration;

use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::{self, kv, stream};

use super::HostError;
use crate::runtime::deploy::{self, ConsumerObject};
use crate::runtime::nats::NatsError;
use crate::runtime::nats::deploy::consumer_config;

pub(super) async fn get_stream(
    js: &jetstream::Context,
    name: &str,
    retry_for: Duration,
) -> Result<stream::Stream, NatsError> {
    let started = tokio::time::Instant::now();
    loop {
        match js.get_stream(name).await {
            Ok(s) => return Ok(s),
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: name.to_string(),
                    waited: started.elapsed(),
                    last: e.to_string(),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Opens the durable consumer `wanted` (creating it if no deployment did). One that exists with
/// another filter would hand this instance other inputs than it needs: refused.
pub(super) async fn durable_consumer(
    s: &stream::Stream,
    wanted: &ConsumerObject,
    retry_for: Duration,
) -> Result<jetstream::consumer::Consumer<pull::Config>, HostError> {
    let name = wanted.name.clone();
    let config = consumer_config(wanted, None);
    let started = tokio::time::Instant::now();
    loop {
        match s.get_or_create_consumer(&name, config.clone()).await {
            Ok(c) => {
                let deployed = c.cached_info().config.filter_subject.clone();
                if deployed != wanted.filter {
                    return Err(HostError::ConsumerDiffers {
                        name,
                        deployed,
                        wanted: wanted.filter.clone(),
                    });
                }
                return Ok(c);
            }
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: name,
                    waited: started.elapsed(),
                    last: e.to_string(),
                }
                .into());
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

pub(super) async fn open_bucket(
    js: &jetstream::Context,
    bucket: &str,
    replicas: usize,
    retry_for: Duration,
) -> Result<kv::Store, NatsError> {
    let started = tokio::time::Instant::now();
    loop {
        let store = match js.get_key_value(bucket).await {
            Ok(s) => Ok(s),
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket: bucket.to_string(),
                    history: deploy::CHECKPOINT_HISTORY,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| e.to_string()),
        };
        match store {
            Ok(s) => return Ok(s),
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: bucket.to_string(),
                    waited: started.elapsed(),
                    last: e,
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
