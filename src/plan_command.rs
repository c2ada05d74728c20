//! `plansim plan` as a library call: the operator's "what happens if I
//! submit this?". Each policy's answer is what `nomad job plan` prints for
//! the job's first evaluation (command/job_plan.go at v2.0.5:
//! `formatJobDiff`, `formatTaskGroupDiff`, `formatDryRun`), then what only
//! a simulation can add: what the allocations went through over the
//! horizon, and the verdict.

use crate::model::ids::JobId;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::report::table::Verdict;
use crate::run::{RunResult, run_one};
use crate::sim::FirstPlan;

/// One policy's answer for the planned jobs.
pub struct PolicyPlan {
    pub policy: Policy,
    pub result: RunResult,
}

/// Every policy's answer, in policy order.
pub struct PlanOutcome {
    pub planned: Vec<JobId>,
    pub answers: Vec<PolicyPlan>,
}

pub fn plan(scenario: &Scenario, planned: &[JobId], policies: &[Policy], seed: u64) -> PlanOutcome {
    let answers = policies
        .iter()
        .map(|&policy| PolicyPlan {
            policy,
            result: run_one(scenario, policy, seed, false),
        })
        .collect();
    PlanOutcome {
        planned: planned.to_vec(),
        answers,
    }
}

impl PlanOutcome {
    /// `nomad job plan`'s exit code: 1 when some policy's dry run creates
    /// or destroys allocations (`getExitCode`: any Place, Stop, Migrate,
    /// DestructiveUpdate or Canary), else 0.
    pub fn exit_code(&self) -> u8 {
        let changes = self.answers.iter().any(|a| {
            self.planned
                .iter()
                .any(|&job| first_plan(&a.result, job).is_some_and(|p| places(p) > 0))
        });
        u8::from(changes)
    }

    pub fn text(&self, scenario: &Scenario) -> String {
        let mut out = String::new();
        for answer in &self.answers {
            let release = answer.policy.behaviour().release.version;
            out.push_str(&format!("== {} (Nomad {release})\n", answer.policy));
            for &job in &self.planned {
                out.push_str(&job_text(scenario, &answer.result, job));
            }
            out.push_str(&simulated_text(scenario, answer));
            out.push('\n');
        }
        out
    }

    pub fn json(&self, scenario: &Scenario) -> String {
        let answers: Vec<serde_json::Value> = self
            .answers
            .iter()
            .map(|answer| {
                let jobs: Vec<serde_json::Value> = self
                    .planned
                    .iter()
                    .map(|&job| job_json(scenario, &answer.result, job))
                    .collect();
                let m = &answer.result.row.metrics;
                serde_json::json!({
                    "policy": answer.policy.name(),
                    "nomad": answer.policy.behaviour().release.version,
                    "jobs": jobs,
                    "simulated": {
                        "horizon_s": scenario.horizon.0 as f64 / 1000.0,
                        "placed": m.placed,
                        "running": m.running,
                        "infeasible": m.infeasible,
                        "claim_failures": m.claim_failures,
                        "client_failures": m.client_failures,
                        "reschedules": m.reschedules,
                        "violations": m.violations,
                        "violation_s": m.violation_time.0 as f64 / 1000.0,
                        "first_full_s": m.first_full.map(|t| t.0 as f64 / 1000.0),
                    },
                    "verdict": Verdict::of(answer.policy, std::slice::from_ref(&answer.result)).text(),
                })
            })
            .collect();
        let document = serde_json::json!({
            "scenario": scenario.name,
            "exit_code": self.exit_code(),
            "answers": answers,
        });
        serde_json::to_string_pretty(&document).expect("json serializes") + "\n"
    }
}

fn first_plan(result: &RunResult, job: JobId) -> Option<&FirstPlan> {
    result.first_plans.iter().find(|p| p.job == job)
}

/// Allocations the first plan wants to create: placed or not (Nomad's
/// DesiredTGUpdates `Place`, which the `(N create)` count shows).
fn places(plan: &FirstPlan) -> u32 {
    (0..plan.created.len()).map(|g| wanted(plan, g)).sum()
}

/// The same for group `g`: what its plan placed, and what it could not.
fn wanted(plan: &FirstPlan, g: usize) -> u32 {
    plan.created[g] + failure_of(plan, g).map_or(0, |f| f.unplaced)
}

/// Group `g`'s placement failure in the first plan, if it had one.
fn failure_of(plan: &FirstPlan, g: usize) -> Option<&crate::sim::feasibility::PlacementFailure> {
    plan.failures.iter().find(|f| f.group.group_index() == g)
}

fn rejection(result: &RunResult, job: JobId) -> Option<&str> {
    result
        .rejections
        .iter()
        .find(|(j, _)| *j == job)
        .map(|(_, e)| e.as_str())
}

/// The job's diff and dry run, as `nomad job plan` prints them for a job
/// the cluster does not have (every field "Added"; colours left out).
fn job_text(scenario: &Scenario, result: &RunResult, job: JobId) -> String {
    let spec = &scenario.jobs[job.index()];
    let name = crate::names::one_line(&spec.name);
    if let Some(error) = rejection(result, job) {
        // The plan endpoint validates the job as registration does.
        return format!(
            "Error during plan: job {:?}: {}\n\n",
            name,
            crate::names::one_line(error)
        );
    }
    let mut out = format!("+ Job: {name:?}\n");
    let plan = first_plan(result, job);
    for (g, group) in spec.groups.iter().enumerate() {
        let place = plan.map_or(0, |p| wanted(p, g));
        let group_name = crate::names::one_line(&group.name);
        if place > 0 {
            out.push_str(&format!("+ Task Group: {group_name:?} ({place} create)\n"));
        } else {
            out.push_str(&format!("+ Task Group: {group_name:?}\n"));
        }
    }
    out.push_str("\nScheduler dry-run:\n");
    match plan {
        None => out.push_str(
            "- No evaluation within the horizon (a periodic or parameterized job places nothing until it is launched or dispatched).\n",
        ),
        Some(plan) if plan.failures.is_empty() => {
            out.push_str("- All tasks successfully allocated.\n");
        }
        Some(plan) => {
            out.push_str(if spec.is_system() {
                "- WARNING: Failed to place allocations on all nodes.\n"
            } else {
                "- WARNING: Failed to place all allocations.\n"
            });
            for failure in &plan.failures {
                let group = &spec.groups[failure.group.group_index()];
                let noun = if failure.unplaced > 1 {
                    "allocations"
                } else {
                    "allocation"
                };
                out.push_str(&format!(
                    "  Task Group {:?} (failed to place {} {noun}):\n",
                    crate::names::one_line(&group.name),
                    failure.unplaced
                ));
                for line in failure.metric.lines() {
                    out.push_str(&format!("    {}\n", crate::names::one_line(&line)));
                }
            }
        }
    }
    out.push('\n');
    out
}

fn job_json(scenario: &Scenario, result: &RunResult, job: JobId) -> serde_json::Value {
    let spec = &scenario.jobs[job.index()];
    let plan = first_plan(result, job);
    let groups: Vec<serde_json::Value> = spec
        .groups
        .iter()
        .enumerate()
        .map(|(g, group)| {
            let failure = plan.and_then(|p| failure_of(p, g));
            serde_json::json!({
                "name": group.name,
                "create": plan.map_or(0, |p| wanted(p, g)),
                "placed": plan.map_or(0, |p| p.created[g]),
                "failed_to_place": failure.map_or(0, |f| f.unplaced),
                "failure": failure.map(|f| f.metric.lines()),
            })
        })
        .collect();
    serde_json::json!({
        "job": spec.name,
        "registration_error": rejection(result, job),
        "evaluated": plan.is_some(),
        "groups": groups,
    })
}

/// What the simulation adds over the horizon, and the verdict line.
fn simulated_text(scenario: &Scenario, answer: &PolicyPlan) -> String {
    let m = &answer.result.row.metrics;
    let full = m
        .first_full
        .map_or("never".to_string(), |t| format!("at {t} s"));
    let mut out = format!(
        "Simulated over {} s (what `nomad job plan` cannot show):\n",
        scenario.horizon
    );
    out.push_str(&format!(
        "  placed {}, running at the end {}, unplaced {}, claim failures {}, client failures {}, reschedules {}, violations {} ({} s), everything running {full}\n",
        m.placed,
        m.running,
        m.infeasible,
        m.claim_failures,
        m.client_failures,
        m.reschedules,
        m.violations,
        m.violation_time
    ));
    let verdict = Verdict::of(answer.policy, std::slice::from_ref(&answer.result));
    out.push_str(&format!(
        "  verdict: {} {}\n",
        answer.policy,
        verdict.text()
    ));
    out
}
