#!/usr/bin/env bash
# Run the rwsem model's benchmark (bench_rwsem) in the settings lab 01's
# handout asks about, and commit-ready the result as a reference run:
# reference/rwsem-bench/<UTC time>/ (same layout as `make reference`), so the
# handout quotes it by reference instead of typing numbers.
set -uo pipefail
PROG=scripts/reference-bench.sh
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"

usage() {
	cat <<EOF
usage: $PROG [--label TEXT] [--note TEXT] [--runs N] [--duration-ms N] [--out DIR]

Builds bench_rwsem with lab 01's solution (labs/01-rwsem-steal/src) and with
its step-1 skeleton (6.12's guard removed), runs it as the handout's P1-P6
do, one configuration after another, each under a 120 s timeout (within a
configuration bench_rwsem repeats the three policies, interleaved):
  default       solution, default settings (drop only when contended)
  always        solution, --drop always (drop every K=64 items)
  timeout-1ms   solution, --timeout-us 1000
  timeout-16ms  solution, --timeout-us 16000
  readers-2     solution, --readers 2
  noguard-2     step-1 skeleton, --readers 2
and writes reference/rwsem-bench/<UTC time>/ (or DIR/<UTC time>/):
rwsem-bench.jsonl (one "sample" record per configuration, policy and run:
config, policy, run, and bench_rwsem's columns: writes, p50_us, p99_us,
max_us, rlock_steal, rlock_nosteal, wlock_handoff, sleep_writer,
retakes_per_s; one "uncontended" record per configuration: rwsem_ns and
pthread_ns, the medians over the runs, with their _min and _max),
rwsem-bench.md, meta.json, README.md (machine, load, commit, commands).
A chapter quoting a run with several samples per configuration and policy
picks one (sel=...,run=N) or aggregates them (agg=median or agg=range).
(Runs written before bench_rwsem repeated its policies have one sample per
configuration and policy, without a run field.)

  --label TEXT     a short name for the run in tables
  --note TEXT      a sentence for the README
  --runs N         bench_rwsem --runs: repetitions, 1..21 (default 5)
  --duration-ms N  bench_rwsem --duration-ms: one policy in one run
                   (default 200, the benchmark's default)
  --out DIR        instead of reference/rwsem-bench
  --help           this text
Exit status: 0 written, 1 a build or run failed (nothing written), 2 usage.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }

LABEL= NOTE= DUR=200 RUNS=5 OUT=reference/rwsem-bench
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) usage; exit 0 ;;
	--label) [ $# -ge 2 ] || die_usage "--label needs a text"; LABEL=$2; shift 2 ;;
	--note) [ $# -ge 2 ] || die_usage "--note needs a text"; NOTE=$2; shift 2 ;;
	--duration-ms) [ $# -ge 2 ] || die_usage "--duration-ms needs a number"; DUR=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || die_usage "--runs needs a number"; RUNS=$2; shift 2 ;;
	--out) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--out needs a directory"; OUT=$2; shift 2 ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
case "$DUR" in ''|*[!0-9]*) die_usage "--duration-ms must be a number, got '$DUR'" ;; esac
{ [ "$DUR" -ge 50 ] && [ "$DUR" -le 60000 ]; } || die_usage "--duration-ms must be 50..60000, got $DUR"
case "$RUNS" in ''|*[!0-9]*) die_usage "--runs must be a number, got '$RUNS'" ;; esac
{ [ "$RUNS" -ge 1 ] && [ "$RUNS" -le 21 ]; } || die_usage "--runs must be 1..21, got $RUNS"

tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
lab=labs/01-rwsem-steal
labs/tools/mkskel --todo 1 "$lab/src" "$tmp/skel" >/dev/null || die "mkskel failed"
build() { # build NAME SRC
	make --no-print-directory -s -C "$lab" bench SRC="$2" BUILD="$tmp/$1" >/dev/null 2>"$tmp/$1.err" ||
		{ [ -x "$tmp/$1/bench_rwsem" ] || { cat "$tmp/$1.err" >&2; die "building bench_rwsem ($1) failed"; }; }
}
build solution src
build noguard "$tmp/skel"

ts=$(date -u +%Y%m%dT%H%M%SZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$tmp/out.txt"
run() { # run CONFIG BUILD ARGS...
	local cfg=$1 b=$2; shift 2
	echo "$PROG: $cfg: bench_rwsem $* --runs $RUNS --duration-ms $DUR" >&2
	{ echo "@config $cfg $b $*"; timeout 120 "$tmp/$b/bench_rwsem" "$@" --runs "$RUNS" --duration-ms "$DUR"; } >>"$tmp/out.txt" ||
		die "bench_rwsem $* failed or timed out"
}
run default solution
run always solution --drop always
run timeout-1ms solution --timeout-us 1000
run timeout-16ms solution --timeout-us 16000
run readers-2 solution --readers 2
run noguard-2 noguard --readers 2
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
python3 - "$tmp/out.txt" "$OUT" "$ts" "$LABEL" "$NOTE" "$load_before" "$load_after" "$commit" "$DUR" "$RUNS" <<'EOF'
import json, os, platform, re, sys, tempfile
src, out, ts, label, note, lb, la, commit, dur, runs = sys.argv[1:11]
recs = [{"type": "begin", "experiment": "rwsem-bench"}]
cfg = None
cols = None
for line in open(src):
    line = line.rstrip("\n")
    if line.startswith("policy "):  # the per-run table's header names the columns
        cols = [c.replace("retakes/s", "retakes_per_s") for c in line.split()[1:]]
        continue
    if line.startswith("summary "):  # medians of the rows above: recomputable, not kept
        cols = None
        continue
    if line.startswith("@config "):
        parts = line.split()
        cfg = {"config": parts[1], "build": "solution" if parts[2] == "solution" else "step-1 skeleton (no guard)",
               "args": " ".join(parts[3:])}
        cols = None
        continue
    m = re.match(r"^(STEAL|NOSTEAL|WRITER_FIRST)\s+(.*)$", line)
    if m and cfg and cols is not None:
        vals = m.group(2).split()
        if cols is None or len(vals) != len(cols):
            sys.exit("reference-bench: unexpected bench line: " + line)
        r = {"type": "sample", "experiment": "rwsem-bench"}
        r.update(cfg)
        r["policy"] = m.group(1)
        for k, v in zip(cols, vals):
            r[k] = None if v == "-" else float(v) if "." in v else int(v)
        recs.append(r)
    m = re.match(r"^(rwsem down_read\+up_read|pthread_rwlock rdlock\+unlock)\s+([\d.]+) \[([\d.]+)-([\d.]+)\] ns/op", line)
    if m and cfg:
        key = "rwsem_ns" if m.group(1).startswith("rwsem") else "pthread_ns"
        u = next((x for x in recs if x["type"] == "uncontended" and x["config"] == cfg["config"]), None)
        if u is None:
            u = {"type": "uncontended", "experiment": "rwsem-bench", "config": cfg["config"]}
            recs.append(u)
        u[key], u[key + "_min"], u[key + "_max"] = (float(m.group(i)) for i in (2, 3, 4))
want = 18 * int(runs)
got = sum(1 for r in recs if r["type"] == "sample")
if got != want or sum(1 for r in recs if r["type"] == "uncontended") != 6:
    sys.exit("reference-bench: expected %d policy rows and 6 uncontended results, got %d rows" % (want, got))
recs.append({"type": "end", "experiment": "rwsem-bench", "rc": 0, "timeout": False})
cpu = "?"
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip(); break
ncpu = os.cpu_count()
meta = {"run": ts, "started": ts, "host": {"cpu": cpu, "nproc": ncpu},
        "experiments": [{"name": "rwsem-bench", "status": "ok", "ok": True, "guest_rc": 0}]}
os.makedirs(out, exist_ok=True)
tmp = tempfile.mkdtemp(prefix=".tmp-", dir=out)
with open(os.path.join(tmp, "rwsem-bench.jsonl"), "w") as f:
    for r in recs:
        f.write(json.dumps(r) + "\n")
with open(os.path.join(tmp, "meta.json"), "w") as f:
    json.dump(meta, f, indent=1); f.write("\n")
md = "| config | policy | run | writes | p50 µs | p99 µs | max µs | steals | declined steals | handoffs | writer sleeps | retakes/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
for r in recs:
    if r["type"] == "sample":
        md += "| %s |\n" % " | ".join(str(r.get(k)) for k in (
            "config", "policy", "run", "writes", "p50_us", "p99_us", "max_us", "rlock_steal",
            "rlock_nosteal", "wlock_handoff", "sleep_writer", "retakes_per_s"))
open(os.path.join(tmp, "rwsem-bench.md"), "w").write(md)
kv = [("Experiment", "`rwsem-bench` (the model's benchmark on the host, not the guest)"), ("Run", ts)]
if label:
    kv.append(("Label", label))
kv += [("Date", ts), ("Commit", commit), ("Machine", "%s, %s CPUs (%s)" % (cpu, ncpu, platform.platform())),
       ("Host load", "%s before, %s after (1/5/15-minute load averages)" % (lb, la)),
       ("Settings", "%s runs of %s ms per policy, the policies interleaved; readers pinned apart from the writer (default)" % (runs, dur)),
       ("Status", "ok"),
       ("Files", "`rwsem-bench.jsonl`, `rwsem-bench.md`, `meta.json`")]
text = "# Reference run %s: rwsem-bench\n\nWritten by `scripts/reference-bench.sh`: `bench_rwsem` of `code/rwsem` built with lab 01's solution and with its step-1 skeleton, in the configurations of the lab's handout.\n\n" % ts
text += "\n".join("- %s: %s" % (k, v) for k, v in kv) + "\n"
if note:
    text += "\n" + note + "\n"
open(os.path.join(tmp, "README.md"), "w").write(text)
os.chmod(tmp, 0o755)
os.rename(tmp, os.path.join(out, ts))
print("reference-bench: %s/%s" % (out, ts))
EOF
