#!/usr/bin/env bash
# build-deps: cross-compiles Anvil's Windows dependencies from Debian's source packages
# (apt-get source; a deb-src line is added when there is none) into a cache, static
# libraries only: PCRE2, cJSON and libmicrohttpd as they are, libcurl with Schannel (the
# Windows TLS stack: no OpenSSL to cross-build, the system's certificate store). SHA-256
# is not built: the Windows build uses BCrypt (engine/base/digest_win.c). Nor is volk (the
# Vulkan meta-loader): libvulkan-volk-dev ships its source, compiled by the build itself.
# Usage: tools/windows/build-deps.sh   -> prints the prefix (ANVIL_WIN_DEPS, default
#        ~/.cache/anvil-win-deps/<versions>/prefix); returns at once when it is cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
toolchain=$here/mingw-toolchain.cmake
cache=${ANVIL_WIN_DEPS:-$HOME/.cache/anvil-win-deps}
pkgs=(pcre2 cjson libmicrohttpd curl)
jobs=${JOBS:-$(nproc)}
log() { echo "build-deps: $*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
# The versions the Debian archive has now name the cache folder (a new version rebuilds).
if ! apt-cache showsrc pcre2 >/dev/null 2>&1 || [ -z "$(apt-cache showsrc pcre2 2>/dev/null)" ]; then
  if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding a deb-src line (/etc/apt/sources.list.d/anvil-deb-src.sources)"
    $SUDO tee /etc/apt/sources.list.d/anvil-deb-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $SUDO apt-get update -qq
fi
ver() { apt-cache showsrc "$1" | awk '/^Version:/{print $2; exit}'; }
# RECIPE names how they are built: bump it when an option below changes (r2: PCRE2's 32-bit
# library, which the pre-tokenizer splitter uses).
RECIPE=r2
key=""
for p in "${pkgs[@]}"; do key+="$p-$(ver "$p")_"; done
key=${key%_}_$RECIPE
root=$cache/${key//[:~+]/.}
prefix=$root/prefix
if [ -f "$prefix/.done" ]; then echo "$prefix"; exit 0; fi

t0=$(date +%s)
rm -rf "$root"; mkdir -p "$root/src" "$prefix"
cd "$root/src"
for p in "${pkgs[@]}"; do
  log "apt-get source $p"
  apt-get source -qq --only-source "$p" >/dev/null 2>&1 || apt-get source --only-source "$p" >&2
done
srcdir() { find "$root/src" -maxdepth 1 -mindepth 1 -type d -name "$1-*" | head -1; }
cmake_dep() {
  local name=$1 src=$2; shift 2
  log "building $name"
  cmake -S "$src" -B "$root/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF "$@" >"$root/$name.log" 2>&1 || { cat "$root/$name.log" >&2; exit 1; }
  ninja -C "$root/build-$name" -j"$jobs" install >>"$root/$name.log" 2>&1 || { tail -50 "$root/$name.log" >&2; exit 1; }
}

cmake_dep pcre2 "$(srcdir pcre2)" -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF \
  -DPCRE2_BUILD_PCRE2_32=ON -DPCRE2_SUPPORT_JIT=ON -DPCRE2_STATIC_PIC=ON
cmake_dep cjson "$(srcdir cjson)" -DENABLE_CJSON_TEST=OFF -DENABLE_CJSON_UTILS=OFF \
  -DBUILD_SHARED_AND_STATIC_LIBS=OFF -DENABLE_CUSTOM_COMPILER_FLAGS=OFF
cmake_dep curl "$(srcdir curl)" -DCURL_USE_SCHANNEL=ON -DCURL_USE_OPENSSL=OFF -DHTTP_ONLY=ON \
  -DBUILD_CURL_EXE=OFF -DBUILD_TESTING=OFF -DCURL_USE_LIBPSL=OFF -DUSE_LIBIDN2=OFF \
  -DCURL_USE_LIBSSH2=OFF -DCURL_ZLIB=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DUSE_NGHTTP2=OFF \
  -DENABLE_MANUAL=OFF -DCURL_DISABLE_LDAP=ON -DENABLE_UNIX_SOCKETS=OFF

log "building libmicrohttpd"
mhd=$(srcdir libmicrohttpd)
mkdir -p "$root/build-mhd"
(cd "$root/build-mhd" && "$mhd/configure" --host=x86_64-w64-mingw32 --prefix="$prefix" \
   --enable-static --disable-shared --disable-https --disable-doc --disable-examples \
   --disable-curl --without-gnutls --disable-nls CC=x86_64-w64-mingw32-gcc-posix \
   >"$root/mhd.log" 2>&1 && make -j"$jobs" -C src/microhttpd install >>"$root/mhd.log" 2>&1 \
   && make -C . install-pkgconfigDATA >>"$root/mhd.log" 2>&1) || { tail -50 "$root/mhd.log" >&2; exit 1; }
install -m644 "$mhd/src/include/microhttpd.h" "$prefix/include/" 2>/dev/null || true

touch "$prefix/.done"
log "done in $(( $(date +%s) - t0 )) s: $prefix"
echo "$prefix"
