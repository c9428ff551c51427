/* browser-check.js - evaluated in the loaded book by browser-check.py; returns a list of problems (console errors and requests are watched from outside). */
(async function () {
  "use strict";
  var problems = [];
  function bad(kind, what) { problems.push(kind + ": " + what); }

  /* The element, the heading it sits under, and its first words. */
  function describe(el) {
    var id = el.id ? "#" + el.id : "", under = "";
    document.querySelectorAll("h1[id], h2[id], h3[id]").forEach(function (h) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) under = h.id;
    });
    var text = (el.textContent || "").replace(/\s+/g, " ").trim().slice(0, 40);
    return el.tagName.toLowerCase() + id + (under ? " under #" + under : "") + " (\"" + text + "\")";
  }

  /* A wide element is fine inside a scroll box the reader can see: one
   * that scrolls (overflow-x auto) and draws a cue, the edge shadows of
   * book.css (gradients in its background) or an explicit "scroll-cue". */
  function hasCue(el) {
    for (var p = el; p && p !== document.body; p = p.parentElement) {
      var cs = getComputedStyle(p);
      if (/(auto|scroll)/.test(cs.overflowX) &&
          (/gradient/.test(cs.backgroundImage) || p.classList.contains("scroll-cue")))
        return true;
    }
    return false;
  }

  var w = document.documentElement.clientWidth;
  /* 1. Every in-page link has a target. */
  document.querySelectorAll('a[href^="#"]').forEach(function (a) {
    var id = decodeURIComponent(a.getAttribute("href").slice(1));
    if (id && !document.getElementById(id))
      bad("broken # link", a.getAttribute("href") + " (" + describe(a) + ")");
  });
  /* 2. Every image decodes. */
  var imgs = Array.prototype.slice.call(document.querySelectorAll("img"));
  await Promise.all(imgs.map(function (img) {
    return img.decode().then(function () {
      if (img.naturalWidth === 0) throw new Error("empty");
    }).catch(function () {
      bad("image does not decode", (img.getAttribute("src") || "").slice(0, 60));
    });
  }));
  /* 3. Tables and listings fit their column, or show a cue. */
  document.querySelectorAll("table, pre").forEach(function (el) {
    var col = el.parentElement.getBoundingClientRect();
    var r = el.getBoundingClientRect();
    if ((el.scrollWidth > el.clientWidth + 1 || r.right > col.right + 1) && !hasCue(el))
      bad("wider than its column, no cue", describe(el) + " " + el.scrollWidth +
          " px in " + Math.round(col.width) + " px");
  });
  /* 4. Code tokens are legible: >= 4.5:1 against the listing's background. */
  function rgb(c) {
    var m = c.match(/rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)/);
    return m ? { v: [+m[1], +m[2], +m[3]], a: m[4] === undefined ? 1 : +m[4] } : null;
  }
  function lum(v) {
    var c = v.map(function (x) {
      x /= 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }
  function background(el) {
    for (var p = el; p; p = p.parentElement) {
      var b = rgb(getComputedStyle(p).backgroundColor);
      if (b && b.a > 0.5) return b.v;
    }
    return [255, 255, 255];
  }
  var worstByClass = {};
  document.querySelectorAll("pre code span[class]").forEach(function (sp) {
    if (!sp.textContent.trim()) return;
    var fg = rgb(getComputedStyle(sp).color), bg = background(sp);
    if (!fg) return;
    var a = lum(fg.v), b = lum(bg), ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    var k = sp.className;
    if (ratio < 4.5 && (!worstByClass[k] || ratio < worstByClass[k].r))
      worstByClass[k] = { r: ratio, fg: getComputedStyle(sp).color, bg: "rgb(" + bg.join(", ") + ")" };
  });
  Object.keys(worstByClass).forEach(function (k) {
    var x = worstByClass[k];
    bad("low contrast", "code span." + k + " " + x.r.toFixed(2) + ":1 (" + x.fg + " on " + x.bg + ")");
  });
  /* 5. The page is not wider than the viewport. */
  var pw = document.documentElement.scrollWidth;
  if (pw > w + 1) {
    var worst = null;
    document.querySelectorAll("body *").forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.right > w + 1 && (!worst || r.right > worst.r)) worst = { el: el, r: r.right };
    });
    bad("page wider than the viewport", pw + " px at " + w + " px" +
        (worst ? ", widest: " + describe(worst.el) : ""));
  }
  return problems;
})()
