//! The outputs of a finished sweep, as bytes: runs.csv, aggregate.csv,
//! aggregate-long.csv, paired.csv, paired-pooled.csv, one SVG chart per
//! (varied parameter, charted metric) and an index.html that shows them. They depend only on the experiment and the
//! set of run results, never on the order runs finished in.

use std::fmt::Write;

use rayon::prelude::*;

use crate::experiment::aggregate::{self, MAIN_METRICS, PairedRow, RunTable};
use crate::experiment::grid::coord;
use crate::experiment::plot;
use crate::experiment::spec::Experiment;
use crate::experiment::stats::{Summary, fmt3};
use crate::model::metrics::{Metric, Metrics};
use crate::report::summary;

/// A finished sweep's outputs (but runs.csv).
pub struct SweepOutputs {
    /// Every file: (path relative to the output directory, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// The paired-difference lines printed at the end (also in index.html).
    pub headlines: Vec<String>,
}

/// Renders every output of a sweep from its runs (in run order) but
/// runs.csv (see [`runs_csv`]: the one output that grows with the runs, so
/// that a caller can render and write it beside these).
pub fn render_summaries(experiment: &Experiment, runs: &[Metrics]) -> Result<SweepOutputs, String> {
    let table = RunTable::new(experiment, runs);
    let aggregates = aggregate::aggregate(&table);
    let paired = aggregate::paired(&table);
    let mut files = vec![
        (
            "aggregate.csv".to_string(),
            aggregate_csv(experiment, &aggregates),
        ),
        (
            "aggregate-long.csv".to_string(),
            aggregate_long_csv(experiment, &aggregates),
        ),
        ("paired.csv".to_string(), paired_csv(experiment, &paired)),
        (
            "paired-pooled.csv".to_string(),
            paired_pooled_csv(experiment, &paired),
        ),
    ];
    // One chart per (vary key, charted metric), drawn on the current rayon pool.
    let chart_keys: Vec<(usize, Metric)> = (0..experiment.vary.len())
        .flat_map(|key| experiment.charted.iter().map(move |&metric| (key, metric)))
        .collect();
    let drawn: Vec<(String, String, String)> = chart_keys
        .into_par_iter()
        .map(|(key_index, metric)| {
            let key = &experiment.vary[key_index];
            let labels: Vec<String> = key
                .values
                .iter()
                .map(crate::experiment::path::render_value)
                .collect();
            // Numbers are placed by value (3, 5, 8 spaced 2 then 3); anything
            // else (booleans, names, a mix) one slot per value, in file order.
            let numbers: Option<Vec<f64>> =
                key.values.iter().map(serde_json::Value::as_f64).collect();
            let series = aggregate::marginal(&table, key_index, metric);
            let title = format!("{} vs {}", metric.name(), key.key);
            let svg = plot::line_chart(
                &title,
                &key.key,
                &format!("{} (mean, 95% CI)", metric.name()),
                &labels,
                numbers.as_deref(),
                &series,
            )?;
            let name = format!(
                "plots/{}-{}--{}.svg",
                key_index + 1,
                crate::names::key_slug(&key.key),
                metric.name()
            );
            Ok((name, title, svg))
        })
        .collect::<Result<_, String>>()?;
    let mut charts = Vec::new();
    for (name, title, svg) in drawn {
        charts.push((name.clone(), title));
        files.push((name, svg.into_bytes()));
    }
    let headlines = headlines(experiment, &paired);
    files.push((
        "index.html".to_string(),
        index_html(experiment, &aggregates, &headlines, &charts).into_bytes(),
    ));
    Ok(SweepOutputs { files, headlines })
}

fn csv_bytes(rows: impl IntoIterator<Item = Vec<String>>) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for row in rows {
        // Names and varied values are data: never a spreadsheet formula.
        writer
            .write_record(
                row.iter()
                    .map(|cell| crate::names::csv_cell(cell).into_owned()),
            )
            .expect("writing to memory");
    }
    writer.into_inner().expect("flushing to memory")
}

fn vary_header(experiment: &Experiment) -> Vec<String> {
    experiment.vary.iter().map(|k| k.key.clone()).collect()
}

/// runs.csv: the summary.csv columns, then one column per vary key.
/// Written without a `String` per cell: the cells that are names (the
/// scenario, the policy, the version, the varied values) are rendered once
/// per grid point and policy, the numbers straight into the bytes, in
/// blocks on the current rayon pool; the file is the blocks one after
/// another.
pub fn runs_csv(experiment: &Experiment, runs: &[Metrics]) -> Vec<Vec<u8>> {
    use crate::report::csv_bytes::{cells, par_blocks, push_metrics, push_u64};
    let header: Vec<String> = summary::header()
        .into_iter()
        .map(str::to_string)
        .chain(vary_header(experiment))
        .collect();
    let policies = experiment.policies.len();
    // Per grid point and policy, the cells before the seed; per grid point,
    // the cells after the metrics.
    let heads: Vec<Vec<u8>> = (0..experiment.points.len() * policies)
        .map(|slot| {
            let point = &experiment.points[slot / policies].scenario;
            let mut head = cells([
                point.name.as_str(),
                experiment.policies[slot % policies].name(),
            ]);
            head.push(b',');
            head
        })
        .collect();
    let tails: Vec<Vec<u8>> = (0..experiment.points.len())
        .map(|point| {
            let values = experiment.point_values(point);
            let mut tail = vec![b','];
            tail.extend(cells(
                std::iter::once(summary::VERSION).chain(values.iter().map(String::as_str)),
            ));
            tail.push(b'\n');
            tail
        })
        .collect();
    par_blocks(
        csv_bytes(std::iter::once(header)),
        runs,
        |out, index, metrics| {
            let c = coord(experiment, index);
            // Runs go points, then policies, then seeds.
            out.extend_from_slice(&heads[index / experiment.seeds.len()]);
            push_u64(out, c.seed);
            out.push(b',');
            push_metrics(out, metrics);
            out.extend_from_slice(&tails[c.point]);
        },
    )
}

const STATS: [&str; 6] = ["mean", "p50", "p95", "min", "max", "ci95"];

fn summary_fields(summary: Option<&Summary>) -> Vec<String> {
    match summary {
        None => vec![String::new(); STATS.len()],
        Some(s) => vec![
            fmt3(s.mean),
            fmt3(s.p50),
            fmt3(s.p95),
            fmt3(s.min),
            fmt3(s.max),
            s.ci95.map(fmt3).unwrap_or_default(),
        ],
    }
}

/// aggregate.csv: per grid point and policy, each metric's mean, p50, p95,
/// min, max and 95% CI half-width (`first_full_s` and `time_to_deploy_s`
/// over the runs that reached them, counted in `<metric>_reached`).
pub fn aggregate_csv(experiment: &Experiment, rows: &[aggregate::AggregateRow]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["scenario".into(), "scheduler".into()];
    header.extend(vary_header(experiment));
    header.push("runs".into());
    for metric in Metric::ALL {
        header.extend(STATS.iter().map(|stat| format!("{}_{stat}", metric.name())));
        if metric.may_be_never() {
            header.push(format!("{}_reached", metric.name()));
        }
    }
    let body = rows.iter().map(|row| {
        let mut fields = vec![
            experiment.points[row.point].scenario.name.clone(),
            row.policy.name().to_string(),
        ];
        fields.extend(experiment.point_values(row.point));
        fields.push(row.runs.to_string());
        for (metric, (summary, reached)) in Metric::ALL.iter().zip(&row.metrics) {
            fields.extend(summary_fields(summary.as_ref()));
            if metric.may_be_never() {
                fields.push(reached.to_string());
            }
        }
        fields
    });
    csv_bytes(std::iter::once(header).chain(body))
}

/// aggregate-long.csv: aggregate.csv in long form, one row per (grid
/// point, policy, metric, statistic), for tools that filter rather than
/// pick columns. `point` numbers the grid points from 0 in grid order;
/// `first_full_s` adds the statistic `reached`. An empty value is a
/// statistic that does not exist (no run reached the metric; a CI of one run).
pub fn aggregate_long_csv(experiment: &Experiment, rows: &[aggregate::AggregateRow]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["scenario".into(), "point".into()];
    header.extend(vary_header(experiment));
    header.extend(["scheduler", "runs", "metric", "stat", "value"].map(String::from));
    let body = rows.iter().flat_map(|row| {
        let mut key = vec![
            experiment.points[row.point].scenario.name.clone(),
            row.point.to_string(),
        ];
        key.extend(experiment.point_values(row.point));
        key.extend([row.policy.name().to_string(), row.runs.to_string()]);
        Metric::ALL
            .iter()
            .zip(&row.metrics)
            .flat_map(move |(metric, (summary, reached))| {
                let mut stats: Vec<(&str, String)> = STATS
                    .iter()
                    .copied()
                    .zip(summary_fields(summary.as_ref()))
                    .collect();
                if metric.may_be_never() {
                    stats.push(("reached", reached.to_string()));
                }
                let key = key.clone();
                stats.into_iter().map(move |(stat, value)| {
                    let mut fields = key.clone();
                    fields.extend([metric.name().to_string(), stat.to_string(), value]);
                    fields
                })
            })
    });
    csv_bytes(std::iter::once(header).chain(body))
}

/// The columns after the point's identity in paired.csv and paired-pooled.csv.
const PAIRED_COLUMNS: [&str; 8] = [
    "baseline",
    "candidate",
    "metric",
    "pairs",
    "mean_difference",
    "ci95",
    "min",
    "max",
];

fn paired_fields(row: &PairedRow) -> [String; 8] {
    let (pairs, mean, ci95, min, max) = match &row.difference {
        None => (
            "0".to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ),
        Some(s) => (
            s.n.to_string(),
            fmt3(s.mean),
            s.ci95.map(fmt3).unwrap_or_default(),
            fmt3(s.min),
            fmt3(s.max),
        ),
    };
    [
        row.baseline.name().to_string(),
        row.candidate.name().to_string(),
        row.metric.name().to_string(),
        pairs,
        mean,
        ci95,
        min,
        max,
    ]
}

fn experiment_scenario(experiment: &Experiment) -> String {
    experiment
        .points
        .first()
        .map(|p| p.scenario.name.clone())
        .unwrap_or_default()
}

/// paired.csv: `candidate - baseline` per grid point, on the same seeds.
/// The vary columns hold only the grid's values, so typed readers keep
/// them numeric; the pooled rows are in paired-pooled.csv.
pub fn paired_csv(experiment: &Experiment, rows: &[PairedRow]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["scenario".into()];
    header.extend(vary_header(experiment));
    header.extend(PAIRED_COLUMNS.map(String::from));
    let scenario = experiment_scenario(experiment);
    let body = rows.iter().filter_map(|row| {
        let mut fields = vec![scenario.clone()];
        fields.extend(experiment.point_values(row.point?));
        fields.extend(paired_fields(row));
        Some(fields)
    });
    csv_bytes(std::iter::once(header).chain(body))
}

/// paired-pooled.csv: the same differences pooled over every grid point.
pub fn paired_pooled_csv(experiment: &Experiment, rows: &[PairedRow]) -> Vec<u8> {
    let mut header: Vec<String> = vec!["scenario".into()];
    header.extend(PAIRED_COLUMNS.map(String::from));
    let scenario = experiment_scenario(experiment);
    let body = rows.iter().filter(|row| row.point.is_none()).map(|row| {
        let mut fields = vec![scenario.clone()];
        fields.extend(paired_fields(row));
        fields
    });
    csv_bytes(std::iter::once(header).chain(body))
}

/// One line per policy pair and main metric, over every run of the
/// experiment: "plan-aware vs naive: claim_failures -7.000 ± 0.000 per run".
pub fn headlines(experiment: &Experiment, rows: &[PairedRow]) -> Vec<String> {
    let pooled = experiment.points.len() > 1;
    rows.iter()
        .filter(|row| MAIN_METRICS.contains(&row.metric) && (row.point.is_none() == pooled))
        .filter_map(|row| {
            let s = row.difference.as_ref()?;
            let ci = s
                .ci95
                .map(|ci| format!(" ± {}", fmt3(ci)))
                .unwrap_or_default();
            Some(format!(
                "{} vs {}: {} {}{ci} per run ({} paired runs, 95% CI)",
                row.candidate,
                row.baseline,
                row.metric.name(),
                signed(s.mean),
                s.n
            ))
        })
        .collect()
}

fn signed(value: f64) -> String {
    let text = fmt3(value);
    if text.starts_with('-') || text == "0.000" {
        text
    } else {
        format!("+{text}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn index_html(
    experiment: &Experiment,
    rows: &[aggregate::AggregateRow],
    headlines: &[String],
    charts: &[(String, String)],
) -> String {
    let mut html = String::new();
    let title = escape(&experiment.name);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n\
         <style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}th{{background:#eee}}img{{max-width:720px}}</style>\n\
         </head>\n<body>\n<h1>{title}</h1>\n"
    );
    if !experiment.description.is_empty() {
        let _ = writeln!(html, "<p>{}</p>", escape(&experiment.description));
    }
    let policies: Vec<&str> = experiment.policies.iter().map(|p| p.name()).collect();
    let _ = writeln!(
        html,
        "<p>{} runs: {} grid points x {} policies ({}) x {} seeds. Files: \
         <a href=\"runs.csv\">runs.csv</a>, <a href=\"aggregate.csv\">aggregate.csv</a>, \
         <a href=\"aggregate-long.csv\">aggregate-long.csv</a>, <a href=\"paired.csv\">paired.csv</a>, \
         <a href=\"paired-pooled.csv\">paired-pooled.csv</a>.</p>",
        experiment.runs(),
        experiment.points.len(),
        policies.len(),
        policies.join(", "),
        experiment.seeds.len()
    );
    if !headlines.is_empty() {
        html.push_str("<h2>Paired differences</h2>\n<ul>\n");
        for line in headlines {
            let _ = writeln!(html, "<li>{}</li>", escape(line));
        }
        html.push_str("</ul>\n");
    }
    if !charts.is_empty() {
        html.push_str("<h2>Charts</h2>\n");
        for (path, title) in charts {
            let _ = writeln!(
                html,
                "<figure><img src=\"{}\" alt=\"{}\"></figure>",
                escape(path),
                escape(title)
            );
        }
    }
    html.push_str(
        "<h2>Mean per grid point (± 95% CI half-width)</h2>\n<table>\n<tr><th>scheduler</th>",
    );
    for key in &experiment.vary {
        let _ = write!(html, "<th>{}</th>", escape(&key.key));
    }
    for metric in MAIN_METRICS {
        let _ = write!(html, "<th>{}</th>", metric.name());
    }
    html.push_str("</tr>\n");
    for row in rows {
        let _ = write!(html, "<tr><td>{}</td>", row.policy);
        for value in experiment.point_values(row.point) {
            let _ = write!(html, "<td>{}</td>", escape(&value));
        }
        for metric in MAIN_METRICS {
            let slot = Metric::ALL
                .iter()
                .position(|&m| m == metric)
                .expect("main metric is a metric");
            let cell = match &row.metrics[slot].0 {
                None => "-".to_string(),
                Some(s) => match s.ci95 {
                    Some(ci) => format!("{} ± {}", fmt3(s.mean), fmt3(ci)),
                    None => fmt3(s.mean),
                },
            };
            let _ = write!(html, "<td>{cell}</td>");
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::spec::{GridPoint, VaryKey};
    use crate::model::policy::Policy;
    use crate::model::time::Millis;
    use crate::report::summary::SummaryRow;

    /// runs.csv as the csv crate writes it, one `String` per cell.
    fn reference_runs_csv(experiment: &Experiment, runs: &[Metrics]) -> Vec<u8> {
        let header: Vec<String> = summary::header()
            .into_iter()
            .map(str::to_string)
            .chain(vary_header(experiment))
            .collect();
        let rows = runs.iter().enumerate().map(|(index, metrics)| {
            let c = coord(experiment, index);
            let row = SummaryRow {
                scenario: experiment.points[c.point].scenario.name.clone(),
                policy: c.policy,
                seed: c.seed,
                metrics: metrics.clone(),
            };
            let mut fields = summary::fields(&row);
            fields.extend(experiment.point_values(c.point));
            fields
        });
        csv_bytes(std::iter::once(header).chain(rows))
    }

    #[test]
    fn runs_csv_is_the_csv_crates_bytes() {
        let yaml = "name: \"odd, \\\"name\\\"\"\nnodes:\n  - {id: n}\njobs:\n  - {id: j, groups: [{name: g, tasks: [{name: t}]}]}\n";
        let mut scenario = crate::scenario::load_str(yaml, "odd.yaml", "odd").unwrap();
        let values = vec![
            serde_json::json!("=cmd"),
            serde_json::json!(""),
            serde_json::json!("a,b"),
            serde_json::json!(-3),
            serde_json::json!(true),
        ];
        let mut points = Vec::new();
        for choice in 0..values.len() {
            scenario.name = format!("{} {choice}", scenario.name);
            points.push(GridPoint {
                choice: vec![choice],
                scenario: scenario.clone(),
            });
        }
        let experiment = Experiment {
            name: "e".into(),
            description: String::new(),
            experiment_text: String::new(),
            scenario_file_name: "odd.yaml".into(),
            scenario_text: String::new(),
            seeds: vec![3, 1, u64::MAX],
            policies: vec![Policy::Naive, Policy::PlanAware],
            vary: vec![VaryKey {
                key: "x,\"y\"".into(),
                path: Vec::new(),
                values,
            }],
            points,
            warnings: Vec::new(),
            charted: Vec::new(),
        };
        let runs: Vec<Metrics> = (0..experiment.runs() as u64)
            .map(|i| Metrics {
                placed: i,
                violation_time: Millis(i * 37),
                first_full: (i % 3 != 0).then_some(Millis(i * 1001)),
                events: i * 1_000_003,
                ..Metrics::default()
            })
            .collect();
        assert_eq!(
            String::from_utf8(runs_csv(&experiment, &runs).concat()).unwrap(),
            String::from_utf8(reference_runs_csv(&experiment, &runs)).unwrap()
        );
    }
}
