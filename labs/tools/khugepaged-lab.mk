# khugepaged-lab.mk: the Makefile body shared by the labs that exercise one
# file of code/khugepaged. A lab sets LAB, EXERCISED (its file in $(SRC),
# the solution of which is code/khugepaged/$(EXERCISED)) and GIVEN (the
# other policy file, taken from the model), then includes this.
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

.PHONY: all grader test grade model drift mutants clean

all: grader

# Always rebuilt: the checker builds the same target from several $(SRC)s.
grader:
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $(BUILD)/grader grader/grader.c $(EXERCISE) $(CORE) $(CRITERION)

# The solution under ASan+UBSan; src/ must match code/khugepaged (less the
# TODO markers); every mutant in mutants/ (a plausible wrong solution) is
# rejected. (make test at the top also runs labs/tools/check-skeletons.)
test: drift
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(SAN) -o $(BUILD)/grader-san grader/grader.c $(EXERCISE) \
		$(CORE) $(CRITERION)
	$(BUILD)/grader-san --jobs 2
	../tools/check-mutants .

mutants:
	../tools/check-mutants .

drift:
	@sed -E '/^[[:space:]]*\/\* (END )?TODO [0-9]+/d' src/$(EXERCISED) | \
		diff -u $(MODEL)/$(EXERCISED) - >/dev/null || \
		{ echo "src/$(EXERCISED) differs from $(MODEL)/$(EXERCISED) beyond TODO markers"; exit 1; }

grade: grader
	@if [ -x ../tools/grade ]; then ../tools/grade $(LAB) $(BUILD)/grader; \
	else echo "labs/tools/grade not found; running the grader directly"; \
	     $(BUILD)/grader --jobs 2; fi

# Predict-then-measure: the model's driver, running your $(EXERCISED).
model:
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $(BUILD)/khugepaged_model $(MODEL)/driver.c $(EXERCISE) $(CORE) -lm
	@echo "run: $(BUILD)/khugepaged_model --help"

clean:
	rm -rf $(BUILD)
