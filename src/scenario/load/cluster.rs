//! `cluster:`: the servers' settings (scheduler workers and algorithm, the
//! latencies and garbage-collection intervals).

use crate::model::scenario::ClusterConfig;
use crate::model::time::Millis;
use crate::scenario::error::Fail;
use crate::scenario::limits;
use crate::scenario::raw::{RawCluster, RawDuration};

pub(super) fn resolve_cluster(raw: RawCluster) -> Result<ClusterConfig, Fail> {
    let defaults = ClusterConfig::default();
    let workers = raw.scheduler_workers.unwrap_or(defaults.scheduler_workers);
    if workers == 0 || workers > limits::MAX_SCHEDULER_WORKERS {
        return Err((
            None,
            format!(
                "cluster.scheduler_workers: {workers} is out of range 1..={} (MAX_SCHEDULER_WORKERS)",
                limits::MAX_SCHEDULER_WORKERS
            ),
        ));
    }
    let or = |value: Option<RawDuration>, default: Millis| value.map_or(default, |d| d.0);
    Ok(ClusterConfig {
        scheduler_workers: workers,
        scheduler_algorithm: raw
            .scheduler_algorithm
            .unwrap_or(defaults.scheduler_algorithm),
        scheduler_latency: or(raw.scheduler_latency, defaults.scheduler_latency),
        pull_delay: or(raw.pull_delay, defaults.pull_delay),
        node_detach_latency: or(raw.node_detach_latency, defaults.node_detach_latency),
        controller_detach_latency: or(
            raw.controller_detach_latency,
            defaults.controller_detach_latency,
        ),
        claim_free_latency: or(raw.claim_free_latency, defaults.claim_free_latency),
        claim_retry_deadline: or(raw.claim_retry_deadline, defaults.claim_retry_deadline),
        csi_volume_claim_gc_interval: positive(
            "csi_volume_claim_gc_interval",
            or(
                raw.csi_volume_claim_gc_interval,
                defaults.csi_volume_claim_gc_interval,
            ),
        )?,
        csi_volume_claim_gc_threshold: or(
            raw.csi_volume_claim_gc_threshold,
            defaults.csi_volume_claim_gc_threshold,
        ),
        node_gc_threshold: or(raw.node_gc_threshold, defaults.node_gc_threshold),
        node_gc_interval: positive(
            "node_gc_interval",
            or(raw.node_gc_interval, defaults.node_gc_interval),
        )?,
        heartbeat_grace: or(raw.heartbeat_grace, defaults.heartbeat_grace),
    })
}

/// A periodic server job's interval: zero would run it forever at one instant.
fn positive(field: &str, interval: Millis) -> Result<Millis, Fail> {
    if interval == Millis::ZERO {
        return Err((
            None,
            format!(
                "cluster.{field}: must be longer than 0s (it is how often a periodic job runs)"
            ),
        ));
    }
    Ok(interval)
}
