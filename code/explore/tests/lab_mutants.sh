#!/bin/bash
# lab_mutants.sh - build the explorer on each lab mutant (a plausible wrong answer) and say whether a scenario breaks it.
# Usage: tests/lab_mutants.sh [LAB...]   (01 04 06 07; default: all four)
# For each labs/NN-*/mutants/*.patch: copy the lab's exercise files, apply the
# patch, build the explorer with them, run the lab's scenarios, and print one
# line: the scenarios whose verdict changed (with the breaking schedule's replay
# string), or "no scenario breaks it". Slow (one build per mutant): not in `make test`.
set -u
case "${1:-}" in
-h|--help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) echo "lab_mutants: unknown option $1 (--help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 2
TOP=../..
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

# lab: exercise files (NAME=VARIABLE), scenarios
declare -A FILES=(
	[01]="rwsem_steal.c=RWSEM_STEAL"
	[04]="vma_read.c=VMA_READ"
	[06]="uprobe_speculate.c=UPROBE_SPECULATE"
	[07]="rmap.c=THP_RMAP deferred_split.c=THP_DEFERRED"
)
declare -A SCN=(
	[01]="rwsem-steal rwsem-nosteal rwsem-writer-first rwsem-nosteal-call rwsem-guard-prefer rwsem-guard rwsem2-steal rwsem2-nosteal rwsem2-writer-first"
	[04]="vma-norecheck vma-recheck vma-start-norecheck vma-start-recheck vma-shrink-norecheck vma-shrink-recheck"
	[06]="uprobe-noretry uprobe-retry"
	[07]="thp-unlocked-drop thp-locked-drop"
)
labs=${*:-01 04 06 07}
for lab in $labs; do
	[ -n "${FILES[$lab]:-}" ] || { echo "lab_mutants: no scenarios for lab $lab (01 04 06 07)" >&2; exit 2; }
	dir=$(ls -d $TOP/labs/$lab-*/ | head -1)
	for p in "$dir"mutants/*.patch; do
		m=$(basename "$p" .patch)
		w=$tmp/$lab-$m && mkdir -p "$w/src"
		vars=()
		for fv in ${FILES[$lab]}; do
			f=${fv%%=*}
			cp -L "$dir/src/$f" "$w/src/$f"
			vars+=("${fv#*=}=$(realpath "$w/src/$f")")
		done
		touched=$(sed -n 's|^+++ b/||p' "$p" | tr '\n' ' ')
		if ! patch -s -p1 -d "$w/src" <"$p" >/dev/null 2>&1; then
			echo "$lab/$m: not reachable: it patches ${touched}which no scenario runs"
			continue
		fi
		if ! nice make -s command BUILD="$w/build" EXTRA_CFLAGS=-Wno-error "${vars[@]}" >"$w/log" 2>&1; then
			echo "$lab/$m: does not build with the explorer (see its patch)"
			continue
		fi
		out=$(timeout 300 "$w/build/explore" --quiet ${SCN[$lab]} 2>&1); rc=$?
		if [ $rc -gt 1 ]; then
			echo "$lab/$m: BROKEN: the explorer stopped (exit $rc): $(echo "$out" | grep '^explore:' | head -1)"
			continue
		fi
		# "NAME FOUND (expected NONE) --replay STRING" for each unexpected verdict
		bad=$(echo "$out" | awk '
			/UNEXPECTED/ { for (i = 1; i <= NF; i++) if ($i == "FOUND" || $i == "NONE") v = $i
				       line = $1 " " v " (expected " (v == "FOUND" ? "NONE" : "FOUND") ")"
				       if (v == "NONE") { print line; line = "" }; next }
			/^  --replay / && line != "" { print line " --replay " $2; line = "" }
			/^[a-z]/ { line = "" }' | paste -sd ';' | sed 's/;/; /g')
		if [ -n "$bad" ]; then
			echo "$lab/$m: BROKEN: $bad"
		else
			echo "$lab/$m: no scenario breaks it"
		fi
	done
done
