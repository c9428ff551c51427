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
  /* 6. Figures (mmlocks.lua's figure.zoomable): the smallest label is
   * >= 9 px in the column on a desktop, and the figure opens full size
   * (its :target overlay shows the image at its own width), where the
   * smallest label is >= 9 px too. Sizes come from the SVG's font-size
   * values and viewBox, scaled by the width the image is drawn at; each
   * figure also yields an "info" entry with them, and its rectangle for a
   * screenshot. */
  var MIN_PX = 9, desktop = w >= 1000, figs = [];
  function svgLabels(img) {
    var src = img.getAttribute("src") || "", m = src.match(/^data:image\/svg\+xml;base64,(.*)$/);
    if (!m) return null;
    /* font sizes of text and groups, not of a tspan (an exponent, 10^6) */
    var svg = new DOMParser().parseFromString(atob(m[1]), "image/svg+xml").documentElement, sizes = [];
    svg.querySelectorAll("[font-size], [style*=font-size]").forEach(function (e) {
      var f = e.getAttribute("font-size") || (e.getAttribute("style").match(/font-size:\s*([\d.]+)/) || [])[1];
      if (e.tagName !== "tspan" && parseFloat(f) > 0) sizes.push(parseFloat(f));
    });
    var vb = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/);
    return sizes.length && vb.length === 4 ? { font: Math.min.apply(null, sizes), units: +vb[2] } : null;
  }
  document.querySelectorAll("figure.zoomable").forEach(function (fig) {
    var img = fig.querySelector("a.zoom img"), target = document.getElementById(fig.id + "-full");
    if (!img || !target) { bad("figure does not open full size", fig.id + ": no zoom link or target"); return; }
    location.hash = "";	/* the last figure's overlay is out of the flow */
    var l = svgLabels(img), r = fig.getBoundingClientRect();
    var inCol = l ? l.font * img.getBoundingClientRect().width / l.units : 0;
    figs.push({ id: fig.id, x: r.left, y: r.top + scrollY, w: r.width, h: r.height });
    location.hash = fig.id + "-full";
    var link = fig.querySelector("a.zoom"), open = getComputedStyle(link).position === "fixed";
    var natural = +img.getAttribute("width") || img.naturalWidth;
    var full = l ? l.font * img.getBoundingClientRect().width / l.units : 0;
    if (!open || img.getBoundingClientRect().width < natural - 1)
      bad("figure does not open full size", fig.id + (open ? ": drawn " +
          Math.round(img.getBoundingClientRect().width) + " px wide, not " + natural : ": no overlay"));
    else if (l && full < MIN_PX)
      bad("figure label smaller than " + MIN_PX + " px", fig.id + " at full size: " + full.toFixed(1) + " px");
    if (l && desktop && inCol < MIN_PX)
      bad("figure label smaller than " + MIN_PX + " px", fig.id + " in the column: " + inCol.toFixed(1) +
          " px (font " + l.font + " in a " + l.units + "-unit SVG drawn " + Math.round(img.width) + " px wide)");
    if (l) problems.push("info: " + fig.id + " " + inCol.toFixed(1) + " " + full.toFixed(1));
  });
  if (figs.length) { location.hash = ""; scrollTo(0, 0); }
  problems.push({ figures: figs });
  return problems;
})()
