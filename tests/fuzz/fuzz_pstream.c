/*
 * fuzz_pstream.c -- one direction of a proxied connection without sockets
 * (capture/pstream.c), driven as capture/pconn.c drives it: reads of
 * varying size (forwarded at once while nothing waits, else kept in the
 * out buffer), partial sends, hold releases at a rising clock, then EOF
 * and everything released and sent.  Properties checked:
 *
 *  - forwarding is lossless and in order: the bytes sent are the input,
 *    byte for byte, and never more than rel_off allows under a delay;
 *  - framing round-trips: the records, concatenated, are the input up to
 *    msg_end_off, each as long as its header says, stamps non-decreasing;
 *  - the split does not matter: the same input fed in one read gives the
 *    same records, the same problems (PSTREAM_* bits; but for a length
 *    over msg_max, said early by a split read of a header found bad once
 *    whole) and the same count of unframed bytes;
 *  - under a delay, every complete reply's achieved delay is measured
 *    once, when its last byte is sent, and is at least the delay.
 *
 * Input: flags[1] seed[1], then the stream.  flags & 1: --delay-ms (1000
 * ns); flags & 2: msg_max 64.  The seed drives read and send sizes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/pstream.h"
#include "core/delay_hist.h"
#include "core/mem.h"
#include "core/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DELAY_NS 1000u

struct recs {
    uint8_t *bytes; /* owned: the records' bytes, concatenated */
    size_t len, cap;
    uint64_t n, last_t;
};

static void
on_emit(void *arg, struct recq_item *it)
{
    struct recs *r = arg;
    uint32_t hl;

    hl = (uint32_t)it->data[0] | (uint32_t)it->data[1] << 8 |
         (uint32_t)it->data[2] << 16 | (uint32_t)it->data[3] << 24;
    if (hl != it->u.msg.wire_len || it->u.msg.t_ns < r->last_t)
        abort();
    r->last_t = it->u.msg.t_ns;
    if (r->len + it->u.msg.wire_len > r->cap) {
        size_t cap = (r->len + it->u.msg.wire_len) * 2;
        uint8_t *b = realloc(r->bytes, cap);
        if (b == NULL)
            abort();
        r->bytes = b;
        r->cap = cap;
    }
    memcpy(r->bytes + r->len, it->data, it->u.msg.wire_len);
    r->len += it->u.msg.wire_len;
    r->n++;
    recq_item_free(it);
}

static uint32_t
next_rand(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 16;
}

/* Sends what may go, or a part of it; checks the bytes against the input. */
static void
send_some(struct pstream *s, const uint8_t *in, uint32_t *rng, bool all,
          struct delay_hist *h, uint64_t now)
{
    size_t n = pstream_sendable(s);
    bool measured = pstream_releasing(s);

    if (n == 0)
        return;
    if (!all)
        n = 1 + next_rand(rng) % n;
    if (s->rel_off != UINT64_MAX && s->out_off + n > s->rel_off)
        abort(); /* never before its release */
    if (memcmp(s->out.data + s->out.head, in + s->out_off, n) != 0)
        abort();
    pstream_sent(s, n, true);
    if (measured)
        pstream_written(s, now, h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct delay_hist h;
    struct recs r = {0}, whole = {0};
    struct pstream s, w;
    struct mt_err err = {0};
    const uint8_t *in;
    uint64_t delay, now = 1;
    uint32_t msg_max, rng;
    unsigned st = 0, wst;
    size_t n, off = 0;

    if (size < 2)
        return 0;
    delay = (data[0] & 1) ? DELAY_NS : 0;
    msg_max = (data[0] & 2) ? 64 : 0;
    rng = data[1];
    in = data + 2;
    n = size - 2;
    delay_hist_init(&h);
    pstream_init(&s, 1, TRACE_DIR_S2C, delay, msg_max, NULL, on_emit, &r);
    while (off < n) {
        size_t k = 1 + next_rand(&rng) % (n - off < 300 ? n - off : 300);
        now += next_rand(&rng) % 700;
        pstream_read(&s, k);
        if (pstream_direct(&s)) {
            size_t sent = next_rand(&rng) % (k + 1);
            if (s.out_off != off)
                abort();
            pstream_sent(&s, sent, false);
            if (sent < k) { /* what the destination did not take waits */
                if (pbuf_reserve(&s.out, k - sent, 1u << 24) < 0)
                    abort();
                memcpy(s.out.data + s.out.tail, in + off + sent, k - sent);
                s.out.tail += k - sent;
            }
        } else {
            if (pbuf_reserve(&s.out, k, 1u << 24) < 0)
                abort();
            memcpy(s.out.data + s.out.tail, in + off, k);
            s.out.tail += k;
        }
        st |= pstream_frame(&s, in + off, k, now, &err);
        off += k;
        (void)pstream_release(&s, now);
        send_some(&s, in, &rng, false, &h, now);
    }
    if (pstream_eof(&s, now) != PSTREAM_OK)
        abort();
    while (pbuf_len(&s.out) > 0) {
        uint64_t t = pstream_next_ready(&s);
        if (t > now)
            now = t;
        (void)pstream_release(&s, now);
        if (pstream_sendable(&s) == 0)
            abort(); /* released, yet nothing may go */
        send_some(&s, in, &rng, true, &h, now);
    }
    if (s.out_off != n || s.in_off != n)
        abort();
    /* framing round trip */
    if (r.len != s.msg_end_off || r.n != s.msgs ||
        (r.len > 0 && memcmp(r.bytes, in, r.len) != 0))
        abort();
    if (delay > 0 && !(st & PSTREAM_HOLDS_FULL) &&
        (h.n != s.msgs || (h.n > 0 && h.min_ns < DELAY_NS)))
        abort();
    /* split invariance */
    pstream_init(&w, 1, TRACE_DIR_S2C, delay, msg_max, NULL, on_emit, &whole);
    wst = pstream_in(&w, in, n, 1, &err);
    /* a length over msg_max is said as soon as its 4 bytes are in: a
     * split read can say it of a header that the whole read finds bad */
    if ((st & PSTREAM_TOO_BIG) && !(wst & PSTREAM_TOO_BIG) &&
        (wst & PSTREAM_GARBAGE))
        st &= ~(unsigned)PSTREAM_TOO_BIG;
    if (wst != (st & ~(unsigned)PSTREAM_HOLDS_FULL) || whole.n != r.n ||
        whole.len != r.len || w.unframed != s.unframed ||
        (r.len > 0 && memcmp(whole.bytes, r.bytes, r.len) != 0))
        abort();
    pstream_free(&w);
    pstream_free(&s);
    free(r.bytes);
    free(whole.bytes);
    return 0;
}
