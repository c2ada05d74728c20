//! Violation windows: the stretches of time a volume spent published in
//! breach of its access mode, read from a trace.

use std::collections::BTreeMap;

use super::explanation::Window;
use crate::model::ids::VolumeId;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord};

/// Every window in which a volume was published in breach of its access
/// mode, in order of start.
pub fn violation_windows(scenario: &Scenario, trace: &[TraceRecord]) -> Vec<Window> {
    let mut open: BTreeMap<VolumeId, Millis> = Default::default();
    let mut windows = Vec::new();
    let close = |volume: VolumeId, from: Millis, to: Millis, until_end: bool| Window {
        volume: scenario.volumes[volume.index()].name.clone(),
        volume_id: volume,
        from_s: from.to_string(),
        to_s: to.to_string(),
        seconds: (to - from).to_string(),
        until_end,
        from,
        to,
    };
    for record in trace {
        let Some(volume) = record.volume else {
            continue;
        };
        match record.kind {
            TraceKind::Violation => {
                open.entry(volume).or_insert(record.time);
            }
            TraceKind::ViolationEnded => {
                if let Some(from) = open.remove(&volume) {
                    windows.push(close(volume, from, record.time, false));
                }
            }
            _ => {}
        }
    }
    for (volume, from) in open {
        windows.push(close(volume, from, scenario.horizon, true));
    }
    windows.sort_by_key(|w| (w.from, w.volume_id));
    windows
}
