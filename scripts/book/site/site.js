/* site.js: the mmlocks site's menu (narrow screens), the sidebar's current
 * section while scrolling, and full-text search (lunr; the index is the
 * script search-index.js, built by `make book`, loaded on first use). */
(function () {
  "use strict";
  var body = document.body, nav = document.getElementById("site-nav");
  var menu = document.getElementById("site-menu");

  /* The menu: below 900 px the sidebar is a panel that this button opens. */
  function setOpen(open) {
    body.classList.toggle("site-open", open);
    menu.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) { var q = document.getElementById("site-q"); if (q && !matchMedia("(pointer: coarse)").matches) q.focus(); }
  }
  menu.addEventListener("click", function () { setOpen(!body.classList.contains("site-open")); });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && body.classList.contains("site-open")) { setOpen(false); menu.focus(); }
    /* "/" searches, as on many documentation sites */
    var t = e.target.tagName;
    if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey && t !== "INPUT" && t !== "TEXTAREA") {
      e.preventDefault();
      if (getComputedStyle(menu).display !== "none") setOpen(true);
      document.getElementById("site-q").focus();
    }
  });
  nav.addEventListener("click", function (e) {
    if (e.target.closest("a") && body.classList.contains("site-open")) setOpen(false);
  });

  /* The current section: the last one whose heading is above 1/4 of the screen. */
  var spies = Array.prototype.slice.call(nav.querySelectorAll("a[data-spy]"));
  var targets = spies.map(function (a) { return document.getElementById(a.getAttribute("data-spy")); });
  var ticking = false, current = null;
  function spy() {
    ticking = false;
    var line = innerHeight / 4, on = null;
    for (var i = 0; i < targets.length; i++) {
      if (targets[i] && targets[i].getBoundingClientRect().top <= line) on = spies[i];
    }
    if (on === current) return;
    if (current) { current.classList.remove("site-on"); current.removeAttribute("aria-current"); }
    current = on;
    if (on) {
      on.classList.add("site-on");
      on.setAttribute("aria-current", "location");
      var r = on.getBoundingClientRect(), n = nav.getBoundingClientRect();
      if (r.top < n.top + 40 || r.bottom > n.bottom - 20) nav.scrollTop += r.top - n.top - n.height / 3;
    }
  }
  addEventListener("scroll", function () { if (!ticking) { ticking = true; requestAnimationFrame(spy); } }, { passive: true });
  addEventListener("hashchange", spy);
  spy();
  var here = nav.querySelector('.site-toc > li > a[aria-current="page"], .site-toc ol a[aria-current="page"]');
  if (here && !current) {
    var hr = here.getBoundingClientRect(), nr = nav.getBoundingClientRect();
    if (hr.bottom > nr.bottom) nav.scrollTop += hr.top - nr.top - 80;
  }

  /* Search. */
  var input = document.getElementById("site-q"), hits = document.getElementById("site-hits");
  var state = "idle", idx = null, docs = null, waiting = [];
  function load(then) {
    if (state === "ready") return then();
    waiting.push(then);
    if (state === "loading") return;
    state = "loading";
    hits.hidden = false;
    hits.innerHTML = '<p class="site-hint">Loading the index…</p>';
    var add = function (src, next) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = next;
      s.onerror = function () { state = "idle"; hits.innerHTML = '<p class="site-hint">The search index (' + src + ") did not load.</p>"; };
      document.head.appendChild(s);
    };
    add("lunr.js", function () {
      add("search-index.js", function () {
        idx = lunr.Index.load(window.MMLOCKS_SEARCH.index);
        docs = window.MMLOCKS_SEARCH.docs;
        state = "ready";
        waiting.splice(0).forEach(function (f) { f(); });
      });
    });
  }
  function words(q) {
    return q.toLowerCase().split(/[^\w]+/).map(function (w) {
      return w.replace(/^\W+|\W+$/g, "");
    }).filter(function (w) { return w.length > 0; });
  }
  function esc(s) {
    return s.replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  }
  function snippet(text, ws) {
    var low = text.toLowerCase(), at = -1, len = 0;
    for (var j = 0; j < ws.length && at < 0; j++) {	/* a whole word first */
      var m = new RegExp("(^|[^\\w])(" + ws[j].replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + ")", "i").exec(text);
      if (m) { at = m.index + m[1].length; len = m[2].length; }
    }
    for (var i = 0; i < ws.length && at < 0; i++) {
      for (var k = ws[i].length; k >= Math.min(4, ws[i].length) && at < 0; k--) {
        at = low.indexOf(ws[i].slice(0, k));
        len = k;
      }
    }
    if (at < 0) return esc(text.slice(0, 150)) + (text.length > 150 ? "…" : "");
    var from = Math.max(0, at - 70), to = Math.min(text.length, at + len + 90);
    return (from > 0 ? "…" : "") + esc(text.slice(from, at)) + "<mark>" + esc(text.slice(at, at + len)) +
      "</mark>" + esc(text.slice(at + len, to)) + (to < text.length ? "…" : "");
  }
  function search() {
    var q = input.value.trim();
    if (!q) { hits.hidden = true; hits.innerHTML = ""; body.classList.remove("site-searching"); return; }
    load(function () {
      var ws = words(q), found = [];
      if (ws.length) {
        found = idx.query(function (query) {
          ws.forEach(function (w) {
            query.term(w, { boost: 10 });
            query.term(w, { usePipeline: false, wildcard: lunr.Query.wildcard.TRAILING, boost: 1 });
          });
        });
      }
      body.classList.add("site-searching");
      hits.hidden = false;
      if (!found.length) { hits.innerHTML = '<p class="site-hint">No section mentions “' + esc(q) + "”.</p>"; return; }
      var page = location.pathname.split("/").pop() || "index.html";
      hits.innerHTML = '<p class="site-hint">' + found.length + (found.length === 1 ? " section" : " sections") +
        (found.length > 30 ? ", the first 30" : "") + "</p><ol>" + found.slice(0, 30).map(function (r) {
          var d = docs[+r.ref];
          var href = (d.p === page ? "" : d.p) + "#" + encodeURIComponent(d.a);
          return '<li><a class="site-hit" href="' + href + '"><span class="site-hit-chap">' + esc(d.c) +
            '</span><span class="site-hit-sec">' + esc(d.s) + '</span><span class="site-hit-text">' +
            snippet(d.b, ws) + "</span></a></li>";
        }).join("") + "</ol>";
    });
  }
  var timer = null;
  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 120); });
  input.addEventListener("focus", function () { load(function () {}); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter") {
      var first = hits.querySelector("a.site-hit");
      if (first) { e.preventDefault(); first.click(); }
    } else if (e.key === "Escape") { input.value = ""; search(); }
  });
  hits.addEventListener("click", function (e) {
    if (e.target.closest("a.site-hit")) { input.value = ""; search(); }
  });
})();
