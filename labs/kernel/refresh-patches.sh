#!/bin/bash
# Re-diff patches of labs/kernel/patches/series against the tree their
# predecessors leave, as `quilt refresh` does: after two patches were
# written in parallel against the same base, the later one applies again
# with --fuzz=0 (what build.sh demands). Each patch's header (everything
# before its first `diff --git`) is kept; only the diff body is rewritten.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PROG=labs/kernel/refresh-patches.sh
PATCHDIR=$HERE/patches

usage() {
	cat <<EOF
usage: $PROG [--check] [--fuzz N] [PATCH...]

Applies the series in order to a scratch copy of the files it touches (from
the pristine 6.12 tree, labs/kernel/linux-source.sh). Each named PATCH (a
file name in patches/, default: every patch) is applied with up to --fuzz
lines of fuzz (default 2) and rewritten as the exact diff of what it changed;
every other patch must apply with --fuzz=0. A named patch that already
applies with --fuzz=0 is left as it is.

  --check     change nothing; exit 1 if a patch would be rewritten
  --fuzz N    fuzz allowed when applying a PATCH being refreshed (0..3)
  --help      this text
Exit: 0 done, 1 a patch does not apply (or --check found work), 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

CHECK=0 FUZZ=2 NAMED=()
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--check) CHECK=1; shift ;;
	--fuzz) [ $# -ge 2 ] || die_usage "--fuzz needs a number"; FUZZ=$2; shift 2 ;;
	-*) die_usage "unknown option '$1'" ;;
	*) NAMED+=("$(basename "$1")"); shift ;;
	esac
done
case "$FUZZ" in [0-3]) ;; *) die_usage "--fuzz must be 0..3, got '$FUZZ'" ;; esac

PRISTINE=$("$HERE/linux-source.sh") || die "no pristine tree (labs/kernel/linux-source.sh)"
mapfile -t SERIES < <(grep -vE '^[[:space:]]*(#|$)' "$PATCHDIR/series")
for n in "${NAMED[@]}"; do
	grep -qxF "$n" < <(printf '%s\n' "${SERIES[@]}") || die_usage "$n is not in patches/series"
done
[ ${#NAMED[@]} -gt 0 ] || NAMED=("${SERIES[@]}")

patch_files() { grep -E '^diff --git a/' "$1" | sed -E 's|^diff --git a/([^ ]+) b/([^ ]+)$|\1|'; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
STAGE=$TMP/tree
mkdir -p "$STAGE"
for p in "${SERIES[@]}"; do
	for f in $(patch_files "$PATCHDIR/$p"); do
		if [ -f "$PRISTINE/$f" ] && [ ! -e "$STAGE/$f" ]; then
			mkdir -p "$STAGE/$(dirname "$f")"
			cp "$PRISTINE/$f" "$STAGE/$f"
		fi
	done
done

rewritten=0
for p in "${SERIES[@]}"; do
	refresh=0
	grep -qxF "$p" < <(printf '%s\n' "${NAMED[@]}") && refresh=1
	if [ "$refresh" = 0 ]; then
		(cd "$STAGE" && patch -s -p1 -N --fuzz=0 --no-backup-if-mismatch -r - <"$PATCHDIR/$p") ||
			die "$p does not apply with --fuzz=0 (refresh it too: name it)"
		continue
	fi
	if (cd "$STAGE" && patch -s -p1 -N --fuzz=0 --dry-run -r - <"$PATCHDIR/$p" >/dev/null 2>&1); then
		(cd "$STAGE" && patch -s -p1 -N --fuzz=0 --no-backup-if-mismatch -r - <"$PATCHDIR/$p")
		echo "$PROG: $p: applies with --fuzz=0, left as it is"
		continue
	fi
	files=$(patch_files "$PATCHDIR/$p")
	rm -rf "$TMP/before"; mkdir -p "$TMP/before"
	for f in $files; do
		if [ -f "$STAGE/$f" ]; then mkdir -p "$TMP/before/$(dirname "$f")"; cp "$STAGE/$f" "$TMP/before/$f"; fi
	done
	(cd "$STAGE" && patch -s -p1 -N --fuzz="$FUZZ" --no-backup-if-mismatch -r - <"$PATCHDIR/$p") ||
		die "$p does not apply even with --fuzz=$FUZZ: edit it by hand"
	{
		sed -n '/^diff --git /q;p' "$PATCHDIR/$p"
		for f in $files; do
			if [ -f "$TMP/before/$f" ]; then
				echo "diff --git a/$f b/$f"
				diff -u -p --label "a/$f" --label "b/$f" "$TMP/before/$f" "$STAGE/$f" || [ $? = 1 ]
			else
				echo "diff --git a/$f b/$f"
				echo "new file mode 100644"
				diff -u -p --label /dev/null --label "b/$f" /dev/null "$STAGE/$f" || [ $? = 1 ]
			fi
		done
		echo "-- "
		echo "mmlocks"
	} >"$TMP/new.patch"
	if [ "$CHECK" = 1 ]; then
		echo "$PROG: $p: would be rewritten"
		rewritten=$((rewritten + 1))
		continue
	fi
	cp "$TMP/new.patch" "$PATCHDIR/$p.tmp.$$" && mv "$PATCHDIR/$p.tmp.$$" "$PATCHDIR/$p"
	echo "$PROG: $p: rewritten"
	rewritten=$((rewritten + 1))
done
[ "$CHECK" = 1 ] && [ "$rewritten" -gt 0 ] && exit 1
exit 0
