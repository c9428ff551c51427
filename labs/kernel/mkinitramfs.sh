#!/bin/bash
# Build the guest's initramfs (busybox, /init, the lab guest programs, the
# 6.12 khugepaged selftest) as a reproducible gzip'd cpio, skipping the work
# when no input changed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/mkinitramfs.sh

usage() {
	cat <<EOF
usage: $PROG [--out FILE] [--force] [--help]

Builds the initramfs the QEMU guest boots from:
  /bin/busybox + applet symlinks      (host busybox-static)
  /init                               (labs/kernel/init)
  /labs/NAME                          (every labs/*/guest/NAME.c, static, linked
                                       with labs/*/guest/NAME/*.c if that exists)
  /labs/selftests/khugepaged          (6.12 tools/testing/selftests/mm, static PIE)
  /etc/mmlocks/experiments            (labs/kernel/experiments)
Archive entries are sorted, owned by root, dated SOURCE_DATE_EPOCH (default 0),
so the same inputs give the same bytes. When the hash of every input equals
the one recorded by the last build, nothing is rebuilt.

  --out FILE   output archive (default: build/initramfs.cpio.gz)
  --force      rebuild even if no input changed
  --help       this text

Environment: CC (default gcc), BUSYBOX (default: busybox on PATH),
SOURCE_DATE_EPOCH.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*" >&2; }

OUT=$TOP/build/initramfs.cpio.gz FORCE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--out) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--out needs a file name"
	       OUT=$2; shift 2 ;;
	--out=*) OUT=${1#--out=}; [ -n "$OUT" ] || die_usage "--out needs a file name"; shift ;;
	--force) FORCE=1; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac

CC=${CC:-gcc}
BUSYBOX=${BUSYBOX:-$(command -v busybox || true)}
[ -n "$BUSYBOX" ] && [ -x "$BUSYBOX" ] || die "busybox not found: apt-get install busybox-static"
# A dynamically linked busybox would need a libc in the initramfs.
if readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'program interpreter'; then
	die "$BUSYBOX is dynamically linked: apt-get install busybox-static"
fi
command -v python3 >/dev/null || die "python3 is needed to write the cpio archive"

INIT=$HERE/init
EXPERIMENTS=$HERE/experiments
SHARED_DIR=$HERE/guest
SHARED_C=$SHARED_DIR/mmlocks_guest.c   # and every other $SHARED_DIR/*.c
[ -f "$INIT" ] || die "missing $INIT"

# Guest programs: every labs/*/guest/*.c except the shared helpers.
PROGRAMS=()
for f in "$TOP"/labs/*/guest/*.c; do
	[ -f "$f" ] || continue
	[ "$(dirname "$f")" = "$SHARED_DIR" ] && continue
	PROGRAMS+=("$f")
done
if [ ${#PROGRAMS[@]} -gt 0 ] && [ ! -f "$SHARED_C" ]; then
	die "guest programs exist but ${SHARED_C#$TOP/} (shared helpers) is missing"
fi
# Two labs must not install the same /labs/NAME.
dups=$(for f in ${PROGRAMS[@]+"${PROGRAMS[@]}"}; do basename "$f" .c; done | sort | uniq -d)
[ -z "$dups" ] || die "two guest programs would both be /labs/$dups: rename one"

# The khugepaged selftest comes from the pristine tree (never modified).
PRISTINE=$("$HERE/linux-source.sh")
STDIR=$PRISTINE/tools/testing/selftests/mm
ST_SRCS=("$STDIR/khugepaged.c" "$STDIR/vm_util.c" "$STDIR/thp_settings.c")
ST_DEPS=("${ST_SRCS[@]}" "$STDIR/vm_util.h" "$STDIR/thp_settings.h" "$PRISTINE/tools/testing/selftests/kselftest.h")
for f in "${ST_DEPS[@]}"; do [ -f "$f" ] || die "selftest source $f missing"; done
# -static-pie, not -static: a non-PIE static program gets its brk heap at a
# random page up to 1 GiB above .bss, where collapse_compound_extreme's
# MREMAP_FIXED below BASE_ADDR (1 GiB) can replace it (RUNNING.md, "Known
# flake"). MMLOCKS_SELFTEST_LINK=-static rebuilds the old binary, which the
# --brk-window recipes there need.
ST_LINK=${MMLOCKS_SELFTEST_LINK:--static-pie}
case $ST_LINK in -static|-static-pie) ;; *) die "MMLOCKS_SELFTEST_LINK=$ST_LINK: use -static or -static-pie" ;; esac

# ---- incremental: hash every input ------------------------------------------
inputs_hash() {
	{
		echo "cc $("$CC" --version | head -n1)"
		echo "epoch ${SOURCE_DATE_EPOCH:-0}"
		echo "selftest link $ST_LINK"
		sha256sum "$HERE/mkinitramfs.sh" "$INIT" "$BUSYBOX" "${ST_DEPS[@]}"
		[ -f "$EXPERIMENTS" ] && sha256sum "$EXPERIMENTS"
		for f in "$SHARED_DIR"/*.[ch] "$TOP"/labs/*/guest/*.[ch] "$TOP"/labs/*/guest/*/*.[ch]; do
			[ -f "$f" ] && sha256sum "$f"
		done
		true
	} | sed "s|$TOP/||g" | sort -u | sha256sum | cut -c1-32
}
HASH=$(inputs_hash)
STAMP=$OUT.stamp
if [ "$FORCE" = 0 ] && [ -f "$OUT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$HASH" ]; then
	say "up to date: ${OUT#$TOP/}"
	exit 0
fi

mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/.initramfs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,root,etc/mmlocks,labs/selftests}

# ---- busybox ----------------------------------------------------------------
cp "$BUSYBOX" "$ROOT/bin/busybox"
chmod 755 "$ROOT/bin/busybox"
for a in $("$BUSYBOX" --list); do
	case "$a" in busybox|*/*) continue ;; esac
	ln -s busybox "$ROOT/bin/$a"
done

# ---- /init and configuration ------------------------------------------------
install -m 755 "$INIT" "$ROOT/init"
if [ -f "$EXPERIMENTS" ]; then
	install -m 644 "$EXPERIMENTS" "$ROOT/etc/mmlocks/experiments"
else
	say "warning: ${EXPERIMENTS#$TOP/} missing: the guest has no experiments"
	: >"$ROOT/etc/mmlocks/experiments"
fi

# ---- guest programs ---------------------------------------------------------
CFLAGS=(-static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -I"$SHARED_DIR")
if [ ${#PROGRAMS[@]} -gt 0 ]; then
	SHARED_O=()
	for c in "$SHARED_DIR"/*.c; do
		o=$WORK/shared-$(basename "$c" .c).o
		if ! "$CC" "${CFLAGS[@]}" -c "$c" -o "$o" 2>"$WORK/cc.err"; then
			cat "$WORK/cc.err" >&2
			die "compile error in ${c#$TOP/}"
		fi
		SHARED_O+=("$o")
	done
fi
# A program too long for one file keeps its other sources in guest/NAME/
# (included as "NAME/file.h" from NAME.c).
for f in ${PROGRAMS[@]+"${PROGRAMS[@]}"}; do
	name=$(basename "$f" .c)
	extra=()
	for x in "${f%.c}"/*.c; do [ -f "$x" ] && extra+=("$x"); done
	if ! "$CC" "${CFLAGS[@]}" -I"$(dirname "$f")" "$f" ${extra[@]+"${extra[@]}"} "${SHARED_O[@]}" \
		-o "$ROOT/labs/$name" 2>"$WORK/cc.err"; then
		cat "$WORK/cc.err" >&2
		die "compile error in ${f#$TOP/} (or ${f#$TOP/}'s directory)"
	fi
	rel=${f#$TOP/}
	say "guest program /labs/$name <- $rel${extra[*]:+ + ${rel%.c}/*.c}"
done

# ---- the 6.12 khugepaged selftest -------------------------------------------
# kselftest.h is force-included (the mm selftests expect the kselftest
# Makefile to provide it); _GNU_SOURCE must be defined before any libc header
# or mremap()/memfd_create() are implicitly declared and return int.
printf '#define _GNU_SOURCE\n#include "kselftest.h"\n' >"$WORK/prelude.h"
if ! "$CC" "$ST_LINK" -O2 -Wall -U_FORTIFY_SOURCE -include "$WORK/prelude.h" \
	-I"$PRISTINE/tools/testing/selftests" \
	-isystem "$PRISTINE/tools/include/uapi" -isystem "$PRISTINE/tools/include" \
	"${ST_SRCS[@]}" -o "$ROOT/labs/selftests/khugepaged" 2>"$WORK/cc.err"; then
	cat "$WORK/cc.err" >&2
	die "compile error in the khugepaged selftest ($STDIR/khugepaged.c)"
fi

# ---- archive ----------------------------------------------------------------
# A small newc writer instead of cpio(1): sorted entries, uid/gid 0, fixed
# mtime and a /dev/console node without needing root for mknod.
python3 - "$ROOT" "$WORK/initramfs.cpio.gz" "${SOURCE_DATE_EPOCH:-0}" <<'EOF'
import gzip, os, stat, sys
root, out, mtime = sys.argv[1], sys.argv[2], int(sys.argv[3])
ino = [300000]
def entry(f, name, mode, data=b"", nlink=1, rdev=(0, 0)):
    ino[0] += 1
    nb = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino[0], mode, 0, 0, nlink, mtime, len(data), 0, 0,
        rdev[0], rdev[1], len(nb), 0))
    f.write(hdr.encode() + nb)
    f.write(b"\0" * (-(110 + len(nb)) % 4))
    f.write(data)
    f.write(b"\0" * (-len(data) % 4))
def walk(f, rel):
    for n in sorted(os.listdir(os.path.join(root, rel) if rel else root)):
        r = rel + "/" + n if rel else n
        p = os.path.join(root, r)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            entry(f, r, stat.S_IFLNK | 0o777, os.readlink(p).encode())
        elif stat.S_ISDIR(st.st_mode):
            entry(f, r, stat.S_IFDIR | 0o755, nlink=2)
            if r == "dev":
                entry(f, "dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
                entry(f, "dev/null", stat.S_IFCHR | 0o666, rdev=(1, 3))
            walk(f, r)
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as fh:
                data = fh.read()
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            entry(f, r, stat.S_IFREG | mode, data)
with open(out, "wb") as raw:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
        entry(f, ".", stat.S_IFDIR | 0o755, nlink=2)
        walk(f, "")
        entry(f, "TRAILER!!!", 0, nlink=1)
EOF
mv -f "$WORK/initramfs.cpio.gz" "$OUT"
echo "$HASH" >"$STAMP.tmp"
mv -f "$STAMP.tmp" "$OUT.stamp"
say "wrote ${OUT#$TOP/} ($(( $(stat -c %s "$OUT") / 1024 )) KiB, ${#PROGRAMS[@]} guest program(s) + khugepaged selftest)"
