#!/usr/bin/env python3
"""Draw one window of a committed tools-agree run's perf trace as an SVG
timeline: per thread, its mmap_lock holds and its lock:contention waits.

usage: scripts/book/timeline.py RUNDIR OUT.svg

RUNDIR is reference/tools-agree/<run>/: agree-steal.perf-script.gz (the
lines of `perf script` the copy kept) and agree-steal.window.json (the
window every thread's lines were kept for). The book build runs it.
Exit: 0 written, 1 no data, 2 usage.
"""
import gzip
import json
import os
import re
import sys

LINE = re.compile(r"^\s*(\S+)\s+(\d+)\s+(\d+\.\d+):\s+(\S+):(\S+):\s+(.*)$")
W, LEFT, RIGHT, ROW, BAR, TOP = 760, 150, 20, 46, 16, 30
COLORS = {"hold-w": "#7a1f1f", "hold-r": "#2b6cb0", "acquire": "#e8a33d", "wait": "#d9534f"}


def events(run):
    win = json.load(open(os.path.join(run, "agree-steal.window.json")))
    t0, t1 = win["t0"], win["t1"]
    out = []
    with gzip.open(os.path.join(run, "agree-steal.perf-script.gz"), "rt") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            t = float(m.group(3))
            if t0 <= t <= t1:
                out.append((int(m.group(2)), t, m.group(5), m.group(6)))
    return win, out


def intervals(win, evs):
    """Per thread: (kind, start, end) from the begin/end event pairs; an
    interval open at the window's edge is cut there."""
    t0, t1 = win["t0"], win["t1"]
    rows = {}
    state = {}
    for tid, t, ev, rest in evs:
        r = rows.setdefault(tid, [])
        s = state.setdefault(tid, {})
        write = "write=true" in rest
        if ev == "contention_begin":
            s["wait"] = t
        elif ev == "contention_end":
            r.append(("wait", s.pop("wait", t0), t))
        elif ev == "mmap_lock_start_locking":
            s["start"] = t
        elif ev == "mmap_lock_acquire_returned" and "success=true" in rest:
            if write:
                r.append(("acquire", s.pop("start", t0), t))
            s["hold"] = (t, write)
        elif ev == "mmap_lock_released" and "hold" in s:
            h, w = s.pop("hold")
            r.append(("hold-w" if w else "hold-r", h, t))
    for tid, s in state.items():
        if "wait" in s:
            rows[tid].append(("wait", s["wait"], t1))
        if "hold" in s:
            rows[tid].append(("hold-w" if s["hold"][1] else "hold-r", s["hold"][0], t1))
    return rows


def main():
    if len(sys.argv) != 3 or sys.argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stdout if sys.argv[1:2] in (["-h"], ["--help"]) else sys.stderr)
        return 0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2
    run, out = sys.argv[1], sys.argv[2]
    win, evs = events(run)
    if not evs:
        print("timeline.py: no events in the window of %s" % run, file=sys.stderr)
        return 1
    rows = intervals(win, evs)
    writer = win["writer_tid"]
    order = [writer] + sorted(t for t in rows if t != writer)
    t0, t1 = win["t0"], win["t1"]
    span_ms = (t1 - t0) * 1e3
    x = lambda t: LEFT + (t - t0) / (t1 - t0) * (W - LEFT - RIGHT)
    height = TOP + ROW * len(order) + 84
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, height, W, height),
         '<rect width="100%" height="100%" fill="white"/>']
    for i, tid in enumerate(order):
        y = TOP + i * ROW
        name = "writer (tid %d)" % tid if tid == writer else "reader (tid %d)" % tid
        s.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (LEFT - 8, y + BAR - 3, name))
        s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc"/>' % (LEFT, y + BAR + 4, W - RIGHT, y + BAR + 4))
        for kind, a, b in sorted(rows.get(tid, []), key=lambda k: k[0] != "acquire"):
            if kind == "acquire":
                yy, hh = y + BAR + 1, 5        # the whole acquisition, under the bar
            else:
                yy, hh = y, BAR
            w = max(x(b) - x(a), 0.6)
            s.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>' % (x(a), yy, w, hh, COLORS[kind]))
    ya = TOP + ROW * len(order) + 4
    s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (LEFT, ya, W - RIGHT, ya))
    step = 5 if span_ms > 20 else 2
    ms = 0
    while ms <= span_ms + 1e-9:
        xx = x(t0 + ms / 1e3)
        s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>' % (xx, ya, xx, ya + 4))
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xx, ya + 16, ms))
        ms += step
    s.append('<text x="%d" y="%d" text-anchor="middle">ms from %.6f s (guest CLOCK_MONOTONIC)</text>'
             % ((LEFT + W - RIGHT) // 2, ya + 32, t0))
    legend = [("hold-w", "mmap_lock held for write"), ("hold-r", "held for read"),
              ("wait", "contention_begin to _end"), ("acquire", "start_locking to acquire_returned (write)")]
    for i, (kind, text) in enumerate(legend):
        lx, ly = LEFT + (i % 2) * 300, ya + 44 + (i // 2) * 16
        s.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>' % (lx, ly, COLORS[kind]))
        s.append('<text x="%d" y="%d">%s</text>' % (lx + 16, ly + 9, text))
    s.append('<text x="10" y="16" font-weight="bold">%s</text>' % "perf lock record: one window of smaps_steal, steal policy 0")
    s.append("</svg>")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(s) + "\n")
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
