//! Whole-state checks of `distinct_hosts` and `distinct_property`, run with
//! the other invariants. Both are hard guarantees in Nomad as far as the
//! scheduler goes: the iterators (scheduler/feasible.go
//! DistinctHostsIterator, DistinctPropertyIterator; feasible/feasible.go in
//! 2.0.5) count every allocation of the job that is not terminal (its
//! `ProposedAllocs`: the node's allocations less the plan's stops, plus the
//! plan's placements), and the broker never runs two evaluations of one
//! job at once. The collision scope is Nomad's: a job-level distinct_hosts
//! collides on the job, a group-level one on the job and the group.
//! Allocations that predate the run (`initial_allocations`) are as the user
//! wrote them; a collision among those alone is not the scheduler's. System
//! jobs are left out: their stack has no distinct_hosts iterator and runs
//! one allocation of each group per node anyway.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::model::ids::{GroupRef, JobId, NodeId};
use crate::model::scenario::{Constraint, ConstraintOperator, Matcher};
use crate::sim::server::scheduler::feasibility::target_value;
use crate::sim::server::scheduler::preferences::distinct_hosts;
use crate::sim::simulation::Simulation;

/// Allocations counted for one key: all live ones, and those a plan placed.
#[derive(Default, Clone, Copy)]
struct Tally {
    live: u64,
    placed: u64,
}

impl Simulation<'_> {
    pub(crate) fn check_distinct_invariants(&self) {
        let release = self.behaviour.release;
        for (j, spec) in self.scenario.jobs.iter().enumerate() {
            if spec.is_system() || !spec.uses_placement_preferences() {
                continue;
            }
            let job = JobId::from_index(j);
            let job_hosts = distinct_hosts(&spec.constraints, release);
            for (g, group) in spec.groups.iter().enumerate() {
                if job_hosts || distinct_hosts(&group.constraints, release) {
                    // Job level: every group of the job; group level: one.
                    let scope = (!job_hosts).then_some(g);
                    for (node, tally) in self.tally_by(job, scope, |n| Some(n.index().to_string()))
                    {
                        assert!(
                            tally.live <= 1 || tally.placed == 0,
                            "distinct_hosts: job {} has {} live allocations on node #{node}",
                            spec.name,
                            tally.live
                        );
                    }
                    if job_hosts {
                        break;
                    }
                }
            }
            let job_props = spec.constraints.iter().map(|c| (c, None));
            let group_props = spec
                .groups
                .iter()
                .enumerate()
                .flat_map(|(g, group)| group.constraints.iter().map(move |c| (c, Some(g))));
            for (c, scope) in job_props.chain(group_props) {
                if c.operator == ConstraintOperator::DistinctProperty {
                    self.check_distinct_property(job, c, scope);
                }
            }
        }
    }

    pub(crate) fn check_distinct_property(&self, job: JobId, c: &Constraint, scope: Option<usize>) {
        let allowed = match c.matcher {
            Matcher::AllowedCount(n) => n,
            _ => 1,
        };
        let value_of = |node: NodeId| {
            target_value(
                &c.target,
                &self.scenario.nodes[node.index()],
                &self.scenario.driver_names,
            )
            .map(Cow::into_owned)
        };
        for (value, tally) in self.tally_by(job, scope, value_of) {
            assert!(
                tally.live <= allowed || tally.placed == 0,
                "distinct_property: job {} has {} live allocations with {value} (limit {allowed})",
                self.scenario.jobs[job.index()].name,
                tally.live
            );
        }
    }

    /// The job's live allocations (of group `scope`, or all groups), counted
    /// by the key of their node; nodes without a key are not counted.
    fn tally_by(
        &self,
        job: JobId,
        scope: Option<usize>,
        key: impl Fn(NodeId) -> Option<String>,
    ) -> BTreeMap<String, Tally> {
        let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
        let in_scope =
            |group: GroupRef| group.job == job && scope.is_none_or(|g| group.group_index() == g);
        for alloc in self
            .allocs
            .iter()
            .filter(|a| a.is_live() && in_scope(a.group))
        {
            if let Some(k) = key(alloc.node) {
                let tally = tallies.entry(k).or_default();
                tally.live += 1;
                if alloc.score.is_some() {
                    tally.placed += 1;
                }
            }
        }
        tallies
    }
}
