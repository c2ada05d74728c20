//! Job registration (nomad/job_endpoint.go Register): the servers'
//! validation of a submitted job (a request's access mode among them), the
//! job's first version and its first evaluation.

use crate::model::access::{AccessMode, ClaimMode};
use crate::model::ids::JobId;
use crate::model::scenario::{
    ALL_NODE_POOLS, DEFAULT_NODE_POOL, JobKind, VolumeRequest, VolumeSource,
};
use crate::sim::simulation::Simulation;
use crate::sim::state::store::JobStatus;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    pub(crate) fn submit_job(&mut self, job: JobId) {
        self.jobs_submitted += 1;
        if let Some(reason) = self.skipped_launch(job) {
            self.jobs[job.index()].status = JobStatus::Skipped;
            self.record(|t| {
                TraceRecord::new(t, TraceKind::LaunchSkipped)
                    .job(job)
                    .detail(reason)
            });
            return;
        }
        if let Some(problem) = self.registration_problem(job) {
            self.jobs[job.index()].status = JobStatus::Rejected;
            self.metrics.rejected_jobs += 1;
            self.rejections.push((job, problem.clone()));
            self.record(|t| {
                TraceRecord::new(t, TraceKind::JobRejected)
                    .job(job)
                    .detail(problem)
            });
            return;
        }
        if self.scenario.jobs[job.index()].launch.is_parent() {
            // Register creates no evaluation for a periodic or
            // parameterized job (job_endpoint.go Register).
            self.jobs[job.index()].status = JobStatus::Tracked;
            self.record(|t| TraceRecord::new(t, TraceKind::JobSubmitted).job(job));
            return;
        }
        self.jobs[job.index()].status = JobStatus::Registered;
        self.note_launched(job);
        self.record(|t| TraceRecord::new(t, TraceKind::JobSubmitted).job(job));
        self.refresh_job(job);
        self.enqueue_eval(job);
    }

    /// Nomad's job validation of each CSI volume request
    /// (structs/volumes.go `VolumeRequest.Validate`). Since 1.1.0, at every
    /// pinned release: the request needs an access mode, and a reader-only
    /// mode must be mounted read-only. From 1.3 (where
    /// `Behaviour::validates_registration` is set): a group with count > 1 may not
    /// share a single-node volume, or write a multi-node-single-writer one,
    /// without `per_alloc`. The modes checked are the request's.
    pub(crate) fn registration_problem(&self, job: JobId) -> Option<String> {
        if let Some(problem) = self.disconnect_problem(job) {
            return Some(problem);
        }
        if let Some(problem) = self.periodic_problem(job) {
            return Some(problem);
        }
        let spec = &self.scenario.jobs[job.index()];
        if let Some(problem) = self.system_preference_problem(job) {
            return Some(problem);
        }
        if let Some(problem) = self.node_pool_problem(job) {
            return Some(problem);
        }
        if let Some(problem) = self.host_volume_problem(job) {
            return Some(problem);
        }
        for (g, group) in spec.groups.iter().enumerate() {
            let count = self.jobs[job.index()].counts[g];
            for request in &group.volumes {
                let per_alloc = matches!(request.source, VolumeSource::PerAlloc { .. });
                let problem = match self.request_access_mode(request) {
                    None => Some("CSI volumes must have an access mode".to_string()),
                    Some(mode) if !mode.allows_writers() && request.mode == ClaimMode::Write => {
                        Some(format!("{mode} volumes must be read-only"))
                    }
                    Some(mode)
                        if self.behaviour.validates_registration && count > 1 && !per_alloc =>
                    {
                        match mode {
                            AccessMode::SingleNodeReaderOnly => Some("allows only one reader"),
                            AccessMode::SingleNodeWriter => {
                                Some("allows only one reader or writer")
                            }
                            AccessMode::MultiNodeSingleWriter
                                if request.mode == ClaimMode::Write =>
                            {
                                Some("allows only one writer")
                            }
                            _ => None,
                        }
                        .map(|rule| format!("volume with {mode} access mode {rule}"))
                    }
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    return Some(format!(
                        "task group {} volume {}: {problem}",
                        group.name, request.alias
                    ));
                }
            }
        }
        None
    }

    /// From 1.6, a job in a node pool that does not exist is refused
    /// (`jobNodePoolValidatingHook.Validate`). A pool exists once a node in
    /// it registers (the client's registration creates it), and the
    /// built-in "default" and "all" always do; plansim's nodes are all
    /// registered from 0s.
    fn node_pool_problem(&self, job: JobId) -> Option<String> {
        let spec = &self.scenario.jobs[job.index()];
        let pool = spec.node_pool.as_str();
        let exists = pool == DEFAULT_NODE_POOL
            || pool == ALL_NODE_POOLS
            || self.node_pools.names().iter().any(|p| p == pool);
        (self.behaviour.release.node_pools && !exists)
            .then(|| format!("job {:?} is in nonexistent node pool {pool:?}", spec.name))
    }

    /// Nomad refuses a `system` job with an `affinity` or a `spread`, its
    /// own or a group's, in that order (structs.go `Job.Validate`, then
    /// `TaskGroup.Validate`, both tags; a `sysbatch` job may have them).
    fn system_preference_problem(&self, job: JobId) -> Option<String> {
        let spec = &self.scenario.jobs[job.index()];
        if spec.kind != JobKind::System {
            return None;
        }
        let word = self.behaviour.release.validation_block_word;
        let refusal = |affinity: bool| {
            let what = if affinity { "an affinity" } else { "a spread" };
            format!("System jobs may not have {what} {word}")
        };
        if !spec.affinities.is_empty() {
            return Some(refusal(true));
        }
        if !spec.spreads.is_empty() {
            return Some(refusal(false));
        }
        spec.groups.iter().find_map(|group| {
            let which = if !group.affinities.is_empty() {
                true
            } else if !group.spreads.is_empty() {
                false
            } else {
                return None;
            };
            Some(format!("task group {}: {}", group.name, refusal(which)))
        })
    }

    /// `VolumeRequest.Validate` for host volume requests: before 1.10 a
    /// host volume request may name no access or attachment mode ("host
    /// volumes cannot have an access mode"); from 1.10 a reader-only one
    /// must be read-only.
    fn host_volume_problem(&self, job: JobId) -> Option<String> {
        use crate::model::host_volume::HostAccessMode;
        let spec = &self.scenario.jobs[job.index()];
        let dynamic = self.behaviour.release.dynamic_host_volumes;
        spec.groups.iter().find_map(|group| {
            let problem = group.host_volumes.iter().find_map(|request| {
                let problem = if !dynamic && request.attachment_mode.is_some() {
                    "host volumes cannot have an attachment mode".to_string()
                } else if !dynamic && request.access_mode.is_some() {
                    "host volumes cannot have an access mode".to_string()
                } else if request.access_mode == Some(HostAccessMode::SingleNodeReaderOnly)
                    && !request.read_only
                {
                    format!(
                        "{} volumes must be read-only",
                        HostAccessMode::SingleNodeReaderOnly
                    )
                } else {
                    return None;
                };
                Some(format!("volume {}: {problem}", request.alias))
            })?;
            Some(format!("task group {} {problem}", group.name))
        })
    }

    /// The access mode a request is made in: its own, or the shorthand of
    /// the volume it names (for `per_alloc`, the one shorthand all the
    /// `<source>[N]` volumes share; `None` if any lacks it or they differ).
    pub(crate) fn request_access_mode(&self, request: &VolumeRequest) -> Option<AccessMode> {
        if request.access_mode.is_some() {
            return request.access_mode;
        }
        match &request.source {
            VolumeSource::Shared(volume) => self.scenario.volumes[volume.index()].shorthand,
            VolumeSource::Missing { .. } => None,
            VolumeSource::PerAlloc { base } => {
                let prefix = format!("{base}[");
                let mut modes = self
                    .scenario
                    .volume_by_name
                    .range(prefix.clone()..)
                    .take_while(|(name, _)| name.starts_with(&prefix))
                    .map(|(_, v)| self.scenario.volumes[v.index()].shorthand);
                let first = modes.next().flatten()?;
                modes.all(|m| m == Some(first)).then_some(first)
            }
        }
    }
}
