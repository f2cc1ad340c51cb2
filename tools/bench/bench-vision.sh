#!/bin/sh
# bench-vision.sh: encoding time of one image on the CPU, Anvil (engine/vision through
# tests/vision/vision_dump) against today's llama.cpp (libmtmd's mtmd_encode_chunk through
# tests/vision/mtmd_oracle.c), interleaved, best of REPEATS per run, on a synthetic SigLIP-style
# projector (make_test_mmproj.py --preset bench: 224 px, 14 px patches = 256 patches, 384 wide,
# 4 blocks, F16) and a 640x480 image (resized and padded first, as gemma3's preprocessing).
# FAMILY gemma4: the same widths as a gemma4v projector (2-D rope RMS-norm blocks, gated FFN) on a
# gemma4 text model; the 640x480 image keeps its aspect (15 x 11 tokens of 3 x 3 patches = 1485 patches).
# FAMILY qwen3vl: a qwen3-vl style tower (make_test_mmproj.py --family qwen3vl --preset bench: 16 px
# patches, 384 wide, 4 blocks, F16; a 512x384 image at its own resolution = 768 patches, 192 merged
# rows) with a qwen35 text model.
# FAMILY pixtral: a Mistral Small 3.x style tower (make_test_mmproj.py --family pixtral --preset bench:
# 14 px patches, 384 wide, 4 blocks, F16, 2x2 patch merger; a 448x336 image at its own resolution
# = 768 patches as qwen3vl's, 192 merged rows + 11 [IMG_BREAK] rows) with a mistral3 text model.
#   tools/bench/bench-vision.sh [BUILD_DIR] [ROUNDS] [THREADS] [FAMILY]      (LLAMA_CPP=... to pick the tree)
# BASE_BUILD=DIR also times DIR/tests/vision_dump (an earlier build) in each round, first, for before/after.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
rounds=${2:-2}
threads=${3:-2}
family=${4:-gemma3}
L=${LLAMA_CPP:-$HOME/.cache/llamacpp-current/src/llama.cpp}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -o "$work/mtmd_oracle" "$root/tests/vision/mtmd_oracle.c" -I"$L/include" -I"$L/ggml/include" -I"$L/tools/mtmd" \
    -L"$L/build-cpu/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$L/build-cpu/bin"
if [ "$family" = gemma4 ]; then
    python3 "$root/tools/make_test_model.py" --family gemma4 --preset tiny --type f32 --swa 512 --out "$work/text.gguf" >/dev/null
    python3 "$root/tools/make_test_mmproj.py" --family gemma4 --preset bench --type f16 --n-embd-text 128 --out "$work/mmproj.gguf"
elif [ "$family" = qwen3vl ]; then
    python3 "$root/tools/make_test_model.py" --family qwen35 --preset tiny --type f32 --out "$work/text.gguf" >/dev/null
    python3 "$root/tools/make_test_mmproj.py" --family qwen3vl --preset bench --type f16 --n-embd-text 128 --out "$work/mmproj.gguf"
elif [ "$family" = pixtral ]; then
    python3 "$root/tools/make_test_model.py" --family mistral3 --preset tiny --type f32 --out "$work/text.gguf" >/dev/null
    python3 "$root/tools/make_test_mmproj.py" --family pixtral --preset bench --type f16 --n-embd-text 128 --out "$work/mmproj.gguf"
else
    python3 "$root/tools/make_test_model.py" --family gemma3 --preset tiny --type f32 --gemma3-swa off --out "$work/text.gguf" >/dev/null
    python3 "$root/tools/make_test_mmproj.py" --preset bench --type f16 --merge 4 --n-embd-text 128 --out "$work/mmproj.gguf"
fi
python3 "$root/tools/make_test_mmproj.py" --image "$(case $family in qwen3vl) echo 512x384;; pixtral) echo 448x336;; *) echo 640x480;; esac)" --out "$work/img.ppm"
ms() { python3 -c 'import json,sys; print([c["encode_ms"] for c in json.load(sys.stdin)["chunks"] if c["type"] == "image"][0])'; }
i=0
while [ "$i" -lt "$rounds" ]; do
    b=
    [ -z "${BASE_BUILD:-}" ] || b=$("$BASE_BUILD/tests/vision_dump" "$work/text.gguf" "$work/mmproj.gguf" "$work/img.ppm" "x<__media__>y" --repeats 3 --threads "$threads" | ms)
    a=$("$build/tests/vision_dump" "$work/text.gguf" "$work/mmproj.gguf" "$work/img.ppm" "x<__media__>y" --repeats 3 --threads "$threads" | ms)
    l=$(ORACLE_QUIET=1 "$work/mtmd_oracle" "$work/text.gguf" "$work/mmproj.gguf" "$work/img.ppm" "x<__media__>y" 3 2>/dev/null | ms)
    python3 -c "print('round $i: anvil %.1f ms  llama.cpp %.1f ms  ratio (llama.cpp / anvil) %.2fx' % ($a, $l, $l / $a))"
    [ -z "$b" ] || python3 -c "print('round $i: base %.1f ms (llama.cpp / base %.2fx), anvil / base %.2fx' % ($b, $l / $b, $a / $b))"
    i=$((i + 1))
done
