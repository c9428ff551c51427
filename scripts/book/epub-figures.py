#!/usr/bin/env python3
"""epub-figures: let each figure of an EPUB open full size.

Usage: epub-figures.py EPUB
mmlocks.lua wraps each figure's image in <a class="zoom" href="SRC">, SRC
being the image's path in the source tree, and adds a "(full size)" link
(class zoom-hint) with the same href; pandoc embeds the image as
media/fileN.svg but leaves the links alone. This points every link to SRC
at the embedded file and lists that file in the spine with linear="no":
an SVG content document, a page of its own outside the reading order,
which a reader shows on a screen of its own. A figure that is not an
SVG (not a content document) keeps its image and loses the link. Rewrites
the EPUB in place (temp file + rename), keeping the archive's order and
its uncompressed mimetype entry first. Exit 0 on success, 1 if the file is
not an EPUB or a zoom link has no image, 2 on bad usage.
"""
import posixpath
import re
import sys

import epub_rewrite

ZOOM = re.compile(r'<a class="zoom" href="([^"]+)">\s*<img src="([^"]+)"')


def link_figures(name, text, pages):
    """Point the zoom links of one chapter file at their images; add the SVGs to pages (a dict, in order)."""
    targets = dict(ZOOM.findall(text))
    if text.count('<a class="zoom" ') != len(ZOOM.findall(text)):
        raise ValueError(f"{name}: a zoom link without an image right inside it")
    for src, img in targets.items():
        if img.endswith(".svg"):
            pages.setdefault(posixpath.normpath(posixpath.join(posixpath.dirname(name), img)))
            text = text.replace(f'href="{src}"', f'href="{img}"')
        else:
            text = text.replace(f' href="{src}"', "")
    return text


def add_to_spine(opf, pages, opf_dir):
    """Add an itemref linear="no" for each page (a path in the archive) to the spine."""
    refs = []
    for page in pages:
        href = posixpath.relpath(page, opf_dir)
        m = re.search(r'<item id="([^"]+)" href="%s"' % re.escape(href), opf)
        if not m:
            raise ValueError(f"{href} is not in the manifest")
        if f'idref="{m.group(1)}"' not in opf:
            refs.append(f'    <itemref idref="{m.group(1)}" linear="no" />\n')
    return opf.replace("  </spine>", "".join(refs) + "  </spine>", 1)


def rewrite(data):
    """Link every chapter's figures to their pages, and put the pages in the spine."""
    pages = {}
    for name in epub_rewrite.chapter_files(data):
        data[name] = link_figures(name, data[name].decode("utf-8"), pages).encode("utf-8")
    opf = "EPUB/content.opf"
    if opf not in data:
        raise ValueError(f"{opf} not found")
    data[opf] = add_to_spine(data[opf].decode("utf-8"), pages, "EPUB").encode("utf-8")


if __name__ == "__main__":
    sys.exit(epub_rewrite.main(sys.argv[1:], __doc__, rewrite))
