#!/usr/bin/env bash
# make-root: the Debian 13 (trixie) root Anvil's AMD-compiler gate and newer-toolchain tests run in,
# made once with mmdebstrap and cached as a zstd tarball keyed on its package list; prints its path.
# Usage: tools/aco/make-root.sh            -> prints the root directory (makes / unpacks it if needed)
#        tools/aco/make-root.sh --key      -> prints the cache key only
#   Exit 0: path printed on stdout. Exit 77: cannot be made here (no mmdebstrap / not root / no
#   network and no cached tarball): one line on stderr saying why (ctest's SKIP_RETURN_CODE).
# Contents: trixie's Mesa 25.0.x (lavapipe + RADV, whose null device compiles with ACO for any
#   RADV_FORCE_FAMILY=<family name>), glslang 15, glslc, spirv-tools, Vulkan 1.4 headers + loader,
#   the validation layers; and trixie-backports' Mesa 26.1.x (lavapipe with VK_KHR_cooperative_matrix)
#   unpacked in /opt/mesa-bpo with ICD files /opt/mesa-bpo/lvp_icd.json and /opt/mesa-bpo/radeon_icd.json.
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/anvil/trixie-root-<key>.tar.zst and, unpacked beside it,
#   trixie-root-<key>/ (the tarball is what a CI cache keeps; unpacking takes about a second).
# Run commands inside it with tools/aco/run-in-root.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=trixie
MIRROR=${ANVIL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PKGS="mesa-vulkan-drivers libvulkan1 libvulkan-dev glslang-tools glslc spirv-tools vulkan-validationlayers"
KEY=$( (printf '%s\n' "$SUITE" "$PKGS"; cat "$HERE/mesa-bpo.sh") | sha256sum | cut -c1-16)
[ "${1:-}" = --key ] && { echo "$KEY"; exit 0; }

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/anvil
ROOT=$CACHE/trixie-root-$KEY
TAR=$ROOT.tar.zst
skip() { echo "aco root: $*" >&2; exit 77; }

if [ -f "$ROOT/.anvil-root-complete" ]; then echo "$ROOT"; exit 0; fi
[ "$(id -u)" = 0 ] || skip "needs root (chroot, mounts) to make or use $ROOT"
mkdir -p "$CACHE"
exec 9>"$ROOT.lock"          # one maker at a time (parallel ctest, parallel CI jobs)
flock 9
if [ -f "$ROOT/.anvil-root-complete" ]; then echo "$ROOT"; exit 0; fi
rm -rf "$ROOT.tmp"
if [ -f "$TAR" ]; then
  command -v zstd >/dev/null || skip "zstd is not installed (needed to unpack $TAR)"
  mkdir -p "$ROOT.tmp"
  zstd -dc "$TAR" | tar -C "$ROOT.tmp" -xf - || { rm -rf "$ROOT.tmp"; skip "cannot unpack $TAR"; }
else
  command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed and no cached $TAR"
  command -v zstd >/dev/null || skip "zstd is not installed and no cached $TAR"
  start=$(date +%s)
  # --variant=apt: the Essential packages + apt, no Recommends; Debian 12's debian-archive-keyring
  # carries the trixie keys. Docs, man pages and locales are left out (a smaller tarball).
  # The hooks unpack trixie-backports' Mesa beside the installed one (mesa-bpo.sh).
  if ! mmdebstrap --quiet --variant=apt --include="${PKGS// /,}" \
      --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      --customize-hook="copy-in $HERE/mesa-bpo.sh /tmp" --customize-hook="chroot \"\$1\" /bin/sh /tmp/mesa-bpo.sh $SUITE" \
      --customize-hook='rm -f "$1/tmp/mesa-bpo.sh"'  \
      "$SUITE" "$ROOT.tmp" "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-backports main" >&2; then
    rm -rf "$ROOT.tmp"; skip "mmdebstrap failed (no network to $MIRROR?)"
  fi
  tar -C "$ROOT.tmp" -cf - . | zstd -q -T2 -3 -o "$TAR.tmp" && mv "$TAR.tmp" "$TAR"
  echo "aco root: made in $(( $(date +%s) - start )) s, $TAR is $(du -h "$TAR" | cut -f1)" >&2
fi
touch "$ROOT.tmp/.anvil-root-complete"
mv "$ROOT.tmp" "$ROOT"
echo "$ROOT"
