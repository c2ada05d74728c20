//! The properties a hunt checks. Each looks only at what the public run API
//! returns (metrics, and the trace where a metric is not enough), never at
//! the simulation's internals, so it keeps meaning the same thing while the
//! model grows.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::release::{ClaimLife, Path, Releases};
use crate::model::access::{AccessMode, ClaimMode};
use crate::model::expect::Expectation;
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::release::Release;
use crate::model::scenario::{Scenario, VolumeSource};
use crate::model::time::Millis;
use crate::sim::trace::{CONTROLLER_PUBLISH_ERROR, TraceKind, TraceRecord};
use crate::sim::{RunOptions, simulate};

/// A property every scenario should have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Property {
    PlanAwareNeverViolates,
    PlanAwareNeverRefused,
    NoLostClaims,
    PlanAwareNotSlower,
    ValidateCatches,
    Expect,
}

impl Property {
    pub const ALL: [Property; 6] = [
        Property::PlanAwareNeverViolates,
        Property::PlanAwareNeverRefused,
        Property::NoLostClaims,
        Property::PlanAwareNotSlower,
        Property::ValidateCatches,
        Property::Expect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Property::PlanAwareNeverViolates => "plan-aware-never-violates",
            Property::PlanAwareNeverRefused => "plan-aware-never-refused",
            Property::NoLostClaims => "no-lost-claims",
            Property::PlanAwareNotSlower => "plan-aware-not-slower",
            Property::ValidateCatches => "validate-catches",
            Property::Expect => "expect",
        }
    }

    /// The sentence `--help` shows.
    pub fn help(self) -> &'static str {
        match self {
            Property::PlanAwareNeverViolates => {
                "plan-aware never publishes a volume in violation of its access mode"
            }
            Property::PlanAwareNeverRefused => {
                "no claim is refused, by the server or an enforcing plugin, for an allocation plan-aware placed (a publish that the storage provider fails, or that finds no healthy controller after the placement, is not the scheduler's to prevent)"
            }
            Property::NoLostClaims => {
                "under every policy, each claim is freed once its allocation is terminal (a stopped one's tasks killed) and its pinned release has had time to free it before the horizon: the client's unpublish (node + controller detach + claim free), or for a down node's claim the claim GC (2.0.5) or the node GC then the claim GC (1.2.6); a claim waiting for a node plugin or a controller to come back is not lost"
            }
            Property::PlanAwareNotSlower => {
                "when naive reaches full placement without a violation (nor an attach beyond max_volumes), plan-aware reaches it too, no later than the hand-offs of volumes it waited for explain (per claim freed: the time its release took, the client's unpublish or a down node's claim GC, then three evaluations, the pull and the publishes), unless validate, the same Nomad release without the fix, is as slow"
            }
            Property::ValidateCatches => {
                "whenever naive lets two allocations of one group share a volume beyond the access mode their request names (one registration refuses for count > 1), validate rejected that job at registration"
            }
            Property::Expect => {
                "the scenario's own expect block still holds when it is mutated (needs --from)"
            }
        }
    }

    pub fn from_name(name: &str) -> Option<Property> {
        Property::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A property that does not hold for a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub property: Property,
    /// What must stay the same while shrinking: the property, and for
    /// `expect` the expectation that failed (so shrinking cannot wander to
    /// another one).
    pub signature: String,
    /// What went wrong, in words, with the numbers.
    pub message: String,
}

impl Failure {
    fn new(property: Property, message: String) -> Self {
        Failure {
            property,
            signature: property.name().to_string(),
            message,
        }
    }
}

/// The runs of one scenario, made on demand and kept: several properties
/// share them. Traced runs are made only when a property needs the trace.
pub struct Runs<'s> {
    scenario: &'s Scenario,
    metrics: [Option<Metrics>; 3],
    traces: [Option<Vec<TraceRecord>>; 3],
}

fn slot(policy: Policy) -> usize {
    match policy {
        Policy::Naive => 0,
        Policy::Validate => 1,
        Policy::PlanAware => 2,
    }
}

impl<'s> Runs<'s> {
    pub fn new(scenario: &'s Scenario) -> Self {
        Runs {
            scenario,
            metrics: [None, None, None],
            traces: [None, None, None],
        }
    }

    pub fn metrics(&mut self, policy: Policy) -> &Metrics {
        let i = slot(policy);
        if self.metrics[i].is_none() {
            let output = simulate(self.scenario, RunOptions::new(policy, self.scenario.seed));
            self.metrics[i] = Some(output.metrics);
        }
        self.metrics[i].as_ref().expect("just run")
    }

    pub fn trace(&mut self, policy: Policy) -> &[TraceRecord] {
        let i = slot(policy);
        if self.traces[i].is_none() {
            let output = simulate(
                self.scenario,
                RunOptions {
                    trace: true,
                    ..RunOptions::new(policy, self.scenario.seed)
                },
            );
            self.metrics[i] = Some(output.metrics);
            self.traces[i] = output.trace;
        }
        self.traces[i].as_deref().unwrap_or(&[])
    }
}

/// Checks one property; `None` when it holds.
pub fn check(property: Property, runs: &mut Runs) -> Option<Failure> {
    match property {
        Property::PlanAwareNeverViolates => {
            let m = runs.metrics(Policy::PlanAware);
            (m.violations > 0).then(|| {
                Failure::new(
                    property,
                    format!(
                        "plan-aware: {} violation(s), {}s in violation",
                        m.violations, m.violation_time
                    ),
                )
            })
        }
        Property::PlanAwareNeverRefused => {
            // Refusals by the server or an enforcing plugin: claim_rejected
            // rows. Not the storage provider's failed publishes
            // (publish_failure rows, counted in claim_failures too) nor a
            // ControllerPublish that found the controller gone since the
            // placement (feasibility saw a schedulable volume then).
            let refused = runs
                .trace(Policy::PlanAware)
                .iter()
                .filter(|r| r.kind == TraceKind::ClaimRejected)
                .filter(|r| !r.detail.starts_with(CONTROLLER_PUBLISH_ERROR))
                .count();
            (refused > 0)
                .then(|| Failure::new(property, format!("plan-aware: {refused} claim(s) refused")))
        }
        Property::NoLostClaims => Policy::ALL.into_iter().find_map(|policy| {
            let scenario = runs.scenario;
            lost_claim(scenario, policy.behaviour().release, runs.trace(policy)).map(|lost| {
                Failure::new(property, format!("{policy}: {}", lost.describe(scenario)))
            })
        }),
        Property::PlanAwareNotSlower => not_slower(runs),
        Property::ValidateCatches => validate_catches(runs),
        Property::Expect => {
            let scenario = runs.scenario;
            scenario.expectations.iter().find_map(|e| {
                let actual = runs.metrics(e.policy);
                (!e.holds(actual)).then(|| expect_failure(e, actual))
            })
        }
    }
}

fn expect_failure(e: &Expectation, actual: &Metrics) -> Failure {
    let value = actual.get(e.metric).render();
    Failure {
        property: Property::Expect,
        signature: format!("expect {e}"),
        message: format!(
            "expect failed: {e} (actual {})",
            if value.is_empty() { "never" } else { &value }
        ),
    }
}

/// What a hand-off costs besides the claim's release: three evaluations
/// (the one that makes the holder terminal, for a stop or a scale down is
/// an evaluation; one of the waiting job that may run before the claim is
/// freed; the one that places it), then the pull and the publishes of the
/// allocation that waited.
fn follow_up(scenario: &Scenario) -> Millis {
    let c = &scenario.cluster;
    let publish = scenario
        .plugins
        .iter()
        .map(|p| p.publish_latency)
        .max()
        .unwrap_or(Millis::ZERO);
    let requests = scenario
        .jobs
        .iter()
        .flat_map(|j| j.groups.iter())
        .map(|g| g.volumes.len() as u64)
        .max()
        .unwrap_or(0);
    c.scheduler_latency.saturating_mul(3) + c.pull_delay + publish.saturating_mul(requests)
}

/// The slack `plan-aware-not-slower` allows when plan-aware saw no claim
/// freed: one hand-off of a volume from a live node, which plan-aware waits
/// for where naive does not: the claim's release (node detach, controller
/// detach, claim free), then the follow-up.
pub fn release_slack(scenario: &Scenario) -> Millis {
    let c = &scenario.cluster;
    c.node_detach_latency + c.controller_detach_latency + c.claim_free_latency + follow_up(scenario)
}

/// When plan-aware must be fully placed for `plan-aware-not-slower` to
/// hold: naive's full placement (if naive reached it without a violation),
/// plus one hand-off per claim plan-aware saw freed before its own full
/// placement (at least one). `None` when the property does not apply.
pub struct Deadline {
    pub naive_full: Millis,
    pub hand_offs: u64,
    /// What the hand-offs took: each claim's release, then the follow-up.
    pub allowance: Millis,
    pub deadline: Millis,
}

pub fn not_slower_deadline(runs: &mut Runs) -> Option<Deadline> {
    let naive = runs.metrics(Policy::Naive).clone();
    // A full placement naive reaches only by breaking an access mode is not
    // one plan-aware should match.
    let naive_full = naive.first_full.filter(|_| naive.violations == 0)?;
    let slack = release_slack(runs.scenario);
    let plan_aware = runs.metrics(Policy::PlanAware).first_full;
    if plan_aware.is_some_and(|t| t <= naive_full + slack) {
        return None;
    }
    let until = plan_aware.unwrap_or(runs.scenario.horizon);
    let follow = follow_up(runs.scenario);
    // A hand-off lasts as long as the pinned release took to free the claim
    // from its allocation's terminal status: the client's unpublish on a
    // live node (csi_hook.go Postrun -> CSIVolume.Unpublish), but for a
    // down node's claim the next claim GC pass that finds the volume
    // unmodified for csi_volume_claim_gc_threshold (2.0.5
    // core_sched.go:csiVolumeClaimGC), which naive's scheduler does not
    // wait for (its check ignores the claim). `no-lost-claims` bounds each.
    let (claims, _) = claim_lives(runs.trace(Policy::PlanAware));
    let took: Vec<Millis> = claims
        .iter()
        .filter_map(|c| match (c.terminal, c.released) {
            (Some(t), Some(r)) if r <= until => Some(r - t + follow),
            _ => None,
        })
        .collect();
    let allowance = if took.is_empty() {
        slack
    } else {
        took.iter().fold(Millis::ZERO, |sum, &t| sum + t)
    };
    Some(Deadline {
        naive_full,
        hand_offs: took.len().max(1) as u64,
        allowance,
        deadline: naive_full + allowance,
    })
}

fn not_slower(runs: &mut Runs) -> Option<Failure> {
    let Deadline {
        naive_full,
        hand_offs,
        allowance,
        deadline,
    } = not_slower_deadline(runs)?;
    let plan_aware = runs.metrics(Policy::PlanAware).first_full;
    if plan_aware.is_some_and(|t| t <= deadline) {
        return None;
    }
    // Nor is a full placement that attaches more volumes to a node than its
    // plugin's `max_volumes` (a toy plugin lets naive; plan-aware counts them).
    if over_attached(runs.scenario, runs.trace(Policy::Naive)) {
        return None;
    }
    // naive is Nomad 1.2.6 and plan-aware is 2.0.5 plus the fix: a delay
    // that validate (2.0.5 without the fix, with no violation and no job
    // rejected that naive accepted) shows as well comes from what changed
    // between the releases (class early return, topology, exact server
    // checks and the client's claim retry, claim GC), not from the fix.
    // Validate's registration check (#12337) may reject a job plan-aware
    // takes: then it is not "as slow", it placed less. A rejection both
    // make (a nonexistent node pool, at 2.0.5 and 2.0.5 plus the fix) is
    // the release's, as naive (1.2.6) accepting it is.
    let rejected_by_plan_aware = runs.metrics(Policy::PlanAware).rejected_jobs;
    let validate = runs.metrics(Policy::Validate);
    let same_release_as_slow = validate.rejected_jobs == rejected_by_plan_aware
        && validate.violations == 0
        && validate
            .first_full
            .is_none_or(|v| plan_aware.is_some_and(|p| p <= v));
    if same_release_as_slow {
        return None;
    }
    Some(Failure::new(
        Property::PlanAwareNotSlower,
        format!(
            "naive is fully placed at {naive_full}s without a violation; plan-aware {} (allowed: {deadline}s, {hand_offs} hand-off(s) taking {allowance}s)",
            plan_aware.map_or("never is".to_string(), |t| format!(
                "is at {t}s, {}s later",
                t - naive_full
            )),
        ),
    ))
}

/// Whether the trace ever has more distinct volumes of one plugin claimed
/// on a node than that node's `max_volumes` for the plugin.
fn over_attached(scenario: &Scenario, trace: &[TraceRecord]) -> bool {
    let mut claimed: BTreeMap<(NodeId, VolumeId), u32> = BTreeMap::new();
    for record in trace {
        let (Some(node), Some(volume)) = (record.node, record.volume) else {
            continue;
        };
        match record.kind {
            TraceKind::ClaimGranted => {
                *claimed.entry((node, volume)).or_default() += 1;
                let plugin = scenario.volumes[volume.index()].plugin;
                let limit = scenario.nodes[node.index()]
                    .csi_plugins
                    .iter()
                    .find(|p| p.plugin == plugin)
                    .map_or(0, |p| p.max_volumes);
                let attached = claimed
                    .range((node, VolumeId(0))..=(node, VolumeId(u32::MAX)))
                    .filter(|((_, v), _)| scenario.volumes[v.index()].plugin == plugin)
                    .count();
                if limit > 0 && attached > limit as usize {
                    return true;
                }
            }
            TraceKind::ClaimReleased => {
                if let Some(refs) = claimed.get_mut(&(node, volume)) {
                    *refs -= 1;
                    if *refs == 0 {
                        claimed.remove(&(node, volume));
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// An allocation as the trace names it: group, index and node. A
/// replacement reuses its predecessor's index, even on its node while the
/// predecessor's claim is still held (its unmount may even fail, stranding
/// it, while the replacement's is freed), so rows are matched by the
/// allocation's id as well when they carry it (every run's trace does);
/// without it (a trace read back) claims are matched oldest first.
type AllocKey = (GroupRef, u32, NodeId);

/// The allocation a row is about: its name and, if the row says, its id.
type Owner = (AllocKey, Option<AllocId>);

/// A claim that outlived its allocation by more than the pinned release's
/// release machinery explains.
pub struct LostClaim {
    group: GroupRef,
    index: u32,
    volume: VolumeId,
    terminal_at: Millis,
    deadline: Millis,
    path: Path,
}

impl LostClaim {
    fn describe(&self, scenario: &Scenario) -> String {
        let job = &scenario.jobs[self.group.job.index()];
        format!(
            "the claim of {}.{}[{}] on volume {} is still held at the horizon ({}s), though the allocation was terminal at {}s and the release ({}) frees it by {}s",
            job.name,
            job.groups[self.group.group_index()].name,
            self.index,
            scenario.volumes[self.volume.index()].name,
            scenario.horizon,
            self.terminal_at,
            self.path.describe(),
            self.deadline
        )
    }
}

/// The longest any version of `group` takes to kill its tasks on a stop
/// under `release` (`GroupSpec::stop_time`).
fn slowest_stop(scenario: &Scenario, release: &Release, group: GroupRef) -> Millis {
    let job = &scenario.jobs[group.job.index()];
    (0..=job.versions.len() as u32)
        .map(|v| {
            job.groups_of(v)[group.group_index()]
                .stop_time(release.kills_sidecars_last, release.max_kill_timeout)
        })
        .max()
        .unwrap_or(Millis::ZERO)
}

/// Every claim the trace grants, with when its allocation became terminal
/// and when the claim was freed, and the allocation it belongs to.
fn claim_lives(trace: &[TraceRecord]) -> (Vec<ClaimLife>, Vec<AllocKey>) {
    let mut claims: Vec<ClaimLife> = Vec::new();
    let mut owners: Vec<AllocKey> = Vec::new();
    // Open claims per allocation and volume, oldest first, as indexes into
    // `claims`.
    let mut open: BTreeMap<(Owner, VolumeId), VecDeque<usize>> = BTreeMap::new();
    for record in trace {
        let (Some(group), Some(index), Some(node)) =
            (record.group, record.alloc_index, record.node)
        else {
            continue;
        };
        let key = (group, index, node);
        let owner = (key, record.alloc_id);
        match record.kind {
            TraceKind::ClaimGranted => {
                if let Some(volume) = record.volume {
                    open.entry((owner, volume))
                        .or_default()
                        .push_back(claims.len());
                    owners.push(key);
                    claims.push(ClaimLife {
                        node,
                        volume,
                        granted: record.time,
                        terminal: None,
                        stopped: false,
                        released: None,
                        stranded: false,
                    });
                }
            }
            TraceKind::ClaimReleased => {
                if let Some(volume) = record.volume
                    && let Some(i) = open.get_mut(&(owner, volume)).and_then(VecDeque::pop_front)
                {
                    claims[i].released = Some(record.time);
                }
            }
            TraceKind::NodeDetachFailed | TraceKind::ControllerDetachWaiting => {
                if let Some(volume) = record.volume
                    && let Some(&i) = open.get(&(owner, volume)).and_then(VecDeque::front)
                {
                    claims[i].stranded = true;
                }
            }
            TraceKind::Failed | TraceKind::Complete | TraceKind::Lost | TraceKind::Stopped => {
                for (_, held) in open.range((owner, VolumeId(0))..=(owner, VolumeId(u32::MAX))) {
                    for &i in held {
                        if claims[i].terminal.is_none() {
                            claims[i].terminal = Some(record.time);
                            claims[i].stopped = record.kind == TraceKind::Stopped;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    (claims, owners)
}

/// Replays the trace's claims: granted, then freed (`claim_released`) after
/// the allocation is terminal. Returns the first claim still held at the
/// horizon though the pinned release (`release`) frees it before (see
/// `release.rs`: the client's unpublish, the claim GC, the node GC).
fn lost_claim(scenario: &Scenario, release: &Release, trace: &[TraceRecord]) -> Option<LostClaim> {
    let (claims, owners) = claim_lives(trace);
    let releases = Releases::new(scenario, release, trace, &claims);
    claims.iter().zip(&owners).find_map(|(life, key)| {
        let terminal = life
            .terminal
            .filter(|_| life.released.is_none() && !life.stranded)?;
        // A stopped allocation's client kills its tasks before its CSI
        // hook's Postrun releases the claim (the longest the group's
        // versions take: the later time, so a claim is never lost early).
        let terminal = if life.stopped {
            terminal + slowest_stop(scenario, release, key.0)
        } else {
            terminal
        };
        let (deadline, path) = releases.deadline(life.node, life.volume, terminal)?;
        (deadline <= scenario.horizon).then_some(LostClaim {
            group: key.0,
            index: key.1,
            volume: life.volume,
            terminal_at: terminal,
            deadline,
            path,
        })
    })
}

/// Naive's trace, replayed: a violation by one allocation while another
/// allocation of the same group with another index holds a claim on the
/// volume is the case Nomad 1.3's registration check exists for (a
/// replacement reuses its predecessor's index, so failovers do not count),
/// when the group's request itself names a mode that allows one such
/// allocation (see `registration_sees`).
fn validate_catches(runs: &mut Runs) -> Option<Failure> {
    if runs.metrics(Policy::Naive).violations == 0 {
        return None;
    }
    let scenario = runs.scenario;
    let mut held: BTreeMap<VolumeId, Vec<(GroupRef, u32, NodeId)>> = BTreeMap::new();
    let mut culprits: Vec<(JobId, String)> = Vec::new();
    for record in runs.trace(Policy::Naive) {
        let (Some(group), Some(index), Some(node), Some(volume)) =
            (record.group, record.alloc_index, record.node, record.volume)
        else {
            continue;
        };
        match record.kind {
            TraceKind::ClaimGranted => held.entry(volume).or_default().push((group, index, node)),
            TraceKind::ClaimReleased => {
                let claims = held.entry(volume).or_default();
                if let Some(at) = claims.iter().position(|&c| c == (group, index, node)) {
                    claims.remove(at);
                }
            }
            TraceKind::Violation => {
                let siblings = held
                    .get(&volume)
                    .into_iter()
                    .flatten()
                    .any(|&(g, i, _)| g == group && i != index);
                if !siblings || culprits.iter().any(|(job, _)| *job == group.job) {
                    continue;
                }
                if let Some(mode) = registration_sees(scenario, group, volume) {
                    let job = &scenario.jobs[group.job.index()];
                    culprits.push((
                        group.job,
                        format!(
                            "naive let two allocations of {}.{} share volume {}, requested {mode} (violation at {}s)",
                            job.name,
                            job.groups[group.group_index()].name,
                            scenario.volumes[volume.index()].name,
                            record.time
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if culprits.is_empty() {
        return None;
    }
    let rejected: BTreeSet<JobId> = runs
        .trace(Policy::Validate)
        .iter()
        .filter(|r| r.kind == TraceKind::JobRejected)
        .filter_map(|r| r.job)
        .collect();
    culprits
        .into_iter()
        .find(|(job, _)| !rejected.contains(job))
        .map(|(job, what)| {
            Failure::new(
                Property::ValidateCatches,
                format!(
                    "{what}, and validate did not reject job {} at registration",
                    scenario.jobs[job.index()].name
                ),
            )
        })
}

/// The mode of `group`'s request for `volume` when it is one Nomad 1.3's
/// registration check refuses for count > 1 without `per_alloc`
/// (structs/volumes.go `VolumeRequest.Validate`: single-node-reader-only,
/// single-node-writer, multi-node-single-writer read-write). That check
/// reads the request's modes; the mode in force is set by the volume's
/// first claim (structs/csi.go `setModesFromClaim`), perhaps another job's
/// in a stricter mode, which no registration can foresee.
fn registration_sees(scenario: &Scenario, group: GroupRef, volume: VolumeId) -> Option<AccessMode> {
    let spec = &scenario.volumes[volume.index()];
    scenario.jobs[group.job.index()].groups[group.group_index()]
        .volumes
        .iter()
        .filter(|r| r.source == VolumeSource::Shared(volume))
        .find_map(|r| match r.modes_on(spec).0? {
            mode @ (AccessMode::SingleNodeReaderOnly | AccessMode::SingleNodeWriter) => Some(mode),
            mode @ AccessMode::MultiNodeSingleWriter if r.mode == ClaimMode::Write => Some(mode),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hunt::generate::generate;
    use crate::model::release::{NOMAD_1_2_6, NOMAD_2_0_5};

    fn record(time: u64, kind: TraceKind, volume: Option<u32>) -> TraceRecord {
        let group = GroupRef::new(JobId(0), 0);
        let mut r = TraceRecord::new(Millis(time), kind)
            .alloc(group, 0)
            .node(NodeId(0));
        r.volume = volume.map(VolumeId);
        r
    }

    /// A claim never released after its allocation stopped on a live node is
    /// lost once the client's release latencies have passed before the
    /// horizon, and not before.
    #[test]
    fn lost_claims_are_found_in_a_trace() {
        let mut scenario = generate(0, 0);
        scenario.horizon = Millis(100_000);
        let c = &scenario.cluster;
        let bound = (c.node_detach_latency + c.controller_detach_latency + c.claim_free_latency).0;
        let granted = record(1_000, TraceKind::ClaimGranted, Some(0));
        let released = record(2_000 + bound, TraceKind::ClaimReleased, Some(0));
        let stopped = |t| record(t, TraceKind::Stopped, None);
        let lost = |trace: &[TraceRecord]| lost_claim(&scenario, &NOMAD_2_0_5, trace);

        let freed = [granted.clone(), stopped(2_000), released];
        assert!(lost(&freed).is_none());
        let never = [granted.clone(), stopped(2_000)];
        let found = lost(&never).expect("the claim outlived its allocation");
        assert_eq!(found.terminal_at, Millis(2_000));
        assert_eq!(found.deadline, Millis(2_000 + bound));
        // Still within the release latencies at the horizon: not lost yet.
        let late = [granted.clone(), stopped(100_000 - bound + 1)];
        assert!(lost(&late).is_none());
        // Live at the horizon: held, not lost.
        assert!(lost(&[granted]).is_none());
    }

    /// Issue 28: a replacement placed on its predecessor's node has its
    /// name. The predecessor stopped first, the replacement then claimed the
    /// volume, failed, and its unmount found the plugin gone (stranded)
    /// while the predecessor's claim was freed. Matched by id, nothing is
    /// lost; matched by name oldest first, the release went to the
    /// predecessor and the replacement's claim looked lost. And by id a
    /// claim the name would have let a younger release cover is found.
    #[test]
    fn claims_of_two_allocations_of_one_name_are_told_apart_by_id() {
        let mut scenario = generate(0, 0);
        scenario.horizon = Millis(100_000);
        let lost = |trace: &[TraceRecord]| lost_claim(&scenario, &NOMAD_2_0_5, trace);
        let of = |r: TraceRecord, id: u32| r.id(AllocId(id));
        let stranded = [
            of(record(1_000, TraceKind::ClaimGranted, Some(0)), 1),
            of(record(2_000, TraceKind::Stopped, None), 1),
            of(record(2_000, TraceKind::ClaimGranted, Some(0)), 2),
            of(record(3_000, TraceKind::NodeDetachFailed, Some(0)), 2),
            of(record(3_000, TraceKind::Failed, None), 2),
            of(record(5_000, TraceKind::ClaimReleased, Some(0)), 1),
        ];
        assert!(lost(&stranded).is_none());
        let by_name: Vec<TraceRecord> = stranded
            .iter()
            .cloned()
            .map(|mut r| {
                r.alloc_id = None;
                r
            })
            .collect();
        assert!(lost(&by_name).is_some(), "the name alone misattributes");

        // The replacement's claim freed, the predecessor's never.
        let predecessor_kept = [
            of(record(1_000, TraceKind::ClaimGranted, Some(0)), 1),
            of(record(2_000, TraceKind::Stopped, None), 1),
            of(record(2_000, TraceKind::ClaimGranted, Some(0)), 2),
            of(record(3_000, TraceKind::ClaimReleased, Some(0)), 2),
        ];
        let found = lost(&predecessor_kept).expect("the predecessor's claim is lost");
        assert_eq!(found.terminal_at, Millis(2_000));
    }

    /// A down node's claim waits for the claim GC (2.0.5, skipping a volume
    /// modified within the threshold) or for the node GC, then the claim GC
    /// (1.2.6): held until then, it is not lost; held after, it is.
    #[test]
    fn a_down_nodes_claim_is_lost_only_after_the_pinned_gc() {
        let mut scenario = generate(0, 0);
        let c = &mut scenario.cluster;
        c.node_detach_latency = Millis(1_000);
        c.controller_detach_latency = Millis(2_000);
        c.claim_free_latency = Millis::ZERO;
        c.csi_volume_claim_gc_interval = Millis(60_000);
        c.csi_volume_claim_gc_threshold = Millis(30_000);
        c.node_gc_threshold = Millis(600_000);
        c.node_gc_interval = Millis(120_000);
        let mut down = TraceRecord::new(Millis(50_000), TraceKind::NodeDown).node(NodeId(0));
        down.volume = None;
        let trace = [
            record(10_000, TraceKind::ClaimGranted, Some(0)),
            down,
            record(50_000, TraceKind::Lost, None),
        ];
        let deadline = |version, horizon| {
            let mut s = scenario.clone();
            s.horizon = Millis(horizon);
            (
                lost_claim(&s, version, &trace).map(|l| (l.deadline, l.path)),
                Releases::new(&s, version, &trace, &claim_lives(&trace).0).deadline(
                    NodeId(0),
                    VolumeId(0),
                    Millis(50_000),
                ),
            )
        };
        // 2.0.5: the first pass after the node detach would have run (51 s)
        // is at 60 s; the grant at 10 s is 50 s old by then, past the 30 s
        // threshold: controller detach, freed at 62 s.
        let gc = Some((Millis(62_000), Path::ClaimGc(Millis(60_000))));
        assert_eq!(deadline(&NOMAD_2_0_5, 61_000), (None, gc));
        assert_eq!(deadline(&NOMAD_2_0_5, 62_000), (gc, gc));
        // 1.2.6: the node is gone at the first node GC tick past 50 + 600 s
        // (720 s), the claim GC pass at 720 s frees it at 722 s.
        let node_gc = Some((Millis(722_000), Path::NodeGc(Millis(720_000))));
        assert_eq!(deadline(&NOMAD_1_2_6, 721_000), (None, node_gc));
        assert_eq!(deadline(&NOMAD_1_2_6, 700_000), (None, None));
        assert_eq!(deadline(&NOMAD_1_2_6, 800_000), (node_gc, node_gc));
    }

    /// validate-catches holds validate to what registration can see: the
    /// mode the group's request names, not the mode another job's first
    /// claim set.
    #[test]
    fn registration_sees_the_requests_mode() {
        let mut scenario = crate::scenario::load_str(
            "nodes: [{id: n, csi_plugins: [{id: p}]}]\n\
             plugins: [{id: p, enforces_access_mode: true}]\n\
             volumes: [{id: v, plugin_id: p, capabilities: [{access_mode: single-node-writer, attachment_mode: file-system}, {access_mode: multi-node-multi-writer, attachment_mode: file-system}]}]\n\
             jobs:\n  - id: j\n    groups:\n      - name: g\n        count: 2\n        volumes:\n          v0: {type: csi, source: v, access_mode: multi-node-multi-writer}\n        tasks: [{name: t}]\n",
            "t.yaml",
            "t",
        )
        .unwrap();
        let group = GroupRef::new(JobId(0), 0);
        assert_eq!(registration_sees(&scenario, group, VolumeId(0)), None);
        scenario.jobs[0].groups[0].volumes[0].access_mode = Some(AccessMode::SingleNodeWriter);
        assert_eq!(
            registration_sees(&scenario, group, VolumeId(0)),
            Some(AccessMode::SingleNodeWriter)
        );
    }

    #[test]
    fn property_names_round_trip_and_each_has_a_sentence() {
        for p in Property::ALL {
            assert_eq!(Property::from_name(p.name()), Some(p));
            assert!(p.help().len() > 20, "{}", p.name());
        }
        assert_eq!(Property::from_name("plan-aware-never-violate"), None);
    }
}
