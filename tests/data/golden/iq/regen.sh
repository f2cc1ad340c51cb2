#!/bin/sh
# Regenerates the i-quant / ternary goldens (tests/model/iq.cmake) with today's llama.cpp
# ($LLAMACPP_BIN, default ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin):
#   tests/data/golden/iq/regen.sh BUILD_DIR      (BUILD_DIR/anvil is run once per model as a check)
# 1. the synthetic llama (tools/make_test_model.py, manifest "base_args") as F32;
# 2. llama-imatrix on it (moe_vs_llamacpp.py's text; --process-output: IQ2_XXS/IQ2_XS/IQ1_S
#    refuse a tensor without importance data, and token_embd never has any);
# 3. llama-quantize to each type of manifest.json (output tensor in that type too, token_embd
#    as well where "embd" is true) -> NAME.gguf, committed (0.4-1.1 MB: gguf-py cannot write
#    these types, so the test cannot make them itself);
# 4. llama-perplexity --kl-divergence-base of each -> NAME.kld.gz (moe_vs_llamacpp.py --write-base).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
build=${1:?usage: regen.sh BUILD_DIR}
bin=${LLAMACPP_BIN:-$HOME/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$here/manifest.json" > "$tmp/list" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print("base", " ".join(m["base_args"]))
for name, e in m["models"].items():
    print(name, e["type"], "1" if e.get("embd") else "0")
PY
# shellcheck disable=SC2046
python3 "$root/tools/make_test_model.py" $(sed -n 's/^base //p' "$tmp/list") --out "$tmp/f32.gguf"
python3 -c "import sys; sys.path.insert(0, '$root/tests/model'); import moe_vs_llamacpp as m; open('$tmp/text.txt', 'w').write(m.TEXT * 4)"
"$bin/llama-imatrix" -m "$tmp/f32.gguf" -f "$tmp/text.txt" -o "$tmp/imatrix.gguf" -c 64 -t 2 --process-output > "$tmp/imatrix.log" 2>&1
grep -v '^base ' "$tmp/list" | while read -r name type embd; do
  extra=""
  [ "$embd" = 1 ] && extra="--token-embedding-type $type"
  # shellcheck disable=SC2086
  "$bin/llama-quantize" --imatrix "$tmp/imatrix.gguf" --output-tensor-type "$type" $extra \
      "$tmp/f32.gguf" "$here/$name.gguf" "$(echo "$type" | tr a-z A-Z)" 2 > "$tmp/q.log" 2>&1 || { tail -20 "$tmp/q.log"; exit 1; }
  python3 "$root/tests/model/moe_vs_llamacpp.py" --anvil "$build/anvil" --model "$here/$name.gguf" \
          --write-base "$here/$name.kld.gz"
done
