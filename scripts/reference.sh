#!/usr/bin/env bash
# Copy a `make reproduce` run into reference/<experiment>/<run>/ so the book
# can quote it (CONTRIBUTING.md, "Measured numbers"). `make reference` calls it.
set -uo pipefail
PROG=scripts/reference.sh
TOP=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<EOF
usage: $PROG [--only NAME[,NAME...]] [--label TEXT] [--load TEXT] [--note TEXT]
                       [--keep-failed] RUNDIR

Copies each experiment of RUNDIR (a results/<UTC time>/ directory written by
make reproduce) into reference/<experiment>/<run>/:
  <experiment>.jsonl  <experiment>.md  <experiment>.meta.json  meta.json
  <experiment>.svg (if any)  console-<experiment>.log (if under 128 KiB)
  README.md           machine, kernel release, QEMU, accelerator, guest size,
                      date, commit, status, and the texts given below
An existing reference/<experiment>/<run>/ is never overwritten.

  --only NAMES    copy only these experiments (comma-separated)
  --label TEXT    a short name for the run in tables ("quiet host")
  --load TEXT     the host's load during the run (uptime before and after)
  --note TEXT     a sentence for the README (repeatable)
  --keep-failed   also copy experiments that crashed or timed out (the book
                  refuses to quote them; the README says so)
  --help          this text

A make tools-agree run (results/tools-agree-<UTC time>/) goes to
reference/tools-agree/<UTC time>/ (scripts/reference-agree.py --help);
--load defaults to its meta.json's load average, --only does not apply.

Quick runs (--quick) are refused: their numbers are not measurements.
Exit status: 0 copied, 1 nothing copied or a copy failed, 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

ONLY= LABEL= LOAD= KEEP=0 RUNDIR= NOTES=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) usage; exit 0 ;;
	--only) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--only needs experiment names"; ONLY="$ONLY,$2"; shift 2 ;;
	--label) [ $# -ge 2 ] || die_usage "--label needs a text"; LABEL=$2; shift 2 ;;
	--load) [ $# -ge 2 ] || die_usage "--load needs a text"; LOAD=$2; shift 2 ;;
	--note) [ $# -ge 2 ] || die_usage "--note needs a text"; NOTES+=("$2"); shift 2 ;;
	--keep-failed) KEEP=1; shift ;;
	-*) die_usage "unknown option '$1'" ;;
	*) [ -z "$RUNDIR" ] || die_usage "only one RUNDIR, got '$RUNDIR' and '$1'"; RUNDIR=$1; shift ;;
	esac
done
[ -n "$RUNDIR" ] || die_usage "need a RUNDIR (e.g. RUN=results/20261130T120000Z)"
[ -d "$RUNDIR" ] || die_usage "'$RUNDIR' is not a directory"
RUNDIR=$(cd "$RUNDIR" && pwd -P)
if [ -f "$RUNDIR/agree.jsonl" ] && grep -q '"cases"' "$RUNDIR/meta.json" 2>/dev/null; then
	[ -z "$ONLY" ] || die_usage "--only does not apply to a tools-agree run"
	[ "$KEEP" = 0 ] || die_usage "--keep-failed does not apply to a tools-agree run"
	args=()
	[ -z "$LABEL" ] || args+=(--label "$LABEL")
	[ -z "$LOAD" ] || args+=(--load "$LOAD")
	for n in ${NOTES[@]+"${NOTES[@]}"}; do args+=(--note "$n"); done
	exec python3 "$TOP/scripts/reference-agree.py" ${args[@]+"${args[@]}"} "$RUNDIR"
fi
[ -f "$RUNDIR/meta.json" ] || die_usage "'$RUNDIR' has no meta.json: not a make reproduce run"
for t in "$LABEL" "$LOAD" ${NOTES[@]+"${NOTES[@]}"}; do
	case "$t" in *$'\n'*) die_usage "--label, --load and --note take one line each" ;; esac
done

commit=$(git -C "$TOP" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git -C "$TOP" diff --quiet HEAD -- labs code 2>/dev/null || commit="$commit (with uncommitted changes under labs/ or code/)"

python3 - "$TOP" "$RUNDIR" "$ONLY" "$LABEL" "$LOAD" "$KEEP" "$commit" ${NOTES[@]+"${NOTES[@]}"} <<'EOF'
import json, os, re, shutil, sys, tempfile
top, rundir, only, label, load, keep, commit = sys.argv[1:8]
notes = sys.argv[8:]
prog = "scripts/reference.sh"
run = os.path.basename(rundir)
meta = json.load(open(os.path.join(rundir, "meta.json")))
if meta.get("quick") or run.endswith("-quick"):
    sys.stderr.write("%s: error: %s is a --quick run: its numbers are not measurements\n" % (prog, run))
    sys.exit(1)
exps = {e["name"]: e for e in meta.get("experiments", []) if isinstance(e, dict) and "name" in e}
want = [n for n in only.split(",") if n]
for n in want:
    if n not in exps:
        sys.stderr.write("%s: error: experiment '%s' is not in %s (have: %s)\n" % (prog, n, run, ", ".join(exps)))
        sys.exit(2)
copied, rc = 0, 0
for name, e in exps.items():
    if want and name not in want:
        continue
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", name):
        sys.stderr.write("%s: skipping odd experiment name '%s'\n" % (prog, name)); rc = 1; continue
    if not e.get("ok") and keep != "1":
        print("%s: %s did not complete in %s (status %s): not copied (--keep-failed copies it)"
              % (prog, name, run, e.get("status")))
        rc = 1
        continue
    dest = os.path.join(top, "reference", name, run)
    if os.path.exists(dest):
        print("%s: reference/%s/%s exists: left as it is" % (prog, name, run))
        continue
    src = lambda f: os.path.join(rundir, f)
    if not os.path.exists(src(name + ".jsonl")):
        sys.stderr.write("%s: error: %s has no %s.jsonl\n" % (prog, run, name)); rc = 1; continue
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-" + run + "-", dir=os.path.dirname(dest))
    files = []
    for f in (name + ".jsonl", name + ".meta.json", "meta.json", name + ".svg"):
        if os.path.exists(src(f)):
            shutil.copyfile(src(f), os.path.join(tmp, f)); files.append(f)
    skipped_log = None
    log = "console-%s.log" % name
    if os.path.exists(src(log)):
        size = os.path.getsize(src(log))
        if size <= 128 * 1024:
            shutil.copyfile(src(log), os.path.join(tmp, log)); files.append(log)
        else:
            skipped_log = "%s (%d KiB) not copied" % (log, size // 1024)
    md = open(src(name + ".md")).read() if os.path.exists(src(name + ".md")) else ""
    md = md.replace("results/latest/%s.svg" % name, "reference/%s/%s/%s.svg" % (name, run, name))
    with open(os.path.join(tmp, name + ".md"), "w") as f:
        f.write(md)
    files.append(name + ".md")
    m = {}
    try:
        m = json.load(open(src(name + ".meta.json")))
    except (OSError, ValueError):
        pass
    g = lambda k, d="?": m.get(k, meta.get(k, d))
    host = g("host", {}) or {}
    ncpu = host.get("cpus") or host.get("nproc")
    hostdesc = ", ".join(str(x) for x in (host.get("cpu"), ncpu and "%s CPUs" % ncpu,
                                          host.get("kernel") and "Linux " + str(host["kernel"])) if x) or "?"
    accel = str(g("accel"))
    lines = ["# Reference run %s: %s" % (run, name), ""]
    lines.append("A `make reproduce` run copied by `make reference`; the book quotes it by "
                 "experiment, run and field.")
    lines.append("")
    kv = [("Experiment", "`%s`" % name), ("Run", run)]
    if label:
        kv.append(("Label", label))
    kv += [("Date", str(g("started"))), ("Commit", commit + " (at copy time)"),
           ("Machine", hostdesc), ("Kernel release", str(g("kernel_release"))),
           ("QEMU", str(g("qemu"))),
           ("Accelerator", accel.upper() + (", -cpu " + str(g("cpu")) if g("cpu", None) else "")),
           ("Guest", "%s vCPUs, %s MiB" % (g("vcpus"), g("mem_mib")))]
    if load:
        kv.append(("Host load", load))
    kv.append(("Status", "%s (wall %s s%s)" % ("ok" if e.get("ok") else "FAILED: " + str(e.get("status")),
                                               e.get("wall_seconds", "?"),
                                               ", timed out in the guest" if e.get("guest_timeout") else "")))
    kv.append(("Files", ", ".join("`%s`" % f for f in files) + ("; " + skipped_log if skipped_log else "")))
    lines += ["- %s: %s" % (k, v) for k, v in kv]
    if notes:
        lines += [""] + notes
    with open(os.path.join(tmp, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o755)
    os.rename(tmp, dest)
    print("%s: reference/%s/%s (%s)" % (prog, name, run, ", ".join(files)))
    copied += 1
if copied == 0 and rc == 0:
    print("%s: nothing new to copy" % prog)
sys.exit(rc)
EOF
