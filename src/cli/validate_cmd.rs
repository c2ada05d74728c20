//! `plansim validate PATH...`: scenarios are loaded and checked; an
//! experiment file has every grid point built and checked (a dry run of
//! `plansim sweep` that prints how many runs it would make).

use std::path::PathBuf;

use clap::Args;

use super::inputs::{FileKind, file_kind, load_checked, scenario_files};
use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Scenario or experiment files, or directories of *.yaml files; Nomad job files (.hcl, .nomad, .json) are checked together as one scenario on --cluster.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    given: super::plan_cmd::JobFileArgs,
    /// Refuse a scenario with warnings (fields of Nomad files that can change
    /// placement and that plansim does not model).
    #[arg(long)]
    strict: bool,
}

pub fn run(args: ValidateArgs) -> u8 {
    let (job_files, paths) = super::plan_cmd::split_job_files(&args.paths);
    if let Err(message) = args.given.check_used(&job_files) {
        errln!("{message}");
        return EXIT_BAD_INPUT;
    }
    let files = match scenario_files(&paths) {
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
            Ok(scenario) => say_ok(&crate::names::one_line_path(file), &scenario),
            Err(errors) => {
                for err in errors {
                    errln!("{err}");
                }
                code = EXIT_BAD_INPUT;
            }
        }
    }
    if !job_files.is_empty() {
        match super::plan_cmd::compose_job_files(&job_files, &args.given, &[], args.strict) {
            Ok(composed) => {
                let shown: Vec<String> = job_files
                    .iter()
                    .map(|f| crate::names::one_line_path(f))
                    .collect();
                say_ok(&shown.join(" "), &composed.scenario);
            }
            Err(message) => {
                errln!("{message}");
                code = EXIT_BAD_INPUT;
            }
        }
    }
    code
}

/// `ok FILE: NAME (what it holds)`.
fn say_ok(shown: &str, scenario: &crate::model::scenario::Scenario) {
    let allocations: u64 = scenario
        .jobs
        .iter()
        .flat_map(|j| &j.groups)
        .map(|g| u64::from(g.count))
        .sum();
    super::output::out(&format!(
        "ok {shown}: {} ({} nodes, {} volumes, {} jobs, {} allocations, {} events)\n",
        scenario.name,
        scenario.nodes.len(),
        scenario.volumes.len(),
        scenario.jobs.len(),
        allocations,
        scenario.events.len()
    ));
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
