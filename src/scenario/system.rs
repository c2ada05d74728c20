//! What the loader checks of a system or sysbatch job (Nomad's
//! `Job.Validate` and `TaskGroup.Validate` for those types).

use serde_saphyr::Location;

use super::raw::RawGroup;
use crate::model::scenario::JobKind;

/// A system group runs at most one allocation per node ("Count cannot
/// exceed 1 with system scheduler"); plansim keeps sysbatch to the same
/// (Nomad would run `[0]`, `[1]`, ... on every node). Neither may have a
/// reschedule policy ("System or sysbatch jobs should not have a
/// reschedule policy").
pub(super) fn check_system_group(
    kind: JobKind,
    group: &RawGroup,
    path: &str,
    at: Location,
) -> Result<(), (Option<Location>, String)> {
    if !kind.is_system() {
        return Ok(());
    }
    let count = group.count.map_or(1, |c| c.0);
    if count > 1 && kind == JobKind::System {
        return Err((
            Some(at),
            format!(
                "{path}.count: {count} on a system job; Nomad: \"Job task group {} has count {count}. Count cannot exceed 1 with system scheduler\"",
                group.name
            ),
        ));
    }
    if count > 1 {
        // Nomad accepts it; plansim does not model it (ARCHITECTURE's
        // deliberate divergences), so it refuses rather than run it wrong.
        return Err((
            Some(at),
            format!(
                "{path}.count: {count} on a sysbatch job; expected 0 or 1: plansim runs at most one allocation of a sysbatch group per node (Nomad would run allocations [0] to [{}] of it on every node)",
                count - 1
            ),
        ));
    }
    if group.reschedule.is_some() {
        return Err((
            Some(at),
            format!(
                "{path}.reschedule: System or sysbatch jobs should not have a reschedule policy (Nomad's job validation)"
            ),
        ));
    }
    Ok(())
}

/// A `scale` event may set a system or sysbatch group's count to 0 or 1
/// only (Nomad 2.0.5's Job.Scale: "jobs of type \"system\" can only be
/// scaled between 0 and 1").
pub(super) fn check_system_scale(
    kind: JobKind,
    count: u32,
    path: &str,
    at: Location,
) -> Result<(), (Option<Location>, String)> {
    if kind.is_system() && count > 1 {
        return Err((
            Some(at),
            format!("{path}.count: jobs of type \"system\" can only be scaled between 0 and 1"),
        ));
    }
    Ok(())
}
