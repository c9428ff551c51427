#!/usr/bin/env python3
"""epub-titles: give each chapter file of an EPUB its heading as <title>.

Usage: epub-titles.py EPUB
pandoc 2.17's EPUB writer titles every chapter file with its file name
("ch001.xhtml"); readers show that in their tables and epubcheck's users
see it. This rewrites, in place (temp file + rename), each <title> that is
a file name to the text of the file's first <h1>, keeping the archive's
order and its uncompressed mimetype entry first. Exit 0 on success, 1 if
the file is not an EPUB, 2 on bad usage.
"""
import html
import re
import sys

import epub_rewrite


def retitle(text):
    m = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S)
    if not m:
        return text
    title = re.sub(r'<span class="header-section-number">[^<]*</span>\s*', "", m.group(1))
    title = html.escape(html.unescape(re.sub(r"<[^>]+>", "", title)).strip(), quote=False)
    return re.sub(r"<title>ch\d+\.xhtml</title>", f"<title>{title}</title>", text, count=1)


def rewrite(data):
    for name in epub_rewrite.chapter_files(data, r"^EPUB/text/ch\d+\.xhtml$"):
        data[name] = retitle(data[name].decode("utf-8")).encode("utf-8")


if __name__ == "__main__":
    sys.exit(epub_rewrite.main(sys.argv[1:], __doc__, rewrite))
