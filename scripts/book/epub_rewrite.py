"""epub_rewrite: what epub-titles.py and epub-figures.py share.

Both take one EPUB on the command line and rewrite some of its files in
place: read every entry, let the caller change the contents, write a new
archive in the same order (the mimetype entry stored, uncompressed, as
EPUB requires; the rest deflated) beside the old one and rename it over
it, so a failed run leaves the file as it was.
"""
import os
import re
import sys
import tempfile
import zipfile


def chapter_files(data, pattern=r"^EPUB/text/[^/]+\.xhtml$"):
    """The names of the chapter files in data (dict name -> bytes), in archive order."""
    return [name for name in data if re.match(pattern, name)]


def main(argv, doc, transform):
    """Run a rewriting tool: doc is its docstring ("NAME: ...", a blank line's
    worth of summary, then the usage text); transform(data) changes data, a
    dict of archive name -> bytes, in place, or raises ValueError (exit 1).
    Exit 0 on success, 1 if the file is not an EPUB or transform refuses it,
    2 on bad usage."""
    prog = doc.split(":", 1)[0]
    usage = doc.split("\n", 2)[2]
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(usage)
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write(f"{prog}: expected one EPUB file\n" + usage)
        return 2
    path = argv[0]
    if not zipfile.is_zipfile(path):
        sys.stderr.write(f"{prog}: {path}: not an EPUB (zip) file\n")
        return 1
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=f".{prog}.")
    os.close(fd)
    try:
        with zipfile.ZipFile(path) as zin:
            infos = zin.infolist()
            data = {i.filename: zin.read(i) for i in infos}
        transform(data)
        with zipfile.ZipFile(tmp, "w") as zout:
            for info in infos:
                kind = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
                zout.writestr(info, data[info.filename], compress_type=kind)
        os.replace(tmp, path)
    except ValueError as e:
        sys.stderr.write(f"{prog}: {path}: {e}\n")
        return 1
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return 0
