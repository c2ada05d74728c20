//! `plansim explain`: why two policies differ on one scenario and seed.
//! Both runs are traced; their decisions (see [`decisions`]) are compared
//! to find the first divergence, which is told in plain words: what each
//! scheduler saw and decided, what followed in each run (the chain of
//! consequences, with violation windows) and which metric differences it
//! accounts for. Pure: it returns data; the shell prints text or JSON.

pub mod decisions;
mod text;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::model::access::{AccessMode, ClaimCounts, ClaimMode};
use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
use crate::model::metrics::{Metric, MetricValue, Metrics};
use crate::model::policy::Policy;
use crate::model::release::ServerClaimCheck;
use crate::model::scenario::{Scenario, VolumeSource};
use crate::model::time::Millis;
use crate::sim::trace::{SeenClaims, TraceKind, TraceRecord, VolumeSeen};
use crate::sim::{RunOptions, simulate};
use decisions::{Decision, Outcome, Subject};

pub use text::render_text;

/// Steps of a chain of consequences shown before the rest is summarised.
const MAX_STEPS: usize = 14;

/// The whole explanation (the JSON of `--format json`).
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub scenario: String,
    pub seed: u64,
    pub baseline: String,
    pub candidate: String,
    /// `None` when the two runs made the same decisions throughout.
    pub divergence: Option<Divergence>,
    /// Metrics on which the runs differ, in column order.
    pub metric_differences: Vec<MetricDifference>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Simulated seconds, three decimals.
    pub time_s: String,
    #[serde(skip)]
    pub at: Millis,
    /// `registration`, `placement`, `claim` or `deployment`.
    pub kind: &'static str,
    /// The allocation (`job.group[index]`) or, for a registration, the job.
    pub subject: String,
    /// The volume, for a claim.
    pub volume: Option<String>,
    /// The evaluation that made a placement decision, in words.
    pub evaluation: Option<String>,
    pub baseline: SideDecision,
    pub candidate: SideDecision,
}

/// One run's side of the divergence.
#[derive(Clone, Debug, Serialize)]
pub struct SideDecision {
    pub policy: String,
    /// One of the decision outcomes (`placed`, `not_placed`,
    /// `plan_rejected`, `granted`, `refused_alloc_fails`,
    /// `refused_client_retries`, `accepted`, `rejected`, `promoted`,
    /// `succeeded`, `failed`), or `none` when
    /// this run never faced the question.
    pub outcome: &'static str,
    /// What it decided, in words.
    pub decided: String,
    pub node: Option<String>,
    /// What it saw: per volume, the claims it counted and those it ignored.
    pub saw: Vec<String>,
    /// The check it ran and why it passed or refused.
    pub check: Vec<String>,
    /// The reason given, in Nomad's words where Nomad has them.
    pub reason: Option<String>,
    /// What followed in this run for the allocation(s) and volume(s) concerned.
    pub consequences: Vec<Step>,
    /// Steps left out of `consequences` (shown summarised).
    pub more_steps: Option<String>,
    /// Violation windows of the volume(s) concerned, after the divergence.
    pub violation_windows: Vec<Window>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub time_s: String,
    pub event: &'static str,
    pub what: String,
    /// The same step happened again this many times right after.
    pub repeats: u32,
    /// When the last repeat happened.
    pub last_s: Option<String>,
}

/// A stretch of time a volume spent published in breach of its access mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub volume: String,
    #[serde(skip)]
    pub volume_id: VolumeId,
    pub from_s: String,
    pub to_s: String,
    pub seconds: String,
    /// The window was still open at the end of the run.
    pub until_end: bool,
    #[serde(skip)]
    pub from: Millis,
    #[serde(skip)]
    pub to: Millis,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricDifference {
    pub metric: &'static str,
    pub baseline: String,
    pub candidate: String,
    /// How much of the difference the divergence accounts for.
    pub explained_by: String,
}

/// One traced run, as explain reads it.
#[derive(Clone, Copy, Debug)]
pub struct RunView<'a> {
    pub policy: Policy,
    pub trace: &'a [TraceRecord],
    pub metrics: &'a Metrics,
}

/// Runs both policies on `seed` with tracing and explains the difference.
/// `Err` when a run stopped at the event cap.
pub fn explain(
    scenario: &Scenario,
    baseline: Policy,
    candidate: Policy,
    seed: u64,
) -> Result<Explanation, String> {
    let run = |policy| {
        let output = simulate(
            scenario,
            RunOptions {
                trace: true,
                ..RunOptions::new(policy, seed)
            },
        );
        match output.stopped_early {
            Some(why) => Err(format!("{} ({policy}, seed {seed}): {why}", scenario.name)),
            None => Ok((output.metrics, output.trace.unwrap_or_default())),
        }
    };
    let (base_metrics, base_trace) = run(baseline)?;
    let (cand_metrics, cand_trace) = run(candidate)?;
    Ok(explain_runs(
        scenario,
        seed,
        RunView {
            policy: baseline,
            trace: &base_trace,
            metrics: &base_metrics,
        },
        RunView {
            policy: candidate,
            trace: &cand_trace,
            metrics: &cand_metrics,
        },
    ))
}

/// Explains two traced runs of the same scenario and seed.
pub fn explain_runs(
    scenario: &Scenario,
    seed: u64,
    baseline: RunView,
    candidate: RunView,
) -> Explanation {
    let names = Names(scenario);
    let base_decisions = decisions::decisions(baseline.trace);
    let cand_decisions = decisions::decisions(candidate.trace);
    let divergence = decisions::first_divergence(&base_decisions, &cand_decisions);
    let mut followed = Followed::default();
    let divergence = divergence.map(|(b, c)| {
        let first = b.or(c).expect("a divergence has at least one side");
        followed = Followed::of(scenario, first.key.subject);
        let at = first.at.min(c.map_or(first.at, |c| c.at));
        let (kind, subject, volume) = match first.key.subject {
            Subject::Registration(job) => ("registration", names.job(job).to_string(), None),
            Subject::Placement(group, index) => ("placement", names.alloc(group, index), None),
            Subject::Claim(group, index, volume) => (
                "claim",
                names.alloc(group, index),
                Some(names.volume(volume).to_string()),
            ),
            Subject::Deployment(job) => ("deployment", names.job(job).to_string(), None),
        };
        let evaluation = first
            .seen
            .map(|seen| names.evaluation(baseline_or(b, baseline, candidate).trace, seen.eval));
        Divergence {
            time_s: at.to_string(),
            at,
            kind,
            subject,
            volume,
            evaluation,
            baseline: side(scenario, baseline, b, first, at, &followed),
            candidate: side(scenario, candidate, c, first, at, &followed),
        }
    });
    let metric_differences =
        metric_differences(scenario, baseline, candidate, &divergence, &followed);
    Explanation {
        scenario: scenario.name.clone(),
        seed,
        baseline: baseline.policy.to_string(),
        candidate: candidate.policy.to_string(),
        divergence,
        metric_differences,
    }
}

/// The run whose decision is shown first (the baseline's when it has one).
fn baseline_or<'a>(
    b: Option<&Decision>,
    baseline: RunView<'a>,
    candidate: RunView<'a>,
) -> RunView<'a> {
    if b.is_some() { baseline } else { candidate }
}

/// Every window in which a volume was published in breach of its access
/// mode, in order of start.
pub fn violation_windows(scenario: &Scenario, trace: &[TraceRecord]) -> Vec<Window> {
    let mut open: std::collections::BTreeMap<VolumeId, Millis> = Default::default();
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

/// What the chain of consequences follows: the allocation slots and the
/// volumes the divergence concerns.
#[derive(Default)]
struct Followed {
    slots: BTreeSet<(GroupRef, u32)>,
    jobs: BTreeSet<JobId>,
    volumes: BTreeSet<VolumeId>,
}

impl Followed {
    fn of(scenario: &Scenario, subject: Subject) -> Followed {
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

    fn concerns(&self, record: &TraceRecord) -> bool {
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

    fn has_slot(&self, group: GroupRef, index: u32) -> bool {
        self.slots.contains(&(group, index)) || self.jobs.contains(&group.job)
    }
}

/// Names for ids, and the phrases built from them.
struct Names<'s>(&'s Scenario);

impl<'s> Names<'s> {
    fn job(&self, job: JobId) -> &'s str {
        &self.0.jobs[job.index()].name
    }
    fn alloc(&self, group: GroupRef, index: u32) -> String {
        let job = &self.0.jobs[group.job.index()];
        format!(
            "{}.{}[{index}]",
            job.name,
            job.groups[group.group_index()].name
        )
    }
    fn node(&self, node: NodeId) -> &'s str {
        &self.0.nodes[node.index()].name
    }
    fn volume(&self, volume: VolumeId) -> &'s str {
        &self.0.volumes[volume.index()].name
    }
    fn evaluation(&self, trace: &[TraceRecord], eval: u64) -> String {
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
    fn holders(
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
    fn seen_claims(&self, label: &str, claims: &SeenClaims, current: (GroupRef, u32)) -> String {
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
fn counts(c: ClaimCounts) -> String {
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
fn rule(mode: AccessMode) -> &'static str {
    match mode {
        AccessMode::SingleNodeReaderOnly => "allows at most 1 reader and no writer",
        AccessMode::SingleNodeWriter => "allows at most 1 claim, reader or writer",
        AccessMode::MultiNodeReaderOnly => "allows any number of readers and no writer",
        AccessMode::MultiNodeSingleWriter => "allows any number of readers and at most 1 writer",
        AccessMode::MultiNodeMultiWriter => "allows any number of readers and writers",
    }
}

/// One run's side of the divergence: its decision, what it saw, and what followed.
fn side(
    scenario: &Scenario,
    run: RunView,
    decision: Option<&Decision>,
    first: &Decision,
    at: Millis,
    followed: &Followed,
) -> SideDecision {
    let names = Names(scenario);
    let policy = run.policy;
    let mut out = SideDecision {
        policy: policy.to_string(),
        outcome: decision.map_or("none", |d| d.outcome.name()),
        decided: String::new(),
        node: None,
        saw: Vec::new(),
        check: Vec::new(),
        reason: None,
        consequences: Vec::new(),
        more_steps: None,
        violation_windows: Vec::new(),
    };
    let Some(decision) = decision else {
        out.decided = match first.key.subject {
            Subject::Registration(job) => format!("never registered job {}", names.job(job)),
            Subject::Placement(g, i) => format!("never had to place {}", names.alloc(g, i)),
            Subject::Claim(g, i, v) => {
                format!("never had {} claim {}", names.alloc(g, i), names.volume(v))
            }
            Subject::Deployment(job) => format!(
                "made no further deployment decision for job {}: its deployment was still running, or none was started",
                names.job(job)
            ),
        };
        consequences(scenario, run, None, at, followed, &mut out);
        return out;
    };
    let record = &run.trace[decision.row];
    let detail = (!record.detail.is_empty()).then(|| record.detail.clone());
    match (decision.key.subject, decision.outcome) {
        (Subject::Registration(job), outcome) => {
            let job = names.job(job);
            if outcome == Outcome::Accepted {
                out.decided = format!("accepted job {job}");
                out.check.push(if policy.behaviour().validates_registration {
                    "Registration checks each group's volumes (Nomad 1.3+): none is shared by count > 1 where its access mode allows one claim.".to_string()
                } else {
                    "Registration does not look at volumes (Nomad before 1.3, and the plan-aware fix, which checks at scheduling instead).".to_string()
                });
            } else {
                out.decided = format!("rejected job {job} at registration");
                out.check.push("Registration checks each group's volumes (Nomad 1.3+): a group with count > 1 may not share a volume whose access mode allows one claim.".to_string());
                out.reason = detail;
            }
        }
        (Subject::Placement(g, i), outcome) => {
            let alloc = names.alloc(g, i);
            out.decided = match outcome {
                Outcome::Placed(node) if record.detail.starts_with("canary") => {
                    out.node = Some(names.node(node).to_string());
                    format!(
                        "placed {alloc} on {}, a canary beside the allocation it will replace",
                        names.node(node)
                    )
                }
                Outcome::Placed(node) => {
                    out.node = Some(names.node(node).to_string());
                    format!("placed {alloc} on {}", names.node(node))
                }
                Outcome::PlanRejected(node) => {
                    out.node = Some(names.node(node).to_string());
                    out.reason = detail;
                    format!(
                        "picked {} for {alloc}, but the plan applier refused it at {} s",
                        names.node(node),
                        record.time
                    )
                }
                _ => {
                    out.reason = detail;
                    format!("did not place {alloc}: no node was feasible")
                }
            };
            if let Some(seen) = decision.seen {
                for volume in &seen.volumes {
                    let (saw, check) = scheduler_view(scenario, policy, volume, (g, i));
                    out.saw.push(saw);
                    out.check.push(check);
                }
                if seen.volumes.is_empty() {
                    out.saw.push(format!("{alloc} mounts no volume."));
                }
                if let Outcome::PlanRejected(_) = outcome {
                    out.check.push(format!(
                        "The plan applier re-checks each node's part of a plan against the state when the plan arrives ({} s), which plans committed or events since the evaluation began may have changed, and refused this one.",
                        record.time
                    ));
                }
            }
        }
        (Subject::Claim(g, i, v), outcome) => {
            let alloc = names.alloc(g, i);
            let volume = names.volume(v);
            let mode = scenario.jobs[g.job.index()].groups[g.group_index()]
                .volumes
                .iter()
                .map(|r| r.mode)
                .max()
                .unwrap_or(ClaimMode::Read);
            let mode = if record.kind == TraceKind::ClaimGranted && record.detail == "write" {
                ClaimMode::Write
            } else {
                mode
            };
            let held = decisions::claims_before(run.trace, decision.row, v);
            let total = u32::try_from(held.len()).unwrap_or(u32::MAX);
            out.saw.push(if held.is_empty() {
                format!("The server held no claim on {volume} when {alloc} asked for a {} claim.", mode.name())
            } else {
                format!(
                    "The server held {} claim(s) on {volume} when {alloc} asked for a {} claim: {}.",
                    held.len(),
                    mode.name(),
                    names.holders(&held[..held.len().min(8)], total, (g, i))
                )
            });
            let access = scenario.volumes[v.index()].nominal_access_mode();
            out.check.push(if policy.behaviour().release.server_claim_check == ServerClaimCheck::FreeClaims {
                format!("The server checks the access mode exactly against the claims it holds: {access} {}.", rule(access))
            } else {
                "Nomad 1.2's server refuses a write claim only while another job holds a writer claim; it never counts readers.".to_string()
            });
            out.decided = match outcome {
                Outcome::Granted => format!("granted {alloc} a {} claim on {volume}", mode.name()),
                Outcome::RefusedAllocFails => {
                    out.reason = detail;
                    format!(
                        "refused {alloc}'s claim on {volume}, and the client failed the allocation"
                    )
                }
                _ => {
                    out.reason = detail;
                    let next = run.trace[decision.row + 1..]
                        .iter()
                        .find(|r| {
                            matches!(r.kind, TraceKind::ClaimGranted | TraceKind::ClaimRejected)
                                && r.group == Some(g)
                                && r.alloc_index == Some(i)
                                && r.volume == Some(v)
                        })
                        .map(|r| format!(" (next attempt at {} s)", r.time))
                        .unwrap_or_default();
                    format!(
                        "refused {alloc}'s claim on {volume}; the client keeps the allocation pending and retries{next}"
                    )
                }
            };
        }
        (Subject::Deployment(job), outcome) => {
            let job = names.job(job);
            out.reason = detail;
            out.check.push("The deployment watcher promotes a deployment once every group's canaries are healthy (auto_promote) or the operator promotes it; it succeeds once every group has its count of the new version healthy, and fails at its progress deadline without them, or at the first unhealthy allocation without a deadline.".to_string());
            out.decided = match outcome {
                Outcome::Promoted => format!("promoted the canaries of job {job}"),
                Outcome::Succeeded => format!("completed the deployment of job {job}"),
                _ => format!("failed the deployment of job {job}"),
            };
        }
    }
    consequences(scenario, run, Some(decision.row), at, followed, &mut out);
    out
}

/// What a scheduler saw of one volume, and what its check made of it.
fn scheduler_view(
    scenario: &Scenario,
    policy: Policy,
    seen: &VolumeSeen,
    current: (GroupRef, u32),
) -> (String, String) {
    let names = Names(scenario);
    let volume = names.volume(seen.volume);
    let access = scenario.volumes[seen.volume.index()].nominal_access_mode();
    let saw = format!(
        "{volume} ({access}, asked for {}): {}; {}; {}.",
        seen.request.name(),
        names.seen_claims("claims held by the server", &seen.claimed, current),
        names.seen_claims(
            "allocations placed but not yet claimed",
            &seen.unclaimed,
            current
        ),
        names.seen_claims("earlier placements in this plan", &seen.in_plan, current),
    );
    let all = seen
        .claimed
        .counts
        .plus(seen.unclaimed.counts)
        .plus(seen.in_plan.counts);
    let ignored = ClaimCounts {
        readers: all.readers - seen.counted.readers.min(all.readers),
        writers: all.writers - seen.counted.writers.min(all.writers),
    };
    let mut after = seen.counted;
    after.add(seen.request);
    let passes = crate::model::access::admit(access, seen.counted, seen.request).is_ok();
    let check = if policy.behaviour().plan_aware_claims {
        format!(
            "It counts every claim held, every allocation placed but not yet claimed and every earlier placement in the plan: {}; with this {} claim that makes {}, and {access} {}, so the check {}.",
            counts(seen.counted),
            seen.request.name(),
            counts(after),
            rule(access),
            if passes { "passes" } else { "refuses" }
        )
    } else {
        let ignored_text = if ignored.total() == 0 {
            String::new()
        } else {
            format!("; it ignored {}", counts(ignored))
        };
        format!(
            "Nomad's check before the plan is written counts only other jobs' writer claims, and only for a write on a single-writer volume; reader claims, its own job's writers, unclaimed allocations and the plan's earlier placements are not counted. It counted {}{ignored_text}, so the check {}.",
            counts(seen.counted),
            if !access.allows_writers() && seen.request == ClaimMode::Write {
                "refuses (the volume is read-only)"
            } else if passes {
                "passes"
            } else {
                "refuses"
            }
        )
    };
    (saw, check)
}

/// The chain of consequences in one run after the divergence.
fn consequences(
    scenario: &Scenario,
    run: RunView,
    decision_row: Option<usize>,
    at: Millis,
    followed: &Followed,
    out: &mut SideDecision,
) {
    let names = Names(scenario);
    let start =
        decision_row.map_or_else(|| run.trace.partition_point(|r| r.time < at), |row| row + 1);
    let mut steps: Vec<Step> = Vec::new();
    let mut skipped: std::collections::BTreeMap<&'static str, u32> = Default::default();
    let mut last_time = None;
    // Allocation generations per slot, and the generation holding each
    // claim not yet freed (oldest first): a claim freed that belongs to an
    // older generation was the replaced allocation's.
    let mut generation: std::collections::BTreeMap<(GroupRef, u32), u32> = Default::default();
    let mut holders: std::collections::BTreeMap<
        (GroupRef, u32, VolumeId),
        std::collections::VecDeque<u32>,
    > = Default::default();
    for (row, record) in run.trace.iter().enumerate() {
        let slot = record.group.zip(record.alloc_index);
        let replaced = match (record.kind, slot, record.volume) {
            (TraceKind::Placed, Some(slot), _) => {
                *generation.entry(slot).or_default() += 1;
                false
            }
            (TraceKind::ClaimGranted, Some((g, i)), Some(v)) => {
                let current = generation.get(&(g, i)).copied().unwrap_or(0);
                holders.entry((g, i, v)).or_default().push_back(current);
                false
            }
            (TraceKind::ClaimReleased, Some((g, i)), Some(v)) => {
                let current = generation.get(&(g, i)).copied().unwrap_or(0);
                let held_by = holders.get_mut(&(g, i, v)).and_then(|q| q.pop_front());
                held_by.is_some_and(|older| older < current)
            }
            _ => false,
        };
        if row < start || !followed.concerns(record) {
            continue;
        }
        let alloc = record
            .group
            .zip(record.alloc_index)
            .map(|(g, i)| names.alloc(g, i))
            .unwrap_or_default();
        let volume = record.volume.map_or("", |v| names.volume(v));
        let node = record.node.map_or("", |n| names.node(n));
        let what = match record.kind {
            TraceKind::Placed if record.detail.starts_with("reschedule") => {
                format!("{alloc} rescheduled: placed again on {node}")
            }
            TraceKind::Placed if record.detail.starts_with("replaces") => {
                format!("{alloc} replacement placed on {node}")
            }
            TraceKind::Placed if record.detail.starts_with("canary") => {
                format!("{alloc} placed on {node} ({})", record.detail)
            }
            TraceKind::Placed => format!("{alloc} placed on {node}"),
            TraceKind::DeploymentStarted
            | TraceKind::DeploymentPromoted
            | TraceKind::DeploymentSucceeded
            | TraceKind::DeploymentFailed
            | TraceKind::DeploymentReverted
            | TraceKind::PromoteDeployment => {
                format!("{}: {}", record.kind.name(), record.detail)
            }
            TraceKind::Infeasible => format!("{alloc} not placed: {}", record.detail),
            TraceKind::PlanRejected => {
                let refused: Vec<String> = record
                    .seen
                    .iter()
                    .map(|s| names.alloc(s.group, s.index))
                    .collect();
                format!(
                    "plan applier refused {} on {node}: {}",
                    refused.join(", "),
                    record.detail
                )
            }
            TraceKind::ClaimGranted => {
                format!("{alloc} granted a {} claim on {volume}", record.detail)
            }
            TraceKind::ClaimRejected => {
                format!("{alloc}'s claim on {volume} refused: {}", record.detail)
            }
            TraceKind::Violation => format!("{volume} in violation: {}", record.detail),
            TraceKind::ViolationEnded => {
                format!("{volume} no longer in violation ({})", record.detail)
            }
            TraceKind::Running => format!("{alloc} running on {node}"),
            TraceKind::Failed
                if steps
                    .last()
                    .is_some_and(|s| s.what.ends_with(&record.detail)) =>
            {
                format!("{alloc} failed (for that reason)")
            }
            TraceKind::ClaimReleased if replaced => {
                format!(
                    "{alloc}'s claim on {volume} freed (the claim of the allocation it replaced)"
                )
            }
            TraceKind::ClaimReleased => format!("{alloc}'s claim on {volume} freed"),
            TraceKind::JobSubmitted => "job registered".to_string(),
            TraceKind::JobRejected => format!("job rejected: {}", record.detail),
            kind if !alloc.is_empty() => {
                format!("{alloc} {}: {}", kind.name(), record.detail)
            }
            kind => format!("{} {node}", kind.name()),
        };
        last_time = Some(record.time);
        // A step repeated (a retried claim, a placement retried while
        // blocked) reads as one step with a count.
        if let Some(prev) = steps.last_mut()
            && prev.event == record.kind.name()
            && prev.what == what
        {
            prev.repeats += 1;
            prev.last_s = Some(record.time.to_string());
            continue;
        }
        if steps.len() >= MAX_STEPS {
            *skipped.entry(record.kind.name()).or_default() += 1;
            continue;
        }
        steps.push(Step {
            time_s: record.time.to_string(),
            event: record.kind.name(),
            what,
            repeats: 0,
            last_s: None,
        });
    }
    if !skipped.is_empty() {
        let total: u32 = skipped.values().sum();
        let kinds: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.more_steps = Some(format!(
            "{total} more step(s) until {} s: {}",
            last_time.unwrap_or(at),
            kinds.join(", ")
        ));
    }
    out.consequences = steps;
    out.violation_windows = violation_windows(scenario, run.trace)
        .into_iter()
        .filter(|w| followed.volumes.contains(&w.volume_id) && w.to > at)
        .collect();
}

/// The metrics on which the runs differ, each with how much of the
/// difference comes from the allocation(s) and volume(s) concerned.
fn metric_differences(
    scenario: &Scenario,
    baseline: RunView,
    candidate: RunView,
    divergence: &Option<Divergence>,
    followed: &Followed,
) -> Vec<MetricDifference> {
    let share = |run: RunView, metric: Metric| -> Option<String> {
        let rows = || run.trace.iter().filter(|r| followed.concerns(r));
        let kind = match metric {
            Metric::Placed => TraceKind::Placed,
            Metric::Infeasible => TraceKind::Infeasible,
            Metric::ClaimFailures => TraceKind::ClaimRejected,
            Metric::ClientFailures => TraceKind::Failed,
            Metric::Violations => TraceKind::Violation,
            Metric::RejectedJobs => TraceKind::JobRejected,
            Metric::PlanRejections => TraceKind::PlanRejected,
            Metric::Reschedules => {
                return Some(
                    rows()
                        .filter(|r| {
                            r.kind == TraceKind::Placed && r.detail.starts_with("reschedule")
                        })
                        .count()
                        .to_string(),
                );
            }
            Metric::Running => {
                // Slots whose newest row is `running`: running at the end.
                let mut last: std::collections::BTreeMap<(GroupRef, u32), TraceKind> =
                    Default::default();
                for r in rows() {
                    if let (Some(slot), true) = (
                        r.group.zip(r.alloc_index),
                        matches!(
                            r.kind,
                            TraceKind::Running
                                | TraceKind::Failed
                                | TraceKind::Complete
                                | TraceKind::Lost
                                | TraceKind::Stopped
                        ),
                    ) {
                        last.insert(slot, r.kind);
                    }
                }
                return Some(
                    last.values()
                        .filter(|k| **k == TraceKind::Running)
                        .count()
                        .to_string(),
                );
            }
            Metric::ViolationSeconds => {
                let total = violation_windows(scenario, run.trace)
                    .iter()
                    .filter(|w| followed.volumes.contains(&w.volume_id))
                    .fold(Millis::ZERO, |sum, w| sum + (w.to - w.from));
                return Some(total.to_string());
            }
            _ => return None,
        };
        Some(rows().filter(|r| r.kind == kind).count().to_string())
    };
    Metric::ALL
        .iter()
        .filter_map(|&metric| {
            let (b, c) = (baseline.metrics.get(metric), candidate.metrics.get(metric));
            if b == c {
                return None;
            }
            let render = |v: MetricValue| match v {
                MetricValue::Never => "-".to_string(),
                v => v.render(),
            };
            let explained_by = match (divergence, share(baseline, metric), share(candidate, metric)) {
                (Some(d), Some(sb), Some(sc)) => format!(
                    "{sb} of {}'s and {sc} of {}'s concern {}",
                    baseline.policy, candidate.policy, d.subject
                ),
                (Some(_), _, _) => match metric {
                    Metric::Evals | Metric::Plans | Metric::Events => {
                        "follows from the decisions that differ: more or fewer evaluations, plans and events".to_string()
                    }
                    Metric::Desired => "a rejected or stopped job desires nothing".to_string(),
                    _ => "follows from the decisions that differ".to_string(),
                },
                (None, _, _) => "the runs made the same decisions; this is timing or bookkeeping".to_string(),
            };
            Some(MetricDifference {
                metric: metric.name(),
                baseline: render(b),
                candidate: render(c),
                explained_by,
            })
        })
        .collect()
}
