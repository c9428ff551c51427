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
	skeletons mutate kernel-selftests kernel-debug debug-check compare-stock bench plots explore clean distclean reference \
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
	@echo "           LAB=NN or NN-slug, SRC=dir (grade/bench one lab with your sources),"
	@echo "           ARGS='...' (bench options), TODO=N DST=dir (skeletons),"
	@echo "           MMLOCKS_CACHE=dir (kernel source and build cache, default ~/.cache/mmlocks)"

deps: ## install missing Debian packages (apt-get; root or sudo)
	@scripts/deps.sh

# ---------------------------------------------------------------- the book
book: build/book.html build/book.epub build/book.pdf build/site/index.html ## build/book.html (single file), book.epub, book.pdf and the website build/site/
	@echo "book: build/book.html build/book.epub build/book.pdf build/site/index.html"

build/diagrams/%.svg: diagrams/%.dot
	@mkdir -p $(@D)
	dot -Tsvg $< | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >$@.tmp && mv $@.tmp $@	# no DTD: EPUB 3 forbids it

plots: ## the models' plots (gnuplot SVGs in build/plots/)
	@for d in $(CODE_DIRS); do \
	  if grep -q '^plots:' $$d/Makefile; then $(MAKE) --no-print-directory -C $$d plots || exit 1; fi; \
	done

# What the book reads: the tracked sources (chapters, listings from code/ and
# labs/, reference runs, the filters), results/latest (the results boxes;
# a new run re-points the link, so the link itself is a prerequisite too)
# and the models' plots. The pristine 6.12 tree never changes for a given
# kernel version. A file make cannot see (an untracked new listing source)
# needs `git add` first, or `make -B book`.
BOOK_INPUTS := $(wildcard $(shell git ls-files book.md chapters diagrams scripts/book code labs reference 2>/dev/null || \
	find book.md chapters diagrams scripts/book code labs reference -type f)) \
	$(wildcard results/latest results/latest/*.md build/plots/*.svg)
# The chapters' races, drawn from the schedule explorer's own output: the
# first failing schedule of each chapter's broken variant (make explore).
EXPLORE_FIGS := $(patsubst %,build/explore/%.svg,rwsem-steal vma-norecheck uprobe-noretry thp-unlocked-drop)
EXPLORE_SRCS := $(wildcard code/explore/*.c code/explore/*.h code/rwsem/*.[ch] code/vma/*.[ch] code/thp/*.[ch])
build/explore/%.svg: $(EXPLORE_SRCS)
	@$(MAKE) --no-print-directory -s -C code/explore command
	@mkdir -p $(@D)
	@build/code/explore/explore --quiet --dot build/explore/$*.dot $* >/dev/null
	@dot -Tsvg build/explore/$*.dot | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >$@.tmp && mv $@.tmp $@

build/book.html: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) | plots
	@mkdir -p $(@D)
	@src=$$(labs/kernel/linux-source.sh) && \
	MMLOCKS_LINUX_SRC=$$src pandoc book.md $(PANDOC_OPTS) --standalone --self-contained \
	  --css scripts/book/book.css --metadata pagetitle=mmlocks -t html5 -o $@.tmp && mv $@.tmp $@

build/book.epub: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) | plots
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
build/site/index.html: $(BOOK_INPUTS) $(DIAGRAMS) $(EXPLORE_FIGS) $(wildcard results/latest/*.svg) | plots
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

labs: ## the labs only: graders (solutions) and skeletons in work/ (no kernel, no QEMU)
	@for d in $(LAB_DIRS); do $(MAKE) --no-print-directory -C $$d grader || exit 1; done
	@$(MAKE) --no-print-directory skeletons

bench: ## the models' benchmarks; LAB=NN [SRC=dir] [ARGS='...']: one lab's, with your sources
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
explore: ## search every scenario's schedules (FOUND/NONE as expected?); figures in build/explore/
	@$(MAKE) --no-print-directory -C code/explore command
	@build/code/explore/explore --total
	@mkdir -p build/explore && for s in $$(build/code/explore/explore --list | awk '/expects FOUND/ {print $$1}'); do \
	  build/code/explore/explore --quiet --dot build/explore/$$s.dot $$s >/dev/null || exit 1; \
	  dot -Tsvg build/explore/$$s.dot | sed -e '/^<!DOCTYPE/{:a;/>/!{N;ba};d}' >build/explore/$$s.svg.tmp && \
	  mv build/explore/$$s.svg.tmp build/explore/$$s.svg || exit 1; \
	done; echo "explore: figures in build/explore/"

grade: ## grade the labs: LAB=NN to pick one, SRC=dir for your own sources (else the solution)
	$(check-lab)
	@labs/tools/grade-all $(if $(LAB),--lab $(notdir $(LAB_DIR))) $(if $(SRC),--src $(abspath $(SRC)))

# Not part of make test (minutes per lab): every generated mutant of one
# lab's TODO regions, graded one at a time; ONLY=op[,op] picks operators.
mutate: ## grade every generated mutant of a lab's TODO regions: LAB=NN [ONLY=op] (writes labs/NN-slug/mutation-report.md)
	@[ -n "$(LAB)" ] || { echo "make mutate: give LAB=NN (one lab at a time)" >&2; exit 2; }
	$(check-lab)
	@labs/tools/mutate $(notdir $(LAB_DIR)) $(if $(ONLY),--only $(call shq,$(ONLY))) \
	  $(if $(ONLY),,--report $(LAB_DIR)/mutation-report.md)

# Student work lives outside build/ (make clean never touches it): an
# existing folder is never overwritten; DST=other gives a fresh skeleton.
skeletons: ## student skeletons in work/NN-slug/ (LAB=NN, TODO=N keeps steps < N, DST=dir)
	$(check-lab)
	@for d in $(or $(LAB_DIR),$(LAB_DIRS)); do \
	  dst=$(or $(DST),work)/$$(basename $$d); \
	  if [ -e "$$dst" ]; then echo "skeletons: kept $$dst (it exists: your work?); DST=dir for a fresh one"; \
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
tools-agree: deps kernel kernel-debug image ## standard tools against our instruments, chapters 1, 2, 7: results/tools-agree-<UTC time>/
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
test: deps ## everything CI checks (GUEST=0 skips the QEMU part)
	@GUEST=$(or $(GUEST),1) scripts/test.sh

clean: ## remove build/ (keeps results/ and the kernel cache)
	rm -rf build

distclean: clean ## also remove results/ and the kernel cache
	rm -rf results "$(MMLOCKS_CACHE)"
