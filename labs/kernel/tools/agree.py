#!/usr/bin/env python3
"""Compare a chapter's own instrument with a standard tool in the same run.

Reads the agree-*.jsonl files of a `make tools-agree` run directory (what
labs/kernel/tools/agree printed in the guest: the program's records, each
after a stamp record, and the tool's data as gzip'd file records) and writes
agree.jsonl (one record per comparison) and summary.md there.

  agree-steal  chapter 1: smaps_steal's writer latency per position against
               the writer's mmap_lock waits in `perf lock record`'s
               lock:contention_begin/end
  agree-hold   chapter 2: khugepaged_hold's longest holds (mg_trace) against
               the same holds in trace-cmd's mmap_lock events
  agree-cost   chapter 8: smaps_steal alone and under perf and trace-cmd,
               what the tools cost the program they watch
  agree-split  chapter 7, debug kernel: deferred_split's
               deferred_split_lock_taken per cell against /proc/lock_stat's
               split_queue_lock and the lock:lock_contended /
               lock:contention_begin events
"""
import base64
import gzip
import json
import os
import re
import sys
from collections import Counter, defaultdict

USAGE = """usage: labs/kernel/tools/agree.py RUNDIR [OUTDIR]

Writes OUTDIR/agree.jsonl and OUTDIR/summary.md (OUTDIR defaults to RUNDIR)
from RUNDIR/agree-*.jsonl and prints the summary. A tool's file that is not
a record in agree-CASE.jsonl is read from agree-CASE.NAME beside it (a
committed reference run keeps them there, gzip'd).

Exit: 0 every comparison agreed (or had nothing to
compare), 1 one disagreed or a case's data is missing, 2 usage."""


def pct(vals, p):
    """Nearest rank, as the guest programs' mg_lat_pct()."""
    if not vals:
        return 0.0
    v = sorted(vals)
    r = p / 100.0 * len(v)
    rank = int(r)
    if rank < r:
        rank += 1
    rank = min(max(rank, 1), len(v))
    return v[rank - 1]


def read_case(path):
    """Records in order; each program record gets the stamp before it (t_s)."""
    recs, files, last = [], {}, None
    with open(path, "rb") as f:
        for raw in f.read().decode("utf-8", "replace").replace("\r", "").split("\n"):
            raw = raw.strip("\0").strip()
            if not raw.startswith("{"):
                continue
            try:
                r = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(r, dict):
                continue
            t = r.get("type")
            if t == "stamp":
                last = r["t_mono_ns"] / 1e9
                continue
            if t == "file" and "base64" in r:
                try:
                    files[r["name"]] = gzip.decompress(base64.b64decode(r["base64"])).decode("utf-8", "replace")
                except (ValueError, OSError):
                    files[r["name"]] = None
                continue
            r["_t"] = last
            last = None
            recs.append(r)
    # A reference run keeps the tools' files beside the records.
    d, base = os.path.split(path)
    stem = base[:-len(".jsonl")] + "."
    for name in sorted(os.listdir(d or ".")):
        if name.startswith(stem) and name.endswith(".gz") and name[len(stem):] not in files:
            with open(os.path.join(d, name), "rb") as f:
                files[name[len(stem):]] = gzip.decompress(f.read()).decode("utf-8", "replace")
    return recs, files


def fmt(v, d=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*f" % (d, v)
    return str(v)


# ---- chapter 1 -----------------------------------------------------------------
PERF_RE = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+lock:contention_(begin|end):\s+(0x[0-9a-f]+)\s+\((?:flags|ret)=([^)]*)\)")
PERF_MM_RE = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+mmap_lock:mmap_lock_(start_locking|acquire_returned|released):\s+(.*)$")


def p99_verdict(L, T, B):
    """Program's p99 latency L against a tool's p99 T, baseline p99 B."""
    if L < 2 * B:
        return "n/a (p99 within 2x the baseline's)", True
    good = T <= 1.1 * L and L - T <= B + 0.1 * L
    return ("agree" if good else "DISAGREE"), good


def steal(recs, files, out, md):
    text = files.get("perf-script.gz")
    end = [r for r in recs if r.get("type") == "end"]
    if text is None:
        md.append("**agree-steal: no perf script data** (the tool or the transfer failed).\n")
        return False
    waits, open_, acqs, start, held = [], {}, [], {}, {}
    for line in text.split("\n"):
        m = PERF_RE.match(line)
        if m:
            comm, tid, t, kind, addr, arg = m.group(1).strip(), int(m.group(2)), float(m.group(3)), m.group(4), m.group(5), m.group(6)
            if kind == "begin":
                open_[tid] = (t, addr, arg, comm)
            elif tid in open_:
                t0, a0, flags, c0 = open_.pop(tid)
                waits.append({"tid": tid, "comm": c0, "t0": t0, "t1": t, "addr": a0, "flags": flags, "ret": arg})
            continue
        m = PERF_MM_RE.match(line)
        if not m:
            continue
        tid, t, kind = int(m.group(2)), float(m.group(3)), m.group(4)
        if kind == "released":
            # The end of a write acquisition's hold: its release, or, for
            # munmap(), which downgrades, the read release after it.
            if held.get(tid) and (not held[tid].get("down") or "write=false" in m.group(5)):
                a = held.pop(tid)
                a["t2"] = t
            continue
        if "write=true" not in m.group(5):
            if kind == "acquire_returned" and tid in held:
                held[tid]["down"] = True      # mmap_write_downgrade()
            continue
        if kind == "start_locking":
            start[tid] = t
        elif tid in start and "success=true" in m.group(5):
            a = {"tid": tid, "t0": start.pop(tid), "t1": t}
            acqs.append(a)
            held[tid] = a
    wr = [w for w in waits if "WRITE" in w["flags"] and w["comm"] == "smaps_steal"]
    lock = Counter(w["addr"] for w in wr).most_common(1)
    lock = lock[0][0] if lock else None
    wr = [w for w in wr if w["addr"] == lock]
    wtid = Counter(w["tid"] for w in wr).most_common(1)
    wtid = wtid[0][0] if wtid else None
    acqs = [a for a in acqs if a["tid"] == wtid]
    info = next((r for r in recs if r.get("type") == "info" and "seconds_per_position" in r), {})
    blocks = [r for r in recs if r.get("type") == "block"]
    prev_t = None
    for r in recs:
        if r.get("type") == "info" and "small_vmas_mapped" in r:
            prev_t = r["_t"]
    rows, ok = [], True
    base = {b["block"]: b for b in blocks if b.get("baseline")}
    for b in blocks:
        # The program sleeps 200 ms after switching the policy before it
        # counts, and prints the block 50 ms after it stops counting.
        t_end = b["_t"] - 0.05
        t_start = (prev_t or (t_end - info.get("seconds_per_position", 1))) + 0.2
        prev_t = b["_t"]
        ws = [(w["t1"] - w["t0"]) * 1e6 for w in wr if w["t0"] >= t_start and w["t1"] <= t_end]
        ac = [(a["t1"] - a["t0"]) * 1e6 for a in acqs if a["t0"] >= t_start and a["t1"] <= t_end]
        sp = [(a["t2"] - a["t0"]) * 1e6 for a in acqs if "t2" in a and a["t0"] >= t_start and a["t2"] <= t_end]
        calls = b.get("writer_calls", 0)
        per_call = ws + [0.0] * max(0, calls - len(ws))
        pos = "baseline" if b.get("baseline") else "policy %d" % b["rwsem_steal_policy"]
        rec = {"type": "agree", "case": "steal", "block": b["block"], "position": pos,
               "window_s": round(t_end - t_start, 3),
               "program_writer_calls": calls, "program_p50_us": b.get("writer_p50_us"),
               "program_p99_us": b.get("writer_p99_us"), "program_max_us": b.get("writer_max_us"),
               "tool_acquisitions": len(ac), "tool_acquire_p50_us": round(pct(ac, 50), 1),
               "tool_acquire_p99_us": round(pct(ac, 99), 1), "tool_acquire_max_us": round(max(ac), 1) if ac else 0.0,
               "tool_span_p99_us": round(pct(sp, 99), 1), "tool_span_max_us": round(max(sp), 1) if sp else 0.0,
               "tool_waits": len(ws), "tool_wait_p50_us": round(pct(per_call, 50), 1),
               "tool_wait_p99_us": round(pct(per_call, 99), 1), "tool_wait_max_us": round(max(ws), 1) if ws else 0.0,
               "tool_wait_total_ms": round(sum(ws) / 1000, 2),
               "lockev_rwsem_sleep_writer": b.get("rwsem_sleep_writer")}
        bl = base.get(b["block"])
        if b.get("baseline") or not bl:
            rec["verdict_acquire"] = rec["verdict_wait"] = rec["verdict_span"] = "n/a"
        else:
            L, B = b["writer_p99_us"], bl["writer_p99_us"]
            rec["baseline_p99_us"] = B
            rec["verdict_acquire"], g1 = p99_verdict(L, rec["tool_acquire_p99_us"], B)
            rec["verdict_wait"], _ = p99_verdict(L, rec["tool_wait_p99_us"], B)
            rec["verdict_span"], _ = p99_verdict(L, rec["tool_span_p99_us"], B) if sp else ("n/a", True)
            ok &= g1
        out.append(rec)
        rows.append(rec)
    md.append("## Chapter 1: the writer's wait, perf vs smaps_steal\n")
    md.append("`perf lock record -k mono` (plus `mmap_lock:mmap_lock_start_locking` and `_acquire_returned`) "
              "around `smaps_steal`, cut at the program's block records (stamped with the same clock). "
              "The writer thread (tid %s): *acquire* is each mmap_lock write acquisition, "
              "start_locking to acquire_returned, one per mmap() or munmap() call as the program times them; "
              "*wait* is `perf lock contention`'s measure, lock:contention_begin to contention_end (lock %s), "
              "with zero for each call that did not wait. It starts after the writer's optimistic spin "
              "(rwsem_down_write_slowpath() spins first). A call's latency is its acquisition plus its work, "
              "so the verdict (on *acquire*) asks that the tool's p99 be at most 1.1x the program's and "
              "short of it by at most the baseline's p99 plus 10 %%; positions whose p99 is within twice the "
              "baseline's have no wait to compare.\n" % (wtid, lock))
    md.append("*Span* adds the hold: start_locking to the release (for munmap(), which downgrades, the read "
              "release after the downgrade); what a call spends outside it is its own work before and after.\n")
    md.append("| position | calls / acquisitions | p99 latency (program) | p99 acquire / span | p99 wait (perf lock) | max latency / acquire / wait | verdict (acquire; span; wait) |")
    md.append("|---|---|---:|---:|---:|---|---|")
    for r in rows:
        md.append("| %s (block %d) | %d / %d | %s us | %s / %s us | %s us | %s / %s / %s us | %s; %s; %s |" % (
            r["position"], r["block"], r["program_writer_calls"], r["tool_acquisitions"], fmt(r["program_p99_us"]),
            fmt(r["tool_acquire_p99_us"]), fmt(r["tool_span_p99_us"]), fmt(r["tool_wait_p99_us"]),
            fmt(r["program_max_us"]), fmt(r["tool_acquire_max_us"]), fmt(r["tool_wait_max_us"]),
            r["verdict_acquire"], r["verdict_span"], r["verdict_wait"]))
    tbl = [r for r in recs if r.get("type") == "tool" and r.get("tool") == "perf lock contention" and r.get("stream") == "out"]
    if tbl:
        md.append("\n`perf lock contention` over the whole run (all positions):\n")
        md.append("```")
        md.extend(r["line"] for r in tbl)
        md.append("```")
    md.append("")
    return ok and bool(rows) and all(e.get("rc") == 0 for e in end)


# ---- trace-cmd report lines ----------------------------------------------------
TRACE_RE = re.compile(r"^(?:\S+:)?\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\w+):\s+(.*)$")


def trace_lines(text):
    for line in text.split("\n"):
        m = TRACE_RE.match(line)
        if m:
            yield {"comm": m.group(1).strip(), "pid": int(m.group(2)), "cpu": int(m.group(3)),
                   "t": float(m.group(4)), "ev": m.group(5), "rest": m.group(6)}


def markers(events):
    out = []
    for e in events:
        if e["ev"] == "print":
            m = re.search(r"mmlocks (.*)$", e["rest"])
            if m:
                out.append((e["t"], m.group(1).strip()))
    return out


# ---- chapter 2 -----------------------------------------------------------------
# A hold the program reports must be one the tool saw: the closest of the
# tool's holds within 10 us + 0.1 %. mg_trace reads trace_pipe's text, whose
# timestamps have microseconds, and prints whole microseconds; and the two
# buffers are written one after the other by the same tracepoint, each with
# its own clock read (the summary gives the mean offset).
def close_to(v, hs):
    best = min(hs, key=lambda d: abs(d - v)) if hs else None
    return best if best is not None and abs(best - v) <= 10 + 0.001 * v else None


def hold(recs, files, out, md):
    text = files.get("trace-report.gz")
    if text is None:
        md.append("**agree-hold: no trace-cmd data** (the tool or the transfer failed).\n")
        return False
    ainfo = next((r for r in recs if r.get("type") == "agree_info"), {})
    kpid = ainfo.get("khugepaged_pid")
    ev = list(trace_lines(text))
    holds, cur = [], None
    for e in ev:
        if e["pid"] != kpid or "write=false" not in e["rest"]:
            continue
        if e["ev"] == "mmap_lock_acquire_returned" and "success=true" in e["rest"]:
            cur = e["t"]
        elif e["ev"] == "mmap_lock_released" and cur is not None:
            holds.append((cur, (e["t"] - cur) * 1e6))
            cur = None
    # Segments: a burst of knob marks (within 20 ms) starts a configuration.
    mk = markers(ev)
    state, segs, t_burst = {}, [], None
    # The last configuration ends where the program restores its knobs.
    end_t = min([t for t, m in mk if m in ("restore", "agree end")] or [ev[-1]["t"] if ev else 0])
    for t, m in mk:
        mm = re.match(r"knob (\w+)=(\S+)", m)
        if not mm:
            continue
        state[mm.group(1)] = int(mm.group(2))
        if t_burst is None or t - t_burst > 0.02:
            segs.append({"t0": t})
        t_burst = t
        segs[-1]["state"] = dict(state)
    for i, s in enumerate(segs):
        s["t1"] = segs[i + 1]["t0"] if i + 1 < len(segs) else end_t
        st = s["state"]
        sb, cur_, pol = st.get("khugepaged_skip_batch"), st.get("khugepaged_per_slot_cursor"), st.get("rwsem_steal_policy")
        s["config"] = ("stock" if sb == 0 and cur_ == 0 and pol == 0 else
                       "batch-nosteal" if sb and pol == 1 else "batch-steal" if sb and pol == 0 else "other")
    ok, rows = True, []
    for smp in [r for r in recs if r.get("type") == "sample" and r.get("experiment") == "khugepaged-hold"]:
        cfg = smp["config"]
        hs = [d for s in segs if s["config"] == cfg for (t, d) in holds if s["t0"] <= t < s["t1"]]
        want = smp.get("longest_holds_us") or []
        match = [close_to(v, hs) for v in want]
        found = [m is not None for m in match]
        offs = [v - m for v, m in zip(want, match) if m is not None]
        tmax = max(hs) if hs else 0.0
        pmax = smp.get("max_hold_us", 0)
        good = bool(hs) and all(found) and tmax >= pmax - (10 + 0.001 * pmax)
        ok &= good
        rec = {"type": "agree", "case": "hold", "config": cfg,
               "program_max_hold_us": smp.get("max_hold_us"), "program_longest_holds_us": want,
               "program_read_holds": smp.get("read_holds"), "tool_holds": len(hs),
               "tool_max_hold_us": round(tmax, 1), "tool_top5_us": [round(d, 1) for d in sorted(hs)[-5:]],
               "program_holds_found": sum(found),
               "mean_offset_us": round(sum(offs) / len(offs), 1) if offs else None,
               "verdict": "agree" if good else "DISAGREE"}
        out.append(rec)
        rows.append(rec)
    md.append("## Chapter 2: khugepaged's longest holds, trace-cmd vs mg_trace\n")
    md.append("`trace-cmd record -B mmlocks_agree -C mono` of khugepaged's (pid %s) "
              "`mmap_lock_acquire_returned`/`mmap_lock_released` (read, success) while `khugepaged_hold` "
              "traces the same events through the top-level buffer (mg_trace). The program marks each "
              "configuration in the tool's instance (MMLOCKS_MARK). Agree when each of the program's five "
              "longest holds of a configuration is a hold the tool saw (the closest within 10 us + 0.1 %%; "
              "*offset* is the mean of program minus tool over those five) and the tool's longest is not "
              "shorter than the program's. The tool sees every hold of the configuration's stretch; "
              "the program keeps those of its complete scans, so the tool's count and its longest may be "
              "larger.\n" % kpid)
    md.append("| configuration | longest hold (program) | longest hold (trace-cmd) | program's top 5 found | offset | holds (program / tool) | verdict |")
    md.append("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        md.append("| %s | %s us | %s us | %d of %d | %s us | %s / %d | %s |" % (
            r["config"], fmt(r["program_max_hold_us"]), fmt(r["tool_max_hold_us"]), r["program_holds_found"],
            len(r["program_longest_holds_us"]), fmt(r["mean_offset_us"]), fmt(r["program_read_holds"]),
            r["tool_holds"], r["verdict"]))
    md.append("")
    end = [r for r in recs if r.get("type") == "end"]
    return ok and bool(rows) and all(e.get("rc") == 0 for e in end)


# ---- chapter 7 -----------------------------------------------------------------
LS_RE = re.compile(r"lock_stat\s+\S*split_queue_lock:\s+(.*)$")


def split(recs, files, out, md):
    text = files.get("trace-report.gz")
    if text is None:
        md.append("**agree-split: no trace-cmd data** (the tool or the transfer failed; it needs the debug kernel).\n")
        return False
    ev = list(trace_lines(text))
    mk = markers(ev)
    snaps = []          # (t, contentions, acquisitions, waittime_total_us)
    cells = []          # knob mark times
    end_t = None
    for t, m in mk:
        ls = LS_RE.search("mmlocks " + m)
        if ls:
            n = [float(x) for x in ls.group(1).split()]
            snaps.append((t, n[1], n[7], n[4]))
        elif m.startswith("knob deferred_split_early_check="):
            cells.append((t, int(m.split("=")[1])))
        elif m == "agree end":
            end_t = t
    # The split_queue_lock's address: the contention_begin that follows a
    # lock_contended of the same task (lock_contended names the class).
    # lock_contended gives the address of the lock's lockdep_map, which
    # sits inside the spinlock, a few words after the lock word that
    # contention_begin names: the contention_begin address at most 64
    # bytes below it.
    lc_addrs = Counter(int(e["rest"].split()[0], 16) for e in ev
                       if e["ev"] == "lock_contended" and "split_queue_lock" in e["rest"])
    cb_addrs = Counter(e["rest"].split()[0] for e in ev if e["ev"] == "contention_begin")
    near = [a for a in cb_addrs if any(0 <= m - int(a, 16) <= 64 for m in lc_addrs)]
    addr = max(near, key=lambda a: cb_addrs[a]) if near else None
    cb = [e for e in ev if e["ev"] == "contention_begin" and addr and e["rest"].split()[0] == addr]
    lc = [e for e in ev if e["ev"] == "lock_contended" and "split_queue_lock" in e["rest"]]
    samples = [r for r in recs if r.get("type") == "sample" and r.get("experiment") == "deferred-split"]
    ok, rows = True, []
    if len(samples) != len(cells):
        md.append("**agree-split: %d cells marked, %d samples** (marks lost?)\n" % (len(cells), len(samples)))
        ok = False
    for i, (smp, (t0, knob)) in enumerate(zip(samples, cells)):
        t1 = cells[i + 1][0] if i + 1 < len(cells) else (end_t or float("inf"))
        s0 = next((s for s in snaps if s[0] >= t0), None)
        s1 = next((s for s in snaps if s[0] >= t1), None) if i + 1 < len(cells) else (snaps[-1] if snaps else None)
        rec = {"type": "agree", "case": "split", "rep": smp.get("rep"), "threads": smp.get("threads"),
               "deferred_split_early_check": smp.get("deferred_split_early_check"), "knob_marked": knob,
               "program_lock_taken": smp.get("deferred_split_lock_taken"),
               "program_partial_unmaps": smp.get("deferred_split_partial_unmaps"),
               "thp_fault_alloc": smp.get("thp_fault_alloc")}
        if s0 and s1 and s1[0] > s0[0]:
            acq, con = s1[2] - s0[2], s1[1] - s0[1]
            exp = (smp.get("deferred_split_lock_taken") or 0) + 2 * (smp.get("thp_fault_alloc") or 0)
            rec.update({"lock_stat_acquisitions": int(acq), "lock_stat_contentions": int(con),
                        "lock_stat_waittime_us": round(s1[3] - s0[3], 2),
                        "expected_acquisitions": exp})
            good_acq = abs(acq - exp) <= 0.05 * exp + 8
        else:
            good_acq = False
            rec["lock_stat_acquisitions"] = None
        n_lc = sum(1 for e in lc if t0 <= e["t"] < t1)
        n_cb = sum(1 for e in cb if t0 <= e["t"] < t1)
        rec.update({"tool_lock_contended": n_lc, "tool_contention_begin": n_cb})
        good_con = rec.get("lock_stat_contentions") is not None and abs(rec["lock_stat_contentions"] - n_lc) <= 1
        rec["verdict"] = "agree" if good_acq and good_con and knob == smp.get("deferred_split_early_check") else "DISAGREE"
        ok &= rec["verdict"] == "agree"
        out.append(rec)
        rows.append(rec)
    lcs = ", ".join("%#x" % a for a in lc_addrs)
    where = ("the lock word %s: lock_contended names the lock's lockdep_map (%s), a few words further "
             "into the spinlock" % (addr, lcs) if addr else
             "none fell within 64 bytes below the lockdep_map that lock_contended names (%s): the "
             "queued spinlock's slow path was never entered for this lock" % (lcs or "no lock_contended"))
    md.append("## Chapter 7: split_queue_lock, /proc/lock_stat and lock events vs deferred_split's counter\n")
    md.append("The debug kernel (LOCK_STAT). `deferred_split` marks each cell in trace-cmd's instance with "
              "the `&ds_queue->split_queue_lock` line of /proc/lock_stat (MMLOCKS_MARK_LOCK_STAT); the tool "
              "records `lock:lock_contended` (filtered on the class name) and `lock:contention_begin/end` "
              "(%s). Our counter, `deferred_split_lock_taken`, counts only `deferred_split_folio(folio, "
              "true)`'s acquisitions; every THP also takes the lock when the fault queues it "
              "(`deferred_split_folio(folio, false)`, split_underused_thp) and when its free unqueues it "
              "(`__folio_unqueue_deferred_split()`). Agree when lock_stat's acquisitions are our count plus "
              "two per THP faulted (`thp_fault_alloc`), within 5 %% + 8, and lock_stat's contentions equal "
              "the lock_contended events (within 1). lock_contended fires when the "
              "first trylock fails; contention_begin only when the queued spinlock's slow path is entered, "
              "so it can be lower.\n" % where)
    md.append("| threads | check | lock_taken (ours) | + 2 x THPs | lock_stat acquisitions | contentions (lock_stat / lock_contended / contention_begin) | verdict |")
    md.append("|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        md.append("| %s | %s | %s | %s | %s | %s / %s / %s | %s |" % (
            r["threads"], r["deferred_split_early_check"], r["program_lock_taken"], fmt(r.get("expected_acquisitions")),
            fmt(r.get("lock_stat_acquisitions")), fmt(r.get("lock_stat_contentions")), r["tool_lock_contended"],
            r["tool_contention_begin"], r["verdict"]))
    by = defaultdict(lambda: [0, 0])
    for r in rows:
        k = r["deferred_split_early_check"]
        by[k][0] += r.get("lock_stat_contentions") or 0
        by[k][1] += r.get("program_partial_unmaps") or 0
    if 0 in by and 1 in by:
        md.append("\nContentions of split_queue_lock (lock_stat), all cells: check off %d for %d partial "
                  "unmaps, check on %d for %d." % (by[0][0], by[0][1], by[1][0], by[1][1]))
        out.append({"type": "agree_effect", "case": "split", "contentions_check_off": by[0][0],
                    "contentions_check_on": by[1][0], "partial_unmaps_check_off": by[0][1],
                    "partial_unmaps_check_on": by[1][1]})
    md.append("")
    end = [r for r in recs if r.get("type") == "end"]
    return ok and bool(rows) and all(e.get("rc") == 0 for e in end)


# ---- chapter 8 -----------------------------------------------------------------
# What the tools cost: smaps_steal alone and under each tool, one record per
# tool and position with the medians over the tool's rounds. No verdict: a
# measurement, compared with the program alone.
def median(vals):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return None
    n = len(v)
    m = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return int(m) if isinstance(m, float) and m.is_integer() and all(isinstance(x, int) for x in v) else m


def cost(recs, files, out, md):
    phase, by, sizes = None, defaultdict(list), defaultdict(list)
    for r in recs:
        t = r.get("type")
        if t == "cost_phase":
            phase = r.get("tool")
        elif t == "cost_file":
            sizes[r.get("tool")].append(r.get("bytes", 0))
        elif t == "block" and phase:
            pos = "baseline" if r.get("baseline") else "policy %d" % r.get("rwsem_steal_policy", -1)
            by[(phase, pos)].append(r)
    tools = [x for x in ("none", "perf", "trace-cmd") if any(k[0] == x for k in by)]
    positions = [p for p in ("policy 0", "policy 1", "policy 2", "baseline") if any(k[1] == p for k in by)]
    rows = []
    for tool in tools:
        for pos in positions:
            bs = by.get((tool, pos), [])
            if not bs:
                continue
            rec = {"type": "agree", "case": "cost", "tool": tool, "position": pos, "rounds": len(bs),
                   "program_writer_calls": median([b.get("writer_calls") for b in bs]),
                   "program_p50_us": median([b.get("writer_p50_us") for b in bs]),
                   "program_p99_us": median([b.get("writer_p99_us") for b in bs]),
                   "tool_file_bytes": median(sizes[tool]) if sizes.get(tool) else None}
            base = by.get(("none", pos))
            if tool != "none" and base:
                b50 = median([b.get("writer_p50_us") for b in base])
                bcalls = median([b.get("writer_calls") for b in base])
                rec["p50_over_alone_ratio"] = round(rec["program_p50_us"] / b50, 3) if b50 else None
                rec["calls_over_alone_ratio"] = round(rec["program_writer_calls"] / bcalls, 3) if bcalls else None
            out.append(rec)
            rows.append(rec)
    md.append("## Chapter 8: what the tools cost, smaps_steal alone and under each tool\n")
    md.append("`smaps_steal` (one block: steal policies 0, 1, 2, then the writer alone) run six times in one "
              "boot: alone, under `perf lock record` (the steal case's events), under `trace-cmd record` of "
              "the same events plus `lock:contention_begin/end`, in the order alone, perf, trace-cmd, "
              "trace-cmd, perf, alone. Medians over each tool's two rounds; *calls* is the writer's "
              "mmap()/munmap() calls in the position's window, the rest of the tool's cost.\n")
    md.append("| tool | position | writer calls | p50 latency | p99 latency | p50 / alone | calls / alone |")
    md.append("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        md.append("| %s | %s | %s | %s us | %s us | %s | %s |" % (
            r["tool"], r["position"], fmt(r["program_writer_calls"]), fmt(r["program_p50_us"]),
            fmt(r["program_p99_us"]), fmt(r.get("p50_over_alone_ratio"), 2), fmt(r.get("calls_over_alone_ratio"), 2)))
    for tool in tools:
        if sizes.get(tool):
            md.append("\n%s's file: %s bytes per run (median)." % (tool, fmt(median(sizes[tool]))))
    md.append("")
    end = [r for r in recs if r.get("type") == "end"]
    return bool(rows) and "none" in tools and len(tools) == 3 and all(e.get("rc") == 0 for e in end)


def main():
    if len(sys.argv) not in (2, 3) or any(a.startswith("-") for a in sys.argv[1:]):
        if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
            print(USAGE)
            return 0
        print(USAGE, file=sys.stderr)
        return 2
    d = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) == 3 else d
    for x in (d, outdir):
        if not os.path.isdir(x):
            print("agree.py: %s is not a directory" % x, file=sys.stderr)
            return 2
    out, md, ok, ran = [], ["# Standard tools against our instruments\n"], True, 0
    meta = os.path.join(d, "meta.json")
    if os.path.exists(meta):
        m = json.load(open(meta))
        md.append("Run %s: %s. %s\n" % (m.get("run", os.path.basename(d.rstrip("/"))), m.get("host_load", ""),
                                          m.get("note", "")))
    for case, fn in (("steal", steal), ("hold", hold), ("cost", cost), ("split", split)):
        p = os.path.join(d, "agree-%s.jsonl" % case)
        if not os.path.exists(p):
            continue
        ran += 1
        recs, files = read_case(p)
        good = fn(recs, files, out, md)
        out.append({"type": "agree_case", "case": case, "agree": good})
        ok &= good
    if not ran:
        print("agree.py: no agree-*.jsonl in %s" % d, file=sys.stderr)
        return 1
    with open(os.path.join(outdir, "agree.jsonl"), "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
