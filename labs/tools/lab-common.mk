# lab-common.mk - what every lab's Makefile says about whose sources it
# builds; included after the lab sets LAB and SRC.
#
# In the instructors' repository labs/$(LAB)/src is the reference solution
# and the mutants/ are checked; in a students' copy (labs/tools/student-dist
# writes labs/tools/exercises.txt) src/ is the student's work, with no
# mutants/ and no model copy to compare it with.
STUDENT_COPY := $(wildcard ../tools/exercises.txt)

# The mutants: every plausible wrong answer must be rejected (instructors only).
CHECK_MUTANTS = $(if $(and $(wildcard mutants/*.patch),$(wildcard ../tools/check-mutants)),../tools/check-mutants .,\
	@echo "(no mutants/ in this copy: nothing to check against wrong answers)")

# A recipe line: which sources a grade or benchmark runs. $(1): what is run.
whose-src = @if [ "$(SRC)" != src ]; then echo "($(1) with the sources in $(SRC))"; \
	elif [ -n "$(STUDENT_COPY)" ]; then echo "($(1) with your work in labs/$(LAB)/src)"; \
	else echo "($(1) with the reference solution in labs/$(LAB)/src; SRC=dir for another folder)"; fi

# A recipe line, in a students' copy: name the other labs whose files this
# target compiles while their TODO steps are still empty. $(1): the target.
other-labs = $(if $(STUDENT_COPY),@../tools/lab-status --note $(LAB) . $(1))
