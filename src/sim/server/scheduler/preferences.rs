//! Placement preferences, after Nomad's scheduler/feasible.go
//! (DistinctHostsIterator, DistinctPropertyIterator; the constraint
//! operators are in feasibility.rs), scheduler/propertyset.go, scheduler/spread.go
//! (SpreadIterator) and scheduler/rank.go (NodeAffinityIterator).
//!
//! A job with none of spread, affinity, distinct_hosts or
//! distinct_property never builds a [`Preferences`]: the scheduler's hot
//! path only tests an `Option`. Scores use IEEE basic arithmetic only.

use std::collections::BTreeMap;

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::release::Release;
use crate::model::scenario::{
    Constraint, ConstraintOperator, ConstraintTarget, Matcher, NodeSpec, Spread,
};
use crate::sim::server::scheduler::feasibility::{FilterReason, operator_holds, target_value};
use crate::sim::server::scheduler::hot::GroupCounts;
use crate::sim::simulation::Simulation;

/// Nomad's propertySet: how many allocations (of the job, or of one group)
/// use each value of an attribute, counting the cluster's live allocations,
/// the plan's placements and the plan's stops.
struct PropertySet {
    target: ConstraintTarget,
    /// `None`: every group of the job (a job-level distinct_property).
    group: Option<GroupRef>,
    /// 2.0.5 spreads: values not among the targets count together as "*"
    /// (`targetedPropertyValue`; a spread without targets keeps every
    /// value apart, `targetValues.Empty()`).
    targets: Option<Vec<String>>,
    existing: BTreeMap<String, u64>,
    proposed: BTreeMap<String, u64>,
    cleared: BTreeMap<String, u64>,
}

const IMPLICIT_TARGET: &str = "*";

impl PropertySet {
    pub(crate) fn key<'v>(&self, value: &'v str) -> &'v str {
        match &self.targets {
            Some(targets) if !targets.is_empty() && !targets.iter().any(|t| t == value) => {
                IMPLICIT_TARGET
            }
            _ => value,
        }
    }

    /// Counts an allocation of `group` on `node` in one of the maps, if
    /// the set covers the group and the node has the attribute.
    pub(crate) fn tally(
        &mut self,
        which: Which,
        group: GroupRef,
        node: &NodeSpec,
        drivers: &[String],
    ) {
        if let Some((map, key)) = self.count_of(which, group, node, drivers) {
            *map.entry(key).or_default() += 1;
        }
    }

    /// Takes back one [`PropertySet::tally`]: the plan popped a stop it
    /// had appended.
    fn untally(&mut self, which: Which, group: GroupRef, node: &NodeSpec, drivers: &[String]) {
        if let Some((map, key)) = self.count_of(which, group, node, drivers)
            && let Some(count) = map.get_mut(&key)
        {
            *count -= 1;
            if *count == 0 {
                map.remove(&key);
            }
        }
    }

    /// The map `which` and the key an allocation of `group` on `node`
    /// counts under, if the set covers the group and the node has the
    /// attribute.
    fn count_of(
        &mut self,
        which: Which,
        group: GroupRef,
        node: &NodeSpec,
        drivers: &[String],
    ) -> Option<(&mut BTreeMap<String, u64>, String)> {
        if !self.covers(group) {
            return None;
        }
        let key = self
            .key(&target_value(&self.target, node, drivers)?)
            .to_string();
        let map = match which {
            Which::Existing => &mut self.existing,
            Which::Proposed => &mut self.proposed,
            Which::Cleared => &mut self.cleared,
        };
        Some((map, key))
    }

    pub(crate) fn covers(&self, group: GroupRef) -> bool {
        self.group.is_none_or(|g| g == group)
    }

    /// GetCombinedUseMap's count for one (targeted) value: existing plus
    /// proposed, less the plan's stops (never below zero). PopulateProposed
    /// first takes one off a stop count above one for a value the plan
    /// also places on, and keeps a count of one as it is.
    pub(crate) fn used(&self, key: &str) -> Option<u64> {
        let existing = self.existing.get(key).copied();
        let proposed = self.proposed.get(key).copied();
        if existing.is_none() && proposed.is_none() {
            return None;
        }
        let combined = existing.unwrap_or(0) + proposed.unwrap_or(0);
        let cleared = match self.cleared.get(key).copied() {
            Some(c) if proposed.is_some() && c > 1 => c - 1,
            Some(c) => c,
            None => 0,
        };
        Some(combined.saturating_sub(cleared))
    }

    /// Every value with a use count (for the even spread).
    pub(crate) fn combined(&self) -> impl Iterator<Item = u64> + '_ {
        let mut keys: Vec<&String> = self.existing.keys().chain(self.proposed.keys()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter().filter_map(|k| self.used(k))
    }
}

#[derive(Clone, Copy)]
enum Which {
    Existing,
    Proposed,
    Cleared,
}

/// What a spread block asks of one value: its desired count.
struct SpreadInfo {
    weight: u8,
    desired: BTreeMap<String, f64>,
}

/// A group's spread and distinct_property state, built the first time the
/// evaluation places the group (Nomad's SetTaskGroup).
struct GroupPreferences {
    /// One per spread block, the job's first.
    spread_sets: Vec<PropertySet>,
    /// Spread details keyed by the attribute as written: a group block and
    /// a job block on the same attribute share the later (the job's) entry.
    spread_info: BTreeMap<String, SpreadInfo>,
    /// The spread sets' attributes, parallel to `spread_sets`.
    spread_attributes: Vec<String>,
    /// Group-level distinct_property sets, with the constraint's index.
    property_sets: Vec<(usize, PropertySet)>,
    distinct_hosts: bool,
}

/// One evaluation's placement-preference state.
pub(crate) struct Preferences {
    job: JobId,
    stops: Vec<AllocId>,
    /// The plan's placements so far.
    proposed: Vec<(NodeId, GroupRef)>,
    job_property_sets: Vec<(usize, PropertySet)>,
    job_distinct_hosts: bool,
    groups: Vec<Option<GroupPreferences>>,
    /// Nomad's sumSpreadWeights: it accumulates over every group the
    /// evaluation sets up, job-level spreads counted once per group.
    spread_weight_sum: i32,
    /// 2.0.5's lowestSpreadBoost (starts at -1 for each evaluation).
    lowest_boost: f64,
}

impl Preferences {
    /// Every property set built so far: the job's distinct_property sets,
    /// then each prepared group's spread and distinct_property sets.
    fn sets_mut(&mut self) -> impl Iterator<Item = &mut PropertySet> {
        self.job_property_sets.iter_mut().map(|(_, s)| s).chain(
            self.groups.iter_mut().flatten().flat_map(|g| {
                g.spread_sets
                    .iter_mut()
                    .chain(g.property_sets.iter_mut().map(|(_, s)| s))
            }),
        )
    }
}

/// Whether a distinct_hosts constraint is on: the first one in the list
/// decides. 1.2.6 enforces it whatever its value; 2.0.5 reads the value as
/// a boolean (empty or unparsable: on).
pub(crate) fn distinct_hosts(constraints: &[Constraint], release: &Release) -> bool {
    constraints
        .iter()
        .find(|c| c.operator == ConstraintOperator::DistinctHosts)
        .is_some_and(|c| {
            !release.distinct_hosts_reads_value
                || !matches!(
                    c.value.as_str(),
                    "0" | "f" | "F" | "FALSE" | "false" | "False"
                )
        })
}

impl Simulation<'_> {
    /// The evaluation's preference state, if the job has any preference.
    pub(crate) fn preferences(&self, job: JobId, stops: &[AllocId]) -> Option<Box<Preferences>> {
        let spec = &self.scenario.jobs[job.index()];
        if !spec.uses_placement_preferences() {
            return None;
        }
        let release = self.behaviour.release;
        let mut prefs = Preferences {
            job,
            stops: stops.to_vec(),
            proposed: Vec::new(),
            job_property_sets: Vec::new(),
            job_distinct_hosts: distinct_hosts(&spec.constraints, release),
            groups: (0..spec.groups.len()).map(|_| None).collect(),
            spread_weight_sum: 0,
            lowest_boost: -1.0,
        };
        for (index, c) in spec.constraints.iter().enumerate() {
            if c.operator == ConstraintOperator::DistinctProperty {
                let set = self.property_set(&prefs, c.target.clone(), None, None);
                prefs.job_property_sets.push((index, set));
            }
        }
        Some(Box::new(prefs))
    }

    fn property_set(
        &self,
        prefs: &Preferences,
        target: ConstraintTarget,
        group: Option<GroupRef>,
        targets: Option<Vec<String>>,
    ) -> PropertySet {
        let mut set = PropertySet {
            target,
            group,
            targets,
            existing: BTreeMap::new(),
            proposed: BTreeMap::new(),
            cleared: BTreeMap::new(),
        };
        let node = |id: NodeId| &self.scenario.nodes[id.index()];
        // Every live allocation of the job (propertyset.go populateExisting:
        // the job's non-terminal allocations): canaries, allocations a
        // promotion displaced, and an unknown allocation still running
        // beside its replacement, which no slot holds any more.
        for g in 0..self.scenario.jobs[prefs.job.index()].groups.len() {
            let group = GroupRef::new(prefs.job, g);
            for &(_, at) in self.live.of_group(group) {
                set.tally(
                    Which::Existing,
                    group,
                    node(at),
                    &self.scenario.driver_names,
                );
            }
        }
        for &id in &prefs.stops {
            let alloc = &self.allocs[id.index()];
            set.tally(
                Which::Cleared,
                alloc.group,
                node(alloc.node),
                &self.scenario.driver_names,
            );
        }
        for &(n, g) in &prefs.proposed {
            set.tally(Which::Proposed, g, node(n), &self.scenario.driver_names);
        }
        set
    }

    /// Sets up `group` the first time the evaluation places it; returns
    /// whether its spread or affinity raises the stack's limit.
    pub(crate) fn prepare_group(&self, prefs: &mut Preferences, group: GroupRef) -> bool {
        let spec = &self.scenario.jobs[group.job.index()];
        let group_spec = &spec.groups[group.group_index()];
        if prefs.groups[group.group_index()].is_none() {
            let release = self.behaviour.release;
            let spreads: Vec<&Spread> = spec.spreads.iter().chain(&group_spec.spreads).collect();
            let spread_sets = spreads
                .iter()
                .map(|s| {
                    let targets = release
                        .spread_pools_untargeted_values
                        .then(|| s.targets.iter().map(|t| t.value.clone()).collect());
                    self.property_set(prefs, s.target.clone(), Some(group), targets)
                })
                .collect();
            let count = self.jobs[group.job.index()].counts[group.group_index()];
            let mut spread_info = BTreeMap::new();
            for s in group_spec.spreads.iter().chain(&spec.spreads) {
                let mut desired = BTreeMap::new();
                let mut sum = 0.0;
                for t in &s.targets {
                    let wanted = (f64::from(t.percent) / 100.0) * f64::from(count);
                    desired.insert(t.value.clone(), wanted);
                    sum += wanted;
                }
                if sum > 0.0 && sum < f64::from(count) {
                    desired.insert(IMPLICIT_TARGET.to_string(), f64::from(count) - sum);
                }
                spread_info.insert(
                    s.attribute.clone(),
                    SpreadInfo {
                        weight: s.weight,
                        desired,
                    },
                );
                prefs.spread_weight_sum += i32::from(s.weight);
            }
            let offset = spec.constraints.len();
            let property_sets = group_spec
                .constraints
                .iter()
                .enumerate()
                .filter(|(_, c)| c.operator == ConstraintOperator::DistinctProperty)
                .map(|(i, c)| {
                    (
                        offset + i,
                        self.property_set(prefs, c.target.clone(), Some(group), None),
                    )
                })
                .collect();
            prefs.groups[group.group_index()] = Some(GroupPreferences {
                spread_sets,
                spread_info,
                spread_attributes: spreads.iter().map(|s| s.attribute.clone()).collect(),
                property_sets,
                distinct_hosts: distinct_hosts(&group_spec.constraints, release),
            });
        }
        !spec.spreads.is_empty()
            || !spec.affinities.is_empty()
            || !group_spec.spreads.is_empty()
            || !group_spec.affinities.is_empty()
    }

    /// The distinct_hosts, then the distinct_property iterator.
    pub(crate) fn check_distinct(
        &self,
        prefs: &Preferences,
        node: NodeId,
        group: GroupRef,
        here: impl Fn(GroupRef) -> GroupCounts,
    ) -> Result<(), FilterReason> {
        let state = prefs.groups[group.group_index()]
            .as_ref()
            .expect("group prepared");
        let spec = &self.scenario.jobs[group.job.index()];
        if prefs.job_distinct_hosts || state.distinct_hosts {
            // Nomad's ProposedAllocs: the node's live allocations, less the
            // plan's stops there, plus the plan's placements there.
            let groups = 0..spec.groups.len();
            let collides = groups.map(|g| GroupRef::new(group.job, g)).any(|g| {
                if !(prefs.job_distinct_hosts || g == group) {
                    return false;
                }
                let GroupCounts { live, proposed } = here(g);
                let stopped = prefs
                    .stops
                    .iter()
                    .filter(|id| {
                        let a = &self.allocs[id.index()];
                        a.node == node && a.group == g
                    })
                    .count() as u32;
                live.saturating_sub(stopped) + proposed > 0
            });
            if collides {
                return Err(FilterReason::DistinctHosts);
            }
        }
        let node_spec = &self.scenario.nodes[node.index()];
        for (index, set) in prefs.job_property_sets.iter().chain(&state.property_sets) {
            let constraint = if *index < spec.constraints.len() {
                &spec.constraints[*index]
            } else {
                &spec.groups[group.group_index()].constraints[index - spec.constraints.len()]
            };
            let Some(value) = target_value(&set.target, node_spec, &self.scenario.driver_names)
            else {
                return Err(FilterReason::DistinctPropertyMissing {
                    group,
                    index: *index,
                });
            };
            let used = set.used(set.key(&value)).unwrap_or(0);
            let allowed = match constraint.matcher {
                Matcher::AllowedCount(n) => n,
                _ => 1,
            };
            if used >= allowed {
                return Err(FilterReason::DistinctProperty {
                    group,
                    index: *index,
                    value: value.to_string(),
                    used,
                });
            }
        }
        Ok(())
    }

    /// The affinity score (appended if the group has affinities: in 1.2.6
    /// only when not zero), then the spread score (appended when not zero).
    pub(crate) fn preference_scores(
        &self,
        prefs: &mut Preferences,
        node: NodeId,
        group: GroupRef,
        mut push: impl FnMut(f64),
    ) {
        let spec = &self.scenario.jobs[group.job.index()];
        let group_spec = &spec.groups[group.group_index()];
        let node_spec = &self.scenario.nodes[node.index()];
        let release = self.behaviour.release;
        let affinities: Vec<_> = spec
            .affinities
            .iter()
            .chain(&group_spec.affinities)
            .collect();
        if !affinities.is_empty() {
            let sum: f64 = affinities.iter().map(|a| f64::from(a.weight).abs()).sum();
            let mut total = 0.0;
            for a in &affinities {
                let actual =
                    target_value(&a.constraint.target, node_spec, &self.scenario.driver_names);
                if operator_holds(&a.constraint, actual.as_deref(), release) {
                    total += f64::from(a.weight);
                }
            }
            if release.affinity_score_always_appended || total != 0.0 {
                push(total / sum);
            }
        }
        let state = prefs.groups[group.group_index()]
            .as_ref()
            .expect("group prepared");
        if state.spread_sets.is_empty() {
            return;
        }
        let mut total = 0.0;
        let mut lowest = prefs.lowest_boost;
        for (set, attribute) in state.spread_sets.iter().zip(&state.spread_attributes) {
            let Some(value) = target_value(&set.target, node_spec, &self.scenario.driver_names)
            else {
                // Nomad: "missing property", the default penalty.
                total -= 1.0;
                continue;
            };
            let key = set.key(&value);
            let used = set.used(key).unwrap_or(0) + 1;
            let info = &state.spread_info[attribute];
            if info.desired.is_empty() {
                total += even_spread_boost(set, key);
                continue;
            }
            let Some(&desired) = info
                .desired
                .get(key)
                .or_else(|| info.desired.get(IMPLICIT_TARGET))
            else {
                total -= 1.0;
                continue;
            };
            let weight = f64::from(info.weight) / f64::from(prefs.spread_weight_sum);
            if release.spread_zero_desired_scores_lowest && desired == 0.0 {
                total += lowest;
                continue;
            }
            // 1.2.6 divides by a zero desired count too: -inf.
            let boost = ((desired - used as f64) / desired) * weight;
            total += boost;
            if release.spread_zero_desired_scores_lowest && boost < lowest {
                lowest = boost;
            }
        }
        prefs.lowest_boost = lowest;
        if total != 0.0 {
            push(total);
        }
    }

    /// The plan now places an allocation of `group` on `node`.
    pub(crate) fn note_proposed(&self, prefs: &mut Preferences, node: NodeId, group: GroupRef) {
        prefs.proposed.push((node, group));
        let node_spec = &self.scenario.nodes[node.index()];
        for set in prefs.sets_mut() {
            set.tally(
                Which::Proposed,
                group,
                node_spec,
                &self.scenario.driver_names,
            );
        }
    }

    /// The plan now stops `id` (a destructive update's old allocation,
    /// appended just before its replacement is tried), or, with
    /// `stopped == false`, no longer does (the replacement found no node
    /// and the plan popped the stop). Nomad's iterators read the plan
    /// afresh at every placement (ProposedAllocs, propertySet
    /// PopulateProposed), so what the later placements see follows.
    pub(crate) fn note_plan_stop(&self, prefs: &mut Preferences, id: AllocId, stopped: bool) {
        let alloc = &self.allocs[id.index()];
        let node_spec = &self.scenario.nodes[alloc.node.index()];
        if stopped {
            prefs.stops.push(id);
        } else if let Some(at) = prefs.stops.iter().rposition(|&s| s == id) {
            prefs.stops.remove(at);
        }
        for set in prefs.sets_mut() {
            if stopped {
                set.tally(
                    Which::Cleared,
                    alloc.group,
                    node_spec,
                    &self.scenario.driver_names,
                );
            } else {
                set.untally(
                    Which::Cleared,
                    alloc.group,
                    node_spec,
                    &self.scenario.driver_names,
                );
            }
        }
    }
}

/// Nomad's evenSpreadScoreBoost for a node whose value counts as `key`:
/// values with no use yet are skipped when finding the least and most used
/// (as Nomad's min/max scan skips zeros it meets first).
fn even_spread_boost(set: &PropertySet, key: &str) -> f64 {
    let counts: Vec<u64> = set.combined().collect();
    if counts.is_empty() {
        return 0.0;
    }
    let current = set.used(key).unwrap_or(0);
    let (mut min, mut max) = (0u64, 0u64);
    for &c in &counts {
        if min == 0 || c < min {
            min = c;
        }
        if max == 0 || c > max {
            max = c;
        }
    }
    if current != min {
        return if min == 0 {
            -1.0
        } else {
            (min as i64 - current as i64) as f64 / min as f64
        };
    }
    if min == max {
        return -1.0;
    }
    if min == 0 {
        return 1.0;
    }
    (max - min) as f64 / min as f64
}
