//! One run's side of the divergence: what its scheduler (or server, or
//! deployment watcher) decided, what it saw and the check it ran.

use super::consequences::consequences;
use super::decisions::{self, Decision, Outcome, Subject};
use super::explanation::{RunView, SideDecision};
use super::followed::Followed;
use super::names::{Names, counts, rule};
use crate::model::access::{ClaimCounts, ClaimMode};
use crate::model::ids::{GroupRef, JobId, VolumeId};
use crate::model::policy::Policy;
use crate::model::release::ServerClaimCheck;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord, VolumeSeen};

/// One run's side of the divergence: its decision, what it saw, and what followed.
pub(super) fn side(
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
        out.decided = never_decided(&names, first.key.subject);
        consequences(scenario, run, None, at, followed, &mut out);
        return out;
    };
    let record = &run.trace[decision.row];
    let asked = Asked {
        scenario,
        names,
        run,
        decision,
        record,
        detail: (!record.detail.is_empty()).then(|| record.detail.clone()),
    };
    match (decision.key.subject, decision.outcome) {
        (Subject::Registration(job), outcome) => registration(&mut out, &asked, job, outcome),
        (Subject::Placement(g, i), outcome) => placement(&mut out, &asked, (g, i), outcome),
        (Subject::Claim(g, i, v), outcome) => claim(&mut out, &asked, (g, i), v, outcome),
        (Subject::Deployment(job), outcome) => deployment(&mut out, &asked, job, outcome),
    }
    consequences(scenario, run, Some(decision.row), at, followed, &mut out);
    out
}

/// What a run that never faced the question did not do.
fn never_decided(names: &Names, subject: Subject) -> String {
    match subject {
        Subject::Registration(job) => format!("never registered job {}", names.job(job)),
        Subject::Placement(g, i) => format!("never had to place {}", names.alloc(g, i)),
        Subject::Claim(g, i, v) => {
            format!("never had {} claim {}", names.alloc(g, i), names.volume(v))
        }
        Subject::Deployment(job) => format!(
            "made no further deployment decision for job {}: its deployment was still running, or none was started",
            names.job(job)
        ),
    }
}

/// The decision one side made, and the trace row that records it.
struct Asked<'a> {
    scenario: &'a Scenario,
    names: Names<'a>,
    run: RunView<'a>,
    decision: &'a Decision<'a>,
    record: &'a TraceRecord,
    /// The row's detail, when it has one.
    detail: Option<String>,
}

/// A job's registration, accepted or rejected.
fn registration(out: &mut SideDecision, asked: &Asked, job: JobId, outcome: Outcome) {
    let (names, policy, detail) = (&asked.names, asked.run.policy, asked.detail.clone());
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

/// A placement: placed (maybe as a canary), refused by the plan applier,
/// or not placed.
fn placement(out: &mut SideDecision, asked: &Asked, (g, i): (GroupRef, u32), outcome: Outcome) {
    let (scenario, names, policy) = (asked.scenario, &asked.names, asked.run.policy);
    let (decision, record, detail) = (asked.decision, asked.record, asked.detail.clone());
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

/// A claim on a volume: granted, or refused (failing the allocation, or
/// retried by the client).
fn claim(
    out: &mut SideDecision,
    asked: &Asked,
    (g, i): (GroupRef, u32),
    v: VolumeId,
    outcome: Outcome,
) {
    let (scenario, names, run) = (asked.scenario, &asked.names, asked.run);
    let (policy, decision, record, detail) = (
        run.policy,
        asked.decision,
        asked.record,
        asked.detail.clone(),
    );
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
        format!(
            "The server held no claim on {volume} when {alloc} asked for a {} claim.",
            mode.name()
        )
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
            format!("refused {alloc}'s claim on {volume}, and the client failed the allocation")
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

/// A deployment promoted, completed or failed.
fn deployment(out: &mut SideDecision, asked: &Asked, job: JobId, outcome: Outcome) {
    let (names, detail) = (&asked.names, asked.detail.clone());
    let job = names.job(job);
    out.reason = detail;
    out.check.push("The deployment watcher promotes a deployment once every group's canaries are healthy (auto_promote) or the operator promotes it; it succeeds once every group has its count of the new version healthy, and fails at its progress deadline without them, or at the first unhealthy allocation without a deadline.".to_string());
    out.decided = match outcome {
        Outcome::Promoted => format!("promoted the canaries of job {job}"),
        Outcome::Succeeded => format!("completed the deployment of job {job}"),
        _ => format!("failed the deployment of job {job}"),
    };
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
