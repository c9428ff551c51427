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
# STEPS=REGEX runs only the steps whose name matches (grep -E), e.g.
# STEPS='^(unit|lab-test):' for the models' and labs' tests alone.
STEPS=${STEPS:-}
mkdir -p build/test-logs
passed=0 failed=0 failures=()
selected() { [ -z "$STEPS" ] || grep -Eq -- "$STEPS" <<<"$1"; }

# No step may hang CI: each external command runs under timeout(1)
# (STEP_TIMEOUT seconds, default 1500; the slowest step, a cold kernel
# build, takes about 3 minutes on a quiet host and 16 on a loaded one). The shell functions
# below (appendix_mutants, epub_check) bound their own slow parts.
STEP_TIMEOUT=${STEP_TIMEOUT:-1500}
step() { # step NAME COMMAND...
  local name=$1; shift
  selected "$name" || return 0
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
# the exercises are theirs to write, and labs/tools/lab-status tells which
# labs still have an empty TODO step and which labs' files a test compiles.
# A model's tests that run an unfinished lab's code, and a lab's grader while
# that lab is unfinished, "wait for lab NN" (not run: they cannot pass yet;
# `make grade LAB=NN` grades what is written). A lab's grader whose own lab
# is written runs; when it fails while another lab it runs is unfinished
# (lab 05's grader runs lab 04's vma_read.c), it waits for that lab. Once
# every lab a test runs is written, a failure is a failure. The checks that
# need the solutions are not there.
STUDENT=0
[ -f labs/tools/exercises.txt ] && STUDENT=1
waiting=()
test_or_wait() { # test_or_wait NAME DIR COMMAND...: step, or "waiting" in the students' copy
  local name=$1 dir=$2 own= others labs log t0=$SECONDS; shift 2
  if [ $STUDENT = 0 ]; then step "$name" "$@"; return; fi
  selected "$name" || return 0
  log=build/test-logs/${name//\//_}.log
  echo "=== $name"
  labs=$(labs/tools/lab-status --waiting "$dir" test | tr '\n' ' ')
  case $dir in labs/[0-9][0-9]-*) own=$(basename "$dir") ;; esac
  others=$(tr ' ' '\n' <<<"$labs" | grep -vx -- "$own" | grep . | sed 's/-.*//' | tr '\n' ' ')
  if [ -n "$own" ] && grep -qw -- "$own" <<<"$labs"; then
    echo "--- waiting for lab ${own%%-*} (not run: its TODO steps are not all written; make grade LAB=${own%%-*} grades what is)"
    waiting+=("$name"); return
  elif [ -z "$own" ] && [ -n "$labs" ]; then
    echo "--- waiting for lab ${others% } (not run: it runs their code, and their TODO steps are not all written)"
    waiting+=("$name"); return
  fi
  if timeout -k 10 "$STEP_TIMEOUT" "$@" >"$log" 2>&1; then
    echo "--- PASS $name ($((SECONDS - t0)) s)"; passed=$((passed + 1))
  elif [ -n "$others" ]; then
    echo "--- waiting for lab ${others% } ($((SECONDS - t0)) s: it runs their code too, and their TODO steps are not all written; log: $log)"
    waiting+=("$name")
  else
    tail -n 20 "$log"
    echo "--- FAIL $name ($((SECONDS - t0)) s; every lab it runs is written, so this is a real failure; log: $log)"
    failed=$((failed + 1)); failures+=("$name")
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
# A lab's kernel part (labs/NN-slug/kernel/): in the students' copy it
# waits until the student's tree has a commit past `skeleton` and no TODO
# region holding its stub (labs/kernel/kparts.py status); once done, the
# copy's series plus the student's committed work must apply, as the
# measuring kernel of `make kernel`/`make reproduce` will build it.
if [ $STUDENT = 1 ]; then
  while IFS= read -r line; do
    lab=${line%%:*}; name="kernel-part:labs/$lab"
    case $line in
      *": kernel part waiting: "*)
        selected "$name" || continue
        echo "=== $name"
        why=${line#*: kernel part waiting: }
        echo "--- waiting for lab ${lab%%-*}'s kernel part (not run: ${why%%; measured by*}; make reproduce waits for it too)"
        waiting+=("$name") ;;
      *": kernel part done: "*)
        step "$name" bash -c 'd=$(mktemp -d) && trap "rm -rf $d" EXIT && labs/kernel/kparts.py source "$d/src"' ;;
    esac
  done < <(labs/kernel/kparts.py status)
fi
# Every lab's grader already ran on its solution in lab-test above; this
# checks the grading tool itself (TAP, score, JSON) on one lab.
[ $STUDENT = 1 ] || step "grade" bash -c 'labs/tools/grade-all --lab 03 --json build/grade-json && test -s build/grade-json/03-khugepaged-cursor.json'
if [ $STUDENT = 0 ]; then
step "gradescope" labs/tools/check-gradescope 03
step "student-dist" bash -c 'labs/tools/check-student-dist --self-test && labs/tools/check-student-dist'
# The students' book (built by check-student-dist in the copy) prints no
# lab's answer: each listing of what a lab asks to write is in a .lab-answer div.
step "student-book" bash -c 'labs/tools/check-student-book --self-test && labs/tools/check-student-book build/student/book.html'
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
# The chapters' results boxes show a run: the reader's own (results/latest)
# where there is one, so a reader's make test checks the book they read;
# else (a clean clone, CI) the committed fixture of realistic and
# worst-case results (scripts/book/fixtures/results), so the boxes are
# checked with numbers in them, not only the "not measured" text.
BOOK_RESULTS=fixture
[ -e results/latest ] && BOOK_RESULTS=results/latest
if [ $BOOK_RESULTS = fixture ] && selected book; then
  echo "(no results/latest: the book's results boxes show the test fixture, scripts/book/fixtures/results; make book rebuilds the book without it)"
fi
step "book" make --no-print-directory book RESULTS=$BOOK_RESULTS
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
[ ${#waiting[@]} -gt 0 ] && echo "${#waiting[@]} step(s) waiting for your labs (labs/tools/lab-status says which steps are empty): ${waiting[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
