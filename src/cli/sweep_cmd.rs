//! `plansim sweep EXPERIMENT.yaml [--jobs N] [--out DIR] [--shard I/N] [--resume]`
//! and `plansim merge SHARD_DIR... --out DIR`.

use std::path::PathBuf;
use std::sync::atomic::Ordering as AtomicOrdering;

use super::interrupt::{self, EXIT_INTERRUPTED, INTERRUPTED};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::inputs::{FileKind, file_kind};
use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln};
use crate::experiment::grid::Shard;
use crate::sweep::{self, Sweep};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The experiment file.
    experiment: PathBuf,
    /// Worker threads (default: every core). Never changes a byte of output.
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: Option<u16>,
    /// Output directory (default: sweep-<experiment name>).
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only the I-th of N disjoint slices of the runs (merge them with `plansim merge`).
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Continue a sweep in DIR: skip the runs it already recorded.
    #[arg(long)]
    resume: bool,
    /// Write into an --out directory plansim did not write (never over an input, a symlink or a non-regular file).
    #[arg(long)]
    force: bool,
    /// No progress bar and no summary lines.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Directories written by `plansim sweep --shard I/N`, one per shard.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Where to write the merged results.
    #[arg(short, long, value_name = "DIR")]
    out: PathBuf,
    /// Write into an --out directory plansim did not write (never into a shard, a symlink or a non-regular file).
    #[arg(long)]
    force: bool,
    /// No summary lines.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: SweepArgs) -> u8 {
    // The first Ctrl-C stops new runs: finished runs are journaled, and
    // the sweep stops so `--resume` can finish it. A second stops at once.
    interrupt::graceful();
    match sweep_command(&args) {
        Ok(()) if INTERRUPTED.load(AtomicOrdering::SeqCst) => EXIT_INTERRUPTED,
        Ok(()) => EXIT_OK,
        Err(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

pub fn merge(args: MergeArgs) -> u8 {
    match merge_command(&args) {
        Ok(()) => EXIT_OK,
        Err(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

fn sweep_command(args: &SweepArgs) -> Result<(), String> {
    if file_kind(&args.experiment) == FileKind::Scenario {
        return Err(format!(
            "{}: this is a scenario file: use plansim run {} (an experiment file names its scenario with `scenario:`; see docs/experiment-format.md)",
            crate::names::one_line_path(&args.experiment),
            crate::names::one_line_path(&args.experiment)
        ));
    }
    let experiment = sweep::load(&args.experiment)?;
    if !args.quiet {
        for warning in &experiment.warnings {
            errln!("warning: {warning}");
        }
    }
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| sweep::default_out(&experiment));
    let mut sweep = Sweep::prepare(
        experiment,
        &args.experiment,
        &out,
        shard,
        args.resume,
        args.force,
    )?;
    let pool = worker_pool(args.jobs)?;
    let progress = progress_bar(sweep.to_run(), args.quiet);
    let this_time = sweep.run(&pool, &INTERRUPTED, &|runs| progress.inc(runs))?;
    progress.finish_and_clear();
    let (recorded, owned) = (sweep.recorded(), sweep.owned());
    if INTERRUPTED.load(AtomicOrdering::SeqCst) {
        errln!(
            "interrupted: {recorded} of {owned} runs recorded in {} ({this_time} this time); run the same command with --resume to finish",
            crate::names::one_line_path(&out)
        );
        return Ok(());
    }
    if !args.quiet {
        let runs = if shard == Shard::WHOLE {
            format!("{recorded} runs")
        } else {
            format!(
                "shard {shard}: {recorded} of {} runs",
                sweep.experiment().runs()
            )
        };
        errln!(
            "{runs} recorded in {} ({this_time} this time)",
            crate::names::one_line_path(&out)
        );
    }
    if shard != Shard::WHOLE {
        if !args.quiet {
            errln!("merge the shards with: plansim merge SHARD_DIR... --out DIR");
        }
        return Ok(());
    }
    // The outputs are rendered on the same --jobs threads as the runs.
    let rendered = sweep.render(&pool)?;
    print_rendered(&rendered, args.quiet);
    Ok(())
}

/// `--jobs` worker threads (default: every core), for the runs and the
/// outputs alike.
fn worker_pool(jobs: Option<u16>) -> Result<rayon::ThreadPool, String> {
    let threads = jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| format!("cannot start {threads} worker threads: {err}"))
}

fn print_rendered(rendered: &sweep::Rendered, quiet: bool) {
    if quiet {
        return;
    }
    for line in &rendered.headlines {
        super::output::out(&format!("{line}\n"));
    }
    errln!(
        "wrote {}",
        crate::names::one_line_path(&rendered.index_html)
    );
}

fn merge_command(args: &MergeArgs) -> Result<(), String> {
    let pool = worker_pool(None)?;
    let quiet = args.quiet;
    let rendered = sweep::merge(&args.shards, &args.out, args.force, &pool, &mut |line| {
        if !quiet {
            errln!("{line}");
        }
    })?;
    print_rendered(&rendered, args.quiet);
    Ok(())
}

fn progress_bar(total: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    // stderr draws nothing when it is not a terminal.
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {rate}  ETA {eta}")
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} runs/s", state.per_sec());
            },
        );
    bar.set_style(style);
    bar
}
