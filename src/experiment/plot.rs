//! SVG line charts of a metric against one varied parameter: one line per
//! policy, error bars for the 95% confidence interval of the mean. Drawn
//! with plotters' SVG backend alone (no fonts, no C libraries), so the bytes
//! depend only on the numbers.

use plotters::prelude::*;

use super::stats::Summary;
use crate::model::policy::Policy;

fn color(policy: Policy) -> RGBColor {
    match policy {
        Policy::Naive => RGBColor(214, 39, 40),
        Policy::Validate => RGBColor(255, 127, 14),
        Policy::PlanAware => RGBColor(31, 119, 180),
    }
}

/// Width of the whole chart, and of the strip on its right that holds the
/// legend: the legend sits beside the plot, so it can never cover data.
const WIDTH: u32 = 720;
const LEGEND_WIDTH: u32 = 120;

/// An axis label for a numeric value: whole numbers without decimals.
fn number_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        let text = format!("{x:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Renders one chart. `x_labels` are the varied values in order; when
/// `x_numbers` is given (every value is a number) they are placed on a
/// numeric axis by value, otherwise one slot per value. `series` holds,
/// per policy, the summary at each value (`None`: no run reached it).
pub fn line_chart(
    title: &str,
    x_name: &str,
    y_name: &str,
    x_labels: &[String],
    x_numbers: Option<&[f64]>,
    series: &[(Policy, Vec<Option<Summary>>)],
) -> Result<String, String> {
    let top = series
        .iter()
        .flat_map(|(_, points)| points.iter().flatten())
        .map(|s| s.mean + s.ci95.unwrap_or(0.0))
        .fold(0.0f64, f64::max);
    let y_max = if top > 0.0 { top * 1.1 } else { 1.0 };
    let xs: Vec<f64> = match x_numbers {
        Some(numbers) => numbers.to_vec(),
        None => (0..x_labels.len()).map(|i| i as f64).collect(),
    };
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) };
    // Half a slot either side for categories; 5% of the span for numbers.
    let pad = if x_numbers.is_none() || hi == lo {
        0.5
    } else {
        (hi - lo) * 0.05
    };
    let (x_lo, x_hi) = (lo - pad, hi + pad);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 440)).into_drawing_area();
        let fail = |err: &dyn std::fmt::Display| format!("cannot draw {title}: {err}");
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| fail(&e))?;
        let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x_lo..x_hi, 0f64..y_max)
            .map_err(|e| fail(&e))?;
        let label_of = |x: &f64| {
            if x_numbers.is_some() {
                return number_label(*x);
            }
            let index = x.round();
            if (x - index).abs() < 1e-9 && index >= 0.0 {
                x_labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_name)
            .y_desc(y_name)
            .x_label_formatter(&label_of)
            .disable_x_mesh();
        if x_numbers.is_none() {
            mesh.x_labels(x_labels.len() * 2 + 1);
        }
        mesh.draw().map_err(|e| fail(&e))?;
        for (rank, (policy, points)) in series.iter().enumerate() {
            let style = color(*policy);
            // Policies are nudged apart so identical lines stay visible.
            let dodge = (rank as f64 - (series.len() as f64 - 1.0) / 2.0) * 0.015 * (x_hi - x_lo);
            let line: Vec<(f64, f64)> = points
                .iter()
                .zip(&xs)
                .filter_map(|(s, &x)| s.map(|s| (x + dodge, s.mean)))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), style.stroke_width(2)))
                .map_err(|e| fail(&e))?;
            chart
                .draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, style.filled())),
                )
                .map_err(|e| fail(&e))?;
            let bars = points.iter().zip(&xs).filter_map(|(s, &x)| {
                let s = (*s)?;
                let half = s.ci95?;
                Some(ErrorBar::new_vertical(
                    x + dodge,
                    s.mean - half,
                    s.mean,
                    s.mean + half,
                    style.stroke_width(1),
                    8,
                ))
            });
            chart.draw_series(bars).map_err(|e| fail(&e))?;
            // The legend entry, in the strip beside the plot.
            let y = 24 + 22 * rank as i32;
            legend_area
                .draw(&PathElement::new(
                    vec![(8, y), (32, y)],
                    style.stroke_width(2),
                ))
                .map_err(|e| fail(&e))?;
            legend_area
                .draw(&Text::new(
                    policy.name(),
                    (38, y - 7),
                    ("sans-serif", 14).into_font(),
                ))
                .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}
