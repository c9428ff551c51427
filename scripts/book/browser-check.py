#!/usr/bin/env python3
"""browser-check: open the book in headless Chromium and fail on what a reader would see wrong.

Usage: browser-check.py [--html FILE] [--out DIR] [--self-test] [--help]
  --html FILE   the page (default build/book.html)
  --out DIR     where the screenshots go (default build/browser)
  --self-test   check a small page with one problem of each kind and
                require that every kind is reported
Loads the page at 1280 x 800 (desktop), at 390 x 844 (a phone, emulated
through the DevTools protocol over a pipe) and at 1280 x 800 in dark mode,
and reports, one line each: a
broken '#' link, an image that does not decode, a console error or uncaught
exception, a request for anything outside the file, a table or listing
wider than its column without a visible scroll cue, a code token with
less than 4.5:1 contrast on its background, a page wider than the
viewport, a figure (mmlocks.lua's figure.zoomable) that does not open
full size or whose smallest SVG label is below 9 px, in the column at
1280 px or opened full size. Prints each figure's smallest label in px.
Saves DIR/book-1280.png, book-390.png and book-1280-dark.png (the first
screen), and DIR/FIGURE-1280.png, FIGURE-390.png and FIGURE-390-full.png
(each figure in the column, and opened full size on the phone) for a
person to look at. Exit 0 when nothing was found, 1 otherwise, 2 on
bad usage or when Chromium is missing. Every wait is bounded (60 s).
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
        if m.get("sessionId") != s:
            continue
        p = m.get("params", {})
        if m["method"] == "Runtime.exceptionThrown":
            problems.append("uncaught exception: " + p["exceptionDetails"].get("text", "?"))
        elif m["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
            problems.append("console error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                         for a in p.get("args", [])))
        elif m["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
            problems.append("console error: " + p["entry"].get("text", "?"))
        elif m["method"] == "Network.requestWillBeSent":
            u = p["request"]["url"]
            if u != file_url and not u.startswith(("data:", "blob:", "about:")):
                problems.append("request outside the file: " + u[:100])
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
         "low contrast", "figure does not open full size", "figure label smaller than")


def self_test(out):
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


def main(argv):
    html, out = os.path.join(TOP, "build", "book.html"), os.path.join(TOP, "build", "browser")
    args = list(argv)
    test = False
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__.split("\n", 2)[2])
            return 0
        if a == "--self-test":
            test = True
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
    if not os.path.isfile(html):
        sys.stderr.write(f"browser-check: {html} not found (make book)\n")
        return 2
    return run(html, out)


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
