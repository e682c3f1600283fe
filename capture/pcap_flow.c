/*
 * pcap_flow.c -- flow table for the pcap path (see pcap_flow.h).
 *
 * Each flow is a TCP 4-tuple oriented client -> server.  The server side is
 * a --port when exactly one side has one, else the side that accepted the
 * SYN, else (mid-stream, no port match) the lower port.  Flows live in a
 * hash table (symmetric hash, so either direction finds them) and in an
 * LRU list by packet time: flows idle longer than idle_ns are closed
 * (TRACE_CLOSE_IDLE), and when the table is full the idlest is evicted.
 */
#include "pcap_flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture/linkdec.h"
#include "capture/pcap_msg.h"
#include "capture/tcp_reasm.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/mem.h"

#define IDLE_CHECK_NS (1000ull * 1000 * 1000)
#define WARN_MAX 5

struct pflow_half {
    struct tcp_reasm rs;
    struct pmsg_dir md;
    struct pmsg_sink *sink; /* borrowed: the table's */
    bool started;           /* data seen in this direction */
    bool fin;
};

struct pflow {
    struct pflow *hnext;         /* hash chain */
    struct pflow *lprev, *lnext; /* LRU list, oldest first */
    uint32_t hash;
    uint8_t family;
    uint8_t caddr[16], saddr[16];
    uint16_t cport, sport;
    uint64_t conn_id;
    uint64_t last_ns;
    bool midstream;         /* data seen before any SYN of its direction */
    struct pflow_half h[2]; /* TRACE_DIR_C2S, TRACE_DIR_S2C */
};

struct pflow_table {
    struct pflow_opts o;
    uint16_t ports[16];
    struct trace_writer *w; /* borrowed */
    struct pmsg_sink sink;
    struct tcp_reasm_stats rst;
    struct pflow_stats st;
    struct pflow **buckets; /* owned */
    size_t nbuckets;        /* power of two */
    size_t nflows;
    struct pflow *lru_head, *lru_tail;
    uint64_t next_conn_id;
    uint64_t last_idle_check_ns;
    int warned;
};

static int half_data(void *ctx, const uint8_t *p, size_t n, uint64_t t_ns);
static int half_gap(void *ctx, uint64_t n, uint64_t t_ns);
static const struct tcp_reasm_ops half_ops = {half_data, half_gap};

static int
half_data(void *ctx, const uint8_t *p, size_t n, uint64_t t_ns)
{
    struct pflow_half *h = ctx;
    return pmsg_dir_data(&h->md, h->sink, p, n, t_ns);
}

static int
half_gap(void *ctx, uint64_t n, uint64_t t_ns)
{
    struct pflow_half *h = ctx;
    pmsg_dir_gap(&h->md, h->sink, n);
    return 0;
}

struct pflow_table *
pflow_new(const struct pflow_opts *o, struct trace_writer *w)
{
    struct pflow_table *t = mt_calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->o = *o;
    if (t->o.nports == 0 || t->o.ports == NULL) {
        t->ports[0] = 27017;
        t->o.nports = 1;
    } else {
        if (t->o.nports > 16)
            t->o.nports = 16;
        memcpy(t->ports, o->ports, t->o.nports * sizeof(uint16_t));
    }
    t->o.ports = t->ports;
    if (t->o.flows_max == 0)
        t->o.flows_max = PFLOW_FLOWS_MAX_DEFAULT;
    if (t->o.ooo_max == 0)
        t->o.ooo_max = TCP_REASM_OOO_MAX_DEFAULT;
    if (t->o.idle_ns == 0)
        t->o.idle_ns = PFLOW_IDLE_NS_DEFAULT;
    t->nbuckets = 1024;
    while (t->nbuckets < t->o.flows_max && t->nbuckets < (1u << 20))
        t->nbuckets <<= 1;
    t->buckets = mt_calloc(t->nbuckets, sizeof(*t->buckets));
    if (t->buckets == NULL) {
        mt_free(t);
        return NULL;
    }
    t->w = w;
    pmsg_sink_init(&t->sink, w);
    t->sink.redact = o->redact;
    t->next_conn_id = 1;
    return t;
}

static bool
is_port(const struct pflow_table *t, uint16_t port)
{
    for (size_t i = 0; i < t->o.nports; i++)
        if (t->ports[i] == port)
            return true;
    return false;
}

static uint32_t
ep_hash(const uint8_t *addr, uint16_t port)
{
    uint64_t w[2], h;

    memcpy(w, addr, 16);
    h = (w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull) ^ port) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h ^ (h >> 29) ^ (h >> 47));
}

/* Symmetric: the same for both directions of a flow. */
static uint32_t
flow_hash(const struct linkdec_pkt *k)
{
    return ep_hash(k->src, k->sport) + ep_hash(k->dst, k->dport) + k->family;
}

/* Finds the flow of packet k; *dir is the packet's direction in it. */
static struct pflow *
flow_find(struct pflow_table *t, const struct linkdec_pkt *k, uint32_t hash,
          uint8_t *dir)
{
    struct pflow *f = t->buckets[hash & (t->nbuckets - 1)];

    for (; f != NULL; f = f->hnext) {
        if (f->hash != hash || f->family != k->family)
            continue;
        if (f->cport == k->sport && f->sport == k->dport &&
            memcmp(f->caddr, k->src, 16) == 0 &&
            memcmp(f->saddr, k->dst, 16) == 0) {
            *dir = TRACE_DIR_C2S;
            return f;
        }
        if (f->sport == k->sport && f->cport == k->dport &&
            memcmp(f->saddr, k->src, 16) == 0 &&
            memcmp(f->caddr, k->dst, 16) == 0) {
            *dir = TRACE_DIR_S2C;
            return f;
        }
    }
    return NULL;
}

static void
lru_unlink(struct pflow_table *t, struct pflow *f)
{
    if (f->lprev != NULL)
        f->lprev->lnext = f->lnext;
    else
        t->lru_head = f->lnext;
    if (f->lnext != NULL)
        f->lnext->lprev = f->lprev;
    else
        t->lru_tail = f->lprev;
    f->lprev = f->lnext = NULL;
}

static void
lru_append(struct pflow_table *t, struct pflow *f)
{
    f->lprev = t->lru_tail;
    f->lnext = NULL;
    if (t->lru_tail != NULL)
        t->lru_tail->lnext = f;
    else
        t->lru_head = f;
    t->lru_tail = f;
}

/* One end of a flow as text (core/addr.h's form). */
static void
endpoint_str(char *out, size_t cap, uint8_t family, const uint8_t *addr,
             uint16_t port)
{
    struct sockaddr_storage ss;

    memset(&ss, 0, sizeof(ss));
    if (family == 4) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        memcpy(&in->sin_addr, addr, 4);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        memcpy(&in6->sin6_addr, addr, 16);
    }
    mt_addr_format((const struct sockaddr *)&ss, out, cap);
}

static void
flow_free(struct pflow *f)
{
    for (int i = 0; i < 2; i++) {
        tcp_reasm_free(&f->h[i].rs);
        pmsg_dir_free(&f->h[i].md);
    }
    mt_free(f);
}

/* Flushes, writes the close record, unlinks and frees f. */
static int
flow_close(struct pflow_table *t, struct pflow *f, uint64_t t_ns,
           uint8_t reason)
{
    struct trace_conn_close rec;
    struct pflow **pp = &t->buckets[f->hash & (t->nbuckets - 1)];
    int rc = 0, rc2;

    for (int i = 0; i < 2; i++) {
        rc2 = tcp_reasm_flush(&f->h[i].rs, t_ns);
        if (rc2 < 0 && rc == 0)
            rc = rc2;
    }
    memset(&rec, 0, sizeof(rec));
    rec.conn_id = f->conn_id;
    rec.t_ns = t_ns;
    rec.reason = reason;
    rec.partial_c2s = (uint32_t)pmsg_dir_partial(&f->h[0].md);
    rec.partial_s2c = (uint32_t)pmsg_dir_partial(&f->h[1].md);
    pmsg_dir_end(&f->h[0].md, &t->sink);
    pmsg_dir_end(&f->h[1].md, &t->sink);
    if (t->w != NULL) {
        rc2 = trace_writer_conn_close(t->w, &rec);
        if (rc2 < 0 && rc == 0)
            rc = rc2;
    }
    while (*pp != f)
        pp = &(*pp)->hnext;
    *pp = f->hnext;
    lru_unlink(t, f);
    t->nflows--;
    flow_free(f);
    return rc;
}

/* Client/server orientation of a new flow from its first packet. */
static bool
src_is_client(const struct pflow_table *t, const struct linkdec_pkt *k)
{
    bool sp = is_port(t, k->sport), dp = is_port(t, k->dport);

    if (dp != sp)
        return dp;
    if (k->flags & LINKDEC_SYN)
        return !(k->flags & LINKDEC_ACK);
    return k->sport > k->dport;
}

static int
flow_new(struct pflow_table *t, const struct linkdec_pkt *k, uint32_t hash,
         uint64_t t_ns, struct pflow **out, uint8_t *dir)
{
    struct trace_conn_open rec;
    struct pflow *f;
    bool c = src_is_client(t, k);
    int rc;

    if (t->nflows >= t->o.flows_max) {
        t->st.evicted++;
        rc = flow_close(t, t->lru_head, t_ns, TRACE_CLOSE_IDLE);
        if (rc < 0)
            return rc;
    }
    f = mt_calloc(1, sizeof(*f));
    if (f == NULL)
        return -ENOMEM;
    f->hash = hash;
    f->family = k->family;
    memcpy(f->caddr, c ? k->src : k->dst, 16);
    memcpy(f->saddr, c ? k->dst : k->src, 16);
    f->cport = c ? k->sport : k->dport;
    f->sport = c ? k->dport : k->sport;
    f->conn_id = t->next_conn_id++;
    for (int i = 0; i < 2; i++) {
        f->h[i].sink = &t->sink;
        tcp_reasm_init(&f->h[i].rs, t->o.ooo_max, &half_ops, &f->h[i], &t->rst);
        pmsg_dir_init(&f->h[i].md, f->conn_id, (uint8_t)i, false);
    }
    f->hnext = t->buckets[hash & (t->nbuckets - 1)];
    t->buckets[hash & (t->nbuckets - 1)] = f;
    lru_append(t, f);
    t->nflows++;
    t->st.flows++;
    *out = f;
    *dir = c ? TRACE_DIR_C2S : TRACE_DIR_S2C;
    memset(&rec, 0, sizeof(rec));
    rec.conn_id = f->conn_id;
    rec.t_ns = t_ns;
    endpoint_str(rec.client, sizeof(rec.client), f->family, f->caddr, f->cport);
    endpoint_str(rec.server, sizeof(rec.server), f->family, f->saddr, f->sport);
    return t->w != NULL ? trace_writer_conn_open(t->w, &rec) : 0;
}

static int
expire_idle(struct pflow_table *t, uint64_t t_ns)
{
    if (t_ns - t->last_idle_check_ns < IDLE_CHECK_NS &&
        t->last_idle_check_ns <= t_ns)
        return 0;
    t->last_idle_check_ns = t_ns;
    while (t->lru_head != NULL && t->lru_head->last_ns < t_ns &&
           t_ns - t->lru_head->last_ns > t->o.idle_ns) {
        int rc = flow_close(t, t->lru_head, t_ns, TRACE_CLOSE_IDLE);
        t->st.idle_closed++;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Feeds one decoded TCP segment to flow f, direction dir. */
static int
flow_segment(struct pflow_table *t, struct pflow *f, uint8_t dir,
             const struct linkdec_pkt *k, uint64_t t_ns)
{
    struct pflow_half *h = &f->h[dir], *o = &f->h[dir ^ 1];
    uint32_t seq = k->seq;
    int rc;

    if (k->flags & LINKDEC_SYN) {
        tcp_reasm_syn(&h->rs, k->seq);
        seq++; /* the SYN occupies one sequence number */
    }
    if (k->payload_len > 0) {
        if (!h->started && !h->rs.saw_syn) {
            h->md.resync = true; /* its start was not captured */
            if (!f->midstream) {
                f->midstream = true;
                t->st.midstream++;
            }
        }
        h->started = true;
        rc = tcp_reasm_segment(&h->rs, seq, k->payload, k->payload_cap,
                               k->payload_len, t_ns);
        if (rc < 0)
            return rc;
    }
    if (k->flags & LINKDEC_ACK) {
        rc = tcp_reasm_ack(&o->rs, k->ack, t_ns);
        if (rc < 0)
            return rc;
    }
    if (k->flags & LINKDEC_RST)
        return flow_close(t, f, t_ns,
                          dir == TRACE_DIR_C2S ? TRACE_CLOSE_CLIENT_RESET
                                               : TRACE_CLOSE_SERVER_RESET);
    if (k->flags & LINKDEC_FIN) {
        tcp_reasm_fin(&h->rs, seq + (uint32_t)k->payload_len);
        h->fin = true;
        if (o->fin)
            return flow_close(t, f, t_ns, TRACE_CLOSE_NORMAL);
    }
    f->last_ns = t_ns;
    if (t->lru_tail != f) {
        lru_unlink(t, f);
        lru_append(t, f);
    }
    return 0;
}

static void
warn_packet(struct pflow_table *t, const struct mt_err *e)
{
    if (t->warned < WARN_MAX)
        mt_warn("packet %llu: %s%s", (unsigned long long)t->st.packets, e->msg,
                ++t->warned == WARN_MAX ? " (no more such warnings)" : "");
}

/* A SYN (no ACK) for a flow that already carries data: the 4-tuple was
 * reused for a new connection. */
static bool
is_new_syn(const struct pflow *f, uint8_t dir, const struct linkdec_pkt *k)
{
    const struct tcp_reasm *rs = &f->h[dir].rs;

    if ((k->flags & (LINKDEC_SYN | LINKDEC_ACK)) != LINKDEC_SYN)
        return false;
    return rs->have_seq && rs->next != k->seq + 1;
}

int
pflow_packet(struct pflow_table *t, int dlt, uint64_t t_ns, const uint8_t *pkt,
             size_t caplen, size_t wirelen, struct mt_err *err)
{
    struct linkdec_pkt k;
    struct mt_err e; /* filled only on error: not cleared per packet */
    struct pflow *f;
    uint8_t dir = 0;
    uint32_t hash;
    int rc;

    t->st.packets++;
    t->st.bytes += wirelen;
    rc = linkdec_decode(dlt, pkt, caplen, wirelen, &k, &e);
    if (rc == MT_EUNSUPPORTED)
        return mt_err_set(err, rc, 0, "%s", e.msg);
    if (rc < 0) {
        t->st.malformed++;
        warn_packet(t, &e);
        return 0;
    }
    if (rc == LINKDEC_TRUNC) {
        t->st.truncated++;
        return 0;
    }
    if (rc == LINKDEC_SKIP) {
        t->st.non_tcp++;
        return 0;
    }
    if (t->o.port_filter && !is_port(t, k.sport) && !is_port(t, k.dport)) {
        t->st.ignored++;
        return 0;
    }
    if (k.payload_cap < k.payload_len)
        t->st.truncated++;
    rc = expire_idle(t, t_ns);
    if (rc < 0)
        goto out;
    hash = flow_hash(&k);
    f = flow_find(t, &k, hash, &dir);
    if (f != NULL && is_new_syn(f, dir, &k)) {
        rc = flow_close(t, f, t_ns, TRACE_CLOSE_NORMAL);
        if (rc < 0)
            goto out;
        f = NULL;
    }
    if (f == NULL) {
        if (!(k.flags & LINKDEC_SYN) && k.payload_len == 0)
            return 0; /* a bare ACK/FIN/RST of a flow we do not know */
        rc = flow_new(t, &k, hash, t_ns, &f, &dir);
        if (rc < 0)
            goto out;
    }
    rc = flow_segment(t, f, dir, &k, t_ns);
out:
    if (rc < 0)
        return mt_err_set(err, rc, 0, "writing the trace: %s", mt_strerror(rc));
    return 0;
}

int
pflow_finish(struct pflow_table *t, uint64_t t_ns, uint8_t reason,
             struct mt_err *err)
{
    int rc = 0;

    while (t->lru_head != NULL) {
        int rc2 = flow_close(t, t->lru_head, t_ns, reason);
        if (rc2 < 0 && rc == 0)
            rc = rc2;
    }
    if (rc < 0)
        return mt_err_set(err, rc, 0, "writing the trace: %s", mt_strerror(rc));
    return 0;
}

void
pflow_stats_get(const struct pflow_table *t, struct pflow_stats *out)
{
    *out = t->st;
    out->messages = t->sink.messages;
    out->resyncs = t->sink.resyncs;
    out->skipped_bytes = t->sink.skipped_bytes;
    out->malformed_msgs = t->sink.malformed;
    out->gaps = t->rst.gaps;
    out->gap_bytes = t->rst.gap_bytes;
    out->out_of_order = t->rst.out_of_order;
    out->retransmitted = t->rst.retransmitted;
}

void
pflow_stats_record(const struct pflow_stats *s, uint64_t t_ns,
                   struct trace_stats *rec)
{
    const struct {
        const char *name;
        uint64_t v;
    } f[] = {
        {"packets", s->packets},
        {"bytes", s->bytes},
        {"flows", s->flows},
        {"midstream", s->midstream},
        {"messages", s->messages},
        {"gaps", s->gaps},
        {"gap_bytes", s->gap_bytes},
        {"resyncs", s->resyncs},
        {"skipped_bytes", s->skipped_bytes},
        {"truncated", s->truncated},
        {"out_of_order", s->out_of_order},
        {"retransmitted", s->retransmitted},
        {"non_tcp", s->non_tcp},
        {"malformed", s->malformed},
        {"malformed_msgs", s->malformed_msgs},
        {"ignored", s->ignored},
        {"evicted", s->evicted},
        {"idle_closed", s->idle_closed},
    };

    memset(rec, 0, sizeof(*rec));
    rec->t_ns = t_ns;
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        snprintf(rec->s[i].name, sizeof(rec->s[i].name), "%s", f[i].name);
        rec->s[i].value = f[i].v;
        rec->n++;
    }
}

void
pflow_free(struct pflow_table *t)
{
    if (t == NULL)
        return;
    while (t->lru_head != NULL) {
        struct pflow *f = t->lru_head;
        lru_unlink(t, f);
        flow_free(f);
    }
    pmsg_sink_free(&t->sink);
    mt_free(t->buckets);
    mt_free(t);
}
