#!/usr/bin/env python3
"""bench-points.py: the writer's median wait per policy and drop mode in
every committed rwsem-bench reference run, for plots/model.gp.

usage: bench-points.py REFERENCE_DIR OUT

Reads REFERENCE_DIR/*/rwsem-bench.jsonl and keeps the runs of the current
benchmark design: those with both drop modes, "default" (drop only when
rwsem_is_contended() says a writer waits) and "always" (--drop always,
drop every 64 items). Older runs had another default drop mode and are
left out. Writes one line per (run, mode, policy) sample of lab 01's
solution build:
  X  P50_US  P99_US  MODE  POLICY  RUN
X places the point: 1-3 for the contended-only mode, 5-7 for --drop
always (STEAL, NOSTEAL, WRITER_FIRST), nudged by the run's index so the
runs stand side by side. With no such run the file holds one NaN line,
so that gnuplot still draws the axes.
"""
import glob
import json
import os
import sys

MODES = {"default": 1, "always": 5}
POLICIES = {"STEAL": 0, "NOSTEAL": 1, "WRITER_FIRST": 2}


def samples(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line[line.find("{"):])
            except ValueError:
                continue
            if isinstance(r, dict) and r.get("type") == "sample" and r.get("build") == "solution":
                out.append(r)
    return out


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        out = sys.stdout if len(argv) == 2 and argv[1] in ("-h", "--help") else sys.stderr
        out.write(__doc__)
        return 0 if out is sys.stdout else 2
    ref, dst = argv[1], argv[2]
    if not os.path.isdir(ref):
        sys.stderr.write("bench-points.py: '%s' is not a directory\n%s" % (ref, __doc__))
        return 2
    runs = []
    for path in sorted(glob.glob(os.path.join(ref, "*", "rwsem-bench.jsonl"))):
        s = samples(path)
        if {r.get("config") for r in s} >= set(MODES):
            runs.append((os.path.basename(os.path.dirname(path)), s))
    rows = []
    for i, (run, s) in enumerate(runs):
        nudge = (i - (len(runs) - 1) / 2.0) * 0.15
        for r in s:
            mode, pol = r.get("config"), r.get("policy")
            if mode in MODES and pol in POLICIES and isinstance(r.get("p50_us"), (int, float)):
                rows.append("%.3f %s %s %s %s %s\n" % (MODES[mode] + POLICIES[pol] + nudge, r["p50_us"],
                                                       r.get("p99_us"), mode, pol, run))
    tmp = dst + ".tmp"
    with open(tmp, "w") as f:
        f.write("# x p50_us p99_us mode policy run\n")
        f.writelines(rows or ["NaN NaN NaN none none none\n"])
    os.replace(tmp, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
