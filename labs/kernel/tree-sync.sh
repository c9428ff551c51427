#!/bin/bash
# tree-sync.sh: the persistent source tree's patch stage, for build.sh (which
# sources it) and its host test (labs/kernel/selftests/test-host.sh).
#
# tree_sync: bring $TREE to pristine $PRISTINE plus the series ${PATCHES[@]}
# (files in $PATCHDIR), touching only the files whose content changes, so
# make stays incremental. The state file $STATE records the series hash
# ($SERIES_HASH) and the files the applied series touches; an empty series
# (build.sh --no-patches) puts every file the last series touched back to
# pristine. Uses $CACHE, $VKEY, $KVER, $PKGVER and build.sh's say/die.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	# Run, not sourced: it is a library.
	case "${1:-}" in
	--help|-h) echo "usage: . labs/kernel/tree-sync.sh; tree_sync   (a library for build.sh; see its header)"; exit 0 ;;
	*) echo "tree-sync.sh: a library for labs/kernel/build.sh, not a program (try --help)" >&2; exit 2 ;;
	esac
fi

tree_sync() {
STATE=$CACHE/tree/.$VKEY.state   # files the applied series touches + series hash
if [ ! -f "$TREE/.mmlocks-tree" ]; then
	say "unpack: copying pristine $KVER ($PKGVER) to $TREE"
	rm -rf "$TREE" "$STATE" "$STATE.sync"
	mkdir -p "$CACHE/tree"
	cp -a "$PRISTINE" "$TREE.tmp.$$"
	rm -f "$TREE.tmp.$$/.unpacked"
	touch "$TREE.tmp.$$/.mmlocks-tree"
	mv "$TREE.tmp.$$" "$TREE"
	printf 'series %s\n' "$(echo "$VKEY" | sha256sum | cut -c1-16)" >"$STATE"  # = empty series
fi

# Files named in a patch (git format-patch headers).
patch_files() { grep -E '^diff --git a/' "$1" | sed -E 's|^diff --git a/([^ ]+) b/([^ ]+)$|\1\n\2|'; }

cur_series=$(sed -n 's/^series //p' "$STATE" 2>/dev/null || true)
if [ -f "$STATE.sync" ] || [ "$cur_series" != "$SERIES_HASH" ]; then
	# Apply the whole series to a scratch copy of just the files it (or the
	# previously applied series) touches, then copy into the persistent tree
	# only the files whose content differs. Unchanged files keep their mtime.
	STAGE=$(mktemp -d "$CACHE/tree/.stage.XXXXXX")
	trap 'rm -rf "$STAGE"' EXIT
	old_files=$( { sed -n 's/^file //p' "$STATE" 2>/dev/null; sed -n 's/^file //p' "$STATE.sync" 2>/dev/null; } || true)
	new_files=$(for p in "${PATCHES[@]}"; do patch_files "$PATCHDIR/$p"; done)
	all_files=$(printf '%s\n%s\n' "$old_files" "$new_files" | grep -v '^$' | sort -u || true)
	for f in $all_files; do
		if [ -f "$PRISTINE/$f" ]; then
			mkdir -p "$STAGE/$(dirname "$f")"
			cp -p "$PRISTINE/$f" "$STAGE/$f"
		fi
	done
	for p in "${PATCHES[@]}"; do
		say "patch $p"
		if ! out=$(cd "$STAGE" && patch -p1 -N --fuzz=0 --no-backup-if-mismatch -r - <"$PATCHDIR/$p" 2>&1); then
			echo "$out" | sed 's/^/    /' >&2
			die "patch $p does not apply to Linux $KVER (Debian linux-source-6.12 $PKGVER, $PRISTINE)"
		fi
	done
	# Record the union first: an interrupted sync is redone next time.
	{ printf 'series %s\n' "$SERIES_HASH"; for f in $all_files; do printf 'file %s\n' "$f"; done; } >"$STATE.sync"
	changed=0
	for f in $all_files; do
		if [ -f "$STAGE/$f" ]; then
			if ! cmp -s "$STAGE/$f" "$TREE/$f"; then
				mkdir -p "$TREE/$(dirname "$f")"
				rm -f "$TREE/$f"
				cp "$STAGE/$f" "$TREE/$f"    # new inode, new mtime
				changed=$((changed + 1))
			fi
		elif [ -e "$TREE/$f" ]; then
			rm -f "$TREE/$f"                  # created by a patch no longer in the series
			changed=$((changed + 1))
		fi
	done
	{ printf 'series %s\n' "$SERIES_HASH"; printf '%s\n' "$new_files" | { grep -v '^$' || true; } | sort -u | sed 's/^/file /'; } >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
	rm -f "$STATE.sync"
	rm -rf "$STAGE"; trap - EXIT
	say "patch: series applied, $changed file(s) changed in $TREE"
else
	for p in "${PATCHES[@]}"; do say "patch $p (already applied)"; done
fi
}
