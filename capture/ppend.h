/*
 * ppend.h -- a loop's pending list: connections whose edge-triggered
 * socket was left readable (read budget spent, back-pressure lifted, a
 * hand-off just taken), served before the loop sleeps.
 *
 * An intrusive FIFO served in rounds.  A round serves the entries that
 * were on the list when it began, popping them one at a time from the
 * live list: an entry removed while the round runs (its connection
 * closed by the serving of another) is simply no longer there, and an
 * entry (re-)added during the round waits for the next one.  Nothing is
 * ever walked through a detached copy, so serving may add or remove any
 * entry, the one being served included.
 */
#ifndef MT_CAPTURE_PPEND_H
#define MT_CAPTURE_PPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Embedded in the element; all zero is "not on a list". */
struct ppend_node {
    struct ppend_node *prev, *next; /* borrowed: neighbours on the list */
    uint64_t round;                 /* the list's round when added */
    bool on;
};

struct ppend {
    struct ppend_node *head, *tail; /* borrowed */
    uint64_t round;                 /* rounds begun */
    uint64_t len;
};

/* Appends n (no-op when n is on the list already).  O(1). */
void ppend_add(struct ppend *q, struct ppend_node *n);

/* Removes n (no-op when n is not on the list).  O(1). */
void ppend_del(struct ppend *q, struct ppend_node *n);

/* True when nothing waits. */
static inline bool
ppend_empty(const struct ppend *q)
{
    return q->head == NULL;
}

/* Begins a round: the entries on the list now are the round's. */
void ppend_round_begin(struct ppend *q);

/*
 * Pops and returns the next entry of the round begun last, or NULL when
 * the round is over (the list is empty or holds only entries added since
 * it began).  The entry is off the list when returned.
 */
struct ppend_node *ppend_round_next(struct ppend *q);

#endif
