#!/usr/bin/env bash
# Prove the book build fails, naming file and name, on a missing region,
# function, listing file, diagram or chapter; and that a good region works.
# Then the same for measured numbers by reference (refs.lua): good values,
# units, tables, and every way a reference can be wrong; and that the
# hand-typed-number check (check-numbers.py) fails on one.
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
  printf '# T\n\n%s\n' "$4" > "$tmp/chapters/01-c.md"
  printf -- '---\ntitle: t\n---\n::: {.chapters}\n- `chapters/01-c.md`\n:::\n' > "$tmp/book.md"
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
# Chapter numbers come from file names: 07 is chapter 7 even with no 06.
printf '# Seven\n\n## B\n\n### C\n\n## D {.unnumbered}\n\n## E\n' > "$tmp/chapters/07-s.md"
printf '# One\n\n## A\n' > "$tmp/chapters/01-o.md"
printf -- '---\ntitle: t\n---\n::: {.chapters}\n- `chapters/01-o.md`\n- `chapters/07-s.md`\n:::\n' > "$tmp/book.md"
nums=$(cd "$tmp" && pandoc book.md --lua-filter "$filter" --number-sections -t html 2>&1 | grep -o 'data-number="[^"]*"' | tr '\n' ' ')
if [ "$nums" = 'data-number="1" data-number="1.1" data-number="7" data-number="7.1" data-number="7.1.1" data-number="7.2" ' ]; then
  echo "  ok   chapter numbers from file names"; pass=$((pass + 1))
else echo "  FAIL chapter numbers from file names: $nums"; fail=$((fail + 1)); fi

# ---- references: fixture runs R1 and R2 of "demo", a failed run of "broken"
mkrun() { # mkrun EXP RUN OK JSONL
  local d="$tmp/reference/$1/$2"
  mkdir -p "$d"
  printf '# Reference run %s: %s\n\n- Run: %s\n- Label: label of %s\n' "$2" "$1" "$2" "$2" > "$d/README.md"
  printf '| Metric | Before |\n|---|---|\n| m | 1 |\n' > "$d/$1.md"
  printf '{"experiments":[{"name":"%s","status":"%s","ok":%s,"guest_rc":0}]}\n' "$1" \
    "$([ "$3" = true ] && echo ok || echo timeout)" "$3" > "$d/meta.json"
  printf '%s\n' "$4" > "$d/$1.jsonl"
}
DEMO='{"type":"begin","experiment":"demo"}
{"type":"sample","experiment":"demo","policy":0,"writer_p99_us":836.4,"steals":991366}
{"type":"sample","experiment":"demo","policy":1,"writer_p99_us":427,"steals":0,"holds":8,"stopped":2}
{"type":"summary","experiment":"demo","metric":"writer p99","unit":"us","before":836.4,"after":427,"ratio":1.958,"scan_us_before":[5,1,3]}
{"type":"summary","experiment":"demo","metric":"time to collapse","unit":"s","before":60,"after":7.82,"ratio":7.67,"before_timeouts":4}
{"type":"end","experiment":"demo","rc":0,"seconds":60}'
mkrun demo R1 true "$DEMO"
mkrun demo R2 true "${DEMO//836.4/912.5}"
mkrun broken R1 false '{"type":"begin","experiment":"broken"}'
P1='sel="type=sample,policy=1"'
NB=$'\xc2\xa0'   # values are joined to their unit by a no-break space
check "ref value"          ok   "427${NB}µs"   "[]{.ref exp=demo run=R1 $P1 field=writer_p99_us}"
check "ref links the run"  ok   "#ref-demo-r1"   "[]{.ref exp=demo run=R1 $P1 field=writer_p99_us}"
check "ref appendix"       ok   "label of R1"   "[]{.ref exp=demo run=R1 $P1 field=writer_p99_us}"
check "ref converts unit"  ok   "0.836${NB}ms" '[]{.ref exp=demo run=R1 sel="type=sample,policy=0" field=writer_p99_us unit=ms}'
check "ref count"          ok   "991,366"  '[]{.ref exp=demo run=R1 sel="type=sample,policy=0" field=steals}'
check "ref summary row"    ok   "1.96×"    '[]{.ref exp=demo run=R1 sel="metric=writer p99" field=ratio}'
check "ref lower bound"    ok   "≥${NB}60${NB}s"   '[]{.ref exp=demo run=R1 sel="metric^=time" field=before}'
check "ref median"         ok   "3${NB}µs"     '[]{.ref exp=demo run=R1 sel="metric=writer p99" field=scan_us_before agg=median}'
check "ref range"          ok   "1--5${NB}µs"   '[]{.ref exp=demo run=R1 sel="metric=writer p99" field=scan_us_before agg=range}'
check "ref over"           ok   "0.51×"    "[]{.ref exp=demo run=R1 $P1 field=writer_p99_us over=\"type=sample,policy=0\"}"
check "ref per"            ok   "1,185"    '[]{.ref exp=demo run=R1 sel="type=sample,policy=0" field=steals per=writer_p99_us digits=4}'
check "ref per %"          ok   "25%"    "[]{.ref exp=demo run=R1 $P1 field=stopped per=holds unit=%}"
check "refs defaults"      ok   "427${NB}µs"   "::: {.refs exp=demo run=R1}
[]{.ref $P1 field=writer_p99_us}
:::"
check "typed and equal"    ok   "427${NB}µs"   "[427 µs]{.ref exp=demo run=R1 $P1 field=writer_p99_us}"
check "reftable"           ok   "912${NB}µs"    '::: {.reftable exp=demo sel="type=sample,policy=0" cols="@run = run; @label = host; writer_p99_us = p99"}
:::'
check "results + ref run"  ok   "not measured" '::: {.results experiment="demo" reference="R2"}
not measured
:::'
check "missing run"        fail "chapters/01-c.md:3: reference run 'R9' of experiment 'demo' not found (have: R1, R2)" \
  "[]{.ref exp=demo run=R9 $P1 field=writer_p99_us}"
check "missing experiment" fail "chapters/01-c.md:4: no reference runs of experiment 'zzz'" "text
[]{.ref exp=zzz run=R1 $P1 field=writer_p99_us}"
check "missing field"      fail "field 'nope' not found" "[]{.ref exp=demo run=R1 $P1 field=nope}"
check "no record"          fail "no record of reference/demo/R1 matches" '[]{.ref exp=demo run=R1 sel="policy=7" field=steals}'
check "ambiguous"          fail "gives 2 values" '[]{.ref exp=demo run=R1 sel="type=sample" field=steals}'
check "failed experiment"  fail "no result: experiment 'broken' in reference run 'R1' did not complete" \
  '[]{.ref exp=broken run=R1 sel="type=begin" field=experiment}'
check "unit mismatch"      fail "unit mismatch: reference/demo/R1 steals" '[]{.ref exp=demo run=R1 sel="type=sample,policy=0" field=steals unit=ms}'
check "unit mismatch 2"    fail "unit mismatch" "[]{.ref exp=demo run=R1 $P1 field=writer_p99_us unit=%}"
check "typed and stale"    fail "typed '428 µs' but the reference gives '427 µs'" "[428 µs]{.ref exp=demo run=R1 $P1 field=writer_p99_us}"
check "reftable failed run" fail "no result: experiment 'broken'" '::: {.reftable exp=broken cols="@run"}
:::'
check "failed reference box" fail "no result: experiment 'broken' in reference run 'R1'" '::: {.results experiment="broken" reference="R1"}
x
:::'
check "missing reference box" fail "reference run 'R7' of experiment 'demo' not found" '::: {.results experiment="demo" reference="R7"}
x
:::'

# ---- results boxes (summarize.py --box) from a run: MMLOCKS_RESULTS=DIR
fx=$PWD/scripts/book/fixtures/results
mkdir -p "$tmp/run" && cp "$fx"/*.jsonl "$fx"/*.json "$tmp/run/"
export MMLOCKS_RESULTS=$tmp/run
check "results box"        ok   "**PASS**" '::: {.results experiment="rwsem-steal"}
not measured
:::'
check "results box compact" ok  "11.6${NB}M" '::: {.results experiment="rwsem-steal"}
not measured
:::'
check "results box no result" ok "**No result**" '::: {.results experiment="uprobe-speculation"}
not measured
:::'
check "results box FAIL why" ok "**FAIL**: timed out (QEMU killed)" '::: {.results experiment="deferred-split"}
not measured
:::'
check "results box counters" ok "\`smaps_rollup_vma_locked\`" '::: {.results experiment="smaps-rollup"}
not measured
:::'
check "results box picked"  ok  "rwsem_rlock_nosteal" '::: {.results experiment="smaps-rollup" counters="rwsem_rlock_nosteal"}
not measured
:::'
if grep -q smaps_rollup_vma_locked <(cd "$tmp" && pandoc book.md --lua-filter "$filter" -t markdown 2>&1); then
  echo "  FAIL results box picked: counters= did not limit the counters"; fail=$((fail + 1))
fi
check "results box not run" ok  "not measured" '::: {.results experiment="no-such-experiment"}
not measured
:::'
MMLOCKS_RESULTS=$tmp/nowhere
check "results, no run"    ok   "not measured" '::: {.results experiment="rwsem-steal"}
not measured
:::'
unset MMLOCKS_RESULTS
# The fixture holds every experiment a chapter boxes, and its boxes print
# no number of 6 digits or more (outside code: run names, paths).
missing=$(grep -ho '{\.results experiment="[^"]*"' chapters/*.md | sed 's/.*="//; s/"$//' | sort -u |
  while read -r e; do [ -f "$fx/$e.jsonl" ] || echo "$e"; done)
long=$(for f in "$fx"/*.jsonl; do
  e=$(basename "$f" .jsonl); labs/kernel/summarize.py --box "$e" "$tmp/run" | sed 's/`[^`]*`//g' | grep -oE '[0-9][0-9,]{5,}' | sed "s/^/$e: /"
done)
if [ -z "$missing$long" ]; then echo "  ok   fixture: every boxed experiment, numbers compact"; pass=$((pass + 1))
else echo "  FAIL fixture: not in $fx: ${missing:-none}; long numbers: ${long:-none}"; fail=$((fail + 1)); fi

# ---- the reader's apparatus (reader.lua): asides, quick quizzes, glossary
check "aside labelled"     ok   "Model vs kernel" '::: {.aside kind="Model vs kernel"}
Inside.
:::'
check "aside kind missing" fail "an .aside needs kind=" '::: {.aside}
Inside.
:::'
check "aside kind unknown" fail "(got Trivia)" '::: {.aside kind="Trivia"}
Inside.
:::'
check "quiz numbered"      ok   "Quick Quiz 1.2" '::: {.quiz}
First?
::: {.answer}
Yes.
:::
:::

::: {.quiz}
Second?
::: {.answer}
No.
:::
:::'
check "quiz answer moved"  ok   "(#qq-1-1)" '::: {.quiz}
First?
::: {.answer}
Yes.
:::
:::'
check "quiz no answer"     fail "without an ::: {.answer}" '::: {.quiz}
First?
:::'
check "glossary first use" ok   "[VMA](#gl-vma){.gloss}, another VMA" 'A VMA, another VMA.

[VMA]{.term match="VMA|VMAs"}
: A virtual memory area.'
check "glossary code term" ok   "[\`mmap_lock\`](#gl-mmap-lock){.gloss}" 'Take `mmap_lock`.

[`mmap_lock`]{.term}
: The lock.'
check "glossary code form" ok   "[\`mm->mmap_lock\`](#gl-mmap-lock){.gloss}" 'Take `mm->mmap_lock`.

[`mmap_lock`]{.term match="mmap_lock|mm->mmap_lock"}
: The lock.'
check "glossary line break" ok   "[grace period](#gl-grace-period){.gloss}" 'One grace
period.

[grace period]{.term}
: Time.'
check "glossary two words" ok   "[grace periods](#gl-grace-period){.gloss}." 'Two grace periods.

[grace period]{.term match="grace period|grace periods"}
: Time.'

# ---- the hand-typed-number check
numcheck() { # numcheck NAME EXPECT(ok|fail) TEXT BODY
  printf '# T\n\n### What our runs showed\n\n%s\n\n## Next\n\nOutside: 5 ms.\n' "$4" > "$tmp/chapters/n.md"
  local out rc
  out=$(scripts/book/check-numbers.py "$tmp/chapters/n.md" 2>&1); rc=$?
  if { [ "$2" = ok ] && [ $rc -eq 0 ]; } || { [ "$2" = fail ] && [ $rc -eq 1 ]; } && grep -qF -- "$3" <<<"$out"; then
    echo "  ok   $1: $(head -1 <<<"$out")"; pass=$((pass + 1))
  else
    echo "  FAIL $1 (rc=$rc): $out" | head -5; fail=$((fail + 1))
  fi
}
numcheck "numbers: typed"      fail "n.md:5: hand-typed measurement '495.7 ms'" 'The walk took 495.7 ms, or 491×.'
numcheck "numbers: ratio"      fail "hand-typed measurement '491×'" 'The walk took [](.x), or 491×.'
numcheck "numbers: percent"    fail "hand-typed measurement '85 %'" 'Reads rose by 70–85 %.'
numcheck "numbers: no source"  fail "needs source=" 'Published [95 ms]{.published}.'
numcheck "numbers: clean"      ok   "0 hand-typed" 'Took []{.ref exp=a run=b field=c}, published [95 ms]{.published source="seed 000 patch 5"}, a [4 ms]{.setting} jiffy, `5 ms` in code, 0x100.'
echo "book selftest: $pass passed, $fail failed"
[ $fail -eq 0 ]
