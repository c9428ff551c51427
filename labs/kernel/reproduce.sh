#!/bin/bash
# `make reproduce`: build what is missing, boot the patched kernel once per
# experiment of labs/kernel/experiments, collect the JSON results into
# results/<UTC timestamp>/, summarize them, point results/latest at the run.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PROG=labs/kernel/reproduce.sh

usage() {
	cat <<EOF
usage: $PROG [--only NAME[,NAME...]] [--quick] [--timeout SECONDS] [--no-build] [--help]

Runs every experiment of labs/kernel/experiments in its own QEMU boot (so one
crash does not hide the others) and writes results/<UTC timestamp>/:
  <experiment>.jsonl        the guest's JSON lines (results port, ttyS1)
  console-<experiment>.log  the guest console (kernel messages, stderr)
  <experiment>.meta.json    guest size, accelerator, kernel release, status
  meta.json                 the whole run: environment + status per experiment
  summary.md                table: published figure, before, after, ratio,
                            goal, PASS/FAIL
  <experiment>.md           one experiment's rows, included by the book
An earlier run is never overwritten. results/latest then points at this run
(results/latest-quick for --quick runs, whose numbers are not measurements).

  --only NAMES      run only these experiments (comma-separated, repeatable)
  --quick           pass --quick to every program (a short smoke-size run)
  --timeout SECONDS per-experiment limit inside the guest (default 1800,
                    --quick: 180); QEMU is killed 120 s after it
  --no-build        do not call build.sh / mkinitramfs.sh
  --help            this text

Environment: VCPUS, MEM (see run-qemu.sh --help). An experiment with a line
"# vcpus: NAME N" in labs/kernel/experiments boots with N vCPUs whatever
VCPUS says (smaps-rollup needs 3); the vCPU count is recorded per experiment.
Exit status: 0 when every experiment ran to its end record with status 0
(a FAIL against the published goal is a result, not an error); 1 when an
experiment crashed, timed out or exited non-zero; 2 usage; 130 interrupted.
EOF
}
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

ONLY= QUICK=0 GTMO= BUILD=1
while [ $# -gt 0 ]; do
	case "$1" in
	--help|-h) usage; exit 0 ;;
	--only) [ $# -ge 2 ] && [ -n "$2" ] || die_usage "--only needs experiment names"
	        ONLY="$ONLY,$2"; shift 2 ;;
	--only=*) ONLY="$ONLY,${1#--only=}"; shift ;;
	--quick) QUICK=1; shift ;;
	--timeout) [ $# -ge 2 ] || die_usage "--timeout needs seconds"; GTMO=$2; shift 2 ;;
	--no-build) BUILD=0; shift ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
done
if [ -n "$GTMO" ]; then
	case "$GTMO" in *[!0-9]*) die_usage "--timeout must be a number of seconds, got '$GTMO'" ;; esac
	{ [ "$GTMO" -ge 10 ] && [ "$GTMO" -le 86400 ]; } || die_usage "--timeout must be 10..86400, got $GTMO"
else
	GTMO=1800; [ "$QUICK" = 1 ] && GTMO=180
fi
HTMO=$((GTMO + 120))

T0=$(date +%s)
EXPFILE=$HERE/experiments
[ -f "$EXPFILE" ] || die "$EXPFILE missing (the guest-programs part of the repository)"
mapfile -t ALL < <(awk '!/^[ \t]*(#|$)/ { print $1 }' "$EXPFILE")
[ ${#ALL[@]} -gt 0 ] || die "no experiments in $EXPFILE"
# Guest size per experiment: a comment line "# vcpus: NAME N" (/init skips
# comments) boots NAME with N vCPUs; the others get VCPUS (default 2).
DEF_VCPUS=${VCPUS:-2}
declare -A EXP_VCPUS=()
while read -r n v; do
	grep -qxF -- "$n" < <(printf '%s\n' "${ALL[@]}") || die "$EXPFILE: '# vcpus: $n $v' names no experiment"
	case "$v" in ''|*[!0-9]*) die "$EXPFILE: '# vcpus: $n $v': N must be a number of vCPUs" ;; esac
	{ [ "$v" -ge 1 ] && [ "$v" -le 64 ]; } || die "$EXPFILE: '# vcpus: $n $v': N must be 1..64"
	EXP_VCPUS[$n]=$v
done < <(awk '/^[ \t]*#[ \t]*vcpus:/ { sub(/^[ \t]*#[ \t]*vcpus:/, ""); print $1, $2 }' "$EXPFILE")
RUNLIST=()
if [ -n "$ONLY" ]; then
	for n in $(echo "$ONLY" | tr , ' '); do
		grep -qxF -- "$n" < <(printf '%s\n' "${ALL[@]}") ||
			die_usage "unknown experiment '$n' (have: ${ALL[*]})"
		grep -qxF -- "$n" < <(printf '%s\n' ${RUNLIST[@]+"${RUNLIST[@]}"}) || RUNLIST+=("$n")
	done
else
	RUNLIST=("${ALL[@]}")
fi

# ---- kernel parts: in a students' copy an experiment that measures a lab's
# kernel part waits until that part is done (labs/NN-slug/kernel/experiments
# names them; labs/kernel/kparts.py status says why); once it is, the kernel
# built below carries the student's committed work.
WAITING=()
while read -r e lab; do
	[ -n "$e" ] || continue
	why=$("$HERE/kparts.py" status | sed -n "s/^$lab: kernel part waiting: //p" | sed 's/; measured by .*//')
	say "$e: waiting for lab ${lab%%-*}'s kernel part (not run: ${why:-not done})"
	WAITING+=("$e")
done < <("$HERE/kparts.py" waiting "${RUNLIST[@]}")
if [ ${#WAITING[@]} -gt 0 ]; then
	KEEP=()
	for e in "${RUNLIST[@]}"; do
		printf '%s\n' "${WAITING[@]}" | grep -qxF -- "$e" || KEEP+=("$e")
	done
	RUNLIST=(${KEEP[@]+"${KEEP[@]}"})
	if [ ${#RUNLIST[@]} -eq 0 ]; then
		say "every experiment asked for waits for a lab's kernel part: nothing to run"
		exit 0
	fi
fi

# ---- build what is missing (both steps are incremental) -------------------
if [ "$BUILD" = 1 ]; then
	timeout 3600 "$HERE/build.sh" || die "kernel build failed (labs/kernel/build.sh)"
	"$HERE/mkinitramfs.sh" || die "initramfs build failed (labs/kernel/mkinitramfs.sh)"
fi

# ---- run directory: never overwrite an earlier run --------------------------
mkdir -p "$TOP/results"
ts=$(date -u +%Y%m%dT%H%M%SZ)
[ "$QUICK" = 1 ] && ts=$ts-quick
RUN=$TOP/results/$ts
i=1
until mkdir "$RUN" 2>/dev/null; do
	i=$((i + 1)); RUN=$TOP/results/$ts-$i
	[ $i -lt 100 ] || die "cannot create a run directory under results/"
done
say "run directory ${RUN#$TOP/} (${#RUNLIST[@]} experiment(s)$([ "$QUICK" = 1 ] && echo ', --quick'), guest timeout ${GTMO}s each)"

# ---- one boot per experiment -------------------------------------------------
INTERRUPTED=0 CHILD=
on_signal() {
	INTERRUPTED=1
	[ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null
}
trap on_signal INT TERM HUP
STATUS_FILE=$RUN/.status
: >"$STATUS_FILE"
n=0
for name in "${RUNLIST[@]}"; do
	n=$((n + 1))
	if [ "$INTERRUPTED" = 1 ]; then
		printf '%s not-run 0 0\n' "$name" >>"$STATUS_FILE"; continue
	fi
	vc=${EXP_VCPUS[$name]:-$DEF_VCPUS}
	printf '%s: [%d/%d] %-28s ' "$PROG" "$n" "${#RUNLIST[@]}" "$name ($vc vCPUs)"
	s0=$(date +%s)
	VCPUS=$vc "$HERE/run-qemu.sh" --timeout "$HTMO" \
		--append "mmlocks.mode=run mmlocks.run=$name mmlocks.quick=$QUICK mmlocks.timeout=$GTMO" \
		--results "$RUN/$name.jsonl" --console-log "$RUN/console-$name.log" \
		>"$RUN/.runner-$name.log" 2>&1 &
	CHILD=$!
	wait "$CHILD"; rc=$?
	# wait returns early when a trapped signal arrives; wait for the runner
	# to stop QEMU and exit.
	while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD"; rc=$?; done
	CHILD=
	secs=$(( $(date +%s) - s0 ))
	case $rc in
	0) st=ok ;; 124) st=timeout ;; 3) st=panic ;; 130) st=interrupted; INTERRUPTED=1 ;; *) st=qemu-error ;;
	esac
	# An oops kills the program but not the kernel: still a crash.
	if [ "$st" = ok ] && grep -qE '(Oops|BUG:|general protection fault)' "$RUN/console-$name.log"; then
		st=oops
	fi
	printf '%s %s %s %s\n' "$name" "$st" "$rc" "$secs" >>"$STATUS_FILE"
	grc=$(sed -n 's/.*"type":"end".*"rc":\([0-9]*\).*/\1/p' "$RUN/$name.jsonl" 2>/dev/null | tail -n 1)
	if [ "$st" != ok ]; then verdict=$st
	elif [ -z "$grc" ]; then verdict="no end record"
	elif [ "$grc" = 0 ]; then verdict=ok
	else verdict="program exit status $grc"
	fi
	echo "$verdict (${secs}s)"
	if [ "$st" != ok ]; then
		sed 's/^/    /' "$RUN/.runner-$name.log" | tail -n 60
	fi
	rm -f "$RUN/.runner-$name.log"
done
trap - INT TERM HUP

# ---- meta.json, summary ---------------------------------------------------------
python3 - "$RUN" "$QUICK" "$GTMO" <<'EOF'
import json, os, sys, time
run, quick, gtmo = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
exps, env = [], {}
for line in open(os.path.join(run, ".status")):
    name, st, rc, secs = line.split()
    r = {"name": name, "status": st, "qemu_rc": int(rc), "wall_seconds": int(secs)}
    # The guest's own verdict: an end record with status 0.
    end = None
    try:
        for l in open(os.path.join(run, name + ".jsonl"), errors="replace"):
            l = l.strip().strip("\0")
            if '"end"' in l:
                try:
                    d = json.loads(l)
                except ValueError:
                    continue
                if d.get("type") == "end" and d.get("experiment") == name:
                    end = d
    except OSError:
        pass
    r["guest_rc"] = end.get("rc") if end else None
    r["guest_timeout"] = bool(end and end.get("timeout"))
    r["ok"] = st == "ok" and end is not None and end.get("rc") == 0
    exps.append(r)
    mp = os.path.join(run, name + ".meta.json")
    try:
        m = json.load(open(mp))
    except (OSError, ValueError):
        m = {}
    if "vcpus" in m:
        r["vcpus"] = m["vcpus"]   # experiments may boot with different counts
    if not env and m:
        env = {k: m[k] for k in ("accel", "cpu", "vcpus", "mem_mib", "kernel_release",
                                 "qemu", "host", "started") if k in m}
meta = dict(env)
if len({e["vcpus"] for e in exps if "vcpus" in e}) > 1:
    meta.pop("vcpus", None)       # no single count: see each experiment's
meta.update({"run": os.path.basename(run), "quick": quick, "guest_timeout": gtmo,
             "experiments": exps})
meta.setdefault("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
tmp = os.path.join(run, "meta.json.tmp")
with open(tmp, "w") as f:
    json.dump(meta, f, indent=1); f.write("\n")
os.replace(tmp, os.path.join(run, "meta.json"))
bad = [e["name"] for e in exps if not e["ok"]]
open(os.path.join(run, ".bad"), "w").write(" ".join(bad))
EOF
BAD=$(cat "$RUN/.bad" 2>/dev/null); rm -f "$RUN/.bad" "$STATUS_FILE"

echo
"$HERE/summarize.py" --print "$RUN" || say "warning: summarize.py failed"

# ---- results/latest -> this run (relative, replaced atomically) ----------------
link=latest
[ "$QUICK" = 1 ] && link=latest-quick
if [ "$INTERRUPTED" = 0 ]; then
	ln -s "$(basename "$RUN")" "$TOP/results/.$link.$$"
	mv -T "$TOP/results/.$link.$$" "$TOP/results/$link"
	say "results/$link -> $(basename "$RUN")"
else
	say "interrupted: results/$link left unchanged"
fi

wall=$(( $(date +%s) - T0 ))
say "wall time $((wall / 60)) min $((wall % 60)) s; results in ${RUN#$TOP/}/"
[ "$INTERRUPTED" = 1 ] && exit 130
if [ -n "$BAD" ]; then
	say "crashed, timed out or exited non-zero: $BAD (see ${RUN#$TOP/}/console-*.log)"
	exit 1
fi
exit 0
