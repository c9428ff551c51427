#!/bin/bash
# Build the mmlocks 6.12 kernel (tinyconfig + config.fragment + patches/series)
# with a keyed cache, and copy bzImage, .config and kernelrelease to --out.
#
# Cache layout ($MMLOCKS_CACHE, default ~/.cache/mmlocks; see README.md):
#   src/<pkg>/               pristine tree from linux-source.sh (never written)
#   tree/<ver>/              persistent patched tree, one per kernel version;
#                            only files touched by a series change get new
#                            mtimes, so make stays incremental
#   obj/<ver>-c<cfg>/        O= build directory per (version, config fragment)
#   images/<key>/            finished bzImage, config, kernelrelease, build.log
#                            per full key (version, series, fragment): a key
#                            that was built once is never rebuilt
# --debug adds config.debug to the configuration: its own obj/ directory and
# image key, so the debug and the ordinary kernel never rebuild each other.
#   build.lock               flock: concurrent invocations serialise
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PROG=labs/kernel/build.sh

usage() {
	cat <<EOF
usage: $PROG [--out DIR] [--jobs N] [--no-patches] [--debug] [--info] [--sync] [--clean-cache] [--help]

Builds the x86_64 mmlocks kernel: 'make ARCH=x86_64 tinyconfig', merged with
labs/kernel/config.fragment, patched with labs/kernel/patches/series, built
out of tree in the cache. Unchanged inputs are never rebuilt; a changed patch
rebuilds incrementally.

  --out DIR      where bzImage, config and kernelrelease go
                 (default: <repo>/build/kernel, with --debug <repo>/build/kernel-debug)
  --jobs N       make -jN (default: nproc = $(nproc))
  --no-patches   build the stock kernel (empty series), same config
  --debug        also merge labs/kernel/config.debug (lockdep, DEBUG_VM, ...):
                 the debug kernel, cached separately, release suffix -debug
  --info         print the cache paths and keys of this configuration as
                 shell words (tree= obj= image= key= cfg= series= pristine=
                 localversion= built=0|1) and exit: builds nothing
                 (labs/kernel/klab.py reads them; objseries= is the series
                 the object directory was last built with, or none)
  --sync         bring the shared source tree and the object directory to
                 this series even when its image is cached (other checkouts
                 with another series share them); klab.py copies both
  --clean-cache  delete cached trees, build directories and images
                 (keeps the pristine source), then exit
  --help         this text

Environment: MMLOCKS_CACHE (default ~/.cache/mmlocks).
EOF
}

die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

OUT= JOBS=$(nproc) NOPATCH=0 CLEAN=0 DEBUG=0 INFO=0 SYNC=0
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--out) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--out needs a directory"
	       OUT=$2; shift 2 ;;
	--out=*) OUT=${1#--out=}; [ -n "$OUT" ] || die_usage "--out needs a directory"; shift ;;
	--jobs|-j) [ $# -ge 2 ] || die_usage "--jobs needs a number"; JOBS=$2; shift 2 ;;
	--jobs=*) JOBS=${1#--jobs=}; shift ;;
	--no-patches) NOPATCH=1; shift ;;
	--debug) DEBUG=1; shift ;;
	--info) INFO=1; shift ;;
	--sync) SYNC=1; shift ;;
	--clean-cache) CLEAN=1; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$JOBS" in
''|*[!0-9]*) die_usage "--jobs must be a positive integer, got '$JOBS'" ;;
esac
{ [ "$JOBS" -ge 1 ] && [ "$JOBS" -le 256 ]; } || die_usage "--jobs must be 1..256, got '$JOBS'"

CACHE=${MMLOCKS_CACHE:-$HOME/.cache/mmlocks}
mkdir -p "$CACHE"
# --info only reads: it takes no lock (and says whether the image exists).
# MMLOCKS_BUILD_LOCKED=1: the caller (klab.py) holds build.lock already.
[ "$INFO" = 1 ] || [ "${MMLOCKS_BUILD_LOCKED:-0}" = 1 ] || exec 9>"$CACHE/build.lock"
if [ "$INFO" = 0 ] && [ "${MMLOCKS_BUILD_LOCKED:-0}" != 1 ] && ! flock -n 9; then
	say "waiting for another build (lock $CACHE/build.lock)"
	flock 9
fi

if [ "$CLEAN" = 1 ]; then
	say "clean-cache: removing $CACHE/{tree,obj,images}"
	rm -rf "$CACHE/tree" "$CACHE/obj" "$CACHE/images"
	exit 0
fi

if [ -z "$OUT" ]; then
	TOP=$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null) ||
		TOP=$(cd "$HERE/../.." && pwd)
	OUT=$TOP/build/kernel
	[ "$DEBUG" = 0 ] || OUT=$TOP/build/kernel-debug
fi

FRAG=$HERE/config.fragment
PATCHDIR=$HERE/patches
[ -f "$FRAG" ] || die "missing $FRAG"
# The fragments merged on top of tinyconfig, in order.
FRAGS=("$FRAG")
if [ "$DEBUG" = 1 ]; then
	[ -f "$HERE/config.debug" ] || die "missing $HERE/config.debug"
	FRAGS+=("$HERE/config.debug")
fi

# ---- stage: unpack (pristine tree) ------------------------------------------
[ "$INFO" = 1 ] || say "unpack"
PRISTINE=$("$HERE/linux-source.sh")
[ -f "$PRISTINE/Makefile" ] || die "linux-source.sh gave '$PRISTINE', which has no Makefile"
mkvar() { sed -n "s/^$1 *= *//p" "$PRISTINE/Makefile" | head -n1; }
KVER="$(mkvar VERSION).$(mkvar PATCHLEVEL).$(mkvar SUBLEVEL)$(mkvar EXTRAVERSION)"
PKGVER=$(basename "$PRISTINE"); PKGVER=${PKGVER#linux-source-*_}
VKEY="${KVER}_${PKGVER}"

# The series: patch names, in order, without comments or blank lines.
PATCHES=()
if [ "$NOPATCH" = 0 ] && [ -f "$PATCHDIR/series" ]; then
	while IFS= read -r line; do
		line=${line%%#*}
		line=$(echo "$line" | tr -d '[:space:]')
		[ -n "$line" ] || continue
		[ -f "$PATCHDIR/$line" ] || die "series names $line, which is not in $PATCHDIR"
		PATCHES+=("$line")
	done <"$PATCHDIR/series"
fi

# In a students' copy (labs/tools/exercises.txt) the series carries the
# kernel parts' skeletons; the measuring kernel (not --debug: klab.py's
# trees start from the series alone) adds each kernel part the student has
# done: the committed work of work/kernel/NN-slug/ since its tag
# `skeleton` (labs/kernel/kparts.py student-patches).
STUDENT_TOP=$(cd "$HERE/../.." && pwd)
if [ "$NOPATCH" = 0 ] && [ "$DEBUG" = 0 ] && [ -f "$STUDENT_TOP/labs/tools/exercises.txt" ]; then
	sp=$("$HERE/kparts.py" student-patches "$STUDENT_TOP/build/kernel-student") ||
		die "labs/kernel/kparts.py student-patches failed"
	for p in $sp; do
		PATCHES+=("../../../build/kernel-student/$(basename "$p")")
		[ "$INFO" = 1 ] || say "your kernel part: $(basename "$p" .patch) (build/kernel-student/$(basename "$p"))"
	done
fi

# Keys. The series hash covers names and contents in order.
SERIES_HASH=$( { echo "$VKEY"; for p in "${PATCHES[@]}"; do echo "== $p"; cat "$PATCHDIR/$p"; done; } |
	sha256sum | cut -c1-16)
# Without --debug this is the hash it always was (cached builds stay valid).
# Of config.debug only the option lines count: editing a comment there does
# not force a full rebuild of the debug kernel.
CFG_HASH=$( { echo "$VKEY"; cat "$FRAG"
	[ "$DEBUG" = 0 ] || grep -E '^(CONFIG_[A-Za-z0-9_]+=.*|# CONFIG_[A-Za-z0-9_]+ is not set)$' "$HERE/config.debug"
	} | sha256sum | cut -c1-12)
KEY=$( { echo "$VKEY"; echo "$SERIES_HASH"; echo "$CFG_HASH"; } | sha256sum | cut -c1-16)
TREE=$CACHE/tree/$VKEY
OBJ=$CACHE/obj/$VKEY-c$CFG_HASH
IMG=$CACHE/images/$KEY

# Patched kernels say so in uname -r; --no-patches builds are plain $KVER.
LOCALVER=-mmlocks
[ ${#PATCHES[@]} -gt 0 ] || LOCALVER=
[ "$DEBUG" = 0 ] || LOCALVER=$LOCALVER-debug

if [ "$INFO" = 1 ]; then
	built=0
	[ -f "$IMG/bzImage" ] && built=1
	objseries=$(cat "$OBJ/.mmlocks-series" 2>/dev/null || echo none)
	treeseries=$(sed -n 's/^series //p' "$CACHE/tree/.$VKEY.state" 2>/dev/null || echo none)
	printf '%s=%q\n' tree "$TREE" obj "$OBJ" image "$IMG" key "$KEY" cfg "$CFG_HASH" \
		series "$SERIES_HASH" pristine "$PRISTINE" localversion "$LOCALVER" built "$built" \
		objseries "$objseries" treeseries "${treeseries:-none}"
	exit 0
fi

# Fragment options: "CONFIG_X=v" or "# CONFIG_X is not set", as they must
# appear in the final .config.
frag_lines() {
	cat "${FRAGS[@]}" | grep -E '^(CONFIG_[A-Za-z0-9_]+=.*|# CONFIG_[A-Za-z0-9_]+ is not set)$'
}
verify_config() { # $1 = .config
	local missing=() l sym
	while IFS= read -r l; do
		grep -qxF -- "$l" "$1" && continue
		sym=$(echo "$l" | grep -oE 'CONFIG_[A-Za-z0-9_]+')
		missing+=("$l (have: $(grep -E "^($sym=|# $sym is not set)" "$1" || echo 'not present'))")
	done < <(frag_lines)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "$PROG: error: config options dropped by olddefconfig (fix their dependencies in config.fragment):" >&2
		printf '  %s\n' "${missing[@]}" >&2
		return 1
	fi
}

publish() { # copy the image set to $OUT atomically per file
	mkdir -p "$OUT"
	local f
	for f in bzImage config kernelrelease; do
		if [ $f = kernelrelease ]; then
			# Images cached by an older build.sh may carry make's
			# "Entering directory" lines (MAKEFLAGS -w): drop them.
			grep -v '^make\[[0-9]*\]: ' "$IMG/$f" >"$OUT/.$f.tmp.$$" || true
		else
			cp "$IMG/$f" "$OUT/.$f.tmp.$$"
		fi
		mv -f "$OUT/.$f.tmp.$$" "$OUT/$f"
	done
	say "done: $OUT/bzImage (Linux $(cat "$OUT/kernelrelease"), Debian linux-source-6.12 $PKGVER, key $KEY, ${#PATCHES[@]} patches)"
}

if [ "$SYNC" = 0 ] && [ -f "$IMG/bzImage" ] && [ -f "$IMG/kernelrelease" ] && [ -f "$IMG/config" ]; then
	say "cached: key $KEY already built"
	publish
	exit 0
fi

# ---- stage: persistent source tree ------------------------------------------
# (tree-sync.sh: also run alone by the host test, on a small fake tree.)
. "$HERE/tree-sync.sh"
tree_sync

# ---- stage: config ----------------------------------------------------------
mkdir -p "$OBJ"
LOG=$OBJ/build.log
# gcc's temporary files stay in the cache: a /tmp cleaner (or a small
# tmpfs) must not break a long build.
export TMPDIR=$OBJ/.tmp
mkdir -p "$TMPDIR"
MAKE=(make -C "$TREE" O="$OBJ" ARCH=x86_64 LOCALVERSION="$LOCALVER")
if [ ! -f "$OBJ/.mmlocks-config" ]; then
	say "config: tinyconfig + $(for f in "${FRAGS[@]}"; do printf '%s ' "$(basename "$f")"; done)-> $OBJ"
	if ! {
		"${MAKE[@]}" tinyconfig &&
		(cd "$OBJ" && "$TREE/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "${FRAGS[@]}") &&
		"${MAKE[@]}" olddefconfig
	} >"$OBJ/config.log" 2>&1; then
		tail -n 50 "$OBJ/config.log" >&2
		die "config failed (log: $OBJ/config.log)"
	fi
	verify_config "$OBJ/.config" || exit 1
	touch "$OBJ/.mmlocks-config"
else
	say "config: reusing $OBJ/.config"
	verify_config "$OBJ/.config" || exit 1
fi

# ---- stage: build -----------------------------------------------------------
rm -f "$OBJ/.mmlocks-series"    # written again once this series is built
say "build: make -j$JOBS bzImage (log: $LOG)"
start=$(date +%s)
"${MAKE[@]}" -j"$JOBS" bzImage </dev/null >"$LOG" 2>&1 &
mpid=$!
trap 'kill $mpid 2>/dev/null || true' EXIT INT TERM
n=0
while kill -0 $mpid 2>/dev/null; do
	sleep 2
	n=$((n + 1))
	if [ $((n % 15)) = 0 ]; then
		say "build: $(grep -cE '^  (CC|AS|LD|AR)' "$LOG" || true) steps, $(( $(date +%s) - start )) s"
	fi
done
if ! wait $mpid; then
	trap - EXIT INT TERM
	echo "---- last 50 lines of $LOG ----" >&2
	tail -n 50 "$LOG" >&2
	die "build failed after $(( $(date +%s) - start )) s (full log: $LOG)"
fi
trap - EXIT INT TERM
# Warnings in the files the series touches are errors for us.
warn=
for f in $(sed -n 's/^file //p' "$STATE"); do
	warn+=$(grep -F -- "$f:" "$LOG" | grep -E 'warning:' || true)
done
if [ -n "$warn" ]; then
	echo "$warn" >&2
	die "build produced warnings (full log: $LOG)"
fi
# --no-print-directory: under `make kernel` MAKEFLAGS carries -w, whose
# "Entering directory" lines would end up in the release string.
REL=$("${MAKE[@]}" -s --no-print-directory kernelrelease)
echo "$SERIES_HASH" >"$OBJ/.mmlocks-series"
say "build: finished in $(( $(date +%s) - start )) s, kernelrelease $REL"

mkdir -p "$CACHE/images"
tmpimg=$(mktemp -d "$CACHE/images/.tmp.XXXXXX")
cp "$OBJ/arch/x86/boot/bzImage" "$tmpimg/bzImage"
cp "$OBJ/.config" "$tmpimg/config"
echo "$REL" >"$tmpimg/kernelrelease"
cp "$LOG" "$tmpimg/build.log"
{ echo "version $KVER"; echo "package $PKGVER"; echo "series $SERIES_HASH"
  for p in "${PATCHES[@]}"; do echo "patch $p"; done; echo "config $CFG_HASH"
  for f in "${FRAGS[@]}"; do echo "fragment $(basename "$f")"; done; } >"$tmpimg/key"
rm -rf "$IMG"
mv "$tmpimg" "$IMG"
publish
