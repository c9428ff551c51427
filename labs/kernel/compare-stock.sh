#!/bin/bash
# make compare-stock: does our patch series cost the fault paths anything?
# Boot the stock 6.12 kernel (same config, no patches) and the patched one
# alternately, run fault_scale --no-switch in each boot, and compare
# patched/stock per pattern against +-5 %.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/compare-stock.sh

usage() {
	cat <<EOF
usage: $PROG [--pairs N] [--reps R] [--samples S] [--sample-ms MS] [--warmup W]
                        [--no-build] [--summarize RUNDIR] [--help]

Builds the stock kernel (labs/kernel/build.sh --no-patches: the same config,
no patches, into build/kernel-stock/) and the patched one (build/kernel/),
the initramfs, and an overlay whose one experiment is
  compare-stock  /labs/fault_scale --no-switch --reps R --samples S ...
Then boots stock and patched alternately, N pairs (stock, patched, stock,
patched, ...: ABAB for N = 2), each boot under a timeout and serialised
with other QEMU runs (flock /tmp/mmlocks-qemu.lock; the builds take
/tmp/mmlocks-kernel.lock). In each boot fault_scale runs its four patterns
(page_fault1/2/3, malloc2; one pinned worker per vCPU, will-it-scale's
method) R times; a boot's figure per pattern is the median of its R cells.
Per pattern: patched/stock of the medians over the boots, each kernel's
spread over its boots, the ratio within each pair, and a verdict:
  within +-5 %    every pair's ratio is within 0.95..1.05
  outside +-5 %   every pair's ratio is on the same side, beyond 5 %
  not resolved    the pairs disagree: boot-to-boot noise spans the goal
Writes results/compare-stock-<UTC time>/:
  boot-K-stock.jsonl, boot-K-patched.jsonl   the guest's JSON lines
  console-K-KIND.log, boot-K-KIND.meta.json  console, run-qemu.sh's meta
  compare.jsonl   one "boot" line per boot and pattern, one "compare" line
                  per pattern, one "run" line (kernels, host load)
  summary.md      the table and the verdicts
Host load (/proc/loadavg) is recorded before and after every boot: the
figures mean little on a host shared with other work.

  --pairs N        stock/patched boot pairs (2..10, default 3)
  --reps R         fault_scale --reps per boot (1..20, default 3)
  --samples S      kept periods per cell (1..60, default 3)
  --sample-ms MS   one period, ms (100..10000, default 1000)
  --warmup W       warm-up periods dropped per cell (0..30, default 1)
  --no-build       use build/kernel-stock, build/kernel and build/initramfs.cpio.gz
  --summarize DIR  only (re)write DIR's compare.jsonl and summary.md
  --help           this text

Environment: VCPUS (default 2), MEM (default 2G), as for run-qemu.sh.
Exit status: 0 every boot ran and reported (any verdict is a result);
1 a build or a boot failed; 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }
num() { # num NAME VALUE MIN MAX
	case "$2" in ''|*[!0-9]*) die_usage "$1 must be a whole number, got '$2'" ;; esac
	{ [ "$2" -ge "$3" ] && [ "$2" -le "$4" ]; } || die_usage "$1 must be $3..$4, got $2"
}

PAIRS=3 REPS=3 SAMPLES=3 SMS=1000 WARMUP=1 BUILD=1 ONLY_SUM=
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--pairs|--reps|--samples|--sample-ms|--warmup|--summarize)
		[ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
		case "$1" in
		--pairs) PAIRS=$2 ;; --reps) REPS=$2 ;; --samples) SAMPLES=$2 ;;
		--sample-ms) SMS=$2 ;; --warmup) WARMUP=$2 ;; --summarize) ONLY_SUM=$2 ;;
		esac
		shift 2 ;;
	--no-build) BUILD=0; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
num --pairs "$PAIRS" 2 10
num --reps "$REPS" 1 20
num --samples "$SAMPLES" 1 60
num --sample-ms "$SMS" 100 10000
num --warmup "$WARMUP" 0 30

# ---- the summary (also alone: --summarize) ---------------------------------------
summarize() { # summarize RUNDIR
	python3 - "$1" <<'EOF'
import glob, json, os, re, sys

run = sys.argv[1]
GOAL = 5.0

def records(path):
    out = []
    try:
        data = open(path, "rb").read().decode("utf-8", "replace")
    except OSError:
        return out
    for line in data.splitlines():
        line = line.replace("\0", "").strip()
        if "{" not in line:
            continue
        try:
            r = json.loads(line[line.index("{"):])
        except ValueError:
            continue
        if isinstance(r, dict):
            out.append(r)
    return out

def median(v):
    v = sorted(v)
    n = len(v)
    return None if not n else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)

def spread(v):
    m = median(v)
    return (max(v) - min(v)) / m * 100 if v and m else None

loads = {}
try:
    for line in open(os.path.join(run, "boots.txt")):
        k, kind, st, secs, before, after = line.rstrip("\n").split("\t")
        loads[int(k)] = {"status": st, "wall_seconds": int(secs), "load_before": before, "load_after": after}
except OSError:
    pass

boots, problems = [], []
for path in sorted(glob.glob(os.path.join(run, "boot-*-*.jsonl"))):
    m = re.match(r"boot-(\d+)-(stock|patched)\.jsonl$", os.path.basename(path))
    if not m:
        continue
    k, kind = int(m.group(1)), m.group(2)
    rs = records(path)
    guest = next((r for r in rs if r.get("type") == "guest"), {})
    info = next((r for r in rs if r.get("type") == "info"), {})
    end = next((r for r in rs if r.get("type") == "end"), None)
    res = {r["pattern"]: r for r in rs if r.get("type") == "result" and "pattern" in r}
    b = {"boot": k, "kernel": kind, "release": guest.get("release"),
         "mmlocks_knobs": info.get("mmlocks_knobs"), "rc": end.get("rc") if end else None,
         "results": res, **loads.get(k, {})}
    # Which kernel ran: the patched one says -mmlocks and has the knobs.
    patched = bool(b["release"] and "-mmlocks" in b["release"]) and b["mmlocks_knobs"] is True
    if (kind == "patched") != patched:
        problems.append("boot %d (%s): the guest ran %s (mmlocks knobs: %s)" % (k, kind, b["release"], b["mmlocks_knobs"]))
    if b["rc"] != 0 or not res:
        problems.append("boot %d (%s): no results (fault_scale rc %s)" % (k, kind, b["rc"]))
    boots.append(b)

pats = [p for p in ("page_fault1", "page_fault2", "page_fault3", "malloc2")
        if any(p in b["results"] for b in boots)]
lines, cmp = [], {}
for b in boots:
    for p in pats:
        r = b["results"].get(p)
        if r:
            lines.append({"type": "boot", "boot": b["boot"], "kernel": b["kernel"], "release": b["release"],
                          "pattern": p, "ops_per_s": r.get("median_ops_per_s"),
                          "cells": r.get("ops_per_s_cells"), "cell_spread_pct": r.get("spread_pct"),
                          "period_min": r.get("period_min"), "period_max": r.get("period_max"),
                          "pgfault_per_op": r.get("pgfault_per_op"), "threads": r.get("threads"),
                          "load_before": b.get("load_before"), "load_after": b.get("load_after")})
for p in pats:
    val = {kind: [(b["boot"], b["results"][p]["median_ops_per_s"]) for b in boots
                  if b["kernel"] == kind and p in b["results"] and b["results"][p].get("median_ops_per_s")]
           for kind in ("stock", "patched")}
    s = [v for _, v in val["stock"]]
    q = [v for _, v in val["patched"]]
    # Pairs in boot order: the i-th stock boot with the i-th patched boot.
    pr = [b / a for (_, a), (_, b) in zip(sorted(val["stock"]), sorted(val["patched"])) if a]
    ratio = median(q) / median(s) if s and q and median(s) else None
    if not pr:
        verdict = "no result"
    elif all(1 - GOAL / 100 - 1e-9 <= x <= 1 + GOAL / 100 + 1e-9 for x in pr):
        verdict = "within +-5 %"
    elif all(x < 1 - GOAL / 100 for x in pr) or all(x > 1 + GOAL / 100 for x in pr):
        verdict = "outside +-5 %"
    else:
        verdict = "not resolved"
    c = {"type": "compare", "pattern": p, "unit": "ops/s", "stock_boots": len(s), "patched_boots": len(q),
         "stock_median": median(s), "patched_median": median(q), "ratio": ratio,
         "change_pct": (ratio - 1) * 100 if ratio else None,
         "stock_spread_pct": spread(s), "patched_spread_pct": spread(q),
         "pair_ratios": pr, "pair_ratio_min": min(pr) if pr else None,
         "pair_ratio_max": max(pr) if pr else None, "goal": "within +-5 %", "verdict": verdict}
    cmp[p] = c
    lines.append(c)
runrec = {"type": "run", "run": os.path.basename(run),
          "stock_release": next((b["release"] for b in boots if b["kernel"] == "stock"), None),
          "patched_release": next((b["release"] for b in boots if b["kernel"] == "patched"), None),
          "boots": [{k: b.get(k) for k in ("boot", "kernel", "release", "rc", "status", "wall_seconds",
                                           "load_before", "load_after")} for b in boots],
          "problems": problems}
try:
    runrec["meta"] = json.load(open(os.path.join(run, "meta.json")))
except (OSError, ValueError):
    pass
lines.append(runrec)
with open(os.path.join(run, "compare.jsonl.tmp"), "w") as f:
    for l in lines:
        f.write(json.dumps(l, sort_keys=False) + "\n")
os.replace(os.path.join(run, "compare.jsonl.tmp"), os.path.join(run, "compare.jsonl"))

def f0(x):
    return "-" if x is None else "{:,.0f}".format(x)
def f3(x):
    return "-" if x is None else "%.3f" % x
def f1(x):
    return "-" if x is None else "%.1f %%" % x
md = ["# compare-stock: %s" % os.path.basename(run), "",
      "Stock %s against patched %s, %d boots, alternating (%s). A boot's figure is "
      "fault_scale's median over its cells; each cell is the mean of its kept periods."
      % (runrec["stock_release"], runrec["patched_release"], len(boots),
         " ".join("S" if b["kernel"] == "stock" else "P" for b in sorted(boots, key=lambda b: b["boot"]))), "",
      "| pattern | stock ops/s | patched ops/s | patched/stock | pair ratios | spread stock / patched | verdict |",
      "|---|---:|---:|---:|---|---|---|"]
for p in pats:
    c = cmp[p]
    md.append("| %s | %s | %s | %s | %s..%s | %s / %s | %s |" % (
        p, f0(c["stock_median"]), f0(c["patched_median"]), f3(c["ratio"]), f3(c["pair_ratio_min"]),
        f3(c["pair_ratio_max"]), f1(c["stock_spread_pct"]), f1(c["patched_spread_pct"]), c["verdict"]))
md += ["", "Spread: (max - min) / median of one kernel's boots. Verdict: within +-5 % when every "
       "pair's ratio is in 0.95..1.05; outside when all are beyond it on one side; otherwise not resolved.",
       "", "| boot | kernel | status | wall s | load before | load after |", "|---:|---|---|---:|---|---|"]
for b in sorted(boots, key=lambda b: b["boot"]):
    md.append("| %d | %s | %s | %s | %s | %s |" % (b["boot"], b["kernel"], b.get("status", "?"),
              b.get("wall_seconds", "?"), b.get("load_before", "?"), b.get("load_after", "?")))
if problems:
    md += ["", "Problems:"] + ["- " + x for x in problems]
open(os.path.join(run, "summary.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
sys.exit(1 if problems or not boots else 0)
EOF
}

if [ -n "$ONLY_SUM" ]; then
	[ -d "$ONLY_SUM" ] || die_usage "--summarize: '$ONLY_SUM' is not a directory"
	summarize "$ONLY_SUM"
	exit $?
fi

T0=$(date +%s)
STOCK=$TOP/build/kernel-stock PATCHED=$TOP/build/kernel
BASE_INITRD=$TOP/build/initramfs.cpio.gz
# ---- build: both kernels with the same config, and the initramfs -----------------
if [ "$BUILD" = 1 ]; then
	for kind in stock patched; do
		args=(--out "$PATCHED"); [ $kind = stock ] && args=(--no-patches --out "$STOCK")
		say "build the $kind kernel (waits for /tmp/mmlocks-kernel.lock, at most 30 min)"
		flock -w 1800 /tmp/mmlocks-kernel.lock timeout 1500 "$HERE/build.sh" "${args[@]}" ||
			die "the $kind kernel build failed (labs/kernel/build.sh ${args[*]})"
	done
	"$HERE/mkinitramfs.sh" || die "initramfs build failed (labs/kernel/mkinitramfs.sh)"
fi
for d in "$STOCK" "$PATCHED"; do
	[ -f "$d/bzImage" ] || die "$d/bzImage missing: run $PROG without --no-build"
done
grep -q -- -mmlocks "$STOCK/kernelrelease" && die "$STOCK is a patched kernel ($(cat "$STOCK/kernelrelease"))"
grep -q -- -mmlocks "$PATCHED/kernelrelease" || die "$PATCHED is not the patched kernel ($(cat "$PATCHED/kernelrelease"))"
[ -f "$BASE_INITRD" ] || die "$BASE_INITRD missing: run labs/kernel/mkinitramfs.sh"
command -v cpio >/dev/null || die "cpio missing: apt-get install cpio"

# ---- run directory, and the overlay with the one experiment (as debug-check.sh) ---
mkdir -p "$TOP/results"
RUN=$TOP/results/compare-stock-$(date -u +%Y%m%dT%H%M%SZ)
mkdir "$RUN" || die "cannot create $RUN"
OV=$RUN/.overlay
mkdir -p "$OV/etc/mmlocks"
# Per boot: 4 patterns x R cells x (W + S) periods, plus the tmpfs files.
GTMO=$(( 4 * REPS * (WARMUP + SAMPLES) * SMS / 1000 + 120 ))
FS="/labs/fault_scale --no-switch --reps $REPS --samples $SAMPLES --sample-ms $SMS --warmup $WARMUP --timeout $GTMO"
echo "compare-stock  $FS" >"$OV/etc/mmlocks/experiments"
INITRD=$RUN/.initramfs.cpio.gz
{
	cat "$BASE_INITRD"
	(cd "$OV" && find etc | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -9n)
} >"$INITRD" || die "writing $INITRD failed"
HTMO=$((GTMO + 180))   # boot and power-off around the program
python3 - "$RUN/meta.json" "$PAIRS" "$FS" "$(cat "$STOCK/kernelrelease")" "$(cat "$PATCHED/kernelrelease")" \
	"$(nproc)" "${VCPUS:-2}" <<'EOF'
import json, sys, time
path, pairs, fs, st, pa, ncpu, vcpus = sys.argv[1:]
json.dump({"pairs": int(pairs), "guest_command": fs, "stock": st, "patched": pa, "host_cpus": int(ncpu),
           "vcpus": int(vcpus), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
          open(path, "w"), indent=1)
EOF
say "run directory ${RUN#$TOP/}: $PAIRS pairs of boots (stock, patched), guest timeout ${GTMO}s, $FS"

# ---- the boots: stock, patched, stock, patched, ... --------------------------------
CHILD='' INTERRUPTED=0
trap 'INTERRUPTED=1; [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null' INT TERM HUP
fails=0 k=0
for ((i = 1; i <= PAIRS && !INTERRUPTED; i++)); do
	for kind in stock patched; do
		[ "$INTERRUPTED" = 0 ] || break
		k=$((k + 1))
		kdir=$STOCK; [ $kind = patched ] && kdir=$PATCHED
		l0=$(cut -d' ' -f1-3 /proc/loadavg) s0=$(date +%s)
		printf '%s: boot %d/%d %-8s (load %s) ' "$PROG" "$k" $((2 * PAIRS)) "$kind" "$l0"
		# One guest at a time on this machine: hold the QEMU lock for this boot
		# (waiting at most an hour for it), then run-qemu.sh's own timeout, with
		# an outer one in case the script itself hangs. The lock is taken on a
		# descriptor, not by flock(1) running the boot, so that a signal here
		# reaches run-qemu.sh, whose trap stops QEMU.
		exec 8>>/tmp/mmlocks-qemu.lock
		if ! flock -w 3600 8; then
			rc=1
		else
			timeout -k 10 $((HTMO + 30)) \
				"$HERE/run-qemu.sh" --kernel "$kdir/bzImage" --initrd "$INITRD" --timeout "$HTMO" \
				--append "mmlocks.mode=run mmlocks.run=compare-stock mmlocks.timeout=$GTMO" \
				--results "$RUN/boot-$k-$kind.jsonl" --console-log "$RUN/console-$k-$kind.log" \
				>"$RUN/.runner-$k.log" 2>&1 8>&- &
			CHILD=$!
			wait "$CHILD"; rc=$?
			while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD"; rc=$?; done
			CHILD=''
		fi
		exec 8>&-   # release the lock between boots
		secs=$(( $(date +%s) - s0 )) l1=$(cut -d' ' -f1-3 /proc/loadavg)
		st=ok
		case $rc in 0) ;; 1) st="no QEMU lock within 1 h, or run-qemu.sh error" ;; 124) st=timeout ;; 3) st=panic ;; 130) st=interrupted ;; *) st="exit $rc" ;; esac
		grc=$(sed -n 's/.*"type":"end".*"rc":\([0-9]*\).*/\1/p' "$RUN/boot-$k-$kind.jsonl" 2>/dev/null | tail -n 1)
		[ "$st" = ok ] && [ "$grc" != 0 ] && st="fault_scale exit ${grc:-missing}"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$kind" "$st" "$secs" "$l0" "$l1" >>"$RUN/boots.txt"
		echo "$st (${secs}s, load after $l1)"
		if [ "$st" != ok ]; then
			fails=$((fails + 1))
			sed 's/^/    /' "$RUN/.runner-$k.log" | tail -n 30
		fi
		rm -f "$RUN/.runner-$k.log"
	done
done
trap - INT TERM HUP
rm -rf "$OV" "$INITRD"
echo
summarize "$RUN" || fails=$((fails + 1))
say "wall time $(( $(date +%s) - T0 )) s; results in ${RUN#$TOP/}/"
[ "$INTERRUPTED" = 1 ] && exit 130
[ $fails = 0 ]
