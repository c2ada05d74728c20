//! What the chain of consequences follows after a divergence: the
//! allocation slots, jobs and volumes it concerns, and which trace rows
//! are about them.

use std::collections::BTreeSet;

use super::decisions::Subject;
use crate::model::ids::{GroupRef, JobId, VolumeId};
use crate::model::scenario::{Scenario, VolumeSource};
use crate::sim::trace::{TraceKind, TraceRecord};

/// What the chain of consequences follows: the allocation slots and the
/// volumes the divergence concerns.
#[derive(Default)]
pub(super) struct Followed {
    pub(super) slots: BTreeSet<(GroupRef, u32)>,
    pub(super) jobs: BTreeSet<JobId>,
    pub(super) volumes: BTreeSet<VolumeId>,
}

impl Followed {
    pub(super) fn of(scenario: &Scenario, subject: Subject) -> Followed {
        let mut followed = Followed::default();
        let volumes_of = |followed: &mut Followed, group: GroupRef, index: Option<u32>| {
            let spec = &scenario.jobs[group.job.index()].groups[group.group_index()];
            for request in &spec.volumes {
                match &request.source {
                    VolumeSource::Shared(id) => {
                        followed.volumes.insert(*id);
                    }
                    VolumeSource::PerAlloc { base } => {
                        let matches =
                            scenario
                                .volume_by_name
                                .iter()
                                .filter(|(name, _)| match index {
                                    Some(i) => **name == format!("{base}[{i}]"),
                                    None => name.starts_with(&format!("{base}[")),
                                });
                        followed.volumes.extend(matches.map(|(_, id)| *id));
                    }
                    VolumeSource::Missing { .. } => {}
                }
            }
        };
        match subject {
            Subject::Registration(job) => {
                followed.jobs.insert(job);
                for g in 0..scenario.jobs[job.index()].groups.len() {
                    volumes_of(&mut followed, GroupRef::new(job, g), None);
                }
            }
            Subject::Placement(group, index) => {
                followed.slots.insert((group, index));
                volumes_of(&mut followed, group, Some(index));
            }
            Subject::Claim(group, index, volume) => {
                followed.slots.insert((group, index));
                followed.volumes.insert(volume);
            }
            Subject::Deployment(job) => {
                followed.jobs.insert(job);
                for g in 0..scenario.jobs[job.index()].groups.len() {
                    volumes_of(&mut followed, GroupRef::new(job, g), None);
                }
            }
        }
        followed
    }

    pub(super) fn concerns(&self, record: &TraceRecord) -> bool {
        let slot = record.group.zip(record.alloc_index);
        match record.kind {
            TraceKind::Violation | TraceKind::ViolationEnded => {
                record.volume.is_some_and(|v| self.volumes.contains(&v))
            }
            TraceKind::PlanRejected => record.seen.iter().any(|s| self.has_slot(s.group, s.index)),
            TraceKind::Eval | TraceKind::Scale | TraceKind::StopJob => false,
            // The deployment of a followed allocation's job: what its
            // health and claims did to the rollout.
            TraceKind::DeploymentStarted
            | TraceKind::DeploymentPromoted
            | TraceKind::DeploymentSucceeded
            | TraceKind::DeploymentFailed
            | TraceKind::DeploymentReverted
            | TraceKind::PromoteDeployment => record.job.is_some_and(|j| {
                self.jobs.contains(&j) || self.slots.iter().any(|(g, _)| g.job == j)
            }),
            _ => {
                slot.is_some_and(|(g, i)| self.has_slot(g, i))
                    || (slot.is_none() && record.job.is_some_and(|j| self.jobs.contains(&j)))
            }
        }
    }

    pub(super) fn has_slot(&self, group: GroupRef, index: u32) -> bool {
        self.slots.contains(&(group, index)) || self.jobs.contains(&group.job)
    }
}
