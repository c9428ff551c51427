/* search-index.js: build the book's lunr index at `make book` time.
 * Usage: node search-index.js LUNR_JS DOCS_JSON OUT_JS
 *   LUNR_JS    lunr 2.3 (Debian's libjs-lunr: /usr/share/javascript/lunr/lunr.js)
 *   DOCS_JSON  split.py's search-docs.json: one record per section
 *              {p: page, a: anchor, c: chapter, s: section label, t: title, b: text}
 *   OUT_JS     a script setting window.MMLOCKS_SEARCH = {docs, index}: loaded
 *              with a <script> tag, so search works from file:// too. */
"use strict";
const fs = require("fs");
const [lunrPath, docsPath, outPath] = process.argv.slice(2);
if (!outPath) {
  process.stderr.write("usage: node search-index.js LUNR_JS DOCS_JSON OUT_JS\n");
  process.exit(2);
}
const lunr = require(lunrPath);
const docs = JSON.parse(fs.readFileSync(docsPath, "utf8"));
// Words are runs of letters, digits and "_": a C name is one word, also
// where a listing glues it to "(" or "->" (rwsem_down_read_slowpath(sem, ...).
lunr.tokenizer.separator = /[^\w]+/;
const idx = lunr(function () {
  this.ref("i");
  this.field("t", { boost: 8 });
  this.field("b");
  docs.forEach((d, i) => this.add({ i: String(i), t: d.t, b: d.b }));
});
const out = "window.MMLOCKS_SEARCH = " + JSON.stringify({ docs: docs, index: idx.toJSON() }) + ";\n";
fs.writeFileSync(outPath + ".tmp", out);
fs.renameSync(outPath + ".tmp", outPath);
process.stdout.write(`search: ${docs.length} sections, ${(out.length / 1e6).toFixed(1)} MB index (lunr ${lunr.version})\n`);
