"""The peer-comparison workload in SimPy: the same M/M/1 queue as
examples/mm1.rs (mean interarrival 1 s, mean service 0.8 s, one FIFO server).
Usage: python peer_simpy_mm1.py CUSTOMERS"""
import random
import sys
import time

import simpy


def main():
    customers = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rng = random.Random(1)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    stats = {"served": 0, "wait": 0.0}

    def customer(env):
        arrived = env.now
        with server.request() as request:
            yield request
            stats["wait"] += env.now - arrived
            yield env.timeout(rng.expovariate(1 / 0.8))
        stats["served"] += 1

    def source(env):
        for _ in range(customers):
            env.process(customer(env))
            yield env.timeout(rng.expovariate(1 / 1.0))

    started = time.perf_counter()
    env.process(source(env))
    env.run()
    seconds = time.perf_counter() - started
    # One arrival and one departure per customer: the events the plansim
    # version counts (SimPy's internal request/release events are extra work
    # it does for the same model).
    events = 2 * stats["served"]
    print(
        f"simpy customers={stats['served']} events={events} "
        f"mean_wait_s={stats['wait'] / stats['served']:.3f} seconds={seconds:.3f} "
        f"events_per_s={events / seconds:.0f}"
    )


if __name__ == "__main__":
    main()
