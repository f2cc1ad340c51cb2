#!/usr/bin/env bash
# hip-nvcc-check: builds the HIP kernels (hip/hip_kernels.hip, unchanged) with nvcc through
# hip/hip_vendor.h and runs them on an NVIDIA GPU against the scalar reference cpu/ref_ops.c
# on odd shapes (tests/hip/nvcc_check.cu: every weight type's mat-vec and tiled matmul,
# get_rows, rms_norm, element-wise ops, rope, store_rows, attention on F32/F16/Q8_0/Q4_0 caches).
# Needs nvcc and a CUDA GPU; no ROCm, no CMake. Usage: tools/hip-nvcc-check.sh [build-dir]
# Exit 0 when every check passes; prints one line per check.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/tmp/anvil-hip-nvcc}
NVCC=${NVCC:-nvcc}
ARCH=${CUDA_ARCH:-native}
mkdir -p "$OUT"
command -v "$NVCC" >/dev/null || { echo "hip-nvcc-check: $NVCC not found (install the CUDA toolkit or set NVCC)"; exit 2; }
INC=(-I"$ROOT/hip" -I"$ROOT/cpu" -I"$ROOT/engine/gguf" -I"$ROOT/engine/base" -I"$ROOT/engine/backend")
CSRC=("$ROOT/cpu/ref_ops.c" "$ROOT/engine/gguf/quant.c" "$ROOT/engine/gguf/quant_legacy.c" "$ROOT/engine/gguf/quant_k.c" "$ROOT/engine/gguf/quant_mxfp4.c"
      "$ROOT/engine/gguf/quant_iq.c" "$ROOT/engine/gguf/quant_iq_tables.c" "$ROOT/engine/base/error.c")
objs=()
for c in "${CSRC[@]}"; do
  o="$OUT/$(basename "${c%.c}").o"
  ${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE "${INC[@]}" -c "$c" -o "$o"
  objs+=("$o")
done
# -arch=native needs CUDA 11.5+; set CUDA_ARCH=sm_90 (H100/H200), sm_80, ... otherwise.
"$NVCC" -std=c++17 -O2 -arch="$ARCH" -Xcompiler -Wall "${INC[@]}" \
  "$ROOT/tests/hip/nvcc_check.cu" "${objs[@]}" -lm -o "$OUT/nvcc_check"
"$OUT/nvcc_check"
