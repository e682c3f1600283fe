/*
 * pair.c -- the pending-request table of request->reply pairing (see
 * pair.h): open addressing with linear probing, load factor at most 0.75,
 * backward-shift deletion (no tombstones).  The entries are also linked
 * in insertion order (slot indices, fixed up when an entry moves), so that
 * visiting them costs O(entries), not O(slots): a table that once grew
 * big stays cheap to walk at every connection close.
 */
#include "pair.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"

#define PAIR_NIL UINT32_MAX

struct pair_slot {
    uint64_t conn;
    int32_t req;
    bool used;
    uint32_t prev, next; /* insertion order; PAIR_NIL at the ends */
    /* then val_size bytes of value, at offsetof(...) rounded to 8 */
};

#define PAIR_VAL_OFF ((sizeof(struct pair_slot) + 7) & ~(size_t)7)

bool
pair_msg_header(const struct trace_msg *m, struct pair_hdr *h)
{
    uint32_t len;
    const uint8_t *p = trace_msg_plain(m, &len);
    struct rd r = rd_init(p, len);
    int32_t msg_len;
    uint32_t flags = 0;

    memset(h, 0, sizeof(*h));
    if (!rd_le32s(&r, &msg_len) || !rd_le32s(&r, &h->request_id) ||
        !rd_le32s(&r, &h->response_to) || !rd_le32s(&r, &h->op_code))
        return false;
    if (h->op_code == WIRE_OP_MSG && rd_le32(&r, &flags))
        h->more_to_come = (flags & WIRE_MSG_MORE_TO_COME) != 0;
    return true;
}

void
pair_table_init(struct pair_table *t, size_t val_size, size_t n_max)
{
    memset(t, 0, sizeof(*t));
    t->n_max = n_max;
    t->val_size = val_size;
    t->slot_size = (PAIR_VAL_OFF + val_size + 7) & ~(size_t)7;
    t->head = t->tail = PAIR_NIL;
}

void
pair_table_free(struct pair_table *t)
{
    size_t val_size = t->val_size, n_max = t->n_max;

    mt_free(t->slots);
    pair_table_init(t, val_size, n_max);
}

static struct pair_slot *
slot_at(const struct pair_table *t, size_t i)
{
    return (struct pair_slot *)(void *)(t->slots + i * t->slot_size);
}

static void *
slot_val(struct pair_slot *s)
{
    return (uint8_t *)s + PAIR_VAL_OFF;
}

static size_t
home_of(const struct pair_table *t, uint64_t conn, int32_t req)
{
    uint64_t h = conn * 0x9E3779B97F4A7C15ull ^ (uint32_t)req;

    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (size_t)h & (t->cap - 1);
}

/* The slot of (conn, req), or the empty slot where it would go; NULL
 * when the table has no slots yet. */
static struct pair_slot *
find(const struct pair_table *t, uint64_t conn, int32_t req)
{
    size_t i;

    if (t->cap == 0)
        return NULL;
    for (i = home_of(t, conn, req); slot_at(t, i)->used;
         i = (i + 1) & (t->cap - 1))
        if (slot_at(t, i)->conn == conn && slot_at(t, i)->req == req)
            return slot_at(t, i);
    return slot_at(t, i);
}

/* Links slot i at the tail of the order. */
static void
link_tail(struct pair_table *t, size_t i)
{
    struct pair_slot *s = slot_at(t, i);

    s->prev = t->tail;
    s->next = PAIR_NIL;
    if (t->tail != PAIR_NIL)
        slot_at(t, t->tail)->next = (uint32_t)i;
    else
        t->head = (uint32_t)i;
    t->tail = (uint32_t)i;
}

static void
unlink_at(struct pair_table *t, size_t i)
{
    struct pair_slot *s = slot_at(t, i);

    if (s->prev != PAIR_NIL)
        slot_at(t, s->prev)->next = s->next;
    else
        t->head = s->next;
    if (s->next != PAIR_NIL)
        slot_at(t, s->next)->prev = s->prev;
    else
        t->tail = s->prev;
}

/* Moves the entry of slot j into the empty slot i, links included. */
static void
move_slot(struct pair_table *t, size_t i, size_t j)
{
    struct pair_slot *s = slot_at(t, i);

    memcpy(s, slot_at(t, j), t->slot_size);
    slot_at(t, j)->used = false;
    if (s->prev != PAIR_NIL)
        slot_at(t, s->prev)->next = (uint32_t)i;
    else
        t->head = (uint32_t)i;
    if (s->next != PAIR_NIL)
        slot_at(t, s->next)->prev = (uint32_t)i;
    else
        t->tail = (uint32_t)i;
}

static int
grow(struct pair_table *t)
{
    struct pair_table old = *t;
    size_t cap = t->cap ? t->cap * 2 : 64;

    if (cap > PAIR_NIL)
        return MT_ELIMIT;
    t->slots = mt_calloc(cap, t->slot_size);
    if (t->slots == NULL) {
        t->slots = old.slots;
        return -ENOMEM;
    }
    t->cap = cap;
    t->head = t->tail = PAIR_NIL;
    for (uint32_t i = old.head; i != PAIR_NIL; i = slot_at(&old, i)->next) {
        struct pair_slot *src = slot_at(&old, i);
        struct pair_slot *dst = find(t, src->conn, src->req);
        memcpy(dst, src, t->slot_size);
        link_tail(t, (size_t)((uint8_t *)dst - t->slots) / t->slot_size);
    }
    mt_free(old.slots);
    return 0;
}

int
pair_table_put(struct pair_table *t, uint64_t conn, int32_t req,
               const void *val)
{
    struct pair_slot *s = find(t, conn, req);
    int rc;

    if (s == NULL || !s->used) {
        if (t->n >= t->n_max)
            return MT_ELIMIT;
        if ((t->n + 1) * 4 > t->cap * 3 && (rc = grow(t)) < 0)
            return rc;
        s = find(t, conn, req);
        s->used = true;
        s->conn = conn;
        s->req = req;
        link_tail(t, (size_t)((uint8_t *)s - t->slots) / t->slot_size);
        t->n++;
    }
    memcpy(slot_val(s), val, t->val_size);
    return 0;
}

/* Empties slot i and moves later entries of its run into the hole. */
static void
remove_at(struct pair_table *t, size_t i)
{
    size_t j, home;

    unlink_at(t, i);
    slot_at(t, i)->used = false;
    t->n--;
    for (j = (i + 1) & (t->cap - 1); slot_at(t, j)->used;
         j = (j + 1) & (t->cap - 1)) {
        home = home_of(t, slot_at(t, j)->conn, slot_at(t, j)->req);
        /* j's entry may move to i if home is not in (i, j] cyclically */
        if ((j > i && (home <= i || home > j)) ||
            (j < i && (home <= i && home > j))) {
            move_slot(t, i, j);
            i = j;
        }
    }
}

bool
pair_table_take(struct pair_table *t, uint64_t conn, int32_t req, void *val)
{
    struct pair_slot *s = find(t, conn, req);

    if (s == NULL || !s->used)
        return false;
    if (val != NULL)
        memcpy(val, slot_val(s), t->val_size);
    remove_at(t, (size_t)((uint8_t *)s - t->slots) / t->slot_size);
    return true;
}

void
pair_table_foreach(const struct pair_table *t, void (*fn)(void *val, void *ctx),
                   void *ctx)
{
    if (t->n == 0)
        return;
    for (uint32_t i = t->head; i != PAIR_NIL; i = slot_at(t, i)->next)
        fn(slot_val(slot_at(t, i)), ctx);
}

void
pair_table_drop_conn(struct pair_table *t, uint64_t conn,
                     void (*fn)(void *val, void *ctx), void *ctx)
{
    uint32_t i = t->n > 0 ? t->head : PAIR_NIL;

    /* A removal moves later entries of the probe run, and with them their
     * links: take the next entry's key before removing, find it again. */
    while (i != PAIR_NIL) {
        struct pair_slot *s = slot_at(t, i), *nx;
        uint32_t next = s->next;
        uint64_t next_conn = 0;
        int32_t next_req = 0;
        if (next != PAIR_NIL) {
            next_conn = slot_at(t, next)->conn;
            next_req = slot_at(t, next)->req;
        }
        if (s->conn == conn) {
            if (fn != NULL)
                fn(slot_val(s), ctx);
            remove_at(t, i);
            if (next != PAIR_NIL) {
                nx = find(t, next_conn, next_req);
                next = (uint32_t)((size_t)((uint8_t *)nx - t->slots) /
                                  t->slot_size);
            }
        }
        i = next;
    }
}
