//! `cargo bench`: the event queue alone, the node shuffle of one evaluation
//! on a 40,000-node cluster, one placement on a 5,000-node
//! cluster, the C1M shapes end to end (and the SimPy peer's workload), the
//! report's scenario, the sweep pipeline's parts (replaying an experiment's
//! runs, their journal lines, the outputs rendered from them), and the
//! scaling shapes of benches/scale/ (4,000 per job, 1,250 vs 40,000 nodes,
//! 4,000,000 allocations).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plansim::engine::queue::EventQueue;
use plansim::engine::rng::{SimRng, Stream};
use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::model::time::Millis;
use plansim::sim::{RunOptions, simulate};

fn scenario(relative: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    plansim::scenario::load_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn run(scenario: &Scenario, policy: Policy, seed: u64) -> u64 {
    let output = simulate(scenario, RunOptions::new(policy, seed));
    output.metrics.events
}

/// A million events through the queue: each pop schedules a successor a
/// pseudo-random delay later, like a simulation does, so the heap stays full.
fn event_queue(c: &mut Criterion) {
    const EVENTS: u64 = 1_000_000;
    const LIVE: u64 = 10_000;
    let mut group = c.benchmark_group("event_queue");
    group.throughput(Throughput::Elements(EVENTS));
    group.bench_function("schedule_and_pop_1M", |b| {
        b.iter(|| {
            let mut queue = EventQueue::with_capacity(LIVE as usize);
            let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
            for i in 0..LIVE {
                queue.schedule(Millis(i), i);
            }
            let mut popped = 0u64;
            while let Some((_, event)) = queue.pop_until(Millis(u64::from(u32::MAX))) {
                popped += 1;
                if popped + LIVE <= EVENTS {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    queue.schedule_in(Millis(state & 1023), event);
                }
            }
            black_box(popped)
        })
    });
    group.finish();
}

/// One evaluation's node shuffle on a 40,000-node cluster: a draw per
/// node, which at 1,000 placements an evaluation is what the cluster's size
/// adds to each placement (README, Performance: cluster size).
fn node_shuffle(c: &mut Criterion) {
    const NODES: u32 = 40_000;
    let mut group = c.benchmark_group("node_shuffle");
    group.throughput(Throughput::Elements(u64::from(NODES)));
    let mut rng = SimRng::new(1, Stream::NodeShuffle);
    let mut order: Vec<u32> = (0..NODES).collect();
    group.bench_function("40000_nodes", |b| {
        b.iter(|| {
            rng.shuffle(black_box(&mut order));
            black_box(order[0])
        })
    });
    group.finish();
}

fn one_placement(c: &mut Criterion) {
    let yaml = "\
nodes:
  - {id: \"node-{i}\", count: 5000, cpu: 100000, memory: 100000, disk: 300000, csi_plugins: [{id: csi}]}
plugins:
  - {id: csi, enforces_access_mode: true}
volumes:
  - {id: data, plugin_id: csi, access_mode: single-node-writer}
jobs:
  - id: db
    groups:
      - {name: g, volumes: {v: {type: csi, source: data}}, tasks: [{name: t}]}
";
    let scenario = plansim::scenario::load_str(yaml, "bench.yaml", "bench").unwrap();
    let mut group = c.benchmark_group("placement");
    for policy in [Policy::Naive, Policy::PlanAware] {
        group.bench_function(format!("one_alloc_5000_nodes/{policy}"), |b| {
            b.iter(|| black_box(run(&scenario, policy, 1)))
        });
    }
    group.finish();
}

fn c1m(c: &mut Criterion) {
    let mut group = c.benchmark_group("c1m");
    group.sample_size(10);
    for (file, allocations) in [
        ("scale-scenarios/c1m.yaml", 1_000_000),
        ("scale-scenarios/c1m-csi.yaml", 200_000),
        ("scale-scenarios/workload-100x1000.yaml", 100_000),
    ] {
        let scenario = scenario(file);
        group.throughput(Throughput::Elements(allocations));
        for policy in [Policy::Naive, Policy::PlanAware] {
            group.bench_function(format!("{}/{policy}", scenario.name), |b| {
                b.iter(|| black_box(run(&scenario, policy, 1)))
            });
        }
    }
    group.finish();
}

/// The #16 scaling shapes (benches/scale/, not run by CI), naive only,
/// throughput in placements so criterion reports the cost per placement:
/// 250 jobs x 4,000 allocations against C1M's 1,000 x 1,000, the
/// same 100,000 placements on 1,250 and on 40,000 nodes, and 1,000 jobs
/// x 4,000 (4,000,000 allocations).
fn scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    for (file, allocations) in [
        ("benches/scale/nodes-1250.yaml", 100_000),
        ("benches/scale/nodes-40000.yaml", 100_000),
        ("benches/scale/per-job-4000.yaml", 1_000_000),
        ("benches/scale/c4m.yaml", 4_000_000),
    ] {
        let scenario = scenario(file);
        group.throughput(Throughput::Elements(allocations));
        group.bench_function(format!("{}/naive", scenario.name), |b| {
            b.iter(|| black_box(run(&scenario, Policy::Naive, 1)))
        });
    }
    group.finish();
}

fn report_scenario(c: &mut Criterion) {
    let scenario = scenario("scenarios/csi-single-reader-count2.yaml");
    let mut group = c.benchmark_group("report_scenario");
    group.throughput(Throughput::Elements(Policy::ALL.len() as u64));
    group.bench_function("all_policies", |b| {
        b.iter(|| {
            Policy::ALL
                .iter()
                .map(|&p| run(&scenario, p, 7))
                .sum::<u64>()
        })
    });
    group.finish();
}

/// `experiments/report-grid.yaml` (1,000 runs): the runs replayed in a
/// loop (what a sweep cannot beat), their journal lines as the workers
/// format them, and every output a finished sweep renders from them.
fn sweep_pipeline(c: &mut Criterion) {
    use plansim::experiment::grid::coord;
    use plansim::report::{journal, sweep};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/report-grid.yaml");
    let experiment = plansim::experiment::spec::load(&path, None).unwrap_or_else(|e| panic!("{e}"));
    let replay = || -> Vec<plansim::model::metrics::Metrics> {
        (0..experiment.runs())
            .map(|index| {
                let c = coord(&experiment, index);
                let scenario = &experiment.points[c.point].scenario;
                simulate(scenario, RunOptions::new(c.policy, c.seed)).metrics
            })
            .collect()
    };
    let runs = replay();
    let mut group = c.benchmark_group("sweep_pipeline");
    group.throughput(Throughput::Elements(runs.len() as u64));
    group.bench_function("replay_report_grid", |b| b.iter(|| black_box(replay())));
    group.bench_function("journal_lines", |b| {
        b.iter(|| {
            let mut lines = Vec::new();
            for (index, metrics) in runs.iter().enumerate() {
                journal::push_record(&mut lines, index, metrics);
            }
            black_box(lines)
        })
    });
    group.bench_function("render_outputs", |b| {
        let header = journal::Header {
            fingerprint: "bench".into(),
            runs: runs.len(),
            shard: "1/1".into(),
        };
        b.iter(|| {
            let outputs = sweep::render_summaries(&experiment, &runs).unwrap();
            black_box((
                outputs,
                sweep::runs_csv(&experiment, &runs),
                journal::render_sorted(&header, &runs),
            ))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    event_queue,
    node_shuffle,
    one_placement,
    report_scenario,
    c1m,
    sweep_pipeline,
    scale
);
criterion_main!(benches);
