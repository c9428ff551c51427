#!/usr/bin/env python3
"""split.py: the book as a website, from pandoc's HTML of the whole book.

Usage: split.py BOOK_HTML OUT_DIR
  BOOK_HTML  pandoc's standalone, non-self-contained HTML5 of book.md with
             --section-divs (the Makefile writes build/site-src/book.html)
  OUT_DIR    the site (build/site): index.html, a page per level-1 section,
             measured.html, img/, book.css, pandoc.css, site.css, site.js;
             search-docs.json beside BOOK_HTML (search-index.js makes the
             index from it)
A level-1 section becomes one page named after its id (ch-rwsem.html); the
preface becomes index.html. The "Reference runs" appendix (an unnumbered
level-1 section whose level-2 sections have ids runs-EXPERIMENT, larger
than SPLIT_BYTES) becomes a page per level-2 section, one per experiment. Every '#id' link is
rewritten to PAGE.html#id; images are copied under img/. Python 3 stdlib
only; pandoc renders the Markdown of the results files.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.realpath(os.path.join(HERE, "..", "..", ".."))
SPLIT_BYTES = 16_000
SPLIT_IDS = ("reference-runs", "app-runs", "runs")


class Sec:
    def __init__(self, sid, level, classes, start, open_end):
        self.id, self.level, self.classes = sid, level, classes
        self.start, self.open_end, self.end = start, open_end, None
        self.children = []
        self.title_html, self.number = "", ""


def parse_sections(body):
    """The section tree: pandoc's --section-divs nests them properly."""
    roots, stack = [], []
    for m in re.finditer(r'<section\b([^>]*)>|</section>', body):
        if m.group(0).startswith("</"):
            s = stack.pop()
            s.end = m.end()
            continue
        attrs = m.group(1)
        sid = re.search(r'\bid="([^"]*)"', attrs)
        cls = re.search(r'\bclass="([^"]*)"', attrs)
        classes = cls.group(1).split() if cls else []
        level = next((int(c[5:]) for c in classes if re.fullmatch(r"level\d", c)), 0)
        s = Sec(sid.group(1) if sid else "", level, classes, m.start(), m.end())
        h = re.match(r'\s*<h(\d)([^>]*)>(.*?)</h\1>', body[m.end():], re.S)
        if h:
            s.title_html = h.group(3)
            n = re.search(r'data-number="([^"]*)"', h.group(2))
            s.number = n.group(1) if n else ""
        (stack[-1].children if stack else roots).append(s)
        stack.append(s)
    return roots


def text_of(fragment):
    t = re.sub(r'<span class="header-section-number">[^<]*</span>|<a class="site-anchor"[^>]*>#</a>',
               "", fragment)
    t = re.sub(r"</?(?:span|a|code|em|strong|b|i|mark|sup|sub|abbr|kbd|var|q|small|wbr)\b[^>]*>", "", t)
    t = re.sub(r"<[^>]+>", " ", t)
    return re.sub(r"\s+", " ", html.unescape(t)).strip()


def title_of(s):
    return text_of(s.title_html)


def label_of(s):
    return (s.number + " " if s.number else "") + title_of(s)


class Page:
    def __init__(self, name, title, number, html_, sec=None, parent=None):
        self.name, self.title, self.number, self.html = name, title, number, html_
        self.sec, self.parent, self.children = sec, parent, []

    @property
    def label(self):
        return (self.number + " " if self.number else "") + self.title


def esc(s):
    return html.escape(s, quote=True)


def pandoc_md(path, text=None):
    """path's Markdown (or text, named path in errors) as HTML."""
    r = subprocess.run(["pandoc", "--from", "markdown", "--to", "html5"] + ([] if text is not None else [path]),
                       input=text, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"site: pandoc failed on {path}: {r.stderr.strip()}")
    return r.stdout


def copy_image(src, out, copied):
    """img/<flattened path>; a path relative to the repository top."""
    if src.startswith(("data:", "http:", "https:", "img/")):
        return src
    path = os.path.join(TOP, html.unescape(src))
    if not os.path.isfile(path):
        return src	# the browser check reports it
    name = "img/" + re.sub(r"[^\w.-]", "-", os.path.relpath(path, TOP))
    if name not in copied:
        copied.add(name)
        os.makedirs(os.path.join(out, "img"), exist_ok=True)
        shutil.copyfile(path, os.path.join(out, name))
    return name


def chapter_results():
    """Every ::: {.results experiment=X reference="R..."} in book order: (experiment, runs)."""
    book = open(os.path.join(TOP, "book.md")).read()
    files = re.findall(r"^- `(chapters/[^`]+\.md)`", book, re.M)
    found = []
    for f in files:
        fence = False
        for line in open(os.path.join(TOP, f)):
            if re.match(r"\s*(```|~~~)", line):
                fence = not fence
            if fence:
                continue
            m = re.match(r"\s*:::+\s*\{\.results\b([^}]*)\}", line)
            if m:
                e = re.search(r'experiment="([^"]+)"', m.group(1))
                r = re.search(r'reference="([^"]*)"', m.group(1))
                if e:
                    found.append((e.group(1), r.group(1).split() if r else []))
    return found


def parse_table(md):
    """The first pipe table of a results file: a list of row dicts."""
    lines = md.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith("|")), None)
    if at is None or at + 2 >= len(lines):
        return []
    cells = lambda l: [c.strip() for c in l.strip().strip("|").split("|")]
    head, rows = cells(lines[at]), []
    for l in lines[at + 2:]:
        if not l.startswith("|"):
            break
        c = cells(l)
        if len(c) == len(head):
            rows.append(dict(zip(head, c)))
    return rows


def setting(cell):
    """'998 us (steal policy 1 (nosteal))' -> ('998 us', 'steal policy 1 (nosteal)')"""
    m = re.match(r"\s*([^(]*?)\s*\((.*)\)\s*$", cell or "")
    return (m.group(1), m.group(2)) if m else ((cell or "").strip(), "")


def row_key(r):
    return (r.get("Metric", ""), setting(r.get("After"))[1])


def verdict(r):
    if not r:
        return "&ndash;"
    before, after = setting(r.get("Before"))[0], setting(r.get("After"))[0]
    res = r.get("Result", "")
    cls = "site-pass" if res.startswith("PASS") else "site-fail" if res.startswith("FAIL") else ""
    return (f"{esc(before)} &rarr; {esc(after)}, <strong>{esc(r.get('Ratio', ''))}</strong> "
            f'<span class="{cls}">{esc(res)}</span>')


def measured_page(out, results, copied, chapter_of):
    shown = os.environ.get("MMLOCKS_RESULTS") or "results/latest"	# the book's results boxes' run
    latest = os.path.join(TOP, shown)
    have = os.path.isdir(latest)
    run = os.path.basename(os.path.realpath(latest)) if have else None
    fixture = None
    if have:
        try:
            fixture = json.load(open(os.path.join(latest, "meta.json"))).get("fixture")
        except (OSError, ValueError, AttributeError):
            pass
    parts = ['<section id="measured" class="level1 unnumbered">',
             '<h1 class="unnumbered">Measured on this machine</h1>']
    if have and fixture:
        parts.append(f'<div class="site-howto"><p><strong>Test data, not a measurement.</strong> '
                     f"This site was built with <code>{esc(shown)}</code>: {esc(str(fixture))} "
                     "<code>make reproduce</code>, then <code>make book</code>, puts your own run "
                     "here.</p></div>")
    if have:
        parts.append(f"<p>{'The test run' if fixture else 'Your own run'}, <code>{esc(shown)}</code> "
                     f"(run <code>{esc(run)}</code>), "
                     "beside the committed reference run each chapter quotes. The ratios are what "
                     "to compare: under QEMU without hardware virtualisation the absolute times "
                     "depend on the host.</p>")
        summ = os.path.join(latest, "summary.md")
        if os.path.isfile(summ):
            parts.append('<section id="m-summary" class="level2 unnumbered">'
                         f'<h2 class="unnumbered">Summary of {"the test run" if fixture else "your run"}</h2>'
                         f'<p class="site-source"><code>{esc(shown)}/summary.md</code></p>'
                         + pandoc_md(summ) + "</section>")
    else:
        parts.append('<div class="site-howto"><p><strong>Nothing has been measured on this machine '
                     "yet.</strong> <code>make reproduce</code> builds the lab kernel and boots it "
                     "in QEMU once per experiment; it writes <code>results/&lt;UTC time&gt;/</code> "
                     "and points <code>results/latest</code> at it. Then <code>make book</code> "
                     "again, and this page shows <code>results/latest/summary.md</code> and its "
                     "plots beside the reference runs below.</p>"
                     "<p>One experiment alone: <code>labs/kernel/reproduce.sh --only "
                     "rwsem-steal</code>.</p></div>")
    seen = set()
    for exp, runs in results:
        if exp in seen:
            continue
        seen.add(exp)
        ref = runs[-1] if runs else None
        refdir = os.path.join(TOP, "reference", exp, ref) if ref else None
        mine = os.path.join(latest, exp + ".md") if have else None
        parts.append(f'<section id="m-{esc(exp)}" class="level2 unnumbered">'
                     f'<h2 class="unnumbered"><code>{esc(exp)}</code></h2>')
        ch = chapter_of.get(exp)
        if ch:
            parts.append(f'<p class="site-source">Discussed in <a href="{ch[0]}">{esc(ch[1])}</a>.</p>')
        ref_md = os.path.join(refdir, exp + ".md") if refdir else None
        ref_text = open(ref_md).read() if ref_md and os.path.isfile(ref_md) else ""
        mine_text = open(mine).read() if mine and os.path.isfile(mine) else ""
        rrows, mrows = parse_table(ref_text), parse_table(mine_text)
        mine_by = {row_key(r): r for r in mrows}
        if rrows or mrows:
            parts.append('<table class="site-compare"><thead><tr><th>Metric (setting)</th>'
                         f'<th>Reference run {esc(ref or "")}</th><th>This machine'
                         + (f" ({esc(run)})" if have else "") + '</th></tr></thead><tbody>')
            keys = [row_key(r) for r in rrows]
            for r in rrows + [m for m in mrows if row_key(m) not in keys]:
                k = row_key(r)
                m = mine_by.get(k) if have else None
                ref_r = r if k in keys else None
                label = esc(k[0]) + (f'<br><span class="site-source">{esc(k[1])}</span>' if k[1] else "")
                parts.append(f"<tr><td>{label}</td><td>{verdict(ref_r)}</td><td>"
                             + (verdict(m) if m else "not measured") + "</td></tr>")
            parts.append("</tbody></table>")
        parts.append('<div class="site-side">')
        for who, d, text in (("This machine", latest if have else None, mine_text),
                             (f"Reference run {ref}" if ref else "Reference run", refdir, ref_text)):
            parts.append(f'<div class="site-col"><h3 class="unnumbered">{esc(who)}</h3>')
            svg = os.path.join(d, exp + ".svg") if d else None
            if svg and os.path.isfile(svg):
                src = copy_image(os.path.relpath(svg, TOP), out, copied)
                parts.append(f'<figure><img src="{esc(src)}" alt="{esc(exp)}: {esc(who)}"></figure>')
            if text:
                parts.append(f"<details><summary>Every row and its details "
                             f"(<code>{esc(os.path.relpath(os.path.realpath(d), TOP))}/{esc(exp)}.md</code>)</summary>"
                             # the record names its plot as results/latest/EXP.svg (where
                             # make reproduce left it); this run's own is beside the record
                             + pandoc_md(os.path.join(d, exp + ".md"), text.replace(
                                 f"results/latest/{exp}.svg", os.path.relpath(os.path.join(d, exp + ".svg"), TOP)))
                             + "</details>")
            elif who == "This machine":
                parts.append(f"<p>Not measured yet: <code>labs/kernel/reproduce.sh --only {esc(exp)}</code>"
                             " (or <code>make reproduce</code>), then <code>make book</code>.</p>")
            else:
                parts.append("<p>No reference run is quoted for this experiment.</p>")
            parts.append("</div>")
        parts.append("</div></section>")
    parts.append("</section>")
    return "".join(parts)


def main(argv):
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__.split("\n", 2)[2])
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    src, out = argv
    doc = open(src, encoding="utf-8").read()
    head = re.search(r"<head>(.*?)</head>", doc, re.S).group(1)
    body = re.search(r"<body[^>]*>(.*)</body>", doc, re.S).group(1)
    style = "\n".join(re.findall(r"<style>(.*?)</style>", head, re.S))
    # pandoc's own rules (highlighting), before book.css as in build/book.html
    title_block = re.search(r'<header id="title-block-header">.*?</header>', body, re.S)
    title_block = title_block.group(0) if title_block else ""
    roots = [s for s in parse_sections(body) if s.level == 1]
    if not roots:
        sys.exit("site: no level-1 sections (pandoc --section-divs?)")

    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)

    pages, top = [], []	# every page in reading order; the sidebar's top level
    index = None
    last_numbered = -1
    for s in roots:
        chunk = body[s.start:s.end]
        if s.id == "preface" or (index is None and "unnumbered" in s.classes and not top):
            index = Page("index.html", title_of(s), "", title_block + chunk, s)
            pages.append(index)
            top.append(index)
            continue
        h2 = [c for c in s.children if c.level == 2 and c.id]
        split = ("unnumbered" in s.classes and len(chunk) > SPLIT_BYTES and len(h2) >= 3
                 and (s.id in SPLIT_IDS or all(c.id.startswith("runs-") for c in h2)))
        if split:
            p = Page(s.id + ".html", title_of(s), s.number, "", s)
            pages.append(p)
            top.append(p)
            for c in h2:
                cp = Page(c.id + ".html", title_of(c), c.number, body[c.start:c.end], c, p)
                p.children.append(cp)
                pages.append(cp)
            p.html = (body[s.start:h2[0].start] + '<ul class="site-subpages">'
                      + "".join(f'<li><a href="#{esc(c.id)}">{c.title_html}</a></li>' for c in h2)
                      + "</ul>\n</section>")
        else:
            p = Page(s.id + ".html", title_of(s), s.number, chunk, s)
            pages.append(p)
            top.append(p)
            if s.number:
                last_numbered = len(pages) - 1
    if index is None:
        index = Page("index.html", "mmlocks", "", title_block, None)
        pages.insert(0, index)
        top.insert(0, index)

    # which page holds each id; each results box's experiment
    where = {}
    for p in pages:
        for m in re.finditer(r'\sid="([^"]+)"', p.html):
            where.setdefault(html.unescape(m.group(1)), p)
    results = chapter_results()
    box = re.compile(r'<div class="results (?:measured|not-measured)[^"]*">')
    chapter_of = {}
    k = 0
    for p in pages:
        for _ in box.finditer(p.html):
            if k < len(results):
                top_page = p.parent or p
                chapter_of.setdefault(results[k][0], (p.name + "#" + (p.sec.id if p.sec else ""),
                                                      top_page.label))
            k += 1
    if k != len(results):
        print(f"site: warning: {k} results boxes in the HTML, {len(results)} in the chapters;"
              " their links go to the top of measured.html", file=sys.stderr)

    copied = set()
    measured = Page("measured.html", "Measured on this machine", "",
                    measured_page(out, results, copied, chapter_of))
    pos = last_numbered + 1 if last_numbered >= 0 else len(pages)
    pages.insert(pos, measured)
    top.insert(top.index(pages[pos + 1]) if pos + 1 < len(pages) else len(top), measured)
    for m in re.finditer(r'\sid="([^"]+)"', measured.html):
        where.setdefault(html.unescape(m.group(1)), measured)

    # rewrite links, images, the results boxes; heading anchors
    def fix(p):
        def href(m):
            i = html.unescape(m.group(1))
            q = where.get(i)
            if q is None or q is p:
                return m.group(0)
            return f'href="{q.name}#{esc(i)}"'
        t = re.sub(r'href="#([^"]+)"', href, p.html)
        t = re.sub(r'(<img\b[^>]*?\ssrc=")([^"]+)"',
                   lambda m: m.group(1) + copy_image(m.group(2), out, copied) + '"', t)
        t = re.sub(r'(<section id="([^"]+)"[^>]*>\s*<h([1-6])[^>]*>.*?)(</h\3>)',
                   lambda m: (m.group(1) + f'<a class="site-anchor" href="#{m.group(2)}" '
                              f'aria-label="Link to this section">#</a>' + m.group(4)), t, flags=re.S)
        out_t, pos_, n = [], 0, 0
        for m in box.finditer(t):	# a link at the end of each results box
            exp = results[boxes_seen[0]][0] if boxes_seen[0] < len(results) else None
            boxes_seen[0] += 1
            depth, j = 1, m.end()
            for d in re.finditer(r"<div\b|</div>", t[m.end():]):
                depth += -1 if d.group(0) == "</div>" else 1
                if depth == 0:
                    j = m.end() + d.start()
                    break
            link = ("measured.html#m-" + exp) if exp else "measured.html"
            out_t.append(t[pos_:j])
            out_t.append(f'<p class="site-measured"><a href="{esc(link)}">Measured on this machine: '
                         f'your run beside the reference run &rarr;</a></p>')
            pos_ = j
        out_t.append(t[pos_:])
        return "".join(out_t)
    boxes_seen = [0]
    for p in pages:
        if p is not measured:
            p.html = fix(p)
    measured.html = fix(measured)

    # the index page: the chapter list and how to start
    def crux(p):
        m = re.search(r'<div class="crux">(.*?)</div>', p.html, re.S)
        return re.sub(r"^The crux\.\s*", "", text_of(m.group(1))) if m else ""
    items = []
    for p in top:
        if p is index:
            continue
        c = crux(p)
        items.append(f'<li><a href="{p.name}">{esc(p.label)}</a>'
                     + (f'<br><span class="site-crux">{esc(c)}</span>' if c else "") + "</li>")
    primer = next((p for p in top if "primer" in p.name), None)
    first = next((p for p in top if p is not index and p is not primer and p.number), None)
    start = ('<section id="site-start" class="level1 unnumbered"><h1 class="unnumbered">How to start'
             '<a class="site-anchor" href="#site-start" aria-label="Link to this section">#</a></h1>')
    if primer:
        start += (f'<p>New to the kernel\'s memory management? Read <a href="{primer.name}">'
                  'the primer</a> first: it teaches what the chapters assume.</p>')
    if first:
        start += (f'<p>{"Then begin" if primer else "Begin"} with chapter {esc(first.number)}, <a href="{first.name}">{esc(first.title)}</a>, '
                  'and follow the <em>Next</em> link at the foot of each page. Every chapter has a lab in '
                  '<code>labs/NN-slug/</code> (<code>make grade</code>) and an experiment that '
                  '<code>make reproduce</code> runs in QEMU; your numbers then appear on '
                  '<a href="measured.html">Measured on this machine</a>.</p>')
    start += ('<p>Search (top of the contents) finds functions, counters and ideas across the book. '
              'The same book as one page, and as EPUB and PDF: <code>build/book.html</code>, '
              '<code>build/book.epub</code>, <code>build/book.pdf</code>.</p>')
    start += ('</section><section id="site-chapters" class="level1 unnumbered"><h1 class="unnumbered">'
              'Contents<a class="site-anchor" href="#site-chapters" aria-label="Link to this section">#'
              '</a></h1><ol class="site-chapters">' + "".join(items) + "</ol></section>")
    index.html = index.html + start

    # search documents: one per section, its own text (not its subsections')
    docs = []
    for p in pages:
        if p is measured:
            continue
        chap = (p.parent or p).label
        secs = parse_sections(p.html)

        def walk(s):
            own = p.html[s.open_end:s.end]
            for c in s.children:
                own = own.replace(p.html[c.start:c.end], " ")
            own = re.sub(r"<h\d[^>]*>.*?</h\d>", " ", own, count=1, flags=re.S)
            own = re.sub(r'<a class="site-anchor"[^>]*>#</a>', "", own)
            if s.id:
                docs.append({"p": p.name, "a": s.id, "c": chap, "s": label_of(s) if s.title_html else chap,
                             "t": title_of(s), "b": text_of(own)})
            for c in s.children:
                walk(c)
        for s in secs:
            walk(s)
    with open(os.path.join(os.path.dirname(os.path.abspath(src)), "search-docs.json"), "w",
              encoding="utf-8") as f:
        json.dump(docs, f, ensure_ascii=False)

    # the pages
    def nav(cur):
        curtop = cur.parent or cur
        li = []
        for p in top:
            here = p is curtop
            a = (f'<a href="{p.name}"' + (' aria-current="page"' if p is cur else "") + ">"
                 + (f'<span class="site-num">{esc(p.number)}</span> ' if p.number else "")
                 + esc(p.title) + "</a>")
            sub = ""
            if here and p.children:
                sub = "<ol>" + "".join(
                    f'<li><a href="{c.name}"' + (' aria-current="page"' if c is cur else "") + ">"
                    + esc(c.title) + "</a>"
                    + (subsections(c) if c is cur else "") + "</li>" for c in p.children) + "</ol>"
            elif here:
                sub = subsections(p)
            li.append(f'<li class="{"site-here" if here else ""}">{a}{sub}</li>')
        return "<ol class=\"site-toc\">" + "".join(li) + "</ol>"

    def subsections(p):
        secs = parse_sections(p.html)
        h2 = [c for s in secs for c in s.children if c.level == 2 and c.id]
        if p.sec is not None and p.sec.level == 2:
            h2 = [c for s in secs for c in s.children if c.level == 3 and c.id]
        if not h2:
            return ""
        return '<ol class="site-secs">' + "".join(
            f'<li><a href="#{esc(c.id)}" data-spy="{esc(c.id)}">'
            + (f'<span class="site-num">{esc(c.number)}</span> ' if c.number else "")
            + esc(title_of(c)) + "</a></li>" for c in h2) + "</ol>"

    tmpl = open(os.path.join(HERE, "page.html"), encoding="utf-8").read()
    for i, p in enumerate(pages):
        prev_ = pages[i - 1] if i > 0 else None
        next_ = pages[i + 1] if i + 1 < len(pages) else None
        pn = '<nav class="site-prevnext" aria-label="Previous and next">'
        pn += (f'<a rel="prev" class="site-prev" href="{prev_.name}"><span>Previous</span>'
               f'{esc(prev_.label)}</a>') if prev_ else "<span></span>"
        pn += (f'<a rel="next" class="site-next" href="{next_.name}"><span>Next</span>'
               f'{esc(next_.label)}</a>') if next_ else "<span></span>"
        pn += "</nav>"
        page = (tmpl.replace("{{title}}", esc(p.label if p is not index else "mmlocks"))
                .replace("{{nav}}", nav(p)).replace("{{prevnext}}", pn)
                .replace("{{body}}", p.html))
        with open(os.path.join(out, p.name), "w", encoding="utf-8") as f:
            f.write(page)

    for name in ("site.css", "site.js"):
        shutil.copyfile(os.path.join(HERE, name), os.path.join(out, name))
    shutil.copyfile(os.path.join(TOP, "scripts", "book", "book.css"), os.path.join(out, "book.css"))
    with open(os.path.join(out, "pandoc.css"), "w") as f:
        f.write(style)
    print(f"site: {len(pages)} pages, {len(docs)} search sections, {len(copied)} images in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
