#!/bin/bash
# Build the 6.12 selftests that read or remap another address space (from
# the pristine tree, static) and write the initramfs overlay that selftests.sh
# appends to the guest's initramfs: the binaries, a wrapper that frames each
# run with begin/end records, and an experiments list naming every selftest.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KDIR=$(cd "$HERE/.." && pwd)
TOP=$(cd "$KDIR/../.." && pwd)
PROG=labs/kernel/selftests/mkoverlay.sh

usage() {
	cat <<EOF
usage: $PROG [--out FILE] [--help]

Writes a gzip'd cpio archive (default build/selftests/overlay.cpio.gz) with
  /labs/selftests/{proc-pid-vm,read,proc-self-map-files-001,proc-self-map-files-002}
                                   (6.12 tools/testing/selftests/proc, static)
  /labs/selftests/mremap_test      (6.12 tools/testing/selftests/mm, static)
  /labs/selftests/run-selftest     TYPE SECONDS CMD...: prints a begin record,
                                   runs CMD in /tmp (stderr merged, killed after
                                   SECONDS), prints an end record with its status
  /labs/selftests/stflake          selftests/stflake.c: runs a selftest N times
                                   under ptrace, records its heap at a fatal signal
  /labs/selftests/run-flake        the st-flake entry: stflake on the khugepaged
                                   selftest, as the mmlocks.flake* boot words say
                                   (selftests.sh --repeat)
  /etc/mmlocks/experiments         labs/kernel/experiments plus one "st-NAME" entry
                                   per selftest (khugepaged types included) and
                                   st-flake, so mmlocks.mode=run mmlocks.run=st-...
                                   runs them
Appended to the initramfs (the kernel unpacks both; a later file wins). Nothing
is rebuilt when no input changed. Exit status: 0 written, 1 error, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

OUT=$TOP/build/selftests/overlay.cpio.gz
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--out) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--out needs a file name"; OUT=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
command -v cpio >/dev/null || die "cpio missing: apt-get install cpio"

ST=$("$KDIR/linux-source.sh")/tools/testing/selftests
CC=${CC:-gcc}
# name|source|per-run timeout (s). The khugepaged binary comes from mkinitramfs.sh.
# region: upstream-selftests
TESTS=(
	"proc-pid-vm|proc/proc-pid-vm.c|120"
	"read|proc/read.c|300"
	"proc-self-map-files-001|proc/proc-self-map-files-001.c|60"
	"proc-self-map-files-002|proc/proc-self-map-files-002.c|60"
	"mremap_test|mm/mremap_test.c|600"
)
# endregion: upstream-selftests
KHUGEPAGED_TYPES="khugepaged:anon madvise:anon"

hash=$({ "$CC" --version | head -n1; sha256sum "$0" "$KDIR/experiments";
	for t in "${TESTS[@]}"; do IFS='|' read -r _ src _ <<<"$t"; sha256sum "$ST/$src"; done;
	sha256sum "$ST/kselftest.h" "$HERE/stflake.c" "$KDIR"/guest/*.[ch]; } | sed "s|$TOP/||g" | sha256sum | cut -c1-32)
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$hash" ]; then
	echo "$PROG: up to date: ${OUT#$TOP/}" >&2
	exit 0
fi
mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/.overlay.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/root/labs/selftests" "$WORK/root/etc/mmlocks"

# kselftest.h is force-included for the mm test (as mkinitramfs.sh does for
# khugepaged); the proc tests include what they need.
printf '#define _GNU_SOURCE\n#include "kselftest.h"\n' >"$WORK/prelude.h"
for t in "${TESTS[@]}"; do
	IFS='|' read -r name src _ <<<"$t"
	# proc: the kselftest Makefile's flags (-D_GNU_SOURCE, tools/include/uapi)
	flags=(-D_GNU_SOURCE -isystem "$ST/../../include/uapi")
	case "$src" in mm/*) flags=(-include "$WORK/prelude.h" -I"$ST" -isystem "$ST/../../include/uapi"
				   -isystem "$ST/../../include") ;; esac
	if ! "$CC" -static -O2 -Wall -Wno-unused-function -U_FORTIFY_SOURCE "${flags[@]}" \
		"$ST/$src" -o "$WORK/root/labs/selftests/$name" -pthread 2>"$WORK/cc.err"; then
		cat "$WORK/cc.err" >&2
		die "compile error in the $name selftest ($ST/$src)"
	fi
done

# The diagnostic of selftests.sh --repeat, with the guest programs' helpers.
if ! "$CC" -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -I"$KDIR/guest" "$HERE/stflake.c" \
	"$KDIR"/guest/*.c -o "$WORK/root/labs/selftests/stflake" 2>"$WORK/cc.err"; then
	cat "$WORK/cc.err" >&2
	die "compile error in labs/kernel/selftests/stflake.c"
fi
cat >"$WORK/root/labs/selftests/run-flake" <<'EOF'
#!/bin/sh
# run-flake: stflake on the khugepaged selftest, as the boot words say:
#   mmlocks.flake=RUNS  mmlocks.flake_type=khugepaged:anon  mmlocks.flake_brk=LO-HI
runs=1 type=khugepaged:anon brk=
for w in $(cat /proc/cmdline); do
	case "$w" in
	mmlocks.flake=*) runs=${w#*=} ;;
	mmlocks.flake_type=*) type=${w#*=} ;;
	mmlocks.flake_brk=*) brk=${w#*=} ;;
	esac
done
cd /tmp && exec /labs/selftests/stflake --runs "$runs" --timeout 600 ${brk:+--brk-window "$brk"} \
	/labs/selftests/khugepaged "$type"
EOF
chmod 755 "$WORK/root/labs/selftests/run-flake"

# region: run-selftest
cat >"$WORK/root/labs/selftests/run-selftest" <<'EOF'
#!/bin/sh
# run-selftest TYPE SECONDS CMD...: one selftest run framed for the host's
# check.py. Its text output goes raw between the records.
[ $# -ge 3 ] || { echo "usage: run-selftest TYPE SECONDS CMD..." >&2; exit 2; }
type=$1 secs=$2; shift 2
t0=$(cut -d' ' -f1 /proc/uptime)
printf '{"type":"begin","selftest":"%s"}\n' "$type"
(cd /tmp && exec timeout -s KILL "$secs" "$@") 2>&1
rc=$?
printf '{"type":"end","selftest":"%s","rc":%d,"seconds":%s}\n' "$type" "$rc" \
	"$(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.2f", b - a }')"
EOF
# endregion: run-selftest
chmod 755 "$WORK/root/labs/selftests/run-selftest"

{
	cat "$KDIR/experiments"
	echo "# selftests.sh (labs/kernel/selftests/mkoverlay.sh): one entry per selftest run"
	for k in $KHUGEPAGED_TYPES; do
		echo "st-${k%%:*}  /labs/selftests/run-selftest $k 600 /labs/selftests/khugepaged $k"
	done
	for t in "${TESTS[@]}"; do
		IFS='|' read -r name src secs <<<"$t"
		echo "st-$name  /labs/selftests/run-selftest ${src%.c} $secs /labs/selftests/$name"
	done
	echo "st-flake  /labs/selftests/run-flake"
} >"$WORK/root/etc/mmlocks/experiments"

(cd "$WORK/root" && find etc labs | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -9n) \
	>"$WORK/overlay.cpio.gz" || die "writing the overlay failed"
mv -f "$WORK/overlay.cpio.gz" "$OUT"
echo "$hash" >"$OUT.stamp"
echo "$PROG: wrote ${OUT#$TOP/} ($(( $(stat -c %s "$OUT") / 1024 )) KiB, ${#TESTS[@]} selftests)" >&2
