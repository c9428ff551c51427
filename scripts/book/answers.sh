#!/usr/bin/env bash
# The instructors' answer key: every chapter exercise's answer
# (answers/NN-slug.md) and every lab handout question's (answers/labs/NN-slug.md),
# as build/answers.html (one file, offline) and build/answers.pdf. It is
# built apart from the book and left out of `make student-dist`; the quick
# quizzes' answers stay in the book for readers who study alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  -h|--help) echo "usage: scripts/book/answers.sh [--no-pdf]   (writes build/answers.html and build/answers.pdf)"; exit 0 ;;
  ""|--no-pdf) ;;
  *) echo "answers.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
shopt -s nullglob
files=(answers/[0-9][0-9]-*.md answers/labs/[0-9][0-9]-*.md)
[ ${#files[@]} -gt 0 ] || { echo "answers.sh: no answers/*.md" >&2; exit 1; }
mkdir -p build
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
{
  printf -- '---\ntitle: "mmlocks: the answer key"\nsubtitle: "For instructors: answers to the chapter exercises and the lab handouts'"'"' questions"\n---\n\n'
  printf '::: {.chapters}\n'
  for f in "${files[@]}"; do printf -- '- `%s`\n' "$f"; done
  printf ':::\n'
} >"$tmp/answers.md"
src=$(labs/kernel/linux-source.sh)
MMLOCKS_LINUX_SRC=$src pandoc "$tmp/answers.md" --from markdown --lua-filter scripts/book/mmlocks.lua \
  --toc --toc-depth=1 --resource-path=. --standalone --self-contained \
  --css scripts/book/book.css --metadata pagetitle="mmlocks answer key" -t html5 -o build/answers.html.tmp
mv build/answers.html.tmp build/answers.html
echo "answers: build/answers.html (${#files[@]} file(s))"
[ "${1:-}" = --no-pdf ] && exit 0
command -v chromium >/dev/null || { echo "answers.sh: chromium not found (make deps)" >&2; exit 2; }
sed 's|</head>|<style>'"$(tr '\n' ' ' <scripts/book/print.css)"'</style></head>|' build/answers.html >"$tmp/a.html"
timeout 180 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
  --no-pdf-header-footer --print-to-pdf="$PWD/build/answers.pdf.tmp" "file://$tmp/a.html" 2>/dev/null
[ -s build/answers.pdf.tmp ] && mv build/answers.pdf.tmp build/answers.pdf
echo "answers: build/answers.pdf"
