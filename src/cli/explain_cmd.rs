//! `plansim explain SCENARIO [--baseline P] [--candidate P] [--seed N] [--format text|json]`

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::args::parse_policy;
use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln};
use crate::explain::{explain, render_text};
use crate::model::policy::Policy;
use crate::scenario::load_file;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The scenario file.
    scenario: PathBuf,
    /// The policy to explain from.
    #[arg(long, value_name = "NAME", value_parser = parse_policy, default_value = "naive")]
    baseline: Policy,
    /// The policy to compare with.
    #[arg(long, value_name = "NAME", value_parser = parse_policy, default_value = "plan-aware")]
    candidate: Policy,
    /// The seed (default: the scenario's).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Exit 0 whether or not the policies diverge (the output says which), 2 on bad input.
pub fn run(args: ExplainArgs) -> u8 {
    let scenario = match load_file(&args.scenario) {
        Ok(scenario) => scenario,
        Err(err) => {
            errln!("{err}");
            return EXIT_BAD_INPUT;
        }
    };
    let seed = args.seed.unwrap_or(scenario.seed);
    let explanation = match explain(&scenario, args.baseline, args.candidate, seed) {
        Ok(explanation) => explanation,
        Err(message) => {
            errln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    match args.format {
        Format::Text => super::output::out(&render_text(&explanation)),
        Format::Json => super::output::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&explanation).expect("an explanation serialises")
        )),
    }
    EXIT_OK
}
