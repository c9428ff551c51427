#!/bin/sh
# Unpack Debian's linux-source-6.12 (pristine, never patched) into the cache
# and print the path of the tree on stdout. Idempotent: an unpacked tree for
# the installed package version is reused.
set -eu
usage() { echo "usage: $0 [--help]   (env: MMLOCKS_CACHE, default ~/.cache/mmlocks)"; }
case "${1:-}" in
  --help|-h) usage; exit 0 ;;
  "") ;;
  *) usage >&2; exit 2 ;;
esac
CACHE=${MMLOCKS_CACHE:-$HOME/.cache/mmlocks}
TAR=/usr/src/linux-source-6.12.tar.xz
if [ ! -f "$TAR" ]; then
  echo "linux-source.sh: $TAR missing: apt-get install linux-source-6.12 (or run 'make deps')" >&2
  exit 1
fi
pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
dest=$CACHE/src/linux-source-6.12_$pkgver
if [ ! -f "$dest/.unpacked" ]; then
  echo "linux-source.sh: unpacking $TAR ($pkgver) into $dest" >&2
  mkdir -p "$CACHE/src"
  tmp=$(mktemp -d "$CACHE/src/.unpack.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  tar -xJf "$TAR" -C "$tmp"
  rm -rf "$dest"
  mv "$tmp/linux-source-6.12" "$dest"
  touch "$dest/.unpacked"
fi
echo "$dest"
