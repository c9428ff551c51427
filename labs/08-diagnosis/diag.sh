#!/bin/bash
# Lab 08 on the host: boot the lab kernel with the guest tools and your
# probe (run), and read a run's output (show).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
K=$TOP/labs/kernel
PROG=labs/08-diagnosis/diag.sh

usage() {
	cat <<EOF
usage: $PROG run [--src DIR] [--seed N] [--out FILE] [--quick] [--no-build] [--timeout S]
       $PROG show [FILE]
       $PROG --help

run    boots the lab kernel once (QEMU, under a timeout, one guest at a time
       on the machine: /tmp/mmlocks-qemu.lock) with the guest tools and
       DIR's answer.txt and probe.sh, runs /labs/diagnose with the seed
       (answer.txt's "seed:" line, or --seed) and writes everything the
       guest printed to DIR/run.jsonl (or --out FILE), the console next to
       it (.console.log). DIR defaults to labs/08-diagnosis/src in a
       students' copy (your work), work/08-diagnosis in the instructors'
       repository (make skeletons LAB=08 DST=work). The after phase
       sets answer.txt's "switch:" (none: the after phase is the before's
       twin). About 1.5 min under TCG.
show   prints a run readably: the pids, the victim's latency per phase, the
       probe's output; unpacks the probe's files into FILE.d/
       (default FILE: DIR/run.jsonl, DIR as for run).

  --quick      short phases (checks the pipeline)
  --no-build   use the kernel, image and tools already built
  --timeout S  QEMU limit in seconds (default 400)
Exit: 0 done, 1 failed, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

[ $# -ge 1 ] || die_usage "give run or show"
cmd=$1; shift
case "$cmd" in
--help|-h) usage; exit 0 ;;
run|show) ;;
*) die_usage "unknown command '$cmd'" ;;
esac

# Where the work lives: a students' copy (labs/tools/exercises.txt, written
# by student-dist) has it in the lab's src/; in the instructors' repository
# src/ is the reference answer and its run, which a run must not replace.
DEFSRC=$TOP/work/08-diagnosis
[ -f "$TOP/labs/tools/exercises.txt" ] && DEFSRC=$HERE/src

if [ "$cmd" = show ]; then
	[ $# -le 1 ] || die_usage "show takes one FILE"
	case "${1:-}" in -*) die_usage "unknown option '$1'" ;; esac
	f=${1:-$DEFSRC/run.jsonl}
	[ -f "$f" ] || die "$f: no such run (run it first: $PROG run)"
	exec python3 - "$f" <<'EOF'
import base64, gzip, json, os, sys
f = sys.argv[1]
out = f + ".d"
os.makedirs(out, exist_ok=True)
for raw in open(f, "rb").read().decode("utf-8", "replace").replace("\r", "").split("\n"):
    raw = raw.strip("\0").strip()
    try:
        r = json.loads(raw)
    except ValueError:
        continue
    if not isinstance(r, dict):
        continue
    t = r.get("type")
    if t == "diagnosis_info":
        print("seed %s: victim pid %s, svc1 %s, svc2 %s, svc3 %s, khugepaged %s; switch %s" % (
            r.get("seed"), r.get("victim_pid"), r.get("svc1_pid"), r.get("svc2_pid"), r.get("svc3_pid"),
            r.get("khugepaged_pid"), r.get("switch")))
    elif t == "diagnosis_phase":
        print("%-6s victim: %d calls, p50 %.3f ms, p99 %.3f ms, max %.3f ms%s" % (
            r["phase"], r["victim_calls"], r["victim_p50_us"] / 1e3, r["victim_p99_us"] / 1e3,
            r["victim_max_us"] / 1e3, "  (switch %s)" % r["switch"] if r.get("switch") else ""))
    elif t == "tool" and r.get("tool") == "probe":
        print(("probe| " if r.get("stream") == "out" else "probe! ") + r.get("line", ""))
    elif t == "file" and "base64" in r:
        name = r["name"][:-3] if r["name"].endswith(".gz") else r["name"]
        data = base64.b64decode(r["base64"])
        if r["name"].endswith(".gz"):
            data = gzip.decompress(data)
        open(os.path.join(out, name), "wb").write(data)
        print("file  %s/%s (%d lines)" % (out, name, data.count(b"\n")))
    elif t == "error":
        print("ERROR %s" % r.get("msg"))
    elif t == "tool_end" and r.get("tool") == "probe":
        print("probe: exit %s after %s s" % (r.get("rc"), r.get("seconds")))
EOF
fi

SRC=$DEFSRC SEED= OUT= QUICK=0 BUILD=1 TMO=400
need() { [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--src) need "$@"; SRC=$2; shift 2 ;;
	--seed) need "$@"; SEED=$2; shift 2 ;;
	--out) need "$@"; OUT=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--no-build) BUILD=0; shift ;;
	--timeout) need "$@"; TMO=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$TMO" in *[!0-9]*) die_usage "--timeout must be seconds" ;; esac
[ -d "$SRC" ] || die "$SRC: no such folder (make skeletons LAB=08 DST=work writes work/08-diagnosis)"
SRC=$(cd "$SRC" && pwd)
[ -f "$SRC/answer.txt" ] || die "$SRC/answer.txt missing"
probe=$SRC/probe.sh
[ -f "$probe" ] || probe=$HERE/src/probe.sh
if [ -z "$SEED" ]; then
	SEED=$(sed -n 's/^[ 	]*seed:[ 	]*\([0-9][0-9]*\).*/\1/p' "$SRC/answer.txt" | head -n 1)
fi
case "$SEED" in ''|*[!0-9]*) die "no seed: put 'seed: N' in answer.txt or give --seed N" ;; esac
OUT=${OUT:-$SRC/run.jsonl}

if [ "$BUILD" = 1 ]; then
	timeout 3600 "$K/build.sh" >/dev/null || die "kernel build failed (labs/kernel/build.sh)"
	"$K/mkinitramfs.sh" || die "initramfs build failed"
fi
W=$(mktemp -d "$TOP/build/.diag.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ov/labs/diag" "$W/ov/etc/mmlocks"
echo "$SEED" >"$W/ov/labs/diag/seed"
cp "$SRC/answer.txt" "$W/ov/labs/diag/answer.txt"
cp "$probe" "$W/ov/labs/diag/probe.sh"
install -m 755 "$HERE/guest/run.sh" "$W/ov/labs/diag/run.sh"
{ cat "$K/experiments" "$K/tools/experiments"; echo "diagnosis /labs/diag/run.sh"; } >"$W/ov/etc/mmlocks/experiments"
"$K/mktools.sh" --initrd "$W/initrd.gz" --add "$W/ov" || die "guest tools overlay failed (labs/kernel/mktools.sh)"
mkdir -p "$(dirname "$OUT")"
echo "$PROG: seed $SEED, switch '$(sed -n 's/^[ 	]*switch:[ 	]*\([^ 	#]*\).*/\1/p' "$SRC/answer.txt" | head -n 1)', probe ${probe#$TOP/} -> ${OUT#$TOP/}"
flock -w 3600 /tmp/mmlocks-qemu.lock "$K/run-qemu.sh" --initrd "$W/initrd.gz" --timeout "$TMO" \
	--append "mmlocks.mode=run mmlocks.run=diagnosis mmlocks.quick=$QUICK mmlocks.timeout=$((TMO - 30))" \
	--results "$OUT" --console-log "${OUT%.jsonl}.console.log"
rc=$?
[ $rc = 0 ] || die "the guest did not finish (run-qemu.sh exit $rc; console: ${OUT%.jsonl}.console.log)"
echo "$PROG: done; read it with: $PROG show ${OUT#$TOP/}"
