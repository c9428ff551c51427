#!/bin/sh
# cli.sh: khugepaged_model's command line -- help, rejected values, sweep file, determinism.
M=${1:?usage: cli.sh PATH/TO/khugepaged_model}
fail=0
check() { # expected-status description command...
	want=$1; what=$2; shift 2
	"$@" >/dev/null 2>&1; got=$?
	if [ "$got" -ne "$want" ]; then echo "cli: FAIL $what: exit $got, want $want"; fail=1; fi
}
check 0 "--help" "$M" --help
for bad in "--contention 1.01" "--contention -0.1" "--contention nan" "--cursor x" \
	   "--vmas -3" "--vmas 99999999" "--mms 0" "--skip-batch x" "--sweep x" \
	   "--out f" "-c" "--nope" "stray"; do
	# shellcheck disable=SC2086
	check 2 "$bad" "$M" $bad
done
[ "$("$M" --help)" != "" ] || { echo "cli: FAIL --help prints nothing"; fail=1; }
a=$("$M" --contention 0.4 --seed 9 --vmas 500 --pmds 8)
b=$("$M" --contention 0.4 --seed 9 --vmas 500 --pmds 8)
[ "$a" = "$b" ] || { echo "cli: FAIL same seed, different output"; fail=1; }
d=$(mktemp -d)
"$M" --sweep vmas --pmds 1 --runs 1 --out "$d/hold.dat" || fail=1
[ "$(grep -vc '^#' "$d/hold.dat")" -eq 11 ] || { echo "cli: FAIL sweep rows"; fail=1; }
[ "$(ls "$d" | wc -l)" -eq 1 ] || { echo "cli: FAIL temp file left behind"; fail=1; }
rm -rf "$d"
[ $fail -eq 0 ] && echo "cli: all checks passed"
exit $fail
