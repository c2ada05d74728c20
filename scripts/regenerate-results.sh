#!/usr/bin/env bash
# Regenerates every golden result under results/ (never edit them by hand):
# the scenario comparison and every experiment in experiments/.
# Usage: scripts/regenerate-results.sh [RESULTS_DIR]   (default: results)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-results}"
cargo build --release --locked --quiet
# Cargo builds into CARGO_TARGET_DIR when it is set (a shared build cache).
plansim="${CARGO_TARGET_DIR:-target}/release/plansim"
mkdir -p "$out"
"$plansim" run scenarios/ --out "$out" --quiet
for experiment in experiments/*.yaml; do
  name="$(basename "$experiment" .yaml)"
  rm -rf "$out/experiments/$name"
  "$plansim" sweep "$experiment" --out "$out/experiments/$name" --quiet
done
