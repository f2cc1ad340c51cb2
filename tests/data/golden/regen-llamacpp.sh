#!/bin/sh
# Regenerates one family's llama.cpp goldens (tests/data/golden/FAMILY/*.kld.gz, read by
# tests/model/vs_llamacpp.cmake) from today's llama.cpp (llama-perplexity in $LLAMACPP_BIN, default
# ~/.cache/llamacpp-current/src/llama.cpp/build-cpu/bin) for every model of FAMILY/manifest.json.
#   tests/data/golden/regen-llamacpp.sh FAMILY BUILD_DIR      (e.g. moe build; BUILD_DIR/anvil makes the files)
set -eu
golden=$(cd "$(dirname "$0")" && pwd)
here=$golden/${1:?usage: regen-llamacpp.sh FAMILY BUILD_DIR}
root=$(cd "$golden/../../.." && pwd)
build=${2:?usage: regen-llamacpp.sh FAMILY BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$here/manifest.json" <<'PY' > "$tmp/list"
import json, sys
for name, m in json.load(open(sys.argv[1]))["models"].items():
    if "golden" not in m:   # an entry with "golden" is judged against another entry's dump
        print(name, " ".join(m["args"]))
PY
while read -r name args; do
  # shellcheck disable=SC2086
  python3 "$root/tools/make_test_model.py" $args --anvil "$build/anvil" --out "$tmp/$name.gguf"
  echo "$name weights_sha256 $(python3 "$root/tools/make_test_model.py" --digest "$tmp/$name.gguf")"
  python3 "$root/tests/model/moe_vs_llamacpp.py" --anvil "$build/anvil" --model "$tmp/$name.gguf" \
          --write-base "$here/$name.kld.gz"
done < "$tmp/list"
# the unquantized files' greedy text from llama-completion (FAMILY/greedy.json)
python3 "$root/tests/model/greedy_vs_llamacpp.py" --anvil "$build/anvil" --dir "$here" --models "$tmp" --write
