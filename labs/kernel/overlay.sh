#!/bin/bash
# overlay.sh: append directories to an initramfs as further cpio archives.
# Linux unpacks concatenated archives in order and a later file replaces an
# earlier one, so an overlay changes the guest's files (a lab's
# /etc/mmlocks/experiments, tool binaries) without rebuilding the base
# image. Used by labs/kernel/klab.py; debug-check.sh does the same inline.
set -euo pipefail
PROG=labs/kernel/overlay.sh
usage() {
	cat <<EOF2
usage: $PROG BASE OUT DIR...

Writes OUT = BASE (a gzip'd cpio initramfs, e.g. build/initramfs.cpio.gz)
followed by one gzip'd newc archive per DIR, holding DIR's files as paths
relative to DIR, owned by root, in sorted order.
Exit status: 0 written, 1 failed, 2 usage.
EOF2
}
case "${1:-}" in --help|-h) usage; exit 0 ;; esac
[ $# -ge 3 ] || { echo "$PROG: expected BASE OUT DIR..." >&2; usage >&2; exit 2; }
for a in "$@"; do case "$a" in -*) echo "$PROG: unknown option '$a'" >&2; usage >&2; exit 2 ;; esac; done
BASE=$1 OUT=$2; shift 2
[ -f "$BASE" ] || { echo "$PROG: error: $BASE missing (labs/kernel/mkinitramfs.sh)" >&2; exit 1; }
command -v cpio >/dev/null || { echo "$PROG: error: cpio missing: apt-get install cpio" >&2; exit 1; }
for d in "$@"; do [ -d "$d" ] || { echo "$PROG: error: $d is not a directory" >&2; exit 1; }; done
{
	cat "$BASE"
	for d in "$@"; do
		(cd "$d" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
			cpio -o -H newc -R 0:0 --quiet | gzip -9n)
	done
} >"$OUT.tmp.$$" && mv -f "$OUT.tmp.$$" "$OUT"
