#!/usr/bin/env python3
"""Lab 08's grader tests (make -C labs/08-diagnosis test), no QEMU needed.

Usage: test_grader.py --diagnose BINARY
  - the grader's scenario is diagnose's: `BINARY -s SEED -c` for many seeds;
  - every fixture run (grader/fixtures/NAME/: a run of one culprit and the
    answer to it, from the guest) grades as fully right;
  - a run that is missing, cut short or of another seed fails the
    run_ tests and nothing else breaks.
The wrong answers to the reference run are mutants/*.patch
(labs/tools/check-mutants). Exit 0 when all pass.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grade  # noqa: E402
import scenario  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print("%-4s %s" % ("ok" if ok else "FAIL", what))
    fails += 0 if ok else 1


def results(answer, run):
    return {n: ok for n, ok, _ in grade.grade(answer, run)}


def main(argv):
    if argv[:1] in (["-h"], ["--help"]) or len(argv) != 2 or argv[0] != "--diagnose":
        print(__doc__.split("\n", 2)[2], file=sys.stdout if argv[:1] in (["-h"], ["--help"]) else sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    binary = argv[1]
    seeds = list(range(0, 300)) + [2 ** 63 - 1, 987654321]
    bad = [s for s in seeds
           if subprocess.run([binary, "-s", str(s), "-c"], capture_output=True, text=True).stdout.strip()
           != scenario.answer_line(s)]
    check(not bad, "scenario.py agrees with diagnose -c on %d seeds%s" % (
        len(seeds), "" if not bad else " (not on %s)" % bad[:5]))
    culprits = {scenario.scenario(s)["culprit"] for s in range(200)}
    check(culprits == set(scenario.CULPRITS), "every culprit is some seed's")

    fx = os.path.join(HERE, "fixtures")
    names = sorted(d for d in os.listdir(fx) if os.path.isdir(os.path.join(fx, d))) if os.path.isdir(fx) else []
    seen = set()
    for d in names:
        a, r = os.path.join(fx, d, "answer.txt"), os.path.join(fx, d, "run.jsonl")
        res = results(a, r)
        failed = [n for n, ok in res.items() if not ok]
        check(not failed, "fixture %s grades as right%s" % (d, "" if not failed else ": " + ", ".join(failed)))
        seen.add(grade.parse_answer(a).get("culprit"))
    src = os.path.join(os.path.dirname(HERE), "src")
    seen.add(grade.parse_answer(os.path.join(src, "answer.txt")).get("culprit"))
    check(seen >= set(scenario.CULPRITS), "the reference and the fixtures cover every culprit (%s)" %
          ", ".join(sorted(c for c in seen if c)))

    with tempfile.TemporaryDirectory() as t:
        answer = os.path.join(src, "answer.txt")
        res = results(answer, os.path.join(t, "none.jsonl"))
        check(not res["run_is_complete"] and not res["run_is_this_answers_seed"],
              "no run: the run_ tests fail")
        lines = open(os.path.join(src, "run.jsonl"), errors="replace").read().split("\n")
        cut = os.path.join(t, "cut.jsonl")
        with open(cut, "w") as f:
            f.write("\n".join(l for l in lines if '"phase":"after"' not in l))
        res = results(answer, cut)
        check(not res["run_is_complete"] and not res["todo3_latency_dropped"],
              "a run without its after phase is not complete")
        other = os.path.join(t, "answer.txt")
        text = open(answer).read()
        seed = grade.parse_answer(answer)["seed"]
        with open(other, "w") as f:
            f.write(text.replace("seed: %s" % seed, "seed: %d" % (int(seed) + 1), 1))
        res = results(other, os.path.join(src, "run.jsonl"))
        check(not res["run_is_this_answers_seed"], "an answer for another seed does not grade this run")
        shutil.copy(answer, os.path.join(t, "copy.txt"))
    print("%d check(s) failed" % fails if fails else "all grader checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
