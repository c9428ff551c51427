/* mmap_lock.h - include/linux/mmap_lock.h of 6.12.117: mmap_lock is chapter 1's rwsem plus the mm_lock_seq seqcount. */
#ifndef MMLOCKS_MMAP_LOCK_H
#define MMLOCKS_MMAP_LOCK_H

/* Included from vma.h, after struct mm_struct. */

static inline bool rwsem_held_write_by_me(struct rw_semaphore *sem)
{
	return (atomic_load_explicit(&sem->count, memory_order_relaxed) &
		RWSEM_WRITER_LOCKED) &&
	       atomic_load_explicit(&sem->owner, memory_order_relaxed) ==
	       (long)current;
}

static inline bool rwsem_is_locked(struct rw_semaphore *sem)
{
	return atomic_load_explicit(&sem->count, memory_order_relaxed) &
	       RWSEM_LOCK_MASK;
}

/*
 * 6.12: !list_empty(&sem->wait_list), read without the wait_lock. The
 * model reads RWSEM_FLAG_WAITERS instead, which rwsem.c sets and clears
 * under the wait_lock together with the list: the same answer, and no
 * data race.
 */
static inline int rwsem_is_contended(struct rw_semaphore *sem)
{
	return !!(atomic_load_explicit(&sem->count, memory_order_relaxed) &
		  RWSEM_FLAG_WAITERS);
}

/* `who` names the caller in the message: "vma_start_write: ...". */
static inline void __mmap_assert_write_locked(struct mm_struct *mm,
					      const char *who)
{
	if (!rwsem_held_write_by_me(&mm->mmap_lock))
		vm_bug(who, __FILE__, __LINE__);
}
#define mmap_assert_write_locked(mm) \
	__mmap_assert_write_locked((mm), \
		"mmap_assert_write_locked: mmap_lock not write-locked by this task")

static inline void mmap_assert_locked(struct mm_struct *mm)
{
	if (!rwsem_is_locked(&mm->mmap_lock))
		vm_bug("mmap_assert_locked: mmap_lock not held", __FILE__, __LINE__);
}

/* region: mm-lock-seqcount */
static inline void mm_lock_seqcount_begin(struct mm_struct *mm)
{
	/* do_raw_write_seqcount_begin(): sequence++; smp_wmb() */
	WRITE_ONCE(mm->mm_lock_seq.sequence, mm->mm_lock_seq.sequence + 1);
	atomic_thread_fence(memory_order_release);
}

static inline void mm_lock_seqcount_end(struct mm_struct *mm)
{
	/* do_raw_write_seqcount_end(): smp_wmb(); sequence++ */
	__atomic_store_n(&mm->mm_lock_seq.sequence,
			 mm->mm_lock_seq.sequence + 1, __ATOMIC_RELEASE);
}

/* raw_read_seqcount(): smp_load_acquire(&s->sequence) */
#define raw_read_seqcount(s)	smp_load_acquire(&(s)->sequence)

/* Drop every VMA write lock this mmap_lock writer took, at once. */
static inline void vma_end_write_all(struct mm_struct *mm)
{
	__mmap_assert_write_locked(mm,
		"vma_end_write_all: mmap_lock not write-locked by this task");
	mm_lock_seqcount_end(mm);
}
/* endregion: mm-lock-seqcount */

/* region: mmap-lock-api */
static inline void mmap_write_lock(struct mm_struct *mm)
{
	down_write(&mm->mmap_lock);
	mm_lock_seqcount_begin(mm);
}

static inline void mmap_write_unlock(struct mm_struct *mm)
{
	vma_end_write_all(mm);
	up_write(&mm->mmap_lock);
}

static inline void mmap_write_downgrade(struct mm_struct *mm)
{
	vma_end_write_all(mm);
	downgrade_write(&mm->mmap_lock);
}
/* endregion: mmap-lock-api */

static inline void mmap_read_lock(struct mm_struct *mm)
{
	down_read(&mm->mmap_lock);
}

static inline bool mmap_read_trylock(struct mm_struct *mm)
{
	return down_read_trylock(&mm->mmap_lock) != 0;
}

static inline void mmap_read_unlock(struct mm_struct *mm)
{
	up_read(&mm->mmap_lock);
}

static inline int mmap_lock_is_contended(struct mm_struct *mm)
{
	return rwsem_is_contended(&mm->mmap_lock);
}

/* smp_rmb(): loads before it complete before loads after it. */
#define smp_rmb()	atomic_thread_fence(memory_order_acquire)

/*
 * mmap_lock speculation (chapter 6): read mm state with no lock, then ask
 * whether a writer could have changed it. try_begin is false while
 * mmap_lock is write-locked (mm_lock_seq odd); retry is true when
 * mm_lock_seq moved since try_begin, and the reader must throw away what
 * it read. Upstream has them static inline in mmap_lock.h, our
 * kernel patch 0011 too; the model defines them out of line, in
 * uprobe_speculate.c, because lab 06 has them written. (Seed 002 called
 * them mmap_lock_speculation_{start,end}, on an int mm_lock_seq.)
 */
bool mmap_lock_speculate_try_begin(struct mm_struct *mm, unsigned int *seq);
bool mmap_lock_speculate_retry(struct mm_struct *mm, unsigned int seq);

#endif
