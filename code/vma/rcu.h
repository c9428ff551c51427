/* rcu.h - the kernel's RCU API on liburcu's memb flavour, with lazy thread registration and TSan annotations. */
#ifndef MMLOCKS_VMA_RCU_H
#define MMLOCKS_VMA_RCU_H

/*
 * Flavour: urcu-memb. Its rcu_read_lock()/rcu_read_unlock() are a
 * per-thread counter and compiler barriers, no fence, like the kernel's
 * (non-preemptible) RCU readers; the grace period pays instead, with the
 * membarrier(2) system call. urcu-mb would put a full fence in every
 * read side (a cost the kernel does not have); urcu-qsbr would make every
 * thread of the model announce quiescent states by hand.
 *
 * Model extras:
 * - memb needs every reader thread registered. rcu_read_lock() below
 *   registers a thread on first use and a pthread key unregisters it at
 *   exit, so no model thread can forget.
 * - ThreadSanitizer cannot see why a grace period orders a reader's
 *   accesses before the free (liburcu is not instrumented and membarrier
 *   is a system call). Under TSan each rcu_read_unlock() and call_rcu()
 *   "releases" one sync object and every RCU callback "acquires" it first
 *   (rcu_callback_begin()): the guarantee a grace period gives. The
 *   suppression file tests/tsan.supp hides liburcu's own allocations.
 */
#include <urcu/urcu-memb.h>	/* also maps rcu_read_lock, call_rcu, ... */

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
extern char rcu_tsan_gp;
#define rcu_tsan_release()	__tsan_release(&rcu_tsan_gp)
#define rcu_tsan_acquire()	__tsan_acquire(&rcu_tsan_gp)
#else
#define rcu_tsan_release()	do { } while (0)
#define rcu_tsan_acquire()	do { } while (0)
#endif

extern __thread int rcu_thread_registered;
void rcu_thread_register(void);

static inline void mm_rcu_read_lock(void)
{
	if (__builtin_expect(!rcu_thread_registered, 0))
		rcu_thread_register();
	urcu_memb_read_lock();
}

static inline void mm_rcu_read_unlock(void)
{
	rcu_tsan_release();
	urcu_memb_read_unlock();
}

/* liburcu's call_rcu() and rcu_barrier() read-lock internally too. */
static inline void mm_call_rcu(struct rcu_head *head,
			       void (*func)(struct rcu_head *head))
{
	if (__builtin_expect(!rcu_thread_registered, 0))
		rcu_thread_register();
	rcu_tsan_release();	/* the caller's last accesses come first */
	urcu_memb_call_rcu(head, func);
}

static inline void mm_rcu_barrier(void)
{
	if (__builtin_expect(!rcu_thread_registered, 0))
		rcu_thread_register();
	urcu_memb_barrier();
}

#undef rcu_read_lock
#undef rcu_read_unlock
#undef call_rcu
#undef rcu_barrier
#define rcu_read_lock()		mm_rcu_read_lock()
#define rcu_read_unlock()	mm_rcu_read_unlock()
#define call_rcu(head, func)	mm_call_rcu((head), (func))
#define rcu_barrier()		mm_rcu_barrier()

/* First statement of every RCU callback. */
#define rcu_callback_begin()	rcu_tsan_acquire()

/*
 * rcu_assign_pointer()/rcu_dereference() as C11 release/acquire, which
 * TSan understands (liburcu's use volatile accesses and asm barriers).
 */
#define rcu_publish(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define rcu_access(p)		__atomic_load_n(&(p), __ATOMIC_ACQUIRE)

#endif
