#!/usr/bin/env bash
# test: the one command that builds Anvil and runs the whole test suite, twice: a
# release build and an AddressSanitizer+UndefinedBehaviorSanitizer build (ctest).
# Usage: tools/test.sh            (everything)
#        ANVIL_TEST_SANITIZE=0 tools/test.sh   (skip the sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

jobs=$(nproc)
run_suite() {
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  ninja -C "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900)
}

echo "== release build + tests"
run_suite build -DCMAKE_BUILD_TYPE=Release
if [ "${ANVIL_TEST_SANITIZE:-1}" != 0 ]; then
  echo "== ASan+UBSan build + tests"
  # Full malloc stacks so tests/lsan.supp can name the one leak Mesa's lavapipe makes.
  ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
    run_suite build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DANVIL_SANITIZE=ON
fi
echo "== all tests passed"
