#!/usr/bin/env bash
# build-image: builds tools/deploy/Dockerfile with buildah (no Docker daemon needed) and
# checks the image runs: `anvil --version` and `anvil devices` inside it, as its user.
# Where Docker Hub cannot be reached (this project's CI machines reach only the package
# registries), the debian:bookworm-slim base is made from the Debian archive with
# debootstrap (minbase, the same apt sources as the official image) and tagged under that
# name, so the Dockerfile builds unchanged. Storage is buildah's vfs driver, isolation
# chroot: both work as root inside an unprivileged container.
# Usage: tools/deploy/build-image.sh [TAG]      (default anvil:local; needs root, buildah, debootstrap)
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=${1:-anvil:local}
b() { buildah --storage-driver vfs "$@"; }
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build-image: $tool is not installed (apt-get install buildah debootstrap)" >&2; exit 1; }
done

base=docker.io/library/debian:bookworm-slim
if ! b inspect --type image "$base" >/dev/null 2>&1 && ! b pull -q "$base" >/dev/null 2>&1; then
  echo "build-image: $base cannot be pulled: making it with debootstrap from deb.debian.org" >&2
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; exit 1; }
  cat >"$root/etc/apt/sources.list" <<'SRC'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SRC
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  ctr=$(b from scratch)
  cp -a "$root/." "$(b mount "$ctr")/"
  b umount "$ctr" >/dev/null
  b commit -q "$ctr" "$base" >/dev/null
  b rm "$ctr" >/dev/null
fi

t0=$(date +%s)
b bud --pull=never --isolation chroot -f tools/deploy/Dockerfile -t "$tag" . >"${TMPDIR:-/tmp}/anvil-build-image.log" 2>&1 \
  || { tail -30 "${TMPDIR:-/tmp}/anvil-build-image.log" >&2; echo "build-image: failed" >&2; exit 1; }
echo "build-image: built $tag in $(( $(date +%s) - t0 )) s"
ctr=$(b from "$tag")
b run --isolation chroot "$ctr" -- anvil --version
b run --isolation chroot "$ctr" -- anvil devices | sed 's/^/  /'
b rm "$ctr" >/dev/null
echo "build-image: user $(b inspect --format '{{.OCIv1.Config.User}}' "$tag"), entrypoint $(b inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$tag"), $(b images --format '{{.Size}}' "$tag")"
