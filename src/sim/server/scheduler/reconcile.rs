use crate::model::ids::{AllocId, GroupRef, JobId};
use crate::model::time::Millis;
use crate::sim::server::reschedule::{RESCHEDULE_WINDOW, followup_windows, reschedule_eligible};
use crate::sim::server::scheduler::plan::{PlacementKind, Want};
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::AllocState;
use std::collections::BTreeSet;
impl Simulation<'_> {
    /// Decides, slot by slot, what must be stopped and what must be placed.
    pub(crate) fn reconcile(&mut self, job: JobId, stops: &mut Vec<AllocId>) -> Vec<Want> {
        self.resolve_reconnects(job, stops);
        let now = self.now();
        let spec = &self.scenario.jobs[job.index()];
        let mut wants = Vec::new();
        let mut followups = Vec::new();
        let mut stopping_later = Vec::new();
        for (g, group_spec) in spec.groups.iter().enumerate() {
            let group = GroupRef::new(job, g);
            let count = self.jobs[job.index()].counts[g];
            let slots: Vec<(u32, AllocId)> = self.jobs[job.index()].latest[g].iter().collect();
            // Scale-down: Nomad stops the highest indices.
            for &(_, id) in slots.iter().filter(|(index, _)| *index >= count) {
                if self.allocs[id.index()].is_live() {
                    stops.push(id);
                }
            }
            let latest = &self.jobs[job.index()].latest[g];
            let version = self.jobs[job.index()].version;
            let placing_before = wants.len();
            let mut outdated = Vec::new();
            let mut failed_untainted = Vec::new();
            for index in 0..count {
                let Some(&id) = latest.get(&index) else {
                    wants.push(Want::new(group, index, PlacementKind::Fresh));
                    continue;
                };
                let alloc = &self.allocs[id.index()];
                match alloc.state {
                    AllocState::Pulling
                    | AllocState::Claiming
                    | AllocState::Publishing
                    | AllocState::Running => {
                        if alloc.migrate {
                            stops.push(id);
                            wants.push(Want::new(group, index, PlacementKind::Replaces(id)));
                        } else if alloc.version != version {
                            if spec.updates_in_place(alloc.version, version) {
                                // An in-place update: the allocation runs
                                // the new version as it is (and joins its
                                // deployment below).
                                self.allocs[id.index()].version = version;
                            } else {
                                outdated.push((index, id));
                            }
                        }
                    }
                    // A finished batch allocation is done.
                    AllocState::Complete if spec.is_batch() => {}
                    // A service should run until stopped: one that exits is
                    // replaced, like a lost or stopped allocation.
                    AllocState::Complete | AllocState::Lost | AllocState::Stopped => {
                        wants.push(Want::new(group, index, PlacementKind::Replaces(id)));
                    }
                    // reconciler updateByReschedulable: now if due within
                    // 1s or this is the follow-up evaluation made for it;
                    // later (one follow-up evaluation) otherwise. An
                    // unknown allocation is replaced the same way, from
                    // the moment it became unknown (computeDisconnecting);
                    // it keeps running beside its replacement.
                    AllocState::Failed | AllocState::Unknown => {
                        let due = reschedule_eligible(
                            &group_spec.reschedule,
                            alloc.reschedule_history(),
                            alloc.failed_at(),
                        );
                        let followup_due = alloc.followup_at().is_some_and(|at| at <= now);
                        let now_due =
                            due.is_some_and(|due| followup_due || due <= now + RESCHEDULE_WINDOW);
                        // filterByRescheduleable keeps a failed allocation
                        // not rescheduled now among the untainted, which
                        // the destructive budget counts.
                        if !now_due && alloc.state == AllocState::Failed {
                            failed_untainted.push(id);
                        }
                        let Some(due) = due else {
                            continue;
                        };
                        if now_due {
                            wants.push(Want::new(group, index, PlacementKind::Reschedules(id)));
                        } else if alloc.followup_at().is_none() {
                            followups.push((id, due));
                        }
                    }
                }
            }
            // Failed canaries are rescheduled too (deployment.rs).
            self.reschedule_canaries(group, &mut wants, &mut followups);
            if let Some(stop) = self.reconcile_updates(
                group,
                placing_before,
                outdated,
                &failed_untainted,
                &mut wants,
                stops,
            ) {
                stopping_later.push(stop);
            }
        }
        self.schedule_followups(job, stopping_later, followups);
        wants
    }

    /// The group's canaries and destructive updates once its slots are
    /// reconciled (`wants[placing_before..]` are the group's); returns the
    /// lost allocation its client stops itself, and when, if the group's
    /// placements wait for it.
    fn reconcile_updates(
        &mut self,
        group: GroupRef,
        placing_before: usize,
        outdated: Vec<(u32, AllocId)>,
        failed_untainted: &[AllocId],
        wants: &mut Vec<Want>,
        stops: &mut Vec<AllocId>,
    ) -> Option<(AllocId, Millis)> {
        // Destructive updates, lowest index first (computeDestructiveUpdates),
        // as many as the deployment allows: stop the old allocation and
        // place its replacement in the same plan.
        // Canaries first (computeCanaries): while the deployment waits
        // for them, nothing is updated and only replacements of lost or
        // failed allocations are placed.
        let canarying = self.reconcile_canaries(group, &outdated, wants, stops);
        if canarying {
            let group_wants = wants.split_off(placing_before);
            wants.extend(
                group_wants
                    .into_iter()
                    .filter(|w| w.kind != PlacementKind::Fresh),
            );
        }
        let placing = wants[placing_before..]
            .iter()
            .filter(|w| w.kind != PlacementKind::Canary)
            .count();
        let budget = if canarying {
            0
        } else {
            self.destructive_budget(group, placing, failed_untainted)
        };
        // The old allocation's stop is not in the plan yet: the scheduler
        // appends it just before it tries the replacement.
        for (index, id) in outdated.into_iter().take(budget) {
            wants.push(Want::new(group, index, PlacementKind::Updates(id)));
        }
        self.join_in_place(group);
        // A lost allocation its client stops itself holds back the
        // group's placements until then (delayByStopAfter).
        if let Some((id, until)) = self.client_stop_pending(group) {
            wants.retain(|w| {
                w.group != group
                    || w.kind
                        .previous()
                        .is_some_and(|p| self.allocs[p.index()].migrate)
            });
            if self.allocs[id.index()].followup_at() != Some(until) {
                return Some((id, until));
            }
        }
        None
    }

    /// Queues the follow-up evaluations: one per client stop awaited, and
    /// one per window of reschedules due later (reconcile.go
    /// createTimeoutLaterEvals).
    fn schedule_followups(
        &mut self,
        job: JobId,
        stopping_later: Vec<(AllocId, Millis)>,
        followups: Vec<(AllocId, Millis)>,
    ) {
        for (id, until) in stopping_later {
            self.allocs[id.index()].set_followup_at(Some(until));
            self.at(until, Event::RescheduleDue(job));
        }
        let dues: Vec<Millis> = followups.iter().map(|&(_, due)| due).collect();
        let windows = followup_windows(&dues);
        let mut evals = BTreeSet::new();
        for (&(id, _), &eval_at) in followups.iter().zip(&windows) {
            self.allocs[id.index()].set_followup_at(Some(eval_at));
            evals.insert(eval_at);
        }
        for eval_at in evals {
            self.at(eval_at, Event::RescheduleDue(job));
        }
    }

    pub(crate) fn live_allocs_of(&self, job: JobId) -> impl Iterator<Item = AllocId> + '_ {
        let state = &self.jobs[job.index()];
        state
            .latest
            .iter()
            .flat_map(|slots| slots.values().copied())
            .chain(state.canaries.iter().copied())
            .chain(state.displaced.iter().copied())
            .filter(|&id| self.allocs[id.index()].is_live())
    }
}
