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

/// Renders one chart. `x_labels` are the varied values in order; `series`
/// holds, per policy, the summary at each value (`None`: no run reached it).
pub fn line_chart(
    title: &str,
    x_name: &str,
    y_name: &str,
    x_labels: &[String],
    series: &[(Policy, Vec<Option<Summary>>)],
) -> Result<String, String> {
    let top = series
        .iter()
        .flat_map(|(_, points)| points.iter().flatten())
        .map(|s| s.mean + s.ci95.unwrap_or(0.0))
        .fold(0.0f64, f64::max);
    let y_max = if top > 0.0 { top * 1.1 } else { 1.0 };
    let x_max = x_labels.len() as f64 - 0.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        let fail = |err: &dyn std::fmt::Display| format!("cannot draw {title}: {err}");
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..x_max, 0f64..y_max)
            .map_err(|e| fail(&e))?;
        let label_of = |x: &f64| {
            let index = x.round();
            if (x - index).abs() < 1e-9 && index >= 0.0 {
                x_labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(x_name)
            .y_desc(y_name)
            .x_labels(x_labels.len() * 2 + 1)
            .x_label_formatter(&label_of)
            .disable_x_mesh()
            .draw()
            .map_err(|e| fail(&e))?;
        for (rank, (policy, points)) in series.iter().enumerate() {
            let style = color(*policy);
            // Policies are nudged apart so identical lines stay visible.
            let dodge = (rank as f64 - (series.len() as f64 - 1.0) / 2.0) * 0.06;
            let line: Vec<(f64, f64)> = points
                .iter()
                .enumerate()
                .filter_map(|(x, s)| s.map(|s| (x as f64 + dodge, s.mean)))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), style.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(policy.name())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], style.stroke_width(2))
                });
            chart
                .draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, style.filled())),
                )
                .map_err(|e| fail(&e))?;
            let bars = points.iter().enumerate().filter_map(|(x, s)| {
                let s = (*s)?;
                let half = s.ci95?;
                Some(ErrorBar::new_vertical(
                    x as f64 + dodge,
                    s.mean - half,
                    s.mean,
                    s.mean + half,
                    style.stroke_width(1),
                    8,
                ))
            });
            chart.draw_series(bars).map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}
