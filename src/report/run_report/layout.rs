//! The timeline's geometry: how many lanes, rows and bars are drawn, where
//! the plot sits, the time axis and the rows of a lane.

use crate::model::time::Millis;

/// Node and volume lanes drawn per policy; the rest are counted in a note.
pub const MAX_NODE_LANES: usize = 30;
pub const MAX_VOLUME_LANES: usize = 20;
/// Rows inside one lane for overlapping bars; more overlap is counted.
pub(super) const MAX_ROWS: usize = 3;
/// Bars drawn per policy (allocations plus claims): keeps a page with
/// thousands of allocations to a few hundred kilobytes.
pub const MAX_BARS: usize = 600;

pub const WIDTH: f64 = 1000.0;
pub const X0: f64 = 250.0;
pub const X1: f64 = 985.0;
pub const LANE: f64 = 14.0;
pub const GAP: f64 = 4.0;
pub const TOP: f64 = 62.0;
/// Characters of a lane label that fit left of the plot.
pub const LABEL_CHARS: usize = 40;

/// The time axis: equal width between ticks at 0, 1 s, 10 s, 1 m, 10 m,
/// 1 h, 6 h, 1 d, 7 d and the horizon, so the first seconds (placement,
/// claims) and the hour after are both readable. Integer arithmetic and
/// one division: identical bytes everywhere.
pub(super) struct Axis {
    pub(super) ticks: Vec<Millis>,
}

impl Axis {
    pub(super) fn new(horizon: Millis) -> Axis {
        let mut ticks: Vec<Millis> = [0, 1, 10, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400]
            .into_iter()
            .map(Millis::from_secs)
            .filter(|&t| t < horizon)
            .collect();
        ticks.push(horizon.max(Millis(1)));
        Axis { ticks }
    }

    pub(super) fn x(&self, t: Millis) -> f64 {
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

pub(super) fn tick_label(t: Millis) -> String {
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

/// Assigns bars (start, end) to at most MAX_ROWS rows without overlap;
/// returns each bar's row, `None` for bars that did not fit.
pub(super) fn rows(spans: &[(Millis, Millis)]) -> Vec<Option<usize>> {
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
}
