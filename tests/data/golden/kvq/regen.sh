#!/bin/sh
# Regenerates the quantized-KV goldens (*.kld.gz) from today's llama.cpp (llama-perplexity in
# $LLAMACPP_BIN, default ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin) for every model
# of manifest.json, and prints llama.cpp's own -ctk/-ctv q4_0 KL (llamacpp_kl_mean) and the
# digest to put into manifest.json.
#   tests/data/golden/kvq/regen.sh BUILD_DIR      (BUILD_DIR/anvil is run as a check)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
build=${1:?usage: regen.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$here/manifest.json" <<'PY' > "$tmp/list"
import json, sys
for name, m in json.load(open(sys.argv[1]))["models"].items():
    print(name, " ".join(m["args"]))
PY
while read -r name args; do
  # shellcheck disable=SC2086
  python3 "$root/tools/make_test_model.py" $args --out "$tmp/$name.gguf"
  echo "$name weights_sha256 $(python3 "$root/tools/make_test_model.py" --digest "$tmp/$name.gguf")"
  python3 "$root/tests/model/kv_quant_kl.py" --anvil "$build/anvil" --model "$tmp/$name.gguf" \
          --write-base "$here/$name.kld.gz"
done < "$tmp/list"
