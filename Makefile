# mmlocks: the book, the models, the labs and the lab kernel.
# `make help` lists the targets. Everything generated goes to build/ and
# results/; kernel sources and builds go to $(MMLOCKS_CACHE).

SHELL := /bin/bash
.DEFAULT_GOAL := all
TOP := $(CURDIR)
export MMLOCKS_CACHE ?= $(HOME)/.cache/mmlocks

CODE_DIRS := $(patsubst %/Makefile,%,$(wildcard code/*/Makefile))
LAB_DIRS  := $(patsubst %/Makefile,%,$(wildcard labs/[0-9][0-9]-*/Makefile))
DIAGRAMS  := $(patsubst diagrams/%.dot,build/diagrams/%.svg,$(wildcard diagrams/*.dot))
PANDOC_OPTS := --from markdown --lua-filter scripts/book/mmlocks.lua \
	--toc --toc-depth=2 --number-sections --highlight-style=tango \
	--resource-path=.

.PHONY: all help deps book serve pdf answers student-dist code labs kernel image qemu reproduce test grade \
	explore-figures skeletons mutate kernel-selftests kernel-debug debug-check compare-stock bench plots explore clean distclean reference \
	kernel-tree kernel-grade kernel-shell qemu-gdb kernel-patch kernel-check kernel-mutants kernel-bench \
	tools tools-agree

all: deps ## everything: packages, models, labs, kernel, image, reproduce, book
	$(MAKE) code labs kernel image
	$(MAKE) reproduce
	$(MAKE) book
	@echo "make: done. Open build/book.html; the numbers are in results/latest/summary.md"

help: ## list the targets
	@echo "mmlocks — make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1|\2/' | column -t -s'|'
	@echo "Variables: VCPUS=N MEM=SIZE (guest size), GUEST=0 (make test without QEMU),"
	@echo "           LAB=NN or NN-slug, SRC=dir (grade/bench one lab from another folder than its src/),"
	@echo "           ARGS='...' (bench options), TODO=N DST=dir (skeletons),"
	@echo "           RESULTS=dir|fixture (the run the book's results boxes show, default results/latest),"
	@echo "           MMLOCKS_CACHE=dir (kernel source and build cache, default ~/.cache/mmlocks)"

deps: ## install missing Debian packages (apt-get; root or sudo)
	@scripts/deps.sh

# ---------------------------------------------------------------- the book
book: build/book.html build/book.epub build/book.pdf build/site/index.html ## build/book.html (single file), book.epub, book.pdf and the website build/site/ (RESULTS=DIR or fixture: the run the results boxes show)
	@echo "book: build/book.html build/book.epub build/book.pdf build/site/index.html"

build/diagrams/%.svg: diagrams/%.dot
	@mkdir -p $(@D)
	dot -Tsvg $< | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >$@.tmp && mv $@.tmp $@	# no DTD: EPUB 3 forbids it

# A students' copy ships them drawn from the reference solution
# (diagrams/plots/, written by student-dist): the models' sweeps run the
# labs' files, and an unwritten lab's would draw nothing useful, or never end.
plots: ## the models' plots (gnuplot SVGs in build/plots/)
ifneq ($(wildcard diagrams/plots/*.svg),)
	@mkdir -p build/plots && cp -p diagrams/plots/*.svg build/plots/
else
	@for d in $(CODE_DIRS); do \
	  if grep -q '^plots:' $$d/Makefile; then $(MAKE) --no-print-directory -C $$d plots || exit 1; fi; \
	done
endif

# The run the chapters' results boxes show: RESULTS=DIR, a run directory,
# default results/latest (make reproduce points it at the newest run).
# RESULTS=fixture is the committed test fixture (scripts/book/fixtures/
# results: realistic and worst-case results, summarized into
# build/test-results/fixture), which make test uses when there is no
# results/latest. The filter and the site read MMLOCKS_RESULTS.
RESULTS ?= results/latest
FIXTURE := scripts/book/fixtures/results
FIXTURE_RUN := build/test-results/fixture
RESULTS_DIR := $(if $(filter fixture,$(RESULTS)),$(FIXTURE_RUN),$(RESULTS))
export MMLOCKS_RESULTS := $(RESULTS_DIR)

# What the book reads: the tracked sources (chapters, listings from code/ and
# labs/ with summarize.py, reference runs, the filters), the results run (its
# files; build/results-source changes when RESULTS names another run or a
# new run re-points results/latest) and the models' plots. The pristine 6.12
# tree never changes for a given kernel version. A file make cannot see (an
# untracked new listing source) needs `git add` first, or `make -B book`.
BOOK_INPUTS := $(wildcard $(shell git ls-files book.md chapters diagrams scripts/book code labs reference 2>/dev/null || \
	find book.md chapters diagrams scripts/book code labs reference -type f)) \
	$(wildcard $(addprefix $(RESULTS_DIR)/,*.jsonl *.json *.md *.svg) build/plots/*.svg) build/results-source \
	$(if $(filter $(FIXTURE_RUN),$(RESULTS_DIR)),$(FIXTURE_RUN)/summary.md)

# Rewritten only when it would change, so an unchanged run rebuilds nothing.
build/results-source: FORCE
	@mkdir -p $(@D) && s="$(RESULTS_DIR) -> $$(readlink $(RESULTS_DIR) || true)" && \
	{ [ "$$(cat $@ 2>/dev/null)" = "$$s" ] || echo "$$s" >$@; }
.PHONY: FORCE

# The fixture as make reproduce leaves a run: summarize.py writes summary.md,
# each experiment's record and plot from the committed JSON lines.
$(FIXTURE_RUN)/summary.md: $(wildcard $(FIXTURE)/*.jsonl $(FIXTURE)/*.json) labs/kernel/summarize.py
	@rm -rf $(@D) && mkdir -p $(@D) && cp $(FIXTURE)/*.jsonl $(FIXTURE)/*.json $(@D)/ && \
	labs/kernel/summarize.py $(@D) >/dev/null
# The chapters' races, drawn from the schedule explorer's own output: the
# first failing schedule of each chapter's broken variant (make explore).
# A students' copy ships them drawn from the reference solution
# (diagrams/explore/, written by student-dist): there the explorer runs the
# student's files, and a lab not yet written has no such schedule to draw.
EXPLORE_FIGS := $(patsubst %,build/explore/%.svg,rwsem-steal vma-norecheck uprobe-noretry thp-unlocked-drop)
EXPLORE_SRCS := $(wildcard code/explore/*.c code/explore/*.h code/rwsem/*.[ch] code/vma/*.[ch] code/thp/*.[ch])
ifneq ($(wildcard diagrams/explore/*.svg),)
build/explore/%.svg: diagrams/explore/%.svg
	@mkdir -p $(@D)
	@cp $< $@
else
build/explore/%.svg: $(EXPLORE_SRCS)
	@$(MAKE) --no-print-directory -s -C code/explore command
	@mkdir -p $(@D)
	@build/code/explore/explore --quiet --dot build/explore/$*.dot $* >/dev/null
	@dot -Tsvg build/explore/$*.dot | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >$@.tmp && mv $@.tmp $@
endif
explore-figures: $(EXPLORE_FIGS)

# Chapter 8's timeline: one window of a committed tools-agree run's perf
# trace (the run the chapter quotes), drawn from its reference files.
TIMELINE_RUN := reference/tools-agree/20261205T033821Z
TRACE_FIGS := build/figures/tools-agree-timeline.svg
build/figures/tools-agree-timeline.svg: $(TIMELINE_RUN)/agree-steal.perf-script.gz $(TIMELINE_RUN)/agree-steal.window.json scripts/book/timeline.py
	@scripts/book/timeline.py $(TIMELINE_RUN) $@

build/book.html: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) $(TRACE_FIGS) | plots
	@mkdir -p $(@D)
	@src=$$(labs/kernel/linux-source.sh) && \
	MMLOCKS_LINUX_SRC=$$src pandoc book.md $(PANDOC_OPTS) --standalone --self-contained \
	  --css scripts/book/book.css --metadata pagetitle=mmlocks -t html5 -o $@.tmp && mv $@.tmp $@

build/book.epub: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) $(TRACE_FIGS) | plots
	@mkdir -p $(@D)
	@src=$$(labs/kernel/linux-source.sh) && \
	MMLOCKS_LINUX_SRC=$$src pandoc book.md $(PANDOC_OPTS) --css scripts/book/book.css \
	  -t epub3 -o $@.tmp && scripts/book/epub-titles.py $@.tmp && scripts/book/epub-figures.py $@.tmp && mv $@.tmp $@

# The website: pandoc writes the whole book once more, not self-contained
# and with a <section> per heading; split.py makes a page per chapter with a
# sidebar, copies the figures and the results into it; the search index
# (lunr, Debian's libjs-lunr) is built here and shipped as a script, so the
# site works from file:// and from any static server.
LUNR_JS ?= /usr/share/javascript/lunr/lunr.js
build/site/index.html: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) $(TRACE_FIGS) | plots
	@command -v node >/dev/null && [ -f $(LUNR_JS) ] || { echo "make book: the site's search needs node and $(LUNR_JS) (make deps)" >&2; exit 2; }
	@mkdir -p build/site-src
	@src=$$(labs/kernel/linux-source.sh) && \
	MMLOCKS_LINUX_SRC=$$src pandoc book.md $(PANDOC_OPTS) --section-divs --standalone \
	  --metadata pagetitle=mmlocks -t html5 -o build/site-src/book.html
	@rm -rf build/site.tmp && python3 scripts/book/site/split.py build/site-src/book.html build/site.tmp && \
	cp $(LUNR_JS) build/site.tmp/lunr.js && \
	node scripts/book/site/search-index.js $(LUNR_JS) build/site-src/search-docs.json build/site.tmp/search-index.js && \
	rm -rf build/site && mv build/site.tmp build/site

serve: build/site/index.html ## serve the website build/site/ on 127.0.0.1 (PORT=8000) until Ctrl-C
	@echo "serve: open http://127.0.0.1:$(or $(PORT),8000)/  (build/site/; Ctrl-C stops)"
	@python3 -m http.server --bind 127.0.0.1 --directory build/site $(or $(PORT),8000)

# The PDF: headless Chromium prints the HTML with book.css's print rules
# (chapters on new pages, page numbers, tables whole) and an outline.
pdf: build/book.pdf ## build/book.pdf (headless Chromium prints build/book.html)
	@echo "pdf: build/book.pdf"

build/book.pdf: build/book.html scripts/book/print.css
	@command -v chromium >/dev/null || { echo "make pdf: chromium not found (make deps)" >&2; exit 2; }
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	sed 's|</head>|<style>'"$$(tr '\n' ' ' <scripts/book/print.css)"'</style></head>|' \
	  build/book.html >"$$tmp/book.html" && \
	timeout 180 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$$tmp/profile" \
	  --no-pdf-header-footer --generate-pdf-document-outline \
	  --print-to-pdf="$(TOP)/$@.tmp" "file://$$tmp/book.html" 2>/dev/null && \
	[ -s $@.tmp ] && mv $@.tmp $@

answers: ## the instructors' answer key: build/answers.html and build/answers.pdf (not in the book, not in student-dist)
	@[ -x scripts/book/answers.sh ] || { echo "make answers: the answer key is not in the students' copy (your instructor has it)" >&2; exit 2; }
	@scripts/book/answers.sh

# The answer key's HTML alone (make test builds it; unchanged inputs, no rebuild).
build/answers.html: $(wildcard answers/*.md answers/labs/*.md) $(wildcard scripts/book/*.lua) scripts/book/answers.sh \
		$(wildcard $(shell git ls-files reference 2>/dev/null))
	@scripts/book/answers.sh --no-pdf

# ---------------------------------------------------------- models and labs
# LAB=01 or LAB=01-rwsem-steal: that lab's directory (empty if LAB is unset).
LAB_DIR := $(if $(LAB),$(firstword $(wildcard labs/$(LAB)/Makefile labs/$(LAB)-*/Makefile)))
LAB_DIR := $(patsubst %/Makefile,%,$(LAB_DIR))
check-lab = $(if $(LAB),$(if $(LAB_DIR),,$(error LAB=$(LAB): no such lab (labs: $(notdir $(LAB_DIRS))))))
code: ## build the userspace models, tests and benchmarks
	@for d in $(CODE_DIRS); do $(MAKE) --no-print-directory -C $$d all || exit 1; done

labs: ## the labs only: every lab's grader, built from its src/ (no kernel, no QEMU)
	@for d in $(LAB_DIRS); do $(MAKE) --no-print-directory -s -C $$d grader || exit 1; done
	@echo "labs: $(words $(LAB_DIRS)) graders built from labs/NN-slug/src; make grade LAB=NN grades one"

bench: ## the models' benchmarks; LAB=NN [ARGS='...'] [SRC=dir]: one lab's, built from its src/ (or SRC)
	$(check-lab)
ifeq ($(LAB),)
	@[ -z "$(SRC)" ] || { echo "make bench: SRC= needs LAB=NN (which lab's benchmark?)" >&2; exit 2; }
	@for d in $(CODE_DIRS); do $(MAKE) --no-print-directory -C $$d bench || exit 1; done
else
	@$(MAKE) --no-print-directory -C $(LAB_DIR) bench $(if $(SRC),SRC=$(abspath $(SRC))) $(if $(ARGS),ARGS='$(subst ','\'',$(ARGS))')
endif

# The schedule explorer (code/explore): every scenario, its verdict
# against the expected one (a non-zero exit if any differs), and each
# failing schedule drawn for the book as build/explore/SCENARIO.svg.
# In a students' copy it runs the student's files: a scenario that runs a
# lab whose TODO steps are still empty waits for it (labs/tools/lab-status),
# and the figures go to build/explore/yours/ (the book's stay the shipped ones).
EXPLORE_OUT := $(if $(wildcard diagrams/explore/*.svg),build/explore/yours,build/explore)
explore: ## search every scenario's schedules (FOUND/NONE as expected?); figures in build/explore/
	@$(MAKE) --no-print-directory -C code/explore command
	@labs/tools/lab-status --explore build/code/explore/explore --total
	@mkdir -p $(EXPLORE_OUT) && for s in $$(build/code/explore/explore --list | awk '/expects FOUND/ {print $$1}'); do \
	  build/code/explore/explore --quiet --dot $(EXPLORE_OUT)/$$s.dot $$s >/dev/null || { \
	    [ -n "$$(labs/tools/lab-status --unfinished)" ] && continue; exit 1; }; \
	  dot -Tsvg $(EXPLORE_OUT)/$$s.dot | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >$(EXPLORE_OUT)/$$s.svg.tmp && \
	  mv $(EXPLORE_OUT)/$$s.svg.tmp $(EXPLORE_OUT)/$$s.svg || exit 1; \
	done; echo "explore: figures in $(EXPLORE_OUT)/"

grade: ## grade the labs from their src/ (in a students' copy, your work): LAB=NN to pick one, SRC=dir for another folder
	$(check-lab)
	@labs/tools/grade-all $(if $(LAB),--lab $(notdir $(LAB_DIR))) $(if $(SRC),--src $(abspath $(SRC)))

# Not part of make test (minutes per lab): every generated mutant of one
# lab's TODO regions, graded one at a time; ONLY=op[,op] picks operators.
mutate: ## grade every generated mutant of a lab's TODO regions: LAB=NN [ONLY=op] (writes labs/NN-slug/mutation-report.md)
	@[ -n "$(LAB)" ] || { echo "make mutate: give LAB=NN (one lab at a time)" >&2; exit 2; }
	$(check-lab)
	@labs/tools/mutate $(notdir $(LAB_DIR)) $(if $(ONLY),--only $(call shq,$(ONLY))) \
	  $(if $(ONLY),,--report $(LAB_DIR)/mutation-report.md)

# A lab's src/ with its TODO steps emptied, outside build/ (make clean never
# touches it), for a "before" measurement (SRC=before/NN-slug): an existing
# folder is never overwritten; DST=other gives a fresh one.
skeletons: ## a fresh skeleton of src/ in before/NN-slug/ (LAB=NN, TODO=N keeps steps < N, DST=dir)
	$(check-lab)
	@for d in $(or $(LAB_DIR),$(LAB_DIRS)); do \
	  dst=$(or $(DST),before)/$$(basename $$d); \
	  if [ -e "$$dst" ]; then echo "skeletons: kept $$dst (it exists); DST=dir for a fresh one"; \
	  else labs/tools/mkskel --todo $(or $(TODO),1) $$d/src "$$dst" || exit 1; fi; \
	done

student-dist: ## the students' repository, without the answers: DST=dir (a new git repository)
	@[ -n "$(DST)" ] || { echo "make student-dist: give DST=dir (a new directory)" >&2; exit 2; }
	@labs/tools/student-dist $(call shq,$(DST))

# ------------------------------------------------------------ the kernel
kernel: deps ## build the patched 6.12 kernel (cached in $(MMLOCKS_CACHE))
	@labs/kernel/build.sh

image: ## build the initramfs with the guest programs
	@labs/kernel/mkinitramfs.sh

qemu: kernel image ## boot the lab kernel to a shell (VCPUS=, MEM=; TOOLS=1: with perf and trace-cmd)
ifeq ($(TOOLS),1)
	@labs/kernel/mktools.sh --initrd build/initramfs-tools.cpio.gz
	@labs/kernel/run-qemu.sh --interactive --initrd build/initramfs-tools.cpio.gz
else
	@labs/kernel/run-qemu.sh --interactive
endif

reproduce: kernel image ## run every in-guest experiment into results/<UTC time>/
	@labs/kernel/reproduce.sh

kernel-selftests: kernel image ## 6.12 selftests (khugepaged, proc, mremap_test), every knob setting
	@labs/kernel/selftests.sh

shq = '$(subst ','\'',$(1))'
reference: ## copy a run for the book: RUN=results/<ts> [ONLY=name] [LABEL= LOAD= NOTE=]
	@[ -n "$(RUN)" ] || { echo "make reference: give RUN=results/<UTC time> (and ONLY=experiment to copy one)" >&2; exit 2; }
	@scripts/reference.sh $(if $(ONLY),--only $(call shq,$(ONLY))) $(if $(LABEL),--label $(call shq,$(LABEL))) \
	  $(if $(LOAD),--load $(call shq,$(LOAD))) $(if $(NOTE),--note $(call shq,$(NOTE))) $(call shq,$(RUN))

# Not part of `make`: the debug kernel takes a full build of its own.
kernel-debug: deps ## the debug kernel (lockdep, DEBUG_VM, ...) in build/kernel-debug/
	@labs/kernel/build.sh --debug

debug-check: kernel-debug image ## boot the debug kernel: stress, experiments, selftest; fail on any splat
	@labs/kernel/debug-check.sh --no-build

# The guest tools (labs/kernel/README.md, "Tools in the guest"): perf and
# trace-cmd from the host's packages, as an archive appended to the image.
tools: deps ## the guest tools overlay build/tools.cpio.gz (perf, trace-cmd; TOOLS=1 make qemu uses it)
	@labs/kernel/mktools.sh

# Not part of `make reproduce` (its own budget) or `make test`: three boots,
# one of them the debug kernel's.
tools-agree: deps kernel kernel-debug image ## standard tools against our instruments, chapters 1, 2, 7, and their cost (ch. 8): results/tools-agree-<UTC time>/
	@labs/kernel/tools-agree.sh --no-build

# ------------------------------------------------ kernel labs (klab.py)
# A lab's kernel part: the student writes the heart of one of our patches
# in the real 6.12 tree (work/kernel/NN-slug/, a git repository), graded
# under the debug configuration. Not part of `make` or `make test` (a debug
# kernel build, then a boot per grade); .ci/run proves the graders after
# `make test`. labs/kernel/README.md, "Kernel labs".
KLAB_LABS := $(patsubst labs/%/kernel/tests,%,$(wildcard labs/*/kernel/tests))
need-lab = @[ -n "$(LAB)" ] || { echo "make $@: give LAB=NN (kernel parts: $(KLAB_LABS))" >&2; exit 2; }
kernel-tree: deps ## your kernel tree for a lab: work/kernel/NN-slug/ (LAB=NN; DST=dir for another)
	$(need-lab)
	@labs/kernel/klab.py tree $(LAB) $(if $(DST),--dst $(call shq,$(DST)))

kernel-grade: ## build, boot and grade your kernel tree (LAB=NN [TREE=dir])
	$(need-lab)
	@labs/kernel/klab.py grade $(LAB) $(if $(TREE),--tree $(call shq,$(TREE)))

kernel-shell: ## build your kernel tree and boot it to a shell (LAB=NN [TREE=dir])
	$(need-lab)
	@labs/kernel/klab.py shell $(LAB) $(if $(TREE),--tree $(call shq,$(TREE)))

qemu-gdb: ## boot your kernel tree halted and attach gdb with vmlinux (LAB=NN [TREE=dir] [PORT=n])
	$(need-lab)
	@labs/kernel/klab.py gdb $(LAB) $(if $(TREE),--tree $(call shq,$(TREE))) $(if $(PORT),--port $(PORT))

kernel-patch: ## your commits as mail-ready patches, checked by checkpatch.pl --strict (LAB=NN)
	$(need-lab)
	@labs/kernel/klab.py patch $(LAB) $(if $(TREE),--tree $(call shq,$(TREE)))

kernel-check: deps ## prove the kernel graders: the solution passes, the skeleton fails exactly its tests ([LAB=NN])
	@for l in $(or $(LAB),$(KLAB_LABS)); do labs/kernel/klab.py check $$l || exit 1; done

kernel-mutants: deps ## prove every committed wrong kernel answer is rejected by its named test ([LAB=NN])
	@for l in $(or $(LAB),$(KLAB_LABS)); do labs/kernel/klab.py mutants $$l || exit 1; done

kernel-bench: deps ## time one edit of a kernel part to its graded result: build, boot, tests (LAB=NN)
	$(need-lab)
	@labs/kernel/klab.py bench $(LAB)

# Not part of `make` or `make test` either: a second kernel build and 6+ boots.
compare-stock: deps ## stock vs patched 6.12, booted alternately: fault_scale patched/stock per pattern, +-5 % (results/compare-stock-<UTC time>/)
	@labs/kernel/compare-stock.sh

# ------------------------------------------------------------------ tests
test: deps ## everything CI checks (GUEST=0 skips the kernel build and QEMU; STEPS=regex picks steps)
	@GUEST=$(or $(GUEST),1) scripts/test.sh

clean: ## remove build/ (keeps results/ and the kernel cache)
	rm -rf build

distclean: clean ## also remove results/ and the kernel cache
	rm -rf results "$(MMLOCKS_CACHE)"
