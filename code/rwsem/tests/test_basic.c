/* test_basic.c - single-thread checks of the count and owner words after each operation. */
#include <criterion/criterion.h>

#include "../rwsem_internal.h"
#include "harness.h"

static struct rw_semaphore sem;

static void setup(void)
{
	harness_watchdog();
	init_rwsem(&sem);
}

static long count(void)
{
	return atomic_load(&sem.count);
}

static long owner(void)
{
	return atomic_load(&sem.owner);
}

TestSuite(basic, .init = setup);

Test(basic, read_lock_adds_one_bias_and_marks_reader_owned)
{
	down_read(&sem);
	cr_assert_eq(count(), (long)RWSEM_READER_BIAS);
	cr_assert(owner() & RWSEM_READER_OWNED);
	cr_assert_eq(owner() & ~RWSEM_OWNER_FLAGS_MASK, (long)current);
	down_read(&sem);
	cr_assert_eq(count() >> RWSEM_READER_SHIFT, 2);
	cr_assert_not(down_write_trylock(&sem));
	up_read(&sem);
	up_read(&sem);
	cr_assert_eq(count(), 0);
	/* The hint outlives the lock: up_read() leaves the owner alone. */
	cr_assert(owner() & RWSEM_READER_OWNED);
	cr_assert_eq(rwsem_event(&sem, LOCKEVENT_rwsem_rlock_steal), 0);
}

Test(basic, write_lock_sets_writer_bit_and_owner)
{
	down_write(&sem);
	cr_assert_eq(count(), (long)RWSEM_WRITER_LOCKED);
	cr_assert_eq(owner(), (long)current);
	cr_assert_not(down_read_trylock(&sem));
	cr_assert_not(down_write_trylock(&sem));
	up_write(&sem);
	cr_assert_eq(count(), 0);
	cr_assert_eq(owner(), 0);
	cr_assert(down_write_trylock(&sem));
	up_write(&sem);
}

Test(basic, downgrade_turns_writer_into_reader)
{
	down_write(&sem);
	downgrade_write(&sem);
	cr_assert_eq(count(), (long)RWSEM_READER_BIAS);
	cr_assert(owner() & RWSEM_READER_OWNED);
	cr_assert(down_read_trylock(&sem));
	up_read(&sem);
	up_read(&sem);
	cr_assert_eq(count(), 0);
}

Test(basic, count_bits_match_6_12)
{
	cr_assert_eq(RWSEM_WRITER_LOCKED, 1UL);
	cr_assert_eq(RWSEM_FLAG_WAITERS, 2UL);
	cr_assert_eq(RWSEM_FLAG_HANDOFF, 4UL);
	cr_assert_eq(RWSEM_READER_BIAS, 256UL);
	cr_assert_eq(RWSEM_FLAG_READFAIL, 1UL << 63);
	cr_assert_eq(RWSEM_READ_FAILED_MASK, 0x8000000000000007UL);
	cr_assert_eq(RWSEM_WAIT_TIMEOUT_NS, 4000000LL);
	cr_assert_eq(sem.wait_timeout_ns, RWSEM_WAIT_TIMEOUT_NS);
}
