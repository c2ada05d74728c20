//! The run report (`plansim run ... --report DIR`): one self-contained HTML
//! page per scenario (inline SVG and CSS; no script, no network) and an
//! index with a one-line verdict per policy. Each page draws, per policy
//! and on one time axis, a lane per node with each allocation's life and a
//! lane per volume with its claims, shades violation windows, marks
//! operator events and the first divergence, then gives the metrics, the
//! placement failures in Nomad's words and the `explain` narrative.
//! Every name is data: all text goes through [`esc`].

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

use crate::explain::{self, Explanation, RunView, Window};
use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::metrics::Metric;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::names::slug;
use crate::report::table::{self, Verdict};
use crate::run::RunResult;
use crate::sim::trace::{TraceKind, TraceRecord};

/// Node and volume lanes drawn per policy; the rest are counted in a note.
pub const MAX_NODE_LANES: usize = 30;
pub const MAX_VOLUME_LANES: usize = 20;
/// Rows inside one lane for overlapping bars; more overlap is counted.
const MAX_ROWS: usize = 3;
/// Bars drawn per policy (allocations plus claims): keeps a page with
/// thousands of allocations to a few hundred kilobytes.
pub const MAX_BARS: usize = 600;

const WIDTH: f64 = 1000.0;
const X0: f64 = 250.0;
const X1: f64 = 985.0;
const LANE: f64 = 14.0;
const GAP: f64 = 4.0;
const TOP: f64 = 62.0;
/// Characters of a lane label that fit left of the plot.
const LABEL_CHARS: usize = 40;

/// Escapes text for HTML element content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A file name per scenario, in order: `scenario-<slug>.html`, with a
/// number added when two names slug alike.
pub fn page_file_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut used: BTreeMap<String, u32> = BTreeMap::new();
    names
        .map(|name| {
            let slug = slug(name);
            let n = used.entry(slug.clone()).or_default();
            *n += 1;
            if *n == 1 {
                format!("scenario-{slug}.html")
            } else {
                format!("scenario-{slug}-{n}.html")
            }
        })
        .collect()
}

/// The time axis: equal width between ticks at 0, 1 s, 10 s, 1 m, 10 m,
/// 1 h, 6 h, 1 d, 7 d and the horizon, so the first seconds (placement,
/// claims) and the hour after are both readable. Integer arithmetic and
/// one division: identical bytes everywhere.
struct Axis {
    ticks: Vec<Millis>,
}

impl Axis {
    fn new(horizon: Millis) -> Axis {
        let mut ticks: Vec<Millis> = [0, 1, 10, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400]
            .into_iter()
            .map(Millis::from_secs)
            .filter(|&t| t < horizon)
            .collect();
        ticks.push(horizon.max(Millis(1)));
        Axis { ticks }
    }

    fn x(&self, t: Millis) -> f64 {
        let segments = (self.ticks.len() - 1) as f64;
        let width = (X1 - X0) / segments;
        let i = self
            .ticks
            .windows(2)
            .position(|w| t < w[1])
            .unwrap_or(self.ticks.len() - 2);
        let (a, b) = (self.ticks[i], self.ticks[i + 1]);
        let within = (t.min(b) - a.min(t)).0 as f64 / (b - a).0 as f64;
        X0 + width * (i as f64 + within)
    }
}

fn tick_label(t: Millis) -> String {
    let s = t.0 / 1000;
    match s {
        0 => "0".to_string(),
        _ if !t.0.is_multiple_of(1000) => format!("{t}s"),
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Failed,
    Complete,
    Lost,
    Stopped,
}

/// One allocation's life on its node.
struct AllocBar {
    node: NodeId,
    name: String,
    placed: Millis,
    claiming: Option<Millis>,
    running: Option<Millis>,
    end: Option<(Millis, End)>,
}

/// One claim on a volume: held, then being released once its allocation stopped.
struct ClaimBar {
    volume: VolumeId,
    holder: String,
    mode: ClaimMode,
    granted: Millis,
    releasing: Option<Millis>,
    freed: Option<Millis>,
}

/// A policy's run, read off its trace for drawing.
struct Timeline {
    allocs: Vec<AllocBar>,
    claims: Vec<ClaimBar>,
    /// Operator events: (time, label).
    marks: Vec<(Millis, String)>,
    /// Failed placements and refused node plans: (time, label).
    refusals: Vec<(Millis, String)>,
    windows: Vec<Window>,
}

fn alloc_name(scenario: &Scenario, group: GroupRef, index: u32) -> String {
    let job = &scenario.jobs[group.job.index()];
    format!(
        "{}.{}[{index}]",
        job.name,
        job.groups[group.group_index()].name
    )
}

impl Timeline {
    fn read(scenario: &Scenario, trace: &[TraceRecord]) -> Timeline {
        let mut t = Timeline {
            allocs: Vec::new(),
            claims: Vec::new(),
            marks: Vec::new(),
            refusals: Vec::new(),
            windows: explain::violation_windows(scenario, trace),
        };
        let mut open: BTreeMap<(GroupRef, u32), usize> = BTreeMap::new();
        let mut open_claims: BTreeMap<(GroupRef, u32, VolumeId), VecDeque<usize>> = BTreeMap::new();
        for r in trace {
            let slot = r.group.zip(r.alloc_index);
            let node =
                |n: Option<NodeId>| n.map_or("", |n| scenario.nodes[n.index()].name.as_str());
            match (r.kind, slot) {
                (TraceKind::Placed, Some((g, i))) => {
                    open.insert((g, i), t.allocs.len());
                    t.allocs.push(AllocBar {
                        node: r.node.unwrap_or(NodeId(0)),
                        name: alloc_name(scenario, g, i),
                        placed: r.time,
                        claiming: None,
                        running: None,
                        end: None,
                    });
                }
                (TraceKind::ClaimGranted | TraceKind::ClaimRejected, Some(s)) => {
                    if let Some(&a) = open.get(&s) {
                        t.allocs[a].claiming.get_or_insert(r.time);
                    }
                    if let (TraceKind::ClaimGranted, Some(v)) = (r.kind, r.volume) {
                        open_claims
                            .entry((s.0, s.1, v))
                            .or_default()
                            .push_back(t.claims.len());
                        t.claims.push(ClaimBar {
                            volume: v,
                            holder: alloc_name(scenario, s.0, s.1),
                            mode: if r.detail == "write" {
                                ClaimMode::Write
                            } else {
                                ClaimMode::Read
                            },
                            granted: r.time,
                            releasing: None,
                            freed: None,
                        });
                    }
                }
                (TraceKind::ClaimReleased, Some(s)) => {
                    if let Some(v) = r.volume
                        && let Some(c) = open_claims
                            .get_mut(&(s.0, s.1, v))
                            .and_then(VecDeque::pop_front)
                    {
                        t.claims[c].freed = Some(r.time);
                    }
                }
                (TraceKind::Running, Some(s)) => {
                    if let Some(&a) = open.get(&s) {
                        t.allocs[a].running = Some(r.time);
                    }
                }
                (
                    TraceKind::Failed | TraceKind::Complete | TraceKind::Lost | TraceKind::Stopped,
                    Some(s),
                ) => {
                    let end = match r.kind {
                        TraceKind::Failed => End::Failed,
                        TraceKind::Complete => End::Complete,
                        TraceKind::Lost => End::Lost,
                        _ => End::Stopped,
                    };
                    if let Some(a) = open.remove(&s) {
                        t.allocs[a].end = Some((r.time, end));
                    }
                    for (_, claims) in
                        open_claims.range((s.0, s.1, VolumeId(0))..=(s.0, s.1, VolumeId(u32::MAX)))
                    {
                        for &c in claims {
                            t.claims[c].releasing.get_or_insert(r.time);
                        }
                    }
                }
                (TraceKind::Infeasible, Some((g, i))) => {
                    t.refusals.push((
                        r.time,
                        format!("{} not placed: {}", alloc_name(scenario, g, i), r.detail),
                    ));
                }
                (TraceKind::JobRejected, _) => {
                    let job = r.job.map_or("", |j| scenario.jobs[j.index()].name.as_str());
                    t.refusals.push((
                        r.time,
                        format!("job {job} rejected at registration: {}", r.detail),
                    ));
                }
                (TraceKind::PlanRejected, _) => {
                    t.refusals.push((
                        r.time,
                        format!("plan for {} refused: {}", node(r.node), r.detail),
                    ));
                }
                (
                    TraceKind::NodeDown
                    | TraceKind::NodeUp
                    | TraceKind::NodeDrain
                    | TraceKind::PluginHealth,
                    _,
                ) => {
                    let detail = if r.detail.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.detail)
                    };
                    t.marks.push((
                        r.time,
                        format!("{} {}{detail}", r.kind.name(), node(r.node)),
                    ));
                }
                (TraceKind::Scale, _) | (TraceKind::StopJob, _) => {
                    let job = r.job.map_or("", |j| scenario.jobs[j.index()].name.as_str());
                    t.marks.push((
                        r.time,
                        format!("{} {job} {}", r.kind.name(), r.detail)
                            .trim_end()
                            .to_string(),
                    ));
                }
                _ => {}
            }
        }
        t
    }
}

/// Assigns bars (start, end) to at most MAX_ROWS rows without overlap;
/// returns each bar's row, `None` for bars that did not fit.
fn rows(spans: &[(Millis, Millis)]) -> Vec<Option<usize>> {
    let mut ends: Vec<Millis> = Vec::new();
    spans
        .iter()
        .map(|&(start, end)| {
            if let Some(row) = ends.iter().position(|&e| e <= start) {
                ends[row] = end;
                Some(row)
            } else if ends.len() < MAX_ROWS {
                ends.push(end);
                Some(ends.len() - 1)
            } else {
                None
            }
        })
        .collect()
}

/// A bar from `from` to `to`, `(y, h)` its top and height, with a tooltip.
fn rect(
    svg: &mut String,
    axis: &Axis,
    (from, to): (Millis, Millis),
    (y, h): (f64, f64),
    class: &str,
    title: &str,
) {
    let (x1, x2) = (axis.x(from), axis.x(to));
    let _ = write!(
        svg,
        "<rect class=\"{class}\" x=\"{x1:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\"><title>{}</title></rect>",
        (x2 - x1).max(1.5),
        esc(title)
    );
}

/// The SVG timeline of one policy's run.
fn timeline_svg(
    scenario: &Scenario,
    policy: Policy,
    trace: &[TraceRecord],
    divergence: Option<Millis>,
) -> String {
    let horizon = scenario.horizon;
    let axis = Axis::new(horizon);
    let t = Timeline::read(scenario, trace);
    let mut body = String::new();
    let mut notes: Vec<String> = Vec::new();
    let mut y = TOP;
    // Long names are cut to fit the label column; the full name is the tooltip.
    let label = |body: &mut String, y: f64, text: &str, class: &str| {
        let shown: String = if text.chars().count() > LABEL_CHARS {
            text.chars().take(LABEL_CHARS - 1).chain(['…']).collect()
        } else {
            text.to_string()
        };
        let _ = write!(
            body,
            "<text class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\">{}<title>{}</title></text>",
            X0 - 6.0,
            y + LANE - 3.0,
            esc(&shown),
            esc(text)
        );
    };
    let mut bars = 0usize;

    // All allocations at once: how many are pending and running, per pixel.
    let _ = write!(body, "<g class=\"lane aggregate\">");
    let (lane, peak) = aggregate(&axis, &t, y, LANE * 2.0, horizon);
    label(
        &mut body,
        y + LANE / 2.0,
        &format!("allocations, all nodes (peak {peak})"),
        "lane-label",
    );
    body.push_str(&lane);
    body.push_str("</g>");
    y += LANE * 2.0 + GAP;

    // The scheduler: placements it could not make, node plans refused.
    if !t.refusals.is_empty() {
        let _ = write!(body, "<g class=\"lane scheduler\">");
        label(&mut body, y, "not placed / rejected", "lane-label");
        let mut last_x = f64::NEG_INFINITY;
        for (at, text) in &t.refusals {
            let x = axis.x(*at);
            if x - last_x < 2.0 {
                continue;
            }
            last_x = x;
            let _ = write!(
                body,
                "<path class=\"refusal\" d=\"M{:.1} {:.1}l6 {LANE:.0}h-12z\"><title>{} s: {}</title></path>",
                x,
                y,
                at,
                esc(text)
            );
        }
        body.push_str("</g>");
        y += LANE + GAP;
    }

    // One lane per node that ran something.
    let mut by_node: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (i, a) in t.allocs.iter().enumerate() {
        by_node.entry(a.node).or_default().push(i);
    }
    let mut hidden_allocs = 0usize;
    for (lane, (node, allocs)) in by_node.iter().enumerate() {
        if lane >= MAX_NODE_LANES || bars >= MAX_BARS {
            hidden_allocs += allocs.len();
            continue;
        }
        let spans: Vec<(Millis, Millis)> = allocs
            .iter()
            .map(|&i| {
                let a = &t.allocs[i];
                (a.placed, a.end.map_or(horizon, |(e, _)| e))
            })
            .collect();
        let placed_rows = rows(&spans);
        let height = LANE * placed_rows.iter().flatten().max().map_or(1, |r| r + 1) as f64;
        let node_name = &scenario.nodes[node.index()].name;
        let _ = write!(
            body,
            "<g class=\"lane node\" data-node=\"{}\">",
            esc(node_name)
        );
        let _ = write!(
            body,
            "<rect class=\"lane-bg\" x=\"{X0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\"/>",
            X1 - X0
        );
        label(&mut body, y, node_name, "lane-label");
        let mut overflow = 0;
        for (&i, row) in allocs.iter().zip(&placed_rows) {
            let Some(row) = row else {
                overflow += 1;
                continue;
            };
            if bars >= MAX_BARS {
                overflow += 1;
                continue;
            }
            bars += 1;
            let a = &t.allocs[i];
            let top = y + LANE * *row as f64 + 1.0;
            let h = LANE - 2.0;
            let end = a.end.map_or(horizon, |(e, _)| e);
            let pending_end = a.claiming.or(a.running).unwrap_or(end);
            rect(
                &mut body,
                &axis,
                (a.placed, pending_end),
                (top, h),
                "pending",
                &format!("{} pending on {} from {} s", a.name, node_name, a.placed),
            );
            if let Some(c) = a.claiming {
                rect(
                    &mut body,
                    &axis,
                    (c, a.running.unwrap_or(end)),
                    (top, h),
                    "claiming",
                    &format!("{} claiming from {c} s", a.name),
                );
            }
            if let Some(r) = a.running {
                rect(
                    &mut body,
                    &axis,
                    (r, end),
                    (top, h),
                    "running",
                    &format!("{} running from {r} s", a.name),
                );
            }
            if let Some((e, kind)) = a.end {
                let (class, word) = match kind {
                    End::Failed => ("failed", "failed"),
                    End::Complete => ("complete", "complete"),
                    End::Lost => ("lost", "lost"),
                    End::Stopped => ("stopped", "stopped"),
                };
                let _ = write!(
                    body,
                    "<rect class=\"{class}\" x=\"{:.1}\" y=\"{top:.1}\" width=\"3\" height=\"{h:.1}\"><title>{} {word} at {e} s</title></rect>",
                    axis.x(e) - 1.5,
                    esc(&a.name)
                );
            }
            let x = axis.x(a.running.unwrap_or(a.placed));
            if axis.x(end) - x > 7.0 * a.name.len() as f64 {
                let _ = write!(
                    body,
                    "<text class=\"bar-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x + 3.0,
                    top + h - 2.5,
                    esc(&a.name)
                );
            }
        }
        if overflow > 0 {
            hidden_allocs += overflow;
            let _ = write!(
                body,
                "<text class=\"overflow\" x=\"{:.1}\" y=\"{:.1}\">+{overflow} not drawn</text>",
                X1 - 3.0,
                y + LANE - 3.0
            );
        }
        body.push_str("</g>");
        y += height + GAP;
    }
    if hidden_allocs > 0 {
        notes.push(format!(
            "{hidden_allocs} of {} allocations on {} nodes not drawn (at most {MAX_NODE_LANES} node lanes, {MAX_ROWS} rows each, {MAX_BARS} bars in all); the aggregate lane counts them all",
            t.allocs.len(),
            by_node.len(),
        ));
    }

    // One lane per volume that was claimed.
    let mut by_volume: BTreeMap<VolumeId, Vec<usize>> = BTreeMap::new();
    for (i, c) in t.claims.iter().enumerate() {
        by_volume.entry(c.volume).or_default().push(i);
    }
    let mut hidden_claims = 0usize;
    for (lane, (volume, claims)) in by_volume.iter().enumerate() {
        if lane >= MAX_VOLUME_LANES || bars >= MAX_BARS {
            hidden_claims += claims.len();
            continue;
        }
        let spans: Vec<(Millis, Millis)> = claims
            .iter()
            .map(|&i| (t.claims[i].granted, t.claims[i].freed.unwrap_or(horizon)))
            .collect();
        let claim_rows = rows(&spans);
        let height = LANE * claim_rows.iter().flatten().max().map_or(1, |r| r + 1) as f64;
        let spec = &scenario.volumes[volume.index()];
        let _ = write!(
            body,
            "<g class=\"lane volume\" data-volume=\"{}\">",
            esc(&spec.name)
        );
        let _ = write!(
            body,
            "<rect class=\"lane-bg volume-bg\" x=\"{X0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\"/>",
            X1 - X0
        );
        label(
            &mut body,
            y,
            &format!("{} ({})", spec.name, spec.nominal_access_mode()),
            "lane-label volume-label",
        );
        for w in t.windows.iter().filter(|w| w.volume_id == *volume) {
            rect(
                &mut body,
                &axis,
                (w.from, w.to),
                (y, height),
                "violation-lane",
                &format!(
                    "{} in violation from {} s to {} s",
                    w.volume, w.from_s, w.to_s
                ),
            );
        }
        for (&i, row) in claims.iter().zip(&claim_rows) {
            let Some(row) = row else {
                hidden_claims += 1;
                continue;
            };
            if bars >= MAX_BARS {
                hidden_claims += 1;
                continue;
            }
            bars += 1;
            let c = &t.claims[i];
            let top = y + LANE * *row as f64 + 2.0;
            let h = LANE - 4.0;
            let end = c.freed.unwrap_or(horizon);
            let held_end = c.releasing.unwrap_or(end);
            let mode = c.mode.name();
            rect(
                &mut body,
                &axis,
                (c.granted, held_end),
                (top, h),
                &format!("claim-{mode}"),
                &format!("{} holds a {mode} claim from {} s", c.holder, c.granted),
            );
            if let Some(r) = c.releasing {
                rect(
                    &mut body,
                    &axis,
                    (r, end),
                    (top, h),
                    &format!("claim-{mode} releasing"),
                    &format!(
                        "{}'s {mode} claim being released from {r} s (detach, then freed{})",
                        c.holder,
                        c.freed.map_or(String::new(), |f| format!(" at {f} s"))
                    ),
                );
            }
            let x = axis.x(c.granted);
            let text = format!("{} ({mode})", c.holder);
            if axis.x(held_end) - x > 6.5 * text.len() as f64 {
                let _ = write!(
                    body,
                    "<text class=\"bar-label light\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x + 3.0,
                    top + h - 1.5,
                    esc(&text)
                );
            }
        }
        body.push_str("</g>");
        y += height + GAP;
    }
    if hidden_claims > 0 {
        notes.push(format!(
            "{hidden_claims} of {} claims on {} volumes not drawn (at most {MAX_VOLUME_LANES} volume lanes, {MAX_ROWS} rows each, {MAX_BARS} bars in all)",
            t.claims.len(),
            by_volume.len()
        ));
    }
    let bottom = y;

    // Over every lane: violation windows, operator events, the divergence.
    // Labels go in rows above the lanes (the divergence's on top, then two
    // rows of operator events, then violations), each row filled left to
    // right; a label that would run past the plot ends at its line instead.
    let mut label_rows: [f64; 4] = [f64::NEG_INFINITY; 4];
    let mut place =
        |x: f64, text: &str, rows: std::ops::Range<usize>| -> (f64, f64, &'static str) {
            let width = 6.2 * text.chars().count() as f64;
            let (left, anchor, tx) = if x + 3.0 + width > WIDTH - 4.0 {
                (x - 3.0 - width, "end", x - 3.0)
            } else {
                (x, "start", x + 3.0)
            };
            let row = rows
                .clone()
                .find(|&r| label_rows[r] < left)
                .unwrap_or(rows.start);
            label_rows[row] = left + width + 4.0;
            (tx, 12.0 + 12.0 * row as f64, anchor)
        };
    let mut over = String::new();
    for w in &t.windows {
        let (x1, x2) = (axis.x(w.from), axis.x(w.to));
        let _ = write!(
            over,
            "<rect class=\"violation\" x=\"{x1:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{} in violation from {} s to {} s ({} s)</title></rect>",
            TOP - 4.0,
            (x2 - x1).max(1.5),
            bottom - TOP + 4.0,
            esc(&w.volume),
            w.from_s,
            w.to_s,
            w.seconds
        );
        let text = format!("violation: {}", w.volume);
        let (tx, ty, anchor) = place(x1, &text, 3..4);
        let _ = write!(
            over,
            "<text class=\"violation-label\" text-anchor=\"{anchor}\" x=\"{tx:.1}\" y=\"{ty:.1}\">{}</text>",
            esc(&text)
        );
    }
    if let Some(at) = divergence {
        let x = axis.x(at);
        let text = format!("first divergence ({at} s)");
        let (tx, ty, anchor) = place(x, &text, 0..1);
        let _ = write!(
            over,
            "<g class=\"divergence\"><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text text-anchor=\"{anchor}\" x=\"{tx:.1}\" y=\"{ty:.1}\">{}</text></g>",
            ty - 9.0,
            bottom + 2.0,
            esc(&text)
        );
    }
    for (at, text) in &t.marks {
        let x = axis.x(*at);
        let (tx, ty, anchor) = place(x, text, 1..3);
        let _ = write!(
            over,
            "<g class=\"operator-event\"><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{bottom:.1}\"/><text text-anchor=\"{anchor}\" x=\"{tx:.1}\" y=\"{ty:.1}\">{}</text><title>{at} s: {}</title></g>",
            ty - 9.0,
            esc(text),
            esc(text)
        );
    }
    // The axis.
    let mut axis_svg = format!(
        "<g class=\"axis\"><line x1=\"{X0}\" x2=\"{X1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\"/>"
    );
    for &tick in &axis.ticks {
        let x = axis.x(tick);
        let _ = write!(
            axis_svg,
            "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
            bottom + 4.0,
            bottom + 16.0,
            tick_label(tick)
        );
    }
    axis_svg.push_str("</g>");
    let height = bottom + 26.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" data-policy=\"{}\" viewBox=\"0 0 {WIDTH} {height:.0}\" width=\"{WIDTH}\" height=\"{height:.0}\" role=\"img\" aria-label=\"timeline of {}\">",
        policy.name(),
        policy.name()
    );
    svg.push_str(&axis_svg);
    svg.push_str(&body);
    svg.push_str(&over);
    svg.push_str("</svg>");
    for note in notes {
        let _ = write!(svg, "<p class=\"note\">{}</p>", esc(&note));
    }
    svg
}

/// The aggregate lane: allocations pending (placed, not yet running) and
/// running, the most at any moment within each pixel column.
fn aggregate(axis: &Axis, t: &Timeline, y: f64, height: f64, horizon: Millis) -> (String, i64) {
    // (time, change in pending, change in running)
    let mut changes: Vec<(Millis, i64, i64)> = Vec::new();
    for a in &t.allocs {
        let end = a.end.map_or(horizon, |(e, _)| e);
        let run_start = a.running.unwrap_or(end);
        changes.push((a.placed, 1, 0));
        changes.push((run_start, -1, 0));
        if a.running.is_some() {
            changes.push((run_start, 0, 1));
            changes.push((end, 0, -1));
        }
    }
    changes.sort_by_key(|c| c.0);
    let columns = (X1 - X0) as usize;
    // Per pixel column: the most allocations live (pending or running) and
    // the most running at any moment within it.
    let mut live_max = vec![0i64; columns + 1];
    let mut running_max = vec![0i64; columns + 1];
    let (mut pending, mut running) = (0i64, 0i64);
    let column = |at: Millis| ((axis.x(at) - X0) as usize).min(columns);
    let mut last_col = 0usize;
    for (at, dp, dr) in changes {
        let col = column(at);
        // The counts held from the previous change up to this one.
        for c in last_col..col {
            live_max[c] = live_max[c].max(pending + running);
            running_max[c] = running_max[c].max(running);
        }
        pending += dp;
        running += dr;
        last_col = col;
    }
    for c in last_col..columns {
        live_max[c] = live_max[c].max(pending + running);
        running_max[c] = running_max[c].max(running);
    }
    let peak = live_max.iter().copied().max().unwrap_or(0).max(1);
    let scale = height / peak as f64;
    let base = y + height;
    let path = |values: &dyn Fn(usize) -> i64| {
        let mut d = format!("M{X0:.1} {base:.1}");
        let mut c = 0;
        while c < columns {
            let value = values(c);
            let run = (c..columns).take_while(|&k| values(k) == value).count();
            let top = base - value as f64 * scale;
            let _ = write!(d, "V{top:.1}h{run}");
            c += run;
        }
        let _ = write!(d, "V{base:.1}z");
        d
    };
    let lane = format!(
        "<rect class=\"lane-bg\" x=\"{X0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\"/><path class=\"agg-pending\" d=\"{}\"><title>allocations pending or running (peak {peak})</title></path><path class=\"agg-running\" d=\"{}\"><title>allocations running</title></path>",
        X1 - X0,
        path(&|c| live_max[c]),
        path(&|c| running_max[c]),
    );
    (lane, peak)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_gives_each_tick_interval_the_same_width() {
        let axis = Axis::new(Millis::from_secs(3600));
        let secs = |s| axis.x(Millis::from_secs(s));
        assert_eq!(axis.ticks.len(), 6, "0, 1s, 10s, 1m, 10m, 1h");
        assert_eq!(secs(0), X0);
        assert_eq!(secs(3600), X1);
        let width = (X1 - X0) / 5.0;
        assert!((secs(10) - secs(1) - width).abs() < 1e-9);
        assert!((secs(600) - secs(60) - width).abs() < 1e-9);
        // Linear within an interval, and monotonic across the run.
        assert!((secs(35) - (secs(10) + width / 2.0)).abs() < 1e-9);
        let xs: Vec<f64> = (0..=3600).step_by(7).map(secs).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]));
        // A short run ends at its horizon; a time past it stays at the edge.
        let short = Axis::new(Millis::from_secs(30));
        assert_eq!(short.ticks.last(), Some(&Millis::from_secs(30)));
        assert_eq!(short.x(Millis::from_secs(99)), X1);
    }

    #[test]
    fn rows_never_overlap_and_count_what_does_not_fit() {
        let s = Millis::from_secs;
        let spans = [
            (s(0), s(10)),
            (s(5), s(15)),
            (s(10), s(20)),
            (s(6), s(7)),
            (s(6), s(8)),
        ];
        let placed = rows(&spans);
        assert_eq!(placed, vec![Some(0), Some(1), Some(0), Some(2), None]);
        for (i, a) in spans.iter().enumerate() {
            for (j, b) in spans.iter().enumerate().skip(i + 1) {
                if placed[i].is_some() && placed[i] == placed[j] {
                    assert!(a.1 <= b.0 || b.1 <= a.0, "{i} and {j} overlap");
                }
            }
        }
    }

    #[test]
    fn page_names_are_safe_and_distinct() {
        let names = page_file_names(["a b", "a_b", "../x", "index"].into_iter());
        assert_eq!(
            names,
            [
                "scenario-a_b.html",
                "scenario-a_b-2.html",
                "scenario-_x.html",
                "scenario-index.html"
            ]
        );
    }
}
