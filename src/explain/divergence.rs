//! Explaining two runs: run both policies traced, find their first
//! divergent decision (decisions.rs), tell each side (side.rs) and account
//! for the metric differences.

use std::collections::BTreeMap;

use super::decisions::{self, Decision, Subject};
use super::explanation::{Divergence, Explanation, MetricDifference, RunView};
use super::followed::Followed;
use super::names::Names;
use super::side::side;
use super::windows::violation_windows;
use crate::model::ids::GroupRef;
use crate::model::metrics::{Metric, MetricValue};
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::TraceKind;
use crate::sim::{RunOptions, simulate};

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
                let mut last: BTreeMap<(GroupRef, u32), TraceKind> = Default::default();
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
