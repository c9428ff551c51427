#!/usr/bin/env python3
"""Check that every chapter keeps the reader's shape (CONTRIBUTING.md,
"Chapter shape"): a crux box, quick quizzes with answers, a Summary and
Further reading; main text within its word budget, boxes within their share,
a short "What our runs showed" with few run IDs, narrow tables; and, when the
built book is there, a table of contents without stray attributes and a PDF
within its page budget; and no function or region printed whole twice
in the book.

Words are counted the way a reader meets them: prose outside code fences,
HTML comments and pandoc attribute blocks; `.aside` and `.quiz` divs are
counted apart from the main text; a `.for-students` div (the students'
edition's text in place of a lab's answer listing) is counted in neither,
as the listing it replaces is not.
"""
import argparse
import glob
import html.parser
import os
import re
import sys

MAIN_MAX = 6000          # main-text words per chapter
BOX_SHARE = 0.35         # .aside + .quiz words, as a share of main text
RUNS_MAX = 450           # words in "What our runs showed"
RUN_IDS_MAX = 3          # distinct run IDs a reader sees in the main text
TABLE_COLS_MAX = 6       # columns of a table in a chapter's main text
PRIMER_MAX = 4000        # the primer's main text
GUIDE_MAX = 4000         # chapter 8, the tools chapter
PDF_PAGES_MAX = 300

RUN_ID = re.compile(r"\b\d{8}T\d{6}Z\b")
FENCE = re.compile(r"^\s*(```+|~~~+)")
DIV_OPEN = re.compile(r"^\s*:{3,}\s*(\{[^}]*\}|[A-Za-z][\w-]*)\s*(:{3,})?\s*$")
DIV_CLOSE = re.compile(r"^\s*:{3,}\s*$")
HEADER = re.compile(r"^(#{1,6})\s+(.*?)\s*(\{[^}]*\})?\s*$")


def classes_of(spec):
    if spec.startswith("{"):
        return re.findall(r"\.([A-Za-z][\w-]*)", spec)
    return [spec]


def words(text):
    text = re.sub(r"\[\]\{\.ref[^}]*\}", " N ", text)       # a filled-in value reads as one word
    text = re.sub(r"\{[^}]*\}", " ", text)                  # attribute blocks
    text = re.sub(r"<[^>]+>", " ", text)
    return [w for w in text.split() if re.search(r"[0-9A-Za-z]", w)]


class Chapter:
    def __init__(self, path):
        self.path = path
        self.main = self.box = self.aside = self.quiz = 0
        self.runs_words = 0
        self.runs_tables = 0
        self.has_runs_section = False
        self.run_ids = set()
        self.crux = 0
        self.quizzes = 0
        self.quiz_answers = 0
        self.headers = []
        self.wide_tables = []
        self.parse()

    def parse(self):
        text = open(self.path, encoding="utf-8").read()
        text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        lines = text.split("\n")
        stack = []            # classes of each open div
        fence = None
        section = None        # title of the current level-2/3 header path
        in_runs = False
        table_start = None
        for no, line in enumerate(lines, 1):
            if fence:
                if re.match(r"^\s*" + re.escape(fence) + r"\s*$", line):
                    fence = None
                continue
            m = FENCE.match(line)
            if m:
                fence = m.group(1)[0] * 3
                fence = m.group(1)
                continue
            if DIV_CLOSE.match(line) and stack:
                stack.pop()
                continue
            m = DIV_OPEN.match(line)
            if m:
                cls = classes_of(m.group(1))
                stack.append(cls)
                flat = [c for s in stack for c in s]
                if "crux" in cls:
                    self.crux += 1
                if "quiz" in cls:
                    self.quizzes += 1
                if "answer" in cls and "quiz" in flat:
                    self.quiz_answers += 1
                if "reftable" in cls:
                    ncols = len([c for c in re.search(r'cols="([^"]*)"', m.group(1)).group(1).split(";") if c.strip()]) \
                        if 'cols="' in m.group(1) else 0
                    if in_runs:
                        self.runs_tables += 1
                    if ncols > TABLE_COLS_MAX and "aside" not in flat:
                        self.wide_tables.append((no, ncols))
                continue
            flat = [c for s in stack for c in s]
            h = HEADER.match(line)
            if h and not flat:
                level, title = len(h.group(1)), h.group(2)
                self.headers.append((level, title, no))
                if level <= 3:
                    in_runs = (level == 3 and title.strip().lower() == "what our runs showed")
                    if in_runs:
                        self.has_runs_section = True
            # pipe tables: a header row followed by a |---| rule
            if re.match(r"^\s*\|.*\|\s*$", line):
                if table_start is None:
                    table_start = no
                    ncols = line.strip().strip("|").count("|") + 1
                    if ncols > TABLE_COLS_MAX and "aside" not in flat:
                        self.wide_tables.append((no, ncols))
                    if in_runs:
                        self.runs_tables += 1
            else:
                table_start = None
            n = len(words(line))
            if "for-students" in flat:
                continue      # the students' edition's stand-in for a listing: neither edition shows both
            if "aside" in flat:
                self.aside += n
            elif "quiz" in flat:
                self.quiz += n
            else:
                self.main += n
                visible = re.sub(r"\{[^}]*\}", " ", line)
                self.run_ids.update(RUN_ID.findall(visible))
                if in_runs:
                    self.runs_words += n


def check_chapter(c, problems):
    name = os.path.basename(c.path)
    primer = name.startswith("00-")
    budget = PRIMER_MAX if primer else GUIDE_MAX if name.startswith("08-") else MAIN_MAX
    def bad(msg):
        problems.append(f"{name}: {msg}")
    if c.main > budget:
        bad(f"main text is {c.main} words (at most {budget})")
    boxes = c.aside + c.quiz
    if c.main and boxes > BOX_SHARE * c.main:
        bad(f".aside + .quiz text is {boxes} words, {100 * boxes / c.main:.0f} % of the main text (at most {BOX_SHARE:.0%})")
    if not c.crux:
        bad("no crux box (::: {.crux})")
    titles = [t.strip().lower() for lvl, t, _ in c.headers if lvl == 2]
    if not primer:
        if "summary" not in titles:
            bad("no '## Summary' section")
        if not c.has_runs_section:
            bad("no '### What our runs showed' section")
    if "further reading" not in titles:
        bad("no '## Further reading' section")
    if c.quizzes < 2:
        bad(f"{c.quizzes} quick quiz(zes) (at least 2, one ::: {{.quiz}} per question)")
    if c.quiz_answers < c.quizzes:
        bad(f"{c.quizzes - c.quiz_answers} quick quiz(zes) without a ::: {{.answer}} inside")
    if c.runs_words > RUNS_MAX:
        bad(f"'What our runs showed' is {c.runs_words} words (at most {RUNS_MAX})")
    if c.runs_tables > 1:
        bad(f"'What our runs showed' has {c.runs_tables} tables (at most 1)")
    if len(c.run_ids) > RUN_IDS_MAX:
        bad(f"{len(c.run_ids)} run IDs in the main text (at most {RUN_IDS_MAX}): {' '.join(sorted(c.run_ids))}")
    for no, ncols in c.wide_tables:
        bad(f"line {no}: a table of {ncols} columns (at most {TABLE_COLS_MAX})")


class TocParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.depth = 0
        self.in_toc = False
        self.text = []
        self.links = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "nav" and a.get("id") == "TOC":
            self.in_toc = True
        if self.in_toc and tag == "a":
            self.links.append(a.get("href", ""))
    def handle_endtag(self, tag):
        if tag == "nav":
            self.in_toc = False
    def handle_data(self, data):
        if self.in_toc:
            self.text.append(data)


def check_built(problems, html_path, pdf_path):
    notes = []
    if os.path.exists(html_path):
        p = TocParser()
        p.feed(open(html_path, encoding="utf-8").read())
        toc = " ".join(p.text)
        if "{#" in toc:
            problems.append(f"{html_path}: the table of contents shows a '{{#...}}' attribute")
        runs = [h for h in p.links if re.search(RUN_ID, h)]
        if runs:
            problems.append(f"{html_path}: the table of contents lists {len(runs)} single runs (one entry per experiment)")
        notes.append(f"toc: {len(p.links)} entries")
    if os.path.exists(pdf_path):
        data = open(pdf_path, "rb").read()
        m = re.findall(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)", data)
        pages = max(int(x) for x in m) if m else len(re.findall(rb"/Type\s*/Page\b", data))
        if pages > PDF_PAGES_MAX:
            problems.append(f"{pdf_path}: {pages} pages (at most {PDF_PAGES_MAX})")
        notes.append(f"pdf: {pages} pages")
    return notes


INCLUDE = re.compile(r"^\s*```+\s*\{([^}]*\binclude=\"[^\"]+\"[^}]*)\}")


def attr(spec, name):
    m = re.search(r"\b" + name + r'="([^"]*)"', spec)
    return m.group(1) if m else None


def check_whole_listings(files, problems):
    """A function or region is printed whole at most once in the book: a
    second listing of it shows an excerpt (from=/to=) or points back."""
    seen = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                spec = m.group(1)
                if attr(spec, "from") or attr(spec, "to") or attr(spec, "lines"):
                    continue
                what = attr(spec, "function") or attr(spec, "region")
                if not what:
                    continue
                key = (attr(spec, "include"), what)
                if key in seen:
                    problems.append(f"{os.path.basename(f)}:{n}: {what} from {key[0]} is printed whole a second time "
                                    f"(first at {seen[key]}); show an excerpt (from=/to=) or refer back")
                else:
                    seen[key] = f"{os.path.basename(f)}:{n}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="chapter files (default: chapters/0[0-9]-*.md)")
    ap.add_argument("--built", action="store_true",
                    help="also check build/book.html's table of contents and build/book.pdf's page count")
    ap.add_argument("--quiet", action="store_true", help="print only problems and the closing line")
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    os.chdir(root)
    files = args.files or sorted(glob.glob("chapters/0[0-9]-*.md"))
    for f in files:
        if not os.path.isfile(f):
            print(f"check-shape: no such file: {f}", file=sys.stderr)
            sys.exit(2)
    problems = []
    if not args.quiet:
        print(f"{'chapter':28} {'main':>5} {'aside':>5} {'quiz':>5} {'box%':>5} {'runs':>5} {'ids':>3} {'quiz':>4}")
    for f in files:
        c = Chapter(f)
        if not args.quiet:
            share = 100 * (c.aside + c.quiz) / c.main if c.main else 0
            print(f"{os.path.basename(f)[:28]:28} {c.main:5} {c.aside:5} {c.quiz:5} {share:5.0f} {c.runs_words:5} "
                  f"{len(c.run_ids):3} {c.quizzes:4}")
        check_chapter(c, problems)
    if not args.files:
        check_whole_listings(sorted(glob.glob("chapters/0[0-9]-*.md")), problems)
    notes = check_built(problems, "build/book.html", "build/book.pdf") if args.built else []
    for p in problems:
        print("  FAIL " + p)
    print(f"check-shape: {len(files)} file(s){', ' + ', '.join(notes) if notes else ''}: "
          f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
