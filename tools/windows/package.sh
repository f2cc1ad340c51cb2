#!/usr/bin/env bash
# package: the Windows release zip: build-win/anvil.exe (static: it imports only Windows'
# own DLLs, and opens vulkan-1.dll / amdhip64 at run time) with a README-windows.txt on how
# to run it, LICENSE.txt and THIRD_PARTY_NOTICES.txt (the statically linked libraries' licenses),
# as dist/anvil-<version>-windows-x86_64.zip. Checks the import table first, so
# a build that would need a MinGW DLL beside it fails here rather than on a user's machine.
# Usage: tools/windows/package.sh [build-win]      (after test-wine.sh or a build-win build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-win}
exe=$build/anvil.exe
[ -f "$exe" ] || { echo "package: $exe not found: run tools/windows/test-wine.sh first" >&2; exit 1; }
version=$(sed -n 's/^#define ANVIL_VERSION "\(.*\)"/\1/p' tools/server/api.h)
[ -n "$version" ] || { echo "package: no ANVIL_VERSION in tools/server/api.h" >&2; exit 1; }

# Windows' own DLLs only (the api-ms-win-* sets are part of Windows 8+).
allowed='^(kernel32|advapi32|crypt32|ws2_32|bcrypt|msvcrt|user32|shell32|ole32|api-ms-win-.*)\.dll$'
bad=$(x86_64-w64-mingw32-objdump -p "$exe" | awk '/DLL Name:/{print tolower($3)}' | grep -Ev "$allowed" || true)
if [ -n "$bad" ]; then
  echo "package: $exe needs DLLs a Windows install does not have: $(echo $bad)" >&2
  exit 1
fi

out=dist/anvil-$version-windows-x86_64.zip
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/anvil-$version" dist
cp "$exe" "$stage/anvil-$version/anvil.exe"
sed "s/@VERSION@/$version/g" tools/windows/README-windows.txt | sed 's/$/\r/' >"$stage/anvil-$version/README-windows.txt"
for f in LICENSE THIRD_PARTY_NOTICES.txt; do sed 's/$/\r/' "$f" >"$stage/anvil-$version/${f%.txt}.txt"; done
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$OLDPWD/$out" "anvil-$version")
echo "package: $out ($(du -k "$out" | cut -f1) KiB)"
