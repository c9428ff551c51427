#!/usr/bin/env bash
# Resolve every measured-number reference outside the book: the labs'
# handouts and guest READMEs, and the answer key, carry typed values ([4.3 ms]{.ref ...}) so they
# read well as plain Markdown; the book filter checks each against its run.
set -u
cd "$(dirname "$0")/../.."
case "${1:-}" in
  -h|--help) echo "usage: scripts/book/check-refs.sh   (checks the .ref values of labs/*/handout.md, labs/*/guest/README.md and answers/)"; exit 0 ;;
  "") ;; *) echo "check-refs.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
shopt -s nullglob
for f in labs/[0-9][0-9]-*/handout.md labs/[0-9][0-9]-*/guest/README.md answers/[0-9][0-9]-*.md answers/labs/[0-9][0-9]-*.md; do
  grep -q '{\.ref[ }]' "$f" || continue
  n=$((n + 1))
  printf -- '---\ntitle: t\n---\n::: {.chapters}\n- `%s`\n:::\n' "$f" > "$tmp/book.md"
  if pandoc "$tmp/book.md" --lua-filter scripts/book/mmlocks.lua -t plain -o /dev/null; then
    echo "  ok   $f ($(grep -o '{\.ref[ }]' "$f" | wc -l) reference(s))"
  else
    bad=$((bad + 1))
  fi
done
echo "check-refs: $n file(s) with references, $bad failed"
[ $bad -eq 0 ]
