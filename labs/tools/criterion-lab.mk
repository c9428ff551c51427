# criterion-lab.mk - the Makefile body shared by labs 04, 05, 06 and 07: a
# Criterion grader (ASan+UBSan) linked from the lab's exercise files in
# $(SRC) and a model from code/ compiled once, guest host tests, grade,
# mutants, clean. (Labs 02 and 03 share khugepaged-lab.mk; labs 04, 05
# and 06 include this through vma-lab.mk, which sets the code/vma part.)
#
# The lab's Makefile (or vma-lab.mk) sets, then includes this file:
#   LAB          the lab's folder name, e.g. 05-remote-access
#   BASE_CFLAGS  compiler flags for everything (include paths of its model)
#   LIBS         libraries the model needs (may be empty)
#   EXERCISE     the student's files, $(SRC)/...
#   MODEL        the model's sources the grader links (../../code/...)
#   TESTLIB      the model's test library sources
#   MODEL_DIR    where the sanitized objects go (labs with the same flags
#                and sources may share one)
#   GUEST_LIBS   (optional) guest/ sources the host tests link
# and writes its own bench and stress targets (they differ per model).
SRC ?= src
BUILD ?= ../../build/labs/$(LAB)
CC = gcc
include ../tools/lab-common.mk

CFLAGS = $(BASE_CFLAGS)
# A skeleton (TODO regions emptied) may leave names and labels unused.
ifneq ($(SRC),src)
CFLAGS += -Wno-error=unused-parameter -Wno-error=unused-variable \
	  -Wno-error=unused-but-set-variable -Wno-error=unused-label
endif
CFLAGS += $(EXTRA_CFLAGS)
SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
CRITERION = $(shell pkg-config --cflags --libs criterion)

# The model, its test library and the grader's tests do not change between
# graders (the solution, each skeleton, each mutant): compile them once,
# under the sanitizers, and link the objects. Written atomically (the
# mutant checker builds two graders at a time).
MODEL_OBJS = $(patsubst ../../%.c,$(MODEL_DIR)/%.o,$(MODEL) $(TESTLIB))
GRADER_OBJ = $(MODEL_DIR)/labs/$(LAB)/grader/grader.o

$(MODEL_DIR)/%.o: ../../%.c
	@mkdir -p $(@D)
	@$(CC) $(BASE_CFLAGS) $(SAN) -MMD -MP -MT $@ -MF $@.d.tmp$$$$ -c $< -o $@.tmp$$$$ && \
	  mv $@.d.tmp$$$$ $@.d && mv $@.tmp$$$$ $@

-include $(MODEL_OBJS:.o=.o.d) $(GRADER_OBJ).d

# One binary per source folder, so benchmarking mywork/ and a skeleton
# does not overwrite the other's.
TAG = $(subst /,_,$(patsubst /%,%,$(abspath $(SRC))))

# Host tests of the guest programs' companion sources, under ASan+UBSan, as
# lab 02's guest-test; nothing to do without guest/tests/.
GUEST_CFLAGS = -std=gnu11 -Wall -Wextra -Werror -O1 -g -pthread -I../kernel/guest -Iguest
GUEST_TESTS = $(wildcard guest/tests/test_*.c)
GUEST_LIBS ?= $(filter-out guest/tests/%,$(wildcard guest/*/*.c))

.PHONY: all grader test grade bench stress mutants guest-test clean

all: grader

# The grader runs under ASan+UBSan; always relinked (the checkers build it
# from several $(SRC)s).
grader: $(MODEL_OBJS) $(GRADER_OBJ)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(SAN) -o $(BUILD)/grader $(GRADER_OBJ) $(EXERCISE) $(MODEL_OBJS) \
		$(LIBS) $(CRITERION)

# src/ passes; every mutant in mutants/ is rejected.
# (make test at the top also runs labs/tools/check-skeletons.)
test: grader guest-test
	$(BUILD)/grader --jobs 2
	$(CHECK_MUTANTS)

guest-test:
ifneq ($(GUEST_TESTS),)
	@mkdir -p $(BUILD)
	$(CC) $(GUEST_CFLAGS) $(SAN) -o $(BUILD)/guest-tests $(GUEST_TESTS) $(GUEST_LIBS) \
		$(wildcard ../kernel/guest/*.c) $(CRITERION) -lm
	$(BUILD)/guest-tests --jobs 2
endif

grade: grader
	$(call whose-src,grading)
	@../tools/grade $(LAB) $(BUILD)/grader

mutants:
	../tools/check-mutants .

clean:
	rm -rf $(BUILD)
