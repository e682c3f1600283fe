/*
 * precord.c -- recording a proxied connection (see precord.h): framing the
 * copy of each stream into records, connection open and close records,
 * TLS handshake records (ptls.c fills them).
 *
 * Each direction's stream (pstream.c) frames its copy into record items,
 * stamped with the time of the read that completed them; here they join
 * the loop's batch (recq.h), and what the stream reports (bytes that are
 * not MongoDB wire protocol, a client message over --max-msg-bytes, no
 * memory, too many replies held) is logged, counted and closes the
 * connection; what follows a framing error is never recorded.
 */
#include "precord.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bson/bson.h>

#include "core/log.h"
#include "core/rd.h"
#include "core/trace.h"
#include "core/wire.h"
#include "pdelay.h"

static void
precord_too_big(struct pconn *c, uint32_t len)
{
    if (c->dead)
        return;
    mt_warn("capture: conn %llu from %s: the client announced a message of "
            "%u bytes, over --max-msg-bytes %u, at stream offset %llu; "
            "closing the connection",
            (unsigned long long)c->id, c->client, len, c->pl->p->msg_max,
            (unsigned long long)c->d[TRACE_DIR_C2S].s.msg_end_off);
    c->pl->st.too_big++;
    pconn__die(c, TRACE_CLOSE_ERROR);
}

/*
 * The first reply of each connection (the handshake's hello / isMaster):
 * when it says the upstream is a replica set member (setName or hosts at
 * its top level), warns once per run that drivers which discover the set
 * open their connections to the members it lists, around the proxy.  Only
 * the top level is walked (libbson's iterator, bounds-checked); a reply
 * that does not parse is left alone (recording is not affected).
 */
static void
precord_check_replset(struct pconn *c, const struct recq_item *m)
{
    struct wire_msg wm;
    struct mt_err err = {0};
    size_t used = 0;
    bson_t doc;
    bson_iter_t it;
    const char *set = NULL;

    /* u.msg.wire is set by the writer thread: the bytes are data[] */
    if (wire_msg_parse_opts(m->data, m->u.msg.wire_len, WIRE_PARSE_SHALLOW, &wm,
                            &used, &err) != MT_OK ||
        wm.body == NULL || wm.body_len < 5 ||
        !bson_init_static(&doc, wm.body, wm.body_len))
        return;
    if (bson_iter_init_find(&it, &doc, "setName") && BSON_ITER_HOLDS_UTF8(&it))
        set = bson_iter_utf8(&it, NULL);
    else if (!bson_iter_init_find(&it, &doc, "hosts"))
        return;
    if (atomic_exchange(&c->pl->p->warned_rs, true))
        return;
    mt_warn("capture: the target %s answered conn %llu's handshake as a "
            "replica set member%s%.64s%s: a driver that discovers the set "
            "then connects to the members it lists, around the proxy (only "
            "its handshakes are recorded); connect with "
            "directConnection=true (docs/capture.md)",
            c->pl->p->target_desc, (unsigned long long)c->id,
            set ? " (setName \"" : "", set ? set : "", set ? "\")" : "");
}

/* See precord.h: the first reply is checked for a replica set. */
void
precord_emit(void *arg, struct recq_item *it)
{
    struct pconn *c = arg;

    if (it->u.msg.dir == TRACE_DIR_S2C && c->d[TRACE_DIR_S2C].s.msgs == 1 &&
        !atomic_load_explicit(&c->pl->p->warned_rs, memory_order_relaxed))
        precord_check_replset(c, it);
    pconn__push(c, it);
}

static void
precord_frame_error(struct pconn *c, int d, const struct mt_err *err)
{
    struct rd r = rd_init(c->d[d].s.fr.hdr, WIRE_HEADER_LEN);
    int32_t len = 0, op = 0;

    rd_le32s(&r, &len);
    rd_skip(&r, 8);
    rd_le32s(&r, &op);
    mt_warn("capture: conn %llu: the %s sent bytes that are not MongoDB wire "
            "protocol at stream offset %llu (messageLength %d, opCode %d: %s);"
            " closing the connection",
            (unsigned long long)c->id, pconn__side(d),
            (unsigned long long)(c->d[d].s.msg_end_off), len, op,
            err->msg[0] ? err->msg : mt_strerror(err->code));
    c->pl->st.garbage++;
    pconn__die(c, TRACE_CLOSE_ERROR);
}

/* See precord.h. */
void
precord_frame(struct pconn *c, int d, const uint8_t *p, size_t n, uint64_t t_ns)
{
    struct pstream *s = &c->d[d].s;
    struct mt_err err = {0};
    unsigned st = pstream_frame(s, p, n, t_ns, &err);

    if (pdelay_on(c, d))
        pdelay_arm(c); /* holds of the replies just completed */
    if (st == PSTREAM_OK)
        return;
    if (st & PSTREAM_TOO_BIG)
        precord_too_big(c, s->too_big_len);
    if (st & PSTREAM_GARBAGE)
        precord_frame_error(c, d, &err);
    if (st & PSTREAM_NOMEM) {
        mt_error("capture: conn %llu: out of memory framing or holding a "
                 "message; closing the connection",
                 (unsigned long long)c->id);
        c->pl->st.lost_items++;
        pconn__die(c, TRACE_CLOSE_ERROR);
    }
    if (st & PSTREAM_HOLDS_FULL)
        pdelay_full(c);
}

/* At close: a message cut short is recorded with what arrived. */
static uint32_t
precord_flush_partial(struct pconn *c, int d, uint64_t t_ns)
{
    uint32_t len;
    struct recq_item *it = pframe_take_partial(&c->d[d].s.fr, &len);

    if (len == 0)
        return 0;
    c->pl->st.partial[d]++;
    c->pl->st.partial_bytes[d] += len;
    if (it == NULL) {
        c->pl->st.lost_items++;
        return len;
    }
    it->u.msg.conn_id = c->id;
    it->u.msg.t_ns = t_ns;
    it->u.msg.dir = (uint8_t)d;
    pconn__push(c, it);
    return len;
}

/* See precord.h. */
void
precord_open(struct pconn *c)
{
    struct recq_item *it = recq_batch_item(&c->pl->batch, RECQ_OPEN, 0);

    if (it == NULL) {
        c->pl->st.lost_items++;
        return;
    }
    it->u.open.conn_id = c->id;
    it->u.open.t_ns = c->open_ns;
    snprintf(it->u.open.client, sizeof(it->u.open.client), "%s", c->client);
    snprintf(it->u.open.server, sizeof(it->u.open.server), "%s",
             c->pl->p->target_desc);
    pconn__push(c, it);
}

/* See precord.h. */
void
precord_tls(struct pconn *c, const struct trace_tls *t)
{
    struct recq_item *it = recq_batch_item(&c->pl->batch, RECQ_TLS, sizeof(*t));

    if (it == NULL) {
        c->pl->st.lost_items++;
        return;
    }
    memcpy(it->data, t, sizeof(*t));
    pconn__push(c, it);
}

/* See precord.h. */
void
precord_close(struct pconn *c, uint8_t reason)
{
    uint64_t t = loop_update_time(c->pl->l);
    uint32_t pc = precord_flush_partial(c, TRACE_DIR_C2S, t);
    uint32_t ps = precord_flush_partial(c, TRACE_DIR_S2C, t);
    struct recq_item *it = recq_batch_item(&c->pl->batch, RECQ_CLOSE, 0);

    if (it == NULL) {
        c->pl->st.lost_items++;
        return;
    }
    it->u.close.conn_id = c->id;
    it->u.close.t_ns = t;
    it->u.close.reason = reason;
    it->u.close.partial_c2s = pc;
    it->u.close.partial_s2c = ps;
    pconn__push(c, it);
}
