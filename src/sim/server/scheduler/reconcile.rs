use crate::engine::rng::SimRng;
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
        let mut wants = Vec::new();
        let mut followups = Vec::new();
        let mut stopping_later = Vec::new();
        for g in self.group_order(job) {
            let spec = &self.scenario.jobs[job.index()];
            let group_spec = &spec.groups[g];
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
                            if spec.updates_in_place(g, alloc.version, version) {
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
        // computeGroup's `place` (1.2.6) / placeAllocs' (2.0.5): reschedules,
        // lost replacements and new names use the limit up; canaries and
        // migrations (computeMigrations, after the destructive updates) do not.
        let placing = wants[placing_before..]
            .iter()
            .filter(|w| match w.kind {
                PlacementKind::Canary => false,
                PlacementKind::Replaces(id) => {
                    let old = &self.allocs[id.index()];
                    !(old.migrate && old.is_live())
                }
                _ => true,
            })
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

    /// The order this evaluation reconciles `job`'s groups in, and so the
    /// order of its placements (reconcile.go Compute at 1.2.6,
    /// reconcile_cluster.go computeDeploymentComplete at 2.0.5: `for group,
    /// as := range m` over the allocMatrix, a Go map). newAllocMatrix
    /// inserts the group of each of the job's allocations in the order the
    /// state store lists them (by allocation ID, a random UUID), then the
    /// job's other groups in file order; Go ranges over a map of at most 8
    /// entries from a random one of its 8 slots, wrapping around
    /// (`map_order`). A group's allocations are the ones its slots hold
    /// (plus its canaries): older ones Nomad still keeps until garbage
    /// collection are not counted (a simplification).
    pub(crate) fn group_order(&mut self, job: JobId) -> Vec<usize> {
        let state = &self.jobs[job.index()];
        let groups = self.scenario.jobs[job.index()].groups.len();
        if groups < 2 {
            return (0..groups).collect();
        }
        let mut allocs: Vec<u64> = state
            .latest
            .iter()
            .map(|s| s.values().count() as u64)
            .collect();
        allocs.resize(groups, 0);
        for &id in state.canaries.iter().chain(&state.displaced) {
            allocs[self.allocs[id.index()].group.group_index()] += 1;
        }
        let inserted = insertion_order(&allocs, &mut self.group_rng);
        map_order(inserted, &mut self.group_rng)
    }

    /// Every live allocation of `job`, in allocation-ID order: from the
    /// live index, not the slots, so an unknown allocation on a
    /// disconnected client that has been replaced (no longer in any slot)
    /// is stopped with its job too (Nomad's reconciler stops every
    /// non-terminal allocation of a stopped job: reconcile.go `handleStop`).
    pub(crate) fn live_allocs_of(&self, job: JobId) -> Vec<AllocId> {
        let groups = self.scenario.jobs[job.index()].groups.len();
        let mut out: Vec<AllocId> = (0..groups)
            .flat_map(|g| self.live.of_group(GroupRef::new(job, g)))
            .map(|&(id, _)| id)
            .collect();
        out.sort_unstable();
        out
    }
}

/// The order newAllocMatrix inserts groups in: those with allocations by
/// their first allocation in ID order, then the rest in file order. With
/// random IDs the group holding the lowest of the remaining IDs is drawn
/// with odds proportional to its allocation count, one group at a time.
fn insertion_order(allocs: &[u64], rng: &mut SimRng) -> Vec<usize> {
    let mut left: Vec<usize> = (0..allocs.len()).filter(|&g| allocs[g] > 0).collect();
    let mut order = Vec::with_capacity(allocs.len());
    while !left.is_empty() {
        let total: u64 = left.iter().map(|&g| allocs[g]).sum();
        let mut draw = rng.below(total);
        let pick = left
            .iter()
            .position(|&g| {
                let hit = draw < allocs[g];
                draw = draw.saturating_sub(allocs[g]);
                hit
            })
            .unwrap_or(0);
        order.push(left.remove(pick));
    }
    order.extend((0..allocs.len()).filter(|&g| allocs[g] == 0));
    order
}

/// How Go ranges over a map whose keys went in in `inserted` order. A map
/// of at most 8 entries is one bucket of 8 slots (classic maps before Go
/// 1.24, runtime/map.go mapiterinit: `offset = rand & 7`) or one group of
/// 8 slots (Swiss tables from 1.24, internal/runtime/maps Iter:
/// `entryOffset = rand`, slot `(i + entryOffset) % 8`), filled from slot
/// 0 in insertion order; both start at a random slot and wrap, skipping
/// empty slots. So entry `k >= 1` comes first with odds 1/8 and the first
/// inserted with odds (9 - n)/8, the rest following in insertion order.
/// Larger maps place keys by a per-map random hash seed: modelled as a
/// uniform shuffle (a simplification of their bucket and group layout).
pub(crate) fn map_order(mut inserted: Vec<usize>, rng: &mut SimRng) -> Vec<usize> {
    const SLOTS: usize = 8;
    if inserted.len() > SLOTS {
        rng.shuffle(&mut inserted);
        return inserted;
    }
    let offset = rng.below(SLOTS as u64) as usize;
    if offset < inserted.len() {
        inserted.rotate_left(offset);
    }
    inserted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::Stream;

    #[test]
    fn a_small_map_starts_at_a_random_slot_and_wraps() {
        let mut rng = SimRng::new(7, Stream::GroupOrder);
        let mut first = [0u32; 3];
        for _ in 0..8000 {
            let order = map_order(vec![0, 1, 2], &mut rng);
            // Always a rotation of the insertion order.
            let start = order[0];
            assert_eq!(order, [(start) % 3, (start + 1) % 3, (start + 2) % 3]);
            first[start] += 1;
        }
        // 6/8, 1/8, 1/8 of 8000.
        assert!((5700..6300).contains(&first[0]), "{first:?}");
        assert!((800..1200).contains(&first[1]), "{first:?}");
        assert!((800..1200).contains(&first[2]), "{first:?}");
    }

    #[test]
    fn groups_with_allocations_are_inserted_first_weighted_by_count() {
        let mut rng = SimRng::new(3, Stream::GroupOrder);
        let mut first = [0u32; 3];
        for _ in 0..4000 {
            let order = insertion_order(&[1, 0, 3], &mut rng);
            assert_eq!(order[2], 1, "a group without allocations comes last");
            first[order[0]] += 1;
        }
        assert!((800..1200).contains(&first[0]), "{first:?}");
        assert_eq!(first[0] + first[2], 4000);
    }
}
