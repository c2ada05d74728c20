#!/usr/bin/env bash
# Runs the same M/M/1 queueing workload in SimPy (the reference Python
# discrete-event library) and on plansim's engine, and prints the ratio of
# their event rates. Installs SimPy into a local virtual environment
# (target/peer-venv) from the package registry. Not part of `cargo test`.
# Usage: scripts/peer-simpy.sh [CUSTOMERS]   (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
customers="${1:-200000}"
venv=target/peer-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet simpy
fi
cargo build --release --quiet --example mm1
simpy_line="$("$venv/bin/python" scripts/peer_simpy_mm1.py "$customers")"
plansim_line="$("${CARGO_TARGET_DIR:-target}/release/examples/mm1" "$customers")"
echo "$simpy_line"
echo "$plansim_line"
rate() { sed -n 's/.*events_per_s=\([0-9]*\).*/\1/p' <<<"$1"; }
awk -v p="$(rate "$plansim_line")" -v s="$(rate "$simpy_line")" \
  'BEGIN { printf "plansim engine / SimPy events per second: %.1fx\n", p / s }'
