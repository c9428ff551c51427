#!/usr/bin/env python3
"""guest-points.py: the guest's (trylock failure rate, time ratio) points of
every committed khugepaged-cursor reference run, for plots/cursor-ratio.gp.

usage: guest-points.py REFERENCE_DIR OUT

Reads REFERENCE_DIR/*/khugepaged-cursor.jsonl and writes one line per
"table_row" record (one per writer pause) that has both fail_pct and ratio:
  P  RATIO  STOCK_TIMEOUTS  RUN  PAUSE_US
with P = fail_pct / 100 (the model's x axis). A ratio whose stock runs hit
the bound is a lower bound (STOCK_TIMEOUTS > 0). Runs from before the
failure rate was counted have no such rows; with none at all the file holds
one line of NaN, so that gnuplot still draws the model's curve.
"""
import glob
import json
import os
import sys


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        out = sys.stdout if len(argv) == 2 and argv[1] in ("-h", "--help") else sys.stderr
        out.write(__doc__)
        return 0 if out is sys.stdout else 2
    ref, dst = argv[1], argv[2]
    if not os.path.isdir(ref):
        sys.stderr.write("guest-points.py: '%s' is not a directory\n%s" % (ref, __doc__))
        return 2
    rows = []
    for path in sorted(glob.glob(os.path.join(ref, "*", "khugepaged-cursor.jsonl"))):
        run = os.path.basename(os.path.dirname(path))
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line[line.find("{"):])
                except ValueError:
                    continue
                if not isinstance(r, dict) or r.get("type") != "table_row":
                    continue
                p, ratio = r.get("fail_pct"), r.get("ratio")
                if isinstance(p, (int, float)) and isinstance(ratio, (int, float)) and ratio > 0:
                    rows.append("%.4f %.4f %d %s %s\n" % (p / 100.0, ratio, r.get("stock_timeouts") or 0,
                                                         run, r.get("writer_pause_us")))
    tmp = dst + ".tmp"
    with open(tmp, "w") as f:
        f.write("# P ratio stock_timeouts run writer_pause_us\n")
        f.writelines(rows or ["NaN NaN 0 none none\n"])
    os.replace(tmp, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
