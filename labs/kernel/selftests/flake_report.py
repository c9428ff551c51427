#!/usr/bin/env python3
"""Summarise the stflake records of `selftests.sh --repeat` boots: runs,
exit codes, fatal signals, and for each run that died of a signal what the
catch saw in its heap."""

import json
import re
import sys

USAGE = """usage: flake_report.py --run LABEL RESULTS.jsonl [--run LABEL RESULTS.jsonl ...]

Reads the flake_run, flake_maps, flake_file and flake_summary records that
labs/kernel/selftests/stflake.c wrote and prints, per LABEL, the number of
runs, their exit codes and fatal signals (for each: the start_brk values and
the last lines of one such run), and for each run killed by a signal:
its start_brk, the last line it printed, its [heap] mapping and the malloc
size words of the stdio FILEs in its heap. For the khugepaged selftest it
also prints the collapse_compound_extreme step at which the test's
MREMAP_FIXED reaches the heap page of a FILE's buffer header (the test region
ends at 1 GiB and grows down one page a step), next to the step printed last.
Exit status: 0 no run died of a signal, 1 some did or a boot has no summary,
2 usage.
"""

BASE_ADDR = 1 << 30  # tools/testing/selftests/mm/khugepaged.c
PAGE = 4096
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STEP = re.compile(r"(\d+)/512\.\.\.")


def records(path):
    with open(path, "rb") as f:
        for raw in f.read().decode("utf-8", "replace").splitlines():
            line = raw.strip("\0\r")
            if line.startswith('{"type":"flake_'):
                try:
                    yield json.loads(line)
                except ValueError:
                    pass


def report(label, path):
    runs, maps, files, pages, stacks, summary = [], {}, {}, {}, {}, None
    for r in records(path):
        t, n = r["type"], r.get("run")
        if t == "flake_run":
            runs.append(r)
        elif t == "flake_maps":
            maps.setdefault(n, []).append(r["line"])
        elif t == "flake_file":
            files.setdefault(n, []).append(r)
        elif t == "flake_page":
            pages.setdefault(n, []).append(r)
        elif t == "flake_stack":
            stacks[n] = r
        elif t == "flake_summary":
            summary = r
    if summary is None:
        print("%s: no flake_summary record in %s (the boot did not finish)" % (label, path))
        return False
    rcs, first = {}, {}
    for r in runs:
        key = "signal %d" % r["signal"] if r["signal"] else "rc %s" % r["rc"]
        rcs[key] = rcs.get(key, 0) + 1
        first.setdefault(key, r)
    execs = sum(r.get("execs", 1) for r in runs)
    print("%s: %d runs (%d execs), %s" % (label, len(runs), execs,
                                           ", ".join("%s: %d" % kv for kv in sorted(rcs.items()))))
    for key in sorted(first):
        r = first[key]
        brks = sorted(x.get("start_brk", 0) for x in runs if x["signal"] == r["signal"] and x["rc"] == r["rc"])
        print("  %s: start_brk %s; run %d ended: %s" % (key, ", ".join("%#x" % b for b in brks[:8]) +
                                                      (" ..." if len(brks) > 8 else ""), r["run"],
                                                      ANSI.sub("", r.get("tail", r["last"]))[-200:]))
    for r in runs:
        if not r["signal"]:
            continue
        brk = r.get("start_brk", 0)
        print("  run %d: signal %d, start_brk %#x, last line: %s" % (r["run"], r["signal"], brk, r["last"][-120:]))
        for line in maps.get(r["run"], []):
            if "[heap]" in line:
                print("    %s" % line)
        mine = [p for p in pages.get(r["run"], []) if p["head"].startswith("00000000dead")]
        if mine:
            print("    %d of the %d pages from start_brk hold the selftest's fill pattern (0xdead0000 + i at offset 0),"
                  " from %#x" % (len(mine), len(pages[r["run"]]), min(p["addr"] for p in mine)))
        for f in files.get(r["run"], []):
            hdr = f["buf"] - 8 if f["buf"] else None
            step = ""
            if hdr is not None and BASE_ADDR - 512 * PAGE <= hdr < BASE_ADDR:
                # the page at BASE_ADDR - k pages is replaced at the end of
                # step k; the next step's check_huge() frees the buffer
                k = (BASE_ADDR - (hdr & ~(PAGE - 1))) // PAGE
                step = ", its page is replaced at step %d (abort expected at step %d)" % (k, k + 1)
            m = STEP.findall(r["last"])
            print("    FILE at heap+%#x: chunk size word %#x; buffer at heap+%#x: chunk size word %#x%s%s"
                  % (f["addr"] - brk, f["chunk_size_word"], f["buf"] - brk, f["buf_chunk_size_word"], step,
                     "; last step printed %s" % m[-1] if m else ""))
        if r["run"] in stacks:
            print("    stack words in executable mappings (addr2line -f -e BINARY): %s" % stacks[r["run"]]["text_words"])
    return summary["killed_by_signal"] == 0 and summary["other"] == 0


def main(argv):
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(USAGE)
        return 0
    pairs, i = [], 0
    while i < len(argv):
        if argv[i] != "--run" or i + 2 >= len(argv):
            sys.stderr.write("flake_report.py: expected --run LABEL FILE, got %r\n%s" % (argv[i:], USAGE))
            return 2
        pairs.append((argv[i + 1], argv[i + 2]))
        i += 3
    if not pairs:
        sys.stderr.write("flake_report.py: no --run given\n" + USAGE)
        return 2
    ok = True
    for label, path in pairs:
        try:
            ok = report(label, path) and ok
        except OSError as e:
            print("%s: cannot read %s: %s" % (label, path, e))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
