#!/usr/bin/env python3
"""Turn one `make reproduce` run directory into Markdown: summary.md (one row
per summary record, PASS/FAIL), each experiment's record <experiment>.md,
and (--box) the results box the book shows for one experiment."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

USAGE = """usage: summarize.py [--print] RUNDIR
       summarize.py --box EXPERIMENT RUNDIR [--counters "NAME..."]

Reads RUNDIR/<experiment>.jsonl (the guest's results port: JSON lines framed
by begin/end records; other lines are ignored and counted), RUNDIR/meta.json
(written by reproduce.sh: runner status per experiment, guest size,
accelerator, kernel release) or else RUNDIR/<experiment>.meta.json, and writes
  RUNDIR/summary.md        experiment, published figure and source, our
                           before/after/ratio, goal, PASS/FAIL
  RUNDIR/<experiment>.md   the run's record of one experiment: the same
                           rows, the guest size, accelerator, kernel
                           release and date, every other figure and table
An experiment without a summary record gets a "no result" row and FAILs; so
does one that crashed, timed out or exited non-zero.

  --print   also print summary.md on stdout
  --help    this text

--box prints, and writes nothing, the results box the book shows for one
experiment of RUNDIR (mmlocks.lua calls it for each ::: {.results} block):
the run and its guest, one row per metric (before, after, ratio, verdict
and goal; numbers to 3 significant figures in a readable unit), the kernel
counters per setting that show the switch acted, the plot, and where the
run's full record is. Exit 3 when RUNDIR has no trace of EXPERIMENT.
--counters names the counters to show (table columns or summary keys, as
in the record, a space written as _); without it, every integer column or
before/after pair named like a kernel counter (a name_with_underscores).
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


# ------------------------------------------------------------ the book's box
# The results box a chapter shows (--box): what a reader scans at the end of
# a chapter. The run's record (<experiment>.md above) keeps everything else.

NBSP = "\u00a0"
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# A name_with_underscores is the kernel's (a lock event, a vmstat item, one
# of the patches' counters: the guest programs keep the kernel's names); a
# spread, a rate or a setting is not a counter.
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?")
NOT_COUNTER = re.compile(r"(?:^|[ _,])(?:min|max|median|mean|avg|p\d+|pct|spread|ratio|per|"
                         r"us|ns|ms|s|runs|repetitions|threads?|slots|rep)(?=$|[ _,])")
SIDE = re.compile(r"(?:^|_)(before|after|baseline|switch_?[01]|pos[01])(?=_|$)")
SIDE_ORDER = ("before", "switch 0", "after", "switch 1", "baseline")
MAX_SETTINGS = 6        # a per-setting table with more rows is not a box's
MAX_COUNTERS = 12


def _sig3(v):
    """v to 3 significant figures (all the digits of a number below 1000)."""
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1:
        return "%.3g" % v
    s = "%.0f" % v if a >= 99.95 else "%.1f" % v if a >= 9.995 else "%.2f" % v
    return s.rstrip("0").rstrip(".") if "." in s else s


def _pick(a, steps):
    """The largest (factor, name) of steps (ascending) that a reaches once
    rounded to 3 figures, so 999.7 us is 1 ms and not 1000 us."""
    pick = steps[0]
    for f, name in steps:
        if a >= f * 0.9995:
            pick = (f, name)
    return pick


def compact(x, unit=""):
    """A number as a reader scans it: 3 significant figures, a time in the
    unit that keeps it below 1000, a count of 10000 or more in k, M, G;
    a non-breaking space before the unit so a line never splits it."""
    if x is None:
        return "\u2014"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not isinstance(x, (int, float)) or x != x or abs(x) == float("inf"):
        return str(x)
    u = (unit or "").strip()
    if u in TIME_UNITS:
        ns = x * TIME_UNITS[u]
        f, name = _pick(abs(ns), ((1.0, "ns"), (1e3, "\u00b5s"), (1e6, "ms"), (1e9, "s")))
        return _sig3(ns / f) + NBSP + name
    if u == "count":
        u = ""
    if abs(x) < 9999.5:	# grouped as the chapters print them: 8,544
        s = "{:,}".format(int(x)) if isinstance(x, int) or float(x).is_integer() else _sig3(x)
        s = "{:,}".format(int(s)) if s.lstrip("-").isdigit() else s
    else:
        f, name = _pick(abs(x), ((1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T")))
        s = _sig3(x / f) + NBSP + name
    return s + (NBSP + u if u else "")


def ratio_text(r):
    if isinstance(r, bool) or not isinstance(r, (int, float)):
        return None if r is None else str(r)
    if abs(r) < 1000:
        return ("%.2f" if abs(r) < 10 else "%.1f") % r
    return compact(r)


MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|^~$@#])")


def md_text(s):
    """Plain text as Markdown: punctuation escaped, the kernel's names
    (name_with_underscores, function()) as code, which the book may break
    after an underscore."""
    s = str(s).replace("\n", " ")
    out, at = [], 0
    for m in IDENT.finditer(s):
        out.append(MD_SPECIAL.sub(r"\\\1", s[at:m.start()]))
        out.append("`" + m.group(0) + "`")
        at = m.end()
    out.append(MD_SPECIAL.sub(r"\\\1", s[at:]))
    return "".join(out)


def goal_text(g):
    g = str(g).replace(">=", "\u2265").replace("<=", "\u2264").replace("+-", "\u00b1")
    return re.sub(r"(\d)x\b", "\\1\u00d7", g)


def is_count(v):
    return (not isinstance(v, bool) and isinstance(v, (int, float))
            and float(v).is_integer())


def missing(v):
    return v is None or v == "" or v == "\u2014"


def counter_name(name, wanted):
    if wanted:	# --counters "declined_steals ...": a space in a name is written _
        return name.replace(" ", "_") in wanted
    return bool(IDENT.search(name)) and not NOT_COUNTER.search(name)


def table_counters(e, wanted):
    """The counters of each per-setting table (a text first column, at most
    MAX_SETTINGS rows): [(first column's name, settings, [(counter, values)])]."""
    out = []
    for title, rows in e.tables.items():
        cols = []
        for r in rows:
            cols += [k for k in r if k not in cols]
        if len(cols) < 2 or not all(isinstance(r.get(cols[0]), str) for r in rows):
            continue
        names = [c for c in cols[1:] if counter_name(c, wanted)
                 and all(missing(r.get(c)) or is_count(r.get(c)) for r in rows)]
        keep = [r for r in rows if any(not missing(r.get(c)) for c in names)]
        if names and 1 <= len(keep) <= MAX_SETTINGS:
            out.append((cols[0], [r[cols[0]] for r in keep],
                        [(c, [None if missing(r.get(c)) else r.get(c) for r in keep]) for c in names]))
    return out


def pair_counters(e, wanted):
    """Counters the summary records carry per side (NAME_before/NAME_after,
    NAME_switch_0/1...): (sides, [(counter, values)]); a counter whose
    value differs between two records is left to the record."""
    found, order, clash = {}, [], set()
    for s in e.summaries:
        for k, v in s.items():
            m = SIDE.search(k)
            if not m:
                continue
            base = (k[:m.start()] + k[m.end():]).strip("_")
            side = re.sub(r"switch_?([01])", r"switch \1", m.group(1))
            if not base or not counter_name(base, wanted) and not counter_name(k, wanted):
                continue
            if not is_count(v):
                clash.add(base)
                continue
            d = found.setdefault(base, {})
            if base not in order:
                order.append(base)
            if side in d and d[side] != v:
                clash.add(base)
            d[side] = v
    names = [b for b in order if b not in clash]
    sides = [sd for sd in SIDE_ORDER if any(sd in found[b] for b in names)]
    return sides, [(b, [found[b].get(sd) for sd in sides]) for b in names]


def counter_table(corner, heads, rows):
    t = "| %s | %s |\n|---|%s\n" % (corner, " | ".join(md_text(h) for h in heads), "---:|" * len(heads))
    for name, vals in rows:
        t += "| %s | %s |\n" % (md_text(name),
                                " | ".join(compact(v) for v in vals))
    return t


def box(e, meta, rundir, wanted=None):
    """The results box of experiment e, in Markdown; the paths it names are
    rundir's own (results/<run>, not results/latest)."""
    shown = os.path.relpath(os.path.realpath(rundir))
    if shown.startswith(".."):
        shown = os.path.realpath(rundir)
    out = []
    rows = rows_of(e)
    npass = sum(1 for r in rows if r[-1] == "PASS")
    head = "**%d PASS, %d FAIL**" % (npass, len(rows) - npass) if e.summaries else "**No result**"
    out.append("%s in run `%s`: %s." % (head, os.path.basename(os.path.realpath(rundir)),
                                         env_line(e, meta)))
    if not e.summaries:
        why = e.problem() or "no result"
        text = md_text(why[0].upper() + why[1:]) + "."
        for msg in e.errors[:3]:
            text += " The guest said: \u201c%s\u201d." % md_text(msg)
        log = os.path.join(rundir, "console-%s.log" % e.name)
        if os.path.exists(log):
            text += " Its console: `%s/console-%s.log`." % (shown, e.name)
        out.append(text)
    else:
        why = e.problem()
        pairs = [(s.get("before_label") or "", s.get("after_label") or "") for s in e.summaries]
        common = max(pairs, key=pairs.count)
        legend = []
        if common[0] or common[1]:
            out.append("; ".join(x for x in (
                "Before: " + md_text(common[0]) if common[0] else "",
                "after: " + md_text(common[1]) if common[1] else "") if x) + ".")
        notes = {}

        def mark(label, side, usual):
            if not label or label == usual:
                return ""
            key = (side, label)
            if key not in notes:
                notes[key] = len(notes) + 1
                legend.append("^%d^\u00a0%s: %s" % (notes[key], side, md_text(label)))
            return "^%d^" % notes[key]

        t = ("| Metric | Before | After | Ratio | Verdict and goal |\n"
             "|---|--:|--:|--:|---|\n")
        for s in e.summaries:
            unit = s.get("unit") or ""
            lo_b, lo_a = bool(s.get("before_timeouts")), bool(s.get("after_timeouts"))
            b = ("\u2265" + NBSP if lo_b and s.get("before") is not None else "") + compact(s.get("before"), unit)
            a = ("\u2265" + NBSP if lo_a and s.get("after") is not None else "") + compact(s.get("after"), unit)
            b += mark(s.get("before_label"), "before", common[0])
            a += mark(s.get("after_label"), "after", common[1])
            r = ratio_text(s.get("ratio"))
            if r and lo_b and not lo_a:
                r = "\u2265" + NBSP + r
            elif r and lo_a:
                r = "~" + r
            ok = s.get("pass") is True and why is None
            v = "**PASS**" if ok else "**FAIL**" + (": " + md_text(why) if why else
                                                    "" if s.get("pass") is False else ": no verdict")
            if s.get("goal"):
                v += " \u2014 " + md_text(goal_text(s["goal"]))
            t += "| %s | %s | %s | %s | %s |\n" % (md_text(s.get("metric") or "\u2014"), b, a,
                                                  r + "\u00d7" if r else "\u2014", v)
        out.append(t.rstrip("\n"))
        if legend:
            out.append("\\\n".join(legend))
        flags = []
        for key, what in (("switch_acted", "the switch acted"), ("knob_read_back", "the knob read back")):
            vals = [s[key] for s in e.summaries if isinstance(s.get(key), bool)]
            if vals:
                flags.append(what + ": " + ("**yes**" if all(vals) else "**no**"))
        if flags:
            out.append("Checked in the guest: " + "; ".join(flags) + ".")
        n = 0
        for corner, settings, counters in table_counters(e, wanted):
            counters = counters[:max(0, MAX_COUNTERS - n)]
            if not counters:
                break
            n += len(counters)
            # a setting the legend above names is "Before" or "After" here
            settings = [{common[0]: "Before", common[1]: "After"}.get(x, x) if x else x for x in settings]
            out.append(counter_table("Counter", settings, counters)
                       + "\n: Kernel counters per %s" % md_text(corner))
        if n == 0:
            sides, counters = pair_counters(e, wanted)
            if counters:
                heads = [{"before": "Before", "after": "After", "baseline":
                          next((s.get("baseline_label") for s in e.summaries if s.get("baseline_label")),
                               "Baseline")}.get(sd, sd) for sd in sides]
                out.append(counter_table("Counter", heads, counters[:MAX_COUNTERS])
                           + "\n: Kernel counters, before and after")
        svg = os.path.join(rundir, e.name + ".svg")
        if os.path.exists(svg):
            s = next((s for s in e.summaries if any(k.endswith("_before") and isinstance(v, list)
                                                   for k, v in s.items())), e.summaries[0])
            out.append("![%s: each run or scan, before and after.](%s/%s.svg)" % (
                md_text(s.get("metric") or e.name), shown, e.name))
    out.append("Every figure of this run, with the spreads and the full tables: `%s/%s.md`." % (shown, e.name))
    return "\n\n".join(out) + "\n"


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
    box_of = wanted = None
    while args:
        a = args.pop(0)
        if a == "--print":
            do_print = True
        elif a in ("--box", "--counters"):
            if not args:
                usage_error("%s needs a value" % a)
            if a == "--box":
                box_of = args.pop(0)
            else:
                wanted = {w.replace(" ", "_") for w in args.pop(0).split()}
        elif a.startswith("-"):
            usage_error("unknown option '%s'" % a)
        else:
            rest.append(a)
    if len(rest) != 1:
        usage_error("need exactly one RUNDIR")
    rundir = rest[0]
    if box_of is not None and not os.path.isdir(rundir):
        return 3
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
    if box_of is not None:
        e = next((x for x in exps if x.name == box_of), None)
        if e is None:
            return 3
        sys.stdout.write(box(e, meta, rundir, wanted))
        return 0
    if wanted is not None:
        usage_error("--counters goes with --box")
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
