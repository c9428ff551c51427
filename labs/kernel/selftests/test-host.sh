#!/bin/bash
# Host-only tests of the QEMU plumbing (no kernel, no QEMU): run the guest
# /init in dry-run mode under busybox sh against a fake root, then feed its
# output to summarize.py and check.py and assert on what they report.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
K=$(cd "$HERE/.." && pwd)
case "${1:-}" in
--help|-h) echo "usage: labs/kernel/selftests/test-host.sh   (no arguments; exit 0 = all passed)"; exit 0 ;;
"") ;;
*) echo "usage: labs/kernel/selftests/test-host.sh" >&2; exit 2 ;;
esac
BB=$(command -v busybox) || { echo "busybox missing"; exit 1; }
W=$(mktemp -d)
trap "rm -rf \"$W\"" EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
fails=0 n=0
ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1${2:+: $2}"; }
expect() { # expect DESCRIPTION PYTHON-EXPR-ON-RECS FILE
	if python3 - "$3" "$2" <<'EOF'
import json, sys
recs = []
for l in open(sys.argv[1], errors="replace"):
    l = l.strip()
    try:
        recs.append(json.loads(l))
    except ValueError:
        recs.append(l)
def typed(t, **kv):
    return [r for r in recs if isinstance(r, dict) and r.get("type") == t
            and all(r.get(k) == v for k, v in kv.items())]
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
	then ok "$1"; else bad "$1" "$(head -c 600 "$3")"; fi
}

# ---- a fake guest root ---------------------------------------------------------
R=$W/root
mkdir -p "$R"/{bin,labs/selftests,etc/mmlocks,proc,sys/kernel/debug/mmlocks} \
	"$R"/sys/kernel/debug/lock_event_counts \
	"$R"/sys/kernel/tracing/events/mmap_lock/{mmap_lock_start_locking,mmap_lock_acquire_returned,mmap_lock_released}
for a in $("$BB" --list); do ln -s "$BB" "$R/bin/$a"; done
cp /proc/meminfo "$R/proc/meminfo"
echo 1 >"$R/sys/kernel/debug/mmlocks/rwsem_steal_policy"
echo 1 >"$R/sys/kernel/debug/mmlocks/khugepaged_per_slot_cursor"
echo 1024 >"$R/sys/kernel/debug/mmlocks/khugepaged_skip_batch"
for e in rwsem_rlock_steal rwsem_rlock .reset_counts; do echo 0 >"$R/sys/kernel/debug/lock_event_counts/$e"; done
for e in "$R"/sys/kernel/tracing/events/mmap_lock/*; do echo 0 >"$e/enable"; done
cat >"$R/labs/good" <<'EOF'
#!/bin/sh
case "$1" in --help) echo "usage: good [--quick]"; exit 0 ;; esac
echo "progress on stderr" >&2
echo '{"type":"info","quick":"'"$1"'"}'
echo '{"type":"summary","experiment":"good","metric":"m","unit":"us","before":100,"after":10,"ratio":10,"published":null,"source":null,"goal":">= 5x","pass":true}'
EOF
cat >"$R/labs/hang" <<'EOF'
#!/bin/sh
case "$1" in --help) echo "usage: hang"; exit 0 ;; esac
echo '{"type":"info","msg":"about to hang"}'
exec sleep 600
EOF
cat >"$R/labs/notjson" <<'EOF'
#!/bin/sh
echo "plain text, not JSON"
exit 0
EOF
cat >"$R/labs/selftests/khugepaged" <<'EOF'
#!/bin/sh
e=$(printf '\033')
echo "Save THP and khugepaged settings... ${e}[32mOK${e}[0m"
echo "args: $*"
echo; echo "Run test: collapse_full (khugepaged:anon)"
echo "Collapse multiple fully populated PTE table.... ${e}[32mOK${e}[0m"
echo; echo "Run test: collapse_swapin_single_pte (khugepaged:anon)"
echo "Swapout one page... ${e}[31mFail${e}[0m"
if [ -e /tmp/mmlocks-test-fail ] || [ -e "$MMLOCKS_ROOT/fail" ]; then
	echo; echo "Run test: collapse_empty (khugepaged:anon)"
	echo "Do not collapse empty PTE table... ${e}[31mTimeout${e}[0m"
	exit 2
fi
exit 1
EOF
chmod 755 "$R"/labs/* "$R"/labs/selftests/khugepaged
cat >"$R/etc/mmlocks/experiments" <<'EOF'
# name   command
good     /labs/good --flag
hang     /labs/hang
# smoke-args: good --size 3 --seconds 1
EOF

dry() { # dry MODE-WORDS OUTFILE
	env MMLOCKS_DRYRUN=1 MMLOCKS_ROOT="$R" MMLOCKS_CMDLINE="console=ttyS0 $1" MMLOCKS_RESULTS="$2" \
		timeout 60 "$BB" sh "$K/init" >"$2.console" 2>&1
}

# ---- safety: outside a guest (not PID 1, no dry run) /init must refuse -------------
before=$(cat /proc/self/mountinfo)
env -u MMLOCKS_DRYRUN timeout 10 "$BB" sh "$K/init" >"$W/refuse.out" 2>&1; rc=$?
[ $rc = 1 ] && [ "$(cat /proc/self/mountinfo)" = "$before" ] && grep -q 'not PID 1' "$W/refuse.out" &&
	ok "init refuses to run on a host (not PID 1), mounts nothing" || bad "init refuses on a host" "rc $rc"

# ---- mode=run ---------------------------------------------------------------------
dry "mmlocks.run=good,hang,nosuch mmlocks.quick=1 mmlocks.timeout=2" "$W/run.jsonl"
expect "run: guest record first, with the knob values" \
	'recs[0]["type"] == "guest" and recs[0]["knobs"]["khugepaged_skip_batch"] == "1024" and recs[0]["quick"] is True' "$W/run.jsonl"
expect "run: every line on the results port is a JSON object" \
	'all(isinstance(r, dict) for r in recs)' "$W/run.jsonl"
expect "run: good framed by begin/end, rc 0, --quick appended after its arguments" \
	'typed("begin", experiment="good") and typed("end", experiment="good")[0]["rc"] == 0 and typed("info")[0]["quick"] == "--flag"' "$W/run.jsonl"
expect "run: hang is stopped by the per-experiment timeout (TERM, rc 143)" \
	'typed("end", experiment="hang")[0]["rc"] == 143 and typed("end", experiment="hang")[0]["timeout"] is True' "$W/run.jsonl"
expect "run: an unknown experiment gets an error record and rc 127" \
	'typed("end", experiment="nosuch")[0]["rc"] == 127 and typed("error")' "$W/run.jsonl"
if grep -q "progress on stderr" "$W/run.jsonl.console"; then ok "run: program stderr goes to the console"; else bad "run: program stderr goes to the console"; fi

# ---- summarize.py on that run ------------------------------------------------------
RD=$W/rundir; mkdir -p "$RD"
cp "$W/run.jsonl" "$RD/good.jsonl"
printf 'junk\n{"type":"begin","experiment":"crashy","quick":false}\n{"type":"info"}\n' >"$RD/crashy.jsonl"
printf '{"experiments":[{"name":"good","status":"ok"},{"name":"crashy","status":"panic"},{"name":"silent","status":"ok"}],"accel":"tcg","vcpus":2,"mem_mib":2048,"kernel_release":"6.12.0-test","qemu":"7.2"}\n' >"$RD/meta.json"
if "$K/summarize.py" "$RD" >/dev/null 2>&1; then ok "summarize: exit 0"; else bad "summarize: exit 0"; fi
S=$RD/summary.md
grep -q '^| good | m | no published figure | 100 us | 10 us | 10.0x | >= 5x | PASS |$' "$S" && ok "summarize: good row PASS" || bad "summarize: good row PASS" "$(cat "$S")"
grep -q '^| crashy |.*FAIL: kernel panic |$' "$S" && ok "summarize: panic row FAIL" || bad "summarize: panic row FAIL" "$(cat "$S")"
grep -q '^| silent |.*FAIL: no result' "$S" && ok "summarize: missing experiment says no result" || bad "summarize: missing experiment says no result" "$(cat "$S")"
grep -q '^| hang |.*FAIL: timed out in the guest |$' "$S" && ok "summarize: guest timeout row FAIL" || bad "summarize: guest timeout row FAIL" "$(cat "$S")"
grep -q 'quick run' "$RD/good.md" && grep -q '6.12.0-test\|Linux' "$RD/good.md" && ok "summarize: fragment names the environment and the quick run" || bad "summarize: fragment" "$(cat "$RD/good.md")"
"$K/summarize.py" --bogus "$RD" >/dev/null 2>&1; [ $? = 2 ] && ok "summarize: bad option exits 2" || bad "summarize: bad option exits 2"

# ---- mode=smoke ----------------------------------------------------------------------
dry "mmlocks.mode=smoke mmlocks.timeout=2" "$W/smoke.jsonl"
expect "smoke: release, 3 knobs, lock events, trace events reported present" \
	'typed("smoke", check="release") and len([r for r in typed("smoke", check="knob") if r["exists"] and r["readable"]]) == 3 and all(r["exists"] for r in typed("smoke", check="lock_event") + typed("smoke", check="trace_event"))' "$W/smoke.jsonl"
expect "smoke: every program ran --help and --quick (framed by program)" \
	'sorted(r["program"] for r in typed("smoke", check="help")) == ["good", "hang", "notjson"] and len(typed("end")) == 3' "$W/smoke.jsonl"
expect "smoke: '# smoke-args:' options follow --quick for that program only" \
	'typed("begin", program="good")[0]["args"] == "--size 3 --seconds 1" and typed("begin", program="hang")[0]["args"] == ""' "$W/smoke.jsonl"
expect "smoke: the non-JSON line of notjson reaches the host for it to judge" \
	'"plain text, not JSON" in recs' "$W/smoke.jsonl"
expect "smoke: finished" 'typed("smoke", check="done")' "$W/smoke.jsonl"
rm "$R/sys/kernel/debug/mmlocks/khugepaged_skip_batch"
dry "mmlocks.mode=smoke mmlocks.timeout=2" "$W/smoke2.jsonl"
expect "smoke: a missing knob is reported missing" \
	'typed("smoke", check="knob", name="khugepaged_skip_batch")[0]["exists"] is False' "$W/smoke2.jsonl"

# ---- mode=selftests and check.py --------------------------------------------------
dry "mmlocks.mode=selftests mmlocks.knobs=rwsem_steal_policy=0,khugepaged_skip_batch=0" "$W/st.jsonl"
expect "selftests: knobs applied, a missing knob is not ok" \
	'typed("knob", name="rwsem_steal_policy")[0]["ok"] is True and typed("knob", name="khugepaged_skip_batch")[0]["ok"] is False' "$W/st.jsonl"
expect "selftests: default type khugepaged:anon, raw text between begin and end" \
	'typed("begin", selftest="khugepaged:anon") and "args: khugepaged:anon" in recs and typed("end")[0]["rc"] == 1' "$W/st.jsonl"
echo 1024 >"$R/sys/kernel/debug/mmlocks/khugepaged_skip_batch"
dry "mmlocks.mode=selftests mmlocks.knobs=rwsem_steal_policy=2" "$W/st-ok.jsonl"
: >"$W/empty.log"
out=$(python3 "$HERE/check.py" --run defaults "$W/st-ok.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "1 passed, 1 known-skipped, 0 failed" <<<"$out" && grep -q "known-skipped: collapse_swapin_single_pte: needs swap" <<<"$out" &&
	ok "check.py: a known-skipped failure passes, with its reason" || bad "check.py: known-skipped" "$out"
out=$(python3 "$HERE/check.py" --run knobs "$W/st.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "knob khugepaged_skip_batch=0 could not be set" <<<"$out" &&
	ok "check.py: a knob that could not be set fails" || bad "check.py: knob failure" "$out"
touch "$R/fail"
dry "mmlocks.mode=selftests" "$W/st-fail.jsonl"
rm -f "$R/fail"
out=$(python3 "$HERE/check.py" --run defaults "$W/st-fail.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "failed: collapse_empty (Do not collapse empty PTE table... Timeout)" <<<"$out" &&
	ok "check.py: any other failing case fails the run" || bad "check.py: other failure" "$out"
echo "[  5.0] BUG: kernel NULL pointer dereference" >"$W/oops.log"
out=$(python3 "$HERE/check.py" --run defaults "$W/st-ok.jsonl" "$W/oops.log" 2>&1); rc=$?
[ $rc = 1 ] && ok "check.py: a BUG on the console fails" || bad "check.py: console BUG" "$out"
head -n 3 "$W/st-ok.jsonl" >"$W/st-cut.jsonl"
out=$(python3 "$HERE/check.py" --run cut "$W/st-cut.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no end record" <<<"$out" && ok "check.py: a run cut short fails" || bad "check.py: cut short" "$out"

# ---- check.py on the upstream selftests (run-selftest's records) --------------------
up() { # up FILE RC TAP-LINES...: one knob record and one mm/mremap_test-like block
	local f=$1 rc=$2; shift 2
	{ echo '{"type":"knob","name":"access_remote_vm_vma_lock","requested":"0","value":"0","ok":true}'
	  echo '{"type":"begin","selftest":"proc/read"}'; echo '{"type":"end","selftest":"proc/read","rc":0,"seconds":0.4}'
	  echo '{"type":"begin","selftest":"mm/mremap_test"}'; printf '%s\n' "$@"
	  echo '{"type":"end","selftest":"mm/mremap_test","rc":'"$rc"',"seconds":9}'; } >"$f"
}
up "$W/up-ok.jsonl" 1 "1..3" "ok 1 # XFAIL mremap - Overlapping" "ok 2 mremap - PTE-aligned" \
	"# Failed to map source region: Cannot allocate memory" "not ok 3 2GB mremap - Source PUD-aligned"
out=$(python3 "$HERE/check.py" --run stock "$W/up-ok.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "stock mm/mremap_test  *2 passed, 1 known-skipped, 0 failed" <<<"$out" &&
	grep -q "stock proc/read  *1 passed" <<<"$out" && grep -q "known-skipped: mm/mremap_test: 3 2GB.*ENOMEM" <<<"$out" &&
	ok "check.py: TAP cases, a known 2 GB failure excused with its reason, exit 0 of a proc test" || bad "check.py: upstream ok" "$out"
up "$W/up-bad.jsonl" 1 "1..3" "ok 1 a" "not ok 2 mremap - PTE-aligned" "ok 3 b"
out=$(python3 "$HERE/check.py" --run stock "$W/up-bad.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "failed: 2 mremap - PTE-aligned (not ok)" <<<"$out" &&
	ok "check.py: any other not-ok TAP case fails" || bad "check.py: TAP failure" "$out"
up "$W/up-cut.jsonl" 0 "1..3" "ok 1 a" "ok 2 b"
out=$(python3 "$HERE/check.py" --run stock "$W/up-cut.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "TAP plan 1..3, but 2 result line" <<<"$out" &&
	ok "check.py: fewer TAP lines than planned fails" || bad "check.py: TAP plan" "$out"
sed 's/"selftest":"proc\/read","rc":0/"selftest":"proc\/read","rc":134/' "$W/up-ok.jsonl" >"$W/up-abrt.jsonl"
out=$(python3 "$HERE/check.py" --run stock "$W/up-abrt.jsonl" "$W/empty.log" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "failed: proc/read (exit status 134)" <<<"$out" &&
	ok "check.py: a proc selftest's failed assert() (exit 134) fails" || bad "check.py: proc exit status" "$out"

# ---- stflake and flake_report.py (selftests.sh --repeat) -----------------------------
if gcc -O2 -std=gnu11 -Wall -Wextra -Werror -pthread -I"$K/guest" "$HERE/stflake.c" "$K"/guest/*.c \
	-o "$W/stflake" 2>"$W/stflake.err"; then
	timeout 60 "$W/stflake" --runs 2 --out "$W/fl.out" sh -c 'printf "a\\rstep 7/512..."; exit 3' >"$W/fl-ok.jsonl"; rc=$?
	expect "stflake: two runs, exit status and last line recorded, exit 0" \
		"$rc == 0 and len(typed('flake_run', rc=3, signal=0, last='step 7/512...')) == 2 and typed('flake_summary', exited=2)" \
		"$W/fl-ok.jsonl"
	timeout 60 "$W/stflake" --out "$W/fl.out" sh -c 'echo "free(): invalid pointer" >&2; kill -ABRT $$' >"$W/fl-abrt.jsonl"; rc=$?
	expect "stflake: SIGABRT is held for a catch (maps, stack) and then delivered, exit 1" \
		"$rc == 1 and typed('flake_run', signal=6, caught=6) and typed('flake_maps') and typed('flake_stack') and typed('flake_summary', killed_by_signal=1)" \
		"$W/fl-abrt.jsonl"
	out=$(python3 "$HERE/flake_report.py" --run x "$W/fl-abrt.jsonl" 2>&1); rc=$?
	[ $rc = 1 ] && grep -q "^x: 1 runs (1 execs), signal 6: 1" <<<"$out" && grep -q "invalid pointer" <<<"$out" &&
		ok "flake_report.py: counts the signal and shows the last line, exit 1" || bad "flake_report.py" "$out"
	# A SIGALRM that lands while stflake is in fork() must still end the
	# run: before the fix, 6 of 20 such runs spun on forever (CI hung on
	# this test). Four tries, each bounded, so a regression shows as a
	# failure (exit 124), not as a hung CI.
	hung=0 other=
	for i in 1 2 3 4; do
		timeout 15 "$W/stflake" --brk-window 1-2 --timeout 1 true >"$W/fl-win.jsonl"; rc=$?
		case $rc in 1) ;; 124) hung=$((hung + 1)) ;; *) other="$other $rc" ;; esac
	done
	[ $hung = 0 ] && [ -z "$other" ] && ok "stflake: --timeout ends a --brk-window search every time (4 tries, none hung)" ||
		bad "stflake: --timeout with --brk-window" "$hung of 4 tries still running after 15 s; other exit statuses:${other:- none}"
	expect "stflake: a --brk-window never met ends at --timeout (SIGKILL), exit 1" \
		"$rc == 1 and typed('flake_run', signal=9) and typed('flake_run')[0]['execs'] > 1" "$W/fl-win.jsonl"
	wrong=
	for a in "--runs 0 true" "--brk-window 5-3 true" "--timeout" ""; do
		# shellcheck disable=SC2086  # each case is a list of words
		timeout 10 "$W/stflake" $a >/dev/null 2>&1
		[ $? = 2 ] || wrong="$wrong '$a'"
	done
	[ -z "$wrong" ] && ok "stflake: bad arguments exit 2" || bad "stflake: not a usage error (exit 2):$wrong"
else
	bad "stflake.c compiles" "$(cat "$W/stflake.err")"
fi

# ---- tree-sync.sh: a series, then the empty one (build.sh --no-patches) ----------------
# On a fake pristine tree of two files: the series patches one file and adds
# another; the empty series puts both back, and says so; a second empty
# sync is a no-op. Each sync runs in a subshell with build.sh's set -euo
# pipefail, so a failing pipe in the stage fails the test as it failed the build.
TS=$W/tree-sync
mkdir -p "$TS/pristine/mm" "$TS/patches" "$TS/cache/tree"
printf 'int a(void)\n{\n\treturn 1;\n}\n' >"$TS/pristine/mm/a.c"
printf 'int b;\n' >"$TS/pristine/mm/b.c"
cp -a "$TS/pristine" "$TS/cache/tree/v"; touch "$TS/cache/tree/v/.mmlocks-tree"
cat >"$TS/patches/0001-x.patch" <<'PATCH'
diff --git a/mm/a.c b/mm/a.c
--- a/mm/a.c
+++ b/mm/a.c
@@ -1,4 +1,4 @@
 int a(void)
 {
-	return 1;
+	return 2;
 }
diff --git a/mm/new.c b/mm/new.c
new file mode 100644
--- /dev/null
+++ b/mm/new.c
@@ -0,0 +1 @@
+int fresh;
PATCH
ts_run() { # ts_run SERIES-HASH PATCH...: one tree_sync, output in $TS/out
	( set -euo pipefail
	  say() { echo "build.sh: $*"; }; die() { echo "build.sh: error: $*" >&2; exit 1; }
	  CACHE=$TS/cache VKEY=v KVER=6.12.0 PKGVER=test PRISTINE=$TS/pristine TREE=$TS/cache/tree/v
	  PATCHDIR=$TS/patches SERIES_HASH=$1; shift; PATCHES=("$@")
	  . "$K/tree-sync.sh"; tree_sync ) >"$TS/out" 2>&1
}
printf 'series %s\n' "$(echo v | sha256sum | cut -c1-16)" >"$TS/cache/tree/.v.state"
if ts_run aaaa 0001-x.patch && grep -q 'return 2' "$TS/cache/tree/v/mm/a.c" && [ -f "$TS/cache/tree/v/mm/new.c" ] &&
	grep -qx 'file mm/new.c' "$TS/cache/tree/.v.state"; then
	ok "tree-sync: the series patches a.c, adds new.c, records both"
else
	bad "tree-sync: series" "$(cat "$TS/out")"
fi
if ts_run bbbb && cmp -s "$TS/pristine/mm/a.c" "$TS/cache/tree/v/mm/a.c" && [ ! -e "$TS/cache/tree/v/mm/new.c" ] &&
	! grep -q '^file ' "$TS/cache/tree/.v.state" && grep -q 'series applied, 2 file(s) changed' "$TS/out"; then
	ok "tree-sync: the empty series (--no-patches) restores pristine, exit 0"
else
	bad "tree-sync: empty series" "$(cat "$TS/out")"
fi
if ts_run cccc && grep -q 'series applied, 0 file(s) changed' "$TS/out" && [ ! -e "$TS/cache/tree/.v.state.sync" ]; then
	ok "tree-sync: an empty series over an empty one changes nothing, exit 0"
else
	bad "tree-sync: empty over empty" "$(cat "$TS/out")"
fi

# ---- mode=probe, mode=shell ---------------------------------------------------------
dry "mmlocks.mode=probe" "$W/probe.jsonl"
grep -q '^MMLOCKS-PROBE-OK' "$W/probe.jsonl.console" && ok "probe: prints the marker" || bad "probe: marker" "$(cat "$W/probe.jsonl.console")"
dry "mmlocks.mode=shell" "$W/shell.jsonl"
grep -q 'khugepaged_skip_batch *= 1024$' "$W/shell.jsonl.console" && grep -q 'Power off' "$W/shell.jsonl.console" &&
	ok "shell: banner shows the knobs and how to power off" || bad "shell: banner" "$(cat "$W/shell.jsonl.console")"

# ---- the guest tools' wrapper (labs/kernel/tools/mmlocks-tool) under busybox sh --------
printf 'bin\0ary' >"$W/tool.bin"
(cd "$W" && "$BB" sh "$K/tools/mmlocks-tool" --name t --file "$W/tool.bin" --file "$W/none" -- \
	"$BB" sh -c 'printf "a\"b\tc\\\\d\n"; echo oops >&2; exit 3' --quick) >"$W/tool.jsonl" 2>/dev/null
trc=$?
[ $trc = 3 ] && ok "mmlocks-tool: exits with the tool's status" || bad "mmlocks-tool: status" "$trc"
expect "mmlocks-tool: lines, escapes, the file, the end" \
	'all(isinstance(r, dict) for r in recs) and typed("tool", stream="out")[0]["line"] == "a\"b\tc\\d" and typed("tool", stream="err")[0]["line"] == "oops" and typed("file", name="tool.bin")[0]["base64"] == "YmluAGFyeQ==" and typed("file", name="none")[0]["missing"] and typed("tool_end")[0]["rc"] == 3 and "--quick" not in typed("tool_begin")[0]["cmd"]' "$W/tool.jsonl"

echo "$((n - fails))/$n host tests passed"
[ $fails = 0 ]
