#!/bin/sh
# bench-iq.sh: Anvil against today's llama.cpp (llama-bench) on the i-quant and ternary types,
# CPU, one command. Makes the synthetic llama bench91m (tools/make_test_model.py, F16), an
# importance matrix for it (llama.cpp's legacy imatrix format, positive random values: the
# 1-2 bit types refuse to quantize without one; it changes which values are chosen, not the
# speed), then `llama-quantize` to each type (skipped when present), and runs
# tools/bench/compare-llamacpp on them (interleaved, REPS repetitions, under flock -x LOCK).
#
#   tools/bench/bench-iq.sh                                   # every type, 1 and 2 threads, -r 2
#   ANVIL=build/anvil REPS=3 TYPES="IQ2_XXS IQ3_S" tools/bench/bench-iq.sh
#
# Environment: ANVIL (default build/anvil), MODELS_DIR (default ~/.cache/anvil-bench-models),
# REPS (2), THREADS (1,2), PP (128), TG (32), TYPES (IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_S
# IQ1_S IQ1_M IQ4_XS IQ4_NL TQ1_0 TQ2_0: llama-quantize's file types; note its IQ2_S mix is
# made of IQ2_XS tensors, IQ2_M's of IQ2_S ones), LLAMACPP_BIN (llama-quantize's folder).
# Extra arguments go to compare-llamacpp.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ANVIL=${ANVIL:-$REPO/build/anvil}
MODELS_DIR=${MODELS_DIR:-$HOME/.cache/anvil-bench-models}
REPS=${REPS:-2}
THREADS=${THREADS:-1,2}
PP=${PP:-128}
TG=${TG:-32}
TYPES=${TYPES:-IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_S IQ1_S IQ1_M IQ4_XS IQ4_NL TQ1_0 TQ2_0}
BIN=${LLAMACPP_BIN:-$HOME/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin}
LOCK=/tmp/anvil-quiet.lock

[ -x "$ANVIL" ] || { echo "bench-iq: no anvil binary at $ANVIL (build it, or set ANVIL=)" >&2; exit 1; }
[ -x "$BIN/llama-quantize" ] || { echo "bench-iq: no llama-quantize in $BIN (set LLAMACPP_BIN=)" >&2; exit 1; }
mkdir -p "$MODELS_DIR"
src=$MODELS_DIR/llama-bench91m-F16.gguf
imat=$MODELS_DIR/llama-bench91m.imatrix.dat
[ -f "$src" ] || flock -s $LOCK python3 "$REPO/tools/make_test_model.py" --family llama --preset bench91m --type f16 --out "$src" >&2
if [ ! -f "$imat" ]; then
    python3 - "$src" "$imat" <<'PY'
# legacy imatrix: int32 n; per entry int32 len, name, int32 ncall, int32 nval, float[nval];
# then int32 chunk count, int32 len, dataset name (common/imatrix-loader.cpp)
import os, random, struct, sys
sys.path.insert(0, os.path.expanduser("~/.cache/llamacpp-current/src/llama.cpp/gguf-py"))
import gguf
r = gguf.GGUFReader(sys.argv[1])
rnd = random.Random(1)
ents = [(t.name, int(t.shape[0])) for t in r.tensors if len(t.shape) >= 2 and t.name != "token_embd.weight"]
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<i", len(ents)))
    for name, ne0 in ents:
        nb = name.encode()
        f.write(struct.pack("<i", len(nb)) + nb + struct.pack("<ii", 1, ne0))
        f.write(struct.pack("<%df" % ne0, *[rnd.uniform(0.5, 2.0) for _ in range(ne0)]))
    f.write(struct.pack("<ii", 1, 9) + b"synthetic")
PY
fi
MODELS=
for t in $TYPES; do
    out=$MODELS_DIR/llama-bench91m-$t.gguf
    [ -e "$out" ] || flock -s $LOCK "$BIN/llama-quantize" --imatrix "$imat" "$src" "$out" "$t" 2 > /dev/null
    MODELS="$MODELS $out"
done
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Machine: $CPU, $(nproc) cores; Anvil $COMMIT; $(date -u +%Y-%m-%d)."
echo "Command: tools/bench/bench-iq.sh $*  (REPS=$REPS THREADS=$THREADS PP=$PP TG=$TG)"
echo
# shellcheck disable=SC2086 # MODELS is a list of paths without spaces
exec python3 "$REPO/tools/bench/compare-llamacpp" --anvil "$ANVIL" --lock $LOCK -r "$REPS" -t "$THREADS" -p "$PP" -n "$TG" "$@" $MODELS
