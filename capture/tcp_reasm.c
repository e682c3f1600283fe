/*
 * tcp_reasm.c -- per-direction TCP reassembly (see tcp_reasm.h).
 *
 * State: `next`, the sequence number of the next byte owed to the consumer,
 * and a list of out-of-order segments sorted by sequence number.  All
 * comparisons are serial-number arithmetic, so a stream may wrap 2^32.
 * A byte is delivered at most once: the first copy seen wins, later copies
 * (retransmissions, overlaps) are trimmed away.
 */
#include "tcp_reasm.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"

struct tcp_seg {
    struct tcp_seg *next; /* owned */
    uint32_t seq;
    uint32_t len;  /* on the wire */
    uint32_t cap;  /* captured bytes in data[] */
    uint64_t t_ns; /* arrival */
    uint8_t data[];
};

void
tcp_reasm_init(struct tcp_reasm *r, size_t ooo_max,
               const struct tcp_reasm_ops *ops, void *ctx,
               struct tcp_reasm_stats *st)
{
    MT_ASSERT(r != NULL && ops != NULL && st != NULL);
    memset(r, 0, sizeof(*r));
    r->ooo_max = ooo_max;
    r->ops = ops;
    r->ctx = ctx;
    r->st = st;
}

void
tcp_reasm_free(struct tcp_reasm *r)
{
    struct tcp_seg *s = r->ooo, *n;

    for (; s != NULL; s = n) {
        n = s->next;
        mt_free(s);
    }
    r->ooo = NULL;
    r->ooo_bytes = 0;
}

void
tcp_reasm_syn(struct tcp_reasm *r, uint32_t isn)
{
    if (r->have_seq)
        return;
    r->have_seq = true;
    r->saw_syn = true;
    r->next = isn + 1;
}

void
tcp_reasm_fin(struct tcp_reasm *r, uint32_t fin_seq)
{
    if (!r->have_fin) {
        r->have_fin = true;
        r->fin_seq = fin_seq;
    }
}

/* n bytes will never be seen; a hole (lost packets) is counted in the
 * gap statistics, a snap-length cut only in `truncated`. */
static int
emit_gap(struct tcp_reasm *r, uint32_t n, bool hole, uint64_t t_ns)
{
    if (n == 0)
        return 0;
    if (hole) {
        r->st->gaps++;
        r->st->gap_bytes += n;
    }
    r->next += n;
    return r->ops->gap(r->ctx, n, t_ns);
}

/* Delivers an in-order piece that starts at or before next. */
static int
deliver(struct tcp_reasm *r, uint32_t seq, const uint8_t *p, uint32_t cap,
        uint32_t len, uint64_t t_ns)
{
    uint32_t d = r->next - seq; /* bytes already delivered */
    int rc;

    if (d >= len)
        return 0;
    if (d < cap) {
        r->next += cap - d;
        rc = r->ops->data(r->ctx, p + d, cap - d, t_ns);
        if (rc < 0)
            return rc;
        d = cap;
    }
    /* [seq+d, seq+len) was cut by the snap length: never captured. */
    if (d < len)
        return emit_gap(r, len - d, false, t_ns);
    return 0;
}

/*
 * Delivers buffered segments that are now in order.  After a hole was
 * filled, they became complete now (t_ns); after a hole was given up
 * (hole_skipped), each was complete when it arrived.
 */
static int
drain(struct tcp_reasm *r, uint64_t t_ns, bool hole_skipped)
{
    uint64_t tmax = 0;

    while (r->ooo != NULL && tcp_seq_le(r->ooo->seq, r->next)) {
        struct tcp_seg *s = r->ooo;
        uint64_t t = t_ns;
        int rc;

        if (hole_skipped) { /* the latest arrival among the bytes so far */
            tmax = s->t_ns > tmax ? s->t_ns : tmax;
            t = tmax;
        }

        r->ooo = s->next;
        r->ooo_bytes -= s->cap;
        rc = deliver(r, s->seq, s->data, s->cap, s->len, t);
        mt_free(s);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Declares the hole before the first buffered segment lost. */
static int
skip_hole(struct tcp_reasm *r, uint64_t t_ns)
{
    int rc;

    MT_ASSERT(r->ooo != NULL);
    rc = emit_gap(r, r->ooo->seq - r->next, true, t_ns);
    if (rc < 0)
        return rc;
    return drain(r, t_ns, true);
}

/*
 * Delivers a segment that starts at or before next.  Where it overlaps a
 * buffered segment, the buffered bytes (seen first) win: the segment is
 * delivered in pieces around them.
 */
static int
in_order(struct tcp_reasm *r, uint32_t seq, const uint8_t *p, uint32_t cap,
         uint32_t len, uint64_t t_ns)
{
    for (;;) {
        uint32_t end = seq + len, d, clip;
        int rc;

        if (r->ooo == NULL || !tcp_seq_lt(r->ooo->seq, end)) {
            rc = deliver(r, seq, p, cap, len, t_ns);
            return rc < 0 ? rc : drain(r, t_ns, false);
        }
        clip = r->ooo->seq - seq; /* bytes before the buffered segment */
        rc = deliver(r, seq, p, cap < clip ? cap : clip, clip, t_ns);
        if (rc == 0)
            rc = drain(r, t_ns, false);
        if (rc < 0 || tcp_seq_le(end, r->next))
            return rc;
        d = r->next - seq; /* continue after what is now delivered */
        p += d < cap ? d : cap;
        cap -= d < cap ? d : cap;
        len -= d;
        seq = r->next;
    }
}

static int
buffer_seg(struct tcp_reasm *r, uint32_t seq, const uint8_t *p, size_t cap,
           size_t len, uint64_t t_ns)
{
    struct tcp_seg **pp = &r->ooo, *s;

    while (*pp != NULL && tcp_seq_lt((*pp)->seq, seq))
        pp = &(*pp)->next;
    if (*pp != NULL && (*pp)->seq == seq && (*pp)->len >= len &&
        (*pp)->cap >= cap) {
        r->st->retransmitted++; /* the same segment again */
        return 0;
    }
    s = mt_malloc(sizeof(*s) + cap);
    if (s == NULL)
        return -ENOMEM;
    s->seq = seq;
    s->len = (uint32_t)len;
    s->cap = (uint32_t)cap;
    s->t_ns = t_ns;
    if (cap > 0)
        memcpy(s->data, p, cap);
    s->next = *pp;
    *pp = s;
    r->ooo_bytes += cap;
    r->st->out_of_order++;
    while (r->ooo != NULL && r->ooo_bytes > r->ooo_max) {
        int rc = skip_hole(r, t_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int
tcp_reasm_segment(struct tcp_reasm *r, uint32_t seq, const uint8_t *p,
                  size_t cap, size_t len, uint64_t t_ns)
{
    MT_ASSERT(cap <= len);
    /* The common case: the next bytes, whole, nothing buffered. */
    if (seq == r->next && r->have_seq && r->ooo == NULL && cap == len &&
        len - 1 < 0x7fffffff) {
        r->next += (uint32_t)len;
        return r->ops->data(r->ctx, p, len, t_ns);
    }
    if (len == 0)
        return 0;
    if (len > 0x7fffffff)
        return MT_EPROTO;
    if (cap < len)
        r->st->truncated++;
    if (!r->have_seq) {
        r->have_seq = true;
        r->next = seq;
    }
    if (tcp_seq_le(seq + (uint32_t)len, r->next)) {
        r->st->retransmitted++;
        return 0;
    }
    if (tcp_seq_lt(seq, r->next))
        r->st->retransmitted++; /* overlap: the old part is trimmed */
    if (tcp_seq_le(seq, r->next))
        return in_order(r, seq, p, (uint32_t)cap, (uint32_t)len, t_ns);
    return buffer_seg(r, seq, p, cap, len, t_ns);
}

int
tcp_reasm_ack(struct tcp_reasm *r, uint32_t ack, uint64_t t_ns)
{
    int rc;

    if (!r->have_seq)
        return 0;
    if (r->have_fin && tcp_seq_lt(r->fin_seq, ack))
        ack = r->fin_seq; /* the FIN's own sequence number is no data */
    if (tcp_seq_le(ack, r->next))
        return 0;
    if (ack - r->next > 0x40000000u)
        return 0; /* absurd: not an acknowledgement of this stream */
    while (r->ooo != NULL && tcp_seq_lt(r->ooo->seq, ack)) {
        rc = skip_hole(r, t_ns);
        if (rc < 0)
            return rc;
    }
    if (tcp_seq_lt(r->next, ack))
        return emit_gap(r, ack - r->next, true, t_ns);
    return 0;
}

int
tcp_reasm_flush(struct tcp_reasm *r, uint64_t t_ns)
{
    while (r->ooo != NULL) {
        int rc = skip_hole(r, t_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}
