#!/usr/bin/env bash
# bench-repack-cache.sh: start time and peak RSS of `anvil run MODEL "hi" -n 1 --temp 0` on
# the CPU, per model, in four modes: repack off (ANVIL_CPU_REPACK=0), repack without the
# cache (ANVIL_REPACK_CACHE=0), first start (empty cache folder: repack + write the file)
# and second start (the file mapped). REPS interleaved repetitions (default 2); each line is
# "model mode seconds peak-RSS-MB", the last field the run's wall time from /usr/bin/time.
# The model files stay in the page cache between runs (no cache is dropped: a shared machine).
#   tools/bench/bench-repack-cache.sh [-r REPS] [-b build/anvil] MODEL.gguf...
set -euo pipefail
reps=2
anvil=build/anvil
while getopts "r:b:" o; do
  case $o in r) reps=$OPTARG ;; b) anvil=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-r REPS] [-b build/anvil] MODEL.gguf..." >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/anvil-rpc-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

one() { # model mode env...
  local model=$1 mode=$2
  shift 2
  local out
  out=$(env ANVIL_REPACK_CACHE_DIR="$dir" ANVIL_BACKEND=cpu "$@" /usr/bin/time -f "@@ %e %M" \
        "$anvil" run "$model" "hi" -n 1 --temp 0 2>&1 >/dev/null | grep '^@@')
  set -- $out
  printf "%-28s %-12s %6.2f s %7.0f MB\n" "$(basename "$model")" "$mode" "$2" "$(($3 / 1024))"
}

for model in "$@"; do
  # warm the page cache (no repack: no cache file anywhere)
  ANVIL_CPU_REPACK=0 "$anvil" run "$model" "hi" -n 1 --temp 0 >/dev/null 2>&1 || true
  for ((r = 0; r < reps; r++)); do
    one "$model" repack-off ANVIL_CPU_REPACK=0
    one "$model" no-cache ANVIL_REPACK_CACHE=0
    rm -f "$dir"/*.rpk
    one "$model" first-start
    one "$model" second-start
  done
  rm -f "$dir"/*.rpk
done
