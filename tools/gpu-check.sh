#!/usr/bin/env bash
# gpu-check: the one prepared check of the Vulkan backend on a real GPU (issue 14). Run on a
# bare Linux machine with an NVIDIA or AMD GPU and no internet, from the repository root, with
# a build made elsewhere and carried (the binaries need only glibc, libpcre2, libcjson,
# libcurl, libmicrohttpd and the Vulkan loader at run time):
#
#   tools/gpu-check.sh [BUILD_DIR] [MODEL.gguf ...]
#
# BUILD_DIR defaults to build-vk14; the models default to the synthetic ones of
# BUILD_DIR/test-models (the test fixtures) and, where present, $GPU_CHECK_MODELS (a folder of
# GGUFs, e.g. Gemma 3 270M, Llama 2 7B Q4_0). Without a Vulkan loader on the machine, point
# GPU_CHECK_DEBS at a folder of .debs (libvulkan1, and for the validation layer
# vulkan-validationlayers): they are unpacked into a private prefix, nothing is installed.
# Optional: LLAMA_BENCH=/path/to/llama-bench (a llama.cpp Vulkan build) for a side-by-side;
# GPU_CHECK_SOFTWARE=1 counts software devices (lavapipe) as GPUs, to dry-run this script here.
# Steps, each with its own log under $OUT (default gpu-check-out/) and a summary at the end:
#   1. anvil devices / anvil doctor;
#   2. for each Vulkan GPU (not lavapipe): the op tests (every path on, every path off, each
#      path off alone) with the validation layer when it is installed;
#   3. anvil doctor --verify on each model (every kernel vs the CPU reference);
#   4. whole-model agreement (test_vulkan_model: CPU vs GPU logits, greedy tokens);
#   5. anvil bench -p 512 -n 128 on the GPU with % of the bandwidth vk_membw measures, the
#      autotuner's choices (-v), and an ANVIL_VK_PROFILE=1 decode run (per-kernel GB/s);
#   6. llama-bench on the same models when LLAMA_BENCH is set.
set -u
BUILD=${1:-build-vk14}
shift || true
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
ANVIL="$BUILD/anvil"
T="$BUILD/tests"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

if [ ! -x "$ANVIL" ]; then echo "gpu-check: $ANVIL not found (build first: cmake -B $BUILD && cmake --build $BUILD)"; exit 2; fi

# A Vulkan loader from carried .debs when the machine has none.
if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && [ -n "${GPU_CHECK_DEBS:-}" ]; then
  pre="$OUT/prefix"
  mkdir -p "$pre"
  for d in "$GPU_CHECK_DEBS"/*.deb; do dpkg-deb -x "$d" "$pre"; done
  export LD_LIBRARY_PATH="$pre/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export VK_LAYER_PATH="$pre/usr/share/vulkan/explicit_layer.d"
  note "loader: unpacked from $GPU_CHECK_DEBS"
fi

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for m in "$BUILD"/test-models/{llama-tiny-q4_0,llama-tinyk-q4_K,qwen2-tiny-q5_0,gemma3-tiny-q5_1,llama-tiny-q8_0}.gguf; do
    [ -f "$m" ] && models+=("$m")
  done
  if [ -n "${GPU_CHECK_MODELS:-}" ]; then for m in "$GPU_CHECK_MODELS"/*.gguf; do [ -f "$m" ] && models+=("$m"); done; fi
fi

"$ANVIL" devices > "$OUT/devices.txt" 2>&1; cat "$OUT/devices.txt"
"$ANVIL" doctor > "$OUT/doctor.txt" 2>&1
"$ANVIL" devices --json > "$OUT/devices.json" 2>&1

# Vulkan GPUs: the devices anvil lists as vulkanN that are not software rasterisers.
gpus=$(python3 - "$OUT/devices.json" <<'EOF'
import json, os, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
devs = d.get("devices", d) if isinstance(d, dict) else d
for x in devs:
    soft = os.environ.get("GPU_CHECK_SOFTWARE") == "1"  # a dry run of this script on lavapipe
    if isinstance(x, dict) and str(x.get("id", "")).startswith("vulkan") and (soft or x.get("type") not in ("software", "cpu")):
        print(x["id"][6:])
EOF
)
if [ -z "$gpus" ]; then note "gpu-check: no Vulkan GPU found (see $OUT/devices.txt, $OUT/doctor.txt)"; exit 1; fi
validate=0
# The layer may sit in either place; one `ls` over both fails when one is missing, so test each.
if "$ANVIL" doctor 2>/dev/null | grep -q .; then
  for d in /usr/share/vulkan/explicit_layer.d "${VK_LAYER_PATH:-}"; do
    [ -n "$d" ] || continue
    for f in "$d"/*validation*; do [ -e "$f" ] && validate=1; done
  done
fi
note "gpu-check: GPUs vulkan$gpus; validation layer: $validate; models: ${models[*]}"

status=0
step() { # name, log, command...
  local name=$1 log=$2; shift 2
  local t0=$(date +%s)
  if "$@" > "$log" 2>&1; then note "PASS  $name ($(( $(date +%s) - t0 )) s)"; else note "FAIL  $name (see $log)"; status=1; fi
}

for g in $gpus; do
  export ANVIL_VK_TEST_DEVICE=$g ANVIL_VK_VALIDATE=$validate ANVIL_VK_REQUIRE=1 ANVIL_TEST_MODELS="$BUILD/test-models"
  export XDG_CACHE_HOME="$OUT/cache-vulkan$g"
  step "vulkan$g op tests (all paths)" "$OUT/ops-$g.txt" "$T/test_vulkan_ops"
  for p in all fp16 subgroup int8 sgsize splitk fuse wide; do
    step "vulkan$g op tests (ANVIL_VK_DISABLE=$p)" "$OUT/ops-$g-no-$p.txt" env ANVIL_VK_DISABLE=$p "$T/test_vulkan_ops"
  done
  for p in "" wide all; do
    step "vulkan$g repacked layout (ANVIL_VK_DISABLE=$p)" "$OUT/wide-$g-no-${p:-none}.txt" env ANVIL_VK_DISABLE=$p "$T/test_vulkan_wide"
  done
  for p in "" fuse subgroup; do # the fused decode ops (vk_fused.c): bit-identical to the unfused ones
    step "vulkan$g fused ops (ANVIL_VK_DISABLE=$p)" "$OUT/fused-$g-no-${p:-none}.txt" env ANVIL_VK_DISABLE=$p "$T/test_vulkan_fused"
  done
  for r in 1 2 4 8; do step "vulkan$g op tests (ANVIL_VK_MV_ROWS=$r)" "$OUT/ops-$g-rows$r.txt" env ANVIL_VK_MV_ROWS=$r "$T/test_vulkan_ops"; done
  step "vulkan$g large tensors" "$OUT/large-$g.txt" "$T/test_vulkan_large"
  step "vulkan$g verify (standard shapes)" "$OUT/verify-$g.txt" env ANVIL_DEVICE=vulkan$g "$ANVIL" doctor --verify --all
  for m in "${models[@]}"; do
    b=$(basename "$m" .gguf)
    step "vulkan$g verify $b" "$OUT/verify-$g-$b.txt" env ANVIL_DEVICE=vulkan$g "$ANVIL" doctor --verify "$m" --all
    step "vulkan$g agreement $b" "$OUT/model-$g-$b.txt" "$T/test_vulkan_model" "$m" 16 0.05
    step "vulkan$g agreement $b (paths off)" "$OUT/model-$g-$b-off.txt" env ANVIL_VK_DISABLE=all "$T/test_vulkan_model" "$m" 16 0.05
    step "vulkan$g bench $b" "$OUT/bench-$g-$b.txt" env ANVIL_VK_VALIDATE=0 "$ANVIL" bench "$m" -dev vulkan$g -p 512 -n 128 -r 3 -v
    grep -E "^\|" "$OUT/bench-$g-$b.txt" | tee -a "$summary"
    grep -E "read bandwidth|autotuned" "$OUT/bench-$g-$b.txt" | tee -a "$summary"
    step "vulkan$g profile $b" "$OUT/profile-$g-$b.txt" env ANVIL_VK_VALIDATE=0 ANVIL_VK_PROFILE=1 ANVIL_DEVICE=vulkan$g \
      "$ANVIL" run "$m" "The capital of France is" -n 64 --temp 0
    grep "profile" "$OUT/profile-$g-$b.txt" | tee -a "$summary"
    if [ -n "${LLAMA_BENCH:-}" ]; then
      step "llama.cpp $b" "$OUT/llamacpp-$g-$b.txt" env GGML_VK_VISIBLE_DEVICES=$g "$LLAMA_BENCH" -m "$m" -ngl 99 -p 512 -n 128 -r 3
      grep -E "^\|" "$OUT/llamacpp-$g-$b.txt" | tee -a "$summary"
    fi
  done
done
note "gpu-check: $( [ $status = 0 ] && echo all passed || echo FAILURES ) (logs in $OUT/)"
exit $status
