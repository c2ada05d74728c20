//! The YAML of drains and disconnected clients: a group's `migrate` block
//! and disconnect settings, and the long form of `node_drain`.

use serde_saphyr::Location;

use super::error::{Fail, fail};
use super::raw::{RawDrainSpec, RawGroup, RawHealthCheck, RawMigrate};
use crate::model::scenario::{
    DisconnectPolicy, DisconnectWindows, DrainSpec, HealthCheck, MigrateStrategy,
};
use crate::model::time::Millis;

/// A group's `migrate` block over Nomad's defaults.
pub(super) fn migrate(
    raw: Option<&RawMigrate>,
    count: u32,
    at: Location,
    path: &str,
) -> Result<MigrateStrategy, Fail> {
    let mut strategy = MigrateStrategy::default();
    let Some(raw) = raw else {
        return Ok(strategy);
    };
    if let Some(max_parallel) = raw.max_parallel {
        // More than the group's count drains as fast as the count allows;
        // the bound keeps the arithmetic on counts.
        if max_parallel > count.max(1).saturating_mul(1000) {
            return fail(
                at,
                format!(
                    "{path}.migrate.max_parallel: {max_parallel} is far above the group's count of {count}; at most the count moves at once"
                ),
            );
        }
        strategy.max_parallel = max_parallel;
    }
    if let Some(check) = raw.health_check {
        strategy.health_check = match check {
            RawHealthCheck::Checks => HealthCheck::Checks,
            RawHealthCheck::TaskStates => HealthCheck::TaskStates,
        };
    }
    strategy.min_healthy_time = raw
        .min_healthy_time
        .map_or(strategy.min_healthy_time, |d| d.0);
    strategy.healthy_deadline = raw
        .healthy_deadline
        .map_or(strategy.healthy_deadline, |d| d.0);
    if strategy.healthy_deadline <= strategy.min_healthy_time {
        // structs.go MigrateStrategy.Validate.
        return fail(
            at,
            format!(
                "{path}.migrate: min_healthy_time ({}s) must be less than healthy_deadline ({}s)",
                strategy.min_healthy_time, strategy.healthy_deadline
            ),
        );
    }
    Ok(strategy)
}

/// A group's disconnect settings, the group fields and the `disconnect`
/// block each as written (the release picks one); a zero duration is no
/// setting, as in Nomad (`DisconnectTimeout`, `ShouldClientStop` treat 0
/// as unset).
pub(super) fn disconnect(group: &RawGroup) -> DisconnectPolicy {
    let set = |d: Option<super::raw::RawDuration>| d.map(|d| d.0).filter(|&d| d > Millis::ZERO);
    let block = group.disconnect.as_ref();
    DisconnectPolicy {
        group_fields: DisconnectWindows {
            max_client_disconnect: set(group.max_client_disconnect),
            stop_after_client_disconnect: set(group.stop_after_client_disconnect),
        },
        block: DisconnectWindows {
            max_client_disconnect: set(block.and_then(|b| b.lost_after)),
            stop_after_client_disconnect: set(block.and_then(|b| b.stop_on_client_after)),
        },
    }
}

/// The long form of `node_drain`: a deadline (default 1h, `0s` for none, as
/// Nomad's DrainSpec) and whether system jobs stay.
pub(super) fn drain_spec(raw: &RawDrainSpec) -> DrainSpec {
    let defaults = DrainSpec::default();
    DrainSpec {
        deadline: match raw.deadline {
            None => defaults.deadline,
            Some(d) if d.0 == Millis::ZERO => None,
            Some(d) => Some(d.0),
        },
        ignore_system_jobs: raw
            .ignore_system_jobs
            .unwrap_or(defaults.ignore_system_jobs),
    }
}
