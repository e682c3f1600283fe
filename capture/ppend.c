/*
 * ppend.c -- a loop's pending list, served in rounds (see ppend.h).
 */
#include "ppend.h"

#include <stddef.h>

#include "core/err.h"

/* See ppend.h. */
void
ppend_add(struct ppend *q, struct ppend_node *n)
{
    if (n->on)
        return;
    n->on = true;
    n->round = q->round;
    n->next = NULL;
    n->prev = q->tail;
    if (q->tail != NULL)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    q->len++;
}

/* See ppend.h. */
void
ppend_del(struct ppend *q, struct ppend_node *n)
{
    if (!n->on)
        return;
    MT_ASSERT(q->len > 0);
    if (n->prev != NULL)
        n->prev->next = n->next;
    else
        q->head = n->next;
    if (n->next != NULL)
        n->next->prev = n->prev;
    else
        q->tail = n->prev;
    n->prev = n->next = NULL;
    n->on = false;
    q->len--;
}

/* See ppend.h. */
void
ppend_round_begin(struct ppend *q)
{
    q->round++;
}

/* See ppend.h: entries are appended, so those of earlier rounds come
 * first and the first entry of the current round ends it. */
struct ppend_node *
ppend_round_next(struct ppend *q)
{
    struct ppend_node *n = q->head;

    if (n == NULL || n->round == q->round)
        return NULL;
    ppend_del(q, n);
    return n;
}
