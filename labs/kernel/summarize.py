#!/usr/bin/env python3
"""Turn one `make reproduce` run directory into Markdown: summary.md (one row
per summary record, PASS/FAIL) and <experiment>.md fragments for the book."""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

USAGE = """usage: summarize.py [--print] RUNDIR

Reads RUNDIR/<experiment>.jsonl (the guest's results port: JSON lines framed
by begin/end records; other lines are ignored and counted), RUNDIR/meta.json
(written by reproduce.sh: runner status per experiment, guest size,
accelerator, kernel release) or else RUNDIR/<experiment>.meta.json, and writes
  RUNDIR/summary.md        experiment, published figure and source, our
                           before/after/ratio, goal, PASS/FAIL
  RUNDIR/<experiment>.md   the same rows for one experiment, with the guest
                           size, accelerator, kernel release and date
An experiment without a summary record gets a "no result" row and FAILs; so
does one that crashed, timed out or exited non-zero.

  --print   also print summary.md on stdout
  --help    this text
"""


def usage_error(msg):
    sys.stderr.write("summarize.py: %s\n%s" % (msg, USAGE))
    sys.exit(2)


def parse_lines(path):
    """JSON objects of a results file, in order, and the number of lines
    that were not JSON objects (the serial port may carry anything)."""
    records, garbage = [], 0
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return records, garbage
    for raw in data.decode("utf-8", errors="replace").split("\n"):
        line = raw.replace("\r", "").replace("\0", "").strip()
        if not line:
            continue
        obj = None
        for cand in (line, line[line.find("{"):] if "{" in line else None):
            if cand is None:
                continue
            try:
                obj = json.loads(cand)
                break
            except ValueError:
                continue
        if isinstance(obj, dict) and isinstance(obj.get("type"), str):
            records.append(obj)
        else:
            garbage += 1
    return records, garbage


class Experiment:
    def __init__(self, name):
        self.name = name
        self.begun = self.ended = False
        self.rc = None
        self.seconds = None
        self.guest_timeout = False
        self.quick = None
        self.summaries = []
        self.tables = {}        # title -> rows (dicts), from table_row records
        self.errors = []
        self.garbage = 0
        self.runner = None      # reproduce.sh's record: status, wall_seconds
        self.guest = None       # the guest record (release, nproc, mem_kb)
        self.meta = None        # run-qemu.sh's <experiment>.meta.json

    def problem(self):
        """Why this experiment cannot PASS, or None."""
        st = (self.runner or {}).get("status")
        if st == "timeout":
            return "timed out (QEMU killed)"
        if st == "panic":
            return "kernel panic"
        if st == "interrupted":
            return "interrupted"
        if st == "not-run":
            return "not run"
        if st not in (None, "ok"):
            return "runner: %s" % st
        if not self.begun:
            return "no result (experiment did not start)"
        if not self.ended:
            return "crashed (no end record)"
        if self.guest_timeout:
            return "timed out in the guest"
        if self.rc != 0:
            # A program that could not measure says so ("not measured: no
            # THP ..."): that, not a number or a bare exit status, is the row.
            for msg in self.errors:
                if msg.startswith("not measured"):
                    return msg
            return "exit status %s" % self.rc
        if not self.summaries:
            return "no result"
        return None


def collect(rundir, meta):
    exps = {}
    order = []

    def get(name):
        if name not in exps:
            exps[name] = Experiment(name)
            order.append(name)
        return exps[name]

    for r in meta.get("experiments", []):
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            get(r["name"]).runner = r
    for path in sorted(glob.glob(os.path.join(rundir, "*.jsonl"))):
        stem = os.path.basename(path)[:-len(".jsonl")]
        records, garbage = parse_lines(path)
        cur = None
        guest = None
        for rec in records:
            t = rec["type"]
            name = rec.get("experiment")
            if t == "guest":
                guest = rec
            elif t == "begin" and isinstance(name, str):
                cur = get(name)
                cur.begun = True
                cur.quick = bool(rec.get("quick"))
                cur.guest = guest
            elif t == "end" and isinstance(name, str):
                e = get(name)
                e.ended = True
                e.rc = rec.get("rc")
                e.seconds = rec.get("seconds")
                e.guest_timeout = rec.get("timeout") is True
                cur = None
            elif t == "summary":
                target = get(name) if isinstance(name, str) else cur
                if target is not None:
                    target.summaries.append(rec)
            elif t == "table_row":
                target = get(name) if isinstance(name, str) else cur
                if target is not None:
                    title = str(rec.get("table") or "")
                    row = {k: v for k, v in rec.items()
                           if k not in ("type", "experiment", "table")}
                    target.tables.setdefault(title, []).append(row)
            elif t == "error" and cur is not None:
                cur.errors.append(str(rec.get("msg", "")))
        owner = exps.get(stem)
        if owner is not None:
            owner.garbage += garbage
            mp = os.path.join(rundir, stem + ".meta.json")
            if os.path.exists(mp):
                try:
                    with open(mp) as f:
                        owner.meta = json.load(f)
                except (OSError, ValueError):
                    pass
    return [exps[n] for n in order]


def num(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None if x is None else str(x)
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    a = abs(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 1:
        return ("%.2f" % x).rstrip("0").rstrip(".")
    return "%.3g" % x


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def measured(value, unit, label, bound=False):
    v = num(value)
    if v is None:
        return "\u2014"
    # bound: some runs hit their timeout, so the true value is at least this.
    s = ("\u2265 " if bound else "") + v + (" " + unit if unit else "")
    if label:
        s += " (%s)" % label
    return s


def rows_of(e):
    """(metric, published, before, after, ratio, goal, verdict) per row."""
    why = e.problem()
    if not e.summaries:
        return [("\u2014", "\u2014", "\u2014", "\u2014", "\u2014", "\u2014",
                 "FAIL: " + (why or "no result"))]
    out = []
    for s in e.summaries:
        unit = s.get("unit") or ""
        pub = s.get("published") or "no published figure"
        if s.get("source"):
            pub += " \u2014 " + str(s["source"])
        r = s.get("ratio")
        # Two decimals below 10x: a goal of 1.05x must not print as "1.0x" or "1.1x".
        ratio = (("%.2f" if abs(r) < 10 else "%.1f") % r
                 if isinstance(r, (int, float)) and not isinstance(r, bool)
                 and abs(r) < 1000 else num(r))
        ok = s.get("pass") is True and why is None
        verdict = "PASS" if ok else "FAIL" + (": " + why if why else
                                              "" if s.get("pass") is False
                                              else ": no verdict")
        # A "before" that hit its timeout is a lower bound, and so is the ratio
        # (unless "after" hit it too, when the ratio is unknown in direction).
        lo_b, lo_a = bool(s.get("before_timeouts")), bool(s.get("after_timeouts"))
        if ratio and lo_b and not lo_a:
            ratio = "\u2265 " + ratio
        elif ratio and lo_a:
            ratio = "~" + ratio
        out.append((s.get("metric") or "\u2014", pub,
                    measured(s.get("before"), unit, s.get("before_label"), lo_b),
                    measured(s.get("after"), unit, s.get("after_label"), lo_a),
                    ratio + "x" if ratio else "\u2014",
                    s.get("goal") or "\u2014", verdict))
    return out


# Summary keys shown in the table already, or not numbers a reader wants.
SHOWN = {"type", "experiment", "metric", "unit", "before", "after", "ratio",
         "published", "source", "goal", "pass", "before_label", "after_label",
         "baseline_label"}


def details(e):
    """The other figures each summary record carries (runs, min/max,
    timeouts, per-scan values...), so the book shows the spread too."""
    out = ""
    for s in e.summaries:
        kv = []
        for k, v in s.items():
            if k in SHOWN:
                continue
            if isinstance(v, list):
                v = ", ".join(num(x) or "?" for x in v[:12])
            elif isinstance(v, bool):
                v = "yes" if v else "no"
            else:
                v = num(v)
            if v is not None:
                kv.append("%s: %s" % (k.replace("_", " "), v))
        if kv:
            out += "\n- *%s* \u2014 %s\n" % (cell(s.get("metric") or "?"), "; ".join(kv))
    return out


def tables(e):
    """Each table an experiment printed as table_row records (one record
    per row, columns in the order of the first row's keys), in Markdown."""
    out = ""
    for title, rows in e.tables.items():
        cols = []
        for r in rows:
            cols += [k for k in r if k not in cols]
        out += "\n" + (cell(title) + ":\n\n" if title else "")
        out += "| " + " | ".join(cell(c) for c in cols) + " |\n"
        out += "|" + "---|" * len(cols) + "\n"
        for r in rows:
            out += "| " + " | ".join(cell(num(r.get(c)) or "\u2014") for c in cols) + " |\n"
    return out


def vcpus_of(e, meta):
    """The vCPU count an experiment ran with: the guest's own nproc, else
    its boot's meta, else the run's meta."""
    return ((e.guest or {}).get("nproc") or (e.meta or {}).get("vcpus")
            or (e.runner or {}).get("vcpus") or meta.get("vcpus"))


def plot(e, rundir):
    """If a summary record carries per-run arrays (KEY_before / KEY_after,
    and optionally KEY_after_as_traced: the after figures before a
    correction, and KEY_baseline: a reference setting), draw them with gnuplot into RUNDIR/<experiment>.svg and
    return the Markdown that shows it (the book reads it through
    results/latest/)."""
    for s in e.summaries:
        for k, before in s.items():
            if not (k.endswith("_before") and isinstance(before, list)):
                continue
            after = s.get(k[:-len("_before")] + "_after")
            if not isinstance(after, list) or not before or not after:
                continue
            traced = s.get(k[:-len("_before")] + "_after_as_traced")
            if not isinstance(traced, list) or len(traced) != len(after):
                traced = None
            base = s.get(k[:-len("_before")] + "_baseline")
            if not isinstance(base, list) or not base:
                base = None
            if not shutil.which("gnuplot"):
                return ""
            unit = s.get("unit") or ""
            dat = os.path.join(rundir, e.name + ".plot.dat")
            with open(dat, "w") as f:
                for i in range(max(len(before), len(after))):
                    b = before[i] if i < len(before) else "NaN"
                    a = after[i] if i < len(after) else "NaN"
                    t = traced[i] if traced and i < len(traced) else "NaN"
                    r = base[i] if base and i < len(base) else "NaN"
                    f.write("%d %s %s %s %s\n" % (i + 1, b, a, t, r))
            svg = os.path.join(rundir, e.name + ".svg")
            gp = ("set terminal svg size 640,360 dynamic font 'sans,11' noenhanced\n"
                  "set output '%s.tmp'\n"
                  "set logscale y\nset grid ytics\nset key outside bottom center horizontal\n"
                  "set xlabel 'run / scan'\nset ylabel '%s (%s, log scale)'\n"
                  "set xrange [0.5:%d.5]\nset xtics 1\n"
                  "plot '%s' using 1:2 with linespoints pt 7 title '%s', "
                  "'%s' using 1:3 with linespoints pt 5 title '%s'\n" % (
                      svg, k[:-len("_before")].replace("_", " "), unit,
                      max(len(before), len(after)), dat,
                      (s.get("before_label") or "before").replace("'", ""), dat,
                      (s.get("after_label") or "after").replace("'", "")))
            if traced:
                gp = gp.rstrip("\n") + (", '%s' using 1:4 with linespoints pt 4 dt 2 title '%s, as traced'\n" % (
                    dat, (s.get("after_label") or "after").replace("'", "")))
            if base:
                gp = gp.rstrip("\n") + (", '%s' using 1:5 with linespoints pt 6 dt 3 title '%s'\n" % (
                    dat, (s.get("baseline_label") or "baseline").replace("'", "")))
            r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True)
            if r.returncode != 0 or not os.path.exists(svg + ".tmp"):
                return ""
            os.replace(svg + ".tmp", svg)
            os.remove(dat)
            return ("\n![%s: each %s, %s against %s (this run).](results/latest/%s.svg)\n" % (
                cell(s.get("metric") or e.name), "run or scan",
                s.get("before_label") or "before", s.get("after_label") or "after", e.name))
    return ""


def env_line(e, meta, vcpus=None):
    """Where and how this was measured: guest size, accelerator, release.
    vcpus: text that replaces the vCPU count (runs whose experiments differ)."""
    m = dict(meta)
    if e.meta:
        for k, v in e.meta.items():
            m.setdefault(k, v)
    rel = (e.guest or {}).get("release") or m.get("kernel_release", "unknown")
    vcpus_text, vcpus = vcpus, vcpus_of(e, m) or "?"
    mem = m.get("mem_mib")
    accel = m.get("accel", "?")
    cpu = m.get("cpu")
    date = (m.get("started") or "")[:10] or time.strftime("%Y-%m-%d", time.gmtime())
    s = "Linux %s in QEMU %s (%s%s), %s, %s RAM, %s" % (
        rel, m.get("qemu", "?"), accel.upper() if accel in ("kvm", "tcg") else accel,
        ", -cpu " + cpu if cpu else "", vcpus_text or "%s vCPUs" % vcpus,
        "%s MiB" % mem if mem else "?", date)
    host = (m.get("host") or {}).get("cpu")
    if host:
        s += "; host CPU %s" % host
    if e.quick or m.get("quick"):
        s += "; **quick run** (--quick: short settings, not the measurement)"
    return s


HEAD = ("| Experiment | Metric | Published (source) | Before | After | Ratio "
        "| Goal | Result |\n|---|---|---|---|---|---|---|---|\n")
FRAG_HEAD = ("| Metric | Published (source) | Before | After | Ratio | Goal "
             "| Result |\n|---|---|---|---|---|---|---|\n")


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    args = argv[1:]
    if "--help" in args or "-h" in args:
        sys.stdout.write(USAGE)
        return 0
    do_print = False
    rest = []
    for a in args:
        if a == "--print":
            do_print = True
        elif a.startswith("-"):
            usage_error("unknown option '%s'" % a)
        else:
            rest.append(a)
    if len(rest) != 1:
        usage_error("need exactly one RUNDIR")
    rundir = rest[0]
    if not os.path.isdir(rundir):
        usage_error("'%s' is not a directory" % rundir)
    meta = {}
    mp = os.path.join(rundir, "meta.json")
    if os.path.exists(mp):
        try:
            with open(mp) as f:
                meta = json.load(f)
        except (OSError, ValueError) as err:
            sys.stderr.write("summarize.py: ignoring unreadable %s: %s\n" % (mp, err))
    exps = collect(rundir, meta)
    if not exps:
        sys.stderr.write("summarize.py: no experiments in %s (no *.jsonl, no meta.json)\n" % rundir)
        return 1

    table, notes = HEAD, []
    npass = nfail = 0
    for e in exps:
        rows = rows_of(e)
        frag = FRAG_HEAD
        for r in rows:
            table += "| %s |\n" % " | ".join(cell(c) for c in (e.name,) + r)
            frag += "| %s |\n" % " | ".join(cell(c) for c in r)
            if r[-1] == "PASS":
                npass += 1
            else:
                nfail += 1
        frag += "\n" + env_line(e, meta) + ".\n"
        frag += details(e)
        frag += tables(e)
        frag += plot(e, rundir)
        extra = []
        if e.errors:
            extra.append("errors reported: " + "; ".join(e.errors))
        if e.garbage:
            extra.append("%d non-JSON line(s) ignored" % e.garbage)
        if e.seconds is not None:
            extra.append("ran %s s in the guest" % num(e.seconds))
        if extra:
            notes.append("- %s: %s" % (e.name, ", ".join(extra)))
        write_atomic(os.path.join(rundir, e.name + ".md"), frag)

    first = exps[0]
    summary = "# make reproduce: %s\n\n" % os.path.basename(os.path.abspath(rundir))
    counts = [(e.name, vcpus_of(e, meta)) for e in exps]
    per_exp = None
    if len({c for _, c in counts if c}) > 1:
        per_exp = "vCPUs per experiment: " + ", ".join("%s %s" % (n, c or "?") for n, c in counts)
    summary += env_line(first, meta, per_exp) + ".\n\n" + table
    summary += "\n%d PASS, %d FAIL.\n" % (npass, nfail)
    if notes:
        summary += "\nNotes:\n" + "\n".join(notes) + "\n"
    write_atomic(os.path.join(rundir, "summary.md"), summary)
    if do_print:
        sys.stdout.write(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
