#!/usr/bin/env python3
"""Copy a `make tools-agree` run into reference/tools-agree/<UTC time>/.

scripts/reference.sh hands a results/tools-agree-<UTC time>/ directory here
(CONTRIBUTING.md, "Measured numbers"). The book quotes the run by experiment
`tools-agree`, run <UTC time>, and the fields of tools-agree.jsonl.
"""
import base64
import gzip
import importlib.util
import json
import os
import shutil
import sys
import tempfile

PROG = "scripts/reference.sh"
USAGE = """usage: scripts/reference-agree.py [--label TEXT] [--load TEXT] [--note TEXT]... RUNDIR

Copies a make tools-agree run (results/tools-agree-<UTC time>/) into
reference/tools-agree/<UTC time>/:
  tools-agree.jsonl      agree.jsonl: one record per comparison (what .ref reads)
  tools-agree.md         summary.md
  meta.json              the run's load average and each case's status
  agree-CASE.jsonl       what the guest printed, without the tools' file records
  agree-CASE.NAME        those files, gzip'd (agree.py reads them there);
                         steal's perf script keeps the writer thread's lines
                         and every thread's lines in one window (the figure's)
  agree-CASE.tool.txt    the tool's own summary lines, as printed
  agree-CASE.trace-report.head.txt  the first lines of trace-cmd's report
  agree-CASE.meta.json, console-agree-CASE.log, README.md
Then recomputes the summary from the copy (labs/kernel/tools/agree.py) and
refuses the copy unless it gives the same agree.jsonl.
Exit: 0 copied, 1 not copied, 2 usage."""

WINDOW_BEFORE_S, WINDOW_S = 0.010, 0.030
HEAD_LINES = 40


def load_agree(top):
    spec = importlib.util.spec_from_file_location("agree", os.path.join(top, "labs/kernel/tools/agree.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def slim_perf_script(agree, recs, text):
    """The writer thread's lines, plus every line of a window around the
    writer's longest wait in the first policy-0 block. Returns (text, window)."""
    lines = text.split("\n")
    waits, open_ = [], {}
    for line in lines:
        m = agree.PERF_RE.match(line)
        if not m:
            continue
        comm, tid, t, kind, flags = m.group(1).strip(), int(m.group(2)), float(m.group(3)), m.group(4), m.group(6)
        if kind == "begin":
            open_[tid] = (t, flags, comm)
        elif tid in open_:
            t0, fl, c0 = open_.pop(tid)
            if "WRITE" in fl and c0 == "smaps_steal":
                waits.append((tid, t0, t))
    if not waits:
        return None, None
    from collections import Counter
    wtid = Counter(w[0] for w in waits).most_common(1)[0][0]
    info = next((r for r in recs if r.get("type") == "info" and "seconds_per_position" in r), {})
    prev_t = None
    for r in recs:
        if r.get("type") == "info" and "small_vmas_mapped" in r:
            prev_t = r["_t"]
    window = None
    for b in (r for r in recs if r.get("type") == "block"):
        t_end = b["_t"] - 0.05
        t_start = (prev_t or (t_end - info.get("seconds_per_position", 1))) + 0.2
        prev_t = b["_t"]
        if not b.get("baseline") and b.get("rwsem_steal_policy") == 0 and window is None:
            ws = [w for w in waits if w[0] == wtid and w[1] >= t_start and w[2] <= t_end]
            if ws:
                w = max(ws, key=lambda w: w[2] - w[1])
                window = (w[1] - WINDOW_BEFORE_S, w[1] - WINDOW_BEFORE_S + WINDOW_S)
    keep = []
    for line in lines:
        f = line.split()
        if len(f) < 3:
            continue
        try:
            tid, t = int(f[1]), float(f[2].rstrip(":"))
        except ValueError:
            continue
        if tid == wtid or (window and window[0] <= t <= window[1]):
            keep.append(line)
    return "\n".join(keep) + "\n", {"writer_tid": wtid, "t0": round(window[0], 6), "t1": round(window[1], 6)} if window else None


def main(argv):
    label = load = None
    notes, rundir = [], None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(USAGE)
            return 0
        if a in ("--label", "--load", "--note"):
            if not args:
                sys.stderr.write("%s: %s needs a text\n%s\n" % (PROG, a, USAGE))
                return 2
            v = args.pop(0)
            if a == "--label":
                label = v
            elif a == "--load":
                load = v
            else:
                notes.append(v)
        elif a.startswith("-") or rundir:
            sys.stderr.write("%s: unexpected argument '%s'\n%s\n" % (PROG, a, USAGE))
            return 2
        else:
            rundir = a
    if not rundir or not os.path.isdir(rundir):
        sys.stderr.write("%s: need a tools-agree run directory\n%s\n" % (PROG, USAGE))
        return 2
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rundir = os.path.abspath(rundir)
    name = os.path.basename(rundir.rstrip("/"))
    meta = json.load(open(os.path.join(rundir, "meta.json")))
    if meta.get("quick") or name.endswith("-quick"):
        sys.stderr.write("%s: error: %s is a --quick run: its numbers are not measurements\n" % (PROG, name))
        return 1
    bad = [c for c, v in meta.get("cases", {}).items() if v.get("rc") != 0]
    if bad or not meta.get("cases"):
        sys.stderr.write("%s: error: %s: case(s) %s did not complete: not copied\n" % (PROG, name, ", ".join(bad) or "?"))
        return 1
    run = name[len("tools-agree-"):] if name.startswith("tools-agree-") else name
    dest = os.path.join(top, "reference", "tools-agree", run)
    if os.path.exists(dest):
        print("%s: reference/tools-agree/%s exists: left as it is" % (PROG, run))
        return 0
    agree = load_agree(top)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-" + run + "-", dir=os.path.dirname(dest))
    files, dropped, window = [], [], None
    def out(fname, data, mode="w"):
        with open(os.path.join(tmp, fname), mode) as f:
            f.write(data)
        files.append(fname)
    shutil.copyfile(os.path.join(rundir, "agree.jsonl"), os.path.join(tmp, "tools-agree.jsonl"))
    shutil.copyfile(os.path.join(rundir, "summary.md"), os.path.join(tmp, "tools-agree.md"))
    shutil.copyfile(os.path.join(rundir, "meta.json"), os.path.join(tmp, "meta.json"))
    files += ["tools-agree.jsonl", "tools-agree.md", "meta.json"]
    for case in meta["cases"]:
        src = os.path.join(rundir, "agree-%s.jsonl" % case)
        recs, tfiles = agree.read_case(src)
        kept, tool_lines = [], []
        for raw in open(src, encoding="utf-8", errors="replace"):
            i = raw.find("{")
            r = None
            if i >= 0:
                try:
                    r = json.loads(raw[i:])
                except ValueError:
                    r = None
            if isinstance(r, dict) and r.get("type") == "file":
                continue
            if isinstance(r, dict) and r.get("type") == "tool":
                tool_lines.append(r.get("line", ""))
            kept.append(raw if raw.endswith("\n") else raw + "\n")
        out("agree-%s.jsonl" % case, "".join(kept))
        if tool_lines:
            out("agree-%s.tool.txt" % case, "\n".join(tool_lines) + "\n")
        for fname, text in sorted(tfiles.items()):
            if text is None:
                continue
            if case == "steal" and fname == "perf-script.gz":
                slim, window = slim_perf_script(agree, recs, text)
                if slim is None:
                    sys.stderr.write("%s: error: %s: no writer waits in the perf script\n" % (PROG, name))
                    shutil.rmtree(tmp)
                    return 1
                dropped.append("`perf script`'s lines of every other thread outside the window "
                               "(%d of %d lines kept)" % (slim.count("\n"), text.count("\n") + 1))
                text = slim
            out("agree-%s.%s" % (case, fname), gzip.compress(text.encode(), 9, mtime=0), "wb")
            if fname == "trace-report.gz":   # the first lines, for a listing
                out("agree-%s.trace-report.head.txt" % case, "\n".join(text.split("\n")[:HEAD_LINES]) + "\n")
        for extra in ("agree-%s.meta.json" % case, "console-agree-%s.log" % case):
            if os.path.exists(os.path.join(rundir, extra)):
                shutil.copyfile(os.path.join(rundir, extra), os.path.join(tmp, extra))
                files.append(extra)
    # The copy must give the run's own comparisons.
    chk = tempfile.mkdtemp(prefix=".chk-", dir=os.path.dirname(dest))
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        saved = sys.argv
        sys.argv = ["agree.py", tmp, chk]
        agree.main()
        sys.argv = saved
    same = open(os.path.join(chk, "agree.jsonl")).read() == open(os.path.join(tmp, "tools-agree.jsonl")).read()
    shutil.rmtree(chk)
    if not same:
        sys.stderr.write("%s: error: %s: agree.py on the copy does not give the run's agree.jsonl\n" % (PROG, name))
        shutil.rmtree(tmp)
        return 1
    if window:
        out("agree-steal.window.json", json.dumps(window) + "\n")
    steal = next((json.load(open(os.path.join(rundir, "agree-%s.meta.json" % c)))
                  for c in meta["cases"] if os.path.exists(os.path.join(rundir, "agree-%s.meta.json" % c))), {})
    host = steal.get("host", {})
    lines = ["# Reference run %s: tools-agree" % run, "",
             "A `make tools-agree` run copied by `make reference`; the book quotes it by "
             "experiment, run and field.", ""]
    kv = [("Experiment", "`tools-agree`"), ("Run", run)]
    if label:
        kv.append(("Label", label))
    kv += [("Date", str(steal.get("started", "?"))), ("Commit", "%s (the run's)" % meta.get("commit", "?")),
           ("Machine", ", ".join(x for x in (host.get("cpu"), host.get("cpus") and "%s CPUs" % host["cpus"],
                                             host.get("kernel") and "Linux " + host["kernel"]) if x)),
           ("Kernel release", str(steal.get("kernel_release", "?")) + " (patched; split: debug)"),
           ("QEMU", str(steal.get("qemu", "?"))),
           ("Accelerator", str(steal.get("accel", "?")).upper() + (", -cpu " + steal["cpu"] if steal.get("cpu") else "")),
           ("Guest", "%s vCPUs, %s MiB" % (steal.get("vcpus"), steal.get("mem_mib"))),
           ("Host load", load or meta.get("host_load", "?")),
           ("Status", "ok (%s)" % ", ".join("%s %s s" % (c, v.get("seconds")) for c, v in meta["cases"].items())),
           ("Files", ", ".join("`%s`" % f for f in files))]
    lines += ["- %s: %s" % (k, v) for k, v in kv]
    lines += ["", "Left out of the copy: the tools' file records in `agree-CASE.jsonl` (kept "
              "gzip'd as `agree-CASE.NAME`), and %s. `labs/kernel/tools/agree.py` on this "
              "directory gives `tools-agree.jsonl` again." % "; ".join(dropped or ["nothing else"])]
    if window:
        lines += ["", "The window of every thread's lines: %.6f to %.6f s (CLOCK_MONOTONIC in the "
                  "guest), the writer thread is tid %d." % (window["t0"], window["t1"], window["writer_tid"])]
    if notes:
        lines += [""] + notes
    with open(os.path.join(tmp, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o755)
    os.rename(tmp, dest)
    print("%s: reference/tools-agree/%s (%s)" % (PROG, run, ", ".join(files)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
