#!/bin/sh
# gen-notices: writes THIRD_PARTY_NOTICES.txt, the copyright and license texts of the libraries
# an Anvil binary carries: on Linux linked from Debian's packages, in the Windows zip linked
# statically (tools/windows/build-deps.sh builds the same Debian sources): PCRE2, cJSON, libcurl,
# libmicrohttpd (LGPL-2.1+: its source is Debian's, fetched by build-deps.sh; Anvil's own source is
# public, so anyone can relink), volk (compiled in), and the image decoders libjpeg-turbo, libpng
# (with zlib), libwebp and giflib. The texts are Debian's copyright files.
#   tools/gen/gen-notices.sh > THIRD_PARTY_NOTICES.txt
set -eu
cat <<'HEAD'
Third-party notices

Anvil (MIT, see LICENSE) uses the libraries below. On Linux they are shared libraries from the
distribution; the Windows release zip links them statically into anvil.exe, built from the same
Debian sources (tools/windows/build-deps.sh). libmicrohttpd is under the GNU LGPL 2.1 or later:
its complete source is Debian's libmicrohttpd source package (the version named in
tools/windows/build-deps.sh), and Anvil's complete source, with which anvil.exe can be relinked
against a modified libmicrohttpd, is the repository this file comes from.
The license texts below are Debian's copyright files of each package.
HEAD
for pkg in libpcre2-8-0:PCRE2 libcjson1:cJSON libcurl4:libcurl libmicrohttpd12:libmicrohttpd libvulkan-volk-dev:volk \
    libjpeg62-turbo:libjpeg-turbo libpng16-16:libpng libwebp7:libwebp libgif7:giflib zlib1g:zlib; do
  name=${pkg#*:}
  file=/usr/share/doc/${pkg%%:*}/copyright
  [ -f "$file" ] || { echo "gen-notices: $file missing (apt-get install ${pkg%%:*})" >&2; exit 1; }
  printf '\n\n==================================================================\n%s (Debian package %s)\n==================================================================\n\n' "$name" "${pkg%%:*}"
  cat "$file"
done
