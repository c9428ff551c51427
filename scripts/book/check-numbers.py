#!/usr/bin/env python3
"""Flag hand-typed measurements: a number with a unit inside a "What our runs
showed" section of a chapter that is not pulled from a reference run."""

import glob
import os
import re
import sys

USAGE = """usage: scripts/book/check-numbers.py [FILE...]

Reads each Markdown FILE (default: chapters/*.md and chapters/runs/*.md)
and, inside every section headed "What our runs showed" (up to the next
heading of the same or a higher level) and everywhere in an appendix page
chapters/runs/*.md, prints FILE:LINE for each number followed by a unit
(ns, µs, us, ms, s, x, ×, %) that is not
  - a reference:            []{.ref ...} (or [typed]{.ref ...})
  - a published figure:     [95 ms]{.published source="..."} (source required)
  - a setting or constant:  [4 ms]{.setting}  (a timeout, a threshold, HZ)
  - in code, a link target, an attribute block or an HTML comment.
Exit status: 0 none found, 1 some found, 2 usage or unreadable file.
"""

UNIT = r"(?:ns|µs|us|ms|s|x|×|%)"
NUMBER = re.compile(r"(?<![\w.])\d[\d,.]*\s?(?:\u2009|\u00a0)?" + UNIT + r"(?![\w])")
SECTION = re.compile(r"^(#{1,6})\s+What our runs showed\b", re.I)
HEADING = re.compile(r"^(#{1,6})\s")


def blank(m):
    """Replace a match by spaces, keeping newlines (so line numbers hold)."""
    return re.sub(r"[^\n]", " ", m.group(0))


def mask(text):
    """Blank out everything the check does not look at."""
    problems = []
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", blank, text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", blank, text)

    def span(m):
        attrs = m.group(2)
        cls = re.findall(r"\.([\w-]+)", attrs)
        if "ref" in cls or "setting" in cls:
            return blank(m)
        if "published" in cls:
            if re.search(r"\bsource\s*=\s*(\"[^\"]+\"|\S+)", attrs):
                return blank(m)
            problems.append((m.start(), "a .published figure needs source=\"...\" (the patch it comes from)"))
            return blank(m)
        return m.group(0)
    # [text]{attrs}: spans (the text may be empty, and may not nest brackets)
    text = re.sub(r"\[([^\[\]]*)\]\{([^{}]*)\}", span, text)
    text = re.sub(r"\]\([^)]*\)", blank, text)          # link targets
    text = re.sub(r"\{[^{}\n]*\}", blank, text)          # attribute blocks
    return text, problems


def check(path):
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except OSError as err:
        sys.stderr.write("check-numbers.py: %s\n" % err)
        sys.exit(2)
    text, problems = mask(raw)
    lines = text.split("\n")
    found = []
    level = None
    offset = 0
    starts = []
    for i, line in enumerate(lines):
        starts.append(offset)
        offset += len(line) + 1
    raw_lines = raw.split("\n")
    # An experiment's page of the "Reference runs" appendix is all record:
    # every line of it is checked.
    whole = os.path.basename(os.path.dirname(os.path.abspath(path))) == "runs"
    for i, line in enumerate(lines):
        if whole:
            for m in NUMBER.finditer(line):
                found.append((i + 1, "hand-typed measurement '%s' (use []{.ref ...}; see CONTRIBUTING.md, "
                              "\"Measured numbers\")" % m.group(0).strip()))
            continue
        h = HEADING.match(raw_lines[i])
        if h and not raw_lines[i].startswith("#" * 7):
            if SECTION.match(raw_lines[i]):
                level = len(h.group(1))
                continue
            if level is not None and len(h.group(1)) <= level:
                level = None
        if level is None:
            continue
        for m in NUMBER.finditer(line):
            found.append((i + 1, "hand-typed measurement '%s' (use []{.ref ...}; see CONTRIBUTING.md, "
                          "\"Measured numbers\")" % m.group(0).strip()))
    for pos, msg in problems:
        ln = raw.count("\n", 0, pos) + 1
        found.append((ln, msg))
    for ln, msg in sorted(found):
        print("%s:%d: %s" % (path, ln, msg))
    return len(found)


def main(argv):
    args = argv[1:]
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(USAGE)
        return 0
    for a in args:
        if a.startswith("-"):
            sys.stderr.write("check-numbers.py: unknown option '%s'\n%s" % (a, USAGE))
            return 2
    files = args or sorted(glob.glob("chapters/*.md") + glob.glob("chapters/runs/*.md"))
    if not files:
        sys.stderr.write("check-numbers.py: no chapters/*.md here (run from the repository root)\n")
        return 2
    n = sum(check(p) for p in files)
    sections = 0
    for p in files:
        with open(p, encoding="utf-8") as f:
            sections += sum(1 for l in f if SECTION.match(l))
    print("check-numbers: %d file(s), %d \"What our runs showed\" section(s), %d hand-typed number(s)"
          % (len(files), sections, n))
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
