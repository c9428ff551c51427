#!/bin/bash
# `make tools-agree`: a chapter's program and a standard tool in the same
# run, for chapters 1, 2 and 7, and the tools' cost for chapter 8
# (labs/kernel/tools/agree in the guest,
# labs/kernel/tools/agree.py on the host). One boot per case, the guest
# tools appended to the initramfs (build/tools.cpio.gz).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/tools-agree.sh

usage() {
	cat <<EOF
usage: $PROG [--only CASE[,CASE]] [--quick] [--no-build] [--timeout SECONDS] [--help]

Boots the lab kernel once per case with the guest tools and compares, in
results/tools-agree-<UTC time>/ (summary.md, agree.jsonl, each boot's
agree-CASE.jsonl, console and meta), a chapter's own instrument with a
standard tool that watched the same run:
  steal  chapter 1, patched kernel: smaps_steal's writer latency against
         perf lock record (lock:contention_begin/end, mmap_lock:*)
  hold   chapter 2, patched kernel: khugepaged_hold's longest holds
         (mg_trace) against trace-cmd's mmap_lock events
  cost   chapter 8, patched kernel: smaps_steal alone and under each tool
         (perf lock record, trace-cmd record of the same events): what the
         tools cost the program they watch
  split  chapter 7, debug kernel (build/kernel-debug, LOCK_STAT):
         deferred_split's split_queue_lock count against /proc/lock_stat
         and the lock:lock_contended / contention_begin events
Sizes: labs/kernel/tools/agree --help. A run is a diagnostic unless the host
was quiet; meta.json records the load average before and after.

  --only CASES      steal, hold, cost, split (comma-separated; default all four)
  --quick           the programs' quick sizes (checks the pipeline)
  --no-build        use the kernels and images already built
  --timeout SECONDS per-boot limit in the guest (default 600; QEMU +120)
  --help            this text
Exit: 0 every comparison agreed, 1 a boot failed or a comparison disagreed,
2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

CASES=steal,hold,cost,split QUICK=0 BUILD=1 GTMO=600
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--only) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--only needs case names"; CASES=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--no-build) BUILD=0; shift ;;
	--timeout) [ $# -ge 2 ] || die_usage "--timeout needs seconds"; GTMO=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$GTMO" in ''|*[!0-9]*) die_usage "--timeout must be a number of seconds" ;; esac
for c in $(echo "$CASES" | tr , ' '); do
	case "$c" in steal|hold|split|cost) ;; *) die_usage "unknown case '$c' (steal, hold, cost, split)" ;; esac
done
need_debug=0
case ",$CASES," in *,split,*) need_debug=1 ;; esac

T0=$(date +%s)
if [ "$BUILD" = 1 ]; then
	timeout 3600 "$HERE/build.sh" || die "kernel build failed"
	if [ "$need_debug" = 1 ]; then
		timeout 3600 "$HERE/build.sh" --debug --out "$TOP/build/kernel-debug" ||
			die "debug kernel build failed (make kernel-debug)"
	fi
	"$HERE/mkinitramfs.sh" || die "initramfs build failed"
fi
ts=$(date -u +%Y%m%dT%H%M%SZ)
[ "$QUICK" = 1 ] && ts=$ts-quick
RUN=$TOP/results/tools-agree-$ts
mkdir -p "$RUN" || die "cannot create $RUN"
INITRD=$RUN/.initramfs-tools.cpio.gz
"$HERE/mktools.sh" --initrd "$INITRD" || die "guest tools overlay failed (labs/kernel/mktools.sh)"
load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD0=$(load)
say "run directory ${RUN#$TOP/} (cases $CASES$([ "$QUICK" = 1 ] && echo ', --quick'); load average $LOAD0)"

fails=0
status=()
for c in $(echo "$CASES" | tr , ' '); do
	kernel=$TOP/build/kernel/bzImage
	[ "$c" = split ] && kernel=$TOP/build/kernel-debug/bzImage
	[ -f "$kernel" ] || { say "$c: $kernel missing"; fails=$((fails + 1)); status+=("\"$c\":\"no kernel\""); continue; }
	s0=$(date +%s)
	l0=$(load)
	flock -w 3600 /tmp/mmlocks-qemu.lock "$HERE/run-qemu.sh" --kernel "$kernel" --initrd "$INITRD" \
		--timeout $((GTMO + 120)) \
		--append "mmlocks.mode=run mmlocks.run=agree-$c mmlocks.quick=$QUICK mmlocks.timeout=$GTMO" \
		--results "$RUN/agree-$c.jsonl" --console-log "$RUN/console-agree-$c.log" \
		>"$RUN/.runner-$c.log" 2>&1
	rc=$?
	say "$c: boot rc=$rc, $(( $(date +%s) - s0 )) s (load average $l0 -> $(load))"
	[ $rc = 0 ] || { fails=$((fails + 1)); tail -n 5 "$RUN/.runner-$c.log" >&2; }
	status+=("\"$c\":{\"rc\":$rc,\"seconds\":$(( $(date +%s) - s0 )),\"load_before\":\"$l0\",\"load_after\":\"$(load)\"}")
done
python3 - "$RUN/meta.json" "$ts" "$LOAD0" "$(load)" "$QUICK" "$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)" \
	"$(IFS=,; echo "${status[*]}")" <<'EOF'
import json, sys
meta, run, l0, l1, quick, commit, st = sys.argv[1:]
d = {"run": "tools-agree-" + run, "quick": quick == "1", "commit": commit,
     "host_load": "load average %s before, %s after" % (l0, l1),
     "note": "diagnostic unless the host was quiet",
     "cases": json.loads("{" + st + "}")}
json.dump(d, open(meta, "w"), indent=1)
EOF
python3 "$HERE/tools/agree.py" "$RUN"
arc=$?
rm -f "$INITRD"
say "wall time $(( $(date +%s) - T0 )) s; ${RUN#$TOP/}/summary.md"
[ $fails = 0 ] && [ $arc = 0 ]
