//! The peer-comparison workload on plansim's engine: an M/M/1 queue
//! (Poisson arrivals, one FIFO server, exponential service), the classic
//! discrete-event benchmark. `scripts/peer-simpy.sh` runs the same model in
//! SimPy and prints the ratio. Usage: `cargo run --release --example mm1 -- CUSTOMERS`.

// A test or example prints for the person running it; plansim's own
// shell prints only through cli::output (see clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::collections::VecDeque;
use std::time::Instant;

use plansim::engine::queue::EventQueue;
use plansim::engine::rng::{SimRng, Stream};
use plansim::model::time::Millis;

#[derive(Clone, Copy)]
enum Event {
    Arrival,
    Departure,
}

/// An exponential delay in whole milliseconds with the given mean.
fn exponential(rng: &mut SimRng, mean_ms: f64) -> Millis {
    let uniform = (rng.below(1 << 53) as f64 + 0.5) / (1u64 << 53) as f64;
    Millis((-uniform.ln() * mean_ms).round() as u64)
}

fn main() {
    let customers: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // Benchmarks time the host; the model itself never reads a clock.
    #[allow(clippy::disallowed_methods)]
    let started = Instant::now();
    let mut rng = SimRng::new(1, Stream::NodeShuffle);
    let mut queue = EventQueue::new();
    let mut waiting: VecDeque<Millis> = VecDeque::new();
    let (mut arrived, mut served, mut events) = (0u64, 0u64, 0u64);
    let mut busy = false;
    let mut total_wait = 0u64;
    queue.schedule(Millis::ZERO, Event::Arrival);
    while let Some((now, event)) = queue.pop_until(Millis(u64::from(u32::MAX))) {
        events += 1;
        match event {
            Event::Arrival => {
                arrived += 1;
                if arrived < customers {
                    queue.schedule_in(exponential(&mut rng, 1000.0), Event::Arrival);
                }
                if busy {
                    waiting.push_back(now);
                } else {
                    busy = true;
                    queue.schedule_in(exponential(&mut rng, 800.0), Event::Departure);
                }
            }
            Event::Departure => {
                served += 1;
                match waiting.pop_front() {
                    Some(since) => {
                        total_wait += (now - since).0;
                        queue.schedule_in(exponential(&mut rng, 800.0), Event::Departure);
                    }
                    None => busy = false,
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "plansim customers={served} events={events} mean_wait_s={:.3} seconds={seconds:.3} events_per_s={:.0}",
        total_wait as f64 / served as f64 / 1000.0,
        events as f64 / seconds
    );
}
