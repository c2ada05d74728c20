//! The SVG timeline of one policy's run: an aggregate lane, the
//! scheduler's refusals, a lane per node and per volume, and over them the
//! violation windows, operator events and the first divergence.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::html::esc;
use super::layout::{
    Axis, GAP, LABEL_CHARS, LANE, MAX_BARS, MAX_NODE_LANES, MAX_ROWS, MAX_VOLUME_LANES, TOP, WIDTH,
    X0, X1, rows, tick_label,
};
use super::timeline::{AllocBar, ClaimBar, End, Timeline};
use crate::model::ids::{NodeId, VolumeId};
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::TraceRecord;

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

/// A lane's label. Long names are cut to fit the label column; the full
/// name is the tooltip.
fn label(body: &mut String, y: f64, text: &str, class: &str) {
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
}

/// The lanes drawn so far, top to bottom.
struct Lanes<'a> {
    scenario: &'a Scenario,
    axis: Axis,
    horizon: Millis,
    body: String,
    notes: Vec<String>,
    /// The top of the next lane.
    y: f64,
    /// Bars drawn (allocations plus claims), at most MAX_BARS.
    bars: usize,
}

/// The SVG timeline of one policy's run.
pub(super) fn timeline_svg(
    scenario: &Scenario,
    policy: Policy,
    trace: &[TraceRecord],
    divergence: Option<Millis>,
) -> String {
    let horizon = scenario.horizon;
    let t = Timeline::read(scenario, trace);
    let mut lanes = Lanes {
        scenario,
        axis: Axis::new(horizon),
        horizon,
        body: String::new(),
        notes: Vec::new(),
        y: TOP,
        bars: 0,
    };
    lanes.aggregate_lane(&t);
    lanes.refusals_lane(&t);
    lanes.node_lanes(&t);
    lanes.volume_lanes(&t);
    let bottom = lanes.y;
    let over = overlay(&lanes.axis, &t, divergence, bottom);
    let axis_svg = axis_svg(&lanes.axis, bottom);
    let height = bottom + 26.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" data-policy=\"{}\" viewBox=\"0 0 {WIDTH} {height:.0}\" width=\"{WIDTH}\" height=\"{height:.0}\" role=\"img\" aria-label=\"timeline of {}\">",
        policy.name(),
        policy.name()
    );
    svg.push_str(&axis_svg);
    svg.push_str(&lanes.body);
    svg.push_str(&over);
    svg.push_str("</svg>");
    for note in lanes.notes {
        let _ = write!(svg, "<p class=\"note\">{}</p>", esc(&note));
    }
    svg
}

impl Lanes<'_> {
    /// All allocations at once: how many are pending and running, per pixel.
    fn aggregate_lane(&mut self, t: &Timeline) {
        let y = self.y;
        let _ = write!(self.body, "<g class=\"lane aggregate\">");
        let (lane, peak) = aggregate(&self.axis, t, y, LANE * 2.0, self.horizon);
        label(
            &mut self.body,
            y + LANE / 2.0,
            &format!("allocations, all nodes (peak {peak})"),
            "lane-label",
        );
        self.body.push_str(&lane);
        self.body.push_str("</g>");
        self.y += LANE * 2.0 + GAP;
    }

    /// The scheduler: placements it could not make, node plans refused.
    fn refusals_lane(&mut self, t: &Timeline) {
        if t.refusals.is_empty() {
            return;
        }
        let (y, body) = (self.y, &mut self.body);
        let _ = write!(body, "<g class=\"lane scheduler\">");
        label(body, y, "not placed / rejected", "lane-label");
        let mut last_x = f64::NEG_INFINITY;
        for (at, text) in &t.refusals {
            let x = self.axis.x(*at);
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
        self.y += LANE + GAP;
    }

    /// One lane per node that ran something.
    fn node_lanes(&mut self, t: &Timeline) {
        let mut by_node: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (i, a) in t.allocs.iter().enumerate() {
            by_node.entry(a.node).or_default().push(i);
        }
        let mut hidden_allocs = 0usize;
        for (lane, (node, allocs)) in by_node.iter().enumerate() {
            if lane >= MAX_NODE_LANES || self.bars >= MAX_BARS {
                hidden_allocs += allocs.len();
                continue;
            }
            hidden_allocs += self.node_lane(t, *node, allocs);
        }
        if hidden_allocs > 0 {
            self.notes.push(format!(
                "{hidden_allocs} of {} allocations on {} nodes not drawn (at most {MAX_NODE_LANES} node lanes, {MAX_ROWS} rows each, {MAX_BARS} bars in all); the aggregate lane counts them all",
                t.allocs.len(),
                by_node.len(),
            ));
        }
    }

    /// One node's lane; returns how many of its allocations were not drawn.
    fn node_lane(&mut self, t: &Timeline, node: NodeId, allocs: &[usize]) -> usize {
        let horizon = self.horizon;
        let y = self.y;
        let spans: Vec<(Millis, Millis)> = allocs
            .iter()
            .map(|&i| {
                let a = &t.allocs[i];
                (a.placed, a.end.map_or(horizon, |(e, _)| e))
            })
            .collect();
        let placed_rows = rows(&spans);
        let height = LANE * placed_rows.iter().flatten().max().map_or(1, |r| r + 1) as f64;
        let node_name = &self.scenario.nodes[node.index()].name;
        let _ = write!(
            self.body,
            "<g class=\"lane node\" data-node=\"{}\">",
            esc(node_name)
        );
        let _ = write!(
            self.body,
            "<rect class=\"lane-bg\" x=\"{X0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\"/>",
            X1 - X0
        );
        label(&mut self.body, y, node_name, "lane-label");
        let mut overflow = 0;
        for (&i, row) in allocs.iter().zip(&placed_rows) {
            let Some(row) = row else {
                overflow += 1;
                continue;
            };
            if self.bars >= MAX_BARS {
                overflow += 1;
                continue;
            }
            self.bars += 1;
            let top = y + LANE * *row as f64 + 1.0;
            self.alloc_bar(&t.allocs[i], node_name, top);
        }
        if overflow > 0 {
            let _ = write!(
                self.body,
                "<text class=\"overflow\" x=\"{:.1}\" y=\"{:.1}\">+{overflow} not drawn</text>",
                X1 - 3.0,
                y + LANE - 3.0
            );
        }
        self.body.push_str("</g>");
        self.y += height + GAP;
        overflow
    }

    /// One allocation's bar: pending, claiming, running, and how it ended.
    fn alloc_bar(&mut self, a: &AllocBar, node_name: &str, top: f64) {
        let (axis, body) = (&self.axis, &mut self.body);
        let h = LANE - 2.0;
        let end = a.end.map_or(self.horizon, |(e, _)| e);
        let pending_end = a.claiming.or(a.running).unwrap_or(end);
        rect(
            body,
            axis,
            (a.placed, pending_end),
            (top, h),
            "pending",
            &format!("{} pending on {} from {} s", a.name, node_name, a.placed),
        );
        if let Some(c) = a.claiming {
            rect(
                body,
                axis,
                (c, a.running.unwrap_or(end)),
                (top, h),
                "claiming",
                &format!("{} claiming from {c} s", a.name),
            );
        }
        if let Some(r) = a.running {
            rect(
                body,
                axis,
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

    /// One lane per volume that was claimed.
    fn volume_lanes(&mut self, t: &Timeline) {
        let mut by_volume: BTreeMap<VolumeId, Vec<usize>> = BTreeMap::new();
        for (i, c) in t.claims.iter().enumerate() {
            by_volume.entry(c.volume).or_default().push(i);
        }
        let mut hidden_claims = 0usize;
        for (lane, (volume, claims)) in by_volume.iter().enumerate() {
            if lane >= MAX_VOLUME_LANES || self.bars >= MAX_BARS {
                hidden_claims += claims.len();
                continue;
            }
            hidden_claims += self.volume_lane(t, *volume, claims);
        }
        if hidden_claims > 0 {
            self.notes.push(format!(
                "{hidden_claims} of {} claims on {} volumes not drawn (at most {MAX_VOLUME_LANES} volume lanes, {MAX_ROWS} rows each, {MAX_BARS} bars in all)",
                t.claims.len(),
                by_volume.len()
            ));
        }
    }

    /// One volume's lane, its violation windows shaded; returns how many of
    /// its claims were not drawn.
    fn volume_lane(&mut self, t: &Timeline, volume: VolumeId, claims: &[usize]) -> usize {
        let horizon = self.horizon;
        let y = self.y;
        let spans: Vec<(Millis, Millis)> = claims
            .iter()
            .map(|&i| (t.claims[i].granted, t.claims[i].freed.unwrap_or(horizon)))
            .collect();
        let claim_rows = rows(&spans);
        let height = LANE * claim_rows.iter().flatten().max().map_or(1, |r| r + 1) as f64;
        let spec = &self.scenario.volumes[volume.index()];
        let _ = write!(
            self.body,
            "<g class=\"lane volume\" data-volume=\"{}\">",
            esc(&spec.name)
        );
        let _ = write!(
            self.body,
            "<rect class=\"lane-bg volume-bg\" x=\"{X0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\"/>",
            X1 - X0
        );
        label(
            &mut self.body,
            y,
            &format!("{} ({})", spec.name, spec.nominal_access_mode()),
            "lane-label volume-label",
        );
        for w in t.windows.iter().filter(|w| w.volume_id == volume) {
            rect(
                &mut self.body,
                &self.axis,
                (w.from, w.to),
                (y, height),
                "violation-lane",
                &format!(
                    "{} in violation from {} s to {} s",
                    w.volume, w.from_s, w.to_s
                ),
            );
        }
        let mut hidden = 0;
        for (&i, row) in claims.iter().zip(&claim_rows) {
            let Some(row) = row else {
                hidden += 1;
                continue;
            };
            if self.bars >= MAX_BARS {
                hidden += 1;
                continue;
            }
            self.bars += 1;
            let top = y + LANE * *row as f64 + 2.0;
            self.claim_bar(&t.claims[i], top);
        }
        self.body.push_str("</g>");
        self.y += height + GAP;
        hidden
    }

    /// One claim's bar: held, then being released.
    fn claim_bar(&mut self, c: &ClaimBar, top: f64) {
        let (axis, body) = (&self.axis, &mut self.body);
        let h = LANE - 4.0;
        let end = c.freed.unwrap_or(self.horizon);
        let held_end = c.releasing.unwrap_or(end);
        let mode = c.mode.name();
        rect(
            body,
            axis,
            (c.granted, held_end),
            (top, h),
            &format!("claim-{mode}"),
            &format!("{} holds a {mode} claim from {} s", c.holder, c.granted),
        );
        if let Some(r) = c.releasing {
            rect(
                body,
                axis,
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
}

/// Over every lane: violation windows, operator events, the divergence.
/// Labels go in rows above the lanes (the divergence's on top, then two
/// rows of operator events, then violations), each row filled left to
/// right; a label that would run past the plot ends at its line instead.
fn overlay(axis: &Axis, t: &Timeline, divergence: Option<Millis>, bottom: f64) -> String {
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
    over
}

/// The time axis under the lanes, with a grid line per tick.
fn axis_svg(axis: &Axis, bottom: f64) -> String {
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
    axis_svg
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
