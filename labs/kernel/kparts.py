#!/usr/bin/env python3
"""kparts.py: the labs' kernel parts as a whole: the students' series, what waits, the student's kernel.

Usage: labs/kernel/kparts.py COMMAND [args]

  status                 one line per kernel part (every labs/NN-slug/kernel/
                         with a tests file): "done" or what it waits for
  waiting EXPERIMENT...  for each experiment of labs/kernel/experiments that a
                         kernel part not yet done measures: "EXPERIMENT NN-slug"
                         (nothing in the instructors' repository: there the
                         series is the solution)
  fold OUTDIR            (instructors' repository) write labs/kernel/patches as
                         a students' copy carries it: each patch that introduces
                         code a lab's skeleton.patch replaces is regenerated
                         against the pristine 6.12 tree with the skeleton folded
                         in, so the series itself yields the skeleton and holds
                         no solution line; also writes OUTDIR/skeleton-files
                         (lab and file per line)
  secrets                (instructors' repository) the solution-only lines: a
                         line a skeleton.patch removes that is not trivial and
                         is not left anywhere in the file once the skeleton is
                         applied; one per line, whitespace-normalized
  student-patches OUTDIR (students' copy) write OUTDIR/NN-slug.patch for every
                         kernel part that is done (the committed `git diff
                         skeleton` of work/kernel/NN-slug/, its lab's files
                         only) and print their paths; build.sh appends them to
                         the series of the measuring kernel
  table                  Markdown for the instructors' appendix and the answer
                         key: per kernel part its files, tests, the skeleton's
                         score, and its wrong answers with the test that
                         catches each (scripts/book/mmlocks.lua, div
                         .kernel-parts, runs it at build time)
  source DIR             write into DIR the files the series touches as the
                         measuring kernel's tree holds them: the pristine files,
                         the series, then the student-patches (a check, no build)

A kernel part is *done* when work/kernel/NN-slug/ (make kernel-tree) has
commits past its tag `skeleton` and every TODO region of the lab's files at
HEAD holds something else than the skeleton's stub (or its markers are
gone). In the instructors' repository every part is done. A lab names the
experiments its kernel part measures in labs/NN-slug/kernel/experiments.
Exit status: 0, 1 on failure, 2 on bad usage.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
PROG = "labs/kernel/kparts.py"
BEGIN = re.compile(r"^\s*/\*\s*TODO\s+(\d+)\s*:.*\*/\s*$")
END = re.compile(r"^\s*/\*\s*END TODO\s+(\d+)\s*\*/\s*$")


def die(msg, code=1):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(code)


def student_copy(top=TOP):
    return os.path.isfile(os.path.join(top, "labs", "tools", "exercises.txt"))


def parts(top=TOP):
    """Every lab with a kernel part, found by layout: labs/NN-slug/kernel/tests."""
    return sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                  for p in glob.glob(os.path.join(top, "labs", "[0-9][0-9]-*", "kernel", "tests")))


def experiments_of(lab, top=TOP):
    p = os.path.join(top, "labs", lab, "kernel", "experiments")
    if not os.path.isfile(p):
        return []
    return [l.split("#", 1)[0].split()[0] for l in open(p) if l.split("#", 1)[0].strip()]


def patch_files(path):
    out = []
    for line in open(path, errors="replace"):
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        if m:
            out.append(m.group(2))
    return list(dict.fromkeys(out))


def series(top=TOP):
    pd = os.path.join(top, "labs", "kernel", "patches")
    return [os.path.join(pd, l.split("#", 1)[0].strip()) for l in open(os.path.join(pd, "series"))
            if l.split("#", 1)[0].strip()]


def lab_files(lab, top=TOP):
    """The kernel files holding lab's TODO regions: its skeleton.patch's, or
    (in a students' copy) the list student-dist wrote."""
    sk = os.path.join(top, "labs", lab, "kernel", "skeleton.patch")
    if os.path.isfile(sk):
        return patch_files(sk)
    lst = os.path.join(top, "labs", "kernel", "patches", "skeleton-files")
    if os.path.isfile(lst):
        return [l.split()[1] for l in open(lst) if l.strip() and not l.startswith("#") and l.split()[0] == lab]
    return []


def pristine():
    r = subprocess.run([os.path.join(HERE, "linux-source.sh")], capture_output=True, text=True)
    if r.returncode or not os.path.isfile(os.path.join(r.stdout.strip(), "Makefile")):
        die(f"labs/kernel/linux-source.sh failed: {r.stderr.strip()}")
    return r.stdout.strip()


def norm(line):
    return " ".join(line.split())


def trivial(line):
    t = norm(line)
    return len(t) < 12 or not re.search(r"[A-Za-z_]{3}", t) or t.startswith(("/*", "*", "//"))


# ------------------------------------------------------------ hunks

def parse_patch(path):
    """{file: [(old lines, new lines)]} of a unified diff (no line numbers kept)."""
    out, cur, hunk = {}, None, None
    for line in open(path, errors="replace").read().split("\n"):
        m = re.match(r"^diff --git a/(\S+) b/(\S+)$", line)
        if m:
            cur, hunk = m.group(2), None
            out.setdefault(cur, [])
            continue
        if cur is None:
            continue
        if line.startswith("@@"):
            hunk = ([], [])
            out[cur].append(hunk)
            continue
        if hunk is None or line.startswith(("--- ", "+++ ", "index ")) and not hunk[0] and not hunk[1]:
            continue
        if line.startswith(" "):
            hunk[0].append(line[1:])
            hunk[1].append(line[1:])
        elif line.startswith("-"):
            hunk[0].append(line[1:])
        elif line.startswith("+"):
            hunk[1].append(line[1:])
        elif line == "":
            hunk[0].append("")
            hunk[1].append("")
        elif line.startswith("\\"):
            continue
        else:
            hunk = None
    for f in out:
        # a trailing empty line of the file text is not a context line
        for old, new in out[f]:
            while old and new and old[-1] == "" and new[-1] == "":
                old.pop()
                new.pop()
    return out


def find_unique(lines, block):
    n = len(block)
    at = [k for k in range(len(lines) - n + 1) if lines[k:k + n] == block]
    return at[0] if len(at) == 1 else None


def apply_hunks(text, hunks):
    """Apply each hunk whose old side occurs exactly once, trimming its context
    from the outside when an earlier state of the file has other lines there
    (the lines it removes must be found whole). Returns (text, applied indexes)."""
    applied = set()
    lines = text.split("\n")
    for i, (old, new) in enumerate(hunks):
        # leading and trailing context shared by both sides
        lead = 0
        while lead < min(len(old), len(new)) and old[lead] == new[lead]:
            lead += 1
        trail = 0
        while trail < min(len(old), len(new)) - lead and old[-1 - trail] == new[-1 - trail]:
            trail += 1
        for cut in range(0, max(lead, trail) + 1):
            a, b = min(cut, lead), min(cut, trail)
            o = old[a:len(old) - b]
            nw = new[a:len(new) - b]
            if not o or all(not x.strip() for x in o):
                break
            k = find_unique(lines, o)
            if k is not None:
                lines[k:k + len(o)] = nw
                applied.add(i)
                break
    return "\n".join(lines), applied


def split_sections(text):
    """(header, [(file, section text)]) of a git-style patch."""
    parts = re.split(r"(?m)^(?=diff --git )", text)
    header, secs = parts[0], []
    for s in parts[1:]:
        m = re.match(r"^diff --git a/(\S+) b/(\S+)", s)
        secs.append((m.group(2), s))
    return header, secs


def udiff(f, a, b):
    with tempfile.TemporaryDirectory() as t:
        pa, pb = os.path.join(t, "a"), os.path.join(t, "b")
        open(pa, "w").write(a)
        open(pb, "w").write(b)
        r = subprocess.run(["diff", "-u", "-p", "--label", f"a/{f}", "--label", f"b/{f}", pa, pb],
                           capture_output=True, text=True)
    if r.returncode not in (0, 1):
        die(f"diff failed on {f}")
    return f"diff --git a/{f} b/{f}\n" + r.stdout


def stages(files, top=TOP):
    """{file: [content after patch 0..n]} for files (None: every file the series touches)."""
    prist = pristine()
    pats = series(top)
    every = sorted({f for p in pats for f in patch_files(p)} | set(files or []))
    files = files or every
    out = {f: [] for f in files}
    with tempfile.TemporaryDirectory(prefix="kparts.") as t:
        for f in every:
            src = os.path.join(prist, f)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(t, f)), exist_ok=True)
                shutil.copy(src, os.path.join(t, f))

        def snap():
            for f in files:
                p = os.path.join(t, f)
                out[f].append(open(p).read() if os.path.isfile(p) else "")
        snap()
        for p in pats:
            r = subprocess.run(["patch", "-p1", "-s", "--fuzz=0", "--no-backup-if-mismatch", "-d", t, "-i", p],
                               capture_output=True, text=True)
            if r.returncode:
                die(f"{os.path.basename(p)} does not apply to the pristine tree: {r.stdout}{r.stderr}")
            snap()
    return out, pats


def skeletons(top=TOP):
    return [(lab, os.path.join(top, "labs", lab, "kernel", "skeleton.patch")) for lab in parts(top)
            if os.path.isfile(os.path.join(top, "labs", lab, "kernel", "skeleton.patch"))]


def folded(top=TOP):
    """({patch path: new text or None if unchanged}, {file: lab}, stages, final folded texts, secrets).

    A file a skeleton touches gets, at each state of the series from the
    first that holds a solution-only line, the skeleton's hunks applied
    (context trimmed where an earlier state differs around them). Where that
    still leaves a solution-only line (a later patch changes the solution
    itself), the file goes at once to its final state, the skeleton's: the
    later patches' changes of that file are folded into the introducing one.
    """
    hunks, owner = {}, {}
    for lab, sk in skeletons(top):
        for f, hs in parse_patch(sk).items():
            if f in owner:
                die(f"{f}: in the skeletons of both {owner[f]} and {lab}")
            owner[f] = lab
            hunks[f] = hs
    st, pats = stages(None, top)
    final = {}
    for f, hs in hunks.items():
        t, app = apply_hunks(st[f][-1], hs)
        if len(app) != len(hs):
            die(f"{f}: {len(hs) - len(app)} hunk(s) of lab {owner[f]}'s skeleton do not apply to the series")
        final[f] = t
    kept = set()
    for f in st:
        kept |= {norm(l) for l in (final.get(f) or st[f][-1]).split("\n")}
    # A line the pristine 6.12 file already has is no secret: lab 07's
    # kernel part has the student rewrite code that stock 6.12 ships, and
    # any copy of 6.12 shows it. Only what our series adds can leak.
    stock = {f: {norm(l) for l in st[f][0].split("\n")} for f in hunks}
    secret = set()
    for f, hs in hunks.items():
        for old, new in hs:
            secret |= {norm(l) for l in old if l not in new and not trivial(l) and norm(l) not in kept
                       and norm(l) not in stock[f]}

    def leaks(text):
        return any(norm(l) in secret for l in text.split("\n"))
    new = {}
    for f, hs in hunks.items():
        seq, squash = [], False
        for i, text in enumerate(st[f]):
            if squash:
                seq.append(final[f])
                continue
            if not leaks(text):
                seq.append(text)
                continue
            t2, _ = apply_hunks(text, hs)
            if leaks(t2):
                squash = True
                t2 = final[f]
            seq.append(t2)
        if seq[-1] != final[f] and not squash and not any(leaks(t) for t in st[f]):
            # Nothing of ours to hide (the skeleton empties stock code only):
            # the last patch that changes the file also applies the skeleton.
            last = max(i for i in range(1, len(st[f])) if st[f][i] != st[f][i - 1])
            seq = seq[:last] + [final[f]] * (len(seq) - last)
        if seq[-1] != final[f]:
            die(f"{f}: folding lab {owner[f]}'s skeleton does not end at the skeleton's tree")
        new[f] = seq
    out = {}
    for i, p in enumerate(pats, 1):
        text = open(p).read()
        header, secs = split_sections(text)
        changed = False
        body, moved = [], []
        for f, sec in secs:
            if f in hunks and (new[f][i] != st[f][i] or new[f][i - 1] != st[f][i - 1]):
                changed = True
                if new[f][i] != new[f][i - 1]:
                    body.append(udiff(f, new[f][i - 1], new[f][i]))
                else:
                    moved.append(f)
            else:
                body.append(sec)
        if not changed:
            out[p] = None
            continue
        if not body:
            die(f"{os.path.basename(p)}: nothing left once the skeletons are folded in")
        labs = sorted({owner[f] for f, _ in secs if f in hunks})
        # The diffstat counted the solution's lines: drop it.
        hl = header.split("\n")
        if "---" in hl:
            k = hl.index("---")
            which = " and ".join(f"lab {l[:2]}" for l in labs)
            note = [f"Students' edition: the code the kernel part of {which} asks for is",
                    "replaced by its TODO regions (make kernel-tree starts from this)."]
            if moved:
                note += [f"This patch's change of {', '.join(moved)} is folded into the earlier",
                         "patch that introduces that code: kept here, it would show the code."]
            hl = hl[:k] + ["---"] + note + [""]
            header = "\n".join(hl)
        out[p] = header + "".join(body)
    return out, owner, st, final, secret


def cmd_fold(outdir):
    out, owner, _, _, _ = folded()
    os.makedirs(outdir, exist_ok=True)
    for p, text in out.items():
        dst = os.path.join(outdir, os.path.basename(p))
        if text is None:
            shutil.copyfile(p, dst)
        else:
            open(dst, "w").write(text)
    shutil.copyfile(os.path.join(TOP, "labs", "kernel", "patches", "series"), os.path.join(outdir, "series"))
    with open(os.path.join(outdir, "skeleton-files"), "w") as f:
        f.write("# lab  file: where each kernel part's TODO regions are (written by student-dist)\n")
        for fn, lab in sorted(owner.items()):
            f.write(f"{lab} {fn}\n")
    print(f"{PROG}: fold: {sum(t is not None for t in out.values())} patch(es) regenerated with the skeletons of "
          f"{', '.join(sorted(set(owner.values())))} folded in")
    return 0


def secrets(top=TOP):
    """Solution-only lines (normalized): removed by a skeleton, not trivial, in no file of its tree."""
    return folded(top)[4]


# --------------------------------------------------------- student side

def git(tree, *args):
    return subprocess.run(["git", "-C", tree] + list(args), capture_output=True, text=True)


def regions(text):
    """{TODO number: body text} of a file."""
    out, cur, body = {}, None, []
    for line in text.split("\n"):
        b, e = BEGIN.match(line), END.match(line)
        if b and cur is None:
            cur, body = int(b.group(1)), []
        elif e and cur is not None:
            out[cur] = "\n".join(body)
            cur = None
        elif cur is not None:
            body.append(line)
    return out


def part_status(lab, top=TOP):
    """(done, why): the concrete rule in this program's help."""
    if not student_copy(top):
        return True, "the series is the solution"
    tree = os.path.join(top, "work", "kernel", lab)
    if not os.path.isdir(os.path.join(tree, ".git")):
        return False, f"no tree yet (make kernel-tree LAB={lab[:2]})"
    head, sk = git(tree, "rev-parse", "HEAD").stdout.strip(), git(tree, "rev-parse", "skeleton^{commit}").stdout.strip()
    if not sk:
        return False, f"work/kernel/{lab} has no tag `skeleton`"
    if head == sk:
        return False, "no commit past `skeleton` yet (commit your work: git commit -a)"
    stubs = []
    for f in lab_files(lab, top):
        a = regions(git(tree, "show", f"skeleton:{f}").stdout)
        b = regions(git(tree, "show", f"HEAD:{f}").stdout)
        stubs += [f"{f} TODO {k}" for k in sorted(a) if k in b and norm(b[k]) == norm(a[k])]
    if stubs:
        return False, "still the skeleton's stub at HEAD: " + ", ".join(stubs)
    return True, f"committed work past `skeleton` ({git(tree, 'rev-parse', '--short', 'HEAD').stdout.strip()})"


def cmd_status():
    for lab in parts():
        done, why = part_status(lab)
        ex = experiments_of(lab)
        print(f"{lab}: kernel part " + ("done" if done else "waiting") + f": {why}" +
              (f"; measured by {', '.join(ex)}" if ex else ""))
    return 0


def cmd_waiting(names):
    for lab in parts():
        ex = experiments_of(lab)
        if not set(ex) & set(names) or part_status(lab)[0]:
            continue
        for e in ex:
            if e in names:
                print(f"{e} {lab}")
    return 0


def student_patches(outdir, top=TOP):
    """A patch per done kernel part of a students' copy: its committed work since `skeleton`."""
    out = []
    if not student_copy(top):
        return out
    os.makedirs(outdir, exist_ok=True)
    for old in glob.glob(os.path.join(outdir, "*.patch")):
        os.unlink(old)
    for lab in parts(top):
        if not part_status(lab, top)[0]:
            continue
        tree = os.path.join(top, "work", "kernel", lab)
        r = git(tree, "diff", "--no-color", "--no-ext-diff", "skeleton", "HEAD", "--", *lab_files(lab, top))
        if r.returncode:
            die(f"git diff skeleton HEAD in {tree} failed: {r.stderr.strip()}")
        if not r.stdout.strip():
            continue
        p = os.path.join(outdir, f"{lab}.patch")
        with open(p, "w") as f:
            f.write(f"Lab {lab[:2]}'s kernel part: the committed work of work/kernel/{lab} since `skeleton`.\n"
                    f"---\n" + r.stdout)
        out.append(p)
    return out


def cmd_source(dst):
    prist = pristine()
    extra = student_patches(os.path.join(TOP, "build", "kernel-student"))
    pats = series() + extra
    files = sorted({f for p in pats for f in patch_files(p)})
    for f in files:
        if os.path.isfile(os.path.join(prist, f)):
            os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
            shutil.copy(os.path.join(prist, f), os.path.join(dst, f))
    for p in pats:
        r = subprocess.run(["patch", "-p1", "-s", "--fuzz=0", "--no-backup-if-mismatch", "-d", dst, "-i", p],
                           capture_output=True, text=True)
        if r.returncode:
            die(f"{os.path.relpath(p, TOP)} does not apply: {r.stdout}{r.stderr}")
    print(f"{PROG}: source: {len(files)} files in {dst}: the series" +
          (f" + {', '.join(os.path.relpath(p, TOP) for p in extra)}" if extra else ""))
    return 0


def tests_of(lab, top=TOP):
    """[(run, seconds, test, what)] of labs/NN-slug/kernel/tests, in boot order."""
    out, run = [], None
    for line in open(os.path.join(top, "labs", lab, "kernel", "tests")):
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "run":
            run = (w[1], w[2])
        elif w[0] == "test" and run:
            out.append((run[0], run[1], w[1], " ".join(w[2:])))
    return out


def md(text):
    """A cell: kernel names (with _ or ()) in code, | escaped."""
    words = []
    for w in text.replace("|", "\\|").split(" "):
        m = re.match(r"^([(\"]?)([A-Za-z0-9_./>+=-]*(?:_|\(\))[A-Za-z0-9_./>+=()-]*)([,.;:)\"]?)$", w)
        if m and "`" not in w:
            name, tail = m.group(2), m.group(3)
            while name.count(")") > name.count("(") and name.endswith(")"):
                name, tail = name[:-1], ")" + tail
            words.append(f"{m.group(1)}`{name}`{tail}")
        else:
            words.append(w)
    return " ".join(words)


def cmd_table():
    L = []
    for lab in parts():
        n = lab[:2]
        tests = tests_of(lab)
        todo = [t for t in tests if re.match(r"todo\d+_", t[2])]
        files = lab_files(lab)
        ex = experiments_of(lab)
        L += [f"**Lab {n}'s kernel part** (`labs/{lab}/kernel/`): the TODO regions of "
              + ", ".join(f"`{f}`" for f in files) + "; "
              + (f"it is what `{'`, `'.join(ex)}` measure{'s' if len(ex) == 1 else ''}. " if ex else "")
              + f"The untouched skeleton scores **{len(tests) - len(todo)}/{len(tests)}**: it fails exactly "
              f"the `todoN_` tests (`make kernel-check LAB={n}` proves it).", "",
              "| Test | Run (limit) | What it checks | Skeleton |", "|---|---|---|---|"]
        for run, secs, name, what in tests:
            L.append(f"| `{name}` | `{run}` ({secs} s) | {md(what)} | {'FAIL' if (run, secs, name, what) in todo else 'PASS'} |")
        L.append("")
        muts = sorted(glob.glob(os.path.join(TOP, "labs", lab, "kernel", "mutants", "*.patch")))
        if muts:
            L += [f"Its wrong answers (`labs/{lab}/kernel/mutants/`; `make kernel-mutants LAB={n}` proves "
                  "that the named test rejects each):", "",
                  "| Wrong answer | The mistake | Caught by |", "|---|---|---|"]
            for m in muts:
                text = open(m).read()
                what = re.search(r"^mutant:\s*(.*)$", text, re.M)
                by = re.search(r"^caught-by:\s*(\S+)", text, re.M)
                L.append(f"| `{os.path.basename(m)[:-6]}` | {md(what.group(1) if what else '?')} | "
                         f"`{by.group(1) if by else '?'}` |")
            L.append("")
        else:
            L += ["Its wrong answers are in the instructors' repository "
                  f"(`labs/{lab}/kernel/mutants/`), not in this copy.", ""]
    if not L:
        L = ["No lab has a kernel part yet.", ""]
    sys.stdout.write("\n".join(L))
    return 0


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(__doc__.split("\n", 2)[2])
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "status" and not rest:
        return cmd_status()
    if cmd == "waiting" and rest:
        return cmd_waiting(rest)
    if cmd == "fold" and len(rest) == 1:
        return cmd_fold(rest[0])
    if cmd == "secrets" and not rest:
        for l in sorted(secrets()):
            print(l)
        return 0
    if cmd == "student-patches" and len(rest) == 1:
        for p in student_patches(os.path.abspath(rest[0])):
            print(p)
        return 0
    if cmd == "table" and not rest:
        return cmd_table()
    if cmd == "source" and len(rest) == 1:
        return cmd_source(os.path.abspath(rest[0]))
    sys.stderr.write(f"{PROG}: bad arguments: {' '.join(argv)}\n")
    sys.stderr.write(__doc__.split("\n", 2)[2])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
