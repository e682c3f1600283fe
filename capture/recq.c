/*
 * recq.c -- bounded record queue and trace-writer thread (see recq.h).
 *
 * One mutex protects a singly linked FIFO; producers append (a batch per
 * event-loop tick), the writer takes the whole list at once and writes it
 * without the lock held.  The byte count the loops read lock-free
 * (recq_over) is updated under the lock and published with a relaxed
 * atomic store: a loop that reads a stale value reads at most one extra
 * chunk, which the bound's headroom absorbs.
 */
#include "recq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/sched.h"
#include "core/wire.h"

struct recq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct recq_item *head, *tail; /* owned */
    size_t bytes, count;           /* queued */
    struct recq_item *spare;       /* owned: written small items to reuse */
    size_t nspare;
    size_t bytes_max, count_max;
    atomic_bool over;
    bool was_over; /* under mu: over since the last resume */
    bool closing;  /* under mu */
    recq_resume_fn *resume;
    void *resume_arg;       /* borrowed */
    struct trace_writer *w; /* borrowed */
    pthread_t th;
    bool started;                    /* the writer thread runs */
    struct mt_buf plain;             /* writer thread: decompression scratch */
    const struct redact_cfg *redact; /* borrowed; NULL: none */
    struct mt_buf redacted;          /* writer thread: redaction output */
    struct recq_stats st;            /* writer thread */
};

static size_t
recq_item_bytes(const struct recq_item *it)
{
    return sizeof(*it) + it->cap;
}

/* A zeroed item of kind with len bytes of data[]; NULL on ENOMEM. */
struct recq_item *
recq_item_new(enum recq_kind kind, size_t len)
{
    struct recq_item *it = mt_malloc(sizeof(*it) + len);
    if (it == NULL)
        return NULL;
    memset(it, 0, sizeof(*it));
    it->kind = kind;
    it->cap = len;
    return it;
}

/* Frees an item that was not pushed. NULL is a no-op. */
void
recq_item_free(struct recq_item *it)
{
    mt_free(it);
}

/* See recq.h. */
bool
recq_batch_add(struct recq_batch *b, struct recq_item *it)
{
    it->next = NULL;
    if (b->tail != NULL)
        b->tail->next = it;
    else
        b->head = it;
    b->tail = it;
    b->count++;
    b->bytes += recq_item_bytes(it);
    return b->bytes >= RECQ_BATCH_BYTES;
}

/* See recq.h. */
struct recq_item *
recq_batch_item(struct recq_batch *b, enum recq_kind kind, size_t len)
{
    struct recq_item *it;

    if (len > RECQ_ITEM_SMALL)
        return recq_item_new(kind, len);
    it = b->spare;
    if (it != NULL) {
        b->spare = it->next;
        b->nspare--;
        /* the writer thread recycled the next spare on another CPU: fetch
         * its header now, not as a stall when the next message needs it */
        if (b->spare != NULL)
            __builtin_prefetch(b->spare, 1);
    } else {
        it = mt_malloc(sizeof(*it) + RECQ_ITEM_SMALL);
        if (it == NULL)
            return NULL;
    }
    memset(it, 0, sizeof(*it));
    it->kind = kind;
    it->cap = RECQ_ITEM_SMALL;
    return it;
}

static void
recq_list_free(struct recq_item *it)
{
    struct recq_item *next;

    for (; it != NULL; it = next) {
        next = it->next;
        recq_item_free(it);
    }
}

/* See recq.h.  One lock; a futex wake only when the queue fills up. */
void
recq_push_batch(struct recq *q, struct recq_batch *b)
{
    bool wake;

    if (b->head == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    if (b->spare == NULL && q->spare != NULL) { /* recycled items back */
        b->spare = q->spare;
        b->nspare = q->nspare;
        q->spare = NULL;
        q->nspare = 0;
    }
    if (q->tail != NULL)
        q->tail->next = b->head;
    else
        q->head = b->head;
    q->tail = b->tail;
    q->bytes += b->bytes;
    q->count += b->count;
    /* The writer wakes by itself every RECQ_TICK_NS; signal it (a futex
     * syscall and a context switch on the forwarding path) only when the
     * queue fills up. */
    wake = q->bytes >= q->bytes_max / 8 || q->count >= q->count_max / 8;
    if (q->bytes > q->st.max_bytes)
        q->st.max_bytes = q->bytes;
    if (!q->was_over && (q->bytes > q->bytes_max || q->count > q->count_max)) {
        q->was_over = true;
        q->st.pauses++;
        atomic_store_explicit(&q->over, true, memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->mu);
    b->head = b->tail = NULL;
    b->count = b->bytes = 0;
    if (wake)
        pthread_cond_signal(&q->cv);
}

/* See recq.h. */
void
recq_batch_free(struct recq_batch *b)
{
    recq_list_free(b->head);
    recq_list_free(b->spare);
    memset(b, 0, sizeof(*b));
}

/* Appends it to the queue and wakes the writer; never blocks on room. */
void
recq_push(struct recq *q, struct recq_item *it)
{
    struct recq_batch b = {0};

    (void)recq_batch_add(&b, it);
    recq_push_batch(q, &b);
}

/* Lock-free: whether producers should stop reading. */
bool
recq_over(const struct recq *q)
{
    return atomic_load_explicit(&q->over, memory_order_relaxed);
}

static void
recq_note_error(struct recq *q, int rc, const char *what)
{
    q->st.write_errors++;
    if (q->st.first_error == 0) {
        q->st.first_error = rc;
        mt_error("capture: writing the trace failed (%s): %s; later records "
                 "are counted as lost",
                 what, mt_strerror(rc));
    }
}

/* For an OP_COMPRESSED message, fills msg->plain from q->plain. */
static void
recq_decompress(struct recq *q, struct trace_msg *msg)
{
    struct wire_msg wm;
    struct mt_err err = {0};
    size_t used = 0;
    int rc;

    if (msg->wire_len < WIRE_HEADER_LEN || (msg->flags & TRACE_MSG_PARTIAL))
        return;
    if (msg->wire[12] != (WIRE_OP_COMPRESSED & 0xff) ||
        msg->wire[13] != (WIRE_OP_COMPRESSED >> 8) || msg->wire[14] != 0 ||
        msg->wire[15] != 0)
        return;
    mt_buf_reset(&q->plain);
    rc = wire_msg_parse(msg->wire, msg->wire_len, &wm, &used, &err);
    if (rc == MT_OK)
        rc = wire_decompress(&wm, &q->plain, &err);
    if (rc != MT_OK) {
        if (q->st.decompress_failed++ == 0)
            mt_warn("capture: conn %llu: OP_COMPRESSED message not "
                    "decompressed (%s); recorded as seen only",
                    (unsigned long long)msg->conn_id,
                    err.msg[0] ? err.msg : mt_strerror(rc));
        msg->flags |= TRACE_MSG_MALFORMED;
        return;
    }
    msg->plain = q->plain.data;
    msg->plain_len = (uint32_t)q->plain.len;
    q->st.decompressed++;
}

static void
recq_write_one(struct recq *q, struct recq_item *it)
{
    int rc = 0;

    switch (it->kind) {
    case RECQ_OPEN:
        rc = trace_writer_conn_open(q->w, &it->u.open);
        break;
    case RECQ_CLOSE:
        rc = trace_writer_conn_close(q->w, &it->u.close);
        break;
    case RECQ_TLS: {
        struct trace_tls t;
        MT_ASSERT(it->cap >= sizeof(t));
        memcpy(&t, it->data, sizeof(t));
        rc = trace_writer_tls(q->w, &t);
        break;
    }
    case RECQ_MSG:
        it->u.msg.wire = it->data;
        it->u.msg.plain = NULL;
        it->u.msg.plain_len = 0;
        recq_decompress(q, &it->u.msg);
        if (q->redact != NULL &&
            redact_trace_msg(q->redact, &it->u.msg, &q->redacted) > 0)
            q->st.redacted++;
        rc = trace_writer_msg(q->w, &it->u.msg);
        if (rc == 0) {
            q->st.msgs++;
            q->st.msg_bytes += it->u.msg.wire_len;
        }
        break;
    }
    if (rc < 0)
        recq_note_error(q, rc, "record");
    else
        q->st.records++;
}

/* Detaches the whole queue (its bytes stay counted until released);
 * waits up to RECQ_TICK_NS when it is empty. */
static struct recq_item *
recq_take(struct recq *q, bool *closing)
{
    struct recq_item *list;
    struct timespec ts;

    pthread_mutex_lock(&q->mu);
    if (q->head == NULL && !q->closing) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += RECQ_TICK_NS;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    list = q->head;
    q->head = q->tail = NULL;
    *closing = q->closing && list == NULL;
    pthread_mutex_unlock(&q->mu);
    return list;
}

/* Written small items waiting to go back to the queue's spare list. */
struct recq_chain {
    struct recq_item *head, *tail;
    size_t n;
};

/* After writing it: keeps a small item for reuse, frees the others. */
static void
recq_recycle(struct recq_chain *ch, struct recq_item *it)
{
    if (it->cap != RECQ_ITEM_SMALL) {
        recq_item_free(it);
        return;
    }
    it->next = ch->head;
    ch->head = it;
    if (ch->tail == NULL)
        ch->tail = it;
    ch->n++;
}

/* Un-counts n written items of bytes, hands the written small items in ch
 * to the spare list (or frees them when it is full); maybe resumes the
 * producers. */
static void
recq_release(struct recq *q, size_t n, size_t bytes, struct recq_chain *ch)
{
    bool resume = false;
    struct recq_item *drop = NULL;

    pthread_mutex_lock(&q->mu);
    q->count -= n;
    q->bytes -= bytes;
    if (q->was_over && q->bytes <= q->bytes_max / 2 &&
        q->count <= q->count_max / 2) {
        q->was_over = false;
        atomic_store_explicit(&q->over, false, memory_order_relaxed);
        resume = true;
    }
    if (ch->head != NULL && q->nspare + ch->n <= RECQ_SPARE_MAX) {
        ch->tail->next = q->spare;
        q->spare = ch->head;
        q->nspare += ch->n;
    } else {
        drop = ch->head;
    }
    pthread_mutex_unlock(&q->mu);
    memset(ch, 0, sizeof(*ch));
    recq_list_free(drop);
    if (resume && q->resume != NULL)
        q->resume(q->resume_arg);
}

/* Lowers the calling thread's priority by RECQ_WRITER_NICE (see recq.h);
 * best effort: a failure leaves it at the process's priority. */
static void
recq_thread_nice(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int cur;

    errno = 0;
    cur = getpriority(PRIO_PROCESS, (id_t)tid);
    if (cur == -1 && errno != 0)
        return;
    cur += RECQ_WRITER_NICE;
    (void)setpriority(PRIO_PROCESS, (id_t)tid, cur > 19 ? 19 : cur);
}

/*
 * Items were filled by a loop on another CPU: each first touch here is a
 * cache miss that costs the writer more than encoding the record.  While
 * item k is written, the header and the first RECQ_PREFETCH_BYTES of item
 * k+1 are fetched (a small message fits), and the header of item k+2
 * (read through k+1's link, fetched one item earlier).  always_inline:
 * a separate function that only prefetches is found free of side effects
 * and its calls deleted (GCC 12, -O1 and up).
 */
#define RECQ_PREFETCH_BYTES 512u

static inline __attribute__((always_inline)) void
recq_prefetch(const struct recq_item *next)
{
    const char *p = (const char *)next;

    if (next == NULL)
        return;
    if (next->next != NULL)
        __builtin_prefetch(next->next, 0);
    for (size_t off = 64; off < sizeof(*next) + RECQ_PREFETCH_BYTES; off += 64)
        __builtin_prefetch(p + off, 0);
}

static void *
recq_thread(void *arg)
{
    struct recq *q = arg;
    bool closing = false;

    while (!closing) {
        struct recq_item *it = recq_take(q, &closing);
        struct recq_chain ch = {0};
        size_t n = 0, bytes = 0;

        if (it != NULL)
            __builtin_prefetch(it->next, 0);
        while (it != NULL) {
            struct recq_item *next = it->next;
            recq_prefetch(next);
            recq_write_one(q, it);
            n++;
            bytes += recq_item_bytes(it);
            recq_recycle(&ch, it);
            it = next;
            if (n == 256 || it == NULL) {
                recq_release(q, n, bytes, &ch);
                n = bytes = 0;
            }
        }
        int rc = trace_writer_tick(q->w, mt_now_ns());
        if (rc < 0 && q->st.first_error == 0)
            recq_note_error(q, rc, "flush");
    }
    return NULL;
}

/* The writer thread's entry: back to SCHED_OTHER if its creator ran
 * under a real-time policy (--rt-prio, chrt), nicer, then the loop above. */
static void *
recq_thread_main(void *arg)
{
    (void)sched_set_normal();
    recq_thread_nice();
    return recq_thread(arg);
}

/* See recq.h. */
struct recq *
recq_new(struct trace_writer *w, size_t bytes_max, size_t count_max,
         recq_resume_fn *resume, void *arg, unsigned flags, struct mt_err *err)
{
    struct recq *q = mt_calloc(1, sizeof(*q));

    if (q == NULL) {
        mt_err_set(err, -ENOMEM, 0, "capture: out of memory");
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    atomic_init(&q->over, false);
    q->bytes_max = bytes_max;
    q->count_max = count_max;
    q->resume = resume;
    q->resume_arg = arg;
    q->w = w;
    mt_buf_init(&q->plain, WIRE_MSG_LEN_MAX);
    mt_buf_init(&q->redacted, WIRE_MSG_LEN_MAX);
    if (!(flags & RECQ_NO_START) && recq_start(q, err) < 0) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        mt_buf_free(&q->plain);
        mt_buf_free(&q->redacted);
        mt_free(q);
        return NULL;
    }
    return q;
}

/* See recq.h. */
void
recq_set_redact(struct recq *q, const struct redact_cfg *cfg)
{
    q->redact = cfg;
}

/* See recq.h. */
int
recq_start(struct recq *q, struct mt_err *err)
{
    int rc = pthread_create(&q->th, NULL, recq_thread_main, q);

    if (rc != 0)
        return mt_err_set(err, -rc, 0,
                          "capture: cannot start the writer thread: %s",
                          strerror(rc));
    q->started = true;
    return 0;
}

/* See recq.h. */
int
recq_close(struct recq *q, struct recq_stats *st)
{
    int rc;

    pthread_mutex_lock(&q->mu);
    q->closing = true;
    pthread_mutex_unlock(&q->mu);
    pthread_cond_signal(&q->cv);
    if (!q->started && recq_start(q, NULL) < 0)
        recq_thread(q); /* write what is queued from this thread */
    else
        pthread_join(q->th, NULL);
    rc = trace_writer_flush(q->w);
    if (rc < 0 && q->st.first_error == 0)
        recq_note_error(q, rc, "flush");
    if (st != NULL)
        *st = q->st;
    rc = q->st.first_error;
    recq_list_free(q->spare);
    mt_buf_free(&q->plain);
    mt_buf_free(&q->redacted);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    mt_free(q);
    return rc;
}
