#!/usr/bin/env bash
# plansim against a plain SimPy model of the same scheduling workload
# (scripts/peer_simpy_workload.py), side by side on this machine.
#
# 1. Exactness: both write the run's event log; with plansim's own node
#    shuffle (--exact-shuffle) the SimPy model's log must be byte-identical.
# 2. Timing: REPS whole processes each, alternating (`plansim run SCENARIO
#    --scheduler naive` against the SimPy model with Python's own seeded
#    shuffle); medians and ranges of wall and CPU (user + sys) seconds, and
#    the ratio. The counts plansim reports (placed, evals, plans, events,
#    infeasible, plan_rejections, first_full_s) must equal the model's in
#    every repetition.
# Installs SimPy and PyYAML into target/peer-venv from the package registry.
# Not part of `cargo test`. Timings on a shared machine are noisy: CPU time
# is the steadier figure when other processes compete for the cores.
#
# Usage: scripts/peer-simpy-workload.sh [SCENARIO] [REPS]
#   (default scale-scenarios/workload-100x1000.yaml, 3 repetitions)
# Environment: PEER_LIBM_POW=1  time the model with Python's 10 ** x instead
#              of plansim's bit-exact series (the exactness check still uses
#              the series). A last-bit difference can flip a tie between two
#              nodes, so on a workload where plans collide the counts can
#              then differ; on the default workload they do not.
set -euo pipefail
scenario=""
if [ $# -ge 1 ]; then
  [ -f "$1" ] || { echo "no scenario file $1" >&2; exit 2; }
  scenario="$(realpath "$1")"
fi
reps="${2:-3}"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "REPS must be a positive integer, got '$reps'" >&2; exit 2; }
cd "$(dirname "$0")/.."
scenario="${scenario:-scale-scenarios/workload-100x1000.yaml}"
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 1; }

venv=target/peer-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import simpy, yaml' 2>/dev/null; then
  "$venv/bin/pip" install --quiet simpy pyyaml
fi
cargo build --release --locked --quiet
plansim="${CARGO_TARGET_DIR:-target}/release/plansim"
model=("$venv/bin/python" scripts/peer_simpy_workload.py "$scenario")
timed_model=("${model[@]}")
if [ "${PEER_LIBM_POW:-0}" = 1 ]; then
  timed_model+=(--libm-pow)
fi

work="$(mktemp -d target/peer-workload.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The counts of plansim's summary.csv, as key=value in the model's order.
plansim_counts() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    NR == 2 { printf "placed=%s evals=%s plans=%s events=%s infeasible=%s plan_rejections=%s first_full_s=%s\n",
      $col["placed"], $col["evals"], $col["plans"], $col["events"], $col["infeasible"],
      $col["plan_rejections"], $col["first_full_s"] }' "$1/summary.csv"
}
model_counts() { sed -e 's/^simpy //' -e 's/ seconds=.*//' "$1"; }

echo "workload: $scenario"
echo "exactness: event logs of plansim and of the SimPy model with plansim's shuffle"
"$plansim" run "$scenario" --scheduler naive --quiet --out "$work/trace" --trace
"${model[@]}" --exact-shuffle --trace "$work/model-trace.csv" >"$work/model-trace.out"
plansim_trace=("$work"/trace/trace-*.csv)
if ! cmp "$work/model-trace.csv" "${plansim_trace[0]}"; then
  diff "$work/model-trace.csv" "${plansim_trace[0]}" | head -n 10 >&2
  echo "FAILED: the SimPy model's event log differs from plansim's (first lines above)" >&2
  exit 1
fi
echo "  identical: $(($(wc -l <"${plansim_trace[0]}") - 1)) events, $(wc -c <"${plansim_trace[0]}") bytes"

# One timed process: appends "wall cpu" to FILE.
timed() {
  local file="$1"
  shift
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@"
  awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$work/time" >>"$file"
}

echo "timing: $reps repetitions each, alternating"
for rep in $(seq "$reps"); do
  timed "$work/plansim.times" "$plansim" run "$scenario" --scheduler naive --quiet --out "$work/plansim-$rep"
  timed "$work/model.times" "${timed_model[@]}" >"$work/model-$rep.out"
  ours="$(plansim_counts "$work/plansim-$rep")"
  theirs="$(model_counts "$work/model-$rep.out")"
  echo "  plansim: $ours  ($(tail -n 1 "$work/plansim.times" | awk '{ print $1 " s wall, " $2 " s cpu" }'))"
  echo "  simpy:   $theirs  ($(tail -n 1 "$work/model.times" | awk '{ print $1 " s wall, " $2 " s cpu" }'))"
  if [ "$ours" != "$theirs" ]; then
    echo "FAILED: the SimPy model's counts differ from plansim's" >&2
    exit 1
  fi
done

# Median (and range) of column $2 of file $1.
stats() {
  sort -n -k "$2" "$1" | awk -v k="$2" '{ v[NR] = $k }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
          printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
read -r pw pw_lo pw_hi < <(stats "$work/plansim.times" 1)
read -r pc pc_lo pc_hi < <(stats "$work/plansim.times" 2)
read -r sw sw_lo sw_hi < <(stats "$work/model.times" 1)
read -r sc sc_lo sc_hi < <(stats "$work/model.times" 2)
echo "medians of $reps (range):"
echo "  plansim: wall $pw s ($pw_lo-$pw_hi), cpu $pc s ($pc_lo-$pc_hi)"
echo "  simpy:   wall $sw s ($sw_lo-$sw_hi), cpu $sc s ($sc_lo-$sc_hi)"
awk -v pw="$pw" -v sw="$sw" -v pc="$pc" -v sc="$sc" 'BEGIN {
  printf "plansim / SimPy on the same workload: %.1fx faster (wall), %.1fx (cpu)\n", sw / pw, sc / pc }'
