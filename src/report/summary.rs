//! summary.csv: one row per (scenario, scheduler, seed), the contract's
//! columns in order, deterministic bytes.

use crate::model::metrics::{Metric, Metrics};
use crate::model::policy::Policy;

/// The result of one run, as a summary row.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    pub scenario: String,
    pub policy: Policy,
    pub seed: u64,
    pub metrics: Metrics,
}

/// The key columns that identify a row.
pub const KEY_COLUMNS: [&str; 3] = ["scenario", "scheduler", "seed"];

/// Sorts rows as the contract says: scenario, then policy order, then seed.
pub fn sort_rows(rows: &mut [SummaryRow]) {
    rows.sort_by(|a, b| {
        (a.scenario.as_str(), a.policy, a.seed).cmp(&(b.scenario.as_str(), b.policy, b.seed))
    });
}

/// Provenance column after the contract's columns: the plansim version that
/// produced the row. `plansim diff` reports but never counts it as a change.
pub const VERSION_COLUMN: &str = "plansim_version";

/// The version written in every row.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The header: key columns, every metric, then the version.
pub fn header() -> Vec<&'static str> {
    KEY_COLUMNS
        .iter()
        .copied()
        .chain(Metric::ALL.iter().map(|m| m.name()))
        .chain([VERSION_COLUMN])
        .collect()
}

/// One row's fields, in header order.
pub fn fields(row: &SummaryRow) -> Vec<String> {
    let mut record = vec![
        row.scenario.clone(),
        row.policy.name().to_string(),
        row.seed.to_string(),
    ];
    record.extend(Metric::ALL.iter().map(|&m| row.metrics.get(m).render()));
    record.push(VERSION.to_string());
    record
}

/// Renders rows (already sorted) as CSV text with LF line endings.
pub fn render(rows: &[SummaryRow]) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer.write_record(header()).expect("writing to memory");
    for row in rows {
        // Names are data: a spreadsheet must not evaluate one as a formula.
        let cells = fields(row);
        writer
            .write_record(
                cells
                    .iter()
                    .map(|cell| crate::names::csv_cell(cell).into_owned()),
            )
            .expect("writing to memory");
    }
    writer.into_inner().expect("flushing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::Millis;

    #[test]
    fn header_is_the_contract() {
        assert_eq!(
            header().join(","),
            "scenario,scheduler,seed,desired,placed,running,infeasible,claim_failures,client_failures,\
reschedules,violations,violation_seconds,rejected_jobs,evals,plans,plan_rejections,first_full_s,events,\
deployments,deployment_failures,time_to_deploy_s,unavailable_s,plansim_version"
        );
    }

    #[test]
    fn rows_sort_by_scenario_policy_seed_and_render_exactly() {
        let row = |scenario: &str, policy, seed| SummaryRow {
            scenario: scenario.to_string(),
            policy,
            seed,
            metrics: Metrics {
                violation_time: Millis(1_500),
                first_full: (seed == 0).then_some(Millis(2_010)),
                ..Metrics::default()
            },
        };
        let mut rows = vec![
            row("b", Policy::Naive, 0),
            row("a", Policy::PlanAware, 0),
            row("a", Policy::Naive, 1),
            row("a", Policy::Validate, 0),
            row("a", Policy::Naive, 0),
        ];
        sort_rows(&mut rows);
        let keys: Vec<_> = rows
            .iter()
            .map(|r| (r.scenario.as_str(), r.policy.name(), r.seed))
            .collect();
        assert_eq!(
            keys,
            [
                ("a", "naive", 0),
                ("a", "naive", 1),
                ("a", "validate", 0),
                ("a", "plan-aware", 0),
                ("b", "naive", 0)
            ]
        );
        let text = String::from_utf8(render(&rows[..2])).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[1],
            format!("a,naive,0,0,0,0,0,0,0,0,0,1.500,0,0,0,0,2.010,0,0,0,,0.000,{VERSION}")
        );
        assert_eq!(
            lines[2],
            format!("a,naive,1,0,0,0,0,0,0,0,0,1.500,0,0,0,0,,0,0,0,,0.000,{VERSION}")
        );
        assert_eq!(lines[3], "");
        assert!(!text.contains('\r'));
    }
}
