#!/usr/bin/env bash
# Prove the book build fails, naming file and name, on a missing region,
# function, listing file, diagram or chapter; and that a good region works.
set -u
cd "$(dirname "$0")/../.."
case "${1:-}" in
  -h|--help) echo "usage: scripts/book/selftest.sh"; exit 0 ;;
  "") ;; *) echo "selftest.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/chapters" "$tmp/code" "$tmp/diagrams" "$tmp/build/diagrams"
cat > "$tmp/code/a.c" <<'C'
/* a.c: fixture */
/* region: good */
int good(void) { return 1; }
/* endregion: good */
C
echo 'digraph { a -> b }' > "$tmp/diagrams/d.dot"
dot -Tsvg "$tmp/diagrams/d.dot" -o "$tmp/build/diagrams/d.svg"
export MMLOCKS_LINUX_SRC=$(labs/kernel/linux-source.sh)
filter=$PWD/scripts/book/mmlocks.lua
pass=0 fail=0
check() { # check NAME EXPECT(ok|fail) EXPECTED-TEXT CHAPTER-BODY
  local name=$1 expect=$2 text=$3
  printf '# T\n\n%s\n' "$4" > "$tmp/chapters/c.md"
  printf -- '---\ntitle: t\n---\n::: {.chapters}\n- `chapters/c.md`\n:::\n' > "$tmp/book.md"
  local out rc
  out=$(cd "$tmp" && pandoc book.md --lua-filter "$filter" -t markdown 2>&1); rc=$?
  if [ "$expect" = ok ] && [ $rc -eq 0 ] && grep -qF -- "$text" <<<"$out"; then
    echo "  ok   $name"; pass=$((pass + 1))
  elif [ "$expect" = fail ] && [ $rc -ne 0 ] && grep -qF -- "$text" <<<"$out"; then
    echo "  ok   $name: $(grep -F -- "$text" <<<"$out" | head -1)"; pass=$((pass + 1))
  else
    echo "  FAIL $name (rc=$rc): $out" | head -5; fail=$((fail + 1))
  fi
}
check "good region"        ok   "int good(void)" '```{.c include="code/a.c" region="good"}
```'
check "missing region"     fail "code/a.c: region 'nope' not found" '```{.c include="code/a.c" region="nope"}
```'
check "missing file"       fail "listing file not found: code/zz.c" '```{.c include="code/zz.c" region="x"}
```'
check "kernel function"    ok   "rwsem_down_read_slowpath(struct" '```{.c include="linux:kernel/locking/rwsem.c" function="rwsem_down_read_slowpath"}
```'
check "missing function"   fail "function 'no_such_fn' not found" '```{.c include="linux:kernel/locking/rwsem.c" function="no_such_fn"}
```'
check "good diagram"       ok   "d.svg" '![x](diagrams/d.dot)'
check "missing diagram"    fail "diagram not found: diagrams/nope.dot" '![x](diagrams/nope.dot)'
printf -- '---\ntitle: t\n---\n::: {.chapters}\n- `chapters/gone.md`\n:::\n' > "$tmp/book.md"
if (cd "$tmp" && pandoc book.md --lua-filter "$filter" -t html 2>&1) | grep -qF "chapter listed in book.md not found: chapters/gone.md"; then
  echo "  ok   missing chapter"; pass=$((pass + 1))
else echo "  FAIL missing chapter"; fail=$((fail + 1)); fi
echo "book selftest: $pass passed, $fail failed"
[ $fail -eq 0 ]
