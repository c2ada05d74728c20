//! Names for a scenario's ids, and the phrases explain builds from them
//! (claim counts, an access mode's rule).

use crate::model::access::{AccessMode, ClaimCounts, ClaimMode};
use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::Scenario;
use crate::sim::trace::{SeenClaims, TraceKind, TraceRecord};

/// Names for ids, and the phrases built from them.
pub(super) struct Names<'s>(pub(super) &'s Scenario);

impl<'s> Names<'s> {
    pub(super) fn job(&self, job: JobId) -> &'s str {
        &self.0.jobs[job.index()].name
    }
    pub(super) fn alloc(&self, group: GroupRef, index: u32) -> String {
        let job = &self.0.jobs[group.job.index()];
        format!(
            "{}.{}[{index}]",
            job.name,
            job.groups[group.group_index()].name
        )
    }
    pub(super) fn node(&self, node: NodeId) -> &'s str {
        &self.0.nodes[node.index()].name
    }
    pub(super) fn volume(&self, volume: VolumeId) -> &'s str {
        &self.0.volumes[volume.index()].name
    }
    pub(super) fn evaluation(&self, trace: &[TraceRecord], eval: u64) -> String {
        let record = usize::try_from(eval)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| trace.iter().filter(|r| r.kind == TraceKind::Eval).nth(i));
        match record {
            Some(r) => format!(
                "evaluation {eval} of job {} at {} s ({})",
                r.job.map_or("?", |j| self.job(j)),
                r.time,
                r.detail
            ),
            None => format!("evaluation {eval}"),
        }
    }
    /// Claim holders by name; a holder in the slot being decided is an
    /// earlier allocation of that slot (the one a replacement replaces).
    pub(super) fn holders(
        &self,
        holders: &[(GroupRef, u32, ClaimMode)],
        total: u32,
        current: (GroupRef, u32),
    ) -> String {
        let mut names: Vec<String> = holders
            .iter()
            .map(|&(g, i, mode)| {
                let earlier = if (g, i) == current {
                    ", held by the allocation this one replaces"
                } else {
                    ""
                };
                format!("{} ({}{earlier})", self.alloc(g, i), mode.name())
            })
            .collect();
        if total as usize > holders.len() {
            names.push(format!("and {} more", total as usize - holders.len()));
        }
        names.join(", ")
    }
    pub(super) fn seen_claims(
        &self,
        label: &str,
        claims: &SeenClaims,
        current: (GroupRef, u32),
    ) -> String {
        match claims.counts.total() {
            0 => format!("{label}: none"),
            n => format!(
                "{label}: {} ({})",
                counts(claims.counts),
                self.holders(&claims.holders, n, current)
            ),
        }
    }
}

/// "1 reader", "2 readers and 1 writer", "nothing".
pub(super) fn counts(c: ClaimCounts) -> String {
    let part = |n: u32, one: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {one}s"),
    };
    match (c.readers, c.writers) {
        (0, 0) => "nothing".to_string(),
        (r, 0) => part(r, "reader"),
        (0, w) => part(w, "writer"),
        (r, w) => format!("{} and {}", part(r, "reader"), part(w, "writer")),
    }
}

/// The access-mode rule in words.
pub(super) fn rule(mode: AccessMode) -> &'static str {
    match mode {
        AccessMode::SingleNodeReaderOnly => "allows at most 1 reader and no writer",
        AccessMode::SingleNodeWriter => "allows at most 1 claim, reader or writer",
        AccessMode::MultiNodeReaderOnly => "allows any number of readers and no writer",
        AccessMode::MultiNodeSingleWriter => "allows any number of readers and at most 1 writer",
        AccessMode::MultiNodeMultiWriter => "allows any number of readers and writers",
    }
}
