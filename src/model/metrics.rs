//! The metrics of one run: the columns of summary.csv after (scenario, scheduler, seed).

use super::time::Millis;

/// One metric, named exactly as its summary.csv column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Desired,
    Placed,
    Running,
    Infeasible,
    ClaimFailures,
    ClientFailures,
    Reschedules,
    Violations,
    ViolationSeconds,
    RejectedJobs,
    Evals,
    Plans,
    PlanRejections,
    FirstFullS,
    Events,
    Deployments,
    DeploymentFailures,
    TimeToDeployS,
    UnavailableS,
}

impl Metric {
    /// In column order.
    pub const ALL: [Metric; 19] = [
        Metric::Desired,
        Metric::Placed,
        Metric::Running,
        Metric::Infeasible,
        Metric::ClaimFailures,
        Metric::ClientFailures,
        Metric::Reschedules,
        Metric::Violations,
        Metric::ViolationSeconds,
        Metric::RejectedJobs,
        Metric::Evals,
        Metric::Plans,
        Metric::PlanRejections,
        Metric::FirstFullS,
        Metric::Events,
        Metric::Deployments,
        Metric::DeploymentFailures,
        Metric::TimeToDeployS,
        Metric::UnavailableS,
    ];

    /// How many of `ALL` (its first ones) every summary.csv has: the
    /// deployment and availability columns came later, so a summary.csv
    /// written before them is still read (`plansim diff` then reports them
    /// as columns added).
    pub const REQUIRED: usize = 15;

    /// Whether the metric may have no value (never reached: an empty cell).
    pub fn may_be_never(self) -> bool {
        matches!(self, Metric::FirstFullS | Metric::TimeToDeployS)
    }

    /// Whether the metric is simulated seconds (three decimals).
    pub fn is_seconds(self) -> bool {
        matches!(
            self,
            Metric::ViolationSeconds
                | Metric::FirstFullS
                | Metric::TimeToDeployS
                | Metric::UnavailableS
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Desired => "desired",
            Metric::Placed => "placed",
            Metric::Running => "running",
            Metric::Infeasible => "infeasible",
            Metric::ClaimFailures => "claim_failures",
            Metric::ClientFailures => "client_failures",
            Metric::Reschedules => "reschedules",
            Metric::Violations => "violations",
            Metric::ViolationSeconds => "violation_seconds",
            Metric::RejectedJobs => "rejected_jobs",
            Metric::Evals => "evals",
            Metric::Plans => "plans",
            Metric::PlanRejections => "plan_rejections",
            Metric::FirstFullS => "first_full_s",
            Metric::Events => "events",
            Metric::Deployments => "deployments",
            Metric::DeploymentFailures => "deployment_failures",
            Metric::TimeToDeployS => "time_to_deploy_s",
            Metric::UnavailableS => "unavailable_s",
        }
    }

    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|metric| metric.name() == name)
    }
}

/// A metric's value: a count, a span of simulated time, or nothing (never reached).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricValue {
    Count(u64),
    Seconds(Millis),
    Never,
}

impl MetricValue {
    /// The value as a number for comparisons; `None` when it never happened.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            MetricValue::Count(n) => Some(n as f64),
            MetricValue::Seconds(t) => Some(t.as_secs_f64()),
            MetricValue::Never => None,
        }
    }

    /// Reads a value back from its rendered text (the inverse of `render`).
    pub fn parse(metric: Metric, text: &str) -> Option<MetricValue> {
        let seconds = |text: &str| {
            let (whole, fraction) = text.split_once('.')?;
            if fraction.len() != 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let whole: u64 = whole.parse().ok()?;
            let fraction: u64 = fraction.parse().ok()?;
            Some(Millis(whole.checked_mul(1000)?.checked_add(fraction)?))
        };
        if metric.may_be_never() && text.is_empty() {
            Some(MetricValue::Never)
        } else if metric.is_seconds() {
            seconds(text).map(MetricValue::Seconds)
        } else {
            text.parse().ok().map(MetricValue::Count)
        }
    }

    /// The exact text written to summary.csv and shown in tables.
    pub fn render(self) -> String {
        match self {
            MetricValue::Count(n) => n.to_string(),
            MetricValue::Seconds(t) => t.to_string(),
            MetricValue::Never => String::new(),
        }
    }
}

/// Everything one run measures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    pub desired: u64,
    pub placed: u64,
    pub running: u64,
    pub infeasible: u64,
    pub claim_failures: u64,
    pub client_failures: u64,
    pub reschedules: u64,
    pub violations: u64,
    pub violation_time: Millis,
    pub rejected_jobs: u64,
    pub evals: u64,
    pub plans: u64,
    pub plan_rejections: u64,
    pub first_full: Option<Millis>,
    pub events: u64,
    /// Deployments started (an `update_job` that made a new version).
    pub deployments: u64,
    pub deployment_failures: u64,
    /// Mean time from an update to its successful deployment (rounded
    /// down to the millisecond); `None` when no deployment succeeded.
    pub time_to_deploy: Option<Millis>,
    /// Simulated time, summed over groups, with fewer healthy allocations
    /// than desired after the group was first fully healthy.
    pub unavailable_time: Millis,
}

impl Metrics {
    /// Sets one metric; `false` when the value has the wrong kind for it.
    pub fn set(&mut self, metric: Metric, value: MetricValue) -> bool {
        let count = match value {
            MetricValue::Count(n) => Some(n),
            _ => None,
        };
        let slot = match metric {
            Metric::Desired => &mut self.desired,
            Metric::Placed => &mut self.placed,
            Metric::Running => &mut self.running,
            Metric::Infeasible => &mut self.infeasible,
            Metric::ClaimFailures => &mut self.claim_failures,
            Metric::ClientFailures => &mut self.client_failures,
            Metric::Reschedules => &mut self.reschedules,
            Metric::Violations => &mut self.violations,
            Metric::RejectedJobs => &mut self.rejected_jobs,
            Metric::Evals => &mut self.evals,
            Metric::Plans => &mut self.plans,
            Metric::PlanRejections => &mut self.plan_rejections,
            Metric::Events => &mut self.events,
            Metric::Deployments => &mut self.deployments,
            Metric::DeploymentFailures => &mut self.deployment_failures,
            Metric::UnavailableS => {
                let MetricValue::Seconds(t) = value else {
                    return false;
                };
                self.unavailable_time = t;
                return true;
            }
            Metric::TimeToDeployS => {
                self.time_to_deploy = match value {
                    MetricValue::Seconds(t) => Some(t),
                    MetricValue::Never => None,
                    MetricValue::Count(_) => return false,
                };
                return true;
            }
            Metric::ViolationSeconds => {
                let MetricValue::Seconds(t) = value else {
                    return false;
                };
                self.violation_time = t;
                return true;
            }
            Metric::FirstFullS => {
                self.first_full = match value {
                    MetricValue::Seconds(t) => Some(t),
                    MetricValue::Never => None,
                    MetricValue::Count(_) => return false,
                };
                return true;
            }
        };
        match count {
            Some(n) => {
                *slot = n;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, metric: Metric) -> MetricValue {
        use MetricValue::Count;
        match metric {
            Metric::Desired => Count(self.desired),
            Metric::Placed => Count(self.placed),
            Metric::Running => Count(self.running),
            Metric::Infeasible => Count(self.infeasible),
            Metric::ClaimFailures => Count(self.claim_failures),
            Metric::ClientFailures => Count(self.client_failures),
            Metric::Reschedules => Count(self.reschedules),
            Metric::Violations => Count(self.violations),
            Metric::ViolationSeconds => MetricValue::Seconds(self.violation_time),
            Metric::RejectedJobs => Count(self.rejected_jobs),
            Metric::Evals => Count(self.evals),
            Metric::Plans => Count(self.plans),
            Metric::PlanRejections => Count(self.plan_rejections),
            Metric::FirstFullS => self
                .first_full
                .map_or(MetricValue::Never, MetricValue::Seconds),
            Metric::Events => Count(self.events),
            Metric::Deployments => Count(self.deployments),
            Metric::DeploymentFailures => Count(self.deployment_failures),
            Metric::TimeToDeployS => self
                .time_to_deploy
                .map_or(MetricValue::Never, MetricValue::Seconds),
            Metric::UnavailableS => MetricValue::Seconds(self.unavailable_time),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_round_trips_through_its_text() {
        let metrics = Metrics {
            desired: 1,
            placed: 2,
            running: 3,
            infeasible: 4,
            claim_failures: 5,
            client_failures: 6,
            reschedules: 7,
            violations: 8,
            violation_time: Millis(9_010),
            rejected_jobs: 10,
            evals: 11,
            plans: 12,
            plan_rejections: 13,
            first_full: Some(Millis(14_001)),
            events: 15,
            deployments: 16,
            deployment_failures: 17,
            time_to_deploy: Some(Millis(18_002)),
            unavailable_time: Millis(19_003),
        };
        let mut back = Metrics::default();
        for metric in Metric::ALL {
            let text = metrics.get(metric).render();
            let value = MetricValue::parse(metric, &text).unwrap();
            assert!(back.set(metric, value), "{}", metric.name());
        }
        assert_eq!(back, metrics);
        assert_eq!(
            MetricValue::parse(Metric::FirstFullS, ""),
            Some(MetricValue::Never)
        );
        assert_eq!(
            MetricValue::parse(Metric::TimeToDeployS, ""),
            Some(MetricValue::Never)
        );
        assert_eq!(MetricValue::parse(Metric::UnavailableS, ""), None);
        assert_eq!(MetricValue::parse(Metric::ViolationSeconds, "1.5"), None);
        assert_eq!(MetricValue::parse(Metric::Events, "-1"), None);
    }
}
