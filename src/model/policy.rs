//! The scheduling policies plansim compares.

use std::fmt;

/// Where, and how strictly, a volume's access mode is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Nomad 1.2.6: the scheduler sees only claims clients already made.
    Naive,
    /// Current Nomad (2.0.5): as naive, plus a registration check, exact
    /// server claim checks and a client that retries a refused claim.
    Validate,
    /// Nomad 2.0.5 plus the proposed fix: every live allocation holds its
    /// claim from placement on.
    PlanAware,
}

impl Policy {
    /// In the order every output lists them.
    pub const ALL: [Policy; 3] = [Policy::Naive, Policy::Validate, Policy::PlanAware];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Naive => "naive",
            Policy::Validate => "validate",
            Policy::PlanAware => "plan-aware",
        }
    }

    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|policy| policy.name() == name)
    }

    /// The Nomad release whose code the policy follows.
    pub fn nomad(self) -> NomadVersion {
        match self {
            Policy::Naive => NomadVersion::V1_2_6,
            Policy::Validate | Policy::PlanAware => NomadVersion::V2_0_5,
        }
    }

    /// Job registration refuses single-node volumes shared by count > 1
    /// (Nomad 1.3+). The proposed fix replaces this heuristic: plan-aware's
    /// scheduler places what the access mode allows and blocks the rest, so
    /// plan-aware keeps only the per-request validation of every release.
    pub fn validates_registration(self) -> bool {
        matches!(self, Policy::Validate)
    }

    /// The server's claim checks and the client's retry of Nomad 1.3+
    /// (#12112, #12113), as in 2.0.5.
    pub fn exact_server_check(self) -> bool {
        self.nomad() == NomadVersion::V2_0_5
    }

    /// The scheduler counts claims of every live allocation, committed or in
    /// the plan, and the plan applier re-checks them.
    pub fn plan_aware_claims(self) -> bool {
        matches!(self, Policy::PlanAware)
    }
}

/// The two Nomad releases the policies are pinned to. Behaviours that
/// changed between them are asked of this, not of the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NomadVersion {
    /// The last 1.2 release before the CSI fixes of 1.2.7.
    V1_2_6,
    /// The newest release ("current Nomad").
    V2_0_5,
}

impl NomadVersion {
    /// The CSI checker matches volume topologies (#12129, 1.3.0).
    pub fn checks_topology(self) -> bool {
        self == NomadVersion::V2_0_5
    }

    /// A node of an already-eligible computed class that fails the CSI check
    /// ends the whole node iteration (FeasibilityWrapper.Next before #13274,
    /// fixed in 1.2.9 and 1.3.2).
    pub fn class_early_return(self) -> bool {
        self == NomadVersion::V1_2_6
    }

    /// The server skips the node detach of a claim on a down node (1.3.4+);
    /// before, the detach fails and the claim waits for the node's GC.
    pub fn skips_down_node_detach(self) -> bool {
        self == NomadVersion::V2_0_5
    }

    /// A node that missed its heartbeats while some allocation may wait for
    /// it is marked disconnected and its allocations unknown (1.3.0+,
    /// `max_client_disconnect`, 1.8+ `disconnect.lost_after`); before,
    /// every such node is down and its allocations lost.
    pub fn disconnects_clients(self) -> bool {
        self == NomadVersion::V2_0_5
    }

    /// The drainer counts an allocation already marked for migration
    /// among the healthy ones (before #26175, 1.11.0): with several
    /// draining nodes it can move more than `max_parallel` at once.
    pub fn drain_counts_migrating_healthy(self) -> bool {
        self == NomadVersion::V1_2_6
    }

    /// Jobs that run a CSI plugin are drained with the system jobs, last
    /// (#12324, 1.3.0).
    pub fn drains_plugin_jobs_last(self) -> bool {
        self == NomadVersion::V2_0_5
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
