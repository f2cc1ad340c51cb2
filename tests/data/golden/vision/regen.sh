#!/bin/sh
# regen.sh: regenerates the vision goldens (<case>.json.gz) from today's llama.cpp: builds
# tests/vision/mtmd_oracle.c against its libmtmd (build-cpu, `ninja llama-mtmd-cli` builds the
# library), makes each manifest case's files as the test does, and records the oracle's JSON and
# llama-mtmd-cli's 12-token greedy reply to "Describe it." with the image (batches of 1024: a
# bidirectional image must fit one ubatch, gemma3-rows576 has 576 rows; plus the case's
# "mtmd_cli_args" if any: --jinja where the model's own template differs from llama.cpp's
# built-in one, as mistral3's default system message does; Anvil renders the model's template).
#   tests/data/golden/vision/regen.sh [LLAMA_CPP_DIR] [CASE...]   (no CASE: every case)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
L=$HOME/.cache/llamacpp-current/src/llama.cpp
if [ $# -gt 0 ] && [ -d "$1" ]; then L=$1; shift; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -o "$work/mtmd_oracle" "$root/tests/vision/mtmd_oracle.c" -I"$L/include" -I"$L/ggml/include" -I"$L/tools/mtmd" \
    -L"$L/build-cpu/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$L/build-cpu/bin"
python3 - "$here/manifest.json" "$@" > "$work/cases" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["cases"]
for want in sys.argv[2:]:
    if want not in m:
        sys.exit("regen.sh: no case '%s' in the manifest" % want)
for name, c in m.items():
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    print("\t".join([name, ";".join(c["model"]), ";".join(c["mmproj"]), ";".join(c["image"]), c["prompt"],
                     " ".join(c.get("mtmd_cli_args", [])) or "-"]))
PY
while IFS="$(printf '\t')" read -r name model mmproj image prompt cli; do
    [ "$cli" = "-" ] && cli=""
    base="$work/$name"
    python3 "$root/tests/vision/vision_vs_llamacpp.py" --make --make-model="$model" --make-mmproj="$mmproj" \
        --make-image="$image" --tools "$root/tools" --base "$base"
    ORACLE_QUIET=1 "$work/mtmd_oracle" "$base.gguf" "$base-mmproj.gguf" "$base.ppm" "$prompt" > "$base.json"
    gzip -9n < "$base.json" > "$here/$name.json.gz"
    "$L/build-cpu/bin/llama-mtmd-cli" -m "$base.gguf" --mmproj "$base-mmproj.gguf" --image "$base.ppm" -p "Describe it." \
        -b 1024 -ub 1024 -n 12 --temp 0 -t 2 $cli 2>/dev/null > "$here/$name.greedy.txt"
    echo "$name: $(wc -c < "$here/$name.json.gz") bytes"
done < "$work/cases"
