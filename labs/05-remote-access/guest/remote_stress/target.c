/* remote_stress's target process: regions filled with an address pattern, threads that keep changing them. */
#define _GNU_SOURCE
#include "mmlocks_guest.h"
#include "remote_stress/target.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

const struct region regions[R_NR] = {
	[R_STABLE] = { "stable", SLOT(R_STABLE), 64, 4, EXACT },
	[R_MPROT] = { "mprotect", SLOT(R_MPROT), 256, 1, EXACT },
	[R_HOLE] = { "holes", SLOT(R_HOLE), 512, 1, LOOSE_ZERO }, /* even pages come and go */
	[R_MREMAP_A] = { "mremap-a", SLOT(R_MREMAP_A), 16, 16, LOOSE },
	[R_MREMAP_B] = { "mremap-b", MREMAP_B, 16, 16, LOOSE },
	[R_DONTNEED] = { "dontneed", SLOT(R_DONTNEED), 64, 64, ZERO },
	[R_WRITE] = { "written", SLOT(R_WRITE), 32, 4, EXACT },
	[R_GAP] = { "gap", SLOT(R_GAP), 16, 16, EIO_ONLY },
};

unsigned char pat(unsigned long a)
{
	a &= PERIOD - 1;
	return (unsigned char)(1 + (a * 131u + (a >> 8) * 7u) % 251u);
}

static void fill(unsigned long a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)a)[i] = pat(a + i);
}

unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* ---- the target ---------------------------------------------------------- */

static const struct region *R(int i) { return &regions[i]; }

static void *churn_mprotect(void *arg)
{
	for (unsigned int s = 1;;)
		mprotect((void *)(R(R_MPROT)->base + rnd(&s) % R(R_MPROT)->pages * PG), PG,
			 rnd(&s) & 1 ? PROT_READ : PROT_READ | PROT_WRITE);
	return arg;
}

static void *churn_holes(void *arg)
{
	for (unsigned int s = 2;;) {
		unsigned long a = R(R_HOLE)->base + rnd(&s) % (R(R_HOLE)->pages / 2) * 2 * PG;
		void *p = mmap((void *)a, PG, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			munmap((void *)a, PG); /* EEXIST: it was mapped */
		else
			fill(a, PG);
	}
	return arg;
}

static void *churn_mremap(void *arg)
{
	size_t len = R(R_MREMAP_A)->pages * PG;

	for (unsigned long from = R(R_MREMAP_A)->base, to = MREMAP_B;; from ^= to, to ^= from, from ^= to)
		mremap((void *)from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to);
	return arg;
}

static void *churn_dontneed(void *arg)
{
	for (;;) {
		fill(R(R_DONTNEED)->base, R(R_DONTNEED)->pages * PG);
		madvise((void *)R(R_DONTNEED)->base, R(R_DONTNEED)->pages * PG, MADV_DONTNEED);
	}
	return arg;
}

/* The child: map and fill, report ready (with the tid to ptrace), churn unless quiet. */
static void __attribute__((noreturn)) target(int ready_fd, void *quiet_p)
{
	bool quiet = *(bool *)quiet_p;
	static void *(*const churn[])(void *) = { churn_mprotect, churn_holes, churn_mremap,
						   churn_dontneed };
	pthread_t t;
	pid_t tid;

	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* keep page tables and counters predictable */
	for (int i = 0; i < R_NR; i++) {
		const struct region *r = R(i);

		if (i == R_GAP || i == R_MREMAP_B || i == R_HOLE)
			continue;
		if (mmap((void *)r->base, r->pages * PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)r->base)
			_exit(1);
		fill(r->base, r->pages * PG);
		for (unsigned long p = r->vma_pages; p < r->pages; p += 2 * r->vma_pages)
			mprotect((void *)(r->base + p * PG), r->vma_pages * PG, PROT_READ);
	}
	if (quiet) /* the quiet check's first read of these must fault them in */
		madvise((void *)(R(R_DONTNEED)->base + 32 * PG), 32 * PG, MADV_DONTNEED);
	for (size_t i = 0; !quiet && i < sizeof(churn) / sizeof(churn[0]); i++)
		if (pthread_create(&t, NULL, churn[i], NULL))
			_exit(1);
	tid = (pid_t)syscall(SYS_gettid); /* the main thread idles: the one to ptrace */
	if (write(ready_fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	for (;;)
		pause();
}

pid_t spawn_target(bool quiet, pid_t *tid)
{
	return mg_spawn_ready(target, &quiet, tid, sizeof(*tid));
}

/* Pick a region and a range starting in it: often across a VMA boundary or the region's end. */
void pick(unsigned int *s, bool writer, unsigned long *addr, size_t *len)
{
	static const size_t lens[] = { 8, 64, 4096, 4104, 3 * 4096, MAXLEN };
	int r = writer ? (rnd(s) % 10 < 7 ? R_WRITE : R_DONTNEED) : (int)(rnd(s) % R_NR);
	unsigned long vb = R(r)->vma_pages * PG, base = R(r)->base, end = base + R(r)->pages * PG;

	*len = lens[rnd(s) % (sizeof(lens) / sizeof(lens[0]))];
	if (rnd(s) & 1) /* straddle a setup-time VMA boundary, or the end */
		*addr = base + (rnd(s) % (R(r)->pages / R(r)->vma_pages) + 1) * vb - rnd(s) % *len;
	else
		*addr = base + rnd(s) % (end - base);
	*addr = *addr < base ? base : *addr >= end ? end - 8 : *addr;
	if (writer && *addr + *len > end)
		*len = end - *addr;
}

/* Which region holds addr (the one whose slot it is in). */
int region_of(unsigned long addr)
{
	return addr >= MREMAP_B && addr < MREMAP_B + 0x8000000ul ? R_MREMAP_B
	       : (int)((addr - SLOT(0)) / 0x10000000ul);
}
