//! The per-run event log written by `--trace`.

use crate::model::scenario::Scenario;
use crate::sim::trace::TraceRecord;

pub const TRACE_COLUMNS: [&str; 8] = [
    "time_s", "event", "job", "group", "alloc", "node", "volume", "detail",
];

/// Renders a trace as CSV, turning ids into the names the scenario uses.
/// Allocations are named as Nomad names them: `<job>.<group>[<index>]`.
pub fn render(scenario: &Scenario, records: &[TraceRecord]) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer
        .write_record(TRACE_COLUMNS)
        .expect("writing to memory");
    for record in records {
        let job = record
            .job
            .map(|j| scenario.jobs[j.index()].name.as_str())
            .unwrap_or("");
        let group = record
            .group
            .map(|g| {
                scenario.jobs[g.job.index()].groups[g.group_index()]
                    .name
                    .as_str()
            })
            .unwrap_or("");
        let alloc = match record.alloc_index {
            Some(index) => format!("{job}.{group}[{index}]"),
            None => String::new(),
        };
        let node = record
            .node
            .map(|n| scenario.nodes[n.index()].name.as_str())
            .unwrap_or("");
        let volume = record
            .volume
            .map(|v| scenario.volumes[v.index()].name.as_str())
            .unwrap_or("");
        writer
            .write_record(
                [
                    record.time.to_string().as_str(),
                    record.kind.name(),
                    job,
                    group,
                    alloc.as_str(),
                    node,
                    volume,
                    record.detail.as_str(),
                ]
                // Names are data: never a spreadsheet formula.
                .map(|cell| crate::names::csv_cell(cell).into_owned()),
            )
            .expect("writing to memory");
    }
    writer.into_inner().expect("flushing to memory")
}

/// `trace-<scenario>-<scheduler>-<seed>.csv`
pub fn file_name(scenario: &str, policy: &str, seed: u64) -> String {
    format!(
        "trace-{}-{}-{seed}.csv",
        crate::names::slug(scenario),
        policy
    )
}
