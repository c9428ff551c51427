#!/usr/bin/env bash
# Build one chapter (or any book Markdown file) alone, fast: the same filter
# as the book, so a missing region, reference or diagram fails here too.
#   scripts/book/chapter.sh chapters/04-per-vma-locks.md   -> build/chapter/04-per-vma-locks.html
set -euo pipefail
cd "$(dirname "$0")/../.."
usage() { echo "usage: scripts/book/chapter.sh FILE.md [FILE.md ...]   (writes build/chapter/NAME.html)"; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
esac
for f in "$@"; do
  [ -f "$f" ] || { echo "chapter.sh: no such file: $f" >&2; exit 2; }
done
mkdir -p build/chapter
# The diagrams the files use, rendered as make book does.
for d in $(grep -ho 'diagrams/[A-Za-z0-9_-]*\.dot' "$@" | sort -u); do
  make --no-print-directory -s "build/diagrams/$(basename "$d" .dot).svg"
done
if grep -q 'build/plots/' "$@"; then make --no-print-directory -s plots >/dev/null; fi
for f in $(grep -Eho 'build/(explore|figures)/[A-Za-z0-9_-]*\.svg' "$@" | sort -u); do
  make --no-print-directory -s "$f"
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
list=$(printf -- '- `%s`\n' "$@")
printf -- '---\ntitle: "mmlocks (one chapter)"\n---\n::: {.chapters}\n%s\n:::\n' "$list" > "$tmp/book.md"
out=build/chapter/$(basename "${1%.md}").html
src=$(labs/kernel/linux-source.sh)
MMLOCKS_LINUX_SRC=$src pandoc "$tmp/book.md" --from markdown --lua-filter scripts/book/mmlocks.lua \
  --toc --toc-depth=2 --number-sections --resource-path=. --standalone --self-contained \
  --css scripts/book/book.css --metadata pagetitle=mmlocks -t html5 -o "$out.tmp"
mv "$out.tmp" "$out"
echo "chapter.sh: $out"
