//! `plansim validate PATH...`: scenarios are loaded and checked; an
//! experiment file has every grid point built and checked (a dry run of
//! `plansim sweep` that prints how many runs it would make).

use std::path::PathBuf;

use clap::Args;

use super::inputs::{FileKind, file_kind, load_checked, scenario_files};
use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Scenario or experiment files, or directories of *.yaml files.
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
            errln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut code = EXIT_OK;
    for file in &files {
        if file_kind(file) == FileKind::Experiment {
            if let Err(message) = validate_experiment(file) {
                errln!("{message}");
                code = EXIT_BAD_INPUT;
            }
            continue;
        }
        match load_checked(file, args.strict) {
            Ok(scenario) => {
                let allocations: u64 = scenario
                    .jobs
                    .iter()
                    .flat_map(|j| &j.groups)
                    .map(|g| u64::from(g.count))
                    .sum();
                super::output::out(&format!(
                    "ok {}: {} ({} nodes, {} volumes, {} jobs, {} allocations, {} events)\n",
                    crate::names::one_line_path(file),
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
                    errln!("{err}");
                }
                code = EXIT_BAD_INPUT;
            }
        }
    }
    code
}

/// Builds and checks every grid point of an experiment without running it.
fn validate_experiment(file: &std::path::Path) -> Result<(), String> {
    let experiment = crate::experiment::spec::load(file, None).map_err(|err| err.to_string())?;
    for warning in &experiment.warnings {
        errln!("warning: {warning}");
    }
    super::output::out(&format!(
        "ok {}: this is an experiment file ({}): {} grid points x {} policies x {} seeds = {} runs, every grid point valid; run it with plansim sweep {}\n",
        crate::names::one_line_path(file),
        experiment.name,
        experiment.points.len(),
        experiment.policies.len(),
        experiment.seeds.len(),
        experiment.runs(),
        crate::names::one_line_path(file)
    ));
    Ok(())
}
