#!/bin/bash
# test_cli.sh - the explore command's interface: help, bad input (exit 2), replay, --dot.
set -u
EXPLORE=${EXPLORE:-../../build/code/explore/explore}
pass=0 fail=0
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

expect() {	# expect RC DESCRIPTION -- COMMAND...
	local want=$1 what=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then pass=$((pass + 1))
	else fail=$((fail + 1)); echo "FAIL: $what: exit $rc, wanted $want"; head -5 "$tmp/err" "$tmp/out"; fi
}

expect 0 "--help" -- "$EXPLORE" --help
grep -q '^usage: explore' "$tmp/out" || { fail=$((fail + 1)); echo "FAIL: --help prints no usage"; }
expect 2 "unknown option" -- "$EXPLORE" --frobnicate
expect 2 "unknown scenario" -- "$EXPLORE" no-such-scenario
expect 2 "bad bound" -- "$EXPLORE" --bound many rwsem-steal
expect 2 "bad replay: no picks" -- "$EXPLORE" --replay rwsem-steal
expect 2 "bad replay: not a thread" -- "$EXPLORE" --replay rwsem-steal:RQ
expect 2 "bad replay: too short" -- "$EXPLORE" --replay rwsem-steal:RW
grep -q 'replay string' "$tmp/err" || { fail=$((fail + 1)); echo "FAIL: bad replay: no message"; }
expect 0 "--list" -- "$EXPLORE" --list
expect 0 "a correct variant" -- "$EXPLORE" --quiet rwsem-nosteal
grep -q 'NONE  (expected NONE)' "$tmp/out" || { fail=$((fail + 1)); echo "FAIL: rwsem-nosteal: no NONE line"; }
expect 0 "a broken variant, found as expected" -- "$EXPLORE" --dot "$tmp/s.dot" rwsem-steal
replay=$(sed -n 's/^  --replay //p' "$tmp/out")
[ -n "$replay" ] || { fail=$((fail + 1)); echo "FAIL: rwsem-steal: no replay string printed"; }
for i in 1 2 3; do
	expect 1 "replay $i of $replay fails" -- "$EXPLORE" --replay "$replay"
	cp "$tmp/out" "$tmp/replay$i"
done
cmp -s "$tmp/replay1" "$tmp/replay3" || { fail=$((fail + 1)); echo "FAIL: two replays printed different timelines"; }
if command -v dot >/dev/null; then
	expect 0 "the dot file renders" -- dot -Tsvg -o "$tmp/s.svg" "$tmp/s.dot"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
