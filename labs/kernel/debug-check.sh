#!/bin/bash
# make debug-check: boot the debug kernel (config.debug: lockdep, DEBUG_VM,
# PROVE_RCU, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, KASAN) and drive the patched
# paths -- remote_stress, smaps_stress, every experiment's --quick, the
# khugepaged selftest -- then
# fail on any kernel splat in the console or any failed program.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/debug-check.sh

# Console lines that mean the kernel found a bug (a "splat").
SPLATS='WARNING:|BUG:|Oops|possible recursive locking|possible circular locking|suspicious RCU usage|sleeping function called from invalid context|inconsistent lock state|lock held when returning to user space|DEBUG_LOCKS_WARN_ON|KASAN|UBSAN|list_add corruption|list_del corruption|Kernel panic|general protection fault|kernel BUG|INFO: task .* blocked'

usage() {
	cat <<EOF
usage: $PROG [--no-build] [--stress-seconds S] [--remote-seconds S] [--skip-selftests] [--help]

Builds the debug kernel (labs/kernel/build.sh --debug: config.fragment +
config.debug, cached apart from the ordinary kernel) and the initramfs, then
boots it twice under timeouts:
  1. mmlocks.mode=run: remote_stress for R seconds (/proc/PID/mem,
     cmdline, environ and PTRACE_PEEKDATA readers and a /proc/PID/mem writer
     against VMA changes, faults and exits of the target, the
     access_remote_vm_vma_lock switch flipped 0/1), smaps_stress for S
     seconds (smaps_rollup readers against the same kind of target, the
     smaps_rollup_vma_lock switch flipped 0/1 and every rwsem_steal_policy),
     deferred_split --stress for S/2 seconds (partial THP unmaps by 2
     threads per vCPU racing deferred_split_scan(), run by drop_caches,
     while deferred_split_early_check flips 0/1), uprobe_scale --stress for
     S/2 seconds (uprobe hits through two mappings of the probed page while
     one is remapped, other mappings churn, children fork and hit the probe,
     uprobe_speculate flips every 200 ms and the uprobe is unregistered and
     registered again every second), then every experiment
     of labs/kernel/experiments with --quick;
  2. mmlocks.mode=selftests: the 6.12 khugepaged selftest (khugepaged:anon)
     with the knobs at their defaults.
Fails when a console shows a splat (WARNING:, BUG:, lockdep and RCU
reports, "sleeping function called from invalid context", KASAN, Oops, ...),
when a program exits non-zero or times out, when a stress program's checks fail,
or when a selftest case fails (known-skipped cases excepted).
Logs: build/debug-check/ (console logs, results, summary.txt).

  --no-build           do not call build.sh / mkinitramfs.sh
  --stress-seconds S   smaps_stress run time (10..3600, default 120)
  --remote-seconds S   remote_stress run time (10..3600, default 60)
  --skip-selftests     only boot 1
  --help               this text
Environment: VCPUS (default 2), MEM (default 2G), as for run-qemu.sh.
Exit status: 0 clean, 1 a check failed, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

BUILD=1 STRESS=120 RSTRESS=60 SELFTESTS=1
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--no-build) BUILD=0; shift ;;
	--stress-seconds) [ $# -ge 2 ] || die_usage "--stress-seconds needs a number"; STRESS=$2; shift 2 ;;
	--remote-seconds) [ $# -ge 2 ] || die_usage "--remote-seconds needs a number"; RSTRESS=$2; shift 2 ;;
	--skip-selftests) SELFTESTS=0; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$STRESS" in ''|*[!0-9]*) die_usage "--stress-seconds must be a number, got '$STRESS'" ;; esac
{ [ "$STRESS" -ge 10 ] && [ "$STRESS" -le 3600 ]; } || die_usage "--stress-seconds must be 10..3600, got $STRESS"
case "$RSTRESS" in ''|*[!0-9]*) die_usage "--remote-seconds must be a number, got '$RSTRESS'" ;; esac
{ [ "$RSTRESS" -ge 10 ] && [ "$RSTRESS" -le 3600 ]; } || die_usage "--remote-seconds must be 10..3600, got $RSTRESS"

T0=$(date +%s)
KDIR=$TOP/build/kernel-debug
OUT=$TOP/build/debug-check
if [ "$BUILD" = 1 ]; then
	timeout 3600 "$HERE/build.sh" --debug --out "$KDIR" || die "debug kernel build failed (run labs/kernel/build.sh --debug)"
	"$HERE/mkinitramfs.sh" || die "initramfs build failed"
fi
[ -f "$KDIR/bzImage" ] || die "$KDIR/bzImage missing: run labs/kernel/build.sh --debug (make kernel-debug)"
BASE_INITRD=$TOP/build/initramfs.cpio.gz
[ -f "$BASE_INITRD" ] || die "$BASE_INITRD missing: run labs/kernel/mkinitramfs.sh"
command -v cpio >/dev/null || die "cpio missing: apt-get install cpio"
rm -rf "$OUT"
mkdir -p "$OUT"

DS_STRESS=$(( (STRESS + 1) / 2 ))
# The guest's /etc/mmlocks/experiments, plus the stress programs. Their sizes
# are given, so the mmlocks.quick=1 that shortens the experiments leaves them alone.
EXPS=$(awk '!/^[ \t]*(#|$)/ { print $1 }' "$HERE/experiments" | paste -sd, -)
mkdir -p "$OUT/overlay/etc/mmlocks"
{
	cat "$HERE/experiments"
	echo "smaps-stress  /labs/smaps_stress --seconds $STRESS --vmas 4000 --life-ms 1500"
	echo "remote-stress  /labs/remote_stress --seconds $RSTRESS --life-ms 1000"
	echo "deferred-split-stress  /labs/deferred_split --stress $DS_STRESS --timeout $((DS_STRESS + 300))"
	echo "uprobe-stress  /labs/uprobe_scale --stress $DS_STRESS --timeout 300"
} >"$OUT/overlay/etc/mmlocks/experiments"
# Linux unpacks concatenated archives in order; a later file replaces an
# earlier one of the same name.
INITRD=$OUT/initramfs.cpio.gz
{
	cat "$BASE_INITRD"
	(cd "$OUT/overlay" && find etc | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -9n)
} >"$INITRD.tmp" && mv "$INITRD.tmp" "$INITRD" || die "writing $INITRD failed"

# The other stresses first: smaps-stress reads lockdep's debug_locks at its end.
RUN=remote-stress,deferred-split-stress,uprobe-stress,smaps-stress,$EXPS
nexp=$(echo "$RUN" | tr , '\n' | grep -c .)
GTMO=$(( (STRESS > RSTRESS ? STRESS : RSTRESS) + 600 ))   # per program, in the guest
fails=0
result() { # result ok|FAIL WHAT [DETAIL]
	printf '%-5s %s%s\n' "$1" "$2" "${3:+: $3}" | tee -a "$OUT/summary.txt"
	[ "$1" = ok ] || fails=$((fails + 1))
}
boot() { # boot NAME APPEND HOST_TIMEOUT
	local s0 rc
	s0=$(date +%s)
	echo "$PROG: boot $1: $2 (timeout $3 s)"
	"$HERE/run-qemu.sh" --kernel "$KDIR/bzImage" --initrd "$INITRD" --timeout "$3" \
		--append "$2" --results "$OUT/$1.jsonl" --console-log "$OUT/$1.console.log" \
		>"$OUT/$1.runner.log" 2>&1
	rc=$?
	echo "$PROG: boot $1: back in $(( $(date +%s) - s0 )) s, run-qemu.sh exit $rc"
	[ $rc = 0 ] && result ok "boot $1" || result FAIL "boot $1" "run-qemu.sh exit $rc (see $OUT/$1.runner.log)"
}
splats() { # splats NAME: the guest must have run the debug kernel, its console be clean
	local con=$OUT/$1.console.log n
	# uname -r of the guest, and lockdep's boot banner.
	if ! grep -q '"release":"[^"]*-debug"' "$OUT/$1.jsonl" 2>/dev/null ||
	   ! grep -q 'Lock dependency validator' "$con"; then
		result FAIL "console $1" "the guest did not report a -debug kernel with lockdep"
		return
	fi
	n=$(grep -cE "$SPLATS" "$con")
	if [ "$n" = 0 ]; then
		result ok "console $1" "no splat ($(wc -l <"$con") lines)"
	else
		result FAIL "console $1" "$n splat line(s), first ones:"
		grep -nE -m 5 -A 12 "$SPLATS" "$con" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
	fi
}

boot experiments "mmlocks.mode=run mmlocks.run=$RUN mmlocks.quick=1 mmlocks.timeout=$GTMO" \
	$((120 + nexp * (GTMO + 20)))
splats experiments
python3 - "$OUT/experiments.jsonl" "$RUN" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
path, names = sys.argv[1], [n for n in sys.argv[2].split(",") if n]
ends, summary, remote, ds, up = {}, {}, {}, {}, {}
for line in open(path, "rb").read().decode("utf-8", "replace").splitlines():
    try:
        r = json.loads(line.strip("\0\r "))
    except ValueError:
        continue
    if r.get("type") == "end" and "experiment" in r:
        ends[r["experiment"]] = r
    if r.get("type") in ("sample", "summary") and r.get("experiment") == "smaps-stress":
        summary.update(r)
    if r.get("type") in ("check", "sample", "summary") and r.get("experiment") == "remote-stress":
        remote.update(r)
    if r.get("type") == "stress" and r.get("experiment") == "deferred-split":
        ds = r
    if r.get("type") == "stress" and r.get("experiment") == "uprobe-speculation":
        up = r
bad = 0
for n in names:
    e = ends.get(n)
    ok = e is not None and e.get("rc") == 0 and not e.get("timeout")
    bad += not ok
    print("%-5s program %s%s" % ("ok" if ok else "FAIL", n,
          ": missing" if e is None else ": rc=%s in %s s%s" % (e.get("rc"), e.get("seconds"),
          ", timed out" if e.get("timeout") else "")))
keys = ("targets", "reads_ok", "reads_target_gone", "reads_short", "reads_rss_below_stable",
        "lockdep_debug_locks", "smaps_rollup_vma_locked", "smaps_rollup_mmap_locked", "smaps_rollup_mmap_fallback",
        "smaps_rollup_mmap_drop", "smaps_rollup_vma_retry")
if summary:
    print("      smaps-stress: " + ", ".join("%s=%s" % (k, summary.get(k)) for k in keys))
rkeys = ("targets", "switch_flips", "reads_ok", "reads_target_gone", "reads_eio", "reads_short",
         "peeks", "writes_ok", "cmdline_environ_ok", "bad", "access_remote_vm_vma_locked",
         "access_remote_vm_mmap_locked", "access_remote_vm_fallback", "access_remote_vm_fallback_novma",
         "access_remote_vm_fallback_span", "access_remote_vm_fallback_pfnmap",
         "access_remote_vm_fallback_page")
if remote:
    print("      remote-stress: " + ", ".join("%s=%s" % (k, remote.get(k)) for k in rkeys))
# Lockdep must still be on after the stress: it switches itself off at its first report.
dl = summary.get("lockdep_debug_locks")
bad += dl != 1
print("%-5s lockdep still on after remote-, deferred-split-, uprobe- and smaps-stress (debug_locks=%s)" % ("ok" if dl == 1 else "FAIL", dl))
# deferred-split-stress: the shrinker must have split folios while the knob flipped.
dsk = ("knob_flips", "drop_caches", "cycles", "deferred_split_partial_unmaps",
       "deferred_split_lock_taken", "thp_deferred_split_page", "thp_split_page")
ok = ds.get("exercised") is True
bad += not ok
print("%-5s deferred-split-stress exercised the race: %s" % ("ok" if ok else "FAIL",
      ", ".join("%s=%s" % (k, ds.get(k)) for k in dsk) if ds else "no stress record"))
# uprobe-stress: both lookup paths ran while mappings, forks, the switch and the uprobe changed.
upk = ("hits", "alias_remaps", "churn_cycles", "forks", "switch_flips", "reregistrations",
       "uprobe_speculate_attempt", "uprobe_speculate_success", "uprobe_speculate_fail_begin",
       "uprobe_speculate_fail_lookup", "uprobe_speculate_fail_retry", "uprobe_mmap_locked")
ok = up.get("exercised") is True
bad += not ok
print("%-5s uprobe-stress exercised both lookup paths: %s" % ("ok" if ok else "FAIL",
      ", ".join("%s=%s" % (k, up.get(k)) for k in upk) if up else "no stress record"))
sys.exit(1 if bad else 0)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails + 1))

if [ "$SELFTESTS" = 1 ]; then
	boot selftests "mmlocks.mode=selftests mmlocks.selftests=khugepaged:anon mmlocks.timeout=1200" 1400
	splats selftests
	SRC=$("$HERE/linux-source.sh")/tools/testing/selftests/mm/khugepaged.c
	if python3 "$HERE/selftests/check.py" --source "$SRC" --run debug-defaults \
		"$OUT/selftests.jsonl" "$OUT/selftests.console.log" >"$OUT/selftests.check.log" 2>&1; then
		result ok "khugepaged selftest" "$(tail -n 1 "$OUT/selftests.check.log")"
	else
		result FAIL "khugepaged selftest" "see $OUT/selftests.check.log"
		sed 's/^/    /' "$OUT/selftests.check.log" | tail -n 20
	fi
fi

echo "$PROG: $(cat "$KDIR/kernelrelease" 2>/dev/null), wall time $(( $(date +%s) - T0 )) s," \
	"$([ $fails = 0 ] && echo "all checks passed" || echo "$fails check(s) FAILED") (logs: build/debug-check/)" |
	tee -a "$OUT/summary.txt"
[ $fails = 0 ]
