/*
 * pstream.c -- one direction of a proxied connection without sockets (see
 * pstream.h).  The hold ring doubles up to PSTREAM_HOLDS_MAX.
 */
#include "pstream.h"

#include <errno.h>
#include <string.h>

#include "core/mem.h"
#include "core/rd.h"
#include "core/wire.h"

/* See pstream.h. */
void
pstream_init(struct pstream *s, uint64_t conn_id, uint8_t dir,
             uint64_t delay_ns, uint32_t msg_max, struct recq_batch *pool,
             pstream_emit_fn *emit, void *emit_arg)
{
    memset(s, 0, sizeof(*s));
    s->conn_id = conn_id;
    s->dir = dir;
    s->delay_ns = delay_ns;
    s->msg_max = msg_max;
    s->rel_off = delay_ns > 0 ? 0 : UINT64_MAX;
    s->fr.pool = pool;
    s->emit = emit;
    s->emit_arg = emit_arg;
}

/* See pstream.h. */
void
pstream_free(struct pstream *s)
{
    pbuf_free(&s->out);
    pframe_free(&s->fr);
    mt_free(s->holds);
    s->holds = NULL;
    s->holds_cap = s->h_done = s->h_rel = s->h_end = 0;
}

static int
pstream_grow(struct pstream *s)
{
    size_t cap = s->holds_cap ? s->holds_cap * 2 : 16;
    struct phold *h;

    if (cap > PSTREAM_HOLDS_MAX)
        return MT_ELIMIT;
    h = mt_malloc(cap * sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    for (size_t i = s->h_done; i < s->h_end; i++)
        h[i % cap] = s->holds[i % s->holds_cap];
    mt_free(s->holds);
    s->holds = h;
    s->holds_cap = cap;
    return 0;
}

/* Holds the bytes up to end_off until t_ns + delay (arrival_ns 0: not a
 * whole message, not measured). */
static unsigned
pstream_hold(struct pstream *s, uint64_t t_ns, uint64_t arrival_ns,
             uint64_t end_off)
{
    struct phold *h;
    int rc;

    if (s->h_end - s->h_done == s->holds_cap && (rc = pstream_grow(s)) < 0)
        return rc == -ENOMEM ? PSTREAM_NOMEM : PSTREAM_HOLDS_FULL;
    h = &s->holds[s->h_end % s->holds_cap];
    h->ready_ns = t_ns + s->delay_ns;
    h->end_off = end_off;
    h->arrival_ns = arrival_ns;
    s->h_end++;
    return PSTREAM_OK;
}

struct pstream_fctx {
    struct pstream *s;
    uint64_t t_ns;
    unsigned st; /* PSTREAM_* bits */
};

/* A whole message was framed: stamp, count, emit, maybe hold. */
static void
pstream_msg_done(void *arg, struct recq_item *it, uint64_t end_off)
{
    struct pstream_fctx *x = arg;
    struct pstream *s = x->s;

    it->u.msg.conn_id = s->conn_id;
    it->u.msg.t_ns = x->t_ns;
    it->u.msg.dir = s->dir;
    s->msgs++;
    s->rec_bytes += it->u.msg.wire_len;
    s->msg_end_off = end_off;
    if (s->msg_max && it->u.msg.wire_len > s->msg_max &&
        !(x->st & PSTREAM_TOO_BIG)) {
        s->too_big_len = it->u.msg.wire_len;
        x->st |= PSTREAM_TOO_BIG;
    }
    s->emit(s->emit_arg, it);
    if (s->delay_ns > 0)
        x->st |= pstream_hold(s, x->t_ns, x->t_ns, end_off);
}

/* See pstream.h. */
void
pstream_read(struct pstream *s, size_t n)
{
    s->in_off += n;
}

/* See pstream.h. */
unsigned
pstream_frame(struct pstream *s, const uint8_t *p, size_t n, uint64_t t_ns,
              struct mt_err *err)
{
    struct pstream_fctx x = {s, t_ns, PSTREAM_OK};
    bool was_broken = s->fr.broken;
    uint64_t before = s->msgs, base = s->in_off - n;
    size_t left = 0;
    int rc;

    MT_ASSERT(n <= s->in_off);
    rc = pframe_feed(&s->fr, p, n, base, pstream_msg_done, &x, &left, err);
    if (rc != 0) {
        s->unframed += left;
        if (was_broken)
            return x.st;
        /* what the broken framer holds is never recorded either */
        s->unframed += s->fr.cur != NULL ? s->fr.cur_len : s->fr.hdr_len;
        return x.st | (rc == -ENOMEM ? PSTREAM_NOMEM : PSTREAM_GARBAGE);
    }
    if (pframe_idle(&s->fr)) {
        s->msg_start_ns = 0;
    } else {
        struct rd r = rd_init(s->fr.hdr, s->fr.hdr_len);
        uint32_t len;

        if (s->msgs != before || s->msg_start_ns == 0)
            s->msg_start_ns = t_ns;
        if (s->msg_max && rd_le32(&r, &len) && len > s->msg_max &&
            !(x.st & PSTREAM_TOO_BIG)) {
            s->too_big_len = len;
            x.st |= PSTREAM_TOO_BIG;
        }
    }
    return x.st;
}

/* See pstream.h. */
unsigned
pstream_in(struct pstream *s, const uint8_t *p, size_t n, uint64_t t_ns,
           struct mt_err *err)
{
    pstream_read(s, n);
    return pstream_frame(s, p, n, t_ns, err);
}

/* See pstream.h. */
unsigned
pstream_eof(struct pstream *s, uint64_t now_ns)
{
    if (s->delay_ns > 0 && s->in_off > s->msg_end_off)
        return pstream_hold(s, now_ns, 0, s->in_off);
    return PSTREAM_OK;
}

/* See pstream.h. */
bool
pstream_direct(const struct pstream *s)
{
    return pbuf_len(&s->out) == 0 && s->rel_off == UINT64_MAX;
}

/* See pstream.h. */
size_t
pstream_sendable(const struct pstream *s)
{
    size_t n = pbuf_len(&s->out);

    if (s->rel_off == UINT64_MAX)
        return n;
    if (s->rel_off <= s->out_off)
        return 0;
    return s->rel_off - s->out_off < n ? (size_t)(s->rel_off - s->out_off) : n;
}

/* See pstream.h. */
void
pstream_sent(struct pstream *s, size_t n, bool from_out)
{
    MT_ASSERT(s->out_off + n <= s->in_off);
    s->out_off += n;
    if (from_out)
        pbuf_consume(&s->out, n);
}

/* See pstream.h. */
size_t
pstream_backlog(const struct pstream *s)
{
    size_t n = pbuf_len(&s->out);

    if (s->delay_ns > 0 && s->in_off - s->msg_end_off <= n)
        n -= (size_t)(s->in_off - s->msg_end_off);
    return n;
}

/* See pstream.h. */
size_t
pstream_held(const struct pstream *s)
{
    return s->h_end - s->h_rel;
}

/* See pstream.h. */
bool
pstream_releasing(const struct pstream *s)
{
    return s->h_done < s->h_rel;
}

/* See pstream.h. */
uint64_t
pstream_next_ready(const struct pstream *s)
{
    if (s->h_rel == s->h_end)
        return 0;
    return s->holds[s->h_rel % s->holds_cap].ready_ns;
}

/* See pstream.h. */
size_t
pstream_release(struct pstream *s, uint64_t now_ns)
{
    size_t n = 0;

    while (s->h_rel < s->h_end) {
        const struct phold *h = &s->holds[s->h_rel % s->holds_cap];
        if (h->ready_ns > now_ns)
            break;
        s->rel_off = h->end_off;
        s->h_rel++;
        n++;
    }
    return n;
}

/* See pstream.h. */
void
pstream_written(struct pstream *s, uint64_t t_send, struct delay_hist *hist)
{
    while (s->h_done < s->h_rel) {
        const struct phold *h = &s->holds[s->h_done % s->holds_cap];
        if (h->end_off > s->out_off)
            break;
        if (h->arrival_ns != 0 && hist != NULL)
            delay_hist_add(hist, t_send - h->arrival_ns);
        s->h_done++;
    }
}

/* See pstream.h. */
bool
pstream_idle(const struct pstream *s)
{
    return pbuf_len(&s->out) == 0 && pframe_idle(&s->fr) &&
           s->h_rel == s->h_end;
}
