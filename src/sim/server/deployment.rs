//! Deployments: rolling a job's new version out (Nomad's deployment
//! watcher, nomad/deploymentwatcher/deployment_watcher.go, and the
//! reconciler's deployment state). The reconciler side (how many
//! destructive updates an evaluation may make) is `destructive_budget`;
//! the watcher side follows allocation health: an allocation of the
//! deployment is healthy once it has been healthy (health.rs) for the
//! group's `min_healthy_time`, unhealthy if it fails first or is not
//! healthy `healthy_deadline` after it was placed (client/allochealth).
//! Each healthy allocation pushes the deployment along (an evaluation) and
//! its progress deadline back; the deadline failing the deployment reverts
//! the job to its last stable version when `auto_revert` asks.

use std::collections::BTreeSet;

use crate::model::ids::{AllocId, GroupRef, JobId};
use crate::model::scenario::{JobKind, UpdateStrategy};
use crate::model::time::Millis;
use crate::sim::server::reschedule::{RESCHEDULE_WINDOW, attempts_left, reschedule_eligible};
use crate::sim::server::scheduler::plan::{PlacementKind, ResolvedVolume, Want};
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::MaybeSeq;
use crate::sim::state::slots::Slots;
use crate::sim::state::store::{AllocState, Deployment, DeploymentStatus, JobStatus};
use crate::sim::trace::{TraceKind, TraceRecord};

/// deployment_watcher.go `perJobEvalBatchPeriod`.
const DEPLOYMENT_EVAL_BATCH: Millis = Millis::from_secs(1);

impl Simulation<'_> {
    /// The update strategy of `group` at the job's current version.
    pub(crate) fn update_strategy(&self, group: GroupRef) -> Option<UpdateStrategy> {
        let version = self.jobs[group.job.index()].version;
        self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()].update
    }

    /// `update_job`: the job's new version, and a deployment to roll it out
    /// when a group has an update strategy (a batch job updates at once).
    pub(crate) fn update_job(&mut self, job: JobId, version: u32) {
        let state = &mut self.jobs[job.index()];
        state.version = version;
        let counts: Vec<u32> = self.scenario.jobs[job.index()]
            .groups_of(version)
            .iter()
            .map(|g| g.count)
            .collect();
        self.jobs[job.index()].counts = counts;
        if self.jobs[job.index()].status != JobStatus::Registered {
            return;
        }
        self.cancel_deployment(job, "cancelled by a newer version");
        let spec = &self.scenario.jobs[job.index()];
        // System jobs roll out under a deployment only from 1.11.0
        // (`Release::system_deployments`); sysbatch jobs never do.
        let deploys = match spec.kind {
            JobKind::Service | JobKind::Batch => true,
            JobKind::System => self.behaviour.release.system_deployments,
            JobKind::Sysbatch => false,
        };
        let strategies = deploys
            && (0..self.jobs[job.index()].counts.len())
                .any(|g| self.update_strategy(GroupRef::new(job, g)).is_some());
        if strategies {
            self.start_deployment(job);
        }
        self.refresh_job(job);
        self.enqueue_eval(job);
    }

    pub(crate) fn start_deployment(&mut self, job: JobId) {
        let now = self.now();
        let state = &mut self.jobs[job.index()];
        state.deployments_started += 1;
        let seq = state.deployments_started;
        let version = state.version;
        self.metrics.deployments += 1;
        // The progress deadline starts with the first placement, which the
        // evaluation queued with the update makes at once.
        let groups = state.counts.len();
        // The progress deadline starts with the deployment's first
        // placement (state_store.go updateDeploymentWithAlloc), not here.
        self.jobs[job.index()].deployment = Some(Deployment {
            seq,
            version,
            started_at: now,
            status: DeploymentStatus::Running,
            require_progress_by: None,
            desired_canaries: vec![0; groups],
            promoted: false,
        });
        self.record(|t| {
            TraceRecord::new(t, TraceKind::DeploymentStarted)
                .job(job)
                .detail(format!("deployment {seq} of version {version}"))
        });
    }

    /// A running deployment ends without success or failure (a newer
    /// version replaced it, or the job stopped).
    pub(crate) fn cancel_deployment(&mut self, job: JobId, _why: &str) {
        if let Some(d) = self.jobs[job.index()].deployment.as_mut()
            && d.is_active()
        {
            d.status = DeploymentStatus::Cancelled;
        }
    }

    /// The active deployment of `job`, if any.
    pub(crate) fn active_deployment(&self, job: JobId) -> Option<&Deployment> {
        self.jobs[job.index()]
            .deployment
            .as_ref()
            .filter(|d| d.is_active())
    }

    /// How many destructive updates an evaluation may make in `group` now
    /// (reconcile_cluster.go computeUnderProvisionedBy): all without an
    /// update strategy; none once the deployment failed; else
    /// `max_parallel` less the deployment's untainted allocations not yet
    /// healthy, and none while one of them is unhealthy. The untainted are
    /// the live allocations and `failed_untainted`, failed ones not
    /// rescheduled by this evaluation (filterByRescheduleable), so a failed
    /// allocation waiting for its reschedule holds the group's updates
    /// back. `placing` other placements of the group use the budget first
    /// (placeAllocs).
    pub(crate) fn destructive_budget(
        &self,
        group: GroupRef,
        placing: usize,
        failed_untainted: &[AllocId],
    ) -> usize {
        let Some(update) = self.update_strategy(group) else {
            return usize::MAX;
        };
        let state = &self.jobs[group.job.index()];
        let Some(deployment) = state
            .deployment
            .as_ref()
            .filter(|d| d.version == state.version)
        else {
            return update.max_parallel as usize;
        };
        if deployment.status != DeploymentStatus::Running {
            return 0;
        }
        let mut budget = update.max_parallel as usize;
        for &id in state.latest[group.group_index()].values() {
            let alloc = &self.allocs[id.index()];
            let untainted = alloc.is_live() || failed_untainted.contains(&id);
            if !untainted || alloc.deployment.get() != Some(deployment.seq) {
                continue;
            }
            match alloc.deploy_health {
                Some(false) => return 0,
                Some(true) => {}
                None => budget = budget.saturating_sub(1),
            }
        }
        budget.saturating_sub(placing)
    }

    /// A placement was committed: an allocation of the job's active
    /// deployment is watched for health from now.
    pub(crate) fn watch_deployment_alloc(&mut self, id: AllocId) {
        let alloc = &self.allocs[id.index()];
        let job = alloc.group.job;
        let version = alloc.version;
        let Some(seq) = self
            .active_deployment(job)
            .filter(|d| d.version == version)
            .map(|d| d.seq)
        else {
            return;
        };
        let Some(update) = self.update_strategy(alloc.group) else {
            return;
        };
        self.allocs[id.index()].deployment = MaybeSeq::some(seq);
        self.after(update.healthy_deadline, Event::HealthyDeadline(id));
        // The first placement starts the progress deadline.
        let deadline = (0..self.jobs[job.index()].counts.len())
            .filter_map(|g| self.update_strategy(GroupRef::new(job, g)))
            .map(|u| u.progress_deadline)
            .filter(|&d| d > Millis::ZERO)
            .min();
        let now = self.now();
        if let (Some(d), Some(deployment)) = (deadline, self.jobs[job.index()].deployment.as_mut())
            && deployment.require_progress_by.is_none()
        {
            deployment.require_progress_by = Some(now + d);
            self.after(d, Event::ProgressDeadline(job));
        }
    }

    /// The allocation became healthy (health.rs): the deployment counts it
    /// healthy after `min_healthy_time` more.
    pub(crate) fn deployment_alloc_healthy(&mut self, id: AllocId) {
        let alloc = &self.allocs[id.index()];
        if alloc.deployment.is_none() || alloc.deploy_health.is_some() {
            return;
        }
        let Some(update) = self.update_strategy(alloc.group) else {
            return;
        };
        if update.min_healthy_time == Millis::ZERO {
            self.deploy_healthy_due(id);
        } else {
            self.after(update.min_healthy_time, Event::DeployHealthy(id));
        }
    }

    /// `min_healthy_time` passed: healthy for the deployment if it still is.
    pub(crate) fn deploy_healthy_due(&mut self, id: AllocId) {
        let alloc = &self.allocs[id.index()];
        let job = alloc.group.job;
        let current = self.active_deployment(job).map(|d| d.seq);
        if alloc.healthy_at.is_none()
            || alloc.deploy_health.is_some()
            || alloc.deployment.get() != current
        {
            return;
        }
        self.allocs[id.index()].deploy_health = Some(true);
        let group = self.allocs[id.index()].group;
        // Progress: the deadline moves to now + progress_deadline.
        if let Some(update) = self.update_strategy(group)
            && update.progress_deadline > Millis::ZERO
        {
            let by = self.now() + update.progress_deadline;
            if let Some(d) = self.jobs[job.index()].deployment.as_mut() {
                d.require_progress_by = Some(d.require_progress_by.map_or(by, |old| old.max(by)));
            }
            self.after(update.progress_deadline, Event::ProgressDeadline(job));
        }
        if self.auto_promotable(job) {
            self.promote(job);
        }
        if self.scenario.jobs[job.index()].is_system() {
            // The system scheduler marks its deployment complete
            // (isDeploymentComplete), at the watcher's batched evaluation.
            self.deployment_eval(job);
            return;
        }
        if !self.deployment_complete(job) {
            // The deployment watcher creates an evaluation to go on.
            self.enqueue_eval(job);
            return;
        }
        self.finish_deployment(job);
    }

    /// The deployment watcher's evaluation after a system deployment's
    /// health change: 1s later, once for the health changes of that second
    /// (createBatchedUpdate's `perJobEvalBatchPeriod`), so allocations that
    /// turn healthy together free their `max_parallel` together. (A service
    /// deployment's is made at once: a simplification kept from before
    /// system deployments were modelled.)
    fn deployment_eval(&mut self, job: JobId) {
        let state = &mut self.jobs[job.index()];
        if !state.eval_batch {
            state.eval_batch = true;
            self.after(DEPLOYMENT_EVAL_BATCH, Event::DeploymentEvalBatch(job));
        }
    }

    /// Nomad's allocation health deadline: not healthy `healthy_deadline`
    /// after placement is unhealthy.
    pub(crate) fn healthy_deadline_due(&mut self, id: AllocId) {
        let alloc = &self.allocs[id.index()];
        if alloc.deploy_health.is_none() && alloc.deployment.is_some() && alloc.is_live() {
            self.deploy_alloc_unhealthy(id);
        }
    }

    /// The allocation failed (or missed its health deadline) before it was
    /// healthy: without a progress deadline the deployment fails at once
    /// (handleAllocUpdate; shouldFailEarly from 1.6); with one, the deadline
    /// decides, except that from 1.6 (#17341) an allocation with no
    /// reschedule attempt left fails it at once (shouldFailEarly:
    /// `RescheduleEligible` of the group's policy at the watcher's now).
    pub(crate) fn deploy_alloc_unhealthy(&mut self, id: AllocId) {
        let alloc = &mut self.allocs[id.index()];
        let job = alloc.group.job;
        let group = alloc.group;
        let Some(seq) = alloc.deployment.get() else {
            return;
        };
        if alloc.deploy_health.is_some() {
            return;
        }
        alloc.deploy_health = Some(false);
        if self.active_deployment(job).map(|d| d.seq) != Some(seq) {
            return;
        }
        let no_deadline = self
            .update_strategy(group)
            .is_some_and(|u| u.progress_deadline == Millis::ZERO);
        if no_deadline {
            self.fail_deployment(job, "failed due to unhealthy allocations");
        } else if self.behaviour.release.fails_deployment_early && !self.may_try_again(id) {
            // The same status description as above
            // (DeploymentStatusDescriptionFailedAllocations).
            self.fail_deployment(job, "failed due to unhealthy allocations");
        }
    }

    /// Whether the group's reschedule policy leaves the allocation another
    /// attempt now (structs `RescheduleTracker.RescheduleEligible`).
    fn may_try_again(&self, id: AllocId) -> bool {
        let alloc = &self.allocs[id.index()];
        let policy = &self.scenario.jobs[alloc.group.job.index()].groups_of(alloc.version)
            [alloc.group.group_index()]
        .reschedule;
        attempts_left(policy, alloc.reschedule_history(), self.now())
    }

    /// Whether an allocation counts as healthy for `deployment`: one it
    /// placed once the deployment saw it healthy; one that already ran the
    /// version (a revert's, which Nomad updates in place into the new
    /// deployment) while it is healthy.
    pub(crate) fn healthy_in(&self, id: AllocId, deployment: &Deployment) -> bool {
        let a = &self.allocs[id.index()];
        a.is_live()
            && a.version == deployment.version
            && if a.deployment.get() == Some(deployment.seq) {
                a.deploy_health == Some(true)
            } else {
                a.healthy_at.is_some()
            }
    }

    /// Every group has its desired count of the deployment's version,
    /// healthy for the deployment, and nothing of an older version left.
    pub(crate) fn deployment_complete(&self, job: JobId) -> bool {
        let state = &self.jobs[job.index()];
        let Some(deployment) = state.deployment.as_ref() else {
            return false;
        };
        if deployment.requires_promotion() {
            return false;
        }
        if self.scenario.jobs[job.index()].is_system() {
            return self.system_rollout_done(job, deployment);
        }
        state.latest.iter().enumerate().all(|(g, slots)| {
            let count = state.counts[g];
            let healthy = slots
                .below(count)
                .filter(|&(_, id)| self.healthy_in(id, deployment))
                .count();
            let old = slots.values().any(|&id| {
                let a = &self.allocs[id.index()];
                a.is_live() && a.version != deployment.version
            });
            healthy >= count as usize && !old
        })
    }

    /// A system job's deployment is complete once every live allocation
    /// of the job runs its version, healthy for it: the scheduler's
    /// `isDeploymentComplete` (HealthyAllocs >= DesiredTotal, the desired
    /// total being the nodes it could place on).
    fn system_rollout_done(&self, job: JobId, deployment: &Deployment) -> bool {
        self.live_allocs_of(job)
            .iter()
            .all(|&id| self.healthy_in(id, deployment))
    }

    pub(crate) fn finish_deployment(&mut self, job: JobId) {
        let now = self.now();
        let state = &mut self.jobs[job.index()];
        let Some(d) = state.deployment.as_mut() else {
            return;
        };
        d.status = DeploymentStatus::Successful;
        let (seq, version, took) = (d.seq, d.version, now - d.started_at);
        state.stable_version = version;
        state.last_success = Some((now, version));
        self.deploy_times.push(took);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::DeploymentSucceeded)
                .job(job)
                .detail(format!("deployment {seq} of version {version} in {took}s"))
        });
    }

    /// The progress deadline (deployment_watcher.go watch, shouldFail):
    /// fails the deployment unless every group has its desired healthy
    /// allocations.
    pub(crate) fn progress_deadline_due(&mut self, job: JobId) {
        let now = self.now();
        let Some(d) = self.active_deployment(job) else {
            return;
        };
        if d.require_progress_by.is_none_or(|by| by > now) {
            return;
        }
        let state = &self.jobs[job.index()];
        let system = self.scenario.jobs[job.index()].is_system();
        let failed = if system {
            !self.system_rollout_done(job, d)
        } else {
            (0..state.counts.len()).any(|g| {
                let group = GroupRef::new(job, g);
                if self.update_strategy(group).is_none() {
                    return false;
                }
                // Waiting for promotion, a group fails only without its
                // canaries healthy (a manual promotion may take forever).
                if d.requires_promotion() && d.desired_canaries[g] > 0 {
                    return self.healthy_canaries(group, d) < d.desired_canaries[g] as usize;
                }
                let healthy = state.latest[g]
                    .values()
                    .filter(|&&id| self.healthy_in(id, d))
                    .count();
                healthy < state.counts[g] as usize
            })
        };
        if failed {
            self.fail_deployment(job, "failed: the progress deadline passed");
        }
    }

    pub(crate) fn fail_deployment(&mut self, job: JobId, why: &str) {
        let state = &mut self.jobs[job.index()];
        let Some(d) = state.deployment.as_mut() else {
            return;
        };
        d.status = DeploymentStatus::Failed;
        let (seq, version) = (d.seq, d.version);
        let revert = (0..state.counts.len()).any(|g| {
            self.update_strategy(GroupRef::new(job, g))
                .is_some_and(|u| u.auto_revert)
        });
        self.metrics.deployment_failures += 1;
        let detail = format!("deployment {seq} of version {version} {why}");
        self.record(|t| {
            TraceRecord::new(t, TraceKind::DeploymentFailed)
                .job(job)
                .detail(detail)
        });
        let stable = self.jobs[job.index()].stable_version;
        if revert && stable != version {
            // Nomad registers a copy of the latest stable version: its
            // allocations are current again, the others roll back.
            self.record(|t| {
                TraceRecord::new(t, TraceKind::DeploymentReverted)
                    .job(job)
                    .detail(format!("rolling back to version {stable}"))
            });
            self.update_job(job, stable);
        } else {
            // The failed deployment's unhealthy allocations are replaced.
            self.enqueue_eval(job);
        }
    }

    /// Whether a destructive update whose placement failed keeps its stop.
    /// Nomad drops it (the old allocation runs on). With the fix the
    /// stop stays when the old allocation holds a volume the new one needs:
    /// its claim is what blocked the placement, so the allocation stops,
    /// the claim is released, and the release re-evaluates the job (the
    /// fix's hand-off), instead of the update deadlocking.
    pub(crate) fn keeps_stop(&self, previous: AllocId, volumes: &[ResolvedVolume]) -> bool {
        self.behaviour.plan_aware_claims
            && volumes.iter().any(|v| match v {
                ResolvedVolume::Found(id, _, _) => self.allocs[previous.index()]
                    .volumes()
                    .iter()
                    .any(|(held, _)| held == id),
                ResolvedVolume::Missing(_) => false,
            })
    }

    /// The canaries of `group` (reconcile.go cancelUnneededCanaries,
    /// requiresCanaries, computeCanaries): those of an older, failed or
    /// cancelled deployment, or on a draining node, are stopped; the
    /// allocations a promotion displaced are stopped; while the group has
    /// destructive updates to make and fewer canaries than `canary`, the
    /// missing ones are placed beside the old allocations. Returns whether
    /// the group waits for promotion (no destructive update is made).
    pub(crate) fn reconcile_canaries(
        &mut self,
        group: GroupRef,
        outdated: &[(u32, AllocId)],
        wants: &mut Vec<Want>,
        stops: &mut Vec<AllocId>,
    ) -> bool {
        let job = group.job;
        let state = &mut self.jobs[job.index()];
        if state.canaries.is_empty() && state.displaced.is_empty() && state.deployment.is_none() {
            return false;
        }
        let allocs = &self.allocs;
        let seq = state.deployment.as_ref().map(|d| d.seq);
        // A failed canary of the deployment stays among its canaries
        // (PlacedCanaries) until its reschedule replaces it, so it is not
        // placed anew (see `reschedule_canaries`).
        state.canaries.retain(|id| {
            let a = &allocs[id.index()];
            a.is_live() || (a.state == AllocState::Failed && a.deployment.get() == seq)
        });
        state.displaced.retain(|id| allocs[id.index()].is_live());
        stops.extend(
            state
                .displaced
                .iter()
                .filter(|id| allocs[id.index()].group == group),
        );
        let active = self
            .active_deployment(job)
            .filter(|d| d.version == self.jobs[job.index()].version)
            .map(|d| d.seq);
        // The canaries placed (names may repeat past the count) and the
        // indices they take.
        let mut placed = 0usize;
        let mut current = BTreeSet::new();
        for &id in &self.jobs[job.index()].canaries {
            let a = &self.allocs[id.index()];
            if a.group != group {
                continue;
            }
            let stale = a.deployment.is_none() || a.deployment.get() != active || a.migrate;
            if stale && a.is_live() {
                stops.push(id);
            } else if !stale {
                placed += 1;
                current.insert(a.index);
            }
        }
        let (Some(_), Some(update)) = (active, self.update_strategy(group)) else {
            return false;
        };
        let g = group.group_index();
        let count = self.jobs[job.index()].counts[g];
        let latest = &self.jobs[job.index()].latest[g];
        let Some(d) = self.jobs[job.index()].deployment.as_ref() else {
            return false;
        };
        if !d.promoted && !outdated.is_empty() && placed < update.canary as usize {
            // No more placements than the count in one evaluation
            // (computeGroup truncates Place): 7 canaries of a count of 3
            // are placed 3 at a time.
            let placing = wants.iter().filter(|w| w.group == group).count();
            let missing =
                (update.canary as usize - placed).min((count as usize).saturating_sub(placing));
            for index in next_canaries(missing, count, &current, outdated, latest) {
                wants.push(Want::new(group, index, PlacementKind::Canary));
            }
            if let Some(d) = self.jobs[job.index()].deployment.as_mut() {
                d.desired_canaries[g] = update.canary;
            }
        }
        let d = self.jobs[job.index()].deployment.as_ref();
        d.is_some_and(|d| !d.promoted && d.desired_canaries[g] > 0)
    }

    /// The group's failed canaries of the active deployment, rescheduled
    /// under the group's reschedule policy as any failed allocation is
    /// (reconcile_util.go filterByRescheduleable, updateByReschedulable; the
    /// deployment watcher's allowReplacements marks a failed allocation of
    /// a progress-based deployment for rescheduling at once): now if due
    /// within 1s or at the follow-up evaluation made for it, else a
    /// follow-up at its time (pushed to `later`). The replacement is a
    /// canary again (computePlacements: `canary: IsCanary()`), which keeps
    /// the canary's name. A failed deployment's canaries are stopped
    /// instead (handleGroupCanaries), and are not among the active ones.
    pub(crate) fn reschedule_canaries(
        &self,
        group: GroupRef,
        wants: &mut Vec<Want>,
        later: &mut Vec<(AllocId, Millis)>,
    ) {
        let now = self.now();
        let state = &self.jobs[group.job.index()];
        let Some(active) = self
            .active_deployment(group.job)
            .filter(|d| d.version == state.version)
            .map(|d| d.seq)
        else {
            return;
        };
        for &id in &state.canaries {
            let a = &self.allocs[id.index()];
            // Only an allocation the deployment found unhealthy is marked
            // for rescheduling (handleAllocUpdate allowReplacements); one
            // that failed after it was healthy waits for the deployment.
            if a.group != group
                || a.state != AllocState::Failed
                || a.deployment.get() != Some(active)
                || a.deploy_health != Some(false)
            {
                continue;
            }
            let policy = &self.scenario.jobs[group.job.index()].groups_of(a.version)
                [group.group_index()]
            .reschedule;
            let Some(due) = reschedule_eligible(policy, a.reschedule_history(), a.failed_at())
            else {
                continue;
            };
            let followup_due = a.followup_at().is_some_and(|at| at <= now);
            if followup_due || due <= now + RESCHEDULE_WINDOW {
                wants.push(Want::new(group, a.index, PlacementKind::Reschedules(id)));
            } else if a.followup_at().is_none() {
                later.push((id, due));
            }
        }
    }

    /// Allocations that already run the deployment's version but predate
    /// it (a revert's: Nomad registers the stable version anew and updates
    /// them in place) join the deployment, their deployment health unset
    /// (generic_sched.go computeJobAllocs: DeploymentStatus = nil), and
    /// count healthy `min_healthy_time` later. Called after the group's
    /// destructive updates are decided: the in-place updates are in the
    /// same plan, so they do not hold back this evaluation's budget.
    pub(crate) fn join_in_place(&mut self, group: GroupRef) {
        let Some(d) = self.active_deployment(group.job) else {
            return;
        };
        let (seq, version, started) = (d.seq, d.version, d.started_at);
        let joining: Vec<AllocId> = self.jobs[group.job.index()].latest[group.group_index()]
            .values()
            .copied()
            .filter(|id| {
                let a = &self.allocs[id.index()];
                a.is_live()
                    && a.version == version
                    && a.deployment.get() != Some(seq)
                    && a.placed_at.get() <= started
            })
            .collect();
        for id in joining {
            let alloc = &mut self.allocs[id.index()];
            alloc.deploy_health = None;
            alloc.deployment = MaybeSeq::NONE;
            let healthy = alloc.healthy_at.is_some();
            self.watch_deployment_alloc(id);
            if healthy {
                self.deployment_alloc_healthy(id);
            }
        }
    }

    /// Live canaries of `group` in `deployment` the deployment counts healthy.
    pub(crate) fn healthy_canaries(&self, group: GroupRef, deployment: &Deployment) -> usize {
        self.jobs[group.job.index()]
            .canaries
            .iter()
            .map(|id| &self.allocs[id.index()])
            .filter(|a| {
                a.group == group
                    && a.is_live()
                    && a.deployment.get() == Some(deployment.seq)
                    && a.deploy_health == Some(true)
            })
            .count()
    }

    /// Whether the group's canaries allow a promotion: each group with
    /// canaries has them all healthy (state_store.go
    /// UpsertDeploymentPromotion), or the error Nomad answers with.
    pub(crate) fn promotion_refused(&self, job: JobId) -> Option<String> {
        let Some(d) = self.active_deployment(job) else {
            return Some("no active deployment".to_string());
        };
        if !d.requires_promotion() {
            return Some("the deployment does not require promotion".to_string());
        }
        let spec = &self.scenario.jobs[job.index()];
        for (g, &need) in d.desired_canaries.iter().enumerate() {
            let have = self.healthy_canaries(GroupRef::new(job, g), d);
            if need > 0 && have < need as usize {
                return Some(format!(
                    "Task group \"{}\" has {have}/{need} healthy allocations",
                    spec.groups[g].name
                ));
            }
        }
        None
    }

    /// deployment_watcher.go autoPromoteDeployment: every group with
    /// canaries has `auto_promote` and all its canaries placed and healthy.
    pub(crate) fn auto_promotable(&self, job: JobId) -> bool {
        let Some(d) = self.active_deployment(job) else {
            return false;
        };
        d.requires_promotion()
            && d.desired_canaries.iter().enumerate().all(|(g, &need)| {
                need == 0
                    || self
                        .update_strategy(GroupRef::new(job, g))
                        .is_some_and(|u| u.auto_promote)
            })
            && self.promotion_refused(job).is_none()
    }

    /// `promote_deployment`: Nomad's `nomad deployment promote`.
    pub(crate) fn promote_deployment(&mut self, job: JobId) {
        let refused = self.promotion_refused(job);
        let detail = match &refused {
            None => "promoting".to_string(),
            Some(why) => format!("refused: {why}"),
        };
        self.record(|t| {
            TraceRecord::new(t, TraceKind::PromoteDeployment)
                .job(job)
                .detail(detail)
        });
        if refused.is_none() {
            self.promote(job);
        }
    }

    /// The canaries are promoted: each takes its slot (the allocation it
    /// ran beside is displaced and stopped by the next evaluation, which
    /// also goes on with the destructive updates); the progress deadline
    /// restarts (UpsertDeploymentPromotion).
    pub(crate) fn promote(&mut self, job: JobId) {
        let now = self.now();
        let mut deadline = None;
        for g in 0..self.jobs[job.index()].counts.len() {
            if let Some(u) = self.update_strategy(GroupRef::new(job, g))
                && u.progress_deadline > Millis::ZERO
            {
                deadline = Some(
                    deadline.map_or(u.progress_deadline, |d: Millis| d.min(u.progress_deadline)),
                );
            }
        }
        let state = &mut self.jobs[job.index()];
        let Some(d) = state.deployment.as_mut() else {
            return;
        };
        d.promoted = true;
        let seq = d.seq;
        if let (Some(pd), Some(_)) = (deadline, d.require_progress_by) {
            d.require_progress_by = Some(now + pd);
            self.after(pd, Event::ProgressDeadline(job));
        }
        let state = &mut self.jobs[job.index()];
        let canaries = std::mem::take(&mut state.canaries);
        let mut promoted = 0;
        for id in canaries {
            let a = &self.allocs[id.index()];
            if !a.is_live() {
                // A failed canary not replaced: it takes no slot.
                continue;
            }
            if a.deployment.get() != Some(seq) {
                state.canaries.push(id);
                continue;
            }
            promoted += 1;
            let (g, index) = (a.group.group_index(), a.index);
            if let Some(old) = state.latest[g].insert(index, id)
                && self.allocs[old.index()].is_live()
            {
                state.displaced.push(old);
            }
        }
        self.record(|t| {
            TraceRecord::new(t, TraceKind::DeploymentPromoted)
                .job(job)
                .detail(format!("deployment {seq}: {promoted} canaries promoted"))
        });
        self.enqueue_eval(job);
    }

    /// What the reconciler decides about the deployment when the
    /// evaluation has nothing to place (isDeploymentComplete): it succeeds
    /// once every group is complete (a revert whose allocations already run
    /// the stable version, a count-only version).
    pub(crate) fn reconciled_deployment(&mut self, job: JobId) {
        if self.active_deployment(job).is_some() && self.deployment_complete(job) {
            self.finish_deployment(job);
        }
    }
}

/// Nomad's AllocNameIndex.NextCanaries: the indices of allocations being
/// updated destructively first (lowest first), then free indices below
/// the count, then indices from the count up; none already a canary's.
fn next_canaries(
    n: usize,
    count: u32,
    taken: &BTreeSet<u32>,
    outdated: &[(u32, AllocId)],
    latest: &Slots,
) -> Vec<u32> {
    let mut next: Vec<u32> = Vec::with_capacity(n);
    let destructive = outdated.iter().map(|&(i, _)| i);
    let free = (0..count).filter(|i| !latest.contains_key(i));
    for index in destructive.chain(free) {
        if next.len() == n {
            return next;
        }
        if !taken.contains(&index) && !next.contains(&index) {
            next.push(index);
        }
    }
    let remainder = (n - next.len()) as u32;
    next.extend(count..count + remainder);
    next
}
