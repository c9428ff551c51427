#!/usr/bin/env python3
"""browser-check: open the book in headless Chromium and fail on what a reader would see wrong.

Usage: browser-check.py [--html FILE | --site DIR] [--out DIR] [--self-test] [--help]
  --html FILE   the page (default build/book.html)
  --site DIR    check the website instead (build/site, see below)
  --out DIR     where the screenshots go (default build/browser)
  --self-test   check a small page, and a small two-page site, with one
                problem of each kind and require that every kind is reported
Loads the page at 1280 x 800 (desktop), at 390 x 844 (a phone, emulated
through the DevTools protocol over a pipe) and at 1280 x 800 in dark mode,
and reports, one line each: a
broken '#' link, an image that does not decode, a console error or uncaught
exception, a request for anything outside the file, a table or listing
wider than its column without a visible scroll cue, a code token with
less than 4.5:1 contrast on its background, a page wider than the
viewport, a figure (mmlocks.lua's figure.zoomable) that does not open
full size or whose smallest SVG label is below 9 px, in the column at
1280 px or opened full size; and, printed (the PDF's A4 text column), a
chapter's table wider than the column or with a word broken across lines. Prints each figure's smallest label in px.
Saves DIR/book-1280.png, book-390.png and book-1280-dark.png (the first
screen), and DIR/FIGURE-1280.png, FIGURE-390.png and FIGURE-390-full.png
(each figure in the column, and opened full size on the phone) for a
person to look at. Exit 0 when nothing was found, 1 otherwise, 2 on
bad usage or when Chromium is missing. Every wait is bounded (60 s).

With --site DIR (the website split.py writes): opens DIR/index.html at
1280 x 800, follows Next to the last page and Previous back, runs the
checks above on every page, requires that every page is reached, that
every link leads to a file that exists and every #fragment to an id on
its page; searches rwsem_down_read_slowpath, handoff (first hit in
chapter 1) and rwsem_rlock_steal, clicks the first hit and requires a
section containing the term at the top of the screen; scrolls a chapter
and requires the sidebar to mark the section; at 390 x 844 requires the
sidebar hidden until the menu button opens it and hidden again after;
fails on any console error. Saves DIR/site-*.png (--out's DIR).
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.realpath(os.path.join(HERE, "..", ".."))
# name, width, height, mobile, colour scheme
VIEWS = [("1280", 1280, 800, False, "light"), ("390", 390, 844, True, "light"),
         ("1280-dark", 1280, 800, False, "dark")]
TIMEOUT = 60


class Chrome:
    """Chromium with --remote-debugging-pipe: JSON messages, NUL-separated, on fds 3/4."""

    def __init__(self, exe, profile):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():	# in the child: our pipe ends become fds 3 and 4
            a = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
             "about:blank"],
            pass_fds=(to_r, from_w, 3, 4), preexec_fn=fds,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            r, _, _ = select.select([self.from_r], [], [], left)
            if r:
                chunk = os.read(self.from_r, 1 << 16)
                if not chunk:
                    raise EOFError("Chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session):
        deadline = time.monotonic() + TIMEOUT
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                del self.events[i]
                return m
        while True:
            m = self._read(deadline)
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def shoot(chrome, session, path, clip=None):
    params = {"format": "png"}
    if clip:
        params["clip"] = clip
    shot = chrome.send("Page.captureScreenshot", params, session)
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def event_problem(m, local, where):
    """What a DevTools event says is wrong, or None: an uncaught exception, a
    console error, a request for anything but data:/blob:/about: and what
    local(url) accepts (the page's own file, or the site's files)."""
    p = m.get("params", {})
    if m["method"] == "Runtime.exceptionThrown":
        return "uncaught exception: " + p["exceptionDetails"].get("text", "?")
    if m["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
        return "console error: " + " ".join(str(a.get("value", a.get("description", "")))
                                           for a in p.get("args", []))
    if m["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
        return "console error: " + p["entry"].get("text", "?")
    if m["method"] == "Network.requestWillBeSent":
        u = p["request"]["url"]
        if not local(u) and not u.startswith(("data:", "blob:", "about:")):
            return f"request outside {where}: " + u[:100]
    return None


def check_view(chrome, url, name, width, height, mobile, scheme, out, labels):
    problems = []
    target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Network", "Log"):
        chrome.send(f"{domain}.enable", session=s)
    chrome.send("Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, s)
    chrome.send("Emulation.setEmulatedMedia",
                {"features": [{"name": "prefers-color-scheme", "value": scheme}]}, s)
    chrome.send("Page.navigate", {"url": url}, s)
    chrome.wait_event("Page.loadEventFired", s)
    js = open(os.path.join(HERE, "browser-check.js")).read()
    r = chrome.send("Runtime.evaluate", {"expression": js, "awaitPromise": True,
                                         "returnByValue": True}, s)
    figures = []
    if "exceptionDetails" in r:
        problems.append(f"the check itself failed: {r['exceptionDetails'].get('text')}")
    else:
        for p in r["result"]["value"]:
            if isinstance(p, dict):
                figures = p["figures"]
            elif p.startswith("info: "):
                fig, col, full = p[6:].split()
                labels.setdefault(fig, {})[name] = (float(col), float(full))
            else:
                problems.append(p)
    file_url = url.split("#")[0]
    for m in chrome.events:
        if m.get("sessionId") == s:
            p = event_problem(m, lambda u: u == file_url, "the file")
            if p:
                problems.append(p)
    shoot(chrome, s, os.path.join(out, f"book-{name}.png"))
    if scheme == "light":	# each figure in the column, and opened full size
        for fig in figures:	# at the top of the screen, as much as fits
            chrome.send("Runtime.evaluate", {"expression": f"location.hash = ''; scrollTo(0, {fig['y']})"}, s)
            clip = {"x": fig["x"], "y": fig["y"], "width": fig["w"], "height": min(fig["h"], height), "scale": 1}
            shoot(chrome, s, os.path.join(out, f"{fig['id']}-{name}.png"), clip)
            if mobile:
                chrome.send("Runtime.evaluate", {"expression": f"location.hash = '{fig['id']}-full'"}, s)
                shoot(chrome, s, os.path.join(out, f"{fig['id']}-{name}-full.png"))
    chrome.send("Target.closeTarget", {"targetId": target})
    return problems


BAD_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>bad</title></head><body>
<h1 data-number="1">A chapter</h1>
<table style="table-layout: fixed; width: 40px"><tr><td style="overflow-wrap: anywhere">unbreakable</td></tr></table>
<pre><code><span class="kw" style="color: #777">faint</span></code></pre>
<p><a href="#nowhere">a broken link</a></p>
<p><img src="data:image/png;base64,AAAA" alt="broken"></p>
<p><img src="http://mmlocks.invalid/x.png" alt="outside"></p>
<table><tr><td style="white-space: nowrap">%s</td></tr></table>
<pre style="overflow-x: auto">%s</pre>
<figure id="fig-bad" class="zoomable"><span class="zoom-target" id="fig-bad-full"></span><a
class="zoom" href="#fig-bad-full"><img width="400" alt="tiny labels, no overlay"
src="data:image/svg+xml;base64,%s"></a></figure>
<script>console.error("a console error");</script>
</body></html>""" % ("wide " * 200, "long " * 200, base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" width="2000pt" height="100pt" viewBox="0 0 2000 100">'
    b'<text x="10" y="50" font-size="10">2 px in a 400 px image</text></svg>').decode())
KINDS = ("broken # link", "image does not decode", "request outside the file",
         "wider than its column", "page wider than the viewport", "console error",
         "low contrast", "figure does not open full size", "figure label smaller than",
         "the A4 column is", "is broken across lines")


BAD_SITE = {
    "index.html": '<!DOCTYPE html><html><head><meta charset="utf-8"><title>i</title></head><body>'
                  '<nav id="site-nav"><ol class="site-toc"><li><a href="index.html" aria-current="page">i</a></li></ol>'
                  '<input id="site-q"><div id="site-hits"></div></nav><main><section id="top"><h1>Index</h1>'
                  '<p><a href="missing.html">a missing page</a> <a href="b.html#nowhere">a missing anchor</a></p>'
                  '</section><a rel="next" href="b.html">next</a></main></body></html>',
    "b.html": '<!DOCTYPE html><html><head><meta charset="utf-8"><title>b</title></head><body>'
              '<main><section id="b"><h1>B</h1></section><a rel="prev" href="index.html">prev</a></main>'
              '<script>console.error("a console error")</script></body></html>',
    "lost.html": '<!DOCTYPE html><html><head><meta charset="utf-8"><title>lost</title></head><body></body></html>',
}
SITE_KINDS = ("link to a missing file", "missing anchor", "console error", "does not mark this page",
              "is not reached by Next links", "search 'handoff': no results", "no menu button")


def self_test(out):
    rc_book = self_test_book(out)
    with tempfile.TemporaryDirectory(prefix="browser-check-site.") as d:
        for name, text in BAD_SITE.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        import contextlib
        import io
        buf = io.StringIO()
        global SEARCH_WAIT
        SEARCH_WAIT, keep = 1, SEARCH_WAIT
        try:
            with contextlib.redirect_stdout(buf):
                rc = site_run(d, d)
        finally:
            SEARCH_WAIT = keep
        text = buf.getvalue()
        missed = [k for k in SITE_KINDS if k not in text]
        sys.stdout.write(text)
        ok = rc == 1 and not missed
        print("browser-check --site self-test: " + ("ok" if ok else "FAIL, not reported: " + ", ".join(missed)))
    return 0 if ok and rc_book == 0 else 1


def self_test_book(out):
    with tempfile.TemporaryDirectory(prefix="browser-check-self.") as d:
        page = os.path.join(d, "bad.html")
        with open(page, "w") as f:
            f.write(BAD_PAGE)
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = run(page, d)
        text = buf.getvalue()
        missed = [k for k in KINDS if k not in text]
        sys.stdout.write(text)
        ok = rc == 1 and not missed
        print("browser-check self-test: " + ("ok" if ok else "FAIL, not reported: " + ", ".join(missed)))
        return 0 if ok else 1


# ------------------------------------------------------------------ the site
# build/site (scripts/book/site/split.py): every page walked by its Next
# links and back by Previous, each page checked by browser-check.js, every
# link followed to a file and an id, three searches, the phone menu.
SEARCH_WAIT = 20	# seconds for the first results (the index loads on first use)
SEARCHES = (("rwsem_down_read_slowpath", None), ("handoff", "ch-rwsem.html"),
            ("rwsem_rlock_steal", None))
PAGE_INFO = """(() => {
  const q = s => document.querySelector(s);
  return {url: location.href.split('#')[0], title: document.title,
    ids: Array.from(document.querySelectorAll('[id]'), e => e.id),
    links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
    next: q('a[rel=next]') ? q('a[rel=next]').href : null,
    prev: q('a[rel=prev]') ? q('a[rel=prev]').href : null,
    nav: !!q('#site-nav .site-toc a[aria-current=page]')};
})()"""


class Tab:
    """One page target with its session; navigation waits for the load event."""

    def __init__(self, chrome, width, height, mobile=False, scheme="light"):
        self.c = chrome
        self.target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = chrome.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            chrome.send(f"{domain}.enable", session=self.s)
        chrome.send("Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, self.s)
        chrome.send("Emulation.setEmulatedMedia",
                    {"features": [{"name": "prefers-color-scheme", "value": scheme}]}, self.s)
        self.width, self.height = width, height

    def js(self, expr, await_promise=False):
        r = self.c.send("Runtime.evaluate", {"expression": expr, "awaitPromise": await_promise,
                                             "returnByValue": True}, self.s)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError("script failed: " + (d.get("exception", {}).get("description") or d.get("text", "?"))[:200])
        return r["result"].get("value")

    def go(self, url):
        self.c.events = [m for m in self.c.events if not (m.get("sessionId") == self.s and m.get("method") == "Page.loadEventFired")]
        self.c.send("Page.navigate", {"url": url}, self.s)
        self.c.wait_event("Page.loadEventFired", self.s)

    def click(self, selector):
        """Click a link; wait for the page it leads to (or the new #hash on this one)."""
        href = self.js(f"document.querySelector({json.dumps(selector)}).href")
        same = href.split("#")[0] == self.js("location.href.split('#')[0]")
        self.c.events = [m for m in self.c.events if not (m.get("sessionId") == self.s and m.get("method") == "Page.loadEventFired")]
        self.js(f"document.querySelector({json.dumps(selector)}).click()")
        if not same:
            self.c.wait_event("Page.loadEventFired", self.s)
        else:
            self.wait_for("location.href === " + json.dumps(href))
        return href

    def wait_for(self, cond, secs=TIMEOUT):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            try:
                if self.js(f"!!({cond})"):
                    return True
            except RuntimeError:
                pass
            time.sleep(0.05)
        return False

    def shot(self, path, full=False):
        shoot(self.c, self.s, path)

    def drain(self):
        """Console errors, exceptions and network requests since the last call."""
        out, keep = [], []
        for m in self.c.events:
            if m.get("sessionId") != self.s:
                keep.append(m)
                continue
            p = event_problem(m, lambda u: u.startswith("file:"), "the site")
            if p:
                out.append(p)
            elif m["method"] == "Network.loadingFailed" and not m.get("params", {}).get("canceled"):
                out.append("failed to load: " + m["params"].get("errorText", "?"))
        self.c.events = keep
        return out

    def close(self):
        self.c.send("Target.closeTarget", {"targetId": self.target})


def url_path(u):
    import urllib.parse
    return urllib.parse.unquote(urllib.parse.urlparse(u).path)


def site_checks(chrome, site, out):
    problems = []
    t0 = time.monotonic()
    index = "file://" + os.path.join(site, "index.html")
    js = open(os.path.join(HERE, "browser-check.js")).read()
    tab = Tab(chrome, 1280, 800)
    pages, order = {}, []

    def visit(label):
        info = tab.js(PAGE_INFO)
        name = os.path.basename(url_path(info["url"]))
        if info["url"] not in pages:
            pages[info["url"]] = info
            for p in tab.js(js, await_promise=True):	# the book's checks, on each page
                if isinstance(p, str) and not p.startswith("info: "):
                    problems.append(f"{name}: {p}")
        if not info["nav"]:
            problems.append(f"{name}: the sidebar does not mark this page")
        for p in tab.drain():
            problems.append(f"{name} ({label}): {p}")
        return info

    # 1. index.html, then Next to the end and Previous back to the start
    tab.go(index)
    tab.shot(os.path.join(out, "site-index-1280.png"))
    info = visit("open")
    order.append(info["url"])
    while info["next"]:
        if len(order) > 200:
            problems.append("more than 200 pages by Next links: a loop?")
            break
        tab.click("a[rel=next]")
        info = visit("next")
        if info["url"] in order:
            problems.append(f"Next leads back to {os.path.basename(url_path(info['url']))}")
            break
        order.append(info["url"])
    back = [info["url"]]
    while info["prev"] and len(back) <= len(order):
        tab.click("a[rel=prev]")
        info = visit("previous")
        back.append(info["url"])
    if back[::-1] != order:
        problems.append("Previous links do not retrace the Next links: "
                        + " ".join(os.path.basename(url_path(u)) for u in back[::-1]))
    names = [os.path.basename(url_path(u)) for u in order]
    on_disk = sorted(f for f in os.listdir(site) if f.endswith(".html"))
    for f in on_disk:
        if f not in names:
            problems.append(f"{f} is not reached by Next links from index.html")

    # 2. every link: a file that exists; a #fragment that is an id on that page
    nlinks = 0
    for u, info in pages.items():
        name = os.path.basename(url_path(u))
        for link in info["links"]:
            if not link.startswith("file:"):
                if not link.startswith(("mailto:", "http:", "https:")):
                    problems.append(f"{name}: odd link {link[:80]}")
                continue
            nlinks += 1
            base, _, frag = link.partition("#")
            path = url_path(base)
            if not os.path.exists(path):
                problems.append(f"{name}: link to a missing file: {os.path.relpath(path, site)}")
            elif frag:
                import urllib.parse
                frag = urllib.parse.unquote(frag)
                target = pages.get(base)
                if target is None:
                    if path.startswith(site + os.sep):
                        problems.append(f"{name}: link into a page no Next link reaches: {link[-60:]}")
                elif frag not in target["ids"]:
                    problems.append(f"{name}: missing anchor {os.path.basename(path)}#{frag}")
    print(f"  site: {len(order)} pages by Next and back, {nlinks} links resolved, "
          f"{time.monotonic() - t0:.1f} s")

    # 3. search: the first hit lands on a section that contains the term
    for i, (term, want) in enumerate(SEARCHES):
        try:
            search_one(tab, index, i, term, want, out, problems)
        except RuntimeError as e:
            problems.append(f"search {term!r}: {e}")
    site_phone(chrome, site, js, order, index, out, problems)
    return problems


def search_one(tab, index, i, term, want, out, problems):
    """Type TERM in the search box of index.html, click the first hit, check where it lands."""
    tab.go(index)
    tab.js(f"""(() => {{ const q = document.getElementById('site-q'); q.focus(); q.value = {json.dumps(term)};
                q.dispatchEvent(new Event('input')); }})()""")
    if not tab.wait_for("document.querySelector('#site-hits a.site-hit') || "
                        "/No section/.test(document.getElementById('site-hits').textContent)", SEARCH_WAIT):
        problems.append(f"search {term!r}: no results shown within {SEARCH_WAIT} s")
        return
    first = tab.js("(() => { const a = document.querySelector('#site-hits a.site-hit'); return a && "
                   "[a.querySelector('.site-hit-chap').textContent, a.querySelector('.site-hit-sec').textContent]; })()")
    if not first:
        problems.append(f"search {term!r}: no hit")
        return
    if i == 0:
        tab.shot(os.path.join(out, "site-search-1280.png"))
    href = tab.click("#site-hits a.site-hit")
    tab.wait_for("document.readyState === 'complete'", 10)
    landed = tab.js("""(() => { const id = decodeURIComponent(location.hash.slice(1));
        const el = document.getElementById(id); if (!el) return null;
        const r = el.getBoundingClientRect();
        return {id: id, text: el.textContent, top: r.top}; })()""")
    page = os.path.basename(url_path(href))
    if not landed:
        problems.append(f"search {term!r}: the first hit {page}#{href.partition('#')[2]} has no target")
    else:
        ok = term.lower() in landed["text"].lower()
        print(f"  search {term!r}: first hit {first[0]} / {first[1]} -> {page}#{landed['id']}"
              + ("" if ok else "  (term NOT in the section)"))
        if not ok:
            problems.append(f"search {term!r}: landed on {page}#{landed['id']}, which does not contain it")
        if abs(landed["top"]) > tab.height / 2:
            problems.append(f"search {term!r}: {page}#{landed['id']} is not at the top of the screen "
                            f"({landed['top']:.0f} px)")
        if want and page != want:
            problems.append(f"search {term!r}: the first hit is on {page}, not {want}")
    for p in tab.drain():
        problems.append(f"search {term!r}: {p}")


def site_phone(chrome, site, js, order, index, out, problems):
    tab = Tab(chrome, 1280, 800)
    # the current section is marked while scrolling
    chapter = next((u for u in order if os.path.basename(url_path(u)).startswith("ch-")), None)
    if chapter:
        tab.go(chapter)
        marked = tab.js("""(async () => { if (!document.getElementById('site-nav')) return 'no sidebar';
            const a = document.querySelectorAll('#site-nav a[data-spy]');
            if (a.length < 2) return 'no sections in the sidebar';
            const id = a[1].getAttribute('data-spy');
            document.getElementById(id).scrollIntoView();
            await new Promise(r => setTimeout(r, 200));
            const on = document.querySelector('#site-nav a.site-on');
            return on && on.getAttribute('data-spy') === id ? '' : 'scrolled to #' + id + ', sidebar marks ' +
              (on ? '#' + on.getAttribute('data-spy') : 'nothing'); })()""", await_promise=True)
        if marked:
            problems.append(f"{os.path.basename(url_path(chapter))}: current section: {marked}")
        tab.shot(os.path.join(out, "site-chapter-1280.png"))
    measured = "file://" + os.path.join(site, "measured.html")
    if os.path.exists(url_path(measured)):
        tab.go(measured)
        tab.shot(os.path.join(out, "site-measured-1280.png"))
    tab.close()

    # 4. a phone: the sidebar is a menu that opens and closes; dark mode
    phone = Tab(chrome, 390, 844, mobile=True)
    phone.go(chapter or index)
    shown = "(() => { const n = document.getElementById('site-nav'); if (!n) return false; const r = n.getBoundingClientRect(); " \
            "return getComputedStyle(n).visibility === 'visible' && r.left >= -1 && r.right > 200; })()"
    for p in phone.js(js, await_promise=True):
        if isinstance(p, str) and not p.startswith("info: "):
            problems.append(f"390 px: {p}")
    phone.shot(os.path.join(out, "site-390.png"))
    if phone.js(shown):
        problems.append("390 px: the sidebar shows before the menu is opened")
    if not phone.js("!!document.getElementById('site-menu')"):
        problems.append("390 px: no menu button (#site-menu)")
    else:
        phone.js("document.getElementById('site-menu').click()")
        if not phone.wait_for(shown + " && document.getElementById('site-menu').getAttribute('aria-expanded') === 'true'", 5):
            problems.append("390 px: the menu does not open")
        time.sleep(0.3)
        phone.shot(os.path.join(out, "site-390-menu.png"))
        phone.js("document.getElementById('site-menu').click()")
        if not phone.wait_for("!" + shown, 5):
            problems.append("390 px: the menu does not close")
    for p in phone.drain():
        problems.append(f"390 px: {p}")
    phone.close()
    dark = Tab(chrome, 1280, 800, scheme="dark")
    dark.go(chapter or index)
    dark.shot(os.path.join(out, "site-1280-dark.png"))
    for p in dark.drain():
        problems.append(f"dark: {p}")
    dark.close()


def site_run(site, out):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="browser-check.") as profile:
        chrome = Chrome(exe, profile)
        try:
            problems = site_checks(chrome, os.path.realpath(site), out)
        except (TimeoutError, EOFError, RuntimeError) as e:
            print(f"browser-check --site: {e}")
            return 1
        finally:
            chrome.close()
    for p in problems:
        print("  " + p)
    print(f"browser-check --site: {len(problems)} problem(s) in {time.monotonic() - t0:.0f} s; screenshots "
          f"{out}/site-{{index-1280,chapter-1280,search-1280,measured-1280,390,390-menu,1280-dark}}.png")
    return 1 if problems else 0


def main(argv):
    html, out = os.path.join(TOP, "build", "book.html"), os.path.join(TOP, "build", "browser")
    args = list(argv)
    test, site = False, None
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__.split("\n", 2)[2])
            return 0
        if a == "--self-test":
            test = True
            continue
        if a == "--site" and args:
            site = os.path.abspath(args.pop(0))
            continue
        if a in ("--html", "--out") and args:
            v = os.path.abspath(args.pop(0))
            html, out = (v, out) if a == "--html" else (html, v)
        else:
            sys.stderr.write(f"browser-check: bad argument '{a}'\n" + __doc__.split("\n", 2)[2])
            return 2
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        sys.stderr.write("browser-check: chromium not found (scripts/deps.sh installs it)\n")
        return 2
    if test:
        return self_test(out)
    if site:
        if not os.path.isfile(os.path.join(site, "index.html")):
            sys.stderr.write(f"browser-check: {site}/index.html not found (make book)\n")
            return 2
        return site_run(site, out)
    if not os.path.isfile(html):
        sys.stderr.write(f"browser-check: {html} not found (make book)\n")
        return 2
    return run(html, out)


# The PDF's text column: A4 (210 mm) less print.css's 15 mm margins, in CSS
# px at 96 per inch.
PRINT_WIDTH = round((210 - 2 * 15) / 25.4 * 96)
PRINT_JS = r"""(() => {
  const out = [];
  const canvas = document.createElement('canvas').getContext('2d');
  let chapter = null, n = 0;
  for (const el of document.querySelectorAll('h1, table')) {
    if (el.tagName === 'H1') { chapter = el.hasAttribute('data-number') ? el.textContent.replace(/\s+/g, ' ').trim().slice(0, 40) : null; n = 0; continue; }
    if (!chapter) continue;            // back matter: the reference runs keep their wide records
    n++;
    const w = el.getBoundingClientRect().width, col = el.parentElement.clientWidth;
    if (w > col + 1 || el.scrollWidth > el.clientWidth + 1)
      out.push(`print: "${chapter}", table ${n}: ${Math.round(Math.max(w, el.scrollWidth))} px wide, the A4 column is ${col} px`);
    for (const cell of el.querySelectorAll('th, td')) {
      const cs = getComputedStyle(cell);
      canvas.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const clone = cell.cloneNode(true);
      clone.querySelectorAll('code').forEach(c => c.remove());   // identifiers may wrap
      for (const word of clone.textContent.split(/\s+/)) {
        if (word.length > 2 && canvas.measureText(word).width > room + 1) {
          out.push(`print: "${chapter}", table ${n}: "${word}" is broken across lines (column ${Math.round(room)} px)`);
          break;
        }
      }
    }
  }
  return out;
})()"""


def print_tables(chrome, html):
    """Every table in a chapter fits the PDF's A4 text column, with no word broken."""
    tab = Tab(chrome, PRINT_WIDTH, 1200)
    tab.c.send("Emulation.setEmulatedMedia", {"media": "print"}, tab.s)
    tab.go("file://" + html)
    try:
        return tab.js(PRINT_JS) or []
    finally:
        tab.drain()
        tab.close()


def run(html, out):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    os.makedirs(out, exist_ok=True)
    total, labels = 0, {}
    with tempfile.TemporaryDirectory(prefix="browser-check.") as profile:
        chrome = Chrome(exe, profile)
        try:
            for name, w, h, mobile, scheme in VIEWS:
                for p in check_view(chrome, "file://" + html, name, w, h, mobile, scheme, out, labels):
                    print(f"  {name} px: {p}")
                    total += 1
            for p in print_tables(chrome, html):
                print(f"  {PRINT_WIDTH} px (A4): {p}")
                total += 1
        except (TimeoutError, EOFError, RuntimeError) as e:
            print(f"browser-check: {e}")
            return 1
        finally:
            chrome.close()
    if labels:
        print("smallest figure label, px: in the column at 1280 / at 390 / opened full size")
        for fig, v in labels.items():
            col = " / ".join(f"{v[n][0]:4.1f}" if n in v else "   -" for n in ("1280", "390"))
            print(f"  {col} / {max(x[1] for x in v.values()):4.1f}  {fig}")
    print(f"browser-check: {total} problem(s); screenshots {out}/book-{{1280,390,1280-dark}}.png"
          + (f", each figure in {out}/fig-*-{{1280,390,390-full}}.png" if labels else ""))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
