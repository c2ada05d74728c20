//! The command line: argument parsing and the commands. The thin shell that
//! reads files, calls the pure core and writes results.

mod app;
mod args;
mod crash;
mod diff_cmd;
mod explain_cmd;
mod hunt_cmd;
mod import_cmd;
mod inputs;
mod interrupt;
mod output;
mod plan_cmd;
mod run_cmd;
mod run_progress;
mod sweep_cmd;
mod validate_cmd;

pub use app::main;
pub use output::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, stdout_was_closed};
