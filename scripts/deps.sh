#!/bin/sh
# Install the Debian packages mmlocks needs, if any are missing.
# Usage: scripts/deps.sh [--check] [--help]
#   --check   only report; exit 1 if something is missing.
set -eu

PKGS="build-essential pkg-config python3 rsync
pandoc graphviz gnuplot-nox epubcheck chromium nodejs libjs-lunr
libcriterion-dev liburcu-dev
qemu-system-x86 busybox-static cpio xz-utils gzip
linux-source-6.12 bc bison flex libelf-dev libssl-dev
gdb perl
linux-perf trace-cmd python3-drgn"

check_only=0
case "${1:-}" in
  --help|-h) sed -n '2,4s/^# \{0,1\}//p' "$0"; exit 0 ;;
  --check) check_only=1 ;;
  "") ;;
  *) echo "deps.sh: unknown option '$1'" >&2; sed -n '3,4s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

missing=""
for p in $PKGS; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = installed ] || missing="$missing $p"
done
missing=${missing# }

if [ -z "$missing" ]; then
  echo "deps: all $(echo $PKGS | wc -w) Debian packages present"
  exit 0
fi
echo "deps: missing: $missing"
[ "$check_only" = 1 ] && exit 1

if [ "$(id -u)" = 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO="sudo -n"
else
  echo "deps: cannot install as $(id -un) (not root, no password-less sudo). Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y $missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/mmlocks-apt.XXXXXX)
echo "deps: apt-get update && apt-get install -y $missing (log: $log)"
if ! { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends $missing; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "deps: apt-get failed (full log: $log)" >&2
  exit 1
fi
rm -f "$log"
echo "deps: installed $missing"
