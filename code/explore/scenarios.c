/* scenarios.c - the list of scenarios, broken variant first, each followed by its correct ones. */
#include "explore.h"

#include <string.h>

extern const struct ex_scenario scn_rwsem_steal, scn_rwsem_nosteal, scn_rwsem_wfirst;
extern const struct ex_scenario scn_rwsem_nosteal_call, scn_rwsem_guard_prefer, scn_rwsem_guard;
extern const struct ex_scenario scn_rwsem2_steal, scn_rwsem2_nosteal, scn_rwsem2_wfirst;
extern const struct ex_scenario scn_vma_norecheck, scn_vma_recheck;
extern const struct ex_scenario scn_vma_start_norecheck, scn_vma_start_recheck;
extern const struct ex_scenario scn_vma_shrink_norecheck, scn_vma_shrink_recheck;
extern const struct ex_scenario scn_uprobe_noretry, scn_uprobe_retry;
extern const struct ex_scenario scn_thp_unlocked, scn_thp_locked;

const struct ex_scenario *const ex_scenarios[] = {
	&scn_rwsem_steal, &scn_rwsem_nosteal, &scn_rwsem_wfirst, &scn_rwsem_nosteal_call,
	&scn_rwsem_guard_prefer, &scn_rwsem_guard,
	&scn_rwsem2_steal, &scn_rwsem2_nosteal, &scn_rwsem2_wfirst,
	&scn_vma_norecheck, &scn_vma_recheck, &scn_vma_start_norecheck, &scn_vma_start_recheck,
	&scn_vma_shrink_norecheck, &scn_vma_shrink_recheck,
	&scn_uprobe_noretry, &scn_uprobe_retry,
	&scn_thp_unlocked, &scn_thp_locked,
	NULL
};

const struct ex_scenario *ex_find(const char *name)
{
	for (int i = 0; ex_scenarios[i]; i++)
		if (strcmp(ex_scenarios[i]->name, name) == 0)
			return ex_scenarios[i];
	return NULL;
}
