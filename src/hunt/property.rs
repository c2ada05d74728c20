//! The properties a hunt checks. Each looks only at what the public run API
//! returns (metrics, and the trace where a metric is not enough), never at
//! the simulation's internals, so it keeps meaning the same thing while the
//! model grows.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::model::expect::Expectation;
use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord};
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
                "no claim is refused, by the server or an enforcing plugin, for an allocation plan-aware placed"
            }
            Property::NoLostClaims => {
                "under every policy, each claim is freed once its allocation is terminal and the release latencies have passed"
            }
            Property::PlanAwareNotSlower => {
                "when naive reaches full placement without a violation, plan-aware reaches it too, no later than one claim release (node + controller detach + claim free + scheduler latency) after"
            }
            Property::ValidateCatches => {
                "whenever naive lets two allocations of one group share a volume beyond its access mode, validate rejected that job at registration"
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
            let m = runs.metrics(Policy::PlanAware);
            (m.claim_failures > 0).then(|| {
                Failure::new(
                    property,
                    format!("plan-aware: {} claim(s) refused", m.claim_failures),
                )
            })
        }
        Property::NoLostClaims => Policy::ALL.into_iter().find_map(|policy| {
            let scenario = runs.scenario;
            lost_claim(scenario, runs.trace(policy)).map(|lost| {
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

/// The slack `plan-aware-not-slower` allows: one claim's release (plan-aware
/// waits for it where naive does not) and the evaluation that follows.
pub fn release_slack(scenario: &Scenario) -> Millis {
    let c = &scenario.cluster;
    c.node_detach_latency + c.controller_detach_latency + c.claim_free_latency + c.scheduler_latency
}

fn not_slower(runs: &mut Runs) -> Option<Failure> {
    let slack = release_slack(runs.scenario);
    let naive = runs.metrics(Policy::Naive).clone();
    // A full placement naive reaches only by breaking an access mode is not
    // one plan-aware should match.
    let naive_full = naive.first_full.filter(|_| naive.violations == 0)?;
    let plan_aware = runs.metrics(Policy::PlanAware).first_full;
    let late = match plan_aware {
        None => true,
        Some(t) => t > naive_full + slack,
    };
    late.then(|| {
        Failure::new(
            Property::PlanAwareNotSlower,
            format!(
                "naive is fully placed at {naive_full}s without a violation; plan-aware {} (allowed: {}s, one claim release of {slack}s later)",
                plan_aware.map_or("never is".to_string(), |t| format!(
                    "is at {t}s, {}s later",
                    t - naive_full
                )),
                naive_full + slack
            ),
        )
    })
}

/// An allocation as the trace names it: group, index and node. A
/// replacement reuses its predecessor's index, never while both are live on
/// one node, so claims are matched oldest first.
type AllocKey = (GroupRef, u32, NodeId);

/// A claim that outlived its allocation by more than the release latencies.
pub struct LostClaim {
    group: GroupRef,
    index: u32,
    volume: VolumeId,
    terminal_at: Millis,
}

impl LostClaim {
    fn describe(&self, scenario: &Scenario) -> String {
        let job = &scenario.jobs[self.group.job.index()];
        format!(
            "the claim of {}.{}[{}] on volume {} is still held at the horizon ({}s), though the allocation was terminal at {}s",
            job.name,
            job.groups[self.group.group_index()].name,
            self.index,
            scenario.volumes[self.volume.index()].name,
            scenario.horizon,
            self.terminal_at
        )
    }
}

/// Replays the trace's claims: granted, then freed (`claim_released`) after
/// the allocation is terminal. Returns the first claim whose allocation was
/// terminal long enough before the horizon to have been freed, and was not.
fn lost_claim(scenario: &Scenario, trace: &[TraceRecord]) -> Option<LostClaim> {
    let c = &scenario.cluster;
    let bound = c.node_detach_latency + c.controller_detach_latency + c.claim_free_latency;
    // Open claims per allocation and volume, oldest first, each with the
    // time its allocation became terminal (once it has).
    let mut open: BTreeMap<(AllocKey, VolumeId), VecDeque<Option<Millis>>> = BTreeMap::new();
    for record in trace {
        let (Some(group), Some(index), Some(node)) =
            (record.group, record.alloc_index, record.node)
        else {
            continue;
        };
        let key = (group, index, node);
        match record.kind {
            TraceKind::ClaimGranted => {
                if let Some(volume) = record.volume {
                    open.entry((key, volume)).or_default().push_back(None);
                }
            }
            TraceKind::ClaimReleased => {
                if let Some(volume) = record.volume
                    && let Some(claims) = open.get_mut(&(key, volume))
                {
                    claims.pop_front();
                }
            }
            TraceKind::Failed | TraceKind::Complete | TraceKind::Lost | TraceKind::Stopped => {
                for ((_, _), claims) in
                    open.range_mut((key, VolumeId(0))..=(key, VolumeId(u32::MAX)))
                {
                    for terminal in claims.iter_mut().filter(|t| t.is_none()) {
                        *terminal = Some(record.time);
                    }
                }
            }
            _ => {}
        }
    }
    open.into_iter().find_map(|((key, volume), claims)| {
        claims
            .into_iter()
            .flatten()
            .find(|&t| t + bound <= scenario.horizon)
            .map(|terminal_at| LostClaim {
                group: key.0,
                index: key.1,
                volume,
                terminal_at,
            })
    })
}

/// Naive's trace, replayed: a violation by one allocation while another
/// allocation of the same group with another index holds a claim on the
/// volume is the case Nomad 1.3's registration check exists for (a
/// replacement reuses its predecessor's index, so failovers do not count).
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
                if siblings && culprits.iter().all(|(job, _)| *job != group.job) {
                    let job = &scenario.jobs[group.job.index()];
                    let v = &scenario.volumes[volume.index()];
                    culprits.push((
                        group.job,
                        format!(
                            "naive let two allocations of {}.{} share {} volume {} (violation at {}s)",
                            job.name,
                            job.groups[group.group_index()].name,
                            v.access_mode,
                            v.name,
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
