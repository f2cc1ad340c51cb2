#!/usr/bin/env bash
# build-deps: cross-compiles Anvil's Windows dependencies from Debian's source packages
# (apt-get source; a deb-src line is added when there is none) into a cache, static
# libraries only: PCRE2, cJSON and libmicrohttpd as they are, libcurl with Schannel (the
# Windows TLS stack: no OpenSSL to cross-build, the system's certificate store), and the image
# codecs (zlib, libjpeg-turbo, libpng, libwebp, giflib; a stage of their own, below). SHA-256
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
# The image codecs (engine/image) are a second stage with its own key, built into the same
# prefix, so that adding them did not rebuild the libraries above.
img_pkgs=(zlib libjpeg-turbo libpng1.6 libwebp giflib)
IMG_RECIPE=i1
img_key=""
for p in "${img_pkgs[@]}"; do img_key+="$p-$(ver "$p")_"; done
img_key=${img_key%_}_$IMG_RECIPE
img_done=$prefix/.done-images-${img_key//[:~+]/.}
if [ -f "$prefix/.done" ] && [ -f "$img_done" ]; then echo "$prefix"; exit 0; fi

t0=$(date +%s)
srcdir() { find "$root/src" -maxdepth 1 -mindepth 1 -type d -name "$1-*" | head -1; }
cmake_dep() {
  local name=$1 src=$2; shift 2
  log "building $name"
  cmake -S "$src" -B "$root/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF "$@" >"$root/$name.log" 2>&1 || { cat "$root/$name.log" >&2; exit 1; }
  ninja -C "$root/build-$name" -j"$jobs" install >>"$root/$name.log" 2>&1 || { tail -50 "$root/$name.log" >&2; exit 1; }
}
if [ ! -f "$prefix/.done" ]; then
rm -rf "$root"; mkdir -p "$root/src" "$prefix"
cd "$root/src"
for p in "${pkgs[@]}"; do
  log "apt-get source $p"
  apt-get source -qq --only-source "$p" >/dev/null 2>&1 || apt-get source --only-source "$p" >&2
done

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
fi

# Image codecs: zlib (for libpng; its inflate/deflate files by hand: Debian's source has no win32/), libjpeg-turbo without SIMD (no
# nasm), libpng and libwebp with CMake (decoding libraries only), giflib's decoder files by hand.
if [ ! -f "$img_done" ]; then
  mkdir -p "$root/img-src"
  cd "$root/img-src"
  rm -rf ./*
  for p in "${img_pkgs[@]}"; do
    log "apt-get source $p"
    apt-get source -qq --only-source "$p" >/dev/null 2>&1 || apt-get source --only-source "$p" >&2
  done
  imgdir() { find "$root/img-src" -maxdepth 1 -mindepth 1 -type d -name "$1-*" | head -1; }
  cc=x86_64-w64-mingw32-gcc-posix
  log "building zlib"
  z=$(imgdir zlib)
  mkdir -p "$root/build-zlib"
  (cd "$root/build-zlib" && for f in adler32 compress crc32 deflate infback inffast inflate inftrees trees \
     uncompr zutil; do $cc -O2 -c "$z/$f.c" -I"$z" -o $f.o || exit 1; done && x86_64-w64-mingw32-ar rcs libz.a ./*.o) \
    >"$root/zlib.log" 2>&1 || { cat "$root/zlib.log" >&2; exit 1; }
  install -m644 "$root/build-zlib/libz.a" "$prefix/lib/"
  install -m644 "$z/zlib.h" "$z/zconf.h" "$prefix/include/"
  cmake_dep libjpeg-turbo "$(imgdir libjpeg-turbo)" -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_SIMD=OFF \
    -DWITH_TURBOJPEG=OFF -DWITH_JPEG8=OFF
  cmake_dep libpng "$(imgdir libpng1.6)" -DPNG_SHARED=OFF -DPNG_STATIC=ON -DPNG_TESTS=OFF -DPNG_EXECUTABLES=OFF \
    -DZLIB_LIBRARY="$prefix/lib/libz.a" -DZLIB_INCLUDE_DIR="$prefix/include" -DSKIP_INSTALL_PROGRAMS=ON
  cmake_dep libwebp "$(imgdir libwebp)" -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF -DWEBP_BUILD_DWEBP=OFF \
    -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF -DWEBP_BUILD_VWEBP=OFF -DWEBP_BUILD_WEBPINFO=OFF \
    -DWEBP_BUILD_WEBPMUX=OFF -DWEBP_BUILD_EXTRAS=OFF -DWEBP_BUILD_LIBWEBPMUX=OFF
  log "building giflib"
  g=$(imgdir giflib)
  mkdir -p "$root/build-giflib"
  (cd "$root/build-giflib" && for f in dgif_lib gifalloc gif_err gif_hash openbsd-reallocarray; do
     $cc -O2 -c "$g/$f.c" -I"$g" -o $f.o || exit 1; done && x86_64-w64-mingw32-ar rcs libgif.a ./*.o) \
    >"$root/giflib.log" 2>&1 || { cat "$root/giflib.log" >&2; exit 1; }
  install -m644 "$root/build-giflib/libgif.a" "$prefix/lib/"
  install -m644 "$g/gif_lib.h" "$prefix/include/"
  touch "$img_done"
fi
log "done in $(( $(date +%s) - t0 )) s: $prefix"
echo "$prefix"
