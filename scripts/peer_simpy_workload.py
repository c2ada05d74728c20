"""plansim's scheduling workload as a plain SimPy model, for a side-by-side
timing (scripts/peer-simpy-workload.sh).

It models what src/sim/ does for service jobs without volumes: an
evaluation broker (one waiting and one in-flight evaluation per job, highest
priority first, FIFO among equals), scheduler workers that plan against the
state of the moment they take an evaluation and submit their plan
`scheduler_latency` later, a serial plan applier that re-checks each node's
part of a plan, and allocations that start running `pull_delay` after they
are placed. Each placement runs plansim's stack: the candidate nodes shuffled
once per evaluation, feasibility (drivers, cpu, memory), Nomad's bin-pack
fitness (src/sim/rank.rs binpack_score, bit for bit), job anti-affinity, and
the limit iterator (score_limit, the skip threshold, the iterator offset and
first-best on ties, as select_node in src/sim/scheduler.rs).

Usage: python peer_simpy_workload.py SCENARIO.yaml [--seed N]
                 [--exact-shuffle] [--trace FILE] [--libm-pow]
Prints one line: the counts plansim reports (placed, evals, plans, events,
first_full_s) and the seconds the simulation took.

--exact-shuffle draws the node order from plansim's own random stream
(ChaCha8, seeded as src/engine/rng.rs does, Fisher-Yates with rejection
sampling) instead of Python's `random`; with it, --trace writes the same
event log, byte for byte, as `plansim run --trace` does for the scenario.
The timed runs use Python's `random`, which is what a SimPy modeller would
write: the counts do not depend on which shuffle is used.
"""

import argparse
import heapq
import random
import re
import sys
import time

import simpy
import yaml

LN_10 = 2.302585092994046  # std::f64::consts::LN_10
INV_3, INV_6, INV_7, INV_9 = 1.0 / 3.0, 1.0 / 6.0, 1.0 / 7.0, 1.0 / 9.0
SKIP_THRESHOLD = 0.0
MAX_SKIP = 3
MAX_SERVICE_ATTEMPTS = 5
# Why a node is filtered out: the texts plansim's trace shows, in the order
# of its FilterReason enum (ties go to the first).
MISSING_DRIVERS = "missing drivers"
CPU_EXHAUSTED = 'Dimension "cpu" exhausted'
MEMORY_EXHAUSTED = 'Dimension "memory" exhausted'
NO_NODES = "No nodes were eligible for evaluation"
REASONS = [MISSING_DRIVERS, CPU_EXHAUSTED, MEMORY_EXHAUSTED, NO_NODES]
MASK32 = 0xFFFFFFFF
U64_MAX = (1 << 64) - 1


def pow10_unit(x):
    """10^x for x in [0, 1] with the operations of rank.rs pow10_unit, in
    the same order, so the result is the same double. Written out (the
    Horner steps unrolled; x >= 0, so |y| is y) because it is the model's
    hottest function."""
    y = x * LN_10
    squarings = 0
    while y > 0.125:
        y *= 0.5
        squarings += 1
    # Horner's rule from 1/10 down to 1/1; the first step's `* 1.0` is exact.
    total = 1.0 + y * 0.1
    total = 1.0 + y * INV_9 * total
    total = 1.0 + y * 0.125 * total
    total = 1.0 + y * INV_7 * total
    total = 1.0 + y * INV_6 * total
    total = 1.0 + y * 0.2 * total
    total = 1.0 + y * 0.25 * total
    total = 1.0 + y * INV_3 * total
    total = 1.0 + y * 0.5 * total
    total = 1.0 + y * 1.0 * total
    for _ in range(squarings):
        total *= total
    return total


def clamp(x, low, high):
    return low if x < low else high if x > high else x


def binpack_score(used_cpu, cpu, used_memory, memory, pow10=pow10_unit):
    free_cpu = 1.0 - used_cpu / cpu
    free_memory = 1.0 - used_memory / memory
    total = pow10(clamp(free_cpu, 0.0, 1.0)) + pow10(clamp(free_memory, 0.0, 1.0))
    return clamp(20.0 - total, 0.0, 18.0) / 18.0


def libm_pow10(x):
    return 10.0 ** x


def score_limit(candidates, batch):
    if batch or candidates <= 1:
        return 2
    return max((candidates - 1).bit_length(), 2)


class ChaChaShuffle:
    """plansim's node-shuffle stream: ChaCha8 keyed by (seed, stream 1)."""

    def __init__(self, seed):
        key = seed.to_bytes(8, "little") + (1).to_bytes(8, "little") + bytes(16)
        self.key = [int.from_bytes(key[i:i + 4], "little") for i in range(0, 32, 4)]
        self.counter = 0
        self.words = []
        self.next_word = 0

    def _block(self):
        state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *self.key,
                 self.counter & MASK32, self.counter >> 32, 0, 0]
        x = list(state)

        def quarter(a, b, c, d):
            x[a] = (x[a] + x[b]) & MASK32
            x[d] ^= x[a]
            x[d] = ((x[d] << 16) | (x[d] >> 16)) & MASK32
            x[c] = (x[c] + x[d]) & MASK32
            x[b] ^= x[c]
            x[b] = ((x[b] << 12) | (x[b] >> 20)) & MASK32
            x[a] = (x[a] + x[b]) & MASK32
            x[d] ^= x[a]
            x[d] = ((x[d] << 8) | (x[d] >> 24)) & MASK32
            x[c] = (x[c] + x[d]) & MASK32
            x[b] ^= x[c]
            x[b] = ((x[b] << 7) | (x[b] >> 25)) & MASK32

        for _ in range(4):  # 8 rounds
            quarter(0, 4, 8, 12)
            quarter(1, 5, 9, 13)
            quarter(2, 6, 10, 14)
            quarter(3, 7, 11, 15)
            quarter(0, 5, 10, 15)
            quarter(1, 6, 11, 12)
            quarter(2, 7, 8, 13)
            quarter(3, 4, 9, 14)
        self.counter += 1
        self.words = [(a + b) & MASK32 for a, b in zip(x, state)]
        self.next_word = 0

    def next_u64(self):
        if self.next_word >= len(self.words):
            self._block()
        low, high = self.words[self.next_word], self.words[self.next_word + 1]
        self.next_word += 2
        return low | (high << 32)

    def below(self, bound):
        zone = U64_MAX - (U64_MAX % bound)
        while True:
            draw = self.next_u64()
            if draw < zone:
                return draw % bound

    def shuffle(self, items):
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]


DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def millis(text):
    parts = DURATION.findall(str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        sys.exit(f"unsupported duration {text!r}")
    return sum(int(n) * UNIT_MS[u] for n, u in parts)


def stamp(entry, key, count_key):
    count = entry.get(count_key, 1)
    return [str(entry[key]).replace("{i}", str(i)) for i in range(count)]


class Workload:
    """The part of a scenario this model covers; anything else is refused,
    so a timing never compares different work."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
        unsupported = {"volumes", "plugins", "events"} & {k for k, v in raw.items() if v}
        if unsupported:
            sys.exit(f"{path}: the SimPy model has no {', '.join(sorted(unsupported))}")
        cluster = raw.get("cluster") or {}
        if set(cluster) - {"scheduler_workers", "scheduler_latency", "pull_delay"}:
            sys.exit(f"{path}: the SimPy model supports only scheduler_workers, "
                     "scheduler_latency and pull_delay under cluster")
        self.seed = int(raw.get("seed", 0))
        self.horizon = millis(raw.get("horizon", "1h"))
        self.workers = int(cluster.get("scheduler_workers", 1))
        self.latency = millis(cluster.get("scheduler_latency", "10ms"))
        self.pull_delay = millis(cluster.get("pull_delay", "2s"))
        self.node_names, self.node_cpu, self.node_memory, self.node_drivers = [], [], [], []
        for spec in raw["nodes"]:
            if set(spec) - {"id", "count", "cpu", "memory", "drivers"}:
                sys.exit(f"{path}: the SimPy model supports only id, count, cpu, memory, drivers on nodes")
            for name in stamp(spec, "id", "count"):
                self.node_names.append(name)
                self.node_cpu.append(int(spec["cpu"]))
                self.node_memory.append(int(spec["memory"]))
                self.node_drivers.append(frozenset(spec.get("drivers", ["docker", "exec"])))
        # One group per job: (name, group, count, cpu, memory, drivers, priority).
        self.jobs = []
        for spec in raw["jobs"]:
            if (set(spec) - {"id", "replicas", "groups", "priority", "type"}
                    or spec.get("type", "service") != "service" or len(spec["groups"]) != 1):
                sys.exit(f"{path}: the SimPy model supports service jobs with one group only")
            group = spec["groups"][0]
            if set(group) - {"name", "count", "tasks"}:
                sys.exit(f"{path}: the SimPy model supports only name, count and tasks in a group")
            tasks = group["tasks"]
            for name in stamp(spec, "id", "replicas"):
                self.jobs.append((
                    name, group["name"], int(group.get("count", 1)),
                    sum(int(t["cpu"]) for t in tasks), sum(int(t["memory"]) for t in tasks),
                    frozenset(t.get("driver", "docker") for t in tasks),
                    int(spec.get("priority", 50)),
                ))


class Cluster:
    def __init__(self, env, workload, seed, exact_shuffle, trace, pow10):
        self.env = env
        self.pow10 = pow10
        self.w = workload
        n = len(workload.node_names)
        self.used_cpu = [0] * n
        self.used_memory = [0] * n
        # Live allocations per job on each node, for anti-affinity.
        self.job_allocs = [dict() for _ in range(n)]
        self.rng = ChaChaShuffle(seed) if exact_shuffle else random.Random(seed)
        self.ready = []  # the broker: a heap of (-priority, arrival, job, attempt)
        self.arrival = 0
        self.queued = [False] * len(workload.jobs)
        self.in_flight = [False] * len(workload.jobs)
        self.latest = [dict() for _ in workload.jobs]  # index -> alloc id
        self.running = [0] * len(workload.jobs)
        self.unsatisfied = 0
        self.submitted = 0
        self.allocs = 0  # allocation ids handed out
        self.idle = list(range(workload.workers))
        self.wake = [env.event() for _ in range(workload.workers)]
        self.trace = trace
        self.counts = {"placed": 0, "evals": 0, "plans": 0, "events": 0,
                       "infeasible": 0, "plan_rejections": 0}
        self.first_full = None
        for worker in range(workload.workers):
            env.process(self.worker(worker))
        env.process(self.submitter())

    def record(self, kind, job, index=None, node=None, detail=""):
        self.counts["events"] += 1
        if self.trace is not None:
            name, group = self.w.jobs[job][0], self.w.jobs[job][1]
            alloc = "" if index is None else f"{name}.{group}[{index}]"
            node_name = "" if node is None else self.w.node_names[node]
            if any(c in detail for c in ',"\r\n'):
                detail = '"' + detail.replace('"', '""') + '"'
            self.trace.write(f"{self.env.now / 1000:.3f},{kind},{name},"
                             f"{group if index is not None else ''},{alloc},{node_name},,{detail}\n")

    # --- jobs, broker, workers ------------------------------------------------

    def submitter(self):
        for job in range(len(self.w.jobs)):
            self.submitted += 1
            self.record("job_submitted", job)
            self.unsatisfied += 1
            self.enqueue(job, 0)
        yield self.env.timeout(0)

    def enqueue(self, job, attempt):
        # plansim re-evaluates a job asked for while its evaluation is in
        # flight; nothing in this model asks then (submission happens once,
        # a retry after the plan is applied), so that case is left out.
        if self.queued[job] or self.in_flight[job]:
            return
        self.queued[job] = True
        heapq.heappush(self.ready, (-self.w.jobs[job][6], self.arrival, job, attempt))
        self.arrival += 1
        self.dispatch()

    def dispatch(self):
        while self.idle and self.ready:
            worker = min(self.idle)
            self.idle.remove(worker)
            _, _, job, attempt = heapq.heappop(self.ready)
            self.queued[job] = False
            self.in_flight[job] = True
            self.counts["evals"] += 1
            self.record("eval", job, detail=f"worker {worker}, attempt {attempt + 1}")
            plan = self.schedule(job, attempt)
            self.wake[worker].succeed(plan)

    def worker(self, worker):
        while True:
            plan = yield self.wake[worker]
            self.wake[worker] = self.env.event()
            yield self.env.timeout(self.w.latency)
            job = plan[0]
            fully_applied = self.apply_plan(plan)
            self.in_flight[job] = False
            self.idle.append(worker)
            # A partly rejected plan is retried (Nomad: five attempts for a
            # service job), then the job waits blocked; nothing ever frees
            # capacity in this model, so a blocked job stays blocked.
            if not fully_applied and plan[1] + 1 < MAX_SERVICE_ATTEMPTS:
                self.enqueue(job, plan[1] + 1)
            self.dispatch()

    # --- the scheduler ------------------------------------------------------------

    def schedule(self, job, attempt):
        _, _, count, cpu, memory, drivers, _ = self.w.jobs[job]
        wants = [index for index in range(count) if index not in self.latest[job]]
        placements = []
        if not wants:
            return (job, attempt, placements)
        order = list(range(len(self.w.node_names)))
        self.rng.shuffle(order)
        context = {"order": order, "offset": 0, "resources": {}, "on_node": {}}
        for index in wants:
            node = self.select_node(context, job, count, cpu, memory, drivers)
            if type(node) is str:
                self.counts["infeasible"] += 1
                self.record("infeasible", job, index, detail=node)
                continue
            used = context["resources"].get(node, (0, 0))
            context["resources"][node] = (used[0] + cpu, used[1] + memory)
            context["on_node"][node] = context["on_node"].get(node, 0) + 1
            placements.append((index, node))
        return (job, attempt, placements)

    def select_node(self, context, job, count, cpu, memory, drivers):
        order = context["order"]
        total = len(order)
        if total == 0:
            return NO_NODES
        limit = score_limit(total, False)
        taken, skipped, filtered = [], [], {}
        visited = 0
        offset = context["offset"]
        while visited < total and len(taken) < limit:
            node = order[(offset + visited) % total]
            visited += 1
            score = self.score_node(context, node, job, count, cpu, memory, drivers)
            if type(score) is str:
                filtered[score] = filtered.get(score, 0) + 1
                continue
            if score <= SKIP_THRESHOLD and len(skipped) < MAX_SKIP:
                skipped.append((node, score))
            else:
                taken.append((node, score))
        context["offset"] = (offset + visited) % total
        taken.extend(skipped[:max(limit - len(taken), 0)])
        best = None
        for node, score in taken:
            if best is None or score > best[1]:
                best = (node, score)
        if best is None:
            # The reason filtering the most nodes, the first in plansim's
            # order of reasons on a tie (feasibility.rs top_reason).
            return max(REASONS, key=lambda reason: (filtered.get(reason, 0), -REASONS.index(reason)))
        return best[0]

    def score_node(self, context, node, job, count, cpu, memory, drivers):
        if not drivers <= self.w.node_drivers[node]:
            return MISSING_DRIVERS
        plan_cpu, plan_memory = context["resources"].get(node, (0, 0))
        used_cpu = self.used_cpu[node] + plan_cpu + cpu
        used_memory = self.used_memory[node] + plan_memory + memory
        if used_cpu > self.w.node_cpu[node]:
            return CPU_EXHAUSTED
        if used_memory > self.w.node_memory[node]:
            return MEMORY_EXHAUSTED
        fitness = binpack_score(used_cpu, self.w.node_cpu[node], used_memory,
                                self.w.node_memory[node], self.pow10)
        collisions = self.job_allocs[node].get(job, 0) + context["on_node"].get(node, 0)
        if collisions == 0:
            return fitness
        # The mean of the two scores (rank.rs final_score), same bits.
        return (fitness + -(float(collisions) + 1.0) / count) / 2.0

    # --- the plan applier -----------------------------------------------------

    def apply_plan(self, plan):
        job, _, placements = plan
        if not placements:
            return True
        self.counts["plans"] += 1
        by_node = {}
        for index, node in placements:
            by_node.setdefault(node, []).append(index)
        _, _, _, cpu, memory, _, _ = self.w.jobs[job]
        fully_applied = True
        for node, indices in by_node.items():
            if (self.used_cpu[node] + cpu * len(indices) > self.w.node_cpu[node]
                    or self.used_memory[node] + memory * len(indices) > self.w.node_memory[node]):
                fully_applied = False
                self.counts["plan_rejections"] += 1
                self.record("plan_rejected", job, node=node,
                            detail=f"allocations no longer fit on node {self.w.node_names[node]}")
                continue
            for index in indices:
                self.commit(job, index, node, cpu, memory)
        return fully_applied

    def commit(self, job, index, node, cpu, memory):
        alloc = self.allocs
        self.allocs += 1
        self.used_cpu[node] += cpu
        self.used_memory[node] += memory
        allocs = self.job_allocs[node]
        allocs[job] = allocs.get(job, 0) + 1
        self.latest[job][index] = alloc
        self.counts["placed"] += 1
        self.record("placed", job, index, node)
        self.env.process(self.allocation(job, index, node))

    # --- the client -----------------------------------------------------------

    def allocation(self, job, index, node):
        yield self.env.timeout(self.w.pull_delay)
        self.running[job] += 1
        self.record("running", job, index, node)
        if self.running[job] == self.w.jobs[job][2]:
            self.unsatisfied -= 1
            if self.unsatisfied == 0 and self.submitted == len(self.w.jobs) and self.first_full is None:
                self.first_full = self.env.now


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--seed", type=int, help="override the scenario's seed")
    parser.add_argument("--exact-shuffle", action="store_true",
                        help="use plansim's ChaCha8 node shuffle (for --trace comparisons)")
    parser.add_argument("--trace", help="write the event log in plansim's trace format")
    parser.add_argument("--libm-pow", action="store_true",
                        help="score with Python's 10 ** x instead of plansim's series: faster, "
                             "not bit-identical (a last-bit difference can flip a tie)")
    args = parser.parse_args()
    workload = Workload(args.scenario)
    seed = workload.seed if args.seed is None else args.seed
    trace = None
    if args.trace:
        trace = open(args.trace, "w", encoding="utf-8", newline="\n")
        trace.write("time_s,event,job,group,alloc,node,volume,detail\n")
    started = time.perf_counter()
    env = simpy.Environment()
    pow10 = libm_pow10 if args.libm_pow else pow10_unit
    cluster = Cluster(env, workload, seed, args.exact_shuffle, trace, pow10)
    env.run(until=workload.horizon + 1)
    seconds = time.perf_counter() - started
    if trace is not None:
        trace.close()
    c = cluster.counts
    first_full = "" if cluster.first_full is None else f"{cluster.first_full / 1000:.3f}"
    print(f"simpy placed={c['placed']} evals={c['evals']} plans={c['plans']} "
          f"events={c['events']} infeasible={c['infeasible']} "
          f"plan_rejections={c['plan_rejections']} first_full_s={first_full} "
          f"seconds={seconds:.3f}")


if __name__ == "__main__":
    main()
