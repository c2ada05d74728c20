//! The report's pages: one per scenario (verdicts, timelines, metrics,
//! placement failures, the explain narrative) and the index.

use std::fmt::Write;

use super::html::esc;
use super::timeline_svg::timeline_svg;
use crate::explain::{self, Explanation, RunView};
use crate::model::metrics::Metric;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::report::table::{self, Verdict};
use crate::run::RunResult;

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1040px;color:#1d2330;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:3px}h3{font-size:15px;margin:18px 0 4px}
.desc{color:#424b5c;max-width:900px}.meta{color:#667085;font-size:13px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:3px 10px;border-bottom:1px solid #e5e8ee;text-align:right}th:first-child,td:first-child{text-align:left}
tr.differs td{background:#fff4d6;font-weight:600}tr.differs td:first-child::before{content:'* '}
.verdict{margin:2px 0}.verdict .bad{color:#b42318;font-weight:600}.verdict .ok{color:#1a7f37;font-weight:600}
pre{background:#f6f8fa;border:1px solid #e5e8ee;padding:10px;overflow-x:auto;font-size:12.5px;line-height:1.4;white-space:pre-wrap}
svg.timeline{display:block;background:#fff;border:1px solid #e5e8ee;margin:4px 0 2px}
svg text{font:11px system-ui,Helvetica,Arial,sans-serif;fill:#1d2330}
.lane-label{text-anchor:end}.volume-label{fill:#5b3d99}.lane-bg{fill:#f4f6f9}.volume-bg{fill:#f7f3fc}
.pending{fill:#f2c14e}.claiming{fill:#5b8def}.running{fill:#3aa655}.failed{fill:#d92d20}.complete{fill:#667085}.lost{fill:#f79009}.stopped{fill:#344054}
.claim-read{fill:#a48ad8}.claim-write{fill:#5b2fb0}.releasing{opacity:.45}
.bar-label{fill:#fff;font-size:10px}.bar-label.light{fill:#fff}
.refusal{fill:#d92d20;opacity:.8}.overflow{text-anchor:end;font-size:10px;fill:#fff;font-weight:600}
.violation{fill:#d92d20;opacity:.13}.violation-lane{fill:none;stroke:#d92d20;stroke-width:1.5}.violation-label{fill:#b42318;font-weight:600}
.operator-event line{stroke:#1d2330;stroke-dasharray:4 3;stroke-width:1.2}.operator-event text{font-size:10.5px}
.divergence line{stroke:#c11574;stroke-width:2}.divergence text{fill:#c11574;font-weight:700}
.axis line{stroke:#98a2b3}.axis line.grid{stroke:#e5e8ee}.axis text{text-anchor:middle;fill:#667085}
.agg-pending{fill:#f2c14e}.agg-running{fill:#3aa655}
.legend span{display:inline-block;margin-right:14px;font-size:12.5px}.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:baseline}
.note{color:#667085;font-size:12.5px;margin:2px 0 10px}figure{margin:10px 0 18px}figcaption{font-weight:700;font-size:15px}";

const LEGEND: &str = "<p class=\"legend\"><span><i style=\"background:#f2c14e\"></i>pending</span><span><i style=\"background:#5b8def\"></i>claiming</span><span><i style=\"background:#3aa655\"></i>running</span><span><i style=\"background:#d92d20\"></i>failed</span><span><i style=\"background:#667085\"></i>complete</span><span><i style=\"background:#f79009\"></i>lost</span><span><i style=\"background:#344054\"></i>stopped</span><span><i style=\"background:#a48ad8\"></i>read claim</span><span><i style=\"background:#5b2fb0\"></i>write claim</span><span><i style=\"background:#5b2fb0;opacity:.45\"></i>claim being released</span><span><i style=\"background:rgba(217,45,32,.25)\"></i>violation window</span><span><i style=\"border-left:2px dashed #1d2330;width:0\"></i>operator event</span><span><i style=\"background:#c11574;width:2px\"></i>first divergence</span></p>";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(title)
    )
}

/// The two policies the page explains: naive vs plan-aware when both ran,
/// else the first and last policy that ran.
fn explained_pair(results: &[RunResult]) -> Option<(Policy, Policy)> {
    let mut policies: Vec<Policy> = results.iter().map(|r| r.row.policy).collect();
    policies.dedup();
    if policies.contains(&Policy::Naive) && policies.contains(&Policy::PlanAware) {
        return Some((Policy::Naive, Policy::PlanAware));
    }
    match policies.as_slice() {
        [first, .., last] => Some((*first, *last)),
        _ => None,
    }
}

/// The explanation a page shows, for the first seed that ran.
pub fn page_explanation(scenario: &Scenario, results: &[RunResult]) -> Option<Explanation> {
    let (baseline, candidate) = explained_pair(results)?;
    let seed = results.first()?.row.seed;
    let run = |policy: Policy| {
        results
            .iter()
            .find(|r| r.row.policy == policy && r.row.seed == seed)
    };
    let (b, c) = (run(baseline)?, run(candidate)?);
    Some(explain::explain_runs(
        scenario,
        seed,
        RunView {
            policy: baseline,
            trace: b.trace.as_deref()?,
            metrics: &b.row.metrics,
        },
        RunView {
            policy: candidate,
            trace: c.trace.as_deref()?,
            metrics: &c.row.metrics,
        },
    ))
}

/// One scenario's page. `results` are its runs (policies, then seeds),
/// traced; the timelines show the first seed.
pub fn scenario_page(scenario: &Scenario, results: &[RunResult]) -> String {
    let mut html = head(&format!("plansim: {}", scenario.name));
    let explanation = page_explanation(scenario, results);
    let divergence = explanation
        .as_ref()
        .and_then(|e| e.divergence.as_ref())
        .map(|d| d.at);
    let seed = results.first().map_or(scenario.seed, |r| r.row.seed);
    let mut seeds: Vec<u64> = results.iter().map(|r| r.row.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let seed_text = if seeds.len() > 1 {
        format!(
            "{} seeds; timelines and explanation: seed {seed}",
            seeds.len()
        )
    } else {
        format!("seed {seed}")
    };
    let _ = writeln!(
        html,
        "<p class=\"meta\"><a href=\"index.html\">all scenarios</a></p><h1>{}</h1><p class=\"desc\">{}</p><p class=\"meta\">{seed_text} · horizon {} s · {} node(s), {} volume(s), {} job(s)</p>",
        esc(&scenario.name),
        esc(&scenario.description),
        scenario.horizon,
        scenario.nodes.len(),
        scenario.volumes.len(),
        scenario.jobs.len()
    );
    html.push_str("<section class=\"verdicts\">");
    for v in table::verdicts(results) {
        html.push_str(&verdict_html(&v));
    }
    html.push_str("</section>\n<h2>Timeline</h2>\n");
    html.push_str(LEGEND);
    let _ = writeln!(
        html,
        "<p class=\"note\">Time is compressed: each interval between ticks has the same width. Hover a bar for its times.{}</p>",
        match &explanation {
            Some(e) if e.divergence.is_some() => format!(
                " The magenta line marks where {} and {} first decide differently.",
                e.baseline, e.candidate
            ),
            _ => String::new(),
        }
    );
    let explained: Vec<String> = explanation
        .iter()
        .flat_map(|e| [e.baseline.clone(), e.candidate.clone()])
        .collect();
    for result in results.iter().filter(|r| r.row.seed == seed) {
        let policy = result.row.policy;
        let Some(trace) = &result.trace else { continue };
        let mark = divergence.filter(|_| explained.iter().any(|p| p == policy.name()));
        let _ = writeln!(
            html,
            "<figure class=\"policy\" id=\"policy-{}\"><figcaption>{}</figcaption>{}</figure>",
            policy.name(),
            policy.name(),
            timeline_svg(scenario, policy, trace, mark)
        );
    }
    html.push_str(&metrics_html(results));
    html.push_str(&failures_html(scenario, results));
    html.push_str("<h2>Why they differ</h2>\n");
    match &explanation {
        Some(e) => {
            let _ = writeln!(
                html,
                "<pre class=\"narrative\">{}</pre>",
                esc(&explain::render_text(e))
            );
        }
        None => html.push_str("<p>Only one policy ran: nothing to compare.</p>\n"),
    }
    html.push_str("</body></html>\n");
    html
}

fn verdict_html(v: &Verdict) -> String {
    let text = v.text();
    let class = if text == "ok" { "ok" } else { "bad" };
    format!(
        "<p class=\"verdict\"><b>{}</b>: <span class=\"{class}\">{}</span></p>",
        esc(&v.policy),
        esc(&text)
    )
}

fn metrics_html(results: &[RunResult]) -> String {
    let mut policies: Vec<Policy> = results.iter().map(|r| r.row.policy).collect();
    policies.dedup();
    let mut html = String::from("<h2>Metrics</h2>\n<table class=\"metrics\"><tr><th>metric</th>");
    for p in &policies {
        let _ = write!(html, "<th>{}</th>", p.name());
    }
    html.push_str("</tr>");
    for metric in Metric::ALL {
        let cells: Vec<String> = policies
            .iter()
            .map(|&p| {
                table::cell(
                    results
                        .iter()
                        .filter(|r| r.row.policy == p)
                        .map(|r| r.row.metrics.get(metric)),
                )
            })
            .collect();
        let differs = cells.windows(2).any(|w| w[0] != w[1]);
        let _ = write!(
            html,
            "<tr{}><td>{}</td>",
            if differs { " class=\"differs\"" } else { "" },
            metric.name()
        );
        for cell in cells {
            let _ = write!(html, "<td>{}</td>", esc(&cell));
        }
        html.push_str("</tr>");
    }
    html.push_str(
        "</table>\n<p class=\"note\">Highlighted: the metrics on which the policies differ.</p>\n",
    );
    html
}

fn failures_html(scenario: &Scenario, results: &[RunResult]) -> String {
    let mut text = String::new();
    let mut seen: Vec<(Policy, String)> = Vec::new();
    for r in results {
        for (_, problem) in &r.rejections {
            let line = format!("registration rejected: {problem}\n");
            if !seen.contains(&(r.row.policy, line.clone())) {
                seen.push((r.row.policy, line));
            }
        }
        let mut block = String::new();
        for failure in &r.placement_failures {
            for (depth, line) in table::failure_lines(scenario, failure) {
                let _ = writeln!(block, "{:indent$}{line}", "", indent = 2 + 2 * depth);
            }
        }
        if !block.is_empty() && !seen.contains(&(r.row.policy, block.clone())) {
            seen.push((r.row.policy, block));
        }
    }
    let mut last: Option<Policy> = None;
    for (policy, block) in seen {
        if last != Some(policy) {
            let _ = writeln!(text, "{policy}:");
            last = Some(policy);
        }
        for line in block.lines() {
            let _ = writeln!(text, "  {line}");
        }
    }
    if text.is_empty() {
        return "<h2>Placement failures</h2>\n<p>None: every policy placed everything it was asked to.</p>\n".to_string();
    }
    format!(
        "<h2>Placement failures</h2>\n<p class=\"note\">As <code>nomad job status</code> shows them (latest evaluation of each group), and registration errors.</p><pre class=\"failures\">{}</pre>\n",
        esc(&text)
    )
}

/// The index: every scenario with a one-line verdict per policy.
pub fn index_page(pages: &[(String, String, Vec<Verdict>)]) -> String {
    let mut html = head("plansim run report");
    html.push_str("<h1>plansim run report</h1><p class=\"meta\">One page per scenario: timelines per policy, metrics, placement failures and why the policies differ.</p>\n<table class=\"index\"><tr><th>scenario</th><th>verdicts</th></tr>");
    for (name, file, verdicts) in pages {
        let _ = write!(
            html,
            "<tr><td><a href=\"{}\">{}</a></td><td style=\"text-align:left\">",
            esc(file),
            esc(name)
        );
        for v in verdicts {
            html.push_str(&verdict_html(v));
        }
        html.push_str("</td></tr>");
    }
    let verdicts: Vec<Vec<Verdict>> = pages.iter().map(|p| p.2.clone()).collect();
    let _ = writeln!(
        html,
        "</table>\n<p class=\"meta\">{}</p>\n</body></html>",
        esc(&table::total_line(&verdicts))
    );
    html
}
