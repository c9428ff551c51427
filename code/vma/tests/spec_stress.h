/* spec_stress.h - uprobe hits racing a writer that remaps the probed address, with a linearizability check of every answer. */
#ifndef MMLOCKS_VMA_SPEC_STRESS_H
#define MMLOCKS_VMA_SPEC_STRESS_H

#include <stdbool.h>

#include "../uprobe.h"

struct spec_stress_cfg {
	int readers;		/* threads calling handle_swbp(SP_X) */
	int mapper;		/* 1: a thread maps/unmaps anonymous memory elsewhere */
	long ops;		/* writer steps, and hits, at least */
	double seconds;		/* stop earlier after this long (0: no limit) */
	int perturb;		/* every Nth hook in a speculative lookup, the reader makes writer steps (0: never) */
};

struct spec_stress_result {
	bool ok;
	char why[240];
	long steps, hits, checked;	/* writer steps, lookups, lookups checked */
	long ev[NR_UPROBE_EVENTS];
	long perturbed;		/* lookups a reader perturbed with writer steps */
};

/*
 * The probe writer cycles the VMA at SP_X (speculate.h's layout) through
 * six states: file I1 at vm_pgoff 8 (id 112); its start moved down 2
 * pages and back (vma_move_start(), offsets kept: 112); replaced by a
 * mapping of I2 at vm_pgoff 3 (207); moved down and back (207); replaced
 * by I1 again. After each replacement another "process" opens a file on
 * I3, which reuses the struct file the replaced VMA still points at.
 * Before step g the writer sets `intent` to g, after it `done` to g. A
 * reader reads done (lo), calls handle_swbp(SP_X), reads intent (hi):
 * its answer must be the id of one of the states lo..hi. A torn read
 * (vm_pgoff of one state and vm_start of another, or a replaced VMA's
 * file, now I3's) gives another offset or inode, whose uprobe (every
 * page of I1, I2 and I3 has one) has an id no state has.
 * With perturb, the run starts with a forced prefix: 20 * perturb hits
 * in the caller's thread alone, perturbed as above but never refused,
 * the same on every run; a prefix that never reached a speculative
 * lookup's hooks fails the run. At the end, quiescent: one more hit succeeds speculatively; the
 * counters add up (attempt = success + fail_*), every lookup a reader
 * perturbed failed its retry (fail_retry >= perturbed), and a full run (not a
 * --seconds cut) must have seen both successes and retries.
 */
void spec_stress_run(const struct spec_stress_cfg *cfg, struct spec_stress_result *r);

#endif
