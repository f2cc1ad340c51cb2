#!/usr/bin/env bash
# gate: the AMD-compiler gate (ctest aco_gate, label aco). Makes or unpacks the cached trixie root
# (make-root.sh), then runs aco_pipestats inside it on RADV's null device for each family, the
# families in parallel. Fails on a spill, a pipeline over its class's VGPR budget or a compiler
# crash (aco_pipestats.c states the budgets); exit 77 with one line when the root is unavailable.
# Usage: tools/aco/gate.sh PATH/TO/aco_pipestats [--fresh] [--tsv FILE] [aco_pipestats options] [FAMILY...]
#   default families: navi21 navi31 navi33 phoenix gfx1151 gfx1201 (Mesa 25.0's names).
#   Mesa's shader cache is kept in ${XDG_CACHE_HOME:-$HOME/.cache}/anvil/aco-shader-cache (a
#   re-run compiles only the pipelines whose SPIR-V or constants changed; a cache hit gives
#   the statistics of the original compile); --fresh compiles everything without it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1"); shift
ROOT=$("$HERE/make-root.sh") || exit $? # 77 and its one line when it cannot be made here
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/anvil/aco-shader-cache
mesa_cache=(MESA_SHADER_CACHE_DIR="$CACHE")
args=()
for a in "$@"; do
  if [ "$a" = --fresh ]; then mesa_cache=(MESA_SHADER_CACHE_DISABLE=true); else args+=("$a"); fi
done
mkdir -p "$CACHE"
have_family=0
for a in "${args[@]}"; do case $a in navi*|phoenix*|gfx*|raphael*|rembrandt*|vangogh*) have_family=1 ;; esac; done
[ $have_family = 1 ] || args+=(navi21 navi31 navi33 phoenix gfx1151 gfx1201)
# --tsv FILE: an absolute path inside a bound folder
out=()
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[i]}" = --tsv ]; then
    d=$(cd "$(dirname "${args[i+1]}")" && pwd -P); out+=(--bind "$d"); args[i+1]=$d/$(basename "${args[i+1]}")
  fi
done
exec "$HERE/run-in-root.sh" "$ROOT" --bind "$(dirname "$BIN")" --bind "$CACHE" "${out[@]}" -- \
  VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/radeon_icd.json "${mesa_cache[@]}" "$BIN" --jobs "$(nproc)" "${args[@]}"
