#!/usr/bin/env python3
"""Lab 08's grader: an answer file against the seed and against the run.

Usage: grade.py [--src DIR] [--answer FILE] [--run FILE] [--tap=FILE] [-jN]
  --src DIR     the work folder: DIR/answer.txt and DIR/run.jsonl
                (default: the lab's src/, the reference answer)
  --answer, --run   the two files directly
  --tap=FILE    also write TAP (what labs/tools/grade reads)
  -jN, --verbose   accepted (labs/tools/grade passes them) and ignored
Prints one line per test and a score; exit 0 when every test passed, 1
otherwise, 2 usage. Needs no guest: the run file (diag.sh run) holds what
the guest printed.

Tests (todoN_ tests check the answer file's TODO N region):
  run_is_complete              the run has its info, before and after records
  run_is_this_answers_seed     the answer's seed is the run's
  todo1_culprit                culprit: the seed's culprit
  todo1_process                process: the comm of the task that holds the lock
  todo1_lock                   lock: the lock the victim waits for
  todo2_perf_shows_the_victim_waiting
                               an "evidence: perf contended=N max_wait=X ms" line
                               whose numbers are a row of the run's
                               `perf lock contention -t` output, the victim's
  todo2_trace_shows_the_holder an "evidence: trace-cmd holder=COMM holds=N
                               max_hold=X ms" line that the run's trace.txt
                               bears out: COMM's read holds of the victim's
                               mmap_lock (N within 2 %, X within 2 % or 0.05 ms),
                               COMM the answer's process
  todo3_switch                 switch: the switch that relieves this culprit
  todo3_run_used_the_switch    the run's after phase set the answer's switch
  todo3_latency_dropped        with the answer's switch, the run's after p99 is at
                               most half its before p99
  todo3_latency_matches_run    before_p99_ms and after_p99_ms are the run's (2 %)
"""
import base64
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenario  # noqa: E402

LOCKS = {"mmap_lock", "mm->mmap_lock", "&mm->mmap_lock", "mmap_sem"}
# Values each switch may take to count as on (khugepaged_skip_batch: a batch).
ON = {"smaps_rollup_vma_lock": {"1"}, "access_remote_vm_vma_lock": {"1"},
      "uprobe_speculate": {"1"}, "rwsem_steal_policy": {"1"}}


def parse_answer(path):
    """{key: value} (evidence: a list); marker and comment lines skipped."""
    a = {"evidence": []}
    for raw in open(path, errors="replace"):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("/*"):
            continue
        m = re.match(r"^([a-z0-9_]+)\s*:\s*(.*)$", line)
        if not m:
            continue
        k, v = m.group(1), m.group(2).strip()
        if k == "evidence":
            a["evidence"].append(v)
        else:
            a[k] = v
    return a


def parse_run(path):
    recs, files = [], {}
    text = open(path, "rb").read().decode("utf-8", "replace").replace("\r", "")
    for raw in text.split("\n"):
        raw = raw.strip("\0").strip()
        if not raw.startswith("{"):
            continue
        try:
            r = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(r, dict):
            continue
        if r.get("type") == "file" and "base64" in r:
            try:
                files[r["name"]] = gzip.decompress(base64.b64decode(r["base64"])).decode("utf-8", "replace")
            except (ValueError, OSError):
                files[r["name"]] = None
            continue
        recs.append(r)
    return recs, files


def probe_lines(recs):
    return [r["line"] for r in recs if r.get("type") == "tool" and r.get("tool") == "probe"
            and r.get("stream") == "out"]


def kv(text):
    """'a=1 b=2.5 ms' -> {'a': '1', 'b': '2.5'}"""
    return dict(re.findall(r"(\w+)=([^\s]+)", text))


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def perf_rows(lines):
    """`perf lock contention -t` rows: (contended, max wait in ms, pid, comm)."""
    unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    rows, header = [], False
    for l in lines:
        if re.match(r"^\s*contended\s+total wait", l):
            header = True
            continue
        m = re.match(r"^\s*(\d+)\s+([\d.]+)\s+(ns|us|ms|s)\s+([\d.]+)\s+(ns|us|ms|s)\s+([\d.]+)\s+(ns|us|ms|s)"
                     r"\s+(\d+)\s+(\S+)\s*$", l)
        if header and m:
            rows.append((int(m.group(1)), float(m.group(4)) * unit[m.group(5)], m.group(4) + " " + m.group(5),
                         int(m.group(8)), m.group(9)))
    return rows


# "[INSTANCE:]  COMM-PID [CPU] SECONDS: EVENT: FIELDS" (trace-cmd report -t)
TRACE_RE = re.compile(r"^\s*(?:[\w.]+:\s+)?(.+?)-(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+(mmap_lock_\w+):\s+(.*)$")


def holders(trace, victim_pid):
    """{comm: [hold in ms, ...]}: read holds of the victim's mm; and its mm."""
    lines = []
    for l in trace.split("\n"):
        m = TRACE_RE.match(l)
        if m:
            lines.append((m.group(1).strip(), int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)))
    mm = None
    for comm, pid, t, ev, rest in lines:
        if pid == victim_pid and ev == "mmap_lock_acquire_returned" and "write=true" in rest:
            mm = kv(rest).get("mm")
            break
    out, held = {}, {}
    for comm, pid, t, ev, rest in lines:
        f = kv(rest)
        if f.get("mm") != mm or f.get("write") != "false":
            continue
        if ev == "mmap_lock_acquire_returned" and f.get("success") == "true":
            held[pid] = t
        elif ev == "mmap_lock_released" and pid in held:
            out.setdefault(comm, []).append((t - held.pop(pid)) * 1e3)
    return out, mm


def grade(answer_path, run_path):
    tests = []

    def test(name, ok, why=""):
        tests.append((name, bool(ok), "" if ok else why))

    a = parse_answer(answer_path) if os.path.exists(answer_path) else {"evidence": []}
    if not os.path.exists(run_path):
        recs, files = [], {}
    else:
        recs, files = parse_run(run_path)
    info = next((r for r in recs if r.get("type") == "diagnosis_info"), None)
    ph = {r.get("phase"): r for r in recs if r.get("type") == "diagnosis_phase"}
    test("run_is_complete", info and "before" in ph and "after" in ph,
         "%s has no diagnosis_info or no before/after record: make the run again (diag.sh run)" % run_path)
    seed = info.get("seed") if info else None
    try:
        aseed = int(a.get("seed", ""))
    except ValueError:
        aseed = None
    test("run_is_this_answers_seed", seed is not None and aseed == seed,
         "the answer's seed is %s, the run's %s" % (a.get("seed"), seed))
    s = scenario.scenario(seed) if seed is not None else None

    # TODO 1
    test("todo1_culprit", s and a.get("culprit") == s["culprit"],
         "culprit: %r is not what holds the victim up (one of %s)" % (a.get("culprit"), ", ".join(scenario.ANSWERS)))
    proc = a.get("process", "")
    test("todo1_process", s and proc == s["process"],
         "process: %r is not the comm of the task that holds the victim's mmap_lock" % proc)
    test("todo1_lock", a.get("lock") in LOCKS, "lock: %r is not the lock the victim waits for" % a.get("lock"))

    # TODO 2
    victim = info.get("victim_pid") if info else None
    rows = perf_rows(probe_lines(recs))
    perf_ev = [kv(e) for e in a["evidence"] if e.split()[:1] == ["perf"]]
    ok, why = False, "no 'evidence: perf contended=N max_wait=X ms' line"
    for e in perf_ev:
        n, w = num(e.get("contended")), e.get("max_wait")
        match = [r for r in rows if r[0] == n and w is not None and r[2].split()[0] == w]
        if not match:
            why = "no row of the run's 'perf lock contention -t' output has contended %s and max wait %s ms" % (
                e.get("contended"), w)
        elif not any(r[3] == victim or r[4] == "victim" for r in match):
            why = "that row (%s) is not the victim's (pid %s)" % (match[0][4], victim)
        else:
            ok = True
            break
    test("todo2_perf_shows_the_victim_waiting", ok, why)
    tr_ev = [kv(e) for e in a["evidence"] if e.split()[:1] == ["trace-cmd"]]
    trace = files.get("trace.txt.gz")
    ok, why = False, "no 'evidence: trace-cmd holder=COMM holds=N max_hold=X ms' line"
    if tr_ev and trace is None:
        why = "the run has no trace.txt (probe.sh must leave trace-cmd report's output in trace.txt)"
    elif tr_ev:
        hs, mm = holders(trace, victim)
        for e in tr_ev:
            h, n, x = e.get("holder"), num(e.get("holds")), num(e.get("max_hold"))
            got = hs.get(h)
            if not got:
                why = "%s holds no read lock on the victim's mm (%s) in trace.txt; holders there: %s" % (
                    h, mm, ", ".join(sorted(hs)) or "none")
            elif n is None or abs(len(got) - n) > 0.02 * len(got) + 1:
                why = "trace.txt has %d read holds by %s, the answer %s" % (len(got), h, e.get("holds"))
            elif x is None or abs(max(got) - x) > max(0.05, 0.02 * max(got)):
                why = "%s's longest hold in trace.txt is %.2f ms, the answer %s" % (h, max(got), e.get("max_hold"))
            elif h != proc:
                why = "the holder %s is not the answer's process %r" % (h, proc)
            else:
                ok = True
                break
    test("todo2_trace_shows_the_holder", ok, why)

    # TODO 3
    sw = a.get("switch", "")
    want = s["switch"] if s else None
    items = dict(i.split("=", 1) for i in sw.split(",") if "=" in i)
    good = False
    if want:
        name = want.split("=", 1)[0]
        v = items.get(name)
        if name == "khugepaged_skip_batch":
            good = v is not None and v.isdigit() and 1 <= int(v) <= 4096
        else:
            good = v in ON[name]
        # Other switches may come along only at their on values.
        good = good and all(k == name or (k in ON and x in ON[k]) or
                            (k == "khugepaged_per_slot_cursor" and x == "1") for k, x in items.items())
    test("todo3_switch", good, "switch: %r does not relieve this culprit" % sw)
    after = ph.get("after", {})
    test("todo3_run_used_the_switch", sw and after.get("switch") == sw,
         "the run's after phase set %r, the answer names %r: make the run again with this answer" % (
             after.get("switch"), sw))
    b99, a99 = ph.get("before", {}).get("victim_p99_us"), after.get("victim_p99_us")
    test("todo3_latency_dropped", sw and b99 and a99 is not None and a99 <= b99 / 2,
         "no switch in the answer" if not sw else
         "the run's victim p99: before %s us, after %s us: not halved" % (b99, a99))
    ab, aa = num(a.get("before_p99_ms")), num(a.get("after_p99_ms"))
    test("todo3_latency_matches_run",
         b99 and a99 is not None and ab is not None and aa is not None and
         abs(ab - b99 / 1e3) <= 0.02 * b99 / 1e3 + 0.01 and abs(aa - a99 / 1e3) <= 0.02 * a99 / 1e3 + 0.01,
         "before_p99_ms %s, after_p99_ms %s; the run's: %.2f, %.2f" % (
             a.get("before_p99_ms"), a.get("after_p99_ms"), (b99 or 0) / 1e3, (a99 or 0) / 1e3))
    return tests


def main(argv):
    src, answer, run, tap = None, None, None, None
    it = iter(argv)
    for x in it:
        if x in ("-h", "--help"):
            print(__doc__.split("\n", 2)[2])
            return 0
        if x == "--src":
            src = next(it, None)
        elif x == "--answer":
            answer = next(it, None)
        elif x == "--run":
            run = next(it, None)
        elif x.startswith("--tap="):
            tap = x[6:]
        elif x == "--verbose":
            pass        # labs/tools/grade asks for Criterion's per-test log; each line here names its test already
        elif re.match(r"^-j\d+$", x):
            pass
        else:
            sys.stderr.write("grade.py: unknown argument '%s'\n" % x)
            sys.stderr.write(__doc__.split("\n", 2)[2])
            return 2
    src = src or os.path.join(os.path.dirname(HERE), "src")
    answer = answer or os.path.join(src, "answer.txt")
    run = run or os.path.join(src, "run.jsonl")
    tests = grade(answer, run)
    for name, ok, why in tests:
        print("[%s] %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + why))
    passed = sum(1 for _, ok, _ in tests if ok)
    print("Synthesis: Tested: %d | Passing: %d | Failing: %d" % (len(tests), passed, len(tests) - passed))
    if tap:
        with open(tap, "w") as f:
            f.write("TAP version 13\n1..%d\n" % len(tests))
            for i, (name, ok, why) in enumerate(tests, 1):
                f.write("%s - diagnosis::%s\n" % ("ok" if ok else "not ok", name))
                if not ok:
                    f.write("  %s\n" % why)
    return 0 if passed == len(tests) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
