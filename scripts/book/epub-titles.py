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
import os
import re
import sys
import tempfile
import zipfile


def retitle(text):
    m = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S)
    if not m:
        return text
    title = re.sub(r'<span class="header-section-number">[^<]*</span>\s*', "", m.group(1))
    title = html.escape(html.unescape(re.sub(r"<[^>]+>", "", title)).strip(), quote=False)
    return re.sub(r"<title>ch\d+\.xhtml</title>", f"<title>{title}</title>", text, count=1)


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(__doc__.split("\n", 2)[2])
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write("epub-titles: expected one EPUB file\n" + __doc__.split("\n", 2)[2])
        return 2
    path = argv[0]
    if not zipfile.is_zipfile(path):
        sys.stderr.write(f"epub-titles: {path}: not an EPUB (zip) file\n")
        return 1
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".epub-titles.")
    os.close(fd)
    try:
        with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if re.match(r"^EPUB/text/ch\d+\.xhtml$", info.filename):
                    data = retitle(data.decode("utf-8")).encode("utf-8")
                kind = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
                zout.writestr(info, data, compress_type=kind)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
