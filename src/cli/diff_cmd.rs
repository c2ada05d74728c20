//! `plansim diff OLD NEW`: compare two results metric by metric.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::output::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, errln};
use crate::model::metrics::Metric;
use crate::report::diff::{DiffOptions, Tolerances, compare, render_markdown, render_text};
use crate::report::results;

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
enum Format {
    #[default]
    Text,
    Markdown,
    Json,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The baseline: a summary.csv or a directory holding one.
    old: PathBuf,
    /// The candidate: a summary.csv or a directory holding one.
    new: PathBuf,
    /// Relative tolerance, for every metric (0.05 = 5%) or one (`events=0.1`). Repeatable.
    #[arg(long = "rel-tol", value_name = "[METRIC=]FRACTION")]
    rel_tol: Vec<String>,
    /// Absolute tolerance, for every metric or one (`violation_seconds=1.5`). Repeatable.
    #[arg(long = "abs-tol", value_name = "[METRIC=]AMOUNT")]
    abs_tol: Vec<String>,
    /// Compare only these metrics (comma-separated).
    #[arg(long, value_name = "METRIC,...", value_delimiter = ',')]
    only: Vec<String>,
    /// Output format: text, markdown for a pull-request comment, or json for tools.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub fn run(args: DiffArgs) -> u8 {
    match diff(&args) {
        Ok(true) => EXIT_OK,
        Ok(false) => EXIT_EXPECT_FAILED,
        Err(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

/// Returns whether the two results are the same.
fn diff(args: &DiffArgs) -> Result<bool, String> {
    let options = DiffOptions {
        tolerances: tolerances(&args.rel_tol, &args.abs_tol)?,
        only: args
            .only
            .iter()
            .map(|m| metric_name(m))
            .collect::<Result<_, _>>()?,
    };
    let old = results::read(&args.old)?;
    let new = results::read(&args.new)?;
    let diff = compare(&old, &new, &options);
    match args.format {
        Format::Text => super::output::out(&render_text(&diff)),
        Format::Markdown => super::output::out(&render_markdown(&diff)),
        Format::Json => super::output::out(&crate::report::diff::render_json(&diff)),
    }
    Ok(diff.is_empty())
}

fn metric_name(name: &str) -> Result<String, String> {
    Metric::from_name(name.trim())
        .map(|m| m.name().to_string())
        .ok_or_else(|| {
            let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
            format!("unknown metric \"{name}\" (metrics: {})", known.join(", "))
        })
}

fn tolerances(relative: &[String], absolute: &[String]) -> Result<Tolerances, String> {
    let mut tolerances = Tolerances::default();
    for (specs, per_metric, all, what) in [
        (
            relative,
            &mut tolerances.relative,
            &mut tolerances.relative_all,
            "--rel-tol",
        ),
        (
            absolute,
            &mut tolerances.absolute,
            &mut tolerances.absolute_all,
            "--abs-tol",
        ),
    ] {
        for spec in specs {
            let (metric, amount) = match spec.split_once('=') {
                Some((metric, amount)) => (Some(metric_name(metric)?), amount),
                None => (None, spec.as_str()),
            };
            let amount: f64 = amount
                .trim()
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| {
                    format!("{what} {spec}: the tolerance must be a number of at least 0")
                })?;
            match metric {
                Some(metric) => {
                    per_metric.insert(metric, amount);
                }
                None => *all = Some(amount),
            }
        }
    }
    Ok(tolerances)
}
