/* mm.c: VMA layouts, the VMA iterator and the mmap_lock as khugepaged experiences them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khugepaged.h"

/* Layouts start at 4 MiB, a PMD boundary, so hand-computed addresses are round. */
#define MM_LAYOUT_BASE (2 * HPAGE_PMD_SIZE)

static void model_bug(const char *what)
{
	fprintf(stderr, "khugepaged model: %s\n", what);
	abort();
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		model_bug("out of memory");
	return p;
}

struct mm_struct *mm_alloc(void)
{
	struct mm_struct *mm = xcalloc(1, sizeof(*mm));

	mm->next_addr = MM_LAYOUT_BASE;
	return mm;
}

void mm_free(struct mm_struct *mm)
{
	if (!mm)
		return;
	for (size_t i = 0; i < mm->nr_vmas; i++)
		free(mm->vmas[i].pmd);
	free(mm->vmas);
	free(mm);
}

/* Index of the first VMA ending above addr (mm->nr_vmas if none). */
static size_t vma_index_after(const struct mm_struct *mm, unsigned long addr)
{
	size_t lo = 0, hi = mm->nr_vmas;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mm->vmas[mid].vm_end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static size_t vma_nr_pmds(unsigned long start, unsigned long end)
{
	unsigned long hstart = round_up(start, HPAGE_PMD_SIZE);
	unsigned long hend = round_down(end, HPAGE_PMD_SIZE);

	return hend > hstart ? (hend - hstart) / HPAGE_PMD_SIZE : 0;
}

void mm_add_vma(struct mm_struct *mm, unsigned long start, unsigned long end,
		bool eligible, const char *pmd_states)
{
	size_t n = eligible ? vma_nr_pmds(start, end) : 0;
	size_t at = vma_index_after(mm, start);
	struct vm_area_struct *vma;

	if (start >= end || start % PAGE_SIZE || end % PAGE_SIZE)
		model_bug("mm_add_vma: bad range");
	if (at < mm->nr_vmas && mm->vmas[at].vm_start < end)
		model_bug("mm_add_vma: overlaps an existing VMA");
	if (pmd_states && strlen(pmd_states) != n)
		model_bug("mm_add_vma: one state per PMD range needed");
	if (mm->nr_vmas == mm->cap_vmas) {
		mm->cap_vmas = mm->cap_vmas ? 2 * mm->cap_vmas : 64;
		mm->vmas = realloc(mm->vmas, mm->cap_vmas * sizeof(*mm->vmas));
		if (!mm->vmas)
			model_bug("out of memory");
	}
	memmove(&mm->vmas[at + 1], &mm->vmas[at],
		(mm->nr_vmas - at) * sizeof(*mm->vmas));
	mm->nr_vmas++;
	vma = &mm->vmas[at];
	vma->vm_start = start;
	vma->vm_end = end;
	vma->eligible = eligible;
	vma->pmd = NULL;
	if (n) {
		vma->pmd = xcalloc(n + 1, 1);
		for (size_t i = 0; i < n; i++) {
			char s = pmd_states ? pmd_states[i] : PMD_COLLAPSIBLE;

			if (s != PMD_COLLAPSIBLE && s != PMD_UNCOLLAPSIBLE &&
			    s != PMD_HUGE)
				model_bug("mm_add_vma: PMD state must be c, u or H");
			vma->pmd[i] = s;
			mm->nr_collapsible += s == PMD_COLLAPSIBLE;
		}
	}
	if (end > mm->next_addr)
		mm->next_addr = end;
	mm->vma_seq++;
}

/*
 * count one-page VMAs with one-page gaps between them (so they cannot
 * merge), as a program gets from mmap()ing pages that it then
 * madvise(MADV_NOHUGEPAGE)s or maps with different protections.
 */
void mm_add_ineligible(struct mm_struct *mm, unsigned long count)
{
	unsigned long addr = ALIGN(mm->next_addr, PAGE_SIZE);

	for (unsigned long i = 0; i < count; i++, addr += 2 * PAGE_SIZE)
		mm_add_vma(mm, addr, addr + PAGE_SIZE, false, NULL);
	mm->next_addr = addr;
}

/* One PMD-aligned eligible VMA with one range per state; returns its start. */
unsigned long mm_add_eligible(struct mm_struct *mm, const char *pmd_states)
{
	unsigned long start = ALIGN(mm->next_addr, HPAGE_PMD_SIZE);
	unsigned long end = start + strlen(pmd_states) * HPAGE_PMD_SIZE;

	mm_add_vma(mm, start, end, true, pmd_states);
	mm->next_addr = end + PAGE_SIZE;
	return start;
}

/* munmap() of whole VMAs inside [start, end); the model never splits one. */
size_t mm_unmap(struct mm_struct *mm, unsigned long start, unsigned long end)
{
	size_t from = vma_index_after(mm, start), to = from, removed;

	while (to < mm->nr_vmas && mm->vmas[to].vm_end <= end) {
		struct vm_area_struct *vma = &mm->vmas[to];

		if (vma->vm_start < start)
			break;
		for (size_t i = 0; i < vma_nr_pmds(vma->vm_start, vma->vm_end) &&
				   vma->pmd; i++)
			mm->nr_collapsible -= vma->pmd[i] == PMD_COLLAPSIBLE;
		free(vma->pmd);
		to++;
	}
	removed = to - from;
	memmove(&mm->vmas[from], &mm->vmas[to],
		(mm->nr_vmas - to) * sizeof(*mm->vmas));
	mm->nr_vmas -= removed;
	if (removed)
		mm->vma_seq++;
	return removed;
}

static char *pmd_slot(struct mm_struct *mm, unsigned long address)
{
	size_t i = vma_index_after(mm, address);
	struct vm_area_struct *vma;

	if (i == mm->nr_vmas || mm->vmas[i].vm_start > address)
		return NULL;
	vma = &mm->vmas[i];
	if (!vma->pmd || address < round_up(vma->vm_start, HPAGE_PMD_SIZE) ||
	    address + HPAGE_PMD_SIZE > round_down(vma->vm_end, HPAGE_PMD_SIZE))
		return NULL;
	return &vma->pmd[(address - round_up(vma->vm_start, HPAGE_PMD_SIZE)) /
			 HPAGE_PMD_SIZE];
}

enum pmd_state mm_pmd_state(struct mm_struct *mm, unsigned long address)
{
	char *s = pmd_slot(mm, address);

	return s ? (enum pmd_state)*s : PMD_UNCOLLAPSIBLE;
}

/* Used by hpage_collapse_scan_pmd(): the range is now mapped by a huge page. */
void mm_collapse_pmd(struct mm_struct *mm, unsigned long address)
{
	char *s = pmd_slot(mm, address);

	if (!s || *s != PMD_COLLAPSIBLE)
		model_bug("collapsing a range that is not collapsible");
	*s = PMD_HUGE;
	mm->nr_collapsible--;
}

void vma_iter_init(struct vma_iterator *vmi, struct mm_struct *mm,
		   unsigned long addr)
{
	vmi->mm = mm;
	vmi->visits = 0;
	vma_iter_set(vmi, addr);
}

/* Re-point the walk at addr: required after the mmap_lock was dropped. */
void vma_iter_set(struct vma_iterator *vmi, unsigned long addr)
{
	vmi->index = vma_index_after(vmi->mm, addr);
	vmi->seq = vmi->mm->vma_seq;
}

struct vm_area_struct *vma_next(struct vma_iterator *vmi)
{
	struct mm_struct *mm = vmi->mm;

	if (!mm->read_locked)
		model_bug("VMA walk without the mmap_lock");
	/*
	 * In the kernel a maple-tree walk state from before a writer changed
	 * the tree is not valid any more; the model counts such uses.
	 */
	if (vmi->seq != mm->vma_seq) {
		model_stats.stale_iter++;
		vmi->seq = mm->vma_seq;
	}
	if (vmi->index >= mm->nr_vmas)
		return NULL;
	/* A correct walk visits each VMA at most once: stop one that loops. */
	if (++vmi->visits > 2 * mm->nr_vmas + 64) {
		model_stats.runaway_walks++;
		return NULL;
	}
	model_stats.vma_visits++;
	mm->hold_vmas++;
	model_clock_advance(model_costs.vma_visit_ns);
	if (mm->writer_arrives_at && mm->hold_vmas == mm->writer_arrives_at) {
		mm->writer_arrives_at = 0;	/* one writer */
		mmap_writer_arrives(mm);
	}
	return &mm->vmas[vmi->index++];
}

/*
 * The mmap_lock.  Only khugepaged reads; other tasks appear as (a) the
 * chance that mmap_read_trylock() fails and (b) an optional queued writer
 * that tests make arrive during a hold.
 */
void mmap_writer_arrives(struct mm_struct *mm)
{
	mm->writer_queued = true;
	mm->writer_since_ns = model_clock_ns;
}

static void mmap_writer_runs(struct mm_struct *mm)
{
	uint64_t waited = model_clock_ns - mm->writer_since_ns;

	if (waited > model_stats.longest_writer_wait_ns)
		model_stats.longest_writer_wait_ns = waited;
	mm->writer_queued = false;
	model_stats.writer_runs++;
	model_clock_advance(model_costs.writer_ns);
	if (mm->writer)
		mm->writer(mm, mm->writer_arg);
}

static void mmap_read_acquired(struct mm_struct *mm)
{
	if (mm->read_locked)
		model_bug("khugepaged takes the mmap_lock twice");
	mm->read_locked = true;
	mm->hold_start_ns = model_clock_ns;
	mm->hold_vmas = 0;
}

bool mmap_read_trylock(struct mm_struct *mm)
{
	model_stats.trylocks++;
	/* A waiting writer makes a read trylock fail; it then runs. */
	if (mm->writer_queued) {
		mmap_writer_runs(mm);
		model_stats.trylock_fails++;
		return false;
	}
	if (!model_trylock_outcome()) {
		model_stats.trylock_fails++;
		return false;
	}
	mmap_read_acquired(mm);
	return true;
}

/*
 * down_read(): with the lock free and a writer asleep in the queue (no
 * handoff yet), rwsem_down_read_slowpath() lets the reader steal it.
 */
void mmap_read_lock(struct mm_struct *mm)
{
	model_stats.read_locks++;
	if (mm->writer_queued)
		model_stats.steals++;
	mmap_read_acquired(mm);
}

/* Patch 3/4's mmap_read_lock_nosteal(): a queued writer goes first. */
void mmap_read_lock_nosteal(struct mm_struct *mm)
{
	model_stats.nosteal_locks++;
	if (mm->writer_queued)
		mmap_writer_runs(mm);
	mmap_read_acquired(mm);
}

void mmap_read_unlock(struct mm_struct *mm)
{
	uint64_t held;

	if (!mm->read_locked)
		model_bug("mmap_read_unlock without the lock");
	held = model_clock_ns - mm->hold_start_ns;
	if (held > model_stats.longest_hold_ns)
		model_stats.longest_hold_ns = held;
	if (mm->hold_vmas > model_stats.longest_hold_vmas)
		model_stats.longest_hold_vmas = mm->hold_vmas;
	mm->read_locked = false;
}
