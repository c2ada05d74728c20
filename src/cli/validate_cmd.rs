//! `plansim validate PATH...`

use std::path::PathBuf;

use clap::Args;

use super::inputs::{load_checked, scenario_files};
use super::{EXIT_BAD_INPUT, EXIT_OK};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Scenario files, or directories of *.yaml files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Refuse a scenario with warnings (fields of Nomad files that can change
    /// placement and that plansim does not model).
    #[arg(long)]
    strict: bool,
}

pub fn run(args: ValidateArgs) -> u8 {
    let files = match scenario_files(&args.paths) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut code = EXIT_OK;
    for file in &files {
        match load_checked(file, args.strict) {
            Ok(scenario) => {
                let allocations: u64 = scenario
                    .jobs
                    .iter()
                    .flat_map(|j| &j.groups)
                    .map(|g| u64::from(g.count))
                    .sum();
                super::out(&format!(
                    "ok {}: {} ({} nodes, {} volumes, {} jobs, {} allocations, {} events)\n",
                    file.display(),
                    scenario.name,
                    scenario.nodes.len(),
                    scenario.volumes.len(),
                    scenario.jobs.len(),
                    allocations,
                    scenario.events.len()
                ));
            }
            Err(errors) => {
                for err in errors {
                    eprintln!("{err}");
                }
                code = EXIT_BAD_INPUT;
            }
        }
    }
    code
}
