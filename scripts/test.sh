#!/usr/bin/env bash
# Everything `make test` (and so CI) checks, one step after another; a line
# per step and a closing "N passed, M failed". GUEST=0 skips the QEMU steps.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) echo "usage: scripts/test.sh   (env: GUEST=0 skips kernel build and QEMU boots)"; exit 0 ;;
  "") ;;
  *) echo "scripts/test.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
GUEST=${GUEST:-1}
mkdir -p build/test-logs
passed=0 failed=0 failures=()

# No step may hang CI: each external command runs under timeout(1)
# (STEP_TIMEOUT seconds, default 1500; the slowest step, a cold kernel
# build, takes about 3 minutes on a quiet host and 16 on a loaded one). The shell functions
# below (appendix_mutants, epub_check) bound their own slow parts.
STEP_TIMEOUT=${STEP_TIMEOUT:-1500}
step() { # step NAME COMMAND...
  local name=$1; shift
  local log=build/test-logs/${name//\//_}.log t0=$SECONDS bound=()
  [ "$(type -t "$1")" = file ] && bound=(timeout -k 10 "$STEP_TIMEOUT")
  echo "=== $name"
  if "${bound[@]}" "$@" > >(tee "$log") 2>&1; then
    echo "--- PASS $name ($((SECONDS - t0)) s)"
    passed=$((passed + 1))
  else
    local rc=$?
    [ $rc = 124 ] && echo "$name: still running after STEP_TIMEOUT=$STEP_TIMEOUT s, stopped" | tee -a "$log"
    echo "--- FAIL $name ($((SECONDS - t0)) s; log: $log)"
    failed=$((failed + 1)); failures+=("$name")
  fi
}

# In the students' copy (labs/tools/student-dist writes labs/tools/exercises.txt)
# the exercises are theirs to write: a model's or lab's tests that fail while
# one of its exercise files is still unfinished report "waiting for lab NN";
# the checks that need the solutions are not there.
STUDENT=0
[ -f labs/tools/exercises.txt ] && STUDENT=1
waiting=()
labs_of() { # labs_of DIR: the labs whose exercise files live in DIR (the explorer builds them all)
  local d="${1%/}/"; [ "$d" = code/explore/ ] && d=
  awk -v d="$d" '$1 !~ /^#/ && index($2, d) == 1 { print $1 }' labs/tools/exercises.txt | sort -u | tr '\n' ' '
}
test_or_wait() { # test_or_wait NAME DIR COMMAND...: step, or "waiting" in the students' copy
  local name=$1 dir=$2 labs; shift 2
  labs=$([ $STUDENT = 1 ] && labs_of "$dir")
  if [ -z "$labs" ]; then step "$name" "$@"; return; fi
  echo "=== $name"
  if timeout -k 10 "$STEP_TIMEOUT" "$@" >"build/test-logs/${name//\//_}.log" 2>&1; then
    echo "--- PASS $name"; passed=$((passed + 1))
  else
    echo "--- waiting for lab ${labs% } ($name needs its exercise; log: build/test-logs/${name//\//_}.log)"
    waiting+=("$name")
  fi
}

for d in code/*/; do
  [ -f "$d/Makefile" ] && test_or_wait "unit:${d%/}" "${d%/}" make --no-print-directory -C "$d" test
done
for d in labs/[0-9][0-9]-*/; do
  [ -f "$d/Makefile" ] || continue
  test_or_wait "lab-test:${d%/}" "${d%/}" make --no-print-directory -C "$d" test
  [ $STUDENT = 1 ] || step "skeletons:${d%/}" labs/tools/check-skeletons "$d"
done
# Every lab's grader already ran on its solution in lab-test above; this
# checks the grading tool itself (TAP, score, JSON) on one lab.
[ $STUDENT = 1 ] || step "grade" bash -c 'labs/tools/grade-all --lab 03 --json build/grade-json && test -s build/grade-json/03-khugepaged-cursor.json'
if [ $STUDENT = 0 ]; then
step "gradescope" labs/tools/check-gradescope 03
step "student-dist" labs/tools/check-student-dist
step "explain" labs/tools/check-explain
fi
step "cli" scripts/check-cli.sh
[ $STUDENT = 1 ] || step "solution-leaks" bash -c 'scripts/check-leaks.py --self-test && scripts/check-leaks.py'
# The instructors' appendix lists every lab's wrong answers, or points at
# the lab's mutants/ folder for them.
appendix_mutants() {
  local app=chapters/99-instructors.md bad=0 d p n
  for d in labs/[0-9][0-9]-*/mutants/; do
    grep -qF "${d%/}/" "$app" && continue
    for p in "$d"*.patch; do
      n=$(basename "$p" .patch)
      grep -qF "\`$n\`" "$app" || { echo "$app does not list $p"; bad=1; }
    done
  done
  [ $bad -eq 0 ] && echo "every mutant is listed in $app"
}
[ $STUDENT = 1 ] || step "appendix-mutants" appendix_mutants
step "book-errors" scripts/book/selftest.sh
step "book-numbers" scripts/book/check-numbers.py
step "book-refs" scripts/book/check-refs.sh
step "book-citations" bash -c "scripts/book/check-citations.py --self-test && scripts/book/check-citations.py"
[ $STUDENT = 1 ] || step "answers" make --no-print-directory build/answers.html
step "book" make --no-print-directory book
step "book-shape" scripts/book/check-shape.py --built
# EPUB 3 validity: Debian's epubcheck (its /usr/bin wrapper needs binfmt
# for jars, so call the jar through java where it is installed).
epub_check() {
  local jar=/usr/share/java/epubcheck.jar
  if [ -f "$jar" ]; then timeout 600 java -jar "$jar" build/book.epub
  else timeout 600 epubcheck build/book.epub; fi
}
# unchanged KEY FILE... -- COMMAND...: run COMMAND unless FILES are byte for
# byte what they were when COMMAND last passed (sha256 in build/test-cache/).
# For the slow checks of generated files (the book in EPUBCheck and in
# Chromium): on a built tree whose book did not change they are not re-run;
# on a clean clone (CI) they always run.
unchanged() {
  local key=$1 files=() sum stamp=build/test-cache/$1; shift
  while [ "$1" != -- ]; do files+=("$1"); shift; done; shift
  sum=$(cat "${files[@]}" 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    echo "$key: inputs unchanged since its last pass (sha256 ${sum:0:16}), not re-run; rm $stamp to force"
    return 0
  fi
  "$@" || return
  mkdir -p build/test-cache && echo "$sum" >"$stamp"
}
step "epubcheck" unchanged epubcheck build/book.epub -- epub_check
step "browser" unchanged browser build/book.html build/book.epub build/book.pdf scripts/book/browser-check.py \
  scripts/book/browser-check.js -- timeout -k 10 900 bash -c 'scripts/book/browser-check.py --self-test && scripts/book/browser-check.py'
# The website (build/site): every page, link and search in Chromium,
# skipped like the book's check when the site and the check are unchanged.
site_check() {
  timeout -k 10 300 scripts/book/browser-check.py --site build/site
}
step "browser-site" unchanged browser-site $(find build/site -type f 2>/dev/null | LC_ALL=C sort) \
  scripts/book/browser-check.py scripts/book/browser-check.js -- site_check
step "kernel-scripts" labs/kernel/selftests/test-host.sh
if [ "$GUEST" != 0 ]; then
  # The kernel labs' patches (skeletons, wrong answers) still apply to the
  # series and their tests parse: seconds, no build. The graders themselves
  # are proved by `make kernel-check kernel-mutants` (.ci/run, after this).
  step "kernel-labs" labs/kernel/klab.py lint
  step "kernel" labs/kernel/build.sh
  step "image" labs/kernel/mkinitramfs.sh
  # The same boot checks the guest tools (perf, trace-cmd: build/tools.cpio.gz).
  step "guest-smoke" labs/kernel/smoke-test.sh --tools
  step "guest-selftests" labs/kernel/selftests.sh --quick
else
  echo "(GUEST=0: kernel build and QEMU steps skipped)"
fi

echo
[ ${#failures[@]} -gt 0 ] && echo "failed steps: ${failures[*]}"
[ ${#waiting[@]} -gt 0 ] && echo "waiting for your labs: ${waiting[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
