#!/bin/sh
# in-root.sh: runs a program with the C library and the shared libraries of a Debian 13
# (trixie) root (the one tools/aco or /work/shared/tools/amd-compiler makes), without chroot,
# mounts or root privileges: the root's dynamic loader runs either a tool of the root
# (glslangValidator, spirv-val: a bare name is looked up in ROOT/usr/bin) or a program built on
# this host (its glibc is older, so it runs on the newer one). trixie-backports' Mesa under
# ROOT/opt/mesa-bpo comes first on the library path when present (its lavapipe has
# VK_KHR_cooperative_matrix); the Vulkan ICD and layer files are the caller's to choose.
# Usage: in-root.sh ROOT PROGRAM [ARGS...]
set -eu
root=${1:?usage: in-root.sh ROOT PROGRAM [ARGS...]}
prog=${2:?usage: in-root.sh ROOT PROGRAM [ARGS...]}
shift 2
loader=$root/lib64/ld-linux-x86-64.so.2
[ -x "$loader" ] || { echo "in-root.sh: $root is not a Debian root ($loader missing)" >&2; exit 127; }
case $prog in */*) ;; *) prog=$root/usr/bin/$prog ;; esac
lib=$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu
[ -d "$root/opt/mesa-bpo/usr/lib/x86_64-linux-gnu" ] && lib=$root/opt/mesa-bpo/usr/lib/x86_64-linux-gnu:$lib
exec "$loader" --library-path "$lib" "$prog" "$@"
