#!/usr/bin/env bash
# test: the one command that builds Anvil and runs the whole test suite: a release build,
# the HIP build's checks, the Windows build under Wine, and an
# AddressSanitizer+UndefinedBehaviorSanitizer build (ctest), and the AMD-compiler gate (tools/aco/).
# Usage: tools/test.sh            (everything)
#        ANVIL_TEST_SANITIZE=0 tools/test.sh   (skip the sanitizer build)
#        ANVIL_TEST_HIP=0 tools/test.sh        (skip the HIP build, run when hipcc is installed)
#        ANVIL_TEST_WINDOWS=0 tools/test.sh    (skip the Windows build and its tests under Wine)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

jobs=$(nproc)
# stage NAME: a stage heading with the seconds spent so far (the CI log shows where the time goes).
stage() { echo "== $* (at ${SECONDS} s)"; }
# run_suite DIR EXCLUDED_LABELS CMAKE_ARGS...: configure, build and run ctest without those labels.
run_suite() {
  local dir=$1 exclude=$2; shift 2
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  ninja -C "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900 -LE "$exclude")
}

stage "release build + tests"
# The cooperative-matrix shaders need glslang >= 15 and their tests (label coopmat) trixie-backports'
# lavapipe: a Debian 13 root gives both ($TRIXIE_ROOT, else the cached one of tools/aco/make-root.sh);
# without one the release build goes on without them and the coopmat tests say why they skip.
trixie=${TRIXIE_ROOT:-}
if [ -z "$trixie" ] && [ -x tools/aco/make-root.sh ]; then trixie=$(tools/aco/make-root.sh) || trixie=""; fi
run_suite build aco -DCMAKE_BUILD_TYPE=Release ${trixie:+-DANVIL_TRIXIE_ROOT=$trixie}
# The AMD-compiler gate (tools/aco/, label aco: ACO on RADV's null device, six families) runs
# beside the Windows stage, whose Wine tests leave CPU idle; its result is checked after it.
stage "AMD-compiler gate (ctest -L aco), in the background"
(cd build && ctest --output-on-failure -L aco --timeout 900) > build/aco-gate.log 2>&1 &
aco_pid=$!
if [ "${ANVIL_TEST_HIP:-1}" != 0 ] && command -v hipcc >/dev/null 2>&1; then
  # The HIP backend: the kernels for every gfx target (-Werror), the spill gate and the
  # fake-runtime tests (label hip; ctest adds the model fixtures they need). No GPU needed.
  stage "HIP build (-DANVIL_HIP=ON): kernels, spill gate, fake-runtime tests"
  cmake -S . -B build-hip -G Ninja -DCMAKE_BUILD_TYPE=Release -DANVIL_HIP=ON >/dev/null
  ninja -C build-hip -j"$jobs" anvil hip_fake_test fake_hip fake_hip_old
  (cd build-hip && ctest --output-on-failure -j"$jobs" --timeout 900 -L hip)
fi
if [ "${ANVIL_TEST_WINDOWS:-1}" != 0 ]; then
  # anvil.exe cross-built with MinGW-w64 (dependencies from Debian source, cached) and its
  # CPU suite, goldens, CLI and server client tests, and Vulkan on lavapipe, under Wine.
  stage "Windows build (MinGW-w64) + tests under Wine"
  tools/windows/test-wine.sh
fi
stage "AMD-compiler gate result"
aco_rc=0
wait "$aco_pid" || aco_rc=$?
cat build/aco-gate.log
[ "$aco_rc" = 0 ] || { echo "AMD-compiler gate failed"; exit 1; }
if [ "${ANVIL_TEST_SANITIZE:-1}" != 0 ]; then
  stage "ASan+UBSan build + tests"
  # Without the one-path-off Vulkan runs (label path-variant: other shaders, the same host code)
  # and the CLI copies of in-process checks (label sanitizer-dup); the release build runs them.
  # Full malloc stacks so tests/lsan.supp can name the one leak Mesa's lavapipe makes.
  ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
    run_suite build-asan "aco|path-variant|sanitizer-dup" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANVIL_SANITIZE=ON
fi
stage "all tests passed"
