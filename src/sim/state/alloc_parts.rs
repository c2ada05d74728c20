//! The parts of an allocation record (`state::Alloc`) kept out of its core
//! (issue #16: at most 150 bytes per live allocation, records that do not
//! grow with history). C1M keeps a million live allocations, almost none of
//! which claim volumes or were rescheduled: those parts live behind one
//! `Option<Box<..>>` each (8 bytes when absent). Times are stored in 4
//! bytes (a run's clock stays below 2^32 ms) and optional values with a
//! sentinel in a small newtype, not `Option` (16 bytes for a time or a
//! score). The accessors read them as plain values.

use crate::model::access::ClaimMode;
use crate::model::ids::{NodeId, VolumeId};
use crate::model::scenario::{Capability, Scenario};
use crate::model::time::Millis;

/// A point in simulated time in 4 bytes. Every time a run reaches fits:
/// the clock never passes the horizon (`MAX_HORIZON`, 30 days, is below
/// 2^32 ms, as is every time the event queue holds).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(u32);

impl Stamp {
    pub const ZERO: Stamp = Stamp(0);

    pub fn new(at: Millis) -> Self {
        let at = u32::try_from(at.0).expect("simulated times fit in u32 ms");
        assert!(at != u32::MAX, "u32::MAX ms is MaybeStamp's sentinel");
        Stamp(at)
    }

    pub fn get(self) -> Millis {
        Millis(u64::from(self.0))
    }
}

impl std::fmt::Debug for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// An optional point in simulated time in 4 bytes (`Option<Millis>` takes
/// 16): `u32::MAX` ms, past every time a run reaches, stands for none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MaybeStamp(u32);

impl MaybeStamp {
    pub const NONE: MaybeStamp = MaybeStamp(u32::MAX);

    pub fn some(at: Millis) -> Self {
        MaybeStamp(Stamp::new(at).0)
    }

    pub fn get(self) -> Option<Millis> {
        (self != Self::NONE).then_some(Stamp(self.0).get())
    }

    pub fn is_some(self) -> bool {
        self != Self::NONE
    }

    pub fn is_none(self) -> bool {
        self == Self::NONE
    }

    /// The time, leaving none behind.
    pub fn take(&mut self) -> Option<Millis> {
        std::mem::replace(self, Self::NONE).get()
    }
}

impl From<Option<Millis>> for MaybeStamp {
    fn from(at: Option<Millis>) -> Self {
        at.map_or(Self::NONE, Self::some)
    }
}

impl std::fmt::Debug for MaybeStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// An optional sequence number in 4 bytes: `u32::MAX`, a number no counter
/// of a run reaches, stands for none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MaybeSeq(u32);

impl MaybeSeq {
    pub const NONE: MaybeSeq = MaybeSeq(u32::MAX);

    pub fn some(seq: u32) -> Self {
        assert!(seq != u32::MAX, "u32::MAX is the sentinel for none");
        MaybeSeq(seq)
    }

    pub fn get(self) -> Option<u32> {
        (self != Self::NONE).then_some(self.0)
    }

    pub fn is_some(self) -> bool {
        self != Self::NONE
    }

    pub fn is_none(self) -> bool {
        self == Self::NONE
    }
}

impl std::fmt::Debug for MaybeSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// An optional node score in 8 bytes: one NaN bit pattern (a signalling
/// NaN with a payload no arithmetic produces) stands for none, so every
/// other `f64`, NaNs included, keeps its exact bits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MaybeScore(u64);

impl MaybeScore {
    const NONE_BITS: u64 = 0x7ff4_0000_dead_beef;
    pub const NONE: MaybeScore = MaybeScore(Self::NONE_BITS);

    pub fn some(score: f64) -> Self {
        let bits = score.to_bits();
        assert!(bits != Self::NONE_BITS, "the sentinel NaN is not a score");
        MaybeScore(bits)
    }

    pub fn get(self) -> Option<f64> {
        (self.0 != Self::NONE_BITS).then(|| f64::from_bits(self.0))
    }

    pub fn is_some(self) -> bool {
        self.0 != Self::NONE_BITS
    }

    pub fn is_none(self) -> bool {
        self.0 == Self::NONE_BITS
    }
}

impl std::fmt::Debug for MaybeScore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// The volumes an allocation mounts and the client's progress claiming
/// them; only allocations with volumes have one.
#[derive(Clone, Debug)]
pub struct VolumeClaims {
    pub volumes: Vec<(VolumeId, ClaimMode)>,
    /// The access and attachment mode each of `volumes` is claimed in.
    pub claim_modes: Vec<Capability>,
    /// Which of `volumes` the client is claiming or publishing.
    pub next_volume: usize,
    /// Client claim retries (`client_retries_claims`): next backoff and deadline.
    pub claim_backoff: Millis,
    pub claim_deadline: Millis,
    /// The refusal a retry is waiting out, reported if the deadline passes
    /// first (`None`: "volume max claims reached").
    pub retry_error: Option<String>,
}

impl VolumeClaims {
    /// The claims of an allocation mounting `volumes` (none without volumes),
    /// `next_volume` of them already claimed and published.
    pub fn boxed(
        volumes: Vec<(VolumeId, ClaimMode)>,
        claim_modes: Vec<Capability>,
        next_volume: usize,
    ) -> Option<Box<Self>> {
        (!volumes.is_empty()).then(|| {
            Box::new(VolumeClaims {
                volumes,
                claim_modes,
                next_volume,
                claim_backoff: Millis::ZERO,
                claim_deadline: Millis::ZERO,
                retry_error: None,
            })
        })
    }
}

/// Nomad's reschedule tracker and when the allocation failed; made when an
/// allocation fails, is lost or goes unknown, or replaces a reschedule.
#[derive(Clone, Debug, Default)]
pub struct RescheduleTracker {
    /// When it failed, was lost, or went unknown.
    pub failed_at: Millis,
    /// Delays of the reschedules that led to this allocation, oldest first,
    /// with the time each happened: Nomad's reschedule tracker, kept to its
    /// window (`reschedule::tracker_window`), so at most
    /// max(attempts, 5) entries. Moved, not copied, to a replacement.
    pub history: Vec<(Millis, Millis)>,
    /// The node each reschedule in `history` moved away from (Nomad's
    /// RescheduleEvent.PrevNodeID), parallel to it: with the allocation's
    /// own node, the nodes a rescheduled replacement avoids.
    pub penalty_nodes: Vec<NodeId>,
    /// When the delayed evaluation that will reschedule this allocation
    /// runs (Nomad's FollowupEvalID), if one is scheduled.
    pub followup_at: Option<Millis>,
}

/// How many allocation records to reserve up front: the initial
/// allocations and the desired count of every service and batch group,
/// which a run places at least once when its jobs register (the loader
/// caps the sum at MAX_ALLOCATIONS). System jobs, scale events and
/// replacements grow the vector as they come. Reserving spares C1M's
/// million records the copies and the slack of doubling; a small scenario
/// reserves what it uses.
pub fn expected_allocations(scenario: &Scenario) -> usize {
    let groups: u64 = scenario
        .jobs
        .iter()
        .filter(|job| !job.is_system())
        .flat_map(|job| job.groups.iter())
        .map(|group| u64::from(group.count))
        .sum();
    usize::try_from(groups)
        .unwrap_or(usize::MAX)
        .saturating_add(scenario.initial_allocations.len())
}

/// The volumes in `claims`, none without.
pub fn volumes_of(claims: &Option<Box<VolumeClaims>>) -> &[(VolumeId, ClaimMode)] {
    claims.as_deref().map_or(&[], |c| &c.volumes)
}

/// The claim modes in `claims`, none without.
pub fn claim_modes_of(claims: &Option<Box<VolumeClaims>>) -> &[Capability] {
    claims.as_deref().map_or(&[], |c| &c.claim_modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_every_time_a_run_reaches() {
        for at in [0, 1, 30 * 24 * 3600 * 1000, u32::MAX as u64 - 1] {
            assert_eq!(Stamp::new(Millis(at)).get(), Millis(at));
            assert_eq!(MaybeStamp::some(Millis(at)).get(), Some(Millis(at)));
        }
        assert_eq!(MaybeStamp::NONE.get(), None);
        let mut m = MaybeStamp::from(Some(Millis(7)));
        assert_eq!(m.take(), Some(Millis(7)));
        assert!(m.is_none());
        assert_eq!(format!("{m:?}"), "None");
        assert_eq!(MaybeSeq::some(3).get(), Some(3));
        assert_eq!(MaybeSeq::NONE.get(), None);
    }

    #[test]
    #[should_panic(expected = "fit in u32")]
    fn a_stamp_refuses_a_time_past_u32() {
        let _ = Stamp::new(Millis(1 << 32));
    }

    #[test]
    fn maybe_score_keeps_exact_bits() {
        for score in [0.0, -0.0, 1.0 / 3.0, f64::NAN, f64::INFINITY, f64::MIN] {
            let got = MaybeScore::some(score).get().unwrap();
            assert_eq!(got.to_bits(), score.to_bits());
        }
        assert_eq!(MaybeScore::NONE.get(), None);
    }
}
