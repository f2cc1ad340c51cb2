#!/usr/bin/env bash
# run-in-root: run one command inside the trixie root of make-root.sh, in a private mount namespace
# (/proc, /dev, /sys and the bind mounts vanish with the command; parallel runs do not interfere).
# Usage: tools/aco/run-in-root.sh ROOT [--bind DIR]... [--] [VAR=value]... CMD [ARGS...]
#   --bind DIR: DIR (e.g. the build tree) is mounted at the same path inside the root, read-write.
#   The command runs with a clean environment (HOME=/root, PATH, TERM) plus the VAR=value given,
#   in the current directory when that path exists inside the root, else in /.
#   e.g. tools/aco/run-in-root.sh "$(tools/aco/make-root.sh)" --bind "$PWD" -- \
#          VK_ICD_FILENAMES=/opt/mesa-bpo/lvp_icd.json build/tests/test_vulkan_ops
# Exit status: the command's; 77 (one line on stderr) when ROOT is missing or this is not root.
set -euo pipefail
ROOT=${1:?usage: run-in-root.sh ROOT [--bind DIR]... [--] CMD...}; shift
[ -d "$ROOT" ] && [ -f "$ROOT/.anvil-root-complete" ] || { echo "aco root: $ROOT is not a root made by make-root.sh" >&2; exit 77; }
[ "$(id -u)" = 0 ] || { echo "aco root: needs root (chroot, mounts)" >&2; exit 77; }
binds=()
while [ $# -gt 0 ]; do
  case $1 in
    --bind) binds+=("$(cd "$2" && pwd -P)"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "run-in-root: no command" >&2; exit 2; }
exec unshare --mount --propagation private /bin/bash -c '
  set -e
  ROOT=$1; shift; n=$1; shift
  mount -t proc proc "$ROOT/proc"
  mount --rbind /dev "$ROOT/dev"
  mount --rbind /sys "$ROOT/sys"
  mount -t tmpfs tmpfs "$ROOT/tmp"
  for ((i = 0; i < n; i++)); do mkdir -p "$ROOT$1"; mount --bind "$1" "$ROOT$1"; shift; done
  cwd=/; [ -d "$ROOT$PWD" ] && cwd=$PWD
  exec chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TERM=dumb \
    /bin/sh -c "cd \"\$0\" && exec /usr/bin/env \"\$@\"" "$cwd" "$@"
' run-in-root "$ROOT" "${#binds[@]}" "${binds[@]}" "$@"
