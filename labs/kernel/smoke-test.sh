#!/bin/bash
# Smoke test of the guest (part of `make test`): boot the mmlocks kernel in
# mode=smoke and check on the host that it is 6.12.y, that every knob, lock
# event counter and mmap_lock trace event exists, and that every /labs
# program runs --help and --quick and prints only JSON objects. With the
# guest tools (--tools or TOOLS=1: build/tools.cpio.gz appended) the same
# boot also runs /labs/tools_smoke: perf and trace-cmd on a known mmap_lock
# contention.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/smoke-test.sh

usage() {
	cat <<EOF
usage: $PROG [--no-build] [--tools] [--timeout SECONDS] [--help]

Builds the kernel and initramfs if needed, boots once with mmlocks.mode=smoke
and prints one line per check (ok/FAIL). Logs stay in build/smoke/.

  --no-build          do not call build.sh / mkinitramfs.sh
  --tools             append the guest tools (labs/kernel/mktools.sh:
                      perf, trace-cmd) and check them with /labs/tools_smoke
                      in the same boot (also TOOLS=1)
  --timeout SECONDS   QEMU limit (default: 120 + 75 per guest program)
  --help              this text
Exit status: 0 all checks pass, 1 a check failed, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

BUILD=1 TMO=
TOOLS=${TOOLS:-0}
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--no-build) BUILD=0; shift ;;
	--tools) TOOLS=1; shift ;;
	--timeout) [ $# -ge 2 ] || die_usage "--timeout needs seconds"; TMO=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$TMO" in '') ;; *[!0-9]*|0) die_usage "--timeout must be a positive number, got '$TMO'" ;; esac

T0=$(date +%s)
if [ "$BUILD" = 1 ]; then
	timeout 3600 "$HERE/build.sh" || die "kernel build failed (run labs/kernel/build.sh)"
	"$HERE/mkinitramfs.sh" || die "initramfs build failed"
fi
# Guest programs the initramfs has (the names the guest must report).
mapfile -t PROGS < <(for f in "$TOP"/labs/*/guest/*.c; do
	[ -f "$f" ] && [ "$(dirname "$f")" != "$HERE/guest" ] && basename "$f" .c; done | sort)
case "$TOOLS" in 0|1) ;; *) die_usage "TOOLS must be 0 or 1, got '$TOOLS'" ;; esac
[ -n "$TMO" ] || TMO=$((120 + 75 * (${#PROGS[@]} + TOOLS)))

OUT=$TOP/build/smoke
mkdir -p "$OUT"
INITRD=$TOP/build/initramfs.cpio.gz
if [ "$TOOLS" = 1 ]; then
	# The base image stays as it is; the tools are one more archive.
	INITRD=$OUT/initramfs-tools.cpio.gz
	"$HERE/mktools.sh" --initrd "$INITRD" || die "guest tools overlay failed (labs/kernel/mktools.sh)"
fi
echo "$PROG: booting mode=smoke (${#PROGS[@]} guest program(s)$([ "$TOOLS" = 1 ] && echo ' + the guest tools'), timeout ${TMO}s)"
"$HERE/run-qemu.sh" --initrd "$INITRD" --timeout "$TMO" --append "mmlocks.mode=smoke mmlocks.timeout=60" \
	--results "$OUT/results.jsonl" --console-log "$OUT/console.log"
qrc=$?

python3 - "$OUT/results.jsonl" "$OUT/console.log" "$qrc" "$TOOLS" "${PROGS[@]}" <<'EOF'
import json, re, sys
res, con, qrc, tools, progs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5:]
KNOBS = ["rwsem_steal_policy", "khugepaged_per_slot_cursor", "khugepaged_skip_batch",
         "smaps_rollup_vma_lock", "access_remote_vm_vma_lock",
         "deferred_split_early_check", "uprobe_speculate"]
LOCKEV = ["rwsem_rlock_steal", "rwsem_rlock", ".reset_counts"]
TRACE = ["mmap_lock_start_locking", "mmap_lock_acquire_returned", "mmap_lock_released"]
fails = 0
def check(ok, what, detail=""):
    global fails
    print("%-5s %s%s" % ("ok" if ok else "FAIL", what, ": " + detail if detail else ""))
    fails += 0 if ok else 1

lines = open(res, "rb").read().decode("utf-8", "replace").replace("\r", "").split("\n")
smoke = {}
tool_checks = []   # /labs/tools_smoke's records
runs = {}          # program -> {"lines": [...], "rc": N}
cur = None
for raw in lines:
    line = raw.strip("\0").strip()
    if not line:
        continue
    try:
        rec = json.loads(line)
    except ValueError:
        rec = None
    if cur is not None:
        if isinstance(rec, dict) and rec.get("type") == "end" and rec.get("program") == cur:
            runs[cur]["rc"] = rec.get("rc")
            runs[cur]["seconds"] = rec.get("seconds")
            cur = None
        else:
            runs[cur]["lines"].append(line)
            if isinstance(rec, dict) and rec.get("type") == "tool_check":
                tool_checks.append(rec)
        continue
    if not isinstance(rec, dict):
        continue
    t = rec.get("type")
    if t == "begin" and "program" in rec:
        cur = rec["program"]
        runs[cur] = {"lines": [], "rc": None, "args": rec.get("args") or ""}
    elif t == "smoke":
        c = rec.get("check")
        key = c if c in ("release", "done") else (c, rec.get("name") or rec.get("program"))
        smoke[key] = rec

check(qrc == 0, "guest booted and powered off", "" if qrc == 0 else "run-qemu.sh exit %d" % qrc)
rel = smoke.get("release", {}).get("value")
check(bool(rel) and re.match(r"6\.12\.\d+", rel) is not None, "uname -r is 6.12.y", str(rel))
for k in KNOBS:
    r = smoke.get(("knob", k), {})
    check(r.get("exists") is True and r.get("readable") is True,
          "knob /sys/kernel/debug/mmlocks/" + k,
          "value %s" % r.get("value") if r.get("exists") else "missing")
for e in LOCKEV:
    r = smoke.get(("lock_event", e), {})
    check(r.get("exists") is True, "lock event counter " + e)
for e in TRACE:
    r = smoke.get(("trace_event", e), {})
    check(r.get("exists") is True, "trace event mmap_lock/" + e)
for p in progs:
    h = smoke.get(("help", p))
    check(h is not None and h.get("rc") == 0 and h.get("lines", 0) > 0,
          "/labs/%s --help" % p,
          "not run" if h is None else "rc %s, %s line(s)" % (h.get("rc"), h.get("lines")))
    r = runs.get(p)
    if r is None:
        check(False, "/labs/%s --quick" % p, "not run")
        continue
    bad = []
    for l in r["lines"]:
        try:
            if not isinstance(json.loads(l), dict):
                bad.append(l)
        except ValueError:
            bad.append(l)
    detail = "rc %s, %d line(s), %s s" % (r["rc"], len(r["lines"]), r.get("seconds"))
    if bad:
        detail += ", %d not a JSON object, first: %.80s" % (len(bad), bad[0])
    check(r["rc"] == 0 and len(r["lines"]) > 0 and not bad,
          ("/labs/%s --quick %s" % (p, r["args"])).rstrip(), detail)
if tools:
    # /labs/tools_smoke (the tools overlay): --help and --quick like every
    # program, and each of its checks.
    for p in ["tools_smoke"]:
        h = smoke.get(("help", p))
        check(h is not None and h.get("rc") == 0 and h.get("lines", 0) > 0,
              "/labs/%s --help" % p, "not run (no tools overlay?)" if h is None else "rc %s" % h.get("rc"))
        r = runs.get(p)
        check(r is not None and r["rc"] == 0, "/labs/%s --quick" % p,
              "not run" if r is None else "rc %s, %s s" % (r["rc"], r.get("seconds")))
    need = [("perf", "version"), ("trace-cmd", "version"),
            ("kernel", "tracepoint lock/contention_begin"), ("kernel", "tracepoint lock/contention_end"),
            ("perf", "lock record + contention"), ("trace-cmd", "record + report")]
    seen = {(c.get("tool"), c.get("check")): c for c in tool_checks}
    for k in need + [k for k in seen if k not in need]:
        c = seen.get(k)
        check(c is not None and c.get("ok") is True, "guest tool %s: %s" % k,
              "not reported" if c is None else str(c.get("detail", ""))[:110])
check("done" in smoke, "guest finished the smoke checks")
try:
    text = open(con, errors="replace").read()
except OSError:
    text = ""
m = re.search(r"^.*(Oops|BUG:|WARNING:|general protection fault|Kernel panic|rcu: .*detected stall).*$", text, re.M)
check(m is None, "no oops, BUG, WARNING, RCU stall or panic on the console",
      m.group(0).strip()[:100] if m else "")
print("%d check(s) failed" % fails if fails else "all checks passed")
sys.exit(1 if fails else 0)
EOF
rc=$?
echo "$PROG: wall time $(( $(date +%s) - T0 )) s (logs: build/smoke/)"
exit $rc
