//! The ceiling a sweep is measured against: every run of an experiment
//! replayed in-process (`sim::simulate` in a loop, nothing written), on
//! THREADS threads. `plansim sweep` of the same experiment does the same
//! runs plus its journal and outputs; README's performance section puts
//! the two side by side. Usage:
//! `cargo run --release --example replay -- EXPERIMENT.yaml [THREADS]`.

// A test or example prints for the person running it; plansim's own
// shell prints only through cli::output (see clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use plansim::experiment::grid::coord;
use plansim::experiment::spec;
use plansim::sim::{RunOptions, simulate};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: replay EXPERIMENT.yaml [THREADS]");
        std::process::exit(2);
    };
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let experiment = spec::load(Path::new(&file), None).unwrap_or_else(|err| {
        eprintln!("{err}");
        std::process::exit(2)
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let runs = experiment.runs();
    // Benchmarks time the host; the model itself never reads a clock.
    #[allow(clippy::disallowed_methods)]
    let start = Instant::now();
    let events: u64 = pool.install(|| {
        (0..runs)
            .into_par_iter()
            .map(|index| {
                let c = coord(&experiment, index);
                let output = simulate(
                    &experiment.points[c.point].scenario,
                    RunOptions::new(c.policy, c.seed),
                );
                output.metrics.events
            })
            .sum()
    });
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{runs} runs on {threads} thread(s) in {seconds:.3} s: {:.0} runs/s ({events} events)",
        runs as f64 / seconds
    );
}
