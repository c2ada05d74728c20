//! The command line: argument parsing and the commands. The thin shell that
//! reads files, calls the pure core and writes results.

mod inputs;
mod run_cmd;
mod validate_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::model::policy::Policy;

/// Exit codes of the contract.
pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "plansim",
    version,
    about = "Deterministic simulator of Nomad's CSI volume scheduling: naive vs validate vs plan-aware"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay scenarios under each policy and compare them side by side.
    Run(run_cmd::RunArgs),
    /// Check scenarios without running them.
    Validate(validate_cmd::ValidateArgs),
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_OK
            });
        }
    };
    let code = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Validate(args) => validate_cmd::run(args),
    };
    ExitCode::from(code)
}

/// Parses a policy name for `--scheduler`.
fn parse_policy(name: &str) -> Result<Policy, String> {
    Policy::from_name(name).ok_or_else(|| {
        format!("unknown scheduler \"{name}\" (expected one of: naive, validate, plan-aware)")
    })
}
