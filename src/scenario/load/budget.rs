//! The allocation limits: one count, and every desired allocation at once.

use serde_saphyr::Location;

use crate::model::scenario::{JobSpec, TimedEvent, TimelineAction};
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;

/// Refuses a single count above MAX_ALLOCATIONS.
pub(super) fn check_allocation_count(count: u32, path: &str, at: Location) -> Result<(), Fail> {
    if u64::from(count) > limits::MAX_ALLOCATIONS {
        return fail(
            at,
            format!(
                "{path}: {count} exceeds the limit of {} allocations (MAX_ALLOCATIONS)",
                limits::MAX_ALLOCATIONS
            ),
        );
    }
    Ok(())
}

/// Refuses scenarios whose desired allocations, at any moment, exceed
/// MAX_ALLOCATIONS. An allocation counts once, plus once per volume it
/// mounts: a mount costs about three times what an allocation without
/// volumes does (its claim, reservation and ledger entries; see
/// `limits.rs`), so the budget keeps volume-heavy scenarios within the
/// same memory. Every 8 ports of a group's `network` count once more.
pub(super) fn check_allocation_budget(
    jobs: &[JobSpec],
    events: &[TimedEvent],
    nodes: usize,
) -> Result<(), Fail> {
    // Every 8 ports an allocation holds cost about what its record does.
    let weight = |job: &JobSpec, group: usize| {
        let spec = &job.groups[group];
        1 + (spec.volumes.len() + spec.host_volumes.len()) as u64
            + spec.ports.len().div_ceil(8) as u64
    };
    // A system job's group runs on every node.
    let mut total: u64 = jobs
        .iter()
        .flat_map(|job| {
            let copies = if job.is_system() { nodes as u64 } else { 1 };
            job.groups.iter().enumerate().map(move |(g, group)| {
                u64::from(group.count)
                    .saturating_mul(copies)
                    .saturating_mul(weight(job, g))
            })
        })
        .sum();
    for event in events {
        if let TimelineAction::Scale { job, group, count } = event.action {
            let added = u64::from(count).saturating_mul(weight(&jobs[job.index()], group));
            total = total.saturating_add(added);
        }
        if let TimelineAction::UpdateJob { job, overrides, .. } = &event.action {
            // A destructive update places a new allocation beside each old one.
            for o in overrides {
                let added = u64::from(o.count.unwrap_or(0))
                    .saturating_mul(weight(&jobs[job.index()], o.group));
                total = total.saturating_add(added);
            }
        }
    }
    if total > limits::MAX_ALLOCATIONS {
        return Err((
            None,
            format!(
                "jobs: {total} desired allocations and volume mounts (counts plus scale events; an allocation counts once, once more per volume it mounts and per 8 ports it holds) exceed the limit of {} (MAX_ALLOCATIONS)",
                limits::MAX_ALLOCATIONS
            ),
        ));
    }
    Ok(())
}
