#!/usr/bin/env bash
# Fuzzes scenario parsing + validation + a short run (fuzz/fuzz_targets/scenario.rs).
# Needs cargo-fuzz (`cargo install cargo-fuzz`). The machine's toolchain is
# stable, so RUSTC_BOOTSTRAP lets it accept the sanitizer flags cargo-fuzz passes.
# Usage: scripts/fuzz.sh [SECONDS]   (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
corpus=fuzz/corpus/scenario
mkdir -p "$corpus"
# Seeds: every small scenario and bad input (the alias bombs are too slow per run).
find scenarios tests/bad fuzz/regressions -maxdepth 1 -type f -size -16k \( -name '*.yaml' -o -path 'fuzz/regressions/*' \) \
  -exec cp {} "$corpus"/ \;
RUSTC_BOOTSTRAP=1 cargo fuzz run scenario "$corpus" -- \
  -dict=fuzz/scenario.dict -max_len=8192 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
