/* teardown.c: khugepaged_hold's unmapping of its small VMAs (declared in report.h). */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "report.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Why in pieces (6.12.117; the lab kernel is PREEMPT_NONE, HZ=250,
 * RCU_CPU_STALL_TIMEOUT=21): one munmap() over all the small VMAs walks
 * each of them in vms_gather_munmap_vmas() with mmap_lock held for write,
 * then, after vms_complete_munmap_vmas() downgrades the lock, again in
 * unmap_vmas(), free_pgtables() and the remove_vma() loop. Only
 * unmap_vmas() calls cond_resched(), in zap_pud_range() and
 * zap_pmd_range(), which a VMA without page tables never reaches (these
 * pages were never touched); and with PREEMPT_NONE the tick reports an
 * RCU quiescent state only when it interrupts user mode or idle. In
 * reference run 20261130T172406Z (TCG, busy host) the console showed
 * "rcu_sched self-detected stall" in unmap_vmas() during that call.
 * Process exit is no cure: exit_mmap() also runs one unmap_vmas() over
 * every VMA. A call over a few thousand VMAs ends quickly, and on its way
 * back to user space the task takes the reschedule that RCU's tick has
 * asked for by then (rcu_sched_clock_irq() sets need_resched), which
 * reports the quiescent state.
 */
int unmap_small_vmas(uintptr_t base, size_t nvmas, size_t per_call)
{
	uint64_t t0 = mg_now_ns(), longest = 0;
	long long calls = 0;
	struct mg_json j;
	int rc = 0;

	for (size_t i = 0; i < nvmas; i += per_call) {
		size_t n = nvmas - i < per_call ? nvmas - i : per_call;
		uint64_t t = mg_now_ns();

		if (munmap((void *)(base + i * 4096), n * 4096)) {
			mg_error(EXP, "munmap of small VMAs %zu..%zu: %s", i, i + n, strerror(errno));
			rc = MG_EXIT_FAIL;
			break;
		}
		t = mg_now_ns() - t;
		longest = t > longest ? t : longest;
		calls++;
	}
	mgj_start(&j, "info", EXP);
	mgj_int(&j, "teardown_vmas", (long long)nvmas);
	mgj_int(&j, "teardown_vmas_per_call", (long long)per_call);
	mgj_int(&j, "teardown_calls", calls);
	mgj_num(&j, "teardown_seconds", (double)(mg_now_ns() - t0) / 1e9);
	mgj_num(&j, "teardown_longest_call_ms", (double)longest / 1e6);
	mgj_emit(&j);
	return rc;
}
