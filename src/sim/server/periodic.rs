//! The leader's periodic dispatcher (nomad/periodic.go) and the parents it
//! tracks. The loader stamped out a child job for every cron launch; at
//! each launch's time the dispatcher either registers it (then it is an
//! ordinary batch job) or skips it: a parent stopped or never registered
//! launches nothing (PeriodicDispatch.Remove / Add of an inactive job), and
//! with `prohibit_overlap` a launch is skipped while an earlier child still
//! runs (dispatch → RunningChildren). A dispatched child is registered at
//! its `dispatch` event unless its parent was refused.

use crate::model::ids::JobId;
use crate::model::periodic::{CronSpecs, JobLaunch};
use crate::sim::simulation::Simulation;
use crate::sim::state::store::JobStatus;

impl Simulation<'_> {
    /// Why the dispatcher does not register `job` now, if it is a child it
    /// skips.
    pub(crate) fn skipped_launch(&mut self, job: JobId) -> Option<String> {
        let (parent, periodic) = match &self.scenario.jobs[job.index()].launch {
            JobLaunch::PeriodicChild { parent } => (*parent, true),
            JobLaunch::Dispatched { parent } => (*parent, false),
            _ => return None,
        };
        let parent_name = &self.scenario.jobs[parent.index()].name;
        match self.jobs[parent.index()].status {
            JobStatus::Tracked => {}
            JobStatus::Stopped => return Some(format!("parent {parent_name} is stopped")),
            _ => return Some(format!("parent {parent_name} is not registered")),
        }
        let JobLaunch::Periodic(config) = &self.scenario.jobs[parent.index()].launch else {
            return None;
        };
        if !periodic || !config.prohibit_overlap {
            return None;
        }
        // A child that stopped running never runs again (a complete or
        // failed batch allocation is not replaced once its evaluations are
        // done), so the list keeps only the ones that may still run.
        let mut children = self.launched.remove(&parent).unwrap_or_default();
        children.retain(|&child| self.child_running(child));
        let running = children.first().copied();
        self.launched.insert(parent, children);
        running.map(|child| {
            format!(
                "prohibit_overlap: {} is still running",
                self.scenario.jobs[child.index()].name
            )
        })
    }

    /// Remembers a registered periodic child for later overlap checks.
    pub(crate) fn note_launched(&mut self, job: JobId) {
        if let JobLaunch::PeriodicChild { parent } = self.scenario.jobs[job.index()].launch {
            self.launched.entry(parent).or_default().push(job);
        }
    }

    /// Server.RunningChildren for one child: an evaluation not terminal
    /// (queued, being scheduled, blocked, or a follow-up waiting for a
    /// reschedule) or an allocation not terminal.
    fn child_running(&self, child: JobId) -> bool {
        let state = &self.jobs[child.index()];
        if state.status == JobStatus::NotSubmitted
            || state.status == JobStatus::Skipped
            || state.status == JobStatus::Rejected
        {
            return false;
        }
        let now = self.now();
        state.eval_queued
            || state.eval_in_flight
            || self.blocked.contains(&child)
            || self.max_plans_blocked.contains(&child)
            || state.latest.iter().any(|slots| {
                slots.values().any(|id| {
                    let alloc = &self.allocs[id.index()];
                    alloc.is_live() || alloc.followup_at().is_some_and(|at| at >= now)
                })
            })
    }

    /// A periodic parent with `crons` only, at a release before 1.6.2: the
    /// release's PeriodicConfig has no `Specs` (the API's JSON decoder
    /// drops the field), so Validate finds no spec.
    pub(crate) fn periodic_problem(&self, job: JobId) -> Option<String> {
        let JobLaunch::Periodic(config) = &self.scenario.jobs[job.index()].launch else {
            return None;
        };
        let crons_only = matches!(config.specs, CronSpecs::Crons(_));
        (config.enabled && crons_only && !self.behaviour.release.periodic_crons)
            .then(|| "Must specify a spec".to_string())
    }
}
