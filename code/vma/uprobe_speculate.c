/* uprobe_speculate.c - mmap_lock speculation and the speculative uprobe lookup of our kernel patch 0011, with the fallback to mmap_lock. */
#include "uprobe.h"

/*
 * Lab 06 hands out this file with its TODO regions emptied
 * (labs/06-speculation/src/uprobe_speculate.c is a link to it), so the
 * book lists patch 0011's versions of these functions instead.
 *
 * The helpers come from seed 002 (Suren Baghdasaryan, sent by Andrii
 * Nakryiko), in the form upstream merged on the seqcount
 * mm_lock_seq that 6.12.117 already has; the lookup is upstream's
 * follow-up ("uprobes: add speculative lockless VMA-to-inode-to-uprobe
 * resolution"), written here for the model.
 */

bool mmap_lock_speculate_try_begin(struct mm_struct *mm, unsigned int *seq)
{
	bool ok = false;

	/* TODO 1: read mm_lock_seq into *seq with ACQUIRE; speculation may start only if it is even */
	/*
	 * raw_read_seqcount(): the ACQUIRE pairs with the RELEASE in
	 * mm_lock_seqcount_end() (mmap_write_unlock()), so the loads that
	 * follow see everything the last writer stored before unlocking. An
	 * odd count means a writer holds mmap_lock and may be halfway through
	 * a change; waiting for it would cost as much as taking the lock, so
	 * give up and let the caller take the lock.
	 */
	*seq = raw_read_seqcount(&mm->mm_lock_seq);
	ok = !(*seq & 1);
	/* END TODO 1 */
	return ok;
}

bool mmap_lock_speculate_retry(struct mm_struct *mm, unsigned int seq)
{
	bool changed = true;

#ifdef MODEL_NO_SPECULATE_RETRY
	/* Test-only build (code/vma: make check-bite): the stress test must catch it. */
	return false;
#endif
	/* TODO 1: after smp_rmb(), tell whether mm_lock_seq moved since try_begin */
	/*
	 * read_seqcount_retry(): smp_rmb() keeps the speculation's loads
	 * before this load of the count. A writer makes the count odd, then
	 * smp_wmb(), before its first store (mm_lock_seqcount_begin()): if
	 * any load above saw a writer's store, this one sees that writer's
	 * increment or a later one, and the result is thrown away.
	 */
	smp_rmb();
	changed = READ_ONCE(mm->mm_lock_seq.sequence) != seq;
	/* END TODO 1 */
	return changed;
}

/*
 * bp_vaddr -> VMA -> (vm_file's inode, offset) -> uprobe, with no lock.
 * The caller holds rcu_read_lock() (handle_swbp()): the VMA and the
 * uprobe cannot be freed under us, and the file is type-stable (see
 * uprobe.h). Each call counts UPROBE_SPECULATE_ATTEMPT and exactly one
 * outcome; NULL sends the caller to mmap_lock.
 */
struct uprobe *find_active_uprobe_speculative(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct uprobe *uprobe = NULL;
	struct vm_area_struct *vma;
	struct file *vm_file;
	unsigned int seq;
	loff_t offset;

	count_uprobe_event(mm, UPROBE_SPECULATE_ATTEMPT);
	/* TODO 2: between try_begin and retry: the VMA, its file (read once), the offset, the uprobe; count the outcome */
	if (!mmap_lock_speculate_try_begin(mm, &seq)) {
		count_uprobe_event(mm, UPROBE_SPECULATE_FAIL_BEGIN);
		return NULL;
	}
	vma = vma_lookup(mm, bp_vaddr);
	if (!vma)
		goto fail_lookup;
	/*
	 * One load: a second one could see another value. The file may be
	 * put and its memory reused for another file after this load; the
	 * retry below catches that, because only a writer holding mmap_lock
	 * (munmap, mmap over it) puts a mapped file.
	 */
	vm_file = READ_ONCE(vma->vm_file);
	/* valid_vma(), on the one vm_file read (as our patch 0011 does) */
	if (!vm_file || !(READ_ONCE(vma->vm_flags) & VM_EXEC))
		goto fail_lookup;
	offset = vaddr_to_offset(vma, bp_vaddr);
	uprobe = find_uprobe_rcu(file_inode(vm_file), offset);
	if (!uprobe)
		goto fail_lookup;
	/* Everything above may be torn or stale: was a writer anywhere near? */
	if (mmap_lock_speculate_retry(mm, seq)) {
		count_uprobe_event(mm, UPROBE_SPECULATE_FAIL_RETRY);
		return NULL;
	}
	count_uprobe_event(mm, UPROBE_SPECULATE_SUCCESS);
	return uprobe;
fail_lookup:
	/* Maybe there is no uprobe, maybe we read a torn VMA: ask under the lock. */
	count_uprobe_event(mm, UPROBE_SPECULATE_FAIL_LOOKUP);
	uprobe = NULL;
	/* END TODO 2 */
	return uprobe;
}

struct uprobe *find_active_uprobe(struct mm_struct *mm, unsigned long bp_vaddr)
{
	struct uprobe *uprobe = NULL;

	/* TODO 3: with the switch on, try the speculative lookup; if it gives nothing, count UPROBE_MMAP_LOCKED and ask find_active_uprobe_rcu() */
	if (READ_ONCE(uprobe_speculate)) {
		uprobe = find_active_uprobe_speculative(mm, bp_vaddr);
		if (uprobe)
			return uprobe;
	}
	/*
	 * Any failure, even "no uprobe there", goes to 6.12's lookup:
	 * speculation can only confirm an answer, never deny one.
	 */
	count_uprobe_event(mm, UPROBE_MMAP_LOCKED);
	uprobe = find_active_uprobe_rcu(mm, bp_vaddr);
	/* END TODO 3 */
	return uprobe;
}
