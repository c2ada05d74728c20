use std::process::ExitCode;

fn main() -> ExitCode {
    plansim::cli::main()
}
