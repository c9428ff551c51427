#!/usr/bin/env python3
"""Judge the 6.12 selftest output that selftests.sh collected from the
guest: the khugepaged selftest (types like khugepaged:anon) and the upstream
selftests of remote access (types like proc/read, mm/mremap_test); one
verdict per test case, known-skipped cases excused."""

import json
import os
import re
import sys

USAGE = """usage: check.py [--verbose] [--source KHUGEPAGED_C] --run LABEL RESULTS.jsonl CONSOLE.log...

Each --run names one knob setting, its results and console files. Each
RESULTS.jsonl is the results port of one boot: knob records, then per
selftest a begin record, the selftest's raw text output, an end record. A
khugepaged case passes when none of its checks printed the selftest's red
failure marker. An upstream selftest that prints TAP ("1..N", "ok N ...",
"not ok N ...") has one case per TAP line and must print all N; one that
does not (the proc selftests: assert() and an exit status) is one case that
passes with exit status 0. Known-skipped cases (below) may fail without
failing the run. With --source (khugepaged.c), every case the 6.12 source
runs for a khugepaged type must appear in the output.

  --verbose   one line per case (default: one line per setting and type)
  --help      this text
"""

# Cases the guest cannot run, with the reason (also in labs/kernel/RUNNING.md).
KNOWN_SKIPPED = {
    "collapse_swapin_single_pte":
        "needs swap: MADV_PAGEOUT cannot swap out without a swap device, "
        "and the guest has none",
    "collapse_max_ptes_swap":
        "needs swap: MADV_PAGEOUT cannot swap out without a swap device, "
        "and the guest has none",
}

# Upstream selftest cases that fail on this guest for a known reason:
# (selftest type, prefix of the TAP description) -> reason.
KNOWN_FAILING = {
    ("mm/mremap_test", "2GB mremap"):
        "needs more guest memory: mapping the 2 GB source region fails with "
        "ENOMEM in the default MEM=2G guest, which has no swap (the test prints "
        "\"Failed to map source region: Cannot allocate memory\")",
}

TAP_PLAN = re.compile(r"^1\.\.(\d+)")
TAP_LINE = re.compile(r"^(not ok|ok) (\d+) (.*)$")

ANSI = re.compile(r"\x1b\[([0-9;]*)m")
RUN_TEST = re.compile(r"^Run test: (\w+) \((\w+):(\w+)\)")
CONSOLE_BAD = re.compile(r"^.*(Oops|BUG:|WARNING:|general protection fault|Kernel panic).*$", re.M)


def usage_error(msg):
    sys.stderr.write("check.py: %s\n%s" % (msg, USAGE))
    sys.exit(2)


def expected_cases(source, ctx, ops):
    """Case names the source's main() runs for context ctx and memory ops."""
    names = []
    with open(source) as f:
        for m in re.finditer(r"TEST\((\w+), (\w+)_context, (\w+)_ops\);", f.read()):
            if m.group(2) == ctx and m.group(3) == ops and m.group(1) not in names:
                names.append(m.group(1))
    return names


def parse_run(path):
    """knob records, and per selftest type: its text lines and end record."""
    knobs, blocks, cur = [], [], None
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.strip("\0")
        rec = None
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
        if isinstance(rec, dict) and rec.get("type") == "begin" and "selftest" in rec:
            cur = {"type": rec["selftest"], "lines": [], "end": None}
            blocks.append(cur)
        elif isinstance(rec, dict) and rec.get("type") == "end" and "selftest" in rec:
            if cur is not None:
                cur["end"] = rec
            cur = None
        elif isinstance(rec, dict) and rec.get("type") == "knob":
            knobs.append(rec)
        elif cur is not None:
            cur["lines"].append(line)
    return knobs, blocks


def judge_block(block):
    """cases: ordered {name: {"checks": n, "fail": [msg], "skip": [msg]}}"""
    cases, order, cur, stray_fail = {}, [], None, []
    for line in block["lines"]:
        # "\r" rewrites a progress line in place; keep its last state.
        line = line.split("\r")[-1]
        plain = ANSI.sub("", line).strip()
        m = RUN_TEST.match(plain)
        if m:
            cur = m.group(1)
            if cur not in cases:
                cases[cur] = {"checks": 0, "fail": [], "skip": []}
                order.append(cur)
            continue
        colours = ANSI.findall(line)
        if plain.startswith("Restore THP") or plain.startswith("Save THP"):
            if "31" in colours:
                stray_fail.append(plain)
            continue
        if cur is None:
            if "31" in colours:
                stray_fail.append(plain)
            continue
        if "31" in colours:          # fail(): red
            cases[cur]["fail"].append(plain)
            cases[cur]["checks"] += 1
        elif "33" in colours:        # skip(): yellow
            cases[cur]["skip"].append(plain)
            cases[cur]["checks"] += 1
        elif "32" in colours:        # success(): green
            cases[cur]["checks"] += 1
    return [(n, cases[n]) for n in order], stray_fail


def judge_upstream(block):
    """cases: ordered [(name, {"fail": [msg], "skip": [msg], "known": reason})],
    problems: [msg]. TAP output gives one case per line; otherwise the
    program is one case, judged by its exit status."""
    plan, cases, problems = None, [], []
    for line in block["lines"]:
        plain = ANSI.sub("", line.split("\r")[-1]).strip()
        m = TAP_PLAN.match(plain)
        if m:
            plan = int(m.group(1))
            continue
        m = TAP_LINE.match(plain)
        if not m:
            continue
        desc = m.group(3)
        c = {"fail": [], "skip": [], "known": None}
        if "# SKIP" in desc:
            c["skip"].append(desc.split("# SKIP", 1)[1].strip())
        elif m.group(1) == "not ok":
            c["fail"].append("not ok")
            for (typ, prefix), why in KNOWN_FAILING.items():
                if typ == block["type"] and desc.startswith(prefix):
                    c["known"] = why
        cases.append(("%s %s" % (m.group(2), desc.split(" # ")[0]), c))
    rc = block["end"].get("rc") if block["end"] else None
    if plan is None:
        c = {"fail": [] if rc == 0 else ["exit status %s" % rc], "skip": [], "known": None}
        cases.append((block["type"], c))
    elif len(cases) != plan:
        problems.append("TAP plan 1..%d, but %d result line(s)" % (plan, len(cases)))
    return cases, problems


def main(argv):
    args = argv[1:]
    verbose = False
    source = None
    runs = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--help", "-h"):
            sys.stdout.write(USAGE)
            return 0
        if a == "--verbose":
            verbose = True
        elif a == "--source":
            if i + 1 >= len(args):
                usage_error("--source needs a file")
            source = args[i + 1]
            i += 1
        elif a == "--run":
            if i + 3 >= len(args):
                usage_error("--run needs LABEL RESULTS.jsonl CONSOLE.log")
            runs.append(tuple(args[i + 1:i + 4]))
            i += 3
        else:
            usage_error("unexpected argument '%s'" % a)
        i += 1
    if not runs:
        usage_error("no results given")

    failures = 0
    known_seen = {}
    for setting, res, con in runs:
        if not os.path.exists(res):
            print("FAIL  %-46s no results file %s" % (setting, res))
            failures += 1
            continue
        knobs, blocks = parse_run(res)
        for k in knobs:
            if k.get("ok") is not True:
                print("FAIL  %-46s knob %s=%s could not be set (reads %r)" % (
                    setting, k.get("name"), k.get("requested"), k.get("value")))
                failures += 1
        if con and os.path.exists(con):
            with open(con, errors="replace") as f:
                m = CONSOLE_BAD.search(f.read())
            if m:
                print("FAIL  %-46s console: %s" % (setting, m.group(0).strip()[:100]))
                failures += 1
        if not blocks:
            print("FAIL  %-46s no selftest ran (see the console log)" % setting)
            failures += 1
        for b in blocks:
            label = "%s %s" % (setting, b["type"])
            end = b["end"]
            problems = []
            if ":" in b["type"]:             # the khugepaged selftest
                cases, stray = judge_block(b)
                for name, c in cases:
                    c["known"] = KNOWN_SKIPPED.get(name) if c["fail"] else None
            else:
                cases, problems = judge_upstream(b)
                stray = []
            if end is None:
                problems.append("no end record (guest crashed or QEMU was killed)")
            elif end.get("rc") in (124, 137, 143):
                problems.append("killed by the guest timeout (rc %s)" % end.get("rc"))
            problems += ["outside a case: " + s for s in stray]
            npass = nknown = 0
            bad_cases = []
            for name, c in cases:
                if c["fail"] and c["known"]:
                    nknown += 1
                    known_seen["%s: %s" % (b["type"], name) if ":" not in b["type"] else name] = c["known"]
                    verdict = "known-skipped"
                elif c["fail"]:
                    bad_cases.append("%s (%s)" % (name, "; ".join(c["fail"])))
                    verdict = "FAIL"
                elif c.get("checks", 1) == 0:
                    bad_cases.append("%s (no check finished)" % name)
                    verdict = "FAIL"
                else:
                    npass += 1
                    verdict = "ok" + (" (selftest skipped: %s)" % "; ".join(c["skip"])
                                      if c["skip"] else "")
                if verbose:
                    print("  %-14s %s: %s" % (verdict, label, name))
            if source and ":" in b["type"]:
                ctx, ops = b["type"].split(":", 1)
                ran = set(n for n, _ in cases)
                missing = [n for n in expected_cases(source, ctx, ops) if n not in ran]
                if missing:
                    problems.append("cases that never started: " + ", ".join(missing))
            rc = end.get("rc") if end else None
            if rc not in (None, 0) and not bad_cases and nknown == 0 and not problems:
                problems.append("exit status %s without a failing check" % rc)
            problems += ["failed: " + c for c in bad_cases]
            secs = end.get("seconds") if end else None
            summary = "%d passed, %d known-skipped, %d failed%s" % (
                npass, nknown, len(bad_cases), ", %s s" % secs if secs is not None else "")
            if problems:
                failures += 1
                print("FAIL  %-46s %s" % (label, summary))
                for p in problems:
                    print("        %s" % p)
            else:
                print("ok    %-46s %s" % (label, summary))
    for name, why in sorted(known_seen.items()):
        print("known-skipped: %s: %s" % (name, why))
    print("%s" % ("%d failure(s)" % failures if failures else "all selftest runs passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
