/* list.h - the <linux/list.h> helpers the models use (rwsem wait list, deferred split queue), with the kernel's READ_ONCE/WRITE_ONCE on ->next. */
#ifndef MMLOCKS_LIST_H
#define MMLOCKS_LIST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The rwsem's wait list is only ever touched under wait_lock, but the THP
 * split queue is not: folio_unqueue_deferred_split() asks list_empty() of
 * a folio without split_queue_lock. The kernel makes that peek a single,
 * untorn load by writing ->next with WRITE_ONCE() in every helper and
 * reading it with READ_ONCE() in list_empty(); so does this file, for
 * every list (relaxed atomics: plain moves on x86, and ThreadSanitizer
 * understands them).
 */
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)

#define list_for_each_entry(pos, head, member)				\
	for (pos = list_first_entry(head, __typeof__(*pos), member);	\
	     &pos->member != (head);					\
	     pos = list_next_entry(pos, member))

/* Safe against removal of pos: n is read before the body runs. */
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_first_entry(head, __typeof__(*pos), member),	\
	     n = list_next_entry(pos, member);				\
	     &pos->member != (head);					\
	     pos = n, n = list_next_entry(n, member))

static inline void INIT_LIST_HEAD(struct list_head *list)
{
	WRITE_ONCE(list->next, list);
	list->prev = list;
}

static inline void __list_add(struct list_head *new, struct list_head *prev,
			      struct list_head *next)
{
	next->prev = new;
	new->next = next;
	new->prev = prev;
	WRITE_ONCE(prev->next, new);
}

static inline void list_add(struct list_head *new, struct list_head *head)
{
	__list_add(new, head, head->next);
}

static inline void list_add_tail(struct list_head *new, struct list_head *head)
{
	__list_add(new, head->prev, head);
}

static inline void __list_del_entry(struct list_head *entry)
{
	entry->next->prev = entry->prev;
	WRITE_ONCE(entry->prev->next, entry->next);
}

/* The kernel poisons the pointers (LIST_POISON1/2); NULL faults as well. */
static inline void list_del(struct list_head *entry)
{
	__list_del_entry(entry);
	entry->next = entry->prev = NULL;
}

static inline void list_del_init(struct list_head *entry)
{
	__list_del_entry(entry);
	INIT_LIST_HEAD(entry);
}

static inline void list_move(struct list_head *entry, struct list_head *head)
{
	__list_del_entry(entry);
	list_add(entry, head);
}

static inline void list_move_tail(struct list_head *entry, struct list_head *head)
{
	__list_del_entry(entry);
	list_add_tail(entry, head);
}

static inline bool list_empty(const struct list_head *head)
{
	return READ_ONCE(head->next) == head;
}

static inline bool list_is_singular(const struct list_head *head)
{
	return !list_empty(head) && head->next == head->prev;
}

/* Join list to the tail of head and leave list empty. */
static inline void list_splice_tail_init(struct list_head *list, struct list_head *head)
{
	struct list_head *first = list->next, *last = list->prev, *at = head->prev;

	if (list_empty(list))
		return;
	first->prev = at;
	WRITE_ONCE(at->next, first);
	WRITE_ONCE(last->next, head);
	head->prev = last;
	INIT_LIST_HEAD(list);
}

#endif
