//! Zero-time loops: with every latency and a reschedule delay at 0s, a
//! failing allocation can be replaced, fail and be replaced again without
//! simulated time ever advancing, and each turn allocates. The run loop
//! counts the queue entries handled at one instant; past a bound that
//! scales with the scenario, the run stops (exit 2) naming the job and the
//! zero delays that let it loop.

use crate::model::ids::JobId;
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};

/// Queue entries one instant may hold beyond what the scenario's size
/// explains (MAX_EVENTS_PER_INSTANT): a bound that no finite amount of
/// work at one instant reaches, but that stops a loop within about a second
/// and well within 1 GiB.
pub const MAX_EVENTS_PER_INSTANT: u64 = 1_000_000;

/// Most allocations one run may place, each volume mount counting as one
/// more, as in the loader's MAX_ALLOCATIONS budget (MAX_PLACEMENTS_PER_RUN).
/// A failed allocation keeps its 64-byte record, its reschedule tracker
/// (about 80 bytes) and 4 bytes of index, about 150 bytes; one with a
/// volume keeps its claims too (about 150 more: two units). So this bounds
/// what replacements that never stop (a reschedule churn over a long
/// horizon) can cost: 5,000,000 x 150 bytes, about 750 MB. The largest
/// accepted scenario places MAX_ALLOCATIONS (4,000,000) units once, which
/// leaves a million for its replacements.
pub const MAX_PLACEMENTS_PER_RUN: usize = 5_000_000;

/// Entries per desired allocation, job and timeline event that one instant
/// may legitimately need (place, pull, claim, publish, run, a few retries).
const ENTRIES_PER_ITEM: u64 = 16;

impl Simulation<'_> {
    /// How many queue entries one instant may hold before the run is
    /// called a loop.
    pub(crate) fn instant_limit(&self) -> u64 {
        let scenario = self.scenario;
        let allocations: u64 = scenario
            .jobs
            .iter()
            .flat_map(|job| job.groups.iter())
            .map(|group| u64::from(group.count))
            .sum();
        let items = allocations + (scenario.jobs.len() + scenario.events.len()) as u64;
        MAX_EVENTS_PER_INSTANT.saturating_add(items.saturating_mul(ENTRIES_PER_ITEM))
    }

    /// The message of a run stopped because time stood still at `now`.
    pub(crate) fn describe_stall(&self, event: Event, handled: u64) -> String {
        let scenario = self.scenario;
        let job = self.event_job(event);
        let cluster = &scenario.cluster;
        let mut zero: Vec<String> = [
            ("cluster.scheduler_latency", cluster.scheduler_latency),
            ("cluster.pull_delay", cluster.pull_delay),
            ("cluster.node_detach_latency", cluster.node_detach_latency),
            (
                "cluster.controller_detach_latency",
                cluster.controller_detach_latency,
            ),
            ("cluster.claim_free_latency", cluster.claim_free_latency),
        ]
        .into_iter()
        .filter(|&(_, delay)| delay == Millis::ZERO)
        .map(|(name, _)| name.to_string())
        .collect();
        zero.extend(
            scenario
                .plugins
                .iter()
                .filter(|plugin| plugin.publish_latency == Millis::ZERO)
                .map(|plugin| format!("plugins[{}].publish_latency", plugin.name)),
        );
        let job_name = job.map(|job| scenario.jobs[job.index()].name.as_str());
        for spec in scenario
            .jobs
            .iter()
            .filter(|spec| job_name.is_none_or(|name| name == spec.name))
        {
            for group in &spec.groups {
                if group.reschedule.delay == Millis::ZERO {
                    zero.push(format!(
                        "jobs[{}].groups[{}].reschedule.delay",
                        spec.name, group.name
                    ));
                }
            }
        }
        let culprit = match job_name {
            Some(name) => format!("job \"{name}\" loops"),
            None => "the scenario loops".to_string(),
        };
        let delays = if zero.is_empty() {
            "no delay is 0s, yet time does not advance".to_string()
        } else {
            format!("these delays are 0s: {}", zero.join(", "))
        };
        format!(
            "simulated time stopped advancing at {}s: {handled} events happened at that instant (MAX_EVENTS_PER_INSTANT); {culprit} without time passing ({delays}); give the loop's delays a duration above 0s",
            self.now()
        )
    }

    /// The message of a run stopped at MAX_PLACEMENTS_PER_RUN: which job's
    /// allocations keep being replaced.
    pub(crate) fn describe_churn(&self) -> String {
        let mut per_job: std::collections::BTreeMap<JobId, u64> = Default::default();
        for alloc in &self.allocs {
            *per_job.entry(alloc.group.job).or_default() += 1;
        }
        let (job, placed) = per_job
            .into_iter()
            .max_by_key(|&(job, placed)| (placed, std::cmp::Reverse(job)))
            .unwrap_or((JobId::from_index(0), 0));
        format!(
            "stopped after placing {} allocations with {} volume mounts at {}s of {}s (MAX_PLACEMENTS_PER_RUN, which counts both): job \"{}\" alone placed {placed}, its allocations are replaced over and over; lengthen its reschedule delay, limit its attempts, or shorten the horizon",
            self.allocs.len(),
            self.mounts_placed,
            self.now(),
            self.scenario.horizon,
            self.scenario.jobs[job.index()].name
        )
    }

    /// The message of a traced run stopped at its sink's row limit
    /// (MAX_TRACE_ROWS in memory).
    pub(crate) fn describe_long_trace(&self, max: u64, name: &str) -> String {
        // A trace held in memory (explain, --report, the hunt) cannot be
        // dropped by the user; a streamed one (run --trace) can.
        let advice = if name == "MAX_TRACE_ROWS" {
            "this command holds the whole trace in memory: shorten the horizon (`run --trace` streams longer traces to a file)"
        } else {
            "run without --trace, or trace a shorter horizon"
        };
        format!(
            "stopped at {}s of {}s: the trace reached {max} rows ({name}); {advice}",
            self.now(),
            self.scenario.horizon
        )
    }

    /// The job an event is about, if any.
    pub(crate) fn event_job(&self, event: Event) -> Option<JobId> {
        let alloc_job =
            |alloc: crate::model::ids::AllocId| Some(self.allocs[alloc.index()].group.job);
        match event {
            Event::JobSubmit(job) | Event::RescheduleDue(job) => Some(job),
            Event::PlanSubmit { worker } => self.workers[worker].as_ref().map(|plan| plan.job),
            Event::AllocPulled(alloc)
            | Event::ClaimAttempt(alloc)
            | Event::PublishDone(alloc)
            | Event::TaskComplete(alloc)
            | Event::TasksKilled(alloc)
            | Event::RunDeadline(alloc)
            | Event::NodeDetach(alloc, _)
            | Event::ControllerDetach(alloc, _)
            | Event::ClaimFreed(alloc, _)
            | Event::AllocHealthy(alloc)
            | Event::DeployHealthy(alloc)
            | Event::HealthyDeadline(alloc) => alloc_job(alloc),
            Event::ProgressDeadline(job) => Some(job),
            Event::DisconnectExpired(alloc, _) => alloc_job(alloc),
            Event::Timeline(_) | Event::ClaimGc | Event::UnblockFailed => None,
            Event::HeartbeatMissed(..)
            | Event::ClientHeartbeatStop(..)
            | Event::DrainPass
            | Event::DrainBatch => None,
            Event::PluginRestarted(..) | Event::VolumeRegistered(_) => None,
            Event::DeploymentEvalBatch(job) => Some(job),
        }
    }
}
