/*
 * engine.c -- binary min-heap event queue keyed on (t_ns, seq).
 * See engine.h for the contract.
 */
#include "engine.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"

static inline bool
ev_before(const struct sim_ev *a, const struct sim_ev *b)
{
    return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

int
sim_engine_init(struct sim_engine *e, size_t cap_max)
{
    MT_ASSERT(e != NULL && cap_max > 0);
    memset(e, 0, sizeof(*e));
    e->cap_max = cap_max;
    e->cap = cap_max < 1024 ? cap_max : 1024;
    e->heap = mt_malloc(e->cap * sizeof(*e->heap));
    if (e->heap == NULL) {
        e->cap = 0;
        return -ENOMEM;
    }
    return 0;
}

void
sim_engine_free(struct sim_engine *e)
{
    if (e == NULL)
        return;
    mt_free(e->heap);
    memset(e, 0, sizeof(*e));
}

static int
engine_grow(struct sim_engine *e)
{
    size_t ncap;
    struct sim_ev *nh;

    if (e->cap >= e->cap_max)
        return MT_ELIMIT;
    ncap = e->cap * 2 > e->cap_max ? e->cap_max : e->cap * 2;
    nh = mt_realloc(e->heap, ncap * sizeof(*nh));
    if (nh == NULL)
        return -ENOMEM;
    e->heap = nh;
    e->cap = ncap;
    return 0;
}

int
sim_engine_push(struct sim_engine *e, uint64_t t_ns, uint32_t kind, uint32_t id,
                uint64_t gen)
{
    struct sim_ev ev;
    size_t i;
    int rc;

    MT_ASSERT(t_ns >= e->now_ns);
    if (e->n == e->cap && (rc = engine_grow(e)) < 0)
        return rc;
    ev.t_ns = t_ns;
    ev.seq = e->seq++;
    ev.kind = kind;
    ev.id = id;
    ev.gen = gen;
    i = e->n++;
    while (i > 0) { /* sift up */
        size_t parent = (i - 1) / 2;
        if (!ev_before(&ev, &e->heap[parent]))
            break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = ev;
    return 0;
}

int
sim_engine_after(struct sim_engine *e, uint64_t delay_ns, uint32_t kind,
                 uint32_t id, uint64_t gen)
{
    uint64_t t = e->now_ns + delay_ns;

    if (t < e->now_ns)
        t = UINT64_MAX;
    return sim_engine_push(e, t, kind, id, gen);
}

bool
sim_engine_pop(struct sim_engine *e, struct sim_ev *out)
{
    struct sim_ev last;
    size_t i = 0, n;

    if (e->n == 0)
        return false;
    *out = e->heap[0];
    n = --e->n;
    if (n > 0) {
        last = e->heap[n];
        for (;;) { /* sift down */
            size_t c = 2 * i + 1;
            if (c >= n)
                break;
            if (c + 1 < n && ev_before(&e->heap[c + 1], &e->heap[c]))
                c++;
            if (!ev_before(&e->heap[c], &last))
                break;
            e->heap[i] = e->heap[c];
            i = c;
        }
        e->heap[i] = last;
    }
    MT_ASSERT(out->t_ns >= e->now_ns);
    e->now_ns = out->t_ns;
    e->popped++;
    return true;
}
