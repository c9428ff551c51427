#!/bin/bash
# Write build/tools.cpio.gz: the guest tools overlay. perf and trace-cmd
# from the host's Debian packages, with every shared library ldd lists for
# them and the dynamic loader, plus the guest scripts of labs/kernel/tools/.
# A command that wants the tools (TOOLS=1) appends this archive to the base
# initramfs; the base image and its hash do not change with it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/mktools.sh

usage() {
	cat <<EOF
usage: $PROG [--out FILE] [--initrd OUT [--base FILE] [--add DIR]...] [--force] [--help]

Writes a gzip'd cpio archive (default build/tools.cpio.gz) holding
  /usr/bin/perf, /usr/bin/trace-cmd   (the host's linux-perf and trace-cmd)
  /bin/perf, /bin/trace-cmd           symlinks (the guest's PATH has /bin)
  /lib64/ld-linux-x86-64.so.2, /lib/x86_64-linux-gnu/*.so.*
                                      every library ldd lists for the two
  /usr/lib/x86_64-linux-gnu/traceevent/plugins/
                                      libtraceevent's event printers
  /usr/bin/mmlocks-tool               run a tool, its output as JSON lines
                                      (labs/kernel/tools/mmlocks-tool)
  /labs/tools_smoke                   the tools check of the smoke boot (make test)
  /labs/tools/*                       the other guest scripts of labs/kernel/tools/
                                      (agree), its *.c compiled static (contend, stamp)
  /etc/mmlocks/experiments            labs/kernel/experiments, then
                                      labs/kernel/tools/experiments (agree-*, tools-smoke)
Nothing is rebuilt when no input changed (hash in FILE.stamp).

  --out FILE     the tools archive (default build/tools.cpio.gz)
  --initrd OUT   also write OUT = the base initramfs, then the tools archive,
                 then one archive per --add DIR (a later file wins)
  --base FILE    the base initramfs (default build/initramfs.cpio.gz)
  --add DIR      a directory appended after the tools (e.g. an experiments list)
  --force        rebuild the tools archive even if no input changed
  --help         this text

Environment: PERF (default: perf on PATH), TRACE_CMD (default: trace-cmd on
PATH), CC (default gcc), SOURCE_DATE_EPOCH. Packages: linux-perf, trace-cmd (scripts/deps.sh).
Exit status: 0 written, 1 error, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*" >&2; }

OUT=$TOP/build/tools.cpio.gz FORCE=0 INITRD= BASE=$TOP/build/initramfs.cpio.gz ADD=()
need() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--out) need "$@"; OUT=$2; shift 2 ;;
	--initrd) need "$@"; INITRD=$2; shift 2 ;;
	--base) need "$@"; BASE=$2; shift 2 ;;
	--add) need "$@"; ADD+=("$2"); shift 2 ;;
	--force) FORCE=1; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
[ -n "$INITRD" ] || { [ ${#ADD[@]} -eq 0 ] || die_usage "--add needs --initrd"; }
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac

PERF=${PERF:-$(command -v perf || true)}
TRACE_CMD=${TRACE_CMD:-$(command -v trace-cmd || true)}
[ -n "$PERF" ] && [ -x "$PERF" ] || die "perf not found: apt-get install linux-perf (scripts/deps.sh)"
[ -n "$TRACE_CMD" ] && [ -x "$TRACE_CMD" ] || die "trace-cmd not found: apt-get install trace-cmd (scripts/deps.sh)"
# Debian's /usr/bin/perf is a wrapper script on some releases (perf_X.Y
# next to it); the guest needs the ELF binary.
head -c4 "$PERF" | grep -q ELF || die "$PERF is not an ELF binary (a version wrapper?): set PERF=/usr/bin/perf_X.Y"
command -v ldd >/dev/null || die "ldd missing (libc-bin)"
command -v python3 >/dev/null || die "python3 is needed to write the cpio archive"
TOOLDIR=$HERE/tools
PLUGINS=/usr/lib/x86_64-linux-gnu/traceevent/plugins

# Every shared object ldd names, with the path the loader will look for.
libs_of() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'; }
LIBS=$( { libs_of "$PERF"; libs_of "$TRACE_CMD";
	for p in "$PLUGINS"/*.so; do [ -f "$p" ] && libs_of "$p"; done; } | LC_ALL=C sort -u)
[ -n "$LIBS" ] || die "ldd listed no libraries for $PERF"

inputs_hash() {
	{
		echo "epoch ${SOURCE_DATE_EPOCH:-0}"
		echo "cc $("${CC:-gcc}" --version | head -n1)"
		sha256sum "$0" "$PERF" "$TRACE_CMD" "$TOOLDIR"/* "$HERE/experiments"
		for l in $LIBS; do echo "$l $(sha256sum <"$l" | cut -c1-64)"; done
		for p in "$PLUGINS"/*.so; do [ -f "$p" ] && sha256sum "$p"; done
		true
	} | sed "s|$TOP/||g" | sha256sum | cut -c1-32
}
HASH=$(inputs_hash)
if [ "$FORCE" = 1 ] || [ ! -f "$OUT" ] || [ "$(cat "$OUT.stamp" 2>/dev/null)" != "$HASH" ]; then
	mkdir -p "$(dirname "$OUT")"
	WORK=$(mktemp -d "$(dirname "$OUT")/.tools.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	R=$WORK/root
	mkdir -p "$R/usr/bin" "$R/bin" "$R/labs/tools"
	cp -L "$PERF" "$R/usr/bin/perf"
	cp -L "$TRACE_CMD" "$R/usr/bin/trace-cmd"
	ln -s ../usr/bin/perf "$R/bin/perf"
	ln -s ../usr/bin/trace-cmd "$R/bin/trace-cmd"
	ln -s ../usr/bin/mmlocks-tool "$R/bin/mmlocks-tool"
	for l in $LIBS; do
		mkdir -p "$R$(dirname "$l")"
		cp -L "$l" "$R$l"     # the file itself, under the name ldd gave
	done
	if [ -d "$PLUGINS" ]; then
		mkdir -p "$R$PLUGINS"
		cp -L "$PLUGINS"/*.so "$R$PLUGINS/"
	fi
	install -m 755 "$TOOLDIR/mmlocks-tool" "$R/usr/bin/mmlocks-tool"
	# tools_smoke sits in /labs itself, so the smoke boot runs it with the
	# lab programs (--help, --quick); the other scripts go to /labs/tools/.
	install -m 755 "$TOOLDIR/tools_smoke" "$R/labs/tools_smoke"
	for f in "$TOOLDIR"/*; do
		case "$(basename "$f")" in
		mmlocks-tool|tools_smoke|experiments|*.py) ;;
		*.c)	# a workload of the checks: static, like the lab programs
			"${CC:-gcc}" -static -O2 -std=gnu11 -Wall -Wextra -Werror -pthread "$f" \
				-o "$R/labs/tools/$(basename "$f" .c)" || die "compile error in ${f#$TOP/}" ;;
		*) install -m "$([ -x "$f" ] && echo 755 || echo 644)" "$f" "$R/labs/tools/$(basename "$f")" ;;
		esac
	done
	# The experiments list: the base image's, then the tools' own lines.
	mkdir -p "$R/etc/mmlocks"
	cat "$HERE/experiments" "$TOOLDIR/experiments" >"$R/etc/mmlocks/experiments"
	# The same newc writer as mkinitramfs.sh: sorted, root-owned, fixed mtime.
	python3 - "$R" "$WORK/tools.cpio.gz" "${SOURCE_DATE_EPOCH:-0}" <<'EOF'
import gzip, os, stat, sys
root, out, mtime = sys.argv[1], sys.argv[2], int(sys.argv[3])
ino = [700000]
def entry(f, name, mode, data=b"", nlink=1):
    ino[0] += 1
    nb = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino[0], mode, 0, 0, nlink, mtime, len(data), 0, 0, 0, 0, len(nb), 0))
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
            walk(f, r)
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as fh:
                data = fh.read()
            entry(f, r, stat.S_IFREG | (0o755 if st.st_mode & 0o111 else 0o644), data)
with open(out, "wb") as raw:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as f:
        walk(f, "")
        entry(f, "TRAILER!!!", 0)
EOF
	mv -f "$WORK/tools.cpio.gz" "$OUT"
	echo "$HASH" >"$OUT.stamp"
	say "wrote ${OUT#$TOP/} ($(( $(stat -c %s "$OUT") / 1024 )) KiB: perf $("$PERF" version 2>/dev/null | awk '{print $3}'), trace-cmd $("$TRACE_CMD" --version 2>/dev/null | awk '/version/ {print $3; exit}'), $(echo "$LIBS" | wc -l) libraries)"
else
	say "up to date: ${OUT#$TOP/}"
fi

[ -n "$INITRD" ] || exit 0
[ -f "$BASE" ] || die "$BASE missing (labs/kernel/mkinitramfs.sh)"
for d in ${ADD[@]+"${ADD[@]}"}; do [ -d "$d" ] || die "--add $d: not a directory"; done
command -v cpio >/dev/null || die "cpio missing: apt-get install cpio"
mkdir -p "$(dirname "$INITRD")"
{
	cat "$BASE" "$OUT"
	for d in ${ADD[@]+"${ADD[@]}"}; do
		(cd "$d" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
			cpio -o -H newc -R 0:0 --quiet | gzip -9n)
	done
} >"$INITRD.tmp.$$" && mv -f "$INITRD.tmp.$$" "$INITRD"
