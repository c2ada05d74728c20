//! The scheduling policies plansim compares.

use std::fmt;

/// Where, and how strictly, a volume's access mode is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Nomad 1.0 to 1.2: the scheduler sees only claims clients already made.
    Naive,
    /// Nomad 1.3+: as naive, plus a registration check and an exact server claim check.
    Validate,
    /// The proposed fix: every live allocation holds its claim from placement on.
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

    /// Job registration refuses single-node volumes shared by count > 1.
    pub fn validates_registration(self) -> bool {
        matches!(self, Policy::Validate)
    }

    /// The server enforces the access mode exactly when a client claims, and
    /// the client retries a refused claim with backoff (Nomad 1.3+).
    pub fn exact_server_check(self) -> bool {
        matches!(self, Policy::Validate | Policy::PlanAware)
    }

    /// The scheduler counts claims of every live allocation, committed or in
    /// the plan, and the plan applier re-checks them.
    pub fn plan_aware_claims(self) -> bool {
        matches!(self, Policy::PlanAware)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
