#!/usr/bin/env bash
# Every input of the bad-input corpus, and the runtime cases of
# tests/bounded/, must finish (exit 0, 1 or 2) within 5 s under a 1 GiB
# address-space limit, with no abort and no panic (issue #11).
# Usage: scripts/check-corpus-bounded.sh [PLANSIM_BINARY]
#   (default: target/release/plansim, brought up to date first)
set -euo pipefail
cd "$(dirname "$0")/.."
plansim="${1:-}"
if [[ -z "$plansim" ]]; then
  cargo build --release --locked --quiet
  plansim="${CARGO_TARGET_DIR:-target}/release/plansim"
fi
limit_kib=1048576
seconds=5
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

failures=0
checked=0
slowest=0
# check NAME -- ARGS...: runs plansim ARGS under the limits.
check() {
  local name="$1"
  shift 2
  local start end status elapsed_ms
  start=$(date +%s%N)
  set +e
  (ulimit -v "$limit_kib"; exec timeout --signal=KILL "$seconds" "$plansim" "$@") \
    >"$work/out" 2>"$work/err"
  status=$?
  set -e
  end=$(date +%s%N)
  elapsed_ms=$(( (end - start) / 1000000 ))
  (( elapsed_ms > slowest )) && slowest=$elapsed_ms
  checked=$((checked + 1))
  if (( status > 2 )) || grep -q "panicked\|memory allocation of" "$work/err"; then
    echo "FAIL $name: exit $status after ${elapsed_ms} ms: $(head -c 300 "$work/err")" >&2
    failures=$((failures + 1))
  fi
}

for file in tests/bad/*.yaml; do
  check "$file" -- validate "$file"
done
for file in tests/bad/experiments/*.yaml; do
  check "$file" -- sweep "$file" --quiet --out "$work/sweep-$(basename "$file" .yaml)"
done
for file in tests/bad/results/*.csv; do
  check "$file" -- diff "$file" results/summary.csv
done
for file in tests/bounded/*.yaml; do
  check "$file" -- run "$file" --quiet
done
# Issue 28: a 14 MB list in a task's config (never parsed: accepted) and
# in a local (refused at HCL_MAX_TOKENS before parsing), generated here.
big_list="[$(set +o pipefail; yes 1, | head -n 7000000 | tr -d '\n')1]"
for where in config local; do
  if [[ $where == config ]]; then inner="config { args = $big_list }"; top=""; else inner=""; top="locals { big = $big_list }"; fi
  printf '%s\njob "j" {\n  datacenters = ["dc1"]\n  group "g" {\n    task "t" {\n      driver = "docker"\n      %s\n    }\n  }\n}\n' \
    "$top" "$inner" >"$work/big-$where.nomad.hcl"
  printf 'nodes:\n  - id: client-0\njobs:\n  - file: big-%s.nomad.hcl\n' "$where" >"$work/big-$where.yaml"
  check "14 MB list in a task $where" -- validate "$work/big-$where.yaml"
done
check /dev/zero -- sweep /dev/zero --out "$work/dev-zero"
check /dev/zero -- validate /dev/zero

echo "corpus under ulimit -v ${limit_kib} KiB: ${checked} inputs, slowest ${slowest} ms, ${failures} failed"
(( failures == 0 ))
