#!/usr/bin/env bash
# Every program of the project answers --help with exit 0 and an unknown
# option with a message on stderr and exit 2. Programs are built first.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) echo "usage: scripts/check-cli.sh"; exit 0 ;;
  "") ;; *) echo "check-cli.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
# CLI_BUILD=0: check the programs already built (check-student-dist's run of
# a students' copy: this repository's own cli step builds and checks the
# same models' programs).
if [ "${CLI_BUILD:-1}" != 0 ]; then
  make --no-print-directory code >/dev/null || { echo "check-cli: 'make code' failed"; exit 1; }
fi

progs=(
  scripts/deps.sh scripts/test.sh scripts/check-cli.sh scripts/book/selftest.sh
  labs/tools/mkskel labs/tools/grade labs/tools/grade-all labs/tools/check-skeletons
  labs/kernel/linux-source.sh
  scripts/reference.sh scripts/reference-agree.py scripts/book/timeline.py scripts/reference-bench.sh scripts/book/check-numbers.py scripts/book/check-refs.sh
  labs/tools/check-mutants scripts/check-leaks.py scripts/book/epub-titles.py scripts/book/browser-check.py
  scripts/book/epub-figures.py code/khugepaged/plots/guest-points.py
  scripts/book/check-shape.py scripts/book/chapter.sh scripts/book/answers.sh
  labs/tools/mutate labs/tools/student-dist labs/tools/check-student-dist labs/tools/check-gradescope
  labs/tools/check-explain labs/kernel/tree-sync.sh labs/tools/lab-status
  labs/tools/check-student-book
  labs/kernel/tools/mmlocks-tool labs/kernel/tools/tools_smoke labs/kernel/tools/agree.py
  labs/08-diagnosis/diag.sh labs/08-diagnosis/grader/grade.py labs/08-diagnosis/grader/test_grader.py
  labs/08-diagnosis/guest/run.sh
)
# Programs that exist only once their part is built; each line: PATH.
while read -r p; do [ -n "$p" ] && progs+=("$p"); done < <(
  ls labs/kernel/*.sh labs/kernel/*.py 2>/dev/null | grep -v linux-source.sh
  find build/code -maxdepth 2 -type f -perm -u+x -name '*' 2>/dev/null | grep -Ev '/(test|tests|tsan|grader)[^/]*$|\.o$|/stress' 
)
# Guest programs: static binaries for the QEMU image, compiled for the host here.
gdir=build/cli-guest; mkdir -p "$gdir"
for c in labs/[0-9][0-9]-*/guest/*.c; do
  [ -f "$c" ] || continue
  b=$gdir/$(basename "$c" .c)
  extra=(); for x in "${c%.c}"/*.c; do [ -f "$x" ] && extra+=("$x"); done   # guest/NAME/*.c
  if gcc -O1 -std=gnu11 -Wall -Wextra -Werror -pthread -Ilabs/kernel/guest -I"$(dirname "$c")" "$c" \
      ${extra[@]+"${extra[@]}"} labs/kernel/guest/*.c -o "$b" 2>"$b.err"; then
    progs+=("$b")
  else
    echo "  FAIL $c does not compile:"; sed 's/^/    /' "$b.err"; bad_compile=1
  fi
done

pass=0 fail=0 left_out=0
for p in "${progs[@]}"; do
  # The students' copy leaves out the tools that need the solutions.
  if [ -f labs/tools/exercises.txt ] && [ ! -e "$p" ]; then left_out=$((left_out + 1)); continue; fi
  out=$(timeout 20 "$p" --help 2>/dev/null); rc1=$?
  err=$(timeout 20 "$p" --no-such-option 2>&1 >/dev/null </dev/null); rc2=$?
  if [ $rc1 -eq 0 ] && [ -n "$out" ] && [ $rc2 -eq 2 ] && [ -n "$err" ]; then
    pass=$((pass + 1)); echo "  ok   $p"
  else
    fail=$((fail + 1)); echo "  FAIL $p: --help rc=$rc1 (stdout ${#out} bytes); --no-such-option rc=$rc2 (stderr ${#err} bytes)"
  fi
done
[ -n "${bad_compile:-}" ] && fail=$((fail + 1))
[ $left_out -gt 0 ] && echo "  ($left_out program(s) of the instructors' repository are not in this students' copy)"
echo "check-cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
