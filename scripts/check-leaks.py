#!/usr/bin/env python3
"""check-leaks: fail when a chapter lists a lab's solution.

Usage: check-leaks.py [--root DIR] [--self-test]
  --root DIR    the repository to check (default: this script's repository)
  --self-test   build a small repository with one leak and one clean
                listing in a temporary directory and check that exactly the
                leak is reported
A lab's solution is the code between '/* TODO k: ... */' and
'/* END TODO k */' in labs/NN-*/src/ (links followed, so lab 04's TODO
regions in code/vma count as they are), and the same lines in a copy of
that file under code/ (a file of the same name, matched line by line with
the TODO markers, comments and whitespace ignored). A chapter leaks when
one of its listings (include= with region=, function=, define=, lines= or
the whole file) shows one of those lines. Exit 0 when no chapter leaks, 1
when one does (each leak named: chapter line, listing, lab, TODO step), 2 on
bad usage.
"""
import difflib
import glob
import os
import re
import sys
import tempfile

TODO_BEGIN = re.compile(r"^\s*/\*\s*TODO\s+(\d+)\s*:")
TODO_END = re.compile(r"^\s*/\*\s*END TODO\s+(\d+)\s*\*/")
INCLUDE = re.compile(r"^```\{([^}]*\binclude=\"[^\"]+\"[^}]*)\}")
ATTR = re.compile(r'(\w+)="([^"]*)"')


def norm(line):
    """A line as code: comments, region/TODO markers and whitespace dropped."""
    line = re.sub(r"/\*.*?\*/", "", line)
    line = re.sub(r"//.*$", "", line)
    return re.sub(r"\s+", "", line)


def significant(line):
    n = norm(line)
    return len(n) > 2 and n not in ("{", "}", "};", "else", "}else{")


def todo_regions(path):
    """[(step, set of 1-based solution line numbers)] of one file."""
    out, cur, lines = [], None, open(path, errors="replace").read().splitlines()
    for i, line in enumerate(lines, 1):
        b, e = TODO_BEGIN.match(line), TODO_END.match(line)
        if b:
            cur = (int(b.group(1)), set())
        elif e and cur:
            out.append(cur)
            cur = None
        elif cur and significant(line):
            cur[1].add(i)
    return out


def map_lines(src, copy):
    """{src line -> copy line} for the lines the two files share as code."""
    a = open(src, errors="replace").read().splitlines()
    b = open(copy, errors="replace").read().splitlines()
    ai = [i for i, l in enumerate(a, 1) if norm(l) and not TODO_BEGIN.match(l) and not TODO_END.match(l)]
    bi = [i for i, l in enumerate(b, 1) if norm(l) and "region:" not in l]
    sm = difflib.SequenceMatcher(None, [norm(a[i - 1]) for i in ai], [norm(b[i - 1]) for i in bi],
                                 autojunk=False)
    m = {}
    for blk in sm.get_matching_blocks():
        for k in range(blk.size):
            m[ai[blk.a + k]] = bi[blk.b + k]
    return m


def solutions(root):
    """{real path: [(label, set of lines)]}: every TODO region and its copies."""
    sol = {}
    for lab in sorted(glob.glob(os.path.join(root, "labs", "[0-9][0-9]-*", "src"))):
        labname = os.path.basename(os.path.dirname(lab))
        for path in sorted(glob.glob(os.path.join(lab, "**", "*.[ch]"), recursive=True)):
            real = os.path.realpath(path)
            regions = todo_regions(real)
            if not regions:
                continue
            shown = os.path.relpath(path, root)
            for step, lines in regions:
                sol.setdefault(real, []).append((f"{labname} TODO {step} ({shown})", lines))
            for copy in glob.glob(os.path.join(root, "code", "**", os.path.basename(path)), recursive=True):
                creal = os.path.realpath(copy)
                if creal == real:
                    continue
                m = map_lines(real, creal)
                for step, lines in regions:
                    mapped = {m[i] for i in lines if i in m}
                    if mapped:
                        sol.setdefault(creal, []).append(
                            (f"{labname} TODO {step} (its copy {os.path.relpath(copy, root)})", mapped))
    return sol


def listing_lines(path, attrs):
    """The 1-based lines of path a listing shows, or None if not found."""
    lines = open(path, errors="replace").read().splitlines()
    if "region" in attrs:
        name = re.escape(attrs["region"])
        start = [i for i, l in enumerate(lines, 1) if re.search(rf"\bregion:\s*{name}\s*(\*/)?\s*$", l)
                 and "endregion" not in l]
        end = [i for i, l in enumerate(lines, 1) if re.search(rf"\bendregion:\s*{name}\s*(\*/)?\s*$", l)]
        if not start or not end:
            return None
        return set(range(start[0] + 1, end[0]))
    if "function" in attrs:
        name = re.escape(attrs["function"])
        for i, l in enumerate(lines, 1):
            if re.match(rf"^\S.*\b{name}\s*\(", l) and not l.rstrip().endswith(";"):
                for j in range(i, len(lines) + 1):
                    if lines[j - 1].startswith("}"):
                        return set(range(i, j + 1))
        return None
    if "define" in attrs:
        name = re.escape(attrs["define"])
        hit = [i for i, l in enumerate(lines, 1) if re.match(rf"^\s*#\s*define\s+{name}\b", l)]
        return set(hit[:1]) or None
    if "lines" in attrs:
        m = re.match(r"^(\d+)-(\d+)$", attrs["lines"])
        return set(range(int(m.group(1)), int(m.group(2)) + 1)) if m else None
    return set(range(1, len(lines) + 1))


def check(root):
    sol = solutions(root)
    leaks = problems = 0
    docs = sorted(glob.glob(os.path.join(root, "chapters", "*.md"))) + [os.path.join(root, "book.md")]
    for doc in docs:
        if not os.path.exists(doc):
            continue
        for n, line in enumerate(open(doc, errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            attrs = dict(ATTR.findall(m.group(1)))
            inc = attrs["include"]
            if inc.startswith("linux:") or inc.endswith(".patch"):
                continue	# the kernel's code (ours or 6.12's), not a lab's answer
            path = os.path.join(root, inc)
            where = f"{os.path.relpath(doc, root)}:{n}"
            if not os.path.isfile(path):
                print(f"check-leaks: {where}: {inc}: no such file")
                problems += 1
                continue
            shown = listing_lines(path, attrs)
            if shown is None:
                print(f"check-leaks: {where}: {inc}: listing {attrs} not found")
                problems += 1
                continue
            what = " ".join(f'{k}="{v}"' for k, v in attrs.items() if k != "include") or "(whole file)"
            for label, lines in sol.get(os.path.realpath(path), []):
                hit = sorted(shown & lines)
                if hit:
                    print(f"check-leaks: {where}: the listing of {inc} {what} shows the solution of "
                          f"{label}: lines {hit[0]}-{hit[-1]}")
                    leaks += 1
    nsol = sum(len(v) for v in sol.values())
    print(f"check-leaks: {leaks} leak(s), {problems} problem(s); "
          f"{nsol} solution regions in {len(sol)} files checked")
    return 1 if leaks or problems else 0


def self_test():
    files = {
        "labs/01-x/src/steal.c": "int f(int a)\n{\n\tint r = 0;\n\t/* TODO 1: do it */\n"
                                  "\tr = a * 3 + 1;\n\t/* END TODO 1 */\n\treturn r;\n}\n",
        "code/m/steal.c": "/* region: head */\nint f(int a)\n{\n\tint r = 0;\n/* endregion: head */\n"
                          "/* region: body */\n\tr = a * 3 + 1;\t/* the answer */\n/* endregion: body */\n"
                          "\treturn r;\n}\n",
        "chapters/01-x.md": '```{.c include="code/m/steal.c" region="head"}\n```\n'
                            '```{.c include="code/m/steal.c" region="body"}\n```\n'
                            '```{.c include="labs/01-x/src/steal.c" function="f"}\n```\n',
    }
    with tempfile.TemporaryDirectory(prefix="check-leaks.") as d:
        for p, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
            open(os.path.join(d, p), "w").write(text)
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = check(d)
        out = buf.getvalue()
        ok = (rc == 1 and "01-x.md:3:" in out and "01-x.md:5:" in out and "01-x.md:1:" not in out)
        sys.stdout.write(out)
        print(f"check-leaks self-test: {'ok' if ok else 'FAIL'}")
        return 0 if ok else 1


def main(argv):
    root = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__.split("\n", 2)[2])
            return 0
        if a == "--self-test":
            return self_test()
        if a == "--root" and args:
            root = os.path.realpath(args.pop(0))
        else:
            sys.stderr.write(f"check-leaks: bad argument '{a}'\n" + __doc__.split("\n", 2)[2])
            return 2
    if not os.path.isdir(os.path.join(root, "labs")):
        sys.stderr.write(f"check-leaks: {root}: no labs/ directory\n")
        return 2
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
