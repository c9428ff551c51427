# khugepaged-lab.mk: the Makefile body shared by the labs that exercise one
# file of code/khugepaged. A lab sets LAB, EXERCISED (its file in $(SRC),
# the solution of which is code/khugepaged/$(EXERCISED)) and GIVEN (the
# other policy file, taken from the model) and BENCH_ARGS (what `make bench`
# runs the model's driver with when ARGS is not given), then includes this.
SRC ?= src
BUILD ?= ../../build/labs/$(LAB)
MODEL = ../../code/khugepaged
CC = gcc

CFLAGS = -std=gnu11 -Wall -Wextra -Werror -O2 -g -pthread -I$(MODEL) -I$(MODEL)/tests
# A skeleton (TODO regions emptied) may leave a parameter or variable unused.
ifneq ($(SRC),src)
CFLAGS += -Wno-error=unused-parameter -Wno-error=unused-variable \
	  -Wno-error=unused-but-set-variable
endif
CFLAGS += $(EXTRA_CFLAGS)
SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
CRITERION = $(shell pkg-config --cflags --libs criterion)

# Everything but the exercised file comes from code/khugepaged.
CORE = $(MODEL)/mm.c $(MODEL)/model.c $(MODEL)/khugepaged.c $(MODEL)/$(GIVEN)
EXERCISE = $(SRC)/$(EXERCISED)
# One driver binary per source folder, so your work and a fresh skeleton do
# not overwrite each other's.
TAG = $(subst /,_,$(patsubst /%,%,$(abspath $(SRC))))
include ../tools/lab-common.mk

.PHONY: all grader test grade model bench drift mutants clean

all: grader

# Always rebuilt: the checker builds the same target from several $(SRC)s.
grader:
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $(BUILD)/grader grader/grader.c $(EXERCISE) $(CORE) $(CRITERION)

# src/ under ASan+UBSan; src/ must match code/khugepaged (less the TODO
# markers: in a students' copy the model's file is a link to src/); every
# mutant in mutants/ (a plausible wrong solution) is rejected. (make test
# at the top also runs labs/tools/check-skeletons.)
test: drift
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(SAN) -o $(BUILD)/grader-san grader/grader.c $(EXERCISE) \
		$(CORE) $(CRITERION)
	$(BUILD)/grader-san --jobs 2
	$(CHECK_MUTANTS)

mutants:
	../tools/check-mutants .

drift:
	@[ -L $(MODEL)/$(EXERCISED) ] || sed -E '/^[[:space:]]*\/\* (END )?TODO [0-9]+/d' src/$(EXERCISED) | \
		diff -u $(MODEL)/$(EXERCISED) - >/dev/null || \
		{ echo "src/$(EXERCISED) differs from $(MODEL)/$(EXERCISED) beyond TODO markers"; exit 1; }

grade: grader
	$(call whose-src,grading)
	@../tools/grade $(LAB) $(BUILD)/grader

# Predict-then-measure: the model's driver, running $(SRC)/$(EXERCISED).
model:
	$(call whose-src,the model's driver)
	$(call other-labs,model)
	@mkdir -p $(BUILD)/bench/$(TAG)
	$(CC) $(CFLAGS) -o $(BUILD)/bench/$(TAG)/khugepaged_model $(MODEL)/driver.c $(EXERCISE) $(CORE) -lm
	@ln -sfn bench/$(TAG)/khugepaged_model $(BUILD)/khugepaged_model	# the last one built
	@echo "run: $(BUILD)/bench/$(TAG)/khugepaged_model --help"

bench: model
	$(BUILD)/bench/$(TAG)/khugepaged_model $(or $(ARGS),$(BENCH_ARGS))

clean:
	rm -rf $(BUILD)
