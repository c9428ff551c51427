#!/usr/bin/env python3
"""check-citations: kernel citations in the text that cannot rot.

Usage: scripts/book/check-citations.py [--self-test]

The book is built against whatever linux-source-6.12 Debian ships (the
point release moves), so the text a reader sees must not pin one:
  - a point release ("6.12.117") is written []{.kver}, which the build fills
    in with the version it unpacked;
  - a kernel line number ("mm/khugepaged.c:2355", "line 2355") is replaced
    by the function it sits in (a listing with lines= must carry expect=,
    which the build checks against the tree).
Checked: chapters/*.md (and chapters/runs/*.md), answers/**/*.md, labs/*/handout.md.
Run pages in reference/ record the release they ran on: not checked.
Exit 0 when clean, 1 listing each offending line, 2 on bad usage.
"""
import glob
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
POINT = re.compile(r"\b6\.12\.\d{2,3}\b")
FILELINE = re.compile(r"\b[\w./-]+\.[ch]:\d+(?:-\d+)?\b")
LINEWORD = re.compile(r"\blines? \d{3,}(?:-\d+)?\b")


def problems(path, text):
    out = []
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        for rx, what in ((POINT, "a point release (write []{.kver})"),
                         (FILELINE, "a kernel line number (cite the function)"),
                         (LINEWORD, "a kernel line number (cite the function)")):
            m = rx.search(line)
            if m:
                out.append("%s:%d: %s: '%s'" % (os.path.relpath(path, TOP), n, what, m.group(0)))
    return out


def files():
    pats = ["chapters/*.md", "chapters/runs/*.md", "answers/*.md", "answers/labs/*.md", "labs/*/handout.md"]
    for p in pats:
        for f in sorted(glob.glob(os.path.join(TOP, p))):
            yield f


def self_test():
    bad = "In 6.12.117 the walk (mm/khugepaged.c:2355) and line 2470 do this.\n"
    good = "In []{.kver}, `khugepaged_scan_mm_slot()` does this; 6.12 has it.\n```c\nx = 6.12.117;\n```\n"
    p = problems("x.md", bad)
    q = problems("y.md", good)
    ok = len(p) == 3 and not q
    print("check-citations self-test: %s" % ("ok" if ok else "FAILED %r %r" % (p, q)))
    return 0 if ok else 1


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) > 1:
        sys.stderr.write("check-citations: unknown argument '%s'\n%s\n" % (argv[1], __doc__.strip().splitlines()[2]))
        return 2
    found = []
    for f in files():
        with open(f, encoding="utf-8") as fh:
            found += problems(f, fh.read())
    for p in found:
        print(p)
    print("check-citations: %d problem(s)" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
