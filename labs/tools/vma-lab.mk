# vma-lab.mk - what labs 04, 05 and 06 share: code/vma's model on
# code/rwsem, compiled once for the three under the sanitizers, with the
# student's exercise files from $(SRC) in place of the model's own; then
# criterion-lab.mk, and code/vma's benchmark and stress test built with the
# student's files.
#
# The lab's Makefile sets, then includes this file:
#   LAB           the lab's folder name
#   EXERCISE      the student's files, $(SRC)/NAME.c, each one a code/vma file
#   MODEL_EXTRA   (optional) more code/vma files the lab's grader links
#   TESTLIB       code/vma's and code/rwsem's test library sources
#   BENCH         code/vma's benchmark program (bench_vma), BENCH_ARGS its default arguments
#   STRESS        the stress program's name; STRESS_SRC its sources,
#                 STRESS_SAN its sanitizer, STRESS_ENV its environment,
#                 STRESS_ARGS its default arguments
VMA = ../../code/vma
RWSEM = ../../code/rwsem
BASE_CFLAGS = -std=gnu11 -Wall -Wextra -Werror -O2 -g -pthread -I$(VMA) -I$(VMA)/tests \
	-I$(RWSEM) -I$(RWSEM)/tests $(shell pkg-config --cflags liburcu-memb)
LIBS = $(shell pkg-config --libs liburcu-memb)

# Every lab's exercise file is part of the model, but for the ones this
# lab's student writes: labs link each other's files from code/vma, no copies.
VMA_EXERCISES = vma_read.c rollup_vma.c access_remote_vma.c
MODEL = $(addprefix $(VMA)/,vma.c mmap.c fault.c rollup.c access_remote.c $(MODEL_EXTRA) \
	  $(filter-out $(notdir $(EXERCISE)),$(VMA_EXERCISES))) \
	$(RWSEM)/task.c $(RWSEM)/rwsem.c $(RWSEM)/rwsem_wait.c $(RWSEM)/rwsem_steal.c
# Lab 04's folder: the three labs compile these files with the same flags,
# so each object is built once for all.
MODEL_DIR = ../../build/labs/04-per-vma-locks/model-san

include ../tools/criterion-lab.mk

# Predict-then-measure: code/vma's benchmark with your files.
bench:
	$(call whose-src,the benchmark)
	$(call other-labs,bench)
	@mkdir -p $(BUILD)/bench/$(TAG)
	$(CC) $(CFLAGS) -o $(BUILD)/bench/$(TAG)/$(BENCH) $(VMA)/$(BENCH).c $(EXERCISE) \
		$(MODEL) $(LIBS) -lm
	$(BUILD)/bench/$(TAG)/$(BENCH) $(or $(ARGS),$(BENCH_ARGS))

# code/vma's stress test with your files.
stress:
	$(call whose-src,the stress test)
	$(call other-labs,stress)
	@mkdir -p $(BUILD)/stress/$(TAG)
	$(CC) $(CFLAGS) $(STRESS_SAN) -o $(BUILD)/stress/$(TAG)/$(STRESS) $(STRESS_SRC) \
		$(EXERCISE) $(MODEL) $(LIBS)
	$(STRESS_ENV) $(BUILD)/stress/$(TAG)/$(STRESS) $(or $(ARGS),$(STRESS_ARGS))
