//! The scheduling policies plansim compares.

use std::fmt;

use super::release::{Behaviour, NOMAD_1_2_6, NOMAD_2_0_5};

/// Where, and how strictly, a volume's access mode is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Nomad 1.2.6 (release table row 1.2.6): the scheduler sees only
    /// claims clients already made.
    Naive,
    /// Current Nomad (row 2.0.5): as naive, plus a registration check, exact
    /// server claim checks and a client that retries a refused claim.
    Validate,
    /// Nomad 2.0.5 plus the proposed fix (row 2.0.5 with
    /// `Behaviour::with_plan_aware_fix`): every live allocation holds its
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

    /// What the policy does: a row of the release table, with or without
    /// the proposed fix. The only place a policy is mapped to behaviour.
    pub fn behaviour(self) -> Behaviour {
        match self {
            Policy::Naive => Behaviour::of(&NOMAD_1_2_6),
            Policy::Validate => Behaviour::of(&NOMAD_2_0_5),
            Policy::PlanAware => Behaviour::of(&NOMAD_2_0_5).with_plan_aware_fix(),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each policy resolves to the row its doc names.
    #[test]
    fn policies_resolve_to_their_rows() {
        let rows: Vec<(&str, bool)> = Policy::ALL
            .iter()
            .map(|p| {
                (
                    p.behaviour().release.version,
                    p.behaviour().plan_aware_claims,
                )
            })
            .collect();
        assert_eq!(rows, [("1.2.6", false), ("2.0.5", false), ("2.0.5", true)]);
        assert!(Policy::Validate.behaviour().validates_registration);
        assert!(!Policy::Naive.behaviour().validates_registration);
        assert!(!Policy::PlanAware.behaviour().validates_registration);
        for policy in Policy::ALL {
            assert_eq!(Policy::from_name(policy.name()), Some(policy));
        }
    }
}
